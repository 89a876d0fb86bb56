//! The engine's own figures in a run's report (`extra.engine`): workers, rings, CPU,
//! the policy's timing, the page cache.

use sluice_block::PolicyCall;
use sluice_metrics::{Extra, FileFact, IoErrorFact, PerClass, PolicyTiming, RealFacts, RunReport};

use crate::device::DevState;
use crate::ptime::{self, OUTLIER_NS, TICK_SOURCE};
use crate::worker::WorkerResult;
use crate::{EngineConfig, EngineStats, FilePlan};

fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

pub(crate) fn fill_extra(
    report: &mut RunReport,
    res: &[WorkerResult],
    dev: &DevState,
    stats: &EngineStats,
    cfg: &EngineConfig,
    workers: usize,
    plan: &FilePlan,
) {
    let block = &dev.block;
    report.extra = Extra {
        real: Some(RealFacts {
            workers,
            ring_entries: res.iter().map(|r| r.ring_entries).max().unwrap_or(0),
            ring_cap: dev.port.cap(),
            fixed_buffers: res.iter().all(|r| r.fixed_buffers),
            directory: cfg.directory.display().to_string(),
            files: plan
                .files
                .iter()
                .map(|f| FileFact {
                    path: f.path.display().to_string(),
                    size: f.size,
                    created: f.create,
                    device: f.device,
                    align: f.align as u64,
                })
                .collect(),
            wall_ns: stats.wall_ns,
            ios: stats.ios,
            io_uring_enters: stats.enters,
            cpu_user_ns: stats.cpu_user_ns,
            cpu_sys_ns: stats.cpu_sys_ns,
            cpu_ns_per_io: (stats.ios > 0)
                .then(|| round6((stats.cpu_user_ns + stats.cpu_sys_ns) as f64 / stats.ios as f64)),
            interrupted: stats.interrupted,
            timing: policy_timing(&block.meter().report(), stats.ios),
            arbiter_fetched_per_class: PerClass(dev.port.fetched),
            arbiter_fast_path: dev.port.fast_path,
            arbiter_wrr_weights: dev.port.weights,
            io_errors: stats
                .errors
                .iter()
                .map(|(j, n, first)| IoErrorFact {
                    job: j.clone(),
                    count: *n,
                    first: first.clone(),
                })
                .collect(),
            verify: stats.verify.clone(),
        }),
        page_cache: dev.front.as_ref().map(|f| f.front.stats()),
        ..Extra::from_block("io_uring", cfg.seed, block)
    };
}

/// The time spent inside policy calls (see [`ptime`]): ns per I/O (the brackets' own
/// cost subtracted, and raw), per call kind, calls per I/O, the bracket's cost per call
/// and per I/O, and the calls left out as preemptions.
fn policy_timing(t: &ptime::PolicyTimeReport, ios: u64) -> PolicyTiming {
    let total_calls: u64 = t.calls.iter().sum();
    let per_io = |x: f64| (ios > 0).then(|| round6(x / ios as f64));
    PolicyTiming {
        policy_timing_clock: TICK_SOURCE.into(),
        policy_timing_overhead_ns: round6(t.overhead_ns),
        policy_timing_outliers: t.outliers,
        policy_timing_outlier_ns: OUTLIER_NS,
        policy_calls: total_calls,
        policy_ns_per_io: per_io(t.ns.iter().sum()),
        policy_ns_per_io_raw: per_io(t.raw_ns.iter().sum()),
        policy_calls_per_io: per_io(total_calls as f64),
        policy_timing_cost_ns_per_io: per_io(total_calls as f64 * t.overhead_ns),
        policy_ns_per_io_by_call: if ios > 0 {
            PolicyCall::ALL
                .iter()
                .map(|k| (k.name().to_string(), round6(t.ns[k.index()] / ios as f64)))
                .collect()
        } else {
            Default::default()
        },
    }
}
