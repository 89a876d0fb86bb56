//! What the collector is told before a run: its jobs, flows and bandwidth interval.

#[allow(unused_imports)]
use super::*;

/// What the collector needs to know about a run before it starts.
#[derive(Clone, Debug, Default)]
pub struct RunSetup {
    /// The jobs, indexed by [`Sample::job`].
    pub jobs: Vec<JobInfo>,
    /// The flows, indexed by [`JobInfo::flow`].
    pub flows: Vec<FlowInfo>,
    /// Width of one bandwidth-over-time bin; 0 means 100 ms. [`RunSetup::interval_for`]
    /// picks one from the planned run length.
    pub interval_ns: Nanos,
    /// The `[global]` options as written (fio's `global options`).
    pub global_options: Vec<(String, String)>,
}

impl RunSetup {
    /// A bandwidth bin for a run of `duration_ns`: a 200th of it, clamped to 1 ms … 1 s.
    pub fn interval_for(duration_ns: Nanos) -> Nanos {
        (duration_ns / 200).clamp(1_000_000, 1_000_000_000)
    }

    /// The setup of a run of `jobs` whose flows are `flows` (job `j` in flow
    /// `job_flow[j]`, as [`sluice_workload::flows_of`] gives them). The bandwidth bin is
    /// `interval_ns`, or [`RunSetup::interval_for`] the longest job's expected length
    /// (start delay + ramp + runtime, 1 s for a job without a runtime).
    pub fn for_jobs(
        jobs: &[JobSpec],
        flows: &[Flow],
        job_flow: &[FlowId],
        interval_ns: Option<Nanos>,
    ) -> RunSetup {
        const NO_RUNTIME_NS: Nanos = 1_000_000_000;
        let expected_ns = jobs
            .iter()
            .map(|s| s.startdelay_ns + s.ramp_ns + s.runtime_ns.unwrap_or(NO_RUNTIME_NS))
            .max()
            .unwrap_or(NO_RUNTIME_NS);
        let groups = sluice_workload::report_groups(jobs);
        RunSetup {
            jobs: jobs
                .iter()
                .zip(job_flow)
                .zip(groups)
                .map(|((s, f), group)| JobInfo {
                    name: s.name.clone(),
                    flow: f.index(),
                    class: s.class,
                    threads: s.numjobs,
                    options: s.job_options.clone(),
                    group,
                    group_reporting: s.group_reporting,
                    continue_on: s.continue_on,
                    latency: crate::LatencyTarget {
                        latency_depth: s.iodepth,
                        latency_target: s.latency_target_ns.unwrap_or(0) / 1000,
                        latency_percentile: if s.latency_target_ns.is_some() {
                            s.latency_percentile
                        } else {
                            100.0
                        },
                        latency_window: s.latency_window_ns / 1000,
                    },
                })
                .collect(),
            flows: flows
                .iter()
                .map(|f| FlowInfo {
                    name: f.name.clone(),
                    weight: f.weight,
                    latency_only: jobs
                        .iter()
                        .zip(job_flow)
                        .filter(|(_, jf)| **jf == f.id)
                        .all(|(s, _)| s.class == IoClass::Critical),
                })
                .collect(),
            interval_ns: interval_ns.unwrap_or_else(|| RunSetup::interval_for(expected_ns)),
            global_options: jobs
                .first()
                .map(|j| j.global_options.clone())
                .unwrap_or_default(),
        }
    }
}

/// One job (one fio job section).
#[derive(Clone, Debug)]
pub struct JobInfo {
    /// The job's name (`jobname` in the report).
    pub name: String,
    /// Index of the job's flow in [`RunSetup::flows`].
    pub flow: usize,
    /// The job's I/O class.
    pub class: IoClass,
    /// How many threads (fio `numjobs`) issue the job's I/O; reported only.
    pub threads: u32,
    /// The job section's own options as written (fio's `job options`).
    pub options: Vec<(String, String)>,
    /// Its reporting group (fio's `groupid`: a new one at each `stonewall` or
    /// `new_group`, `sluice_workload::report_groups`; 0 for a run without groups).
    pub group: usize,
    /// fio's `group_reporting`: its threads are counted together, and the report
    /// puts them in one entry with the jobs of its group around it that have it too
    /// (see [`crate::RunReport::entries`]); without it each of its [`JobInfo::threads`]
    /// is an entry of its own.
    pub group_reporting: bool,
    /// The errors its threads go on after (fio's `continue_on_error`): decides which
    /// errors are counted as continued (`total_err`) and which end a thread (`error`).
    pub continue_on: sluice_workload::ContinueOn,
    /// Its latency-target figures as the job file gives them (the depth its
    /// `iodepth`; [`Collector::set_latency_depth`] gives the one a search settled on).
    pub latency: crate::LatencyTarget,
}

/// One flow (tenant).
#[derive(Clone, Debug)]
pub struct FlowInfo {
    /// The flow's name.
    pub name: String,
    /// Its proportional-share weight (at least 1; 0 is treated as 1).
    pub weight: u32,
    /// All its jobs are critical: it is served for latency, not for a bandwidth share,
    /// so it is left out of the weight shares and the fairness index (a critical reader
    /// beside bulk writers is not a fairness failure).
    pub latency_only: bool,
}
