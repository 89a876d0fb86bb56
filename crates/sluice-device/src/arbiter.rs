//! Submission-queue arbitration: which non-empty SQ the controller fetches from next
//! (NVMe base specification, "Arbitration Mechanisms": round robin, and weighted round
//! robin with urgent priority class, each with its arbitration burst).
//!
//! One implementation for both worlds: the simulated controller ([`crate::NvmeSsd`])
//! picks its next fetch with it, and the io_uring layer's software arbiter
//! (`sluice_uring::RingPort`, in front of rings that have no NVMe arbitration of their
//! own) picks the next staged command with it — so a policy's queue classes mean the
//! same on a simulated device and on a file.
//!
//! * **Queues** are numbered `qid = core·4 + queue class` ([`sq_id`]): one submission
//!   queue per (host core, class), as a driver that gives each core a queue per class.
//! * **Round robin** (`rr`): one turn over every non-empty queue, classes ignored.
//! * **Weighted round robin** (`wrr`): the urgent class first, strictly; then the
//!   high, medium and low classes in turn, each taking up to its weight (HPW, MPW,
//!   LPW: commands per round) while it has commands; after the low class the credits
//!   are refilled and a new round starts at high.
//! * **Burst**: within a class (or over all queues, `rr`) the queues take turns, and
//!   the queue holding the turn gives up to `burst` commands before it passes.
//!
//! Non-empty queues are kept in bitmasks, so a pick costs O(queues / 64) word scans in
//! the worst case and O(1) while a queue keeps its turn.

use crate::profile::{Arbitration, ArbitrationKind};
use sluice_core::QueueClass;

/// The submission queue of (`core`, `class`): `core·4 + class`.
#[inline]
pub fn sq_id(core: u16, class: QueueClass) -> u16 {
    core * 4 + class.index() as u16
}

/// Round robin with burst over a set of members (each member is one SQ).
#[derive(Clone, Debug)]
struct RrGroup {
    /// Bit `i` set: member `i`'s SQ is non-empty.
    mask: Vec<u64>,
    members: u32,
    nonempty: u32,
    /// Member holding the turn.
    cur: u32,
    /// Commands taken from `cur` in this turn.
    used: u32,
}

impl RrGroup {
    fn new(members: u32) -> RrGroup {
        RrGroup {
            mask: vec![0; (members as usize).div_ceil(64).max(1)],
            members,
            nonempty: 0,
            cur: 0,
            used: 0,
        }
    }

    #[inline]
    fn is_set(&self, i: u32) -> bool {
        self.mask[(i >> 6) as usize] >> (i & 63) & 1 == 1
    }

    #[inline]
    fn set(&mut self, i: u32) {
        let w = &mut self.mask[(i >> 6) as usize];
        let bit = 1u64 << (i & 63);
        if *w & bit == 0 {
            *w |= bit;
            self.nonempty += 1;
        }
    }

    #[inline]
    fn clear(&mut self, i: u32) {
        let w = &mut self.mask[(i >> 6) as usize];
        let bit = 1u64 << (i & 63);
        if *w & bit != 0 {
            *w &= !bit;
            self.nonempty -= 1;
        }
    }

    /// First set member strictly after `from`, wrapping (may return `from` itself).
    fn next_after(&self, from: u32) -> u32 {
        let start = if from + 1 >= self.members {
            0
        } else {
            from + 1
        };
        let words = self.mask.len();
        let sw = (start >> 6) as usize;
        let w = self.mask[sw] & (!0u64 << (start & 63));
        if w != 0 {
            return (sw as u32) << 6 | w.trailing_zeros();
        }
        // Following words, wrapping; the last one is `sw` again in full (bits below start).
        for k in 1..=words {
            let wi = (sw + k) % words;
            let w = self.mask[wi];
            if w != 0 {
                return (wi as u32) << 6 | w.trailing_zeros();
            }
        }
        unreachable!("next_after on an empty group")
    }

    /// Pick the member to fetch from (the group must be non-empty).
    #[inline]
    fn pick(&mut self, burst: u32) -> u32 {
        debug_assert!(self.nonempty > 0);
        if !(self.used < burst && self.is_set(self.cur)) {
            self.cur = self.next_after(self.cur);
            self.used = 0;
        }
        self.used += 1;
        self.cur
    }
}

/// The arbiter over all submission queues of `cores` host cores (four classes each):
/// mark a queue non-empty when a command lands in an empty one, [`pick`](Self::pick)
/// the queue to take one command from, mark it empty when it ran dry.
#[derive(Clone, Debug)]
pub struct Arbiter {
    kind: ArbitrationKind,
    burst: u32,
    weights: [u32; 4],
    credits: [u32; 4],
    /// Weighted class holding the turn (1 high, 2 medium, 3 low).
    wcur: usize,
    /// RR: one group over all qids. WRR: one group per class, member = core.
    groups: Vec<RrGroup>,
}

impl Arbiter {
    /// An arbiter with settings `arb` over the queues of `cores` cores, all empty.
    pub fn new(arb: &Arbitration, cores: u16) -> Arbiter {
        let cores = cores as u32;
        let groups = match arb.kind {
            ArbitrationKind::Rr => vec![RrGroup::new(cores * 4)],
            ArbitrationKind::Wrr => (0..4).map(|_| RrGroup::new(cores)).collect(),
        };
        let weights = [0, arb.hpw, arb.mpw, arb.lpw];
        Arbiter {
            kind: arb.kind,
            burst: arb.burst.count(),
            weights,
            credits: weights,
            wcur: 1,
            groups,
        }
    }

    /// Take new settings at run time (NVMe Set Features "Arbitration"). With the same
    /// kind the round in progress goes on: weights and burst change, and a class's
    /// remaining credits are capped by its new weight. A change of kind starts afresh
    /// (the caller re-marks the non-empty SQs).
    pub fn reconfigure(&mut self, arb: &Arbitration, cores: u16) {
        if arb.kind != self.kind {
            *self = Arbiter::new(arb, cores);
            return;
        }
        self.burst = arb.burst.count();
        self.weights = [0, arb.hpw, arb.mpw, arb.lpw];
        for c in 1..4 {
            self.credits[c] = self.credits[c].min(self.weights[c]);
        }
    }

    #[inline]
    fn locate(&self, qid: u16) -> (usize, u32) {
        match self.kind {
            ArbitrationKind::Rr => (0, qid as u32),
            ArbitrationKind::Wrr => ((qid & 3) as usize, (qid >> 2) as u32),
        }
    }

    /// The SQ `qid` became non-empty.
    #[inline]
    pub fn mark_nonempty(&mut self, qid: u16) {
        let (g, m) = self.locate(qid);
        self.groups[g].set(m);
    }

    /// The SQ `qid` became empty.
    #[inline]
    pub fn mark_empty(&mut self, qid: u16) {
        let (g, m) = self.locate(qid);
        self.groups[g].clear(m);
    }

    /// Whether any SQ is non-empty.
    #[inline]
    pub fn any(&self) -> bool {
        self.groups.iter().any(|g| g.nonempty > 0)
    }

    /// The next SQ to fetch one command from, or `None` when all are empty.
    pub fn pick(&mut self) -> Option<u16> {
        match self.kind {
            ArbitrationKind::Rr => {
                let g = &mut self.groups[0];
                if g.nonempty == 0 {
                    return None;
                }
                Some(g.pick(self.burst) as u16)
            }
            ArbitrationKind::Wrr => {
                if self.groups[0].nonempty > 0 {
                    let core = self.groups[0].pick(self.burst);
                    return Some((core << 2) as u16);
                }
                if self.groups[1..].iter().all(|g| g.nonempty == 0) {
                    return None;
                }
                loop {
                    let c = self.wcur;
                    if self.credits[c] > 0 && self.groups[c].nonempty > 0 {
                        self.credits[c] -= 1;
                        let core = self.groups[c].pick(self.burst);
                        return Some((core << 2 | c as u32) as u16);
                    }
                    if c == 3 {
                        self.credits = self.weights;
                        self.wcur = 1;
                    } else {
                        self.wcur = c + 1;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_after_wraps() {
        let mut g = RrGroup::new(130);
        g.set(3);
        g.set(129);
        assert_eq!(g.next_after(3), 129);
        assert_eq!(g.next_after(129), 3);
        assert_eq!(g.next_after(0), 3);
        g.clear(129);
        assert_eq!(g.next_after(3), 3);
        let mut g = RrGroup::new(64);
        g.set(63);
        assert_eq!(g.next_after(63), 63);
        g.set(0);
        assert_eq!(g.next_after(63), 0);
        let mut g = RrGroup::new(1);
        g.set(0);
        assert_eq!(g.next_after(0), 0);
    }
}
