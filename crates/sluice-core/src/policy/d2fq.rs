//! `d2fq`: Device-Direct Fair Queueing (Woo et al., FAST '21).
//!
//! D2FQ stages nothing: every request goes to the device at once, and fairness comes
//! from *which* NVMe weighted-round-robin class it is submitted to (§3.1). The three
//! classes act as a fast, a moderate and a slow queue; a flow that is ahead in virtual
//! time is sent to the slower ones.
//!
//! # Formulas (paper names)
//! * Virtual time (§2.1, Fig. 10 line 22): at each completion of `l` bytes of flow `f`
//!   with weight `w_f`, `vt_f += l / w_f`. Unit (authors' code): `l · 840 / w_f / 1024`
//!   (840 = lcm(1..8), so weights 1–8 are exact); the division remainder is carried.
//! * A flow that becomes active starts at `vt_f = gvt` (Fig. 10 line 11); it stays
//!   active until it has had nothing in flight for a grace period (§3.5, deceptive
//!   idleness).
//! * Global virtual time `gvt` (§3.4, Fig. 9): one 64-bit word {16-bit holder, 48-bit
//!   value} updated by CAS ([`SloppyGvt`]); only the holder may raise it, any other
//!   flow may lower it to its own vt; an idling holder releases it.
//! * Queue class (Eq. 1): high if `vt_f − gvt < τm`, medium if `< τl`, low otherwise.
//! * H/L ratio `r` = HPW/LPW; weights `L = ⌊256/r⌋`, `M = L·⌈√r⌉` (§3.2: the medium weight
//!   is the geometric middle), `H = L·r`, all within 1..=256 (authors' code).
//! * Dynamic H/L (§3.2), once per period over the flows served in it:
//!   - if `vt_max − gvt > τw` and the gap widened (`Δvt_max > Δvt_min`):
//!     `r ← ⌊Δvt_max / Δvt_min · r⌋ + 1` (Eq. 2);
//!   - otherwise `r ← ⌈max_f slowdown(f)⌉` when smaller, where
//!     `slowdown(f) = Σ_x l_{f,x} · p_h/p_x / Σ_x l_{f,x}` over the classes x (Eq. 3);
//!   - `r` stays within 3..=256 (authors' code) and is left alone with < 2 flows served.
//!
//! # Invariants
//! * Work conserving: `dispatch` returns a request whenever one is queued — D2FQ never
//!   holds a request while the device has room (the queue only fills when the engine
//!   stops offering opportunities because a submission queue is full).
//! * A flow's vt never decreases while it stays active.
//!
//! # Tunables (`d2fq:key=value,...`)
//! | key | meaning | default |
//! |---|---|---|
//! | `thresholds` | `paper`: τl = 1 MiB of weight-1 service (8 MiB for weight 8), τm = τl/2, τw = 2τl, period 1 s, initial H/L 256; `code` (authors' code): τl = 8192 vt units (≈ 9.75 KiB of weight-1 service), τm = 0.3·τl, τw = 2τl, period 200 ms, H/L 6, a lone active flow uses the medium class | `paper` |
//! | `mode` | `dynamic` H/L adjustment or `static` | `dynamic` |
//! | `hl` | H/L ratio: fixed (static, 1..=256) or initial (dynamic, 3..=256) | 256 paper, 6 code |
//! | `period_ms` | H/L adjustment period, ms | 1000 paper, 200 code |
//! | `grace_ms` | grace period before a flow with nothing in flight counts as idle, ms | 200 |
//! | `tau_l` | τl in bytes of weight-1 service (τm, τw follow) | by `thresholds` |

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::Counter;
use super::{Completion, DeviceView, Dispatch, ParamError, Params, Policy};
use crate::types::{Flow, FlowId, Nanos, QueueClass, Request};

/// Virtual-time units per byte of weight-1 service, as a fraction: 840/1024.
const VT_NUM: u64 = 840;
const VT_DEN: u64 = 1024;
/// Bounds of the dynamic H/L ratio (authors' code: `D2FQ_CLS_WGHT_MIN/MAX`).
const HL_MIN_DYNAMIC: u32 = 3;
const HL_MAX: u32 = 256;

/// Virtual-time units for `bytes` of weight-1 service.
fn vt_of_bytes(bytes: u64) -> u64 {
    bytes * VT_NUM / VT_DEN
}

// ---------------------------------------------------------------------------------
// The sloppy global virtual time (§3.4, Fig. 9).
// ---------------------------------------------------------------------------------

/// The global virtual time tracked the D2FQ way: one `AtomicU64` holding a 16-bit
/// holder id and a 48-bit value, updated by compare-and-swap.
///
/// * [`SloppyGvt::update`]: with no holder, anyone takes it; the holder may raise the
///   value to its own vt; any other flow may lower it to its own (smaller) vt and becomes
///   the holder.
/// * [`SloppyGvt::release`]: the holder gives it up (the value stays).
///
/// It is "sloppy": when the holder raises the value past another flow's vt, the value is
/// briefly not the minimum, until that flow's next update lowers it. In exchange no
/// update ever looks at other flows. Share it between policy instances (engine
/// workers) with an [`Arc`]; see [`D2fq::with_gvt`].
#[derive(Debug)]
pub struct SloppyGvt {
    word: AtomicU64,
}

impl SloppyGvt {
    /// The holder field of a word with no holder.
    pub const NO_HOLDER: u16 = u16::MAX;
    /// The largest value the 48-bit field holds; larger vts saturate.
    pub const VALUE_MAX: u64 = (1 << 48) - 1;

    /// No holder, value 0.
    pub fn new() -> Self {
        SloppyGvt {
            word: AtomicU64::new(Self::pack(Self::NO_HOLDER, 0)),
        }
    }

    #[inline]
    fn pack(holder: u16, value: u64) -> u64 {
        (holder as u64) << 48 | value.min(Self::VALUE_MAX)
    }

    #[inline]
    fn unpack(word: u64) -> (u16, u64) {
        ((word >> 48) as u16, word & Self::VALUE_MAX)
    }

    /// The holder (if any) and the value, read together.
    #[inline]
    pub fn load(&self) -> (Option<u16>, u64) {
        let (h, v) = Self::unpack(self.word.load(Ordering::Acquire));
        ((h != Self::NO_HOLDER).then_some(h), v)
    }

    /// The value.
    #[inline]
    pub fn value(&self) -> u64 {
        self.load().1
    }

    /// Flow `id` (not [`SloppyGvt::NO_HOLDER`]) reports its virtual time `vt` (Fig. 9
    /// `update_gvt`). Returns whether the word changed.
    pub fn update(&self, id: u16, vt: u64) -> bool {
        assert_ne!(
            id,
            Self::NO_HOLDER,
            "flow id {id} is reserved for 'no holder'"
        );
        let vt = vt.min(Self::VALUE_MAX);
        let mut old = self.word.load(Ordering::Acquire);
        loop {
            let (holder, value) = Self::unpack(old);
            let take = holder == Self::NO_HOLDER
                || (holder == id && value < vt)
                || (holder != id && value > vt);
            if !take {
                return false;
            }
            match self.word.compare_exchange_weak(
                old,
                Self::pack(id, vt),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return true,
                Err(now) => old = now,
            }
        }
    }

    /// Flow `id` goes idle: if it holds the gvt, it lets go and keeps the value (Fig. 9
    /// `release_gvt`). Returns whether it was the holder.
    pub fn release(&self, id: u16) -> bool {
        let mut old = self.word.load(Ordering::Acquire);
        loop {
            let (holder, value) = Self::unpack(old);
            if holder != id {
                return false;
            }
            match self.word.compare_exchange_weak(
                old,
                Self::pack(Self::NO_HOLDER, value),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return true,
                Err(now) => old = now,
            }
        }
    }
}

impl Default for SloppyGvt {
    fn default() -> Self {
        SloppyGvt::new()
    }
}

// ---------------------------------------------------------------------------------
// Tunables.
// ---------------------------------------------------------------------------------

/// Which set of default thresholds and periods D2FQ uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum D2fqThresholds {
    /// The paper's evaluation settings (§4.1).
    Paper,
    /// The defaults of the authors' public code.
    Code,
}

/// Whether the H/L ratio adapts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum D2fqMode {
    /// Adjusted once per period (§3.2).
    Dynamic,
    /// Fixed.
    Static,
}

/// D2FQ's settings; [`D2fqConfig::from_params`] reads them from a policy spec.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct D2fqConfig {
    /// Default set.
    pub thresholds: D2fqThresholds,
    /// Dynamic or static H/L ratio.
    pub mode: D2fqMode,
    /// The static H/L ratio, or the initial one in dynamic mode.
    pub hl: u32,
    /// τm, vt units.
    pub tau_m: u64,
    /// τl, vt units.
    pub tau_l: u64,
    /// τw, vt units.
    pub tau_w: u64,
    /// H/L adjustment period, ns.
    pub period_ns: Nanos,
    /// Grace period before an idle flow counts as inactive, ns.
    pub grace_ns: Nanos,
    /// A lone active flow submits to the medium class (authors' code) instead of high.
    pub lone_flow_medium: bool,
}

impl D2fqConfig {
    /// The defaults of one threshold set.
    pub fn defaults(thresholds: D2fqThresholds, mode: D2fqMode) -> Self {
        match thresholds {
            D2fqThresholds::Paper => {
                let tau_l = vt_of_bytes(1 << 20);
                D2fqConfig {
                    thresholds,
                    mode,
                    hl: 256,
                    tau_m: tau_l / 2,
                    tau_l,
                    tau_w: 2 * tau_l,
                    period_ns: 1_000_000_000,
                    grace_ns: 200_000_000,
                    lone_flow_medium: false,
                }
            }
            D2fqThresholds::Code => D2fqConfig {
                thresholds,
                mode,
                hl: 6,
                tau_m: 8192 * 30 / 100,
                tau_l: 8192,
                tau_w: 2 * 8192,
                period_ns: 200_000_000,
                grace_ns: 200_000_000,
                lone_flow_medium: true,
            },
        }
    }

    /// Read `thresholds`, `mode`, `hl`, `period_ms`, `grace_ms`, `tau_l`.
    pub fn from_params(p: &mut Params) -> Result<Self, ParamError> {
        let thresholds = match p.take("thresholds", String::from("paper"), "paper or code")? {
            s if s == "paper" => D2fqThresholds::Paper,
            s if s == "code" => D2fqThresholds::Code,
            other => {
                return Err(ParamError::BadValue {
                    key: "thresholds".into(),
                    value: other,
                    expected: "paper or code",
                })
            }
        };
        let mode = match p.take("mode", String::from("dynamic"), "dynamic or static")? {
            s if s == "dynamic" => D2fqMode::Dynamic,
            s if s == "static" => D2fqMode::Static,
            other => {
                return Err(ParamError::BadValue {
                    key: "mode".into(),
                    value: other,
                    expected: "dynamic or static",
                })
            }
        };
        let mut c = D2fqConfig::defaults(thresholds, mode);
        let hl_min = match mode {
            D2fqMode::Dynamic => HL_MIN_DYNAMIC,
            D2fqMode::Static => 1,
        };
        c.hl = p.take_u64_in("hl", c.hl as u64, hl_min as u64, HL_MAX as u64)? as u32;
        c.period_ns =
            p.take_u64_in("period_ms", c.period_ns / 1_000_000, 1, 3_600_000)? * 1_000_000;
        c.grace_ns = p.take_u64_in("grace_ms", c.grace_ns / 1_000_000, 0, 3_600_000)? * 1_000_000;
        // Absent: the thresholds' default; given: 512 bytes … 1 TiB (0 is refused, not
        // taken to mean the default).
        let tau_l_given = p.take::<u64>("tau_l", u64::MAX, "bytes")?;
        if tau_l_given != u64::MAX {
            if !(512..=1 << 40).contains(&tau_l_given) {
                return Err(ParamError::OutOfRange {
                    key: "tau_l".into(),
                    value: tau_l_given.to_string(),
                    why: "must be between 512 bytes and 1 TiB (omit it for the default)".into(),
                });
            }
            let tau_l_bytes = tau_l_given;
            c.tau_l = vt_of_bytes(tau_l_bytes);
            c.tau_m = match thresholds {
                D2fqThresholds::Paper => c.tau_l / 2,
                D2fqThresholds::Code => c.tau_l * 30 / 100,
            };
            c.tau_w = 2 * c.tau_l;
        }
        Ok(c)
    }
}

/// The WRR weights `[high, medium, low]` for H/L ratio `r` (authors' code):
/// `L = ⌊256/r⌋`, `M = L·⌈√r⌉`, `H = L·r`, each within 1..=256.
pub fn d2fq_wrr_weights(r: u32) -> [u32; 3] {
    let r = r.clamp(1, HL_MAX);
    let l = (256 / r).max(1);
    let mut root = 1;
    while root * root < r {
        root += 1;
    }
    [(l * r).min(256), (l * root).min(256), l]
}

// ---------------------------------------------------------------------------------
// The policy.
// ---------------------------------------------------------------------------------

#[derive(Clone, Debug, Default)]
struct FlowState {
    weight: u32,
    vt: u64,
    /// Remainder of the last `l · 840 / (w · 1024)` division, carried to the next.
    vt_rem: u64,
    inflight: u32,
    active: bool,
    /// When the grace period of a flow with nothing in flight ends.
    idle_at: Option<Nanos>,
    /// vt at the start of the current adjustment period.
    vt_last: u64,
    /// Bytes completed per queue class in the current period (Eq. 3's `Σ l_{f,x}`).
    period_bytes: [u64; 4],
}

/// The D2FQ policy. See the module documentation.
#[derive(Debug)]
pub struct D2fq {
    cfg: D2fqConfig,
    gvt: Arc<SloppyGvt>,
    /// Current H/L ratio.
    hl: u32,
    flows: Vec<FlowState>,
    /// Arrived, not yet dispatched (only while the engine's queues are full).
    fifo: VecDeque<Request>,
    active_flows: u32,
    next_period_ns: Option<Nanos>,
    dispatched: [u64; 4],
    adjustments: u64,
}

impl D2fq {
    /// A D2FQ with its own global virtual time.
    pub fn new(cfg: D2fqConfig) -> Self {
        D2fq::with_gvt(cfg, Arc::new(SloppyGvt::new()))
    }

    /// A D2FQ sharing `gvt` with other instances (e.g. one per engine worker).
    pub fn with_gvt(cfg: D2fqConfig, gvt: Arc<SloppyGvt>) -> Self {
        D2fq {
            hl: cfg.hl,
            cfg,
            gvt,
            flows: Vec::new(),
            fifo: VecDeque::with_capacity(1024),
            active_flows: 0,
            next_period_ns: None,
            dispatched: [0; 4],
            adjustments: 0,
        }
    }

    /// Build from `d2fq:key=value,...` parameters (see the module documentation).
    pub fn from_params(p: &mut Params) -> Result<Self, ParamError> {
        Ok(D2fq::new(D2fqConfig::from_params(p)?))
    }

    /// The shared global virtual time.
    pub fn gvt(&self) -> &Arc<SloppyGvt> {
        &self.gvt
    }

    /// The current H/L ratio.
    pub fn hl_ratio(&self) -> u32 {
        self.hl
    }

    /// A flow's virtual time (0 for a flow never seen).
    pub fn flow_vt(&self, flow: FlowId) -> u64 {
        self.flows.get(flow.index()).map_or(0, |f| f.vt)
    }

    /// Whether a flow counts as active (in flight, or within its grace period).
    pub fn flow_active(&self, flow: FlowId) -> bool {
        self.flows.get(flow.index()).is_some_and(|f| f.active)
    }

    /// Dispatches so far per queue class (urgent, high, medium, low).
    pub fn dispatched_per_class(&self) -> [u64; 4] {
        self.dispatched
    }

    fn flow_mut(&mut self, id: FlowId) -> &mut FlowState {
        let i = id.index();
        assert!(
            i < SloppyGvt::NO_HOLDER as usize,
            "d2fq: flow id {i} does not fit the gvt's 16-bit holder field"
        );
        if i >= self.flows.len() {
            self.flows.resize_with(i + 1, || FlowState {
                weight: 1,
                ..FlowState::default()
            });
        }
        &mut self.flows[i]
    }

    /// Eq. 1 (with the authors' lone-flow rule when configured).
    fn queue_class(&self, vt: u64, gvt: u64) -> QueueClass {
        if self.cfg.lone_flow_medium && self.active_flows == 1 {
            return QueueClass::Medium;
        }
        // A flow behind gvt (possible while gvt is sloppy) has gap 0.
        let gap = vt.saturating_sub(gvt);
        if gap < self.cfg.tau_m {
            QueueClass::High
        } else if gap < self.cfg.tau_l {
            QueueClass::Medium
        } else {
            QueueClass::Low
        }
    }

    /// One H/L adjustment (§3.2) over the period that ends now.
    fn adjust(&mut self) {
        let [h, m, l] = d2fq_wrr_weights(self.hl);
        let (ph, pm, pl) = (h as f64, m as f64, l as f64);
        // (vt, Δvt) of the flow with the largest vt, and of the active flow with the
        // smallest (its vt stands for gvt, §3.2.1); the largest virtual slowdown (Eq. 3)
        // and whether that slowest flow used the low class for at least half its bytes.
        let mut max: Option<(u64, u64)> = None;
        let mut min: Option<(u64, u64)> = None;
        let mut max_slowdown = 0.0f64;
        let mut slowest_mostly_low = false;
        let mut served = 0;
        for f in &mut self.flows {
            let bytes = f.period_bytes;
            let total = bytes[1] + bytes[2] + bytes[3];
            let delta = f.vt.saturating_sub(f.vt_last);
            f.vt_last = f.vt;
            f.period_bytes = [0; 4];
            if total == 0 {
                continue;
            }
            served += 1;
            if max.is_none_or(|(v, _)| f.vt > v) {
                max = Some((f.vt, delta));
            }
            if f.active && min.is_none_or(|(v, _)| f.vt < v) {
                min = Some((f.vt, delta));
            }
            let slowdown =
                (bytes[1] as f64 + bytes[2] as f64 * ph / pm + bytes[3] as f64 * ph / pl)
                    / total as f64;
            if slowdown > max_slowdown {
                max_slowdown = slowdown;
                slowest_mostly_low = 2 * bytes[3] >= total;
            }
        }
        let (Some((vt_max, d_max)), Some((vt_min, d_min))) = (max, min) else {
            return;
        };
        if served < 2 {
            return; // nothing to share: keep the ratio (authors' code)
        }
        // Decrease first (Eq. 3): no flow needs more than its largest virtual slowdown.
        // A flow that needs a larger ratio uses the low class only, and then its
        // slowdown equals the current ratio, so this never undoes a needed increase.
        let need = max_slowdown.ceil() as u32;
        let next = if need < self.hl {
            need
        } else if vt_max.saturating_sub(vt_min) > self.cfg.tau_w
            && slowest_mostly_low
            && d_min > 0
            && d_max > d_min
        {
            // Eq. 2: the gap is beyond τw and still widening although the throttled
            // flow is on the low class: widen the ratio by the rate the gap grew.
            let grown = (d_max as u128 * self.hl as u128 / d_min as u128) as u64 + 1;
            grown.min(HL_MAX as u64) as u32
        } else {
            return;
        };
        let next = next.clamp(HL_MIN_DYNAMIC, HL_MAX);
        if next != self.hl {
            self.hl = next;
            self.adjustments += 1;
        }
    }
}

impl Policy for D2fq {
    fn name(&self) -> &'static str {
        "d2fq"
    }

    fn add_flow(&mut self, flow: &Flow) {
        self.flow_mut(flow.id).weight = flow.weight.max(1);
    }

    // ---- arrival: nothing is staged; the request waits only for device room.
    fn enqueue(&mut self, _now_ns: Nanos, req: Request) {
        self.fifo.push_back(req);
    }

    // ---- dispatch: Fig. 10 `dispatch_request`.
    fn dispatch(&mut self, now_ns: Nanos, _view: &DeviceView) -> Option<Dispatch> {
        let req = self.fifo.pop_front()?;
        let gvt = self.gvt.value();
        let f = self.flow_mut(req.flow);
        let newly_active = !f.active;
        if newly_active {
            // A flow that becomes active starts at gvt (Fig. 10 line 11).
            f.active = true;
            f.vt = gvt;
            f.vt_rem = 0;
            f.vt_last = gvt;
        }
        f.idle_at = None;
        f.inflight += 1;
        let vt = f.vt;
        if newly_active {
            self.active_flows += 1;
        }
        if self.cfg.mode == D2fqMode::Dynamic && self.next_period_ns.is_none() {
            self.next_period_ns = Some(now_ns + self.cfg.period_ns);
        }
        let queue = self.queue_class(vt, gvt);
        self.dispatched[queue.index()] += 1;
        Some(Dispatch { req, queue })
    }

    // ---- completion: Fig. 10 `complete_request`.
    fn complete(&mut self, now_ns: Nanos, done: &Completion) {
        let grace = self.cfg.grace_ns;
        let id = done.req.flow;
        let f = self.flow_mut(id);
        debug_assert!(
            f.inflight > 0,
            "completion of a flow with nothing in flight"
        );
        let num = done.req.len as u64 * VT_NUM + f.vt_rem;
        let den = f.weight as u64 * VT_DEN;
        f.vt += num / den;
        f.vt_rem = num % den;
        f.period_bytes[done.queue.index()] += done.req.len as u64;
        f.inflight = f.inflight.saturating_sub(1);
        if f.inflight == 0 {
            f.idle_at = Some(now_ns + grace);
        }
        let vt = f.vt;
        self.gvt.update(id.0 as u16, vt);
    }

    fn next_timer_ns(&self) -> Option<Nanos> {
        let idle = self.flows.iter().filter_map(|f| f.idle_at).min();
        match (idle, self.next_period_ns) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    // ---- timer: grace periods end; the H/L ratio is adjusted once per period.
    fn timer(&mut self, now_ns: Nanos) {
        for (i, f) in self.flows.iter_mut().enumerate() {
            if f.idle_at.is_some_and(|t| t <= now_ns) {
                f.idle_at = None;
                if f.inflight == 0 && f.active {
                    f.active = false;
                    self.active_flows -= 1;
                    self.gvt.release(i as u16);
                }
            }
        }
        if let Some(t) = self.next_period_ns {
            if t <= now_ns {
                self.adjust();
                self.next_period_ns = (self.active_flows > 0).then(|| now_ns + self.cfg.period_ns);
            }
        }
    }

    fn queued(&self) -> usize {
        self.fifo.len()
    }

    fn counters(&self) -> Vec<(Counter, f64)> {
        vec![
            (Counter::HlRatio, self.hl as f64),
            (Counter::Gvt, self.gvt.value() as f64),
            (Counter::ActiveFlows, self.active_flows as f64),
            (
                Counter::DispatchHigh,
                self.dispatched[QueueClass::High.index()] as f64,
            ),
            (
                Counter::DispatchMedium,
                self.dispatched[QueueClass::Medium.index()] as f64,
            ),
            (
                Counter::DispatchLow,
                self.dispatched[QueueClass::Low.index()] as f64,
            ),
            (Counter::HlAdjustments, self.adjustments as f64),
        ]
    }

    fn wrr_weights(&self) -> Option<[u32; 3]> {
        Some(d2fq_wrr_weights(self.hl))
    }
}
