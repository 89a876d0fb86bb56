//! The event queue: a binary heap ordered by (time, sequence number), so events at the
//! same virtual time fire in the order they were scheduled — the tie-break that makes
//! runs byte-identical.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use sluice_core::Nanos;

/// What an event does when it fires.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Event {
    /// A thread may try to issue (its start, the end of a think time, or its pacer slot).
    ThreadWake(u32),
    /// A job's time-based end: its threads stop issuing.
    JobEnd(u32),
    /// The policy's timer. Stale entries (the policy asked for another time since) are
    /// recognised by comparing with the policy's current request.
    PolicyTimer,
    /// Sample the policy's counters (once per bandwidth interval).
    SampleCounters,
    /// A job's steady-state check (fio's `steadystate`, every check interval).
    SteadyCheck(u32),
    /// The page cache's timer: a buffered writer's pause at its dirty limit ends. Stale
    /// entries are recognised as the policy timer's are.
    FrontTimer,
    /// A buffered job I/O's system call ends (its copy done): its thread has it.
    BufferedDone(u32),
}

/// Min-heap of events.
#[derive(Debug, Default)]
pub struct EventQueue {
    heap: BinaryHeap<Reverse<(Nanos, u64, Event)>>,
    seq: u64,
}

impl EventQueue {
    /// An empty queue.
    pub fn new() -> Self {
        EventQueue {
            heap: BinaryHeap::with_capacity(1024),
            seq: 0,
        }
    }

    /// Schedule `ev` at `at_ns`.
    pub fn push(&mut self, at_ns: Nanos, ev: Event) {
        self.seq += 1;
        self.heap.push(Reverse((at_ns, self.seq, ev)));
    }

    /// Keep one `ev` armed for a timer that asks for `want` (a policy's, the page
    /// cache's): schedule it at `max(want, now)` unless `armed` already holds that
    /// time. The handler fires only when `armed` still names its time, so entries left
    /// by an earlier request are stale and ignored.
    pub fn arm(&mut self, armed: &mut Option<Nanos>, want: Option<Nanos>, now: Nanos, ev: Event) {
        if let Some(t) = want.filter(|&t| *armed != Some(t)) {
            let at = t.max(now);
            *armed = Some(at);
            self.push(at, ev);
        }
    }

    /// Time of the earliest event.
    pub fn peek_ns(&self) -> Option<Nanos> {
        self.heap.peek().map(|Reverse((t, _, _))| *t)
    }

    /// Remove and return the earliest event.
    pub fn pop(&mut self) -> Option<(Nanos, Event)> {
        self.heap.pop().map(|Reverse((t, _, e))| (t, e))
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether no events are pending.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_then_fifo_order() {
        let mut q = EventQueue::new();
        q.push(20, Event::ThreadWake(1));
        q.push(10, Event::ThreadWake(2));
        q.push(10, Event::ThreadWake(3));
        q.push(10, Event::PolicyTimer);
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            vec![
                (10, Event::ThreadWake(2)),
                (10, Event::ThreadWake(3)),
                (10, Event::PolicyTimer),
                (20, Event::ThreadWake(1)),
            ]
        );
    }
}
