//! The software weighted-round-robin arbiter between the policy and the ring.
//!
//! A policy such as D2FQ steers each dispatch to an NVMe queue class (urgent, high,
//! medium, low) and relies on the controller's weighted round robin (NVMe base spec,
//! "Weighted Round Robin with Urgent Priority Class Arbitration") to serve the classes
//! in proportion. Files and most devices offer no such arbitration, so the engine
//! stages the dispatches per class and feeds the ring itself:
//!
//! * at most `cap` commands are in the ring (submitted and not reaped) — the stand-in
//!   for the controller's internal command slots;
//! * when the ring has room, **urgent** commands go first (strict priority); then the
//!   **high/medium/low** classes by credits: each class starts a round with its weight
//!   (HPW/MPW/LPW) in credits, spends one per command, a class with no credit or no
//!   command is skipped, and a new round starts (credits refilled) when no backlogged
//!   class has credit left. Over a round the classes get commands in the ratio of their
//!   weights, as NVMe WRR gives (without its arbitration-burst detail).
//!
//! Default weights are the D2FQ authors' base-6 values, H = 252, M = 126, L = 42
//! (L = 256/b, M = L·⌈√b⌉, H = L·b with b = 6).
//!
//! The worker takes a fast path around the arbiter: a dispatch goes straight to the
//! ring when nothing is staged and the ring is below its cap, so a policy whose
//! dispatches are all `Medium` (or that never fills the cap) pays nothing for it.

use std::collections::VecDeque;

use sluice_core::QueueClass;

/// The D2FQ authors' default weights (high, medium, low) for base b = 6.
pub const D2FQ_WEIGHTS: [u32; 3] = [252, 126, 42];

/// Per-class FIFOs of staged command tags and the WRR state. Holds at most the
/// capacity given at construction; never allocates afterwards.
#[derive(Debug)]
pub(crate) struct Arbiter {
    queues: [VecDeque<u32>; 4],
    /// Weights of high, medium, low.
    weights: [u32; 3],
    /// Credits left in this round, high, medium, low.
    credits: [u32; 3],
    staged: u32,
}

impl Arbiter {
    /// An arbiter holding up to `capacity` staged commands per class.
    pub(crate) fn new(capacity: usize, weights: [u32; 3]) -> Arbiter {
        let weights = weights.map(|w| w.max(1));
        Arbiter {
            queues: std::array::from_fn(|_| VecDeque::with_capacity(capacity)),
            weights,
            credits: weights,
            staged: 0,
        }
    }

    /// Commands staged.
    #[inline]
    pub(crate) fn staged(&self) -> u32 {
        self.staged
    }

    /// Use `weights` (high, medium, low) from the next round on (a policy's dynamic
    /// H/L ratio); credits left in this round are capped at the new weights.
    pub(crate) fn set_weights(&mut self, weights: [u32; 3]) {
        self.weights = weights.map(|w| w.max(1));
        for (c, w) in self.credits.iter_mut().zip(self.weights) {
            *c = (*c).min(w);
        }
    }

    /// Stage command `tag` in `class`.
    #[inline]
    pub(crate) fn push(&mut self, tag: u32, class: QueueClass) {
        self.queues[class.index()].push_back(tag);
        self.staged += 1;
    }

    /// The next command for the ring: urgent first, then by weighted round robin.
    pub(crate) fn pop(&mut self) -> Option<(u32, QueueClass)> {
        if self.staged == 0 {
            return None;
        }
        if let Some(t) = self.queues[0].pop_front() {
            self.staged -= 1;
            return Some((t, QueueClass::Urgent));
        }
        for _round in 0..2 {
            for c in 0..3 {
                if self.credits[c] > 0 {
                    if let Some(t) = self.queues[c + 1].pop_front() {
                        self.credits[c] -= 1;
                        self.staged -= 1;
                        return Some((t, QueueClass::ALL[c + 1]));
                    }
                }
            }
            // No backlogged class has credit: a new round.
            self.credits = self.weights;
        }
        unreachable!("staged > 0 but no class has a command")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urgent_is_strictly_first() {
        let mut a = Arbiter::new(8, D2FQ_WEIGHTS);
        a.push(1, QueueClass::High);
        a.push(2, QueueClass::Urgent);
        a.push(3, QueueClass::Low);
        a.push(4, QueueClass::Urgent);
        let order: Vec<u32> = std::iter::from_fn(|| a.pop().map(|(t, _)| t)).collect();
        assert_eq!(order, vec![2, 4, 1, 3]);
        assert_eq!(a.staged(), 0);
    }

    #[test]
    fn backlogged_classes_share_by_weight() {
        let mut a = Arbiter::new(4096, [6, 3, 1]);
        let mut n = 0;
        for c in [QueueClass::High, QueueClass::Medium, QueueClass::Low] {
            for _ in 0..1000 {
                a.push(n, c);
                n += 1;
            }
        }
        let mut got = [0u32; 4];
        for _ in 0..1000 {
            let (_, c) = a.pop().unwrap();
            got[c.index()] += 1;
        }
        assert_eq!(got, [0, 600, 300, 100]);
    }

    #[test]
    fn an_idle_class_gives_way() {
        let mut a = Arbiter::new(64, D2FQ_WEIGHTS);
        for t in 0..10 {
            a.push(t, QueueClass::Low);
        }
        let order: Vec<u32> = std::iter::from_fn(|| a.pop().map(|(t, _)| t)).collect();
        assert_eq!(order, (0..10).collect::<Vec<_>>());
    }
}
