//! `cfq`: a CFQ-style per-task timeslice scheduler (Linux CFQ as FIOS, FAST '12, §5–6,
//! ran it on Flash), one of FIOS's baselines.
//!
//! # Invariant
//! One task (flow) is *active* at a time and only its requests are serviced — FIOS
//! (§3, §4.1) names this CFQ's suppression of parallelism: a new task is activated only
//! once the previous one's requests have all completed. At most `quantum` requests of
//! the active task are in flight. Its slice starts at its first dispatch and lasts
//! `slice = base + base/5 · (4 − prio)` (CFQ's `cfq_prio_slice`, base = the sync slice,
//! 100 ms), where `prio = 8 − weight` (best-effort priority 0..7, sluice's weight
//! mapping). The active task loses the device when its slice is used up, or — because
//! CFQ does not idle on non-rotational devices (`slice_idle` off) — as soon as it has
//! nothing queued and nothing in flight (it is not waited for to issue again); the rest
//! of its slice is forfeited. The next task is chosen round robin among those with
//! requests.
//!
//! # Tunables
//! | key | default | meaning |
//! |---|---|---|
//! | `slice_ms` | 100 | base slice (CFQ's `slice_sync`), ms |
//! | `quantum` | 8 | requests of the active task in flight at most (CFQ's `quantum`) |

use std::collections::VecDeque;

use super::Counter;
use super::{Completion, DeviceView, Dispatch, ParamError, Params, Policy};
use crate::types::{Flow, Nanos, Request};

/// Default base slice, ns (CFQ's `slice_sync`, 100 ms).
pub const DEFAULT_SLICE_NS: Nanos = 100_000_000;

#[derive(Clone, Debug, Default)]
struct Task {
    fifo: VecDeque<Request>,
    /// Priority 0 (highest) .. 7.
    prio: u32,
    inflight: u32,
}

/// The CFQ-style policy. See the module documentation.
#[derive(Debug)]
pub struct Cfq {
    base_ns: Nanos,
    quantum: u32,
    tasks: Vec<Task>,
    /// The active task and the end of its slice (`None` until its first dispatch).
    active: Option<(usize, Option<Nanos>)>,
    cursor: usize,
    queued: usize,
    switches: u64,
}

impl Cfq {
    /// CFQ with base slice `base_ns` and at most `quantum` requests of the active task
    /// in flight.
    ///
    /// # Panics
    /// If either is 0.
    pub fn new(base_ns: Nanos, quantum: u32) -> Self {
        assert!(
            base_ns > 0 && quantum > 0,
            "slice and quantum must be positive"
        );
        Cfq {
            base_ns,
            quantum,
            tasks: Vec::new(),
            active: None,
            cursor: 0,
            queued: 0,
            switches: 0,
        }
    }

    /// Build from `cfq:slice_ms=N,quantum=N`.
    pub fn from_params(p: &mut Params) -> Result<Self, ParamError> {
        let ms = p.take_u64_in("slice_ms", DEFAULT_SLICE_NS / 1_000_000, 1, 3_600_000)?;
        let quantum = p.take_u64_in("quantum", 8, 1, 1 << 16)? as u32;
        Ok(Cfq::new(ms * 1_000_000, quantum))
    }

    /// The slice of a task of best-effort priority `prio` (0..7):
    /// `base + base/5 · (4 − prio)`.
    pub fn slice_for(&self, prio: u32) -> Nanos {
        let step = self.base_ns / 5;
        (self.base_ns as i64 + step as i64 * (4 - prio.min(7) as i64)) as Nanos
    }

    fn task(&mut self, i: usize) -> &mut Task {
        if i >= self.tasks.len() {
            self.tasks.resize_with(i + 1, || Task {
                prio: 4,
                ..Task::default()
            });
        }
        &mut self.tasks[i]
    }
}

impl Policy for Cfq {
    fn name(&self) -> &'static str {
        "cfq"
    }

    fn add_flow(&mut self, flow: &Flow) {
        // Best-effort weight = 8 − prio, so prio = 8 − weight (clamped to 0..7).
        self.task(flow.id.index()).prio = 8u32.saturating_sub(flow.weight).min(7);
    }

    fn enqueue(&mut self, _now_ns: Nanos, req: Request) {
        self.task(req.flow.index()).fifo.push_back(req);
        self.queued += 1;
    }

    fn dispatch(&mut self, now_ns: Nanos, _view: &DeviceView) -> Option<Dispatch> {
        // Expire the active task: slice used up, or nothing queued (no idling on
        // non-rotational devices).
        if let Some((i, end)) = self.active {
            let t = &self.tasks[i];
            if end.is_some_and(|e| e <= now_ns) || (t.fifo.is_empty() && t.inflight == 0) {
                self.active = None;
            }
        }
        if self.active.is_none() {
            // One task serviced at a time: the next waits for the last one's requests.
            if self.tasks.iter().any(|t| t.inflight > 0) {
                return None;
            }
            let n = self.tasks.len();
            let i = (0..n)
                .map(|k| (self.cursor + k) % n)
                .find(|&i| !self.tasks[i].fifo.is_empty())?;
            self.cursor = (i + 1) % n;
            self.active = Some((i, None));
            self.switches += 1;
        }
        let (i, end) = self.active.expect("set above");
        if self.tasks[i].inflight >= self.quantum || self.tasks[i].fifo.is_empty() {
            return None;
        }
        if end.is_none() {
            let slice = self.slice_for(self.tasks[i].prio);
            self.active = Some((i, Some(now_ns + slice)));
        }
        let t = &mut self.tasks[i];
        let req = t.fifo.pop_front().expect("checked above");
        t.inflight += 1;
        self.queued -= 1;
        Some(Dispatch::medium(req))
    }

    fn complete(&mut self, _now_ns: Nanos, done: &Completion) {
        let i = done.req.flow.index();
        let t = self.task(i);
        t.inflight = t.inflight.saturating_sub(1);
        // CFQ decides at completion (`cfq_completed_request`): an active sync queue
        // found empty is not idled on (non-rotational), so it expires now — before
        // its task, woken by this completion, can issue again.
        let empty = t.fifo.is_empty() && t.inflight == 0;
        if empty && matches!(self.active, Some((a, _)) if a == i) {
            self.active = None;
        }
    }

    fn next_timer_ns(&self) -> Option<Nanos> {
        // A slice end matters only when others wait.
        match self.active {
            Some((_, Some(end))) if self.queued > 0 => Some(end),
            _ => None,
        }
    }

    fn timer(&mut self, _now_ns: Nanos) {}

    fn queued(&self) -> usize {
        self.queued
    }

    fn counters(&self) -> Vec<(Counter, f64)> {
        vec![(Counter::Switches, self.switches as f64)]
    }
}
