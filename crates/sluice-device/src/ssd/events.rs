//! The device's internal events in (time, creation) order: a deque kept sorted.
//!
//! A new event is almost always due after nearly every pending one (a command's
//! completion comes a service time after its fetch, and fetches follow time), so it is
//! placed by a short walk from the back, and the earliest leaves from the front: no
//! comparisons beyond the few the walk makes, where a binary heap makes two per level
//! on every pop. An event due early (a fast command among slow ones) falls back to a
//! binary search; the insertion then moves at most half the pending events (bounded by
//! the controller's slots and the units' programs).

use std::collections::VecDeque;

use super::state::Event;

/// How far the walk from the back goes before it turns to a binary search.
const WALK: usize = 8;

/// Pending events, sorted by (time, seq). Events are pushed with increasing `seq`.
#[derive(Debug, Default)]
pub(super) struct EventList {
    q: VecDeque<Event>,
}

impl EventList {
    pub(super) fn with_capacity(n: usize) -> EventList {
        EventList {
            q: VecDeque::with_capacity(n),
        }
    }

    /// Add `ev`, whose `seq` is above every pending event's: it goes after every event
    /// due at or before its time.
    #[inline]
    pub(super) fn push(&mut self, ev: Event) {
        debug_assert!(self.q.iter().all(|e| e.seq < ev.seq));
        let n = self.q.len();
        let mut i = n;
        while i > 0 && n - i < WALK && self.q[i - 1].time > ev.time {
            i -= 1;
        }
        if i > 0 && n - i == WALK && self.q[i - 1].time > ev.time {
            i = self.q.partition_point(|e| e.time <= ev.time);
        }
        if i == n {
            self.q.push_back(ev);
        } else {
            self.q.insert(i, ev);
        }
    }

    /// The earliest event.
    #[inline]
    pub(super) fn peek(&self) -> Option<&Event> {
        self.q.front()
    }

    /// Remove the earliest event.
    #[inline]
    pub(super) fn pop(&mut self) -> Option<Event> {
        self.q.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use sluice_core::Nanos;

    fn ev(time: Nanos, seq: u64) -> Event {
        Event {
            time,
            seq,
            id: seq as u32,
            bytes: 0,
        }
    }

    proptest! {
        /// Any interleaving of pushes and pops gives the order a binary heap of
        /// (time, seq) gives.
        #[test]
        fn same_order_as_a_heap(ops in proptest::collection::vec((0u64..60, any::<bool>()), 0..300)) {
            use std::cmp::Reverse;
            let mut list = EventList::default();
            let mut heap = std::collections::BinaryHeap::new();
            let mut now = 0;
            for (seq, (dt, pop)) in ops.into_iter().enumerate() {
                if pop {
                    let a = list.pop();
                    prop_assert_eq!(a, heap.pop().map(|Reverse(e)| e));
                    if let Some(e) = a {
                        now = e.time;
                    }
                } else {
                    let e = ev(now + dt, seq as u64);
                    list.push(e);
                    heap.push(Reverse(e));
                }
                prop_assert_eq!(list.peek().copied(), heap.peek().map(|Reverse(e)| *e));
            }
        }
    }

    #[test]
    fn an_early_event_among_many_late_ones_goes_in_front() {
        let mut list = EventList::default();
        for s in 0..50 {
            list.push(ev(1000 + s, s));
        }
        list.push(ev(5, 50));
        list.push(ev(1000, 51));
        assert_eq!(list.pop(), Some(ev(5, 50)));
        assert_eq!(list.pop(), Some(ev(1000, 0)));
        assert_eq!(list.pop(), Some(ev(1000, 51)));
        assert_eq!(list.pop(), Some(ev(1001, 1)));
    }
}
