//! # sluice-calibrate
//!
//! `sluice calibrate`: measure a real device through the engine, derive a simulated
//! device profile ([`sluice_device::DeviceProfile`]) from it and check the simulator
//! against the device ([`validate`]) — what Seastar's iotune does, without its known
//! faults. The crate sits above the engine, the simulator and the device model.
//!
//! * **Steady state, not the first burst.** Every point is measured in consecutive
//!   windows after a warm-up (excluded); it ends when the last `agree` windows' IOPS
//!   agree within `tolerance`, or at a time cap (then it is reported as not steady,
//!   with the spread of its last windows).
//! * **The minimum efficient I/O size is measured**, not read from sysfs: IOPS of
//!   requests from the file's alignment up to 4 KiB at the knee queue depth.
//! * **Mixed read/write points** (70/30 and 50/50 by default) are part of the grid.
//!
//! The grid ([`Plan`]): a queue-depth sweep of 4 KiB random reads and writes
//! (1 … 64); the knee queue depth of each ([`analysis::knee_qd`]); small sizes and a
//! size sweep (4 KiB … 128 KiB) at that knee; a QD1 size sweep for the FIOS cost model
//! ([`analysis::linear_fit`]); mixed points at QD1 and at the knee. [`Summary`] derives
//! the figures and [`model::derive`] the profile. Every point runs the engine with
//! policy `none` and one worker on one file: a temporary file that sluice creates (and
//! removes), or an existing file or device under `sluice run`'s safety rules (the
//! engine's own checks: `--allow-write-existing`, `--allow-device`).

#![warn(missing_docs, missing_debug_implementations)]

pub mod analysis;
pub mod model;
mod summary;
mod target;
pub mod validate;

pub use summary::{DirSummary, Summary};
pub use target::Target;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use analysis::{agreeing_tail, linear_fit, median, spread, LinearFit};
use sluice_core::policy::PolicySpec;
use sluice_core::Nanos;
use sluice_engine::{EngineConfig, EngineError, FileSet};
use sluice_metrics::RunReport;
use sluice_workload::{BlockSizes, JobSpec, RwMode};

/// Why a calibration could not run or finish.
#[derive(Debug, thiserror::Error)]
pub enum CalibrateError {
    /// The engine refused the target or failed.
    #[error("{0}")]
    Engine(#[from] EngineError),
    /// The simulator refused a validation run.
    #[error("calibrate: simulator: {0}")]
    Sim(#[from] sluice_sim::SimError),
    /// The derived profile does not validate (a bug of the derivation).
    #[error("calibrate: derived profile: {0}")]
    Profile(#[from] sluice_device::ProfileError),
    /// Bad input: what is wrong and how to fix it.
    #[error("calibrate: {0}")]
    BadInput(String),
    /// The kernel reported I/O errors during a measurement.
    #[error("calibrate: {job}: {count} I/O error(s) while measuring; first: {first}")]
    IoErrors {
        /// The point being measured.
        job: String,
        /// Errors counted.
        count: u64,
        /// The first error's description.
        first: String,
    },
    /// A measurement completed no I/O.
    #[error("calibrate: {0}: no I/O completed in the measurement window; the device may be stalled or the window too short")]
    NoIo(String),
    /// Stopped by Ctrl-C.
    #[error("calibrate: interrupted")]
    Interrupted,
}

impl CalibrateError {
    /// Exit status: 2 for bad input, 130 when interrupted, 1 for failures.
    pub fn exit_code(&self) -> u8 {
        match self {
            CalibrateError::Engine(e) => e.exit_code(),
            CalibrateError::BadInput(_) => 2,
            CalibrateError::Interrupted => 130,
            _ => 1,
        }
    }
}

/// What to measure and for how long.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Queue depths of the 4 KiB sweeps.
    pub qds: Vec<u32>,
    /// Request sizes of the size sweeps (4 KiB and up), bytes.
    pub sizes: Vec<u32>,
    /// Sizes below 4 KiB for the minimum efficient size (those below the file's
    /// alignment are skipped), bytes.
    pub small_sizes: Vec<u32>,
    /// Read percentages of the mixed points (each at QD1 and at the knee, 4 KiB).
    pub mixes: Vec<u8>,
    /// Bytes of the region measured (the temporary file's size).
    pub size_bytes: u64,
    /// Warm-up before a point's first window (excluded), ns.
    pub warmup_ns: Nanos,
    /// One measurement window, ns.
    pub window_ns: Nanos,
    /// Most time for one point, warm-up included, ns.
    pub cap_ns: Nanos,
    /// Windows that must agree.
    pub agree: usize,
    /// Largest `(max − min) / mean` of the agreeing windows' IOPS.
    pub tolerance: f64,
    /// Length of each validation job, ns (after its warm-up).
    pub validate_ns: Nanos,
    /// Real runs of each validation job (the median is compared).
    pub validate_rounds: usize,
}

impl Plan {
    /// The full grid: QD 1…64, 4 KiB…128 KiB, 512 B…2 KiB, mixes 70/30 and 50/50;
    /// 0.5 s warm-up, 0.25 s windows, 3 agreeing within 5 %, at most 4 s per point;
    /// 1 GiB; validation jobs of 3 s, three rounds.
    pub fn full() -> Plan {
        Plan {
            qds: vec![1, 2, 4, 8, 16, 32, 64],
            sizes: vec![4096, 8192, 16384, 32768, 65536, 131072],
            small_sizes: vec![512, 1024, 2048],
            mixes: vec![70, 50],
            size_bytes: 1 << 30,
            warmup_ns: 500_000_000,
            window_ns: 250_000_000,
            cap_ns: 4_000_000_000,
            agree: 3,
            tolerance: 0.05,
            validate_ns: 3_000_000_000,
            validate_rounds: 3,
        }
    }

    /// A short grid for tests and a first look (seconds): QD 1, 4, 16; 4, 16, 64 KiB;
    /// 2 KiB; one 70/30 mix; 64 MiB; 40 ms windows, 2 agreeing within 10 %.
    pub fn quick() -> Plan {
        Plan {
            qds: vec![1, 4, 16],
            sizes: vec![4096, 16384, 65536],
            small_sizes: vec![2048],
            mixes: vec![70],
            size_bytes: 64 << 20,
            warmup_ns: 30_000_000,
            window_ns: 40_000_000,
            cap_ns: 200_000_000,
            agree: 2,
            tolerance: 0.10,
            validate_ns: 300_000_000,
            validate_rounds: 1,
        }
    }

    /// Points the grid measures on a file of alignment `align`.
    pub fn point_count(&self, align: u32) -> usize {
        let small = self
            .small_sizes
            .iter()
            .filter(|&&s| s >= align && s.is_multiple_of(align))
            .count();
        let big = self.sizes.iter().filter(|&&s| s != 4096).count();
        2 * self.qds.len() + 2 * small + 2 * big + 2 * big + 2 * self.mixes.len()
    }

    /// Check the plan; the message says what to fix.
    pub fn check(&self) -> Result<(), CalibrateError> {
        let bad = |m: String| Err(CalibrateError::BadInput(m));
        if self.qds.is_empty() || self.qds.contains(&0) {
            return bad("the queue depths must be positive and at least one".into());
        }
        if !self.qds.contains(&1) {
            return bad("the queue-depth sweep must include QD1 (the latency anchors)".into());
        }
        if !self.sizes.contains(&4096) {
            return bad("the size sweep must include 4 KiB (the IOPS anchors)".into());
        }
        if self.sizes.iter().chain(&self.small_sizes).any(|&s| s == 0) {
            return bad("request sizes must be positive".into());
        }
        if self.size_bytes < (16 << 20) {
            return bad(format!(
                "--size {} is too small: give at least 16m, so that random offsets spread over the device",
                self.size_bytes
            ));
        }
        if self.window_ns == 0 || self.agree == 0 {
            return bad("the window and the count of agreeing windows must be positive".into());
        }
        Ok(())
    }
}

/// One point of the grid: a mix, a request size, a queue depth.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PointSpec {
    /// Percent of reads: 100 = random reads, 0 = random writes, else mixed.
    pub read_pct: u8,
    /// Request size, bytes.
    pub bs: u32,
    /// Queue depth.
    pub qd: u32,
}

impl PointSpec {
    /// `randread`, `randwrite` or `randrw 70/30`.
    pub fn mix_name(&self) -> String {
        match self.read_pct {
            100 => "randread".into(),
            0 => "randwrite".into(),
            r => format!("randrw {r}/{}", 100 - r),
        }
    }

    /// A short label, e.g. `randread 4k qd8`.
    pub fn label(&self) -> String {
        format!("{} {} qd{}", self.mix_name(), show_bs(self.bs), self.qd)
    }

    /// The engine's job of this point on `filename` (region `size_bytes`), time based,
    /// built as a value (what a fio section `rw=… bs=… iodepth=… time_based` gives).
    pub fn job(
        &self,
        filename: &str,
        size_bytes: u64,
        runtime_ns: Nanos,
        ramp_ns: Nanos,
        seed: u64,
    ) -> Result<JobSpec, CalibrateError> {
        let (rw, rwmixread) = match self.read_pct {
            100 => (RwMode::RandRead, 50),
            0 => (RwMode::RandWrite, 50),
            r => (RwMode::RandRw, r),
        };
        // Whole microseconds, as a job file gives them.
        let us = |ns: Nanos| ns / 1000 * 1000;
        Ok(JobSpec {
            name: "cal".into(),
            flow: "cal".into(),
            rw,
            rwmixread,
            bs: BlockSizes::fixed(self.bs),
            size: size_bytes,
            iodepth: self.qd,
            runtime_ns: Some(us(runtime_ns).max(1000)),
            ramp_ns: us(ramp_ns),
            time_based: true,
            randseed: Some(seed),
            filename: Some(filename.to_string()),
            ..JobSpec::default()
        })
    }
}

fn show_bs(bs: u32) -> String {
    if bs >= 1024 && bs.is_multiple_of(1024) {
        format!("{}k", bs / 1024)
    } else {
        format!("{bs}")
    }
}

/// Which part of the grid a point belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    /// 4 KiB, queue depth 1…64.
    QdSweep,
    /// Below 4 KiB at the knee (minimum efficient size).
    SmallSize,
    /// 8 KiB…128 KiB at the knee.
    SizeSweep,
    /// 8 KiB…128 KiB at QD1 (cost model).
    Qd1Size,
    /// Mixed reads and writes.
    Mixed,
}

impl Role {
    /// Name in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Role::QdSweep => "qd-sweep",
            Role::SmallSize => "small-size",
            Role::SizeSweep => "size-sweep",
            Role::Qd1Size => "qd1-size",
            Role::Mixed => "mixed",
        }
    }
}

/// One measurement window's figures (all I/Os of the window, reads and writes).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Window {
    /// I/Os per second.
    pub iops: f64,
    /// Bytes per second.
    pub bw_bytes: f64,
    /// Mean latency, ns.
    pub lat_mean_ns: f64,
    /// Median latency, ns.
    pub lat_p50_ns: f64,
    /// 99th percentile latency, ns.
    pub lat_p99_ns: f64,
    /// Mean read latency, ns (0 without reads).
    pub read_lat_mean_ns: f64,
    /// Mean write latency, ns (0 without writes).
    pub write_lat_mean_ns: f64,
    /// Reads completed.
    pub reads: u64,
    /// Writes completed.
    pub writes: u64,
}

impl Window {
    /// The figures of a one-job report.
    pub fn from_report(r: &RunReport) -> Window {
        let (mut iops, mut bw, mut reads, mut writes) = (0.0, 0.0, 0, 0);
        let (mut rl, mut wl) = (0.0, 0.0);
        for j in &r.jobs {
            iops += j.read.iops + j.write.iops;
            bw += (j.read.bw_bytes + j.write.bw_bytes) as f64;
            reads += j.read.total_ios;
            writes += j.write.total_ios;
            rl = j.read.clat_ns.mean;
            wl = j.write.clat_ns.mean;
        }
        let class = r.classes.iter().find(|c| c.ios > 0);
        let pct = |p: f64| class.and_then(|c| c.clat_ns.percentile.get(p)).unwrap_or(0) as f64;
        Window {
            iops,
            bw_bytes: bw,
            lat_mean_ns: class.map_or(0.0, |c| c.clat_ns.mean),
            lat_p50_ns: pct(50.0),
            lat_p99_ns: pct(99.0),
            read_lat_mean_ns: rl,
            write_lat_mean_ns: wl,
            reads,
            writes,
        }
    }
}

/// A measured point: the figures over its agreeing (last `agree`) windows.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    /// What was measured.
    pub spec: PointSpec,
    /// Where it belongs in the grid.
    pub role: Role,
    /// Mean IOPS of the agreeing windows.
    pub iops: f64,
    /// Mean bandwidth of the agreeing windows, bytes/s.
    pub bw_bytes: f64,
    /// Mean latency (I/O-weighted over the agreeing windows), ns.
    pub lat_mean_ns: f64,
    /// Median of the windows' medians, ns.
    pub lat_p50_ns: f64,
    /// Median of the windows' 99th percentiles, ns.
    pub lat_p99_ns: f64,
    /// Mean read latency, ns (0 without reads).
    pub read_lat_mean_ns: f64,
    /// Mean write latency, ns (0 without writes).
    pub write_lat_mean_ns: f64,
    /// IOPS of every window, in order (the warm-up excluded).
    pub window_iops: Vec<f64>,
    /// Whether the agreeing windows agreed within the tolerance.
    pub steady: bool,
    /// `(max − min) / mean` of the agreeing windows' IOPS.
    pub spread: f64,
    /// Wall time spent on the point, ns.
    pub wall_ns: Nanos,
}

/// Aggregate the last `agree` windows into a point's figures.
pub fn aggregate(
    spec: PointSpec,
    role: Role,
    windows: &[Window],
    agree: usize,
    tolerance: f64,
    wall_ns: Nanos,
) -> Point {
    let iops_all: Vec<f64> = windows.iter().map(|w| w.iops).collect();
    let k = agree.max(1).min(windows.len());
    let tail = &windows[windows.len() - k..];
    let n = tail.len().max(1) as f64;
    let weighted = |f: &dyn Fn(&Window) -> (f64, u64)| {
        let (mut s, mut c) = (0.0, 0u64);
        for w in tail {
            let (v, ios) = f(w);
            s += v * ios as f64;
            c += ios;
        }
        if c == 0 {
            0.0
        } else {
            s / c as f64
        }
    };
    Point {
        spec,
        role,
        iops: tail.iter().map(|w| w.iops).sum::<f64>() / n,
        bw_bytes: tail.iter().map(|w| w.bw_bytes).sum::<f64>() / n,
        lat_mean_ns: weighted(&|w| (w.lat_mean_ns, w.reads + w.writes)),
        lat_p50_ns: median(&tail.iter().map(|w| w.lat_p50_ns).collect::<Vec<_>>()).unwrap_or(0.0),
        lat_p99_ns: median(&tail.iter().map(|w| w.lat_p99_ns).collect::<Vec<_>>()).unwrap_or(0.0),
        read_lat_mean_ns: weighted(&|w| (w.read_lat_mean_ns, w.reads)),
        write_lat_mean_ns: weighted(&|w| (w.write_lat_mean_ns, w.writes)),
        steady: agreeing_tail(&iops_all, agree, tolerance),
        spread: spread(&iops_all, agree).unwrap_or(f64::INFINITY),
        window_iops: iops_all,
        wall_ns,
    }
}

/// What [`measure`] reports as it goes.
#[derive(Debug)]
pub enum Progress<'a> {
    /// Point `index` (of `total`) starts.
    Start {
        /// 0-based.
        index: usize,
        /// Points in the grid.
        total: usize,
        /// The point.
        spec: PointSpec,
    },
    /// Point `index` is measured.
    Done {
        /// 0-based.
        index: usize,
        /// Points in the grid.
        total: usize,
        /// The result.
        point: &'a Point,
    },
}

/// Measure one point: a warm-up, then windows until the last `plan.agree` agree within
/// `plan.tolerance` or `plan.cap_ns` has passed.
pub fn measure_point(
    target: &Target,
    plan: &Plan,
    spec: PointSpec,
    role: Role,
    seed: u64,
    stop: &AtomicBool,
) -> Result<Point, CalibrateError> {
    let started = Instant::now();
    let mut windows: Vec<Window> = Vec::new();
    loop {
        let first = windows.is_empty();
        let ramp = if first { plan.warmup_ns } else { 0 };
        // A new seed per window: the window reads other blocks than the last one.
        let job = target.job(
            &spec,
            plan.window_ns,
            ramp,
            seed.wrapping_add(windows.len() as u64),
        )?;
        let report = target.run_once(job, stop)?;
        windows.push(Window::from_report(&report));
        let iops: Vec<f64> = windows.iter().map(|w| w.iops).collect();
        if agreeing_tail(&iops, plan.agree, plan.tolerance) {
            break;
        }
        let elapsed = started.elapsed().as_nanos() as Nanos;
        if elapsed + plan.window_ns > plan.cap_ns {
            break;
        }
    }
    Ok(aggregate(
        spec,
        role,
        &windows,
        plan.agree,
        plan.tolerance,
        started.elapsed().as_nanos() as Nanos,
    ))
}

/// Measure the whole grid of `plan` on `target` (see the module doc for the order).
pub fn measure(
    target: &Target,
    plan: &Plan,
    seed: u64,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Vec<Point>, CalibrateError> {
    plan.check()?;
    let total = plan.point_count(target.align());
    let mut points: Vec<Point> = Vec::with_capacity(total);
    let mut run =
        |points: &mut Vec<Point>, spec: PointSpec, role: Role| -> Result<(), CalibrateError> {
            if stop.load(Ordering::Relaxed) {
                return Err(CalibrateError::Interrupted);
            }
            let index = points.len();
            progress(Progress::Start { index, total, spec });
            let s = seed
                .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                .wrapping_add((index as u64) << 16);
            let p = measure_point(target, plan, spec, role, s, stop)?;
            points.push(p);
            progress(Progress::Done {
                index,
                total,
                point: points.last().expect("just pushed"),
            });
            Ok(())
        };
    for read_pct in [100u8, 0] {
        for &qd in &plan.qds {
            run(
                &mut points,
                PointSpec {
                    read_pct,
                    bs: 4096,
                    qd,
                },
                Role::QdSweep,
            )?;
        }
    }
    let knee_r = knee_of(&points, 100);
    let knee_w = knee_of(&points, 0);
    for (read_pct, knee) in [(100u8, knee_r), (0, knee_w)] {
        for &bs in &plan.small_sizes {
            if bs >= target.align() && bs.is_multiple_of(target.align()) {
                run(
                    &mut points,
                    PointSpec {
                        read_pct,
                        bs,
                        qd: knee,
                    },
                    Role::SmallSize,
                )?;
            }
        }
        for &bs in plan.sizes.iter().filter(|&&s| s != 4096) {
            run(
                &mut points,
                PointSpec {
                    read_pct,
                    bs,
                    qd: knee,
                },
                Role::SizeSweep,
            )?;
        }
    }
    for read_pct in [100u8, 0] {
        for &bs in plan.sizes.iter().filter(|&&s| s != 4096) {
            run(
                &mut points,
                PointSpec {
                    read_pct,
                    bs,
                    qd: 1,
                },
                Role::Qd1Size,
            )?;
        }
    }
    for &read_pct in &plan.mixes {
        for qd in [1, knee_r] {
            run(
                &mut points,
                PointSpec {
                    read_pct,
                    bs: 4096,
                    qd,
                },
                Role::Mixed,
            )?;
        }
    }
    Ok(points)
}

fn knee_of(points: &[Point], read_pct: u8) -> u32 {
    let curve: Vec<(u32, f64)> = points
        .iter()
        .filter(|p| p.role == Role::QdSweep && p.spec.read_pct == read_pct)
        .map(|p| (p.spec.qd, p.iops))
        .collect();
    analysis::knee_qd(&curve).unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn win(iops: f64, lat: f64, p99: f64) -> Window {
        Window {
            iops,
            bw_bytes: iops * 4096.0,
            lat_mean_ns: lat,
            lat_p50_ns: lat,
            lat_p99_ns: p99,
            read_lat_mean_ns: lat,
            write_lat_mean_ns: 0.0,
            reads: iops as u64,
            writes: 0,
        }
    }

    #[test]
    fn aggregate_uses_the_agreeing_tail() {
        let spec = PointSpec {
            read_pct: 100,
            bs: 4096,
            qd: 8,
        };
        // A first burst, then three windows within 5 %.
        let w = [
            win(90_000.0, 50.0, 70.0),
            win(40_000.0, 200.0, 300.0),
            win(41_000.0, 195.0, 900.0),
            win(40_500.0, 198.0, 310.0),
        ];
        let p = aggregate(spec, Role::QdSweep, &w, 3, 0.05, 1);
        assert!(p.steady);
        assert!((p.iops - 40_500.0).abs() < 1e-9, "{}", p.iops);
        assert_eq!(p.lat_p99_ns, 310.0, "median of the tail's p99s");
        // Weighted by I/O count.
        let want = (200.0 * 40_000.0 + 195.0 * 41_000.0 + 198.0 * 40_500.0) / 121_500.0;
        assert!((p.lat_mean_ns - want).abs() < 1e-9);
        assert_eq!(p.window_iops.len(), 4);
        // Not steady: the tail disagrees.
        let q = aggregate(spec, Role::QdSweep, &w[..3], 3, 0.05, 1);
        assert!(!q.steady);
        assert!(q.spread > 0.5);
    }

    fn point(read_pct: u8, bs: u32, qd: u32, role: Role, iops: f64, lat: f64) -> Point {
        aggregate(
            PointSpec { read_pct, bs, qd },
            role,
            &[Window {
                bw_bytes: iops * bs as f64,
                ..win(iops, lat, lat)
            }],
            1,
            0.05,
            0,
        )
    }

    #[test]
    fn summary_of_a_synthetic_grid() {
        // Reads: 100 µs + 1 ns/B at QD1, capped at 50K IOPS and 1 GB/s.
        let mut pts = Vec::new();
        for (read_pct, l0, cap) in [(100u8, 100_000.0, 50_000.0), (0, 60_000.0, 40_000.0)] {
            let lat = |bs: u32| l0 - 4096.0 + bs as f64;
            for qd in [1u32, 2, 4, 8, 16, 32, 64] {
                let iops = (qd as f64 * 1e9 / lat(4096)).min(cap);
                pts.push(point(
                    read_pct,
                    4096,
                    qd,
                    Role::QdSweep,
                    iops,
                    qd as f64 * 1e9 / iops,
                ));
            }
            let knee = if read_pct == 100 { 8 } else { 4 };
            for bs in [8192u32, 16384, 32768, 65536, 131072] {
                let iops = (cap).min(1e9 / bs as f64);
                pts.push(point(read_pct, bs, knee, Role::SizeSweep, iops, 0.0));
                pts.push(point(
                    read_pct,
                    bs,
                    1,
                    Role::Qd1Size,
                    1e9 / lat(bs),
                    lat(bs),
                ));
            }
            // Small sizes: 2 KiB no faster than 4 KiB (half the bytes, same IOPS × 0.5).
            pts.push(point(read_pct, 2048, knee, Role::SmallSize, cap * 0.5, 0.0));
        }
        let s = Summary::of(&pts).unwrap();
        // 50K cap, 100 µs: QD4 = 40K (80 %), QD8 = 50K.
        assert_eq!(s.read.knee_qd, 8);
        assert_eq!(s.read.max_iops, 50_000.0);
        // 40K cap, 60 µs: QD2 = 33K (83 %), QD4 = 40K.
        assert_eq!(s.write.knee_qd, 4);
        // Bandwidth: 4K 205 MB/s, 8K 410, 16K 819, 32K+ 1 GB/s: knee 32K.
        assert_eq!(s.read.knee_size, Some(32768));
        assert!((s.read.max_bw_bytes - 1e9).abs() < 1.0);
        assert_eq!(s.read.min_efficient_size, Some(4096));
        let c = s.read.cost.unwrap();
        assert!(
            (c.slope - 1.0).abs() < 1e-9 && (c.offset - 95_904.0).abs() < 1e-6,
            "{c:?}"
        );
        assert_eq!(s.unsteady, 0);
        let a = s.anchors();
        assert_eq!(a.knee_qd, 8);
        assert!((a.write_lat_qd1_ns - 60_000.0).abs() < 1e-6);
    }

    #[test]
    fn jobs_and_plans() {
        let spec = PointSpec {
            read_pct: 70,
            bs: 16384,
            qd: 4,
        };
        let j = spec
            .job("/x/y z.dat", 1 << 30, 250_000_000, 500_000_000, 7)
            .unwrap();
        assert_eq!(j.filename.as_deref(), Some("/x/y z.dat"));
        assert_eq!(j.iodepth, 4);
        assert_eq!(j.rwmixread, 70);
        assert_eq!(j.runtime_ns, Some(250_000_000));
        assert_eq!(j.ramp_ns, 500_000_000);
        assert!(j.time_based);
        assert_eq!(spec.label(), "randrw 70/30 16k qd4");
        let full = Plan::full();
        full.check().unwrap();
        // 14 QD points, 3 small + 5 sizes at the knee and 5 at QD1 per direction, 4 mixed.
        assert_eq!(full.point_count(512), 14 + 6 + 10 + 10 + 4);
        assert_eq!(full.point_count(4096), 14 + 10 + 10 + 4);
        Plan::quick().check().unwrap();
        let mut bad = Plan::quick();
        bad.size_bytes = 1 << 20;
        assert!(matches!(bad.check(), Err(CalibrateError::BadInput(_))));
    }
}
