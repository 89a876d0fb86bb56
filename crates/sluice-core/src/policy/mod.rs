//! The scheduling-policy interface and the policies that implement it.
//!
//! # One policy, two worlds
//! A policy is plain, single-threaded code driven by events. The deterministic
//! simulator (`sluice-sim`) and the io_uring engine drive the very same objects, through
//! the one block layer (`sluice-block`), which makes the calls below ("the engine"). A
//! policy never reads a clock, sleeps, spawns a thread or does I/O: every method is
//! given `now_ns`, and a policy that needs to act later asks for a timer through
//! [`Policy::next_timer_ns`].
//!
//! # The life of a request, as a policy sees it
//! ```text
//!   app submits ──► admit() ──Wait──► (block layer parks it; asks again after completions/timers)
//!                      │Admit
//!                      ▼
//!                  enqueue()            (the policy may keep it, split it, reorder it)
//!                      ▼
//!   engine loop:   dispatch(view) ──► Some(Dispatch{req, queue}) ──► device queue `queue`
//!                      ▼                 (None: nothing may go now)
//!                  complete()           (one call per dispatched piece)
//!   any time:      timer() at next_timer_ns(); promote(id) on demand
//! ```
//!
//! What the five papers need from this interface:
//! * **admission** that can refuse for now — RCP's per-class admission slots;
//! * **dispatch opportunities with a device view** (in-flight count per queue class) —
//!   LD's token pool, RCP's outstanding limit, MQFQ's depth D, SFQ(D);
//! * **the target queue class** of each dispatch — D2FQ's high/medium/low choice;
//! * **completion with its latency** — D2FQ's virtual time advances at completion, kyber's
//!   latency histograms, FIOS's service-time averages;
//! * **timers** — FIOS anticipation, RCP's starvation timer, mq-deadline expiry, D2FQ's
//!   H/L adjustment period;
//! * **splitting** — FastResponse LD's 32 KB children ([`Request::split`]); the engine
//!   completes the parent when all its pieces have completed;
//! * **promotion** — RCP's priority inheritance raises a queued request to critical.

mod bfq;
mod cfq;
mod counter;
mod d2fq;
pub mod depth_target;
mod fios;
mod kyber;
mod ld;
mod mq_deadline;
mod mqfq;
mod none;
mod params;
mod quanta;
mod rcp;
mod sfqd;

pub use bfq::{Bfq, BfqConfig, EntityView, Expiry, MaxBudget};
pub use cfq::Cfq;
pub use counter::Counter;
pub use d2fq::{d2fq_wrr_weights, D2fq, D2fqConfig, D2fqMode, D2fqThresholds, SloppyGvt};
pub use fios::{Anticipation, CostModel, Fios, FiosConfig};
pub use kyber::KyberPolicy;
pub use ld::LdPolicy;
pub use mq_deadline::MqDeadlinePolicy;
pub use mqfq::Mqfq;
pub use none::NonePolicy;
pub use params::{ParamError, Params, PolicySpec};
pub use quanta::Quanta;
pub use rcp::RcpPolicy;
pub use sfqd::{SfqCost, Sfqd};

use crate::types::{Flow, Nanos, QueueClass, Request};

/// Answer of [`Policy::admit`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    /// The request may enter the scheduler now; the block layer calls `enqueue` next.
    Admit,
    /// Not now (e.g. no free admission slot). The block layer parks the request and asks
    /// again after a completion or a timer.
    Wait,
}

/// What the policy knows of the device at a dispatch opportunity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceView {
    /// Pieces dispatched and not yet completed, over all queue classes.
    pub inflight: u32,
    /// The same, per [`QueueClass`] index.
    pub inflight_per_class: [u32; 4],
    /// How many commands the engine can have outstanding at the device at most
    /// (submission-queue space); a dispatch beyond it is not offered.
    pub max_inflight: u32,
}

/// A request (or a piece of one) released to the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dispatch {
    /// The request or piece; `req.parts` says how many pieces its parent has.
    pub req: Request,
    /// The device queue class to submit to (D2FQ chooses; most policies use `Medium`).
    pub queue: QueueClass,
}

impl Dispatch {
    /// Dispatch to the default (medium) queue class.
    pub fn medium(req: Request) -> Self {
        Dispatch {
            req,
            queue: QueueClass::Medium,
        }
    }
}

/// A dispatched piece has completed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    /// The piece as it was dispatched.
    pub req: Request,
    /// The queue class it was dispatched to.
    pub queue: QueueClass,
    /// When the policy released it.
    pub dispatch_ns: Nanos,
    /// When the device reported it complete.
    pub complete_ns: Nanos,
    /// False when the device reported an error.
    pub ok: bool,
}

impl Completion {
    /// Time on the device: completion minus dispatch.
    #[inline]
    pub fn device_ns(&self) -> Nanos {
        self.complete_ns.saturating_sub(self.dispatch_ns)
    }
}

/// A block-layer scheduling policy. See the module documentation for the protocol.
///
/// Implementations keep their tunables (with units and defaults) at the top of their
/// file and state their invariant and formulas with the paper's names.
pub trait Policy: Send {
    /// The policy's registered name (as given to `--policy`).
    fn name(&self) -> &'static str;

    /// Called once per flow before any request of it arrives, and again when a flow's
    /// weight changes.
    fn add_flow(&mut self, _flow: &Flow) {}

    /// May the request enter the scheduler now?
    fn admit(&mut self, _now_ns: Nanos, _req: &Request) -> Admission {
        Admission::Admit
    }

    /// Take an admitted request.
    fn enqueue(&mut self, now_ns: Nanos, req: Request);

    /// A dispatch opportunity: return the next piece to send to the device, or `None`
    /// when nothing may go now. The block layer calls it repeatedly until `None` or until the
    /// device is full, and again after every completion, arrival and timer.
    fn dispatch(&mut self, now_ns: Nanos, view: &DeviceView) -> Option<Dispatch>;

    /// A dispatched piece completed.
    fn complete(&mut self, _now_ns: Nanos, _done: &Completion) {}

    /// The earliest time the policy wants [`Policy::timer`] called, if any. The engine
    /// asks after every call into the policy.
    fn next_timer_ns(&self) -> Option<Nanos> {
        None
    }

    /// The timer asked for by `next_timer_ns` is due (`now_ns` ≥ that time).
    fn timer(&mut self, _now_ns: Nanos) {}

    /// Raise a queued request (all its queued pieces) to the critical class, e.g. because
    /// a critical task waits on it (RCP's I/O priority inheritance). Returns whether the
    /// policy held such a request. Requests still waiting for admission are promoted by
    /// the block layer (`sluice_block::BlockLayer::promote`), which then calls `admit`
    /// again.
    fn promote(&mut self, _now_ns: Nanos, _id: crate::types::ReqId) -> bool {
        false
    }

    /// How many requests (or pieces) the policy holds, not yet dispatched.
    fn queued(&self) -> usize;

    /// The policy's own state worth showing (e.g. D2FQ's H/L ratio, LD's free tokens),
    /// as named numbers. Engines sample it once per bandwidth interval into the report
    /// (`extra.policy_series`) and once at the end (`extra.policy`). Names are
    /// `snake_case` with units where they have one.
    fn counters(&self) -> Vec<(Counter, f64)> {
        Vec::new()
    }

    /// The NVMe weighted-round-robin weights `[high, medium, low]` (commands per round,
    /// 1..=256 each) the policy wants the device to use, or `None` to leave the device's
    /// arbitration alone (the default). D2FQ tunes its H/L ratio through this. Engines
    /// poll it after every call into the policy and, when the value changes and the
    /// device does weighted round robin, reprogram the device (the simulator with
    /// `NvmeSsd::set_arbitration`, the real engine with the NVMe Set Features
    /// "Arbitration" command where it may). On a round-robin device it has no effect.
    fn wrr_weights(&self) -> Option<[u32; 3]> {
        None
    }
}

/// Error building a policy from its specification.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PolicyError {
    /// No policy has that name.
    #[error("unknown policy '{name}'; known policies: {known}")]
    Unknown {
        /// The name given.
        name: String,
        /// Comma-separated list of the known names.
        known: String,
    },
    /// A parameter was wrong.
    #[error("policy '{policy}': {source}")]
    Param {
        /// The policy name.
        policy: String,
        /// What was wrong.
        #[source]
        source: ParamError,
    },
}

/// The names of the policies [`build`] knows, in the order `--help` lists them.
pub const POLICY_NAMES: &[&str] = &[
    "none",
    "d2fq",
    "mqfq",
    "sfqd",
    "bfq",
    "ld",
    "rcp",
    "mq-deadline",
    "kyber",
    "fios",
    "quanta",
    "cfq",
];

/// Build a policy from a parsed specification (`NAME[:key=value,...]`).
pub fn build(spec: &PolicySpec) -> Result<Box<dyn Policy>, PolicyError> {
    let mut params = spec.params.clone();
    let param_err = |source| PolicyError::Param {
        policy: spec.name.clone(),
        source,
    };
    let policy: Box<dyn Policy> = match spec.name.as_str() {
        "none" => Box::new(NonePolicy::new()),
        "d2fq" => Box::new(D2fq::from_params(&mut params).map_err(param_err)?),
        "mqfq" => Box::new(Mqfq::from_params(&mut params).map_err(param_err)?),
        "sfqd" => Box::new(Sfqd::from_params(&mut params).map_err(param_err)?),
        "bfq" => Box::new(Bfq::from_params(&mut params).map_err(param_err)?),
        "ld" => Box::new(LdPolicy::from_params(&mut params).map_err(param_err)?),
        "rcp" => Box::new(RcpPolicy::from_params(&mut params).map_err(param_err)?),
        "mq-deadline" => Box::new(MqDeadlinePolicy::from_params(&mut params).map_err(param_err)?),
        "kyber" => Box::new(KyberPolicy::from_params(&mut params).map_err(param_err)?),
        "fios" => Box::new(Fios::from_params(&mut params).map_err(param_err)?),
        "quanta" => Box::new(Quanta::from_params(&mut params).map_err(param_err)?),
        "cfq" => Box::new(Cfq::from_params(&mut params).map_err(param_err)?),
        other => {
            return Err(PolicyError::Unknown {
                name: other.to_string(),
                known: POLICY_NAMES.join(", "),
            })
        }
    };
    params.finish().map_err(|source| PolicyError::Param {
        policy: spec.name.clone(),
        source,
    })?;
    Ok(policy)
}
