//! fio's queue-depth search for a latency target (`latency_target`,
//! `latency_window`, `latency_percentile`, `latency_run`), per job thread, as fio's
//! `lat_target_*` functions do it:
//!
//! * the thread starts at depth 1 (low 1, high `iodepth`);
//! * an I/O whose latency (reaped − submitted) exceeds the target is a failure: with
//!   `latency_percentile=100` it lowers the depth at once — `high = qd`, `qd = (qd +
//!   low) / 2` (and `low − 1` when `qd = low`) — and starts a new window; at depth 1 it
//!   is fatal (the job ends with an error, as fio's ETIMEDOUT); with a lower percentile
//!   it is counted;
//! * every `latency_window`, when at least `latency_percentile` % of the window's I/Os
//!   met the target, the depth rises — `low = qd`; doubled while `high` is `iodepth`,
//!   else to `(qd + high) / 2`, at most `iodepth` (after three such windows with
//!   `qd + 1 = high`, `high` grows by one) —, else it is lowered as above;
//! * when a rise leaves the depth where it was, the thread runs one more window at it
//!   and ends (unless `latency_run`, which keeps searching).
//!
//! fio resets its statistics before that last window; sluice reports the whole
//! search.

use sluice_core::Nanos;
use sluice_workload::JobSpec;

/// What a completion did to the search.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LatVerdict {
    /// Go on (at [`LatTarget::depth`]).
    Go,
    /// An I/O missed the target at depth 1: the thread ends with an error.
    Fatal,
    /// The search settled and its last window ran: the thread ends.
    Done,
}

/// One thread's search.
#[derive(Clone, Debug)]
pub struct LatTarget {
    target_ns: Nanos,
    window_ns: Nanos,
    percentile: f64,
    keep_running: bool,
    iodepth: u32,
    qd: u32,
    low: u32,
    high: u32,
    stable: u32,
    cycle_start: Nanos,
    ios: u64,
    failed: u64,
    end_run: bool,
}

impl LatTarget {
    /// The search of a thread of `job`, if it has a latency target.
    pub fn new(job: &JobSpec) -> Option<LatTarget> {
        let target_ns = job.latency_target_ns.filter(|&t| t > 0)?;
        Some(LatTarget {
            target_ns,
            window_ns: job.latency_window_ns,
            percentile: job.latency_percentile,
            keep_running: job.latency_run,
            iodepth: job.iodepth.max(1),
            qd: 1,
            low: 1,
            high: job.iodepth.max(1),
            stable: 0,
            cycle_start: 0,
            ios: 0,
            failed: 0,
            end_run: false,
        })
    }

    /// The thread starts at `now`: the first window begins.
    pub fn start(&mut self, now: Nanos) {
        self.new_cycle(now);
    }

    /// The depth the thread may use now.
    pub fn depth(&self) -> u32 {
        self.qd
    }

    fn new_cycle(&mut self, now: Nanos) {
        self.cycle_start = now;
        self.ios = 0;
        self.failed = 0;
    }

    /// fio's `__lat_target_failed`: lower the depth; `true` at depth 1 (fatal).
    fn lower(&mut self, now: Nanos) -> bool {
        if self.qd == 1 {
            return true;
        }
        self.high = self.qd;
        if self.qd == self.low {
            self.low -= 1;
        }
        self.qd = ((self.qd + self.low) / 2).max(1);
        self.stable = 0;
        self.new_cycle(now);
        false
    }

    /// fio's `lat_target_success`: raise the depth; `true` when the search is done.
    fn raise(&mut self, now: Nanos) -> bool {
        let qd = self.qd;
        self.low = self.qd;
        if self.qd + 1 == self.high {
            self.stable += 1;
            if self.stable >= 3 {
                self.high += 1;
                self.stable = 0;
            }
        }
        self.qd = if self.high != self.iodepth {
            (self.qd + self.high) / 2
        } else {
            self.qd * 2
        }
        .min(self.iodepth);
        let mut done = false;
        if !self.keep_running && self.qd == qd {
            if self.end_run {
                done = true;
            } else {
                self.end_run = true;
            }
        }
        self.new_cycle(now);
        done
    }

    /// An I/O of the thread completed at `now` after `lat_ns`.
    pub fn complete(&mut self, lat_ns: Nanos, now: Nanos) -> LatVerdict {
        self.ios += 1;
        if lat_ns > self.target_ns {
            if self.percentile >= 100.0 {
                if self.lower(now) {
                    return LatVerdict::Fatal;
                }
            } else {
                self.failed += 1;
            }
        }
        // fio's lat_target_check, once per window.
        if now.saturating_sub(self.cycle_start) < self.window_ns || self.ios == 0 {
            return LatVerdict::Go;
        }
        let success = (self.ios - self.failed) as f64 * 100.0 / self.ios as f64;
        if success >= self.percentile {
            if self.raise(now) {
                return LatVerdict::Done;
            }
        } else if self.lower(now) {
            return LatVerdict::Fatal;
        }
        LatVerdict::Go
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(iodepth: u32, pct: f64) -> JobSpec {
        JobSpec {
            iodepth,
            latency_target_ns: Some(1_000),
            latency_window_ns: 100,
            latency_percentile: pct,
            ..JobSpec::default()
        }
    }

    #[test]
    fn doubles_while_fast_and_settles_below_the_depth_that_misses() {
        let mut l = LatTarget::new(&job(64, 100.0)).unwrap();
        l.start(0);
        let mut t = 0;
        let mut seen = vec![l.depth()];
        // Latency 100 ns per unit of depth: the target (1000) is met up to depth 10.
        for _ in 0..10_000 {
            t += 10;
            let lat = 100 * l.depth() as u64;
            match l.complete(lat, t) {
                LatVerdict::Go => {}
                LatVerdict::Done => break,
                LatVerdict::Fatal => panic!("depth 1 meets the target"),
            }
            if *seen.last().unwrap() != l.depth() {
                seen.push(l.depth());
            }
        }
        assert_eq!(seen[..5], [1, 2, 4, 8, 16], "{seen:?}");
        assert!((8..=10).contains(&l.depth()), "{seen:?}");
    }

    #[test]
    fn fatal_at_depth_one_and_percentile_counts() {
        let mut l = LatTarget::new(&job(8, 100.0)).unwrap();
        l.start(0);
        assert_eq!(l.complete(5_000, 1), LatVerdict::Fatal);
        // With 90 %: one slow I/O in 20 does not lower the depth.
        let mut l = LatTarget::new(&job(8, 90.0)).unwrap();
        l.start(0);
        for i in 0..20 {
            l.complete(if i == 3 { 5_000 } else { 10 }, i * 10);
        }
        assert_eq!(l.depth(), 2, "the window passed: raised");
        assert!(LatTarget::new(&JobSpec::default()).is_none());
    }
}
