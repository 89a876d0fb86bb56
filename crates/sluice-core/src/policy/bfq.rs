//! `bfq`: Budget Fair Queueing (Valente and Checconi, IEEE ToC 2010; Linux
//! `block/bfq-iosched.c`, `block/bfq-wf2q.c`, `Documentation/block/bfq-iosched.rst`), the
//! Linux proportional-share baseline of the D2FQ paper (§4.1, where `max_budget` is 256).
//!
//! BFQ serves one flow at a time (the *in-service* queue) until it has used its budget,
//! measured in sectors; the next flow is chosen by B-WF2Q+ over the flows' budgets.
//!
//! # Formulas (BFQ's names)
//! * Weight of flow `f`: `φ_f = 10 · w_f`, where `w_f = 8 − ioprio` is the sluice flow
//!   weight (`bfq_ioprio_to_weight`), clamped to 1..=1000.
//! * Each flow is one B-WF2Q+ entity with start `S_f`, finish `F_f`, budget `B_f`
//!   (sectors of 512 bytes) and service `s_f` (sectors charged since it entered service).
//! * System virtual time `V`: every charge of `σ` sectors advances `V += σ / Φ`, with
//!   `Φ` (`wsum`) the weight sum of the busy flows and of the idle flows still
//!   remembered (`F_f > V`, the kernel's idle tree; a flow is forgotten once `V ≥ F_f`).
//!   When no active flow is eligible, `V` jumps to the smallest `S_f`.
//! * Activation (a flow gets a request while not busy): `S_f = max(V, F_f)` if it is
//!   still remembered, else `S_f = V`; `B_f = max(B_max,f, σ(head))`;
//!   `F_f = S_f + B_f / φ_f`.
//! * Selection: among the active flows the eligible ones (`S_f ≤ V`), the smallest `F_f`
//!   (ties to the lower flow id) becomes the in-service flow.
//! * Service: only the in-service flow dispatches, head first, each request charged its
//!   size `σ` in sectors at dispatch (`s_f += σ`), while `s_f + σ ≤ B_f`.
//! * Expiry (`bfq_bfqq_expire`, reasons `BUDGET_EXHAUSTED`, `BUDGET_TIMEOUT`,
//!   `NO_MORE_REQUESTS`, `TOO_IDLE`, `PREEMPTED`): still backlogged → requeue with
//!   `S_f ← S_f + s_f/φ_f`, `F_f ← S_f + B_f/φ_f`; empty → `F_f ← S_f + s_f/φ_f` and
//!   remembered while `F_f > V`.
//! * Time charging (`bfq_bfqq_is_slow`, `bfq_bfqq_charge_time`): a slow flow — served
//!   < 1 ms or 1–20 ms and seeky (> 19 of its last 32 requests seeky: more than 800
//!   sectors from the previous one and smaller than 64 sectors), or served > 20 ms and
//!   `s_f < B_max/2` — or a budget timeout with ≥ `B_f/3` left is charged
//!   `max(s_f, B_max · min(t, T_timeout) / T_timeout)` (t = 2 ms when served < 1 ms).
//! * Budget feedback (`__bfq_bfqq_recalc_budget`), on expiry `B_max,f ←`:
//!   exhausted `min(4·B_max,f, B_max)`; timeout `min(2·B_max,f, B_max)`; too idle
//!   `min(2·B_max,f, B_max)` if requests are still in flight, else `B_max,f − 4·B_min`
//!   (at least `B_min`); no more requests `max(s_f, B_min)`; preempted unchanged.
//!   `B_min = B_max/32`; a new flow starts at `2/3 · B_max`.
//! * Idling (`bfq_better_to_idle`) on a non-rotational device with command queueing:
//!   only when needed for service guarantees — the weights of the flows that are busy
//!   or have requests in flight differ, or only one flow is busy — and `slice_idle > 0`
//!   (`strict_guarantees` always idles). When the in-service flow runs out of requests
//!   and should idle, dispatching is plugged while its requests are in flight, then for
//!   `slice_idle` after the last completes (idle timer → `TOO_IDLE`); otherwise it
//!   expires at once (`NO_MORE_REQUESTS`).
//! * Preemption: a flow becoming busy that would be served next expires the in-service
//!   flow (`PREEMPTED`) if its weight is higher, or if the in-service flow is plugged
//!   but no longer needs to idle.
//! * `max_budget=auto`: `B_max = R_peak · T_timeout` (`bfq_calc_max_budget`), the
//!   sectors the device moves in one budget timeout at its peak rate; `B_max` is
//!   16384 sectors until the first estimate. `R_peak` starts at 2/3 of the kernel's
//!   non-rotational reference rate and is updated from observation windows of ≥ 300 ms
//!   (ending after 1 s, or when the device has idled 100 ms) with ≥ 32 dispatches:
//!   `R_peak ← R_peak·(d−1)/d + R/d`, `d = 10 − min(8, ⌊9·seq/n⌋·Δt/1 s)`, skipped for
//!   random workloads (`seq < 3n/4`) unless `R > R_peak`, and for `R > 20` sectors/µs.
//!
//! Virtual times are integers in units of `sectors · 2^22 / φ` (the kernel's
//! `WFQ_SERVICE_SHIFT`).
//!
//! # Invariants
//! * `V` and each flow's `S_f` never decrease, and `S_f ≤ F_f`. `F_f` is planned with
//!   the whole budget and corrected at expiry to the service actually charged (the
//!   kernel's `bfq_calc_finish(entity, service)`), never below `S_f`; so the charged
//!   finish tags of a flow's successive turns never decrease.
//! * Only the in-service flow dispatches, never past its budget (`s_f ≤ B_f`), and never
//!   more than `depth` requests in flight (one with `strict_guarantees`).
//! * No backlogged flow starves: it is active with a finite `F_f`, `V` rises with every
//!   charge and jumps to the smallest `S_f`, and a budget or a timeout ends every turn.
//!
//! # Tunables (`bfq:key=value,...`, names and defaults of `bfq-iosched.rst`)
//! | key | meaning | default |
//! |---|---|---|
//! | `slice_idle` | idle time for the in-service flow's next request, ms (0: never idle) | 8 |
//! | `slice_idle_us` | the same in µs (give one of the two) | 8000 |
//! | `timeout_sync` | budget timeout `T_timeout`, ms | 125 |
//! | `max_budget` | `B_max` in sectors, or `0`/`auto` for the peak-rate estimate | auto |
//! | `strict_guarantees` | 1: always idle, dispatch only to an empty device | 0 |
//! | `low_latency` | only `0` (weight raising is not implemented) | 0 |
//! | `depth` | requests in flight at most (the driver's tag depth, not a BFQ tunable) | 64 |
//!
//! Dropped (no meaning for a simulated flash device or for sluice's flows):
//! `back_seek_max`, `back_seek_penalty` (a flow's requests leave in arrival order:
//! no head position to seek from), `fifo_expire_sync`, `fifo_expire_async` (with
//! arrival order within a flow no request can be overtaken), `low_latency` weight
//! raising (interactive / soft real-time heuristics), the RT and idle I/O classes (all
//! flows are best-effort), cgroups, queue merging, I/O injection while idling,
//! timestamp back-shifting for flows that come back quickly, and async (write) charge
//! factors: every request is sync (direct I/O) and charged its sectors.
//!
//! Simplified: one queue per sluice flow (Linux: per process), so a flow's threads share
//! it; the device is taken to be non-rotational with command queueing, so idling for
//! throughput (rotational disks) is left out; times are ns, not jiffies; a preempted
//! flow that is empty is always deactivated. The simulator has no CPU cost, so the
//! lock and per-request overhead that make BFQ slower than D2FQ on fast SSDs (D2FQ
//! Fig. 11/12) are not reproduced; `depth` stands in for the driver's tag depth.

use std::collections::VecDeque;

use super::Counter;
use super::{Completion, DeviceView, Dispatch, ParamError, Params, Policy};
use crate::types::{Flow, FlowId, Nanos, Request};

mod config;
mod expire;
mod rate;

pub use config::{BfqConfig, MaxBudget};
use rate::*;

/// Virtual-time fixed point: tags are `sectors << VT_SHIFT / φ`.
const VT_SHIFT: u32 = 22;
/// Bytes per sector.
const SECTOR: u64 = 512;
/// `bfq_ioprio_to_weight`: BFQ weight per unit of sluice weight (8 − ioprio).
const WEIGHT_COEFF: u64 = 10;
/// Largest BFQ weight (`BFQ_MAX_WEIGHT`).
const MAX_WEIGHT: u64 = 1000;
/// `bfq_default_max_budget`, sectors: B_max until the first peak-rate estimate.
const DEFAULT_MAX_BUDGET: u64 = 16 * 1024;
/// `BFQ_MIN_TT`: the service time assumed for a flow served less than 1 ms.
const MIN_TT_NS: u64 = 2_000_000;
/// `bfq_bfqq_is_slow` bounds: below 1 ms and above 20 ms of service.
const SLOW_SHORT_NS: u64 = 1_000_000;
const SLOW_LONG_NS: u64 = 20_000_000;
/// `BFQQ_SEEK_THR`, `BFQQ_SECT_THR_NONROT` (sectors) and the seeky-history threshold.
const SEEK_THR: u64 = 800;
const SECT_THR_NONROT: u64 = 64;
const SEEKY_HISTORY: u32 = 19;
/// Why the in-service flow stopped being served (`enum bfqq_expiration`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Expiry {
    /// The idle timer fired with the flow still empty.
    TooIdle,
    /// Served longer than `timeout_sync`.
    BudgetTimeout,
    /// The next request does not fit in what is left of the budget.
    BudgetExhausted,
    /// Nothing queued and no reason to idle.
    NoMoreRequests,
    /// A flow that became busy took over.
    Preempted,
}

impl Expiry {
    const ALL: [Expiry; 5] = [
        Expiry::TooIdle,
        Expiry::BudgetTimeout,
        Expiry::BudgetExhausted,
        Expiry::NoMoreRequests,
        Expiry::Preempted,
    ];
}

/// Where a flow's entity is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Not busy and not remembered (not counted in `wsum`).
    Forgotten,
    /// Not busy, remembered because `F > V` (the idle tree; counted in `wsum`).
    Idle,
    /// Busy, waiting to be served (the active tree).
    Active,
    /// The in-service flow.
    InService,
}

/// A flow's B-WF2Q+ entity as seen from outside (tests, tools).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntityView {
    /// Start tag S.
    pub start: u64,
    /// Finish tag F.
    pub finish: u64,
    /// Budget B of the current or next turn, sectors.
    pub budget: u64,
    /// The flow's budget feedback value `B_max,f`, sectors.
    pub max_budget: u64,
    /// Sectors charged in the current turn.
    pub service: u64,
    /// BFQ weight φ.
    pub weight: u64,
    /// Busy: queued requests, or in service.
    pub busy: bool,
    /// Requests dispatched and not completed.
    pub dispatched: u32,
}

#[derive(Debug)]
struct FlowQ {
    weight: u64,
    queue: VecDeque<Request>,
    state: State,
    start: u64,
    finish: u64,
    budget: u64,
    service: u64,
    max_budget: u64,
    dispatched: u32,
    /// One bit per request, 1 = seeky (`seek_history`).
    seek_history: u32,
    /// End sector of the flow's previous request.
    last_pos: Option<u64>,
}

/// Budget Fair Queueing.
#[derive(Debug)]
pub struct Bfq {
    cfg: BfqConfig,
    flows: Vec<FlowQ>,
    /// V.
    v: u64,
    /// Φ: weights of busy and remembered idle flows.
    wsum: u64,
    in_service: Option<usize>,
    /// B_max, sectors.
    max_budget: u64,
    /// When the in-service flow entered service, and its budget timeout.
    budget_start_ns: Nanos,
    budget_timeout_ns: Nanos,
    /// The in-service flow waits for a request (idle timer armed until `idle_until_ns`).
    wait_request: bool,
    idle_until_ns: Nanos,
    idling_start_ns: Nanos,
    inflight: u32,
    queued: usize,
    rate: RateEstimator,
    expiries: [u64; 5],
    last_expiry: Option<(FlowId, Expiry)>,
    idle_timers: u64,
}

fn sectors_of(req: &Request) -> u64 {
    // A flush still takes a turn: charge it one sector.
    (req.len as u64).div_ceil(SECTOR).max(1)
}

fn bfq_weight(w: u32) -> u64 {
    (w.max(1) as u64 * WEIGHT_COEFF).min(MAX_WEIGHT)
}

/// `sectors / φ` in virtual-time units.
fn vt_delta(sectors: u64, weight: u64) -> u64 {
    ((sectors as u128) << VT_SHIFT).div_ceil(weight.max(1) as u128) as u64
}

impl Bfq {
    /// BFQ with the given tunables.
    ///
    /// # Panics
    /// If `depth` is 0, `timeout_sync_ns` is 0, or a fixed `max_budget` is 0.
    pub fn new(cfg: BfqConfig) -> Self {
        assert!(cfg.depth >= 1, "depth must be at least 1");
        assert!(cfg.timeout_sync_ns > 0, "timeout_sync must be positive");
        let max_budget = match cfg.max_budget {
            MaxBudget::Auto => DEFAULT_MAX_BUDGET,
            MaxBudget::Sectors(s) => {
                assert!(s > 0, "max_budget must be positive");
                s
            }
        };
        Bfq {
            cfg,
            flows: Vec::new(),
            v: 0,
            wsum: 0,
            in_service: None,
            max_budget,
            budget_start_ns: 0,
            budget_timeout_ns: 0,
            wait_request: false,
            idle_until_ns: 0,
            idling_start_ns: 0,
            inflight: 0,
            queued: 0,
            rate: RateEstimator {
                peak_rate: REF_RATE_NONROT * 2 / 3,
                ..RateEstimator::default()
            },
            expiries: [0; 5],
            last_expiry: None,
            idle_timers: 0,
        }
    }

    /// The tunables in use.
    pub fn config(&self) -> &BfqConfig {
        &self.cfg
    }

    /// The system virtual time V.
    pub fn virtual_time(&self) -> u64 {
        self.v
    }

    /// B_max in sectors (fixed, or the current auto estimate).
    pub fn max_budget(&self) -> u64 {
        self.max_budget
    }

    /// B_min = B_max / 32 (`bfq_min_budget`).
    pub fn min_budget(&self) -> u64 {
        (self.max_budget / 32).max(1)
    }

    /// The in-service flow.
    pub fn in_service(&self) -> Option<FlowId> {
        self.in_service.map(|i| FlowId(i as u32))
    }

    /// The entity of flow `f`, if the flow is known.
    pub fn entity(&self, f: FlowId) -> Option<EntityView> {
        self.flows.get(f.index()).map(|q| EntityView {
            start: q.start,
            finish: q.finish,
            budget: q.budget,
            max_budget: q.max_budget,
            service: q.service,
            weight: q.weight,
            busy: matches!(q.state, State::Active | State::InService),
            dispatched: q.dispatched,
        })
    }

    /// The last expiry: which flow and why.
    pub fn last_expiry(&self) -> Option<(FlowId, Expiry)> {
        self.last_expiry
    }

    /// How many turns ended for `reason`.
    pub fn expiries(&self, reason: Expiry) -> u64 {
        self.expiries[Expiry::ALL
            .iter()
            .position(|&r| r == reason)
            .expect("listed")]
    }

    /// Whether the in-service flow is idling for its next request.
    pub fn idling(&self) -> bool {
        self.wait_request
    }

    /// Requests dispatched and not completed.
    pub fn inflight(&self) -> u32 {
        self.inflight
    }

    fn ensure_flow(&mut self, i: usize) {
        while self.flows.len() <= i {
            let mb = self.initial_flow_budget();
            self.flows.push(FlowQ {
                weight: WEIGHT_COEFF,
                queue: VecDeque::new(),
                state: State::Forgotten,
                start: 0,
                finish: 0,
                budget: mb,
                service: 0,
                max_budget: mb,
                dispatched: 0,
                seek_history: 0,
                last_pos: None,
            });
        }
    }

    /// A new flow's `B_max,f`: 2/3 of B_max (`bfq_init_bfqq`).
    fn initial_flow_budget(&self) -> u64 {
        (2 * self.max_budget / 3).max(1)
    }

    // ---- B-WF2Q+ bookkeeping.

    /// Raise V (never lowers it) and forget idle flows it has passed.
    fn raise_v(&mut self, v: u64) {
        if v <= self.v {
            return;
        }
        self.v = v;
        for q in &mut self.flows {
            if q.state == State::Idle && q.finish <= v {
                q.state = State::Forgotten;
                self.wsum -= q.weight;
            }
        }
    }

    /// Charge `sectors` of service to flow `i` (`bfq_bfqq_served`).
    fn served(&mut self, i: usize, sectors: u64) {
        self.flows[i].service += sectors;
        debug_assert!(self.wsum > 0, "service with an empty weight sum");
        let dv = ((sectors as u128) << VT_SHIFT) / self.wsum.max(1) as u128;
        self.raise_v(self.v + dv as u64);
    }

    /// The flow B-WF2Q+ serves next and V at that moment: the eligible active flow
    /// (S ≤ V, after V's jump to the smallest S) with the smallest F.
    fn next_flow(&self) -> Option<(usize, u64)> {
        let min_start = self
            .flows
            .iter()
            .filter(|q| q.state == State::Active)
            .map(|q| q.start)
            .min()?;
        let v = self.v.max(min_start);
        let (i, _) = self
            .flows
            .iter()
            .enumerate()
            .filter(|(_, q)| q.state == State::Active && q.start <= v)
            .min_by_key(|(i, q)| (q.finish, *i))
            .expect("the flow with the smallest start is eligible");
        Some((i, v))
    }

    /// Make the next flow the in-service one (`bfq_set_in_service_queue`).
    fn set_in_service(&mut self, now_ns: Nanos) -> Option<usize> {
        let (i, v) = self.next_flow()?;
        self.raise_v(v);
        let q = &mut self.flows[i];
        q.state = State::InService;
        q.service = 0;
        self.in_service = Some(i);
        self.budget_start_ns = now_ns;
        self.budget_timeout_ns = now_ns + self.cfg.timeout_sync_ns;
        self.wait_request = false;
        Some(i)
    }
}

impl Policy for Bfq {
    fn name(&self) -> &'static str {
        "bfq"
    }

    fn add_flow(&mut self, flow: &Flow) {
        let i = flow.id.index();
        self.ensure_flow(i);
        let w = bfq_weight(flow.weight);
        let q = &mut self.flows[i];
        if q.state != State::Forgotten {
            // Counted in Φ: keep Φ the sum of the counted weights. The tags follow the
            // new weight from the next turn on.
            self.wsum = self.wsum - q.weight + w;
        }
        q.weight = w;
    }

    // ---- arrival: queue it; a flow that was not busy is activated with fresh tags.
    fn enqueue(&mut self, now_ns: Nanos, req: Request) {
        let i = req.flow.index();
        self.ensure_flow(i);
        let sectors = sectors_of(&req);
        let pos = req.offset / SECTOR;
        let v = self.v;
        let q = &mut self.flows[i];
        let seeky = q
            .last_pos
            .is_none_or(|last| pos.abs_diff(last) > SEEK_THR && sectors < SECT_THR_NONROT);
        q.seek_history = (q.seek_history << 1) | seeky as u32;
        q.last_pos = Some(pos + sectors);
        q.queue.push_back(req);
        self.queued += 1;

        match q.state {
            State::Active => {}
            State::InService => {
                if self.wait_request {
                    // The request we idled for: stop idling and dispatch it.
                    self.wait_request = false;
                }
            }
            State::Idle | State::Forgotten => {
                let start = if q.state == State::Idle {
                    v.max(q.finish)
                } else {
                    self.wsum += q.weight;
                    v
                };
                debug_assert!(start >= q.start, "start tag went back");
                q.start = start;
                q.budget = q.max_budget.max(sectors);
                q.finish = start + vt_delta(q.budget, q.weight);
                q.service = 0;
                q.state = State::Active;
                // Preemption (bfq_bfqq_handle_idle_busy_switch): only if this flow
                // would be served next.
                if let Some(s) = self.in_service {
                    let higher = self.flows[i].weight > self.flows[s].weight;
                    let unplug = self.wait_request && !self.better_to_idle();
                    let next = self.next_flow().map(|(n, _)| n) == Some(i);
                    if (higher || unplug) && next {
                        self.expire(now_ns, Expiry::Preempted, false);
                    }
                }
            }
        }
    }

    // ---- dispatch: the in-service flow's head request, within budget and depth.
    fn dispatch(&mut self, now_ns: Nanos, _view: &DeviceView) -> Option<Dispatch> {
        if self.queued == 0 && self.in_service.is_none() {
            return None;
        }
        if self.inflight >= self.cfg.depth || (self.cfg.strict_guarantees && self.inflight > 0) {
            return None;
        }
        // Each round either dispatches, keeps the device plugged, or ends a turn; a
        // flow that has just entered service dispatches (its budget fits its head), so
        // this ends within two rounds per flow.
        for _ in 0..=2 * self.flows.len() + 2 {
            let i = match self.in_service {
                Some(i) => i,
                None => self.set_in_service(now_ns)?,
            };
            if self.may_expire_for_timeout(now_ns, i)
                && !(self.flows[i].queue.is_empty() && self.better_to_idle())
            {
                self.expire(now_ns, Expiry::BudgetTimeout, false);
                continue;
            }
            let q = &self.flows[i];
            if let Some(head) = q.queue.front() {
                let sectors = sectors_of(head);
                if sectors > q.budget - q.service {
                    self.expire(now_ns, Expiry::BudgetExhausted, false);
                    continue;
                }
                self.wait_request = false;
                let req = self.flows[i].queue.pop_front().expect("peeked");
                self.queued -= 1;
                self.flows[i].dispatched += 1;
                self.served(i, sectors);
                self.update_peak_rate(now_ns, req.offset / SECTOR, sectors);
                self.inflight += 1;
                debug_assert!(self.flows[i].service <= self.flows[i].budget);
                return Some(Dispatch::medium(req));
            }
            // Empty: keep the device for this flow while idling is worth it.
            if self.wait_request || (q.dispatched > 0 && self.better_to_idle()) {
                return None;
            }
            self.expire(now_ns, Expiry::NoMoreRequests, false);
        }
        unreachable!("bfq dispatch made no progress")
    }

    // ---- completion: the in-service flow may start idling or end its turn.
    fn complete(&mut self, now_ns: Nanos, done: &Completion) {
        let i = done.req.flow.index();
        self.inflight = self.inflight.saturating_sub(1);
        self.rate.last_completion_ns = now_ns;
        if let Some(q) = self.flows.get_mut(i) {
            q.dispatched = q.dispatched.saturating_sub(1);
        }
        if self.in_service != Some(i) {
            return;
        }
        let empty = self.flows[i].queue.is_empty();
        let dispatched = self.flows[i].dispatched;
        if empty && self.better_to_idle() {
            if dispatched == 0 && !self.wait_request {
                // bfq_arm_slice_timer.
                self.wait_request = true;
                self.idling_start_ns = now_ns;
                self.idle_until_ns = now_ns + self.cfg.slice_idle_ns;
                self.idle_timers += 1;
            }
        } else if self.may_expire_for_timeout(now_ns, i) {
            self.expire(now_ns, Expiry::BudgetTimeout, false);
        } else if empty && (dispatched == 0 || !self.better_to_idle()) {
            self.expire(now_ns, Expiry::NoMoreRequests, false);
        }
    }

    fn next_timer_ns(&self) -> Option<Nanos> {
        self.wait_request.then_some(self.idle_until_ns)
    }

    // ---- timer: idling ended without a request (bfq_idle_slice_timer_body).
    fn timer(&mut self, now_ns: Nanos) {
        if !self.wait_request || now_ns < self.idle_until_ns {
            return;
        }
        let Some(i) = self.in_service else {
            self.wait_request = false;
            return;
        };
        if self.budget_timed_out(now_ns) {
            self.expire(now_ns, Expiry::BudgetTimeout, true);
        } else if self.flows[i].queue.is_empty() {
            self.expire(now_ns, Expiry::TooIdle, true);
        } else {
            self.wait_request = false;
        }
    }

    fn queued(&self) -> usize {
        self.queued
    }

    fn counters(&self) -> Vec<(Counter, f64)> {
        vec![
            (
                Counter::VirtualTimeSectors,
                self.v as f64 / (1u64 << VT_SHIFT) as f64,
            ),
            (
                Counter::InServiceFlow,
                self.in_service.map_or(-1.0, |i| i as f64),
            ),
            (Counter::MaxBudgetSectors, self.max_budget as f64),
            (Counter::Inflight, self.inflight as f64),
            (Counter::IdleTimers, self.idle_timers as f64),
            (Counter::ExpiredTooIdle, self.expiries[0] as f64),
            (Counter::ExpiredBudgetTimeout, self.expiries[1] as f64),
            (Counter::ExpiredBudgetExhausted, self.expiries[2] as f64),
            (Counter::ExpiredNoMoreRequests, self.expiries[3] as f64),
            (Counter::ExpiredPreempted, self.expiries[4] as f64),
        ]
    }
}
