//! `quanta`: an Argon-like quanta scheduler (Wachs et al., FAST '07), the baseline FIOS
//! (FAST '12, §5) compares with.
//!
//! # Invariant
//! Tasks (flows) take exclusive quanta in round-robin order. Within a quantum only the
//! owner's requests are issued (as many as it has: the owner's own parallelism is
//! kept). A quantum begins only when the next task in turn has a request pending and
//! the previous owner's requests have all completed (exclusive access); once begun it
//! lasts its whole length `quantum`, however few requests the owner issues — the device
//! idles through the owner's think time ("aggressive anticipation", §3).
//!
//! # Tunables
//! | key | default | meaning |
//! |---|---|---|
//! | `quantum_ms` | 100 | quantum length, ms (FIOS used CFQ's 100 ms slice for all) |

use std::collections::VecDeque;

use super::Counter;
use super::{DeviceView, Dispatch, ParamError, Params, Policy};
use crate::types::{Flow, Nanos, Request};

/// Default quantum, ns.
pub const DEFAULT_QUANTUM_NS: Nanos = 100_000_000;

/// The quanta policy. See the module documentation.
#[derive(Debug)]
pub struct Quanta {
    quantum_ns: Nanos,
    queues: Vec<VecDeque<Request>>,
    /// The owner of the current quantum and when it ends.
    owner: Option<(usize, Nanos)>,
    /// The task whose turn comes next.
    cursor: usize,
    /// Requests in flight (all of the previous or current owner).
    inflight: u32,
    queued: usize,
    quanta: u64,
}

impl Quanta {
    /// Quanta of `quantum_ns` each.
    ///
    /// # Panics
    /// If `quantum_ns` is 0.
    pub fn new(quantum_ns: Nanos) -> Self {
        assert!(quantum_ns > 0, "quantum must be positive");
        Quanta {
            quantum_ns,
            queues: Vec::new(),
            owner: None,
            cursor: 0,
            inflight: 0,
            queued: 0,
            quanta: 0,
        }
    }

    /// Build from `quanta:quantum_ms=N`.
    pub fn from_params(p: &mut Params) -> Result<Self, ParamError> {
        let ms = p.take_u64_in("quantum_ms", DEFAULT_QUANTUM_NS / 1_000_000, 1, 3_600_000)?;
        Ok(Quanta::new(ms * 1_000_000))
    }

    /// The current quantum's owner (flow index) and its end, if a quantum runs.
    pub fn owner(&self) -> Option<(usize, Nanos)> {
        self.owner
    }

    fn queue(&mut self, i: usize) -> &mut VecDeque<Request> {
        if i >= self.queues.len() {
            self.queues.resize_with(i + 1, VecDeque::new);
        }
        &mut self.queues[i]
    }
}

impl Policy for Quanta {
    fn name(&self) -> &'static str {
        "quanta"
    }

    fn add_flow(&mut self, flow: &Flow) {
        self.queue(flow.id.index());
    }

    fn enqueue(&mut self, _now_ns: Nanos, req: Request) {
        self.queue(req.flow.index()).push_back(req);
        self.queued += 1;
    }

    fn dispatch(&mut self, now_ns: Nanos, _view: &DeviceView) -> Option<Dispatch> {
        if matches!(self.owner, Some((_, end)) if end <= now_ns) {
            self.owner = None; // the quantum is over
        }
        if self.owner.is_none() {
            // Exclusive access: the next quantum waits for the last one's requests.
            if self.inflight > 0 || self.queued == 0 {
                return None;
            }
            let n = self.queues.len();
            let i = (0..n)
                .map(|k| (self.cursor + k) % n)
                .find(|&i| !self.queues[i].is_empty())?;
            self.cursor = (i + 1) % n;
            self.owner = Some((i, now_ns + self.quantum_ns));
            self.quanta += 1;
        }
        let (i, _) = self.owner.expect("set above");
        let req = self.queues[i].pop_front()?; // the owner thinks: the device idles
        self.queued -= 1;
        self.inflight += 1;
        Some(Dispatch::medium(req))
    }

    fn complete(&mut self, _now_ns: Nanos, _done: &super::Completion) {
        self.inflight -= 1;
    }

    fn next_timer_ns(&self) -> Option<Nanos> {
        self.owner.map(|(_, end)| end)
    }

    fn timer(&mut self, now_ns: Nanos) {
        if matches!(self.owner, Some((_, end)) if end <= now_ns) {
            self.owner = None;
        }
    }

    fn queued(&self) -> usize {
        self.queued
    }

    fn counters(&self) -> Vec<(Counter, f64)> {
        vec![(Counter::Quanta, self.quanta as f64)]
    }
}
