//! The collector's accumulators: a group's latency breakdown, a direction's counts and
//! bandwidth, and the per-unit, per-flow and per-class sums [`super::Collector`] keeps.

use sluice_core::Nanos;

use crate::lat::Lat;
use crate::report::DirReport;

/// The total latency and its three parts, of one group of samples.
#[derive(Debug, Clone)]
pub(super) struct Breakdown {
    /// Total: reaped − submit (fio's `lat`).
    pub(super) lat: Lat,
    pub(super) sched: Lat,
    pub(super) device: Lat,
    pub(super) post: Lat,
}

impl Breakdown {
    pub(super) fn new(lat_hist: bool, parts_hist: bool) -> Breakdown {
        Breakdown {
            lat: Lat::new(lat_hist),
            sched: Lat::new(parts_hist),
            device: Lat::new(parts_hist),
            post: Lat::new(parts_hist),
        }
    }

    #[inline]
    pub(super) fn add(&mut self, lat: u64, sched: u64, device: u64, post: u64) {
        self.lat.add(lat);
        self.sched.add(sched);
        self.device.add(device);
        self.post.add(post);
    }

    /// Add `other`'s samples (the histograms this breakdown keeps).
    pub(super) fn merge(&mut self, other: &Breakdown) {
        self.lat.merge(&other.lat);
        self.sched.merge(&other.sched);
        self.device.merge(&other.device);
        self.post.merge(&other.post);
    }
}

#[derive(Debug, Clone)]
pub(super) struct Dir {
    pub(super) ios: u64,
    pub(super) bytes: u64,
    pub(super) lat: Breakdown,
    /// fio's completion latency: reaped − dispatch, with fio's json+ bins.
    pub(super) clat: Lat,
    /// `(bytes, I/Os)` per bandwidth bin (the flows' bins), for fio's `bw_min`, …
    pub(super) bins: super::bins::Bins,
}

/// fio's bandwidth and IOPS samples of one direction: one per bandwidth bin wholly
/// inside the job's window.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct BwStats {
    pub(crate) bw_min: u64,
    pub(crate) bw_max: u64,
    pub(crate) bw_mean: f64,
    pub(crate) bw_dev: f64,
    pub(crate) iops_min: u64,
    pub(crate) iops_max: u64,
    pub(crate) iops_mean: f64,
    pub(crate) iops_dev: f64,
    pub(crate) samples: u64,
}

/// Mean and sample standard deviation.
pub(super) fn mean_dev(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let dev = if v.len() > 1 {
        (v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1.0)).sqrt()
    } else {
        0.0
    };
    (mean, dev)
}

impl Dir {
    pub(super) fn new() -> Dir {
        Dir {
            ios: 0,
            bytes: 0,
            lat: Breakdown::new(true, true),
            clat: Lat::with_plat(),
            bins: super::bins::Bins::default(),
        }
    }

    /// Add `o`'s samples (another thread's of the same direction).
    pub(super) fn merge(&mut self, o: &Dir) {
        self.ios += o.ios;
        self.bytes += o.bytes;
        self.lat.merge(&o.lat);
        self.clat.merge(&o.clat);
        self.bins.merge(&o.bins);
    }

    /// The samples of bins `first..last` (each `interval_ns` wide).
    pub(super) fn bw_stats(&self, first: usize, last: usize, interval_ns: Nanos) -> BwStats {
        if first >= last {
            return BwStats::default();
        }
        let secs = interval_ns as f64 / 1e9;
        let (bw, iops): (Vec<f64>, Vec<f64>) = self
            .bins
            .dense(first, last)
            .into_iter()
            .map(|(bytes, ios)| (bytes as f64 / 1024.0 / secs, ios as f64 / secs))
            .unzip();
        let (bw_mean, bw_dev) = mean_dev(&bw);
        let (iops_mean, iops_dev) = mean_dev(&iops);
        let lo = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min).round() as u64;
        let hi = |v: &[f64]| v.iter().copied().fold(0.0, f64::max).round() as u64;
        BwStats {
            bw_min: lo(&bw),
            bw_max: hi(&bw),
            bw_mean,
            bw_dev,
            iops_min: lo(&iops),
            iops_max: hi(&iops),
            iops_mean,
            iops_dev,
            samples: bw.len() as u64,
        }
    }

    pub(super) fn report(&self, runtime_ns: u64, bw: BwStats) -> DirReport {
        let secs = runtime_ns as f64 / 1e9;
        let (bw_bytes, iops) = if runtime_ns > 0 {
            (self.bytes as f64 / secs, self.ios as f64 / secs)
        } else {
            (0.0, 0.0)
        };
        let mut slat = self.lat.sched.report();
        slat.percentile = Default::default();
        DirReport {
            io_bytes: self.bytes,
            io_kbytes: self.bytes / 1024,
            bw_bytes: bw_bytes.round() as u64,
            bw: (bw_bytes / 1024.0).round() as u64,
            iops,
            runtime: runtime_ns / 1_000_000,
            total_ios: self.ios,
            short_ios: 0,
            drop_ios: 0,
            slat_ns: slat,
            clat_ns: self.clat.report(),
            lat_ns: self.lat.lat.report(),
            bw_min: bw.bw_min,
            bw_max: bw.bw_max,
            // Filled in by `finish`, which sees every job.
            bw_agg: 0.0,
            bw_mean: bw.bw_mean,
            bw_dev: bw.bw_dev,
            bw_samples: bw.samples,
            iops_min: bw.iops_min,
            iops_max: bw.iops_max,
            iops_mean: bw.iops_mean,
            iops_stddev: bw.iops_dev,
            iops_samples: bw.samples,
            sched_ns: self.lat.sched.report(),
            device_ns: self.lat.device.report(),
            post_ns: self.lat.post.report(),
            lat_ccdf: self.lat.lat.ccdf(),
        }
    }
}

/// fio's latency buckets (`io_u_lat_n`, `_u`, `_m`): 10 below 1 µs, 10 below 1 ms, 12
/// from 1 ms on; see [`lat_bucket`].
pub(crate) const LAT_BUCKETS: usize = 32;

/// The bucket of a completion latency of `ns`, as fio's `io_u_mark_latency`: below
/// 1 µs by ns (< 2, 4, 10, 20, 50, 100, 250, 500, 750, 1000), below 1 ms the same by µs,
/// then by ms (< 2, 4, 10, 20, 50, 100, 250, 500, 750, 1000, 2000, and ≥ 2000).
#[inline]
pub(crate) fn lat_bucket(ns: u64) -> usize {
    const EDGES: [u64; 10] = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000];
    let (v, base) = if ns < 1_000 {
        (ns, 0)
    } else if ns < 1_000_000 {
        (ns / 1_000, 10)
    } else {
        let ms = ns / 1_000_000;
        if ms >= 2000 {
            return LAT_BUCKETS - 1;
        }
        if ms >= 1000 {
            return LAT_BUCKETS - 2;
        }
        (ms, 20)
    };
    base + EDGES.iter().position(|&e| v < e).unwrap_or(9)
}

#[derive(Debug, Clone)]
pub(super) struct JobAcc {
    /// Read, write, sync (flush), trim, indexed by [`dir_index`].
    pub(super) dirs: [Dir; 4],
    /// Admission wait of its samples while `mixed` is false.
    pub(super) admit: Lat,
    /// A sample of another class than the job's came: from then on the job's samples
    /// are recorded in their class's [`ClassAcc`] one by one (until then its class's
    /// figures are the job's, summed when needed).
    pub(super) mixed: bool,
    /// Failed I/Os and checks, as fio counts them ([`crate::errors::Errors`]).
    pub(super) errors: crate::errors::Errors,
    /// Completions per fio latency bucket ([`lat_bucket`]).
    pub(super) lat_buckets: [u64; LAT_BUCKETS],
    pub(super) start_ns: Nanos,
    pub(super) done_ns: Option<Nanos>,
    /// fio's depth maps ([`Collector::add_depths`]).
    pub(super) depths: crate::IoDepths,
    /// The depth a latency-target search settled on ([`Collector::set_latency_depth`]).
    pub(super) latency_depth: Option<u32>,
}

impl JobAcc {
    pub(super) fn new(start_ns: Nanos) -> JobAcc {
        JobAcc {
            dirs: [Dir::new(), Dir::new(), Dir::new(), Dir::new()],
            admit: Lat::new(true),
            mixed: false,
            errors: crate::errors::Errors::default(),
            lat_buckets: [0; LAT_BUCKETS],
            start_ns,
            done_ns: None,
            depths: crate::IoDepths::default(),
            latency_depth: None,
        }
    }

    /// Add `o`'s counts (another thread's, or another job's of the same report
    /// entry): sums, merged histograms, the earlier start, the later end.
    pub(super) fn merge(&mut self, o: &JobAcc) {
        for (a, b) in self.dirs.iter_mut().zip(&o.dirs) {
            a.merge(b);
        }
        self.admit.merge(&o.admit);
        self.mixed |= o.mixed;
        self.errors.merge(&o.errors);
        for (a, b) in self.lat_buckets.iter_mut().zip(&o.lat_buckets) {
            *a += b;
        }
        self.start_ns = self.start_ns.min(o.start_ns);
        self.done_ns = match (self.done_ns, o.done_ns) {
            (Some(a), Some(b)) => Some(a.max(b)),
            _ => None,
        };
        self.depths.add(&o.depths);
        self.latency_depth = match (self.latency_depth, o.latency_depth) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
    }
}

#[derive(Debug, Clone, Default)]
pub(super) struct FlowAcc {
    pub(super) ios: u64,
    pub(super) bytes: u64,
    /// Bytes completed per bandwidth bin, from the collector's origin.
    pub(super) bins: Vec<u64>,
}

#[derive(Debug, Clone)]
pub(super) struct ClassAcc {
    pub(super) ios: u64,
    pub(super) bytes: u64,
    pub(super) lat: Breakdown,
    /// Admission wait (admit − submit), with percentiles: RCP's isolation goal.
    pub(super) admit: Lat,
}

impl ClassAcc {
    pub(super) fn new() -> ClassAcc {
        ClassAcc {
            ios: 0,
            bytes: 0,
            lat: Breakdown::new(true, false),
            admit: Lat::new(true),
        }
    }

    /// Add the samples `job` holds (all of this class).
    pub(super) fn fold(&mut self, job: &JobAcc) {
        for d in &job.dirs {
            self.ios += d.ios;
            self.bytes += d.bytes;
            self.lat.merge(&d.lat);
        }
        self.admit.merge(&job.admit);
    }
}
