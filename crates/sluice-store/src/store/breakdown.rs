//! Where a critical fsync's time goes: FastResponse's latency breakdown of the
//! synchronous write path (Li et al., ICS '22 §4.4, Fig. 15(b)).
//!
//! The paper splits an fsync into the writeback of its own file's data (T_D1) and of
//! the other files' data the compound transaction carries (T_D2), the journal blocks
//! (T_JD), the commit block (T_JC) and process scheduling (T_Sched: waking the journal
//! thread and, after the commit, the fsync thread). The store records the timeline of
//! every commit and f-transaction ([`Phases`]) and cuts each critical fsync's interval
//! `[t0, t1]` at its commit's boundaries, so the parts add up to the fsync's latency
//! exactly:
//!
//! * **wait** `[t0, start)`: before its commit starts — the journal task's wake-up and
//!   run-queue wait, an earlier commit (or f-transaction) still going, the file's own
//!   writes in flight;
//! * **data** `[start, data)`: the ordered data going home (T_D1 + T_D2: a compound
//!   commit writes every file's buffered data, an f-transaction its own file's only);
//!   on AIOS's asynchronous path the journal blocks go out during this phase too;
//! * **journal** `[data, journal)`: preparing and writing the journal blocks, and
//!   preparing the commit record (T_JD; with single-flush commits the commit record
//!   is written with them);
//! * **commit** `[journal, done)`: the FLUSH (T_JC; on the two-FLUSH path, the FLUSH
//!   and then the commit record with FUA);
//! * **wake** `[done, t1)`: from the commit's end until the fsync returns — the waiter's
//!   wake-up and its wait to run again.
//!
//! Each phase holds device time and the time the committing task waited to run after
//! each of its I/Os; the scheduling parts proper are `wait` and `wake`.
//!
//! The means say where a typical fsync's time goes; a tail has causes of its own (a
//! FLUSH that waits for someone else's data, a write queued behind another), so the
//! breakdown also keeps the parts of the [`SLOWEST_KEPT`] slowest fsyncs apart
//! ([`FsyncBreakdown::tail_means`]: the same five parts over the slowest 1 %, say).

use sluice_core::Nanos;

/// How many of the slowest critical fsyncs [`FsyncBreakdown`] keeps the parts of.
pub const SLOWEST_KEPT: usize = 64;

/// One commit's (or f-transaction's, or data-only sync's) timeline.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Phases {
    pub start: Nanos,
    pub data: Nanos,
    pub journal: Nanos,
    pub done: Nanos,
}

/// Critical fsyncs' time, summed by phase (ns); see the module documentation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FsyncBreakdown {
    /// Critical fsyncs and fdatasyncs counted.
    pub fsyncs: u64,
    /// Their whole time.
    pub total_ns: u64,
    /// Before their commit started.
    pub wait_ns: u64,
    /// Ordered data going home (FastResponse's T_D1 + T_D2).
    pub data_ns: u64,
    /// Journal blocks (T_JD).
    pub journal_ns: u64,
    /// The FLUSH, and the commit record after it on the two-FLUSH path (T_JC).
    pub commit_ns: u64,
    /// From the commit's end to the fsync's return.
    pub wake_ns: u64,
    /// The parts of the slowest fsyncs so far, at most [`SLOWEST_KEPT`], in no order:
    /// wait, data, journal, commit, wake, total (ns).
    slowest: Vec<[u64; 6]>,
}

impl FsyncBreakdown {
    /// Count the fsync of `[t0, t1]` that commit `p` made durable.
    pub(crate) fn add(&mut self, t0: Nanos, t1: Nanos, p: &Phases) {
        // The part of [a, b) inside [t0, t1): boundaries clamped, so the five parts
        // partition [t0, t1) whenever start ≤ data ≤ journal ≤ done ≤ t1.
        let seg = |a: Nanos, b: Nanos| b.min(t1).saturating_sub(a.max(t0));
        let parts = [
            seg(t0, p.start),
            seg(p.start, p.data),
            seg(p.data, p.journal),
            seg(p.journal, p.done),
            seg(p.done, t1),
            t1 - t0,
        ];
        self.fsyncs += 1;
        self.wait_ns += parts[0];
        self.data_ns += parts[1];
        self.journal_ns += parts[2];
        self.commit_ns += parts[3];
        self.wake_ns += parts[4];
        self.total_ns += parts[5];
        if self.slowest.len() < SLOWEST_KEPT {
            self.slowest.push(parts);
        } else if let Some(min) = self.slowest.iter_mut().min_by_key(|x| x[5]) {
            if parts[5] > min[5] {
                *min = parts;
            }
        }
    }

    /// The mean parts (wait, data, journal, commit, wake, total; ns) of the slowest
    /// `share` of the fsyncs counted — at least one, at most [`SLOWEST_KEPT`] — and
    /// how many that is; `None` before the first fsync. `tail_means(0.01)` is where
    /// the slowest 1 % went, the fsyncs at and above the p99.
    pub fn tail_means(&self, share: f64) -> Option<(usize, [f64; 6])> {
        if self.slowest.is_empty() {
            return None;
        }
        let want = ((self.fsyncs as f64 * share).ceil() as usize).clamp(1, self.slowest.len());
        let mut by_total = self.slowest.clone();
        by_total.sort_unstable_by_key(|x| std::cmp::Reverse(x[5]));
        let mut sum = [0f64; 6];
        for x in &by_total[..want] {
            for (s, v) in sum.iter_mut().zip(x) {
                *s += *v as f64;
            }
        }
        Some((want, sum.map(|v| v / want as f64)))
    }

    /// Mean per fsync of each part, ns: wait, data, journal, commit, wake, total.
    pub fn means(&self) -> [f64; 6] {
        let n = self.fsyncs.max(1) as f64;
        [
            self.wait_ns,
            self.data_ns,
            self.journal_ns,
            self.commit_ns,
            self.wake_ns,
            self.total_ns,
        ]
        .map(|v| v as f64 / n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parts_add_up_and_clamp_to_the_fsync() {
        let mut b = FsyncBreakdown::default();
        let p = Phases {
            start: 10,
            data: 30,
            journal: 35,
            done: 50,
        };
        b.add(0, 60, &p);
        assert_eq!(
            [b.wait_ns, b.data_ns, b.journal_ns, b.commit_ns, b.wake_ns],
            [10, 20, 5, 15, 10]
        );
        // An fsync that arrived during the commit's data phase.
        b.add(20, 55, &p);
        assert_eq!(b.total_ns, 95);
        assert_eq!(
            b.wait_ns + b.data_ns + b.journal_ns + b.commit_ns + b.wake_ns,
            b.total_ns
        );
        assert_eq!(b.data_ns, 30);
        assert_eq!(b.means()[5], 47.5);
        // The slowest of the two is the first (60 ns: wait 10, data 20, journal 5,
        // commit 15, wake 10).
        assert_eq!(
            b.tail_means(0.01),
            Some((1, [10.0, 20.0, 5.0, 15.0, 10.0, 60.0]))
        );
        assert_eq!(b.tail_means(1.0).unwrap().0, 2);
        assert_eq!(FsyncBreakdown::default().tail_means(0.01), None);
    }

    /// Only the slowest are kept: after many fast fsyncs and a few slow ones spread
    /// among them, the tail is the slow ones.
    #[test]
    fn the_tail_keeps_the_slowest() {
        let mut b = FsyncBreakdown::default();
        for i in 0..1000u64 {
            let slow = i % 100 == 7;
            let p = Phases {
                start: 0,
                data: 10,
                journal: 10,
                done: if slow { 5_000 } else { 20 },
            };
            b.add(0, if slow { 5_000 + i } else { 25 }, &p);
        }
        let (n, parts) = b.tail_means(0.01).unwrap();
        assert_eq!(n, 10);
        assert_eq!(parts[3], 4_990.0, "the slow fsyncs' commit part");
        assert!(parts[5] > 5_000.0);
        // More than it keeps: the slowest SLOWEST_KEPT.
        assert_eq!(b.tail_means(0.5).unwrap().0, SLOWEST_KEPT);
    }
}
