//! Ending jobs early across workers: fio's `exitall` (a job's end ends the jobs its
//! `exit_what` names) and `steadystate` (a job ends once its rate is steady).
//!
//! A job's threads may be spread over several workers, so the decision is device-wide:
//! workers add their jobs' completed I/Os to [`EarlyEnd`]'s counters when they hand
//! their samples to the collector (every 256 samples or 10 ms), the run's main thread
//! checks steady state once per check interval of each job ([`SteadyChecks::poll`]),
//! and a job to end is flagged; each worker ends its part of a flagged job at its next
//! loop turn (within 50 ms, the longest idle wait).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use sluice_core::Nanos;
use sluice_metrics::SteadyReport;
use sluice_workload::{exit_targets, JobSpec, SteadyTrack};

/// Per job: the end flag and completed I/Os and bytes, over all workers.
#[derive(Debug)]
pub(crate) struct EarlyEnd {
    stop: Vec<AtomicBool>,
    ios: Vec<AtomicU64>,
    bytes: Vec<AtomicU64>,
    /// Completion latencies summed, ns (steady state's `lat` criteria).
    lat_ns: Vec<AtomicU64>,
    /// Job → stonewall group.
    group: Vec<usize>,
    /// Job → the jobs its end ends (`exitall`, `exit_what`).
    exits: Vec<Vec<usize>>,
}

impl EarlyEnd {
    pub(crate) fn new(jobs: &[JobSpec], group: &[usize]) -> EarlyEnd {
        EarlyEnd {
            stop: jobs.iter().map(|_| AtomicBool::new(false)).collect(),
            ios: jobs.iter().map(|_| AtomicU64::new(0)).collect(),
            bytes: jobs.iter().map(|_| AtomicU64::new(0)).collect(),
            lat_ns: jobs.iter().map(|_| AtomicU64::new(0)).collect(),
            group: group.to_vec(),
            exits: (0..jobs.len()).map(|j| exit_targets(jobs, j)).collect(),
        }
    }

    /// The number of jobs.
    pub(crate) fn len(&self) -> usize {
        self.stop.len()
    }

    /// Whether job `j` is to end now.
    #[inline]
    pub(crate) fn flagged(&self, j: usize) -> bool {
        self.stop[j].load(Ordering::Relaxed)
    }

    /// Whether any job is flagged (one load per job; jobs are few).
    #[inline]
    pub(crate) fn any_flagged(&self) -> bool {
        self.stop.iter().any(|s| s.load(Ordering::Relaxed))
    }

    /// A worker's completions of job `j` since its last hand-over.
    #[inline]
    pub(crate) fn add(&self, j: usize, ios: u64, bytes: u64, lat_ns: u64) {
        self.ios[j].fetch_add(ios, Ordering::Relaxed);
        self.bytes[j].fetch_add(bytes, Ordering::Relaxed);
        self.lat_ns[j].fetch_add(lat_ns, Ordering::Relaxed);
    }

    /// Job `j` ended: flag the jobs it ends ([`exit_targets`]: `exitall`, `exit_what`).
    pub(crate) fn job_ended(&self, j: usize) {
        for &k in &self.exits[j] {
            self.stop[k].store(true, Ordering::Relaxed);
        }
    }
}

/// The main thread's steady-state checks, one tracker per job with `ss_dur`.
#[derive(Debug)]
pub(crate) struct SteadyChecks {
    /// Job, its tracker, the ios and bytes counted so far, its next check (ns since
    /// the job's start).
    jobs: Vec<(usize, SteadyTrack, u64, u64, u64, Nanos)>,
}

impl SteadyChecks {
    pub(crate) fn new(jobs: &[JobSpec]) -> SteadyChecks {
        SteadyChecks {
            jobs: jobs
                .iter()
                .enumerate()
                .filter_map(|(j, s)| {
                    let spec = s.steadystate.as_ref()?;
                    Some((j, SteadyTrack::new(spec), 0, 0, 0, spec.interval_ns))
                })
                .collect(),
        }
    }

    /// Check the jobs of stonewall group `g` whose check is due at `now` (`start(j)`:
    /// job `j`'s start); flag the ones that became steady.
    pub(crate) fn poll(
        &mut self,
        now: Nanos,
        g: usize,
        start: &dyn Fn(usize) -> Nanos,
        early: &EarlyEnd,
    ) {
        for (j, track, ios, bytes, lat, next) in &mut self.jobs {
            if early.group[*j] != g || early.flagged(*j) {
                continue;
            }
            let elapsed = now.saturating_sub(start(*j));
            if elapsed < *next {
                continue;
            }
            let (i, b, l) = (
                early.ios[*j].load(Ordering::Relaxed),
                early.bytes[*j].load(Ordering::Relaxed),
                early.lat_ns[*j].load(Ordering::Relaxed),
            );
            track.count(i - *ios, b - *bytes, l - *lat);
            (*ios, *bytes, *lat) = (i, b, l);
            let interval = track.spec().interval_ns;
            // The next check one interval after this one was due (late polls do not
            // drift the schedule).
            while *next <= elapsed {
                *next += interval;
            }
            if track.check(elapsed) {
                early.stop[*j].store(true, Ordering::Relaxed);
            }
        }
    }

    /// The outcomes, per job with steady-state detection.
    pub(crate) fn reports(&self) -> Vec<(usize, SteadyReport)> {
        self.jobs
            .iter()
            .map(|(j, t, ..)| (*j, SteadyReport::of(t)))
            .collect()
    }
}
