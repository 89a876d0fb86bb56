//! [`Collector::finish`]: the counters of a run become its [`RunReport`].

use super::{Collector, LAT_BUCKETS, MAX_BINS};
use crate::jain_index;
use crate::report::{
    BwSeries, ClassReport, DirReport, Fairness, FlowReport, FlowSeries, JobReport, LatBuckets,
    RunReport,
};
use sluice_core::{IoClass, Nanos};

impl Collector {
    /// Close the run at `end_ns` and build its report under the name `policy`.
    ///
    /// The run's `duration_ns` is `end_ns` minus the window start; a job's runtime runs
    /// from its own window start to [`Collector::job_done`] or `end_ns`. The report's
    /// `extra` map is empty, for the engine to fill.
    pub fn finish(mut self, end_ns: Nanos, policy: &str) -> RunReport {
        let duration_ns = end_ns.saturating_sub(self.origin_ns);
        let dur_s = duration_ns as f64 / 1e9;
        let per_s = |v: u64| {
            if duration_ns > 0 {
                v as f64 / dur_s
            } else {
                0.0
            }
        };

        let interval = self.interval_ns;
        let mut jobs: Vec<JobReport> = self
            .setup
            .jobs
            .iter()
            .zip(&self.jobs)
            .enumerate()
            .map(|(ji, (info, acc))| {
                let end = acc.done_ns.unwrap_or(end_ns);
                let runtime_ns = end.saturating_sub(acc.start_ns);
                // The bandwidth bins wholly inside the job's window (bin b spans
                // origin + b·interval onwards).
                let first = acc
                    .start_ns
                    .saturating_sub(self.origin_ns)
                    .div_ceil(interval) as usize;
                let last = (end.saturating_sub(self.origin_ns) / interval) as usize;
                let dir = |d: usize| {
                    let a = &acc.dirs[d];
                    a.report(runtime_ns, a.bw_stats(first, last, interval))
                };
                let total: u64 = acc.lat_buckets.iter().sum();
                let pct = |r: std::ops::Range<usize>, names: &[&'static str]| {
                    LatBuckets::percent(names, &acc.lat_buckets[r], total)
                };
                const TEN: [&str; 10] = [
                    "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000",
                ];
                const MS: [&str; 12] = [
                    "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000",
                    ">=2000",
                ];
                JobReport {
                    jobname: info.name.clone(),
                    error: acc.errors,
                    eta: 0,
                    elapsed: runtime_ns.div_ceil(1_000_000_000),
                    desc: info
                        .options
                        .iter()
                        .chain(&self.setup.global_options)
                        .find(|(k, _)| k == "description")
                        .map(|(_, v)| v.clone())
                        .unwrap_or_default(),
                    job_options: info.options.clone(),
                    read: dir(0),
                    write: dir(1),
                    // A job without trims keeps fio's empty section.
                    trim: if acc.dirs[3].ios > 0 {
                        dir(3)
                    } else {
                        DirReport::default()
                    },
                    sync: dir(2),
                    job_runtime: runtime_ns / 1_000_000,
                    usr_cpu: 0.0,
                    sys_cpu: 0.0,
                    ctx: 0,
                    majf: 0,
                    minf: 0,
                    iodepth_level: acc.depths.level_pct(),
                    iodepth_submit: acc.depths.submit_pct(),
                    iodepth_complete: acc.depths.complete_pct(),
                    latency_ns: pct(0..10, &TEN),
                    latency_us: pct(10..20, &TEN),
                    latency_ms: pct(20..LAT_BUCKETS, &MS),
                    latency: crate::LatencyTarget {
                        latency_depth: acc.latency_depth.unwrap_or(info.latency.latency_depth),
                        ..info.latency
                    },
                    group: info.group,
                    flow: self.setup.flows[info.flow].name.clone(),
                    class: info.class,
                    threads: info.threads,
                    runtime_ns,
                    steadystate: self.steady.get(ji).cloned().flatten(),
                }
            })
            .collect();
        // fio's `bw_agg`: each job's part of all the jobs' bandwidth, per direction.
        for d in 0..4 {
            fn sel(j: &mut JobReport, d: usize) -> &mut DirReport {
                match d {
                    0 => &mut j.read,
                    1 => &mut j.write,
                    2 => &mut j.sync,
                    _ => &mut j.trim,
                }
            }
            let all: u64 = jobs.iter_mut().map(|j| sel(j, d).bw_bytes).sum();
            for j in &mut jobs {
                let r = sel(j, d);
                r.bw_agg = if all > 0 {
                    r.bw_bytes as f64 * 100.0 / all as f64
                } else {
                    0.0
                };
            }
        }

        // Shares and fairness count the active flows that take part in proportional
        // sharing (not the latency-only ones).
        let sharing = |i: usize| self.flows[i].ios > 0 && !self.setup.flows[i].latency_only;
        let all_bytes: u64 = self.flows.iter().map(|f| f.bytes).sum();
        let sharing_bytes: u64 = (0..self.flows.len())
            .filter(|&i| sharing(i))
            .map(|i| self.flows[i].bytes)
            .sum();
        let weight = |i: usize| self.setup.flows[i].weight.max(1) as f64;
        let active_weight: f64 = (0..self.flows.len())
            .filter(|&i| sharing(i))
            .map(weight)
            .sum();
        let flows: Vec<FlowReport> = self
            .setup
            .flows
            .iter()
            .zip(&self.flows)
            .enumerate()
            .map(|(i, (info, acc))| {
                let active = acc.ios > 0;
                let shares = sharing(i);
                let share = if shares && sharing_bytes > 0 {
                    acc.bytes as f64 / sharing_bytes as f64
                } else {
                    0.0
                };
                let bytes_fraction = if all_bytes > 0 {
                    acc.bytes as f64 / all_bytes as f64
                } else {
                    0.0
                };
                let weight_share = if shares {
                    weight(i) / active_weight
                } else {
                    0.0
                };
                let share_error = if shares {
                    share / weight_share - 1.0
                } else {
                    0.0
                };
                FlowReport {
                    name: info.name.clone(),
                    weight: info.weight,
                    active,
                    latency_only: info.latency_only,
                    ios: acc.ios,
                    io_bytes: acc.bytes,
                    iops: per_s(acc.ios),
                    bw_bytes: per_s(acc.bytes).round() as u64,
                    share,
                    bytes_fraction,
                    weight_share,
                    share_error,
                }
            })
            .collect();

        let normalized: Vec<f64> = (0..self.flows.len())
            .filter(|&i| sharing(i))
            .map(|i| per_s(self.flows[i].bytes) / weight(i))
            .collect();
        let fairness = Fairness {
            jain_index: jain_index(&normalized),
            active_flows: normalized.len(),
            max_abs_share_error: flows
                .iter()
                .filter(|f| f.active && !f.latency_only)
                .map(|f| f.share_error.abs())
                .fold(0.0, f64::max),
        };

        // Each class's figures: those of its jobs that saw no other class, and the
        // samples recorded one by one.
        for (info, acc) in self.setup.jobs.iter().zip(&self.jobs) {
            if !acc.mixed {
                self.classes[info.class.index()].fold(acc);
            }
        }
        let used: Vec<bool> = IoClass::ALL
            .iter()
            .map(|c| {
                self.classes[c.index()].ios > 0 || self.setup.jobs.iter().any(|j| j.class == *c)
            })
            .collect();
        let classes = IoClass::ALL
            .iter()
            .filter(|c| used[c.index()])
            .map(|&c| {
                let acc = &self.classes[c.index()];
                ClassReport {
                    class: c,
                    ios: acc.ios,
                    io_bytes: acc.bytes,
                    iops: per_s(acc.ios),
                    bw_bytes: per_s(acc.bytes).round() as u64,
                    lat_ns: acc.lat.lat.report(),
                    sched_ns: acc.lat.sched.report(),
                    device_ns: acc.lat.device.report(),
                    post_ns: acc.lat.post.report(),
                    admit_wait_ns: acc.admit.report(),
                    lat_ccdf: acc.lat.lat.ccdf(),
                }
            })
            .collect();

        while duration_ns.div_ceil(self.interval_ns) as usize > MAX_BINS {
            self.coarsen();
        }
        let interval = self.interval_ns;
        let nbins = (duration_ns.div_ceil(interval) as usize)
            .max(self.flows.iter().map(|f| f.bins.len()).max().unwrap_or(0));
        let bin_width = |b: usize| {
            let start = b as u64 * interval;
            let w = duration_ns.saturating_sub(start).min(interval);
            if w == 0 {
                interval
            } else {
                w
            }
        };
        let bw_series = BwSeries {
            interval_ns: interval,
            start_ns: self.origin_ns,
            flows: self
                .setup
                .flows
                .iter()
                .zip(&self.flows)
                .map(|(info, acc)| FlowSeries {
                    name: info.name.clone(),
                    bw_bytes: (0..nbins)
                        .map(|b| {
                            let bytes = acc.bins.get(b).copied().unwrap_or(0);
                            (bytes as f64 * 1e9 / bin_width(b) as f64).round() as u64
                        })
                        .collect(),
                })
                .collect(),
        };

        let logs = match self.logs.take() {
            Some(l) => {
                let lens: Vec<Nanos> = self
                    .jobs
                    .iter()
                    .map(|a| a.done_ns.unwrap_or(end_ns).saturating_sub(a.start_ns))
                    .collect();
                l.finish(&lens)
            }
            None => Vec::new(),
        };
        RunReport {
            logs,
            global_options: self.setup.global_options.clone(),
            started_unix_ms: 0,
            policy: policy.to_string(),
            duration_ns,
            jobs,
            flows,
            classes,
            fairness,
            bw_series,
            extra: crate::Extra::default(),
        }
    }
}
