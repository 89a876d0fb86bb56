//! `mqfq`: Multi-Queue Fair Queueing (Hedayati, Shen, Scott and Marty, ATC '19), the
//! software fair-queueing baseline of the D2FQ paper (§2.1, §4.1).
//!
//! MQFQ keeps one fair queue per core (hardware queue) so cores dispatch in parallel,
//! and bounds the unfairness this allows with a throttle against a global virtual time.
//!
//! # Formulas (MQFQ's names)
//! * At arrival of request `r` of flow `f` (weight `w_f`, length `l`):
//!   `S(r) = max(F_f, V)`, `F(r) = S(r) + l / w_f`, `F_f ← F(r)`.
//! * `V`, the virtual time, is the minimum start tag over the requests at the heads of
//!   the backlogged queues (MQFQ tracks it with a Mindicator; here a scan over the
//!   per-core queues, which is exact). It never decreases: arrivals are tagged ≥ V and a
//!   queue's head only moves to larger tags. With nothing queued V keeps its value.
//! * Dispatch: at most `D` requests in flight. The per-core queues take turns (round
//!   robin); a queue may dispatch its smallest-tagged request only if `S ≤ V + T`
//!   (otherwise it is throttled: all its requests are more than T ahead).
//!
//! Tags are integers in units of `bytes · 840 / w` (840 = lcm(1..8)); `T` is given in
//! bytes of weight-1 service and scaled the same way.
//!
//! # Invariants
//! * Never more than `D` in flight.
//! * Never dispatches a request with `S > V + T`; and since the queue holding the
//!   request with `S = V` is never throttled, MQFQ dispatches whenever it has requests
//!   and fewer than `D` in flight (no flow within the bound waits behind a throttle).
//! * V and every flow's finish tag never decrease.
//!
//! # Tunables (`mqfq:key=value,...`)
//! | key | meaning | default |
//! |---|---|---|
//! | `depth` | D, requests in flight at most | 64 |
//! | `t` | T, throttle window in bytes of weight-1 service | 46080 (45 KiB) |

use std::collections::BTreeMap;

use super::Counter;
use super::{Completion, DeviceView, Dispatch, ParamError, Params, Policy};
use crate::types::{Flow, Nanos, Request};

/// Tag units per byte at weight 1.
const TAG_SCALE: u64 = 840;

/// Multi-queue fair queueing.
#[derive(Debug)]
pub struct Mqfq {
    depth: u32,
    /// T in tag units.
    t: u64,
    /// Per hardware queue: queued requests by (start tag, arrival sequence).
    queues: Vec<BTreeMap<(u64, u64), Request>>,
    /// The queue whose turn is next.
    cursor: usize,
    queued: usize,
    seq: u64,
    /// V.
    v: u64,
    weight: Vec<u32>,
    finish: Vec<u64>,
    inflight: u32,
    throttled: u64,
    /// (S, V) of the last dispatch.
    last: Option<(u64, u64)>,
}

impl Mqfq {
    /// MQFQ with depth `depth` (≥ 1) and throttle `t_bytes` (bytes of weight-1 service).
    pub fn new(depth: u32, t_bytes: u64) -> Self {
        assert!(depth >= 1, "depth must be at least 1");
        Mqfq {
            depth,
            t: t_bytes * TAG_SCALE,
            queues: Vec::new(),
            cursor: 0,
            queued: 0,
            seq: 0,
            v: 0,
            weight: Vec::new(),
            finish: Vec::new(),
            inflight: 0,
            throttled: 0,
            last: None,
        }
    }

    /// Build from `mqfq:depth=N,t=BYTES`. `t=0` is strict MQFQ (a flow may run ahead of
    /// V by nothing), a legitimate setting, not a clamp.
    pub fn from_params(p: &mut Params) -> Result<Self, ParamError> {
        let depth = p.take_u64_in("depth", 64, 1, 65536)? as u32;
        let t = p.take_u64_in("t", 45 * 1024, 0, 1 << 40)?;
        Ok(Mqfq::new(depth, t))
    }

    /// The virtual time V.
    pub fn virtual_time(&self) -> u64 {
        self.v
    }

    /// T in tag units.
    pub fn throttle(&self) -> u64 {
        self.t
    }

    /// The start tag S of the last dispatched request and V at that moment.
    pub fn last_dispatch(&self) -> Option<(u64, u64)> {
        self.last
    }

    /// Requests dispatched and not completed.
    pub fn inflight(&self) -> u32 {
        self.inflight
    }

    /// The smallest start tag queued, if any (V when something is queued).
    fn min_head(&self) -> Option<u64> {
        self.queues
            .iter()
            .filter_map(|q| q.keys().next().map(|&(s, _)| s))
            .min()
    }

    fn ensure_flow(&mut self, i: usize) {
        if i >= self.weight.len() {
            self.weight.resize(i + 1, 1);
            self.finish.resize(i + 1, 0);
        }
    }
}

impl Policy for Mqfq {
    fn name(&self) -> &'static str {
        "mqfq"
    }

    fn add_flow(&mut self, flow: &Flow) {
        self.ensure_flow(flow.id.index());
        self.weight[flow.id.index()] = flow.weight.max(1);
    }

    // ---- arrival: tag it and put it in its core's queue.
    fn enqueue(&mut self, _now_ns: Nanos, req: Request) {
        let i = req.flow.index();
        self.ensure_flow(i);
        let s = self.finish[i].max(self.v);
        let len = req.len.max(1) as u128; // a flush still takes a turn
        self.finish[i] = s + (len * TAG_SCALE as u128 / self.weight[i] as u128) as u64;
        let q = req.hwq as usize;
        if q >= self.queues.len() {
            self.queues.resize_with(q + 1, BTreeMap::new);
        }
        self.queues[q].insert((s, self.seq), req);
        self.seq += 1;
        self.queued += 1;
    }

    // ---- dispatch: per-core queues in turn, throttled beyond V + T, at most D.
    fn dispatch(&mut self, _now_ns: Nanos, _view: &DeviceView) -> Option<Dispatch> {
        if self.inflight >= self.depth {
            return None;
        }
        let v = self.min_head()?;
        debug_assert!(v >= self.v, "V went back from {} to {v}", self.v);
        self.v = v;
        let n = self.queues.len();
        for k in 0..n {
            let qi = (self.cursor + k) % n;
            let Some(&(s, _)) = self.queues[qi].keys().next() else {
                continue;
            };
            if s > v.saturating_add(self.t) {
                self.throttled += 1;
                continue;
            }
            let (_, req) = self.queues[qi].pop_first().expect("peeked");
            self.cursor = (qi + 1) % n;
            self.queued -= 1;
            self.inflight += 1;
            self.last = Some((s, v));
            return Some(Dispatch::medium(req));
        }
        unreachable!("the queue holding V is never throttled")
    }

    fn complete(&mut self, _now_ns: Nanos, _done: &Completion) {
        self.inflight = self.inflight.saturating_sub(1);
    }

    fn queued(&self) -> usize {
        self.queued
    }

    fn counters(&self) -> Vec<(Counter, f64)> {
        vec![
            (Counter::VirtualTime, self.v as f64),
            (Counter::Inflight, self.inflight as f64),
            (Counter::ThrottledTurns, self.throttled as f64),
        ]
    }
}
