//! `fios`: fair Flash I/O timeslices (Park & Shen, "FIOS: A Fair, Efficient Flash I/O
//! Scheduler", FAST '12, §4).
//!
//! # Invariant
//! Within an *epoch* every task (a flow, [`Request::flow`]) owns an equal `timeslice`
//! of device time (§4.1). A request may be issued only while its task has slice left:
//! `slice − reserved > 0`, where `reserved` is the estimated cost of the task's requests
//! in flight. The cost is charged at completion, so a slice never goes below zero by
//! more than the cost of one request (the last one issued). An epoch ends, and every
//! slice is refreshed to `timeslice` (not carried over), when no task with slice left
//! has a request queued or in flight and no anticipation is running (§4.1, both
//! conditions). Slices may be consumed in fragments and by several tasks at once.
//!
//! # Formulas
//! * **Cost** (§4.3). Calibrated linear model, when given:
//!   `cost = offset_op + per_byte_op · len` (`read_cost_ns` + `read_ns_per_kb`·KB, the
//!   same for writes). Without calibration, Eq. 1: `Cost = T_elapsed / P_issuance`, the
//!   request's issue-to-completion time over the number of requests outstanding at the
//!   device (itself included) when it was issued. The reservation of an uncalibrated
//!   request is its task's moving average of Eq. 1 costs for that operation.
//! * **Read preference with write blocking** (§4.2, `write_blocking=1`): reads of tasks
//!   with slice left go first; a write is issued only when no read is in flight, none
//!   of a task with slice left is queued, and no read anticipation runs.
//! * **Parallelism** (§4.3): every request whose task has slice left (and that write
//!   blocking allows) is issued at once, from several tasks.
//! * **Anticipation** (§4.4), considered when a request of task `t` completes and `t`
//!   has slice left and nothing queued: after a read (read preference, holding writes),
//!   or when its idleness would end the epoch (holding the epoch switch). It waits at
//!   most `T_service · α / (1 − α)`, where `T_service` is `t`'s moving average of
//!   device time per request, and ends when `t` submits again. The time the device
//!   stands idle while work is held back for it is charged to the anticipating tasks'
//!   slices (split equally when several anticipate at once).
//! * Variants (FIOS Fig. 8): `anticipation=none`, and `anticipation=proximity` — the
//!   disk-era anticipatory scheduler: after every completion wait up to 6 ms for the
//!   same task, holding every other task's requests.
//!
//! # Tunables
//! | key | default | meaning |
//! |---|---|---|
//! | `timeslice_ms` | 100 | slice per task per epoch (CFQ's sync slice), ms |
//! | `alpha` | 0.5 | tolerable idle fraction α, 0 < α < 1 |
//! | `write_blocking` | 1 | read preference with write blocking on (1) or off (0) |
//! | `anticipation` | `fios` | `fios`, `none` or `proximity` |
//! | `proximity_us` | 6000 | idle time of `anticipation=proximity`, µs |
//! | `read_cost_ns`, `write_cost_ns` | — | calibrated cost offsets (give both or neither) |
//! | `read_ns_per_kb`, `write_ns_per_kb` | 0 | calibrated cost per KiB |
//!
//! Without `read_cost_ns`/`write_cost_ns` the cost is Eq. 1.

use std::collections::VecDeque;

use super::Counter;
use super::{Completion, DeviceView, Dispatch, ParamError, Params, Policy};
use crate::types::{Flow, Nanos, Op, Request};

/// Default timeslice, ns (100 ms, CFQ's sync slice; §5).
pub const DEFAULT_TIMESLICE_NS: Nanos = 100_000_000;
/// Default tolerable idle fraction α (§4.4).
pub const DEFAULT_ALPHA: f64 = 0.5;
/// Idle time of the proximity variant, ns (6 ms, as Linux's anticipatory scheduler).
pub const DEFAULT_PROXIMITY_NS: Nanos = 6_000_000;
/// Gain of the per-task moving averages (service time, Eq. 1 cost): 1/8.
const EWMA_GAIN: f64 = 0.125;

/// Which anticipation FIOS uses (FIOS Fig. 8 compares the three).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Anticipation {
    /// Fairness-oriented anticipation (§4.4), bounded by `T_service · α / (1 − α)`.
    Fios,
    /// No anticipation: work-conserving.
    None,
    /// Anticipation for I/O proximity (disk era): a fixed idle after every completion,
    /// holding every other task.
    Proximity,
}

/// How a request's cost (device time charged to its task's slice) is found.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CostModel {
    /// Calibrated linear model (§4.3): offset plus per-byte cost, per operation.
    Linear {
        /// Read offset, ns.
        read_ns: f64,
        /// Read cost per byte, ns.
        read_ns_per_byte: f64,
        /// Write offset, ns.
        write_ns: f64,
        /// Write cost per byte, ns.
        write_ns_per_byte: f64,
    },
    /// Eq. 1: elapsed time over the requests outstanding at issue.
    Elapsed,
}

impl CostModel {
    /// The calibrated cost of `op` over `len` bytes, if the model is calibrated.
    pub fn linear_cost(&self, op: Op, len: u32) -> Option<f64> {
        match *self {
            CostModel::Linear {
                read_ns,
                read_ns_per_byte,
                write_ns,
                write_ns_per_byte,
            } => Some(if op.is_read() {
                read_ns + read_ns_per_byte * len as f64
            } else if op == Op::Trim {
                // A deallocate moves no data: only the fixed per-request write cost.
                write_ns
            } else {
                write_ns + write_ns_per_byte * len as f64
            }),
            CostModel::Elapsed => None,
        }
    }
}

/// FIOS settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FiosConfig {
    /// Slice per task per epoch, ns.
    pub timeslice_ns: Nanos,
    /// Tolerable idle fraction α, 0 < α < 1.
    pub alpha: f64,
    /// Read preference with write blocking.
    pub write_blocking: bool,
    /// Anticipation variant.
    pub anticipation: Anticipation,
    /// Idle time of [`Anticipation::Proximity`], ns.
    pub proximity_ns: Nanos,
    /// Cost accounting.
    pub cost: CostModel,
}

impl Default for FiosConfig {
    fn default() -> Self {
        FiosConfig {
            timeslice_ns: DEFAULT_TIMESLICE_NS,
            alpha: DEFAULT_ALPHA,
            write_blocking: true,
            anticipation: Anticipation::Fios,
            proximity_ns: DEFAULT_PROXIMITY_NS,
            cost: CostModel::Elapsed,
        }
    }
}

/// Why a task anticipates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Why {
    /// A read just completed: hold writes for its next read (read preference).
    Read,
    /// Its idleness would end the epoch: hold the epoch switch.
    Epoch,
    /// Proximity variant: hold everybody else.
    Proximity,
}

#[derive(Clone, Debug, Default)]
struct Task {
    reads: VecDeque<Request>,
    writes: VecDeque<Request>,
    /// Slice left in this epoch, ns (charged at completion; may dip below 0 by at most
    /// one request's cost).
    slice_ns: i64,
    /// Estimated cost of the task's requests in flight, not yet charged.
    reserved_ns: i64,
    inflight: u32,
    /// Moving average of device time per request (T_service), ns; 0 before any.
    service_ns: f64,
    /// Moving averages of Eq. 1 costs, per operation (reservations when uncalibrated).
    est_read_ns: f64,
    est_write_ns: f64,
    /// Anticipation in progress: until when, and why.
    antic: Option<(Nanos, Why)>,
}

impl Task {
    fn has_slice(&self) -> bool {
        self.slice_ns - self.reserved_ns > 0
    }
    fn queued(&self) -> usize {
        self.reads.len() + self.writes.len()
    }
    /// Whether the task keeps the epoch going: it can issue a queued request, or a
    /// request of it is in flight and its slice (charged at completion) is not spent.
    fn active(&self) -> bool {
        (self.has_slice() && self.queued() > 0) || (self.slice_ns > 0 && self.inflight > 0)
    }
}

/// What FIOS remembers of an issued request until it completes.
#[derive(Clone, Copy, Debug)]
struct Issued {
    reserved_ns: i64,
    /// Requests outstanding at the device at issue, this one included (P_issuance).
    p_issue: u32,
}

/// The FIOS policy. See the module documentation.
#[derive(Debug)]
pub struct Fios {
    cfg: FiosConfig,
    tasks: Vec<Task>,
    /// By request id (the block layer's ids are indices it reuses), the pieces issued
    /// and not completed, by offset. Vectors that keep their capacity, not a map: no
    /// allocation per I/O once they have grown.
    issued: Vec<Vec<(u64, Issued)>>,
    /// Requests FIOS issued that have not completed, and the reads among them.
    inflight: u32,
    inflight_reads: u32,
    /// Round-robin cursors for reads and writes.
    next_read: usize,
    next_write: usize,
    /// Since when the device has stood idle while anticipation held work back.
    held_since: Option<Nanos>,
    queued: usize,
    // Counters.
    epochs: u64,
    anticipations: u64,
    antic_hits: u64,
    antic_timeouts: u64,
    antic_charged_ns: u64,
}

impl Fios {
    /// FIOS with the given settings.
    ///
    /// # Panics
    /// If `alpha` is not in (0, 1) or the timeslice is 0.
    pub fn new(cfg: FiosConfig) -> Self {
        assert!(
            cfg.alpha > 0.0 && cfg.alpha < 1.0,
            "alpha must be in (0, 1)"
        );
        assert!(cfg.timeslice_ns > 0, "timeslice must be positive");
        Fios {
            cfg,
            tasks: Vec::new(),
            issued: Vec::new(),
            inflight: 0,
            inflight_reads: 0,
            next_read: 0,
            next_write: 0,
            held_since: None,
            queued: 0,
            epochs: 1,
            anticipations: 0,
            antic_hits: 0,
            antic_timeouts: 0,
            antic_charged_ns: 0,
        }
    }

    /// Build from `fios:timeslice_ms=..,alpha=..,write_blocking=0|1,anticipation=..,
    /// read_cost_ns=..,read_ns_per_kb=..,write_cost_ns=..,write_ns_per_kb=..`.
    pub fn from_params(p: &mut Params) -> Result<Self, ParamError> {
        let timeslice_ms = p.take_u64_in(
            "timeslice_ms",
            DEFAULT_TIMESLICE_NS / 1_000_000,
            1,
            3_600_000,
        )?;
        let alpha: f64 = p.take("alpha", DEFAULT_ALPHA, "a number between 0 and 1")?;
        if !(alpha > 0.0 && alpha < 1.0) {
            return Err(ParamError::OutOfRange {
                key: "alpha".into(),
                value: alpha.to_string(),
                why: "must be strictly between 0 and 1 (the tolerable idle fraction)".into(),
            });
        }
        let write_blocking = p.take_u64_in("write_blocking", 1, 0, 1)? == 1;
        let anticipation = match p
            .take(
                "anticipation",
                String::from("fios"),
                "fios, none or proximity",
            )?
            .as_str()
        {
            "fios" => Anticipation::Fios,
            "none" => Anticipation::None,
            "proximity" => Anticipation::Proximity,
            other => {
                return Err(ParamError::BadValue {
                    key: "anticipation".into(),
                    value: other.into(),
                    expected: "fios, none or proximity",
                })
            }
        };
        let proximity_us =
            p.take_u64_in("proximity_us", DEFAULT_PROXIMITY_NS / 1000, 1, 10_000_000)?;
        let nonneg = |p: &mut Params, key: &str| -> Result<Option<f64>, ParamError> {
            let v: Option<f64> = match p.take(key, String::new(), "a number of nanoseconds")? {
                s if s.is_empty() => None,
                s => Some(s.parse().map_err(|_| ParamError::BadValue {
                    key: key.into(),
                    value: s.clone(),
                    expected: "a number of nanoseconds",
                })?),
            };
            if let Some(x) = v {
                if !(x >= 0.0 && x.is_finite()) {
                    return Err(ParamError::OutOfRange {
                        key: key.into(),
                        value: x.to_string(),
                        why: "must be a finite number ≥ 0".into(),
                    });
                }
            }
            Ok(v)
        };
        let rc = nonneg(p, "read_cost_ns")?;
        let rk = nonneg(p, "read_ns_per_kb")?;
        let wc = nonneg(p, "write_cost_ns")?;
        let wk = nonneg(p, "write_ns_per_kb")?;
        let cost = match (rc, wc) {
            (Some(r), Some(w)) => CostModel::Linear {
                read_ns: r,
                read_ns_per_byte: rk.unwrap_or(0.0) / 1024.0,
                write_ns: w,
                write_ns_per_byte: wk.unwrap_or(0.0) / 1024.0,
            },
            (None, None) if rk.is_none() && wk.is_none() => CostModel::Elapsed,
            _ => {
                return Err(ParamError::OutOfRange {
                    key: "read_cost_ns/write_cost_ns".into(),
                    value: "partial calibration".into(),
                    why: "give both read_cost_ns and write_cost_ns (and optionally the \
                          *_ns_per_kb slopes) for the calibrated model, or none of them \
                          for Eq. 1 accounting"
                        .into(),
                })
            }
        };
        Ok(Fios::new(FiosConfig {
            timeslice_ns: timeslice_ms * 1_000_000,
            alpha,
            write_blocking,
            anticipation,
            proximity_ns: proximity_us * 1000,
            cost,
        }))
    }

    /// The settings.
    pub fn config(&self) -> &FiosConfig {
        &self.cfg
    }

    /// Slice left of `flow`'s task in this epoch, ns (before in-flight reservations).
    pub fn slice_left_ns(&self, flow: crate::types::FlowId) -> i64 {
        self.tasks
            .get(flow.index())
            .map_or(self.cfg.timeslice_ns as i64, |t| t.slice_ns)
    }

    /// The current epoch, counted from 1.
    pub fn epoch(&self) -> u64 {
        self.epochs
    }

    /// When `flow`'s anticipation ends, if it is anticipating.
    pub fn anticipating_until(&self, flow: crate::types::FlowId) -> Option<Nanos> {
        self.tasks
            .get(flow.index())
            .and_then(|t| t.antic.map(|a| a.0))
    }

    /// `flow`'s moving average of device time per request (T_service), ns.
    pub fn service_ns(&self, flow: crate::types::FlowId) -> f64 {
        self.tasks.get(flow.index()).map_or(0.0, |t| t.service_ns)
    }

    fn task(&mut self, i: usize) -> &mut Task {
        if i >= self.tasks.len() {
            let slice = self.cfg.timeslice_ns as i64;
            self.tasks.resize_with(i + 1, || Task {
                slice_ns: slice,
                ..Task::default()
            });
        }
        &mut self.tasks[i]
    }

    /// Charge the idle time since `held_since` to the tasks anticipating now.
    fn settle(&mut self, now: Nanos) {
        let Some(t0) = self.held_since.take() else {
            return;
        };
        let idle = now.saturating_sub(t0) as i64;
        let n = self.tasks.iter().filter(|t| t.antic.is_some()).count() as i64;
        if idle == 0 || n == 0 {
            return;
        }
        for t in self.tasks.iter_mut().filter(|t| t.antic.is_some()) {
            t.slice_ns -= idle / n;
        }
        self.antic_charged_ns += idle as u64;
    }

    /// End anticipations that ran out by `now`.
    fn expire(&mut self, now: Nanos) {
        for t in &mut self.tasks {
            if matches!(t.antic, Some((until, _)) if until <= now) {
                t.antic = None;
                self.antic_timeouts += 1;
            }
        }
    }

    fn any_antic(&self, why: Why) -> bool {
        self.tasks
            .iter()
            .any(|t| matches!(t.antic, Some((_, w)) if w == why))
    }

    /// New epoch when no task with slice left has a request queued or in flight, no
    /// anticipation runs, and some task (without slice) waits.
    fn maybe_new_epoch(&mut self) {
        let active = self.tasks.iter().any(|t| t.active() || t.antic.is_some());
        if active || self.queued == 0 {
            return;
        }
        for t in &mut self.tasks {
            t.slice_ns = self.cfg.timeslice_ns as i64;
        }
        self.epochs += 1;
    }

    /// The next task (round robin from `cursor`) with slice left and a queued request
    /// of the kind, not held by another task's proximity anticipation.
    fn pick(&self, cursor: usize, reads: bool, proximity_holder: Option<usize>) -> Option<usize> {
        let n = self.tasks.len();
        (0..n).map(|k| (cursor + k) % n).find(|&i| {
            let t = &self.tasks[i];
            let q = if reads { &t.reads } else { &t.writes };
            !q.is_empty() && t.has_slice() && proximity_holder.is_none_or(|h| h == i)
        })
    }

    fn reservation(&self, t: &Task, req: &Request) -> i64 {
        match self.cfg.cost.linear_cost(req.op, req.len) {
            Some(c) => c.round() as i64,
            None if req.op.is_read() => t.est_read_ns.round() as i64,
            None => t.est_write_ns.round() as i64,
        }
    }

    fn issue(&mut self, i: usize, req: Request) -> Dispatch {
        let reserved_ns = self.reservation(&self.tasks[i], &req);
        let t = &mut self.tasks[i];
        t.reserved_ns += reserved_ns;
        t.inflight += 1;
        self.inflight += 1;
        if req.op.is_read() {
            self.inflight_reads += 1;
        }
        self.queued -= 1;
        let id = req.id.0 as usize;
        if self.issued.len() <= id {
            self.issued.resize_with(id + 1, Vec::new);
        }
        let pieces = &mut self.issued[id];
        let iss = Issued {
            reserved_ns,
            p_issue: self.inflight,
        };
        match pieces.iter_mut().find(|p| p.0 == req.offset) {
            // As the map this replaces: the same (request, offset) again replaces.
            Some(p) => p.1 = iss,
            None => pieces.push((req.offset, iss)),
        }
        Dispatch::medium(req)
    }
}

impl Policy for Fios {
    fn name(&self) -> &'static str {
        "fios"
    }

    fn add_flow(&mut self, flow: &Flow) {
        self.task(flow.id.index());
    }

    // ---- arrival -------------------------------------------------------------------

    fn enqueue(&mut self, now_ns: Nanos, req: Request) {
        self.settle(now_ns);
        let t = self.task(req.flow.index());
        if t.antic.take().is_some() {
            // The anticipated request came: anticipation succeeded.
            self.antic_hits += 1;
        }
        let t = &mut self.tasks[req.flow.index()];
        if req.op.is_read() {
            t.reads.push_back(req);
        } else {
            t.writes.push_back(req);
        }
        self.queued += 1;
    }

    // ---- dispatch ------------------------------------------------------------------

    fn dispatch(&mut self, now_ns: Nanos, view: &DeviceView) -> Option<Dispatch> {
        self.settle(now_ns);
        self.expire(now_ns);
        if self.queued == 0 || view.inflight >= view.max_inflight {
            return None;
        }
        self.maybe_new_epoch();
        let proximity_holder = self
            .tasks
            .iter()
            .position(|t| matches!(t.antic, Some((_, Why::Proximity))));
        // Read preference: reads of tasks with slice left go first, in parallel.
        if let Some(i) = self.pick(self.next_read, true, proximity_holder) {
            self.next_read = (i + 1) % self.tasks.len();
            let req = self.tasks[i].reads.pop_front().expect("picked");
            return Some(self.issue(i, req));
        }
        // Write blocking: no write while a read is in flight, queued (with slice) or
        // anticipated.
        let blocked = self.cfg.write_blocking
            && (self.inflight_reads > 0
                || self
                    .tasks
                    .iter()
                    .any(|t| t.has_slice() && !t.reads.is_empty())
                || self.any_antic(Why::Read));
        if !blocked {
            if let Some(i) = self.pick(self.next_write, false, proximity_holder) {
                self.next_write = (i + 1) % self.tasks.len();
                let req = self.tasks[i].writes.pop_front().expect("picked");
                return Some(self.issue(i, req));
            }
        }
        // Nothing goes. If the device is idle while anticipation holds back work that
        // could otherwise go, that idle time is the anticipation's cost.
        let held = self.tasks.iter().any(|t| t.antic.is_some())
            && self.inflight == 0
            && self.tasks.iter().any(|t| t.queued() > 0);
        if held {
            self.held_since = Some(now_ns);
        }
        None
    }

    // ---- completion ----------------------------------------------------------------

    fn complete(&mut self, now_ns: Nanos, done: &Completion) {
        self.settle(now_ns);
        let i = done.req.flow.index();
        let pieces = self.issued.get_mut(done.req.id.0 as usize);
        let at = pieces
            .as_ref()
            .and_then(|p| p.iter().position(|x| x.0 == done.req.offset));
        let (Some(pieces), Some(at)) = (pieces, at) else {
            return; // not ours (cannot happen with one engine)
        };
        let iss = pieces.swap_remove(at).1;
        self.inflight -= 1;
        if done.req.op.is_read() {
            self.inflight_reads -= 1;
        }
        let elapsed = done.device_ns() as f64;
        let cost = match self.cfg.cost.linear_cost(done.req.op, done.req.len) {
            Some(c) => c,
            None => elapsed / iss.p_issue.max(1) as f64,
        };
        let t = self.task(i);
        t.inflight -= 1;
        t.reserved_ns -= iss.reserved_ns;
        t.slice_ns -= cost.round() as i64;
        let ewma = |avg: f64, x: f64| {
            if avg == 0.0 {
                x
            } else {
                avg + EWMA_GAIN * (x - avg)
            }
        };
        t.service_ns = ewma(t.service_ns, elapsed);
        if done.req.op.is_read() {
            t.est_read_ns = ewma(t.est_read_ns, cost);
        } else {
            t.est_write_ns = ewma(t.est_write_ns, cost);
        }

        // When to anticipate (§4.4): the task has slice left and nothing queued.
        if self.cfg.anticipation == Anticipation::None {
            return;
        }
        let t = &self.tasks[i];
        if t.queued() > 0 || !t.has_slice() || t.antic.is_some() {
            return;
        }
        let (bound, why) = match self.cfg.anticipation {
            Anticipation::Proximity => (self.cfg.proximity_ns, Why::Proximity),
            _ => {
                let why = if done.req.op.is_read() && self.cfg.write_blocking {
                    Why::Read
                } else {
                    // Would the epoch end now? No other task with slice left has work,
                    // and this one has nothing in flight.
                    let others = self
                        .tasks
                        .iter()
                        .enumerate()
                        .any(|(j, u)| j != i && u.active());
                    let waiting = self.tasks.iter().any(|u| !u.has_slice() && u.queued() > 0);
                    if others || t.inflight > 0 || !waiting {
                        return;
                    }
                    Why::Epoch
                };
                // How long (§4.4): T_service · α / (1 − α).
                let a = self.cfg.alpha;
                ((t.service_ns * a / (1.0 - a)).round() as Nanos, why)
            }
        };
        // One proximity anticipation at a time (as the anticipatory scheduler).
        if bound == 0 || (why == Why::Proximity && self.tasks.iter().any(|u| u.antic.is_some())) {
            return;
        }
        self.tasks[i].antic = Some((now_ns + bound, why));
        self.anticipations += 1;
    }

    // ---- timer ---------------------------------------------------------------------

    fn next_timer_ns(&self) -> Option<Nanos> {
        self.tasks.iter().filter_map(|t| t.antic.map(|a| a.0)).min()
    }

    fn timer(&mut self, now_ns: Nanos) {
        self.settle(now_ns);
        self.expire(now_ns);
    }

    fn queued(&self) -> usize {
        self.queued
    }

    fn counters(&self) -> Vec<(Counter, f64)> {
        vec![
            (Counter::Epochs, self.epochs as f64),
            (Counter::Anticipations, self.anticipations as f64),
            (Counter::AnticHits, self.antic_hits as f64),
            (Counter::AnticTimeouts, self.antic_timeouts as f64),
            (Counter::AnticIdleMs, self.antic_charged_ns as f64 / 1e6),
        ]
    }
}
