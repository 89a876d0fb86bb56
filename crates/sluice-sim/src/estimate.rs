//! How much a simulation will do, before it runs.
//!
//! The simulated-time cap (one day) bounds a run's virtual time, not its wall time: at
//! about a million simulated I/Os per wall second, a job with `loops=4294967295` or a
//! `size` of an exabyte and no `runtime` would simulate for days. [`estimate`] bounds a
//! run's I/Os from the job file and the device alone — each job's size (`io_size` ×
//! `loops` over its mean block size, `number_ios`), its `runtime` at its rate caps or
//! at the device's nominal IOPS, and the cap — so the command can refuse a run that
//! would take hours before it starts, and say how to bound it.

use sluice_core::Nanos;
use sluice_device::DeviceProfile;
use sluice_workload::JobSpec;

/// Simulated I/Os per wall-clock second the estimate assumes: the low end of what the
/// simulator does on one core (1–1.5 M, `sluice sim` prints its rate after each run).
pub const SIM_IOS_PER_SEC: f64 = 1.0e6;

/// What a run will do, at most.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Work {
    /// Simulated I/Os, an upper estimate.
    pub ios: f64,
    /// Whether a job without a size bound or `runtime` ends only at the time cap.
    pub capped: bool,
}

impl Work {
    /// Wall-clock seconds at [`SIM_IOS_PER_SEC`].
    pub fn wall_secs(&self) -> f64 {
        self.ios / SIM_IOS_PER_SEC
    }
}

/// An upper estimate of the I/Os `jobs` simulate on `profile` within `cap_ns` of
/// simulated time: per thread the least of its size bound and its time bound (its
/// `runtime`, or the cap, at its rate cap or the device's nominal IOPS), summed, and
/// at most what the device does in the time the stonewall groups can take.
pub fn estimate(jobs: &[JobSpec], profile: &DeviceProfile, cap_ns: Nanos) -> Work {
    let n = &profile.nominal;
    let device_iops = n.read_iops.max(n.write_iops).max(1) as f64;
    let mut ios = 0.0;
    let mut capped = false;
    for j in jobs {
        let mean = match (j.rw.reads(), j.rw.writes(), j.rw.trims()) {
            (_, false, true) => j.bs.trim.mean_len(),
            // trimwrite: a trim and writes over each block (twice the bytes, as fio).
            (_, true, true) => j.bs.write.mean_len().min(j.bs.trim.mean_len()) / 2.0,
            (true, false, _) => j.bs.read.mean_len(),
            (false, true, _) => j.bs.write.mean_len(),
            _ => j.bs.read.mean_len().min(j.bs.write.mean_len()),
        }
        .max(1.0);
        let per_loop = j.io_size.unwrap_or(j.size) as f64 / mean;
        let mut by_size = if j.time_based {
            f64::INFINITY
        } else {
            per_loop * j.loops.max(1) as f64
        };
        if let Some(k) = j.number_ios {
            by_size = by_size.min(k as f64);
        }
        let secs = j.runtime_ns.unwrap_or(cap_ns).min(cap_ns) as f64 / 1e9;
        let rate = rate_iops(j, mean).unwrap_or(device_iops).min(device_iops);
        let by_time = secs * rate;
        if j.runtime_ns.is_none() && by_size > by_time {
            capped = true;
        }
        ios += by_size.min(by_time) * j.numjobs.max(1) as f64;
    }
    // The device does at most its nominal IOPS over the whole run.
    let ios = ios.min(device_iops * cap_ns as f64 / 1e9);
    Work { ios, capped }
}

/// A job thread's I/O-rate cap (`rate_iops`, or `rate` over the mean size), if any: a
/// value given once caps the total, per-direction values cap the directions the job
/// does.
fn rate_iops(j: &JobSpec, mean: f64) -> Option<f64> {
    let dirs = [j.rw.reads(), j.rw.writes()];
    let cap = |v: [Option<u64>; 2], total: bool| -> Option<f64> {
        if total {
            return v[0].or(v[1]).map(|x| x as f64);
        }
        let mut sum = None;
        for (d, on) in dirs.iter().enumerate() {
            match (v[d], on) {
                (Some(x), true) => *sum.get_or_insert(0.0) += x as f64,
                // A direction the job does without a cap: no cap on the thread.
                (None, true) => return None,
                _ => {}
            }
        }
        sum
    };
    let by_iops = cap(j.rate_iops, j.rate_iops_total);
    let by_bytes = cap(j.rate_bytes, j.rate_bytes_total).map(|b| b / mean);
    match (by_iops, by_bytes) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Why `running` jobs were still running when simulated time reached `cap_ns`, and what
/// to change — read from their options, most specific first: a `startdelay` or
/// `runtime` at or past the cap, a rate cap under which the job's size takes longer
/// than the cap, a think time, else a job too large or too slow for the device.
pub fn time_cap_cause(running: &[&JobSpec], cap_ns: Nanos) -> String {
    let secs = |ns: Nanos| ns as f64 / 1e9;
    for j in running {
        if j.startdelay_ns >= cap_ns {
            return format!(
                "job '{}' has startdelay= {:.0} s, past the cap; lower its startdelay=",
                j.name,
                secs(j.startdelay_ns)
            );
        }
    }
    for j in running {
        if let Some(rt) = j
            .runtime_ns
            .filter(|&rt| rt.saturating_add(j.ramp_ns) >= cap_ns)
        {
            return format!(
                "job '{}' has runtime= {:.0} s (with ramp_time= {:.0} s), at or past the cap; \
                 lower its runtime=",
                j.name,
                secs(rt),
                secs(j.ramp_ns)
            );
        }
    }
    for j in running {
        let mean = j.bs.read.mean_len().min(j.bs.write.mean_len()).max(1.0);
        if let Some(iops) = rate_iops(j, mean) {
            let need = j.io_size.unwrap_or(j.size) as f64 / mean * j.loops.max(1) as f64 / iops;
            if need * 1e9 >= cap_ns as f64 {
                return format!(
                    "job '{}' is held to {iops:.0} I/O/s by its rate cap (rate= or rate_iops=), \
                     so its size takes about {need:.0} s; raise the rate cap, lower its size or \
                     loops, or give it a runtime=",
                    j.name
                );
            }
        }
    }
    if let Some(j) = running.iter().find(|j| j.thinktime_ns > 0) {
        return format!(
            "job '{}' thinks {:.6} s between I/Os (thinktime=), too long for its size; lower \
             thinktime= or its size, or give it a runtime=",
            j.name,
            secs(j.thinktime_ns)
        );
    }
    "the job is too large or too slow for the device; lower its size or numjobs, or give it \
     a runtime="
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jobs(text: &str) -> Vec<JobSpec> {
        sluice_workload::parse_str(text, "t.fio", &Default::default())
            .unwrap()
            .jobs
    }

    fn ull() -> DeviceProfile {
        DeviceProfile::builtin("ull").unwrap()
    }

    const DAY: Nanos = 24 * 3600 * 1_000_000_000;

    #[test]
    fn a_sized_job_is_its_size_over_its_block_size() {
        let w = estimate(
            &jobs("[r]\nrw=randread\nbs=4k\nsize=1g\nnumjobs=2\n"),
            &ull(),
            DAY,
        );
        assert_eq!(w.ios, 2.0 * 262144.0);
        assert!(!w.capped);
    }

    #[test]
    fn a_timed_job_is_its_runtime_at_the_device_or_its_rate() {
        let p = ull();
        let dev = p.nominal.read_iops.max(p.nominal.write_iops) as f64;
        let w = estimate(&jobs("[r]\nrw=randread\ntime_based\nruntime=2\n"), &p, DAY);
        assert_eq!(w.ios, 2.0 * dev);
        let w = estimate(
            &jobs("[r]\nrw=randread\ntime_based\nruntime=2\nrate_iops=1000\n"),
            &p,
            DAY,
        );
        assert_eq!(w.ios, 2000.0);
    }

    #[test]
    fn endless_loops_run_to_the_cap() {
        let w = estimate(
            &jobs("[r]\nrw=randread\nbs=4k\nsize=1m\nloops=4294967295\n"),
            &ull(),
            DAY,
        );
        assert!(w.capped);
        assert!(w.wall_secs() > 3600.0, "{w:?}");
    }

    #[test]
    fn the_time_cap_names_its_cause() {
        let cause = |text: &str| {
            let js = jobs(text);
            let r: Vec<&JobSpec> = js.iter().collect();
            time_cap_cause(&r, DAY)
        };
        assert!(cause("[r]\nrw=read\nstartdelay=90000\n").contains("startdelay="));
        assert!(cause("[r]\nrw=read\ntime_based\nruntime=100000\n").contains("lower its runtime="));
        assert!(cause("[r]\nrw=read\nsize=1t\nrate_iops=1\n").contains("rate cap"));
        assert!(cause("[r]\nrw=read\nsize=1g\nthinktime=1000000\n").contains("thinktime="));
        let plain = cause("[r]\nrw=read\nsize=1t\n");
        assert!(plain.contains("too large or too slow"), "{plain}");
    }
}
