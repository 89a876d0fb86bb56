//! `sfqd`: start-time fair queueing with depth D, SFQ(D) (Jin, Chase and Kaur,
//! SIGMETRICS '04), the proportional-share baseline of the FIOS and D2FQ papers.
//!
//! # Formulas
//! * At arrival of request `r` of flow `f` with weight `w_f` and cost `c(r)`:
//!   `S(r) = max(v, F_f)`, `F(r) = S(r) + c(r) / w_f`, and `F_f ← F(r)`.
//! * `v` (virtual time) is the start tag of the last dispatched request.
//! * Dispatch: while fewer than `D` requests are outstanding, the queued request with
//!   the smallest start tag goes (ties in arrival order).
//! * Cost `c(r)`: `size` = bytes; `service` = the moving average of the device service
//!   time (dispatch → completion) of the request's type, read or write
//!   (`avg ← avg + (t − avg)/8`), as in FIOS's SFQ(D) baseline. Before any completion of
//!   a type its average is the other type's, or 10 µs when neither is known.
//!
//! Tags are integers in units of `cost · 840 / w` (840 = lcm(1..8): weights 1–8 exact).
//!
//! # Invariants
//! * At most `D` dispatched and not completed.
//! * `v` never decreases; each flow's tags are non-decreasing in arrival order, so a
//!   flow's requests leave in order and a backlogged flow is never starved: every
//!   queued request has a finite start tag and `v` only moves to queued tags.
//!
//! # Tunables (`sfqd:key=value,...`)
//! | key | meaning | default |
//! |---|---|---|
//! | `depth` | D, requests outstanding at most | 32 |
//! | `cost` | `size` or `service` | `size` |

use std::collections::BTreeMap;

use super::Counter;
use super::{Completion, DeviceView, Dispatch, ParamError, Params, Policy};
use crate::types::{Flow, Nanos, Op, Request};

/// Tag units per unit of cost at weight 1.
const TAG_SCALE: u64 = 840;
/// The cost of a request type before any of its kind completed, ns.
const INITIAL_SERVICE_NS: u64 = 10_000;
/// Moving-average gain 1/2^3 (service-time cost).
const EWMA_SHIFT: u32 = 3;

/// How SFQ(D) prices a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SfqCost {
    /// Its length in bytes.
    Size,
    /// The moving average of the device service time of its type (read or write), ns.
    Service,
}

/// Start-time fair queueing with depth D.
#[derive(Debug)]
pub struct Sfqd {
    depth: u32,
    cost: SfqCost,
    /// Queued requests by (start tag, arrival sequence).
    queue: BTreeMap<(u64, u64), Request>,
    seq: u64,
    /// v: start tag of the last dispatched request.
    v: u64,
    /// Per flow: weight and the finish tag of its last request.
    weight: Vec<u32>,
    finish: Vec<u64>,
    /// Dispatched and not completed.
    inflight: u32,
    /// Moving averages of device service time (read, write), ns; `None` until seen.
    service_ns: [Option<u64>; 2],
}

impl Sfqd {
    /// SFQ(D) with depth `depth` (≥ 1) and the given cost.
    pub fn new(depth: u32, cost: SfqCost) -> Self {
        assert!(depth >= 1, "depth must be at least 1");
        Sfqd {
            depth,
            cost,
            queue: BTreeMap::new(),
            seq: 0,
            v: 0,
            weight: Vec::new(),
            finish: Vec::new(),
            inflight: 0,
            service_ns: [None; 2],
        }
    }

    /// Build from `sfqd:depth=N,cost=size|service`.
    pub fn from_params(p: &mut Params) -> Result<Self, ParamError> {
        let depth = p.take_u64_in("depth", 32, 1, 65536)? as u32;
        let cost = match p
            .take("cost", String::from("size"), "size or service")?
            .as_str()
        {
            "size" => SfqCost::Size,
            "service" => SfqCost::Service,
            other => {
                return Err(ParamError::BadValue {
                    key: "cost".into(),
                    value: other.to_string(),
                    expected: "size or service",
                })
            }
        };
        Ok(Sfqd::new(depth, cost))
    }

    /// The virtual time v.
    pub fn virtual_time(&self) -> u64 {
        self.v
    }

    /// Requests dispatched and not completed.
    pub fn inflight(&self) -> u32 {
        self.inflight
    }

    /// The smallest start tag queued, if any.
    pub fn min_queued_start(&self) -> Option<u64> {
        self.queue.keys().next().map(|&(s, _)| s)
    }

    fn ensure_flow(&mut self, i: usize) {
        if i >= self.weight.len() {
            self.weight.resize(i + 1, 1);
            self.finish.resize(i + 1, 0);
        }
    }

    fn cost_of(&self, req: &Request) -> u64 {
        match self.cost {
            SfqCost::Size => req.len as u64,
            SfqCost::Service => {
                let (mine, other) = if req.op.is_write_dir() {
                    (1, 0)
                } else {
                    (0, 1)
                };
                self.service_ns[mine]
                    .or(self.service_ns[other])
                    .unwrap_or(INITIAL_SERVICE_NS)
            }
        }
    }
}

impl Policy for Sfqd {
    fn name(&self) -> &'static str {
        "sfqd"
    }

    fn add_flow(&mut self, flow: &Flow) {
        self.ensure_flow(flow.id.index());
        self.weight[flow.id.index()] = flow.weight.max(1);
    }

    // ---- arrival: tag it.
    fn enqueue(&mut self, _now_ns: Nanos, req: Request) {
        let i = req.flow.index();
        self.ensure_flow(i);
        let cost = self.cost_of(&req);
        let s = self.v.max(self.finish[i]);
        let f = s + (cost as u128 * TAG_SCALE as u128 / self.weight[i] as u128) as u64;
        self.finish[i] = f;
        self.queue.insert((s, self.seq), req);
        self.seq += 1;
    }

    // ---- dispatch: smallest start tag, at most D outstanding.
    fn dispatch(&mut self, _now_ns: Nanos, _view: &DeviceView) -> Option<Dispatch> {
        if self.inflight >= self.depth {
            return None;
        }
        let ((s, _), req) = self.queue.pop_first()?;
        // Every queued tag is ≥ v: arrivals are tagged max(v, F_f) ≥ v, and v only
        // moves to the smallest queued tag. So v never goes back.
        debug_assert!(s >= self.v, "queued start tag {s} below v {}", self.v);
        self.v = s;
        self.inflight += 1;
        Some(Dispatch::medium(req))
    }

    // ---- completion: free a slot, learn the service time.
    fn complete(&mut self, _now_ns: Nanos, done: &Completion) {
        self.inflight = self.inflight.saturating_sub(1);
        if done.req.op == Op::Flush {
            return;
        }
        // Trims are timed with writes (the write-direction service estimate).
        let k = usize::from(done.req.op.is_write_dir());
        let t = done.device_ns();
        self.service_ns[k] = Some(match self.service_ns[k] {
            None => t,
            Some(avg) => {
                // avg + (t − avg)/8 in integers, both directions.
                if t >= avg {
                    avg + ((t - avg) >> EWMA_SHIFT)
                } else {
                    avg - ((avg - t) >> EWMA_SHIFT)
                }
            }
        });
    }

    fn queued(&self) -> usize {
        self.queue.len()
    }

    fn counters(&self) -> Vec<(Counter, f64)> {
        vec![
            (Counter::VirtualTime, self.v as f64),
            (Counter::Inflight, self.inflight as f64),
            (
                Counter::ReadServiceNs,
                self.service_ns[0].unwrap_or(0) as f64,
            ),
            (
                Counter::WriteServiceNs,
                self.service_ns[1].unwrap_or(0) as f64,
            ),
        ]
    }
}
