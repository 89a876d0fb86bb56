//! [`Collector::finish`]: the counters of a run become its [`RunReport`].

use super::{Collector, JobAcc, LAT_BUCKETS, MAX_BINS};
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

        // One report per job section (its threads summed), and fio's entries.
        let sections: Vec<Vec<usize>> = (0..self.setup.jobs.len())
            .map(|j| self.units_of(j).collect())
            .collect();
        let job_end: Vec<Nanos> = self
            .job_done_ns
            .iter()
            .map(|d| d.unwrap_or(end_ns))
            .collect();
        let mut jobs: Vec<JobReport> = sections
            .iter()
            .map(|units| {
                let end = job_end[self.unit_job[units[0]]];
                self.report_of(units, |_| end)
            })
            .collect();
        let mut entries: Vec<JobReport> = self
            .entries()
            .iter()
            .map(|units| self.report_of(units, |u| self.units[u].done_ns.unwrap_or(end_ns)))
            .collect();
        set_bw_agg(&mut jobs);
        set_bw_agg(&mut entries);

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
        for (u, acc) in self.units.iter().enumerate() {
            if !acc.mixed {
                let class = self.setup.jobs[self.unit_job[u]].class;
                self.classes[class.index()].fold(acc);
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
                let lens: Vec<Nanos> = (0..self.setup.jobs.len())
                    .map(|j| job_end[j].saturating_sub(self.units[self.unit_base[j]].start_ns))
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
            entries,
            flows,
            classes,
            fairness,
            bw_series,
            extra: crate::Extra::default(),
        }
    }
}

/// fio's `bw_agg`: each report's part of all the reports' bandwidth, per direction.
fn set_bw_agg(jobs: &mut [JobReport]) {
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
        for j in jobs.iter_mut() {
            let r = sel(j, d);
            r.bw_agg = if all > 0 {
                r.bw_bytes as f64 * 100.0 / all as f64
            } else {
                0.0
            };
        }
    }
}

impl Collector {
    /// fio's report entries (`__show_run_stats`): the units in job and thread order,
    /// a unit joining the entry before it when its job has `group_reporting` and the
    /// unit before it is of the same group (fio's `groupid`); every other unit opens
    /// an entry of its own.
    fn entries(&self) -> Vec<Vec<usize>> {
        let mut out: Vec<Vec<usize>> = Vec::new();
        let mut last_group = None;
        for (u, &j) in self.unit_job.iter().enumerate() {
            let info = &self.setup.jobs[j];
            match out.last_mut() {
                Some(e) if info.group_reporting && last_group == Some(info.group) => e.push(u),
                _ => out.push(vec![u]),
            }
            last_group = Some(info.group);
        }
        out
    }

    /// The report of the units `units` (one job's, or one fio entry's), each unit's
    /// window ending at `end(unit)`: counts summed, histograms merged, runtime the
    /// longest of theirs (fio's `sum_thread_stats`); name, description, flow, class
    /// and group of the first unit's job; options and latency target of the last's.
    fn report_of(&self, units: &[usize], end: impl Fn(usize) -> Nanos) -> JobReport {
        let merged;
        let acc: &JobAcc = if let [one] = units {
            &self.units[*one]
        } else {
            let mut m = self.units[units[0]].clone();
            for &u in &units[1..] {
                m.merge(&self.units[u]);
            }
            merged = m;
            &merged
        };
        let runtime_ns = units
            .iter()
            .map(|&u| end(u).saturating_sub(self.units[u].start_ns))
            .max()
            .unwrap_or(0);
        let last_end = units.iter().map(|&u| end(u)).max().unwrap_or(0);
        let first_job = self.unit_job[units[0]];
        let last_job = self.unit_job[*units.last().expect("an entry has units")];
        let info = &self.setup.jobs[first_job];
        let last_info = &self.setup.jobs[last_job];
        let interval = self.interval_ns;
        // The bandwidth bins wholly inside the window (bin b spans origin + b·interval
        // onwards).
        let first = acc
            .start_ns
            .saturating_sub(self.origin_ns)
            .div_ceil(interval) as usize;
        let last = (last_end.saturating_sub(self.origin_ns) / interval) as usize;
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
            "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000",
        ];
        let threads = units
            .iter()
            .map(|&u| {
                let j = self.unit_job[u];
                if self.split[j] {
                    1
                } else {
                    self.setup.jobs[j].threads
                }
            })
            .sum();
        JobReport {
            jobname: info.name.clone(),
            error: acc.errors.error(info.continue_on.any()),
            eta: 0,
            elapsed: runtime_ns.div_ceil(1_000_000_000),
            desc: info
                .options
                .iter()
                .chain(&self.setup.global_options)
                .find(|(k, _)| k == "description")
                .map(|(_, v)| v.clone())
                .unwrap_or_default(),
            job_options: last_info.options.clone(),
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
            thread_error: acc.errors.fatal,
            total_err: info.continue_on.any().then_some(acc.errors.continued),
            first_error: info.continue_on.any().then_some(acc.errors.first_continued),
            latency: crate::LatencyTarget {
                latency_depth: acc.latency_depth.unwrap_or(last_info.latency.latency_depth),
                ..last_info.latency
            },
            group: info.group,
            flow: self.setup.flows[info.flow].name.clone(),
            class: info.class,
            threads,
            failed_ios: acc.errors.failed,
            runtime_ns,
            // fio keeps the steady state of the last member that has one.
            steadystate: units
                .iter()
                .rev()
                .find_map(|&u| self.steady.get(self.unit_job[u]).cloned().flatten()),
        }
    }
}
