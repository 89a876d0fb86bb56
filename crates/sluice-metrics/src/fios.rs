//! FIOS's fairness and efficiency figures (Park & Shen, FAST '12, §6): each task's
//! *slowdown* against its alone-run, compared with the *proportional slowdown* `n`, and
//! the *concurrent efficiency* of Eq. 2.
//!
//! A *task* is a job of the concurrent run. Its alone-run is a run of that job by
//! itself (same device, same policy or none); [`fios_figures`] matches them by job name.
//!
//! * I/O latency of a task: mean completion latency over its reads and writes
//!   (weighted by their counts); its slowdown is `latency_conc / latency_alone`.
//! * Proportional slowdown: `n`, the number of tasks — "each task experiences a factor
//!   of n slowdown compared to running alone" is fairness. A task is fairly treated
//!   when its slowdown is at most `n` (FIOS allows tasks to do better).
//! * Concurrent efficiency (Eq. 2): `Σ_i Thrput_i^conc / Thrput_i^alone`, with
//!   throughput in I/Os per second. 1.0 is the efficiency of running the tasks one after
//!   another; above 1 the concurrent run gains (e.g. from device parallelism).

use crate::{JobReport, RunReport};

/// One task's figures.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct TaskFigures {
    /// The job name.
    pub name: String,
    /// Mean I/O latency alone, ns.
    pub alone_lat_ns: f64,
    /// Mean I/O latency in the concurrent run, ns.
    pub conc_lat_ns: f64,
    /// `conc_lat_ns / alone_lat_ns`.
    pub slowdown: f64,
    /// I/Os per second alone.
    pub alone_iops: f64,
    /// I/Os per second in the concurrent run.
    pub conc_iops: f64,
    /// Whether the task only reads (for "readers" goals).
    #[serde(skip)]
    pub reads_only: bool,
}

/// The figures of one concurrent run against its alone-runs.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct FiosFigures {
    /// Per task, in job order of the concurrent run.
    pub tasks: Vec<TaskFigures>,
    /// The proportional slowdown: the number of tasks.
    #[serde(rename = "proportional_slowdown")]
    pub proportional: f64,
    /// Eq. 2.
    pub concurrent_efficiency: f64,
}

impl FiosFigures {
    /// The largest slowdown over the proportional slowdown (≤ 1 means every task is
    /// fairly treated).
    pub fn worst_ratio(&self) -> f64 {
        self.tasks
            .iter()
            .map(|t| t.slowdown / self.proportional)
            .fold(0.0, f64::max)
    }

    /// The largest slowdown of the tasks that only read, over the proportional slowdown
    /// (0 when there are none).
    pub fn worst_reader_ratio(&self) -> f64 {
        self.tasks
            .iter()
            .filter(|t| t.reads_only)
            .map(|t| t.slowdown / self.proportional)
            .fold(0.0, f64::max)
    }

    /// Mean slowdown of the tasks that only read (0 when there are none).
    pub fn mean_reader_slowdown(&self) -> f64 {
        let r: Vec<f64> = self
            .tasks
            .iter()
            .filter(|t| t.reads_only)
            .map(|t| t.slowdown)
            .collect();
        if r.is_empty() {
            0.0
        } else {
            r.iter().sum::<f64>() / r.len() as f64
        }
    }
}

/// Why the figures cannot be computed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FiosMetricError {
    /// The concurrent run has no jobs.
    #[error("the concurrent run has no jobs")]
    NoTasks,
    /// No alone-run holds a job of that name.
    #[error("no alone-run for task '{0}': run every job of the concurrent run by itself")]
    NoAloneRun(String),
    /// A task completed no I/O in one of the runs.
    #[error("task '{task}' completed no I/O in its {run} run; run it longer")]
    NoIo {
        /// The job name.
        task: String,
        /// "alone" or "concurrent".
        run: &'static str,
    },
}

/// Mean latency (ns) over reads, writes and flushes, and I/Os per second.
fn lat_and_iops(j: &JobReport) -> (f64, f64, u64) {
    let mut n = 0u64;
    let mut sum = 0.0;
    let mut iops = 0.0;
    for (_, d) in j.dirs() {
        n += d.lat_ns.n;
        sum += d.lat_ns.mean * d.lat_ns.n as f64;
        iops += d.iops;
    }
    let mean = if n == 0 { 0.0 } else { sum / n as f64 };
    (mean, iops, n)
}

/// FIOS's figures for the concurrent run `conc` against `alone`, reports of runs that
/// each contain (at least) one task of `conc` by itself (matched by job name; the first
/// match wins).
pub fn fios_figures(conc: &RunReport, alone: &[RunReport]) -> Result<FiosFigures, FiosMetricError> {
    if conc.jobs.is_empty() {
        return Err(FiosMetricError::NoTasks);
    }
    let mut tasks = Vec::with_capacity(conc.jobs.len());
    for j in &conc.jobs {
        let a = alone
            .iter()
            .flat_map(|r| r.jobs.iter())
            .find(|a| a.jobname == j.jobname)
            .ok_or_else(|| FiosMetricError::NoAloneRun(j.jobname.clone()))?;
        let (conc_lat, conc_iops, nc) = lat_and_iops(j);
        let (alone_lat, alone_iops, na) = lat_and_iops(a);
        if na == 0 || alone_lat <= 0.0 {
            return Err(FiosMetricError::NoIo {
                task: j.jobname.clone(),
                run: "alone",
            });
        }
        if nc == 0 {
            return Err(FiosMetricError::NoIo {
                task: j.jobname.clone(),
                run: "concurrent",
            });
        }
        tasks.push(TaskFigures {
            name: j.jobname.clone(),
            alone_lat_ns: alone_lat,
            conc_lat_ns: conc_lat,
            slowdown: conc_lat / alone_lat,
            alone_iops,
            conc_iops,
            reads_only: j.write.total_ios == 0 && j.sync.total_ios == 0,
        });
    }
    let concurrent_efficiency = tasks
        .iter()
        .map(|t| {
            if t.alone_iops > 0.0 {
                t.conc_iops / t.alone_iops
            } else {
                0.0
            }
        })
        .sum();
    Ok(FiosFigures {
        proportional: tasks.len() as f64,
        tasks,
        concurrent_efficiency,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Collector, FlowInfo, IoClass, JobInfo, Op, RunSetup, Sample};

    const MS: u64 = 1_000_000;

    /// A run of the named jobs; job `i` does `ios[i]` I/Os of `lat[i]` ns each (reads
    /// when `reads[i]`), spread over 1 s.
    fn run(names: &[&str], reads: &[bool], ios: &[u64], lat: &[u64]) -> RunReport {
        let mut c = Collector::new(RunSetup {
            jobs: names
                .iter()
                .enumerate()
                .map(|(i, n)| JobInfo {
                    name: n.to_string(),
                    flow: i,
                    class: IoClass::Normal,
                    threads: 1,
                    options: Vec::new(),
                    group: 0,
                    group_reporting: false,
                    continue_on: Default::default(),
                    latency: crate::LatencyTarget::default(),
                })
                .collect(),
            flows: names
                .iter()
                .map(|n| FlowInfo {
                    name: n.to_string(),
                    weight: 1,
                    latency_only: false,
                })
                .collect(),
            interval_ns: 100 * MS,
            global_options: Vec::new(),
        });
        for (j, &n) in ios.iter().enumerate() {
            for k in 0..n {
                let reaped = 10 * MS + k * (1000 * MS / n);
                let submit = reaped - lat[j];
                c.record(&Sample {
                    job: j,
                    thread: 0,
                    op: if reads[j] { Op::Read } else { Op::Write },
                    class: IoClass::Normal,
                    bytes: 4096,
                    submit_ns: submit,
                    admit_ns: submit,
                    dispatch_ns: submit,
                    device_done_ns: reaped,
                    reaped_ns: reaped,
                    ok: true,
                });
            }
        }
        c.finish(1010 * MS, "test")
    }

    #[test]
    fn slowdown_and_efficiency() {
        // Alone: reader 1000 IOPS at 100 µs, writer 100 IOPS at 1 ms.
        let ra = run(&["r"], &[true], &[1000], &[100_000]);
        let wa = run(&["w"], &[false], &[100], &[1_000_000]);
        // Together: reader 500 IOPS at 200 µs (2×), writer 25 IOPS at 4 ms (4×).
        let c = run(
            &["r", "w"],
            &[true, false],
            &[500, 25],
            &[200_000, 4_000_000],
        );
        let f = fios_figures(&c, &[ra, wa]).unwrap();
        assert_eq!(f.proportional, 2.0);
        assert!((f.tasks[0].slowdown - 2.0).abs() < 1e-9);
        assert!((f.tasks[1].slowdown - 4.0).abs() < 1e-9);
        assert!(f.tasks[0].reads_only && !f.tasks[1].reads_only);
        // Eq. 2: 500/1000 + 25/100 = 0.75 (IOPS over nearly the same window).
        assert!((f.concurrent_efficiency - 0.75).abs() < 0.01, "{f:?}");
        assert!((f.worst_ratio() - 2.0).abs() < 1e-9);
        assert!((f.worst_reader_ratio() - 1.0).abs() < 1e-9);
        assert!((f.mean_reader_slowdown() - 2.0).abs() < 1e-9);
    }

    #[test]
    fn missing_alone_run_or_io_is_an_error() {
        let c = run(&["r", "w"], &[true, false], &[10, 10], &[1000, 1000]);
        let ra = run(&["r"], &[true], &[10], &[1000]);
        assert_eq!(
            fios_figures(&c, std::slice::from_ref(&ra)).unwrap_err(),
            FiosMetricError::NoAloneRun("w".into())
        );
        let wa = run(&["w"], &[false], &[0], &[1000]);
        assert!(matches!(
            fios_figures(&c, &[ra, wa]),
            Err(FiosMetricError::NoIo { run: "alone", .. })
        ));
        let empty = run(&[], &[], &[], &[]);
        assert_eq!(
            fios_figures(&empty, &[]).unwrap_err(),
            FiosMetricError::NoTasks
        );
    }
}
