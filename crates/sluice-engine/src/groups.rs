//! The threads of a run: the workers, each running the stonewall groups in turn, and
//! the coordinator that starts each group and watches it (steady state, progress).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Barrier;
use std::time::Duration;

use sluice_core::Nanos;
use sluice_workload::JobSpec;

use crate::worker::{Worker, WorkerResult};
use crate::{early, panic_text, EngineError, Shared};

/// Where the coordinator and the workers meet at each stonewall group: all start a
/// group together (the coordinator sets its start time first) and the coordinator
/// waits until every worker is done with it.
pub(crate) struct GroupSync {
    pub barrier: Barrier,
    /// The running group's start.
    pub start: AtomicU64,
    /// Workers done with the running group.
    pub done: AtomicUsize,
    pub groups: usize,
    pub workers: usize,
}

/// A worker thread: each stonewall group in turn, then its result. A worker that could
/// not be built, or failed, still meets the others at every group (or they would wait
/// for it for ever); its error stops the others.
pub(crate) fn worker_thread(
    built: Result<Worker<'_>, EngineError>,
    index: usize,
    shared: &Shared<'_>,
    sync: &GroupSync,
) -> Result<WorkerResult, EngineError> {
    let (mut worker, mut err) = match built {
        Ok(w) => (Some(w), None),
        Err(e) => {
            shared.abort.store(true, Ordering::Relaxed);
            (None, Some(e))
        }
    };
    for g in 0..sync.groups {
        sync.barrier.wait();
        if let (Some(w), None) = (worker.as_mut(), &err) {
            let start = sync.start.load(Ordering::Acquire);
            // A panic here must still reach the barriers below, or the other threads
            // wait for this one for ever: it is this worker's error, and the others
            // stop.
            let ran =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| w.run_group(g, start)));
            let r = ran.unwrap_or_else(|p| Err(EngineError::WorkerPanic(index, panic_text(&*p))));
            if let Err(e) = r {
                shared.abort.store(true, Ordering::Relaxed);
                err = Some(e);
            }
        }
        sync.done.fetch_add(1, Ordering::AcqRel);
        sync.barrier.wait();
    }
    match err {
        Some(e) => Err(e),
        None => Ok(worker.take().expect("built").finish()),
    }
}

/// The coordinator: start each stonewall group (its measurement windows, its start
/// time), then watch it — steady state, progress — until every worker is done.
pub(crate) fn coordinate(
    jobs: &[JobSpec],
    job_group: &[usize],
    sync: &GroupSync,
    shared: &Shared<'_>,
    steady: &mut early::SteadyChecks,
    clock: &dyn Fn() -> Nanos,
    progress: &mut dyn FnMut(f64),
) {
    for g in 0..sync.groups {
        let start = clock();
        {
            let mut c = shared.collector.lock().expect("collector lock");
            let members: Vec<usize> = (0..jobs.len()).filter(|&j| job_group[j] == g).collect();
            if g == 0 {
                let first = members
                    .iter()
                    .map(|&j| jobs[j].startdelay_ns + jobs[j].ramp_ns)
                    .min()
                    .unwrap_or(0);
                c.set_window(start + first);
            }
            for &j in &members {
                c.set_job_window(j, start + jobs[j].startdelay_ns + jobs[j].ramp_ns);
            }
        }
        sync.start.store(start, Ordering::Release);
        sync.done.store(0, Ordering::Release);
        sync.barrier.wait();
        while sync.done.load(Ordering::Acquire) < sync.workers {
            let job_start = |j: usize| start + jobs[j].startdelay_ns;
            steady.poll(clock(), g, &job_start, &shared.early);
            progress(progress_of(jobs, job_group, g, start, clock(), shared));
            std::thread::sleep(Duration::from_millis(20));
        }
        sync.barrier.wait();
    }
    progress(1.0);
}

fn progress_of(
    jobs: &[JobSpec],
    job_group: &[usize],
    g: usize,
    group_start: Nanos,
    now: Nanos,
    sh: &Shared<'_>,
) -> f64 {
    let mut sum = 0.0;
    let mut first_thread = 0usize;
    for (j, s) in jobs.iter().enumerate() {
        let threads = first_thread..first_thread + s.numjobs as usize;
        first_thread = threads.end;
        let f = if job_group[j] < g {
            1.0
        } else if job_group[j] > g {
            0.0
        } else {
            let start = group_start + s.startdelay_ns;
            let by_time = s.runtime_ns.map_or(0.0, |r| {
                (now.saturating_sub(start) as f64 / (s.ramp_ns + r) as f64).min(1.0)
            });
            let by_size = if s.time_based {
                0.0
            } else {
                let issued: u64 = threads.map(|t| sh.issued[t].load(Ordering::Relaxed)).sum();
                issued as f64 / (s.size as f64 * s.numjobs as f64)
            };
            by_time.max(by_size).min(1.0)
        };
        sum += f;
    }
    sum / jobs.len().max(1) as f64
}
