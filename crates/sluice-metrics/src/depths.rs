//! fio's queue-depth maps of a job (`iodepth_level`, `iodepth_submit`,
//! `iodepth_complete` in its JSON; the "IO depths" and "submit"/"complete" lines of its
//! text report), and its latency-target figures (`latency_depth`, `latency_target`,
//! `latency_percentile`, `latency_window`).
//!
//! As fio counts them (`io_u_mark_depth`, `io_u_mark_submit`, `io_u_mark_complete`):
//! * depth: each I/O issued counts at the number of the thread's I/Os in flight with it
//!   (itself included), in the buckets 1, 2–3, 4–7, 8–15, 16–31, 32–63, ≥ 64, keyed by
//!   their lower bound (`"1"`, `"2"`, …, `">=64"`);
//! * submit: each submission counts at the number of I/Os it carried — for sluice's one
//!   job runner, the I/Os a thread issued at one turn (the start fills its depth at
//!   once, a completion issues one) —, in the buckets 0, 1–4, 5–8, 9–16, 17–32, 33–64,
//!   > 64, keyed by their upper bound (`"0"`, `"4"`, …, `"64"`, `">=64"`);
//! * complete: each reaping counts at the number of the thread's I/Os it reaped (those
//!   reaped at the same instant), in the submit buckets.
//!
//! The report gives each bucket as a percentage of its map's total.

use serde::Serialize;

use crate::report::LatBuckets;

const LEVEL_KEYS: [&str; 7] = ["1", "2", "4", "8", "16", "32", ">=64"];
const BATCH_KEYS: [&str; 7] = ["0", "4", "8", "16", "32", "64", ">=64"];

/// One job's counts (the sum over its threads, and over a world's workers).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IoDepths {
    /// I/Os issued, by depth bucket.
    pub level: [u64; 7],
    /// Submissions, by batch bucket.
    pub submit: [u64; 7],
    /// Reapings, by batch bucket.
    pub complete: [u64; 7],
}

impl IoDepths {
    /// `n` I/Os issued with `depth` in flight (the last of them included).
    pub fn issued(&mut self, depth: u32, n: u64) {
        let i = match depth {
            0 | 1 => 0,
            2..=3 => 1,
            4..=7 => 2,
            8..=15 => 3,
            16..=31 => 4,
            32..=63 => 5,
            _ => 6,
        };
        self.level[i] += n;
    }

    fn batch(n: u64) -> usize {
        match n {
            0 => 0,
            1..=4 => 1,
            5..=8 => 2,
            9..=16 => 3,
            17..=32 => 4,
            33..=64 => 5,
            _ => 6,
        }
    }

    /// One submission of `n` I/Os.
    pub fn submitted(&mut self, n: u64) {
        self.submit[Self::batch(n)] += 1;
    }

    /// One reaping of `n` I/Os.
    pub fn reaped(&mut self, n: u64) {
        self.complete[Self::batch(n)] += 1;
    }

    /// Add `other`'s counts (another thread's, another worker's).
    pub fn add(&mut self, other: &IoDepths) {
        for (a, b) in [
            (&mut self.level, &other.level),
            (&mut self.submit, &other.submit),
            (&mut self.complete, &other.complete),
        ] {
            for (x, y) in a.iter_mut().zip(b) {
                *x += y;
            }
        }
    }

    fn pct(counts: &[u64; 7], keys: &[&'static str; 7]) -> LatBuckets {
        LatBuckets::percent(keys, counts, counts.iter().sum())
    }

    /// fio's `iodepth_level`.
    pub fn level_pct(&self) -> LatBuckets {
        Self::pct(&self.level, &LEVEL_KEYS)
    }

    /// fio's `iodepth_submit`.
    pub fn submit_pct(&self) -> LatBuckets {
        Self::pct(&self.submit, &BATCH_KEYS)
    }

    /// fio's `iodepth_complete`.
    pub fn complete_pct(&self) -> LatBuckets {
        Self::pct(&self.complete, &BATCH_KEYS)
    }
}

/// A job's latency-target figures as fio reports them: the depth it ran at (its
/// `iodepth`, or the depth fio's `latency_target` search settled on), the target and
/// window in µs (0: none) and the percentile (100 without a target).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct LatencyTarget {
    /// fio's `latency_depth`.
    pub latency_depth: u32,
    /// fio's `latency_target`, µs.
    pub latency_target: u64,
    /// fio's `latency_percentile`.
    pub latency_percentile: f64,
    /// fio's `latency_window`, µs.
    pub latency_window: u64,
}

impl Default for LatencyTarget {
    fn default() -> Self {
        LatencyTarget {
            latency_depth: 1,
            latency_target: 0,
            latency_percentile: 100.0,
            latency_window: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_fios() {
        let mut d = IoDepths::default();
        for (depth, n) in [(1, 1), (3, 1), (4, 2), (63, 1), (64, 1), (500, 1)] {
            d.issued(depth, n);
        }
        assert_eq!(d.level, [1, 1, 2, 0, 0, 1, 2]);
        for n in [0, 1, 4, 5, 64, 65] {
            d.submitted(n);
        }
        assert_eq!(d.submit, [1, 2, 1, 0, 0, 1, 1]);
        d.reaped(16);
        assert_eq!(d.complete, [0, 0, 0, 1, 0, 0, 0]);
        let l = d.level_pct();
        assert_eq!(l.0[0], ("1", 100.0 / 7.0));
        assert_eq!(l.0[6], (">=64", 200.0 / 7.0));
        assert_eq!(d.complete_pct().0[3], ("16", 100.0));
        let mut e = IoDepths::default();
        e.add(&d);
        e.add(&d);
        assert_eq!(e.level[6], 4);
        // An empty map is all zeros, not NaN.
        assert!(IoDepths::default()
            .submit_pct()
            .0
            .iter()
            .all(|(_, p)| *p == 0.0));
    }
}
