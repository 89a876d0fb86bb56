//! How the grid is measured: windows through the engine until they agree (steady
//! state), their aggregate into a point, and the grid's order (the knees found by the
//! queue-depth sweeps place the size sweeps; the sweeps are measured again at the end,
//! and the fits take both passes together: [`merge_repeats`]).

use crate::analysis::{self, agreeing_tail, median, spread};
use crate::{CalibrateError, Plan, PointSpec, Role, Target};
use sluice_core::Nanos;
use sluice_metrics::RunReport;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

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
            rl = j.read.lat_ns.mean;
            wl = j.write.lat_ns.mean;
        }
        let class = r.classes.iter().find(|c| c.ios > 0);
        let pct = |p: f64| class.and_then(|c| c.lat_ns.percentile.get(p)).unwrap_or(0) as f64;
        Window {
            iops,
            bw_bytes: bw,
            lat_mean_ns: class.map_or(0.0, |c| c.lat_ns.mean),
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
    /// 99th percentile of the agreeing windows' I/Os pooled, ns
    /// ([`analysis::pooled_quantile`]; `lat_p99_ns` when the windows' distributions are
    /// not known). What the tail fit ([`crate::simfit`]) matches: a 3 s validation run's
    /// p99 is one pooled figure too, and a window hit by a burst of slow I/Os is not
    /// outvoted by its neighbours.
    pub lat_p99_pooled_ns: f64,
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
        lat_p99_pooled_ns: median(&tail.iter().map(|w| w.lat_p99_ns).collect::<Vec<_>>())
            .unwrap_or(0.0),
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
    // Each window's I/O count and latency CCDF, for the pooled p99.
    let mut dists: Vec<(u64, Vec<(u64, f64)>)> = Vec::new();
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
        dists.push(
            report
                .classes
                .iter()
                .find(|c| c.ios > 0)
                .map_or((0, Vec::new()), |c| (c.ios, c.lat_ccdf.clone())),
        );
        let iops: Vec<f64> = windows.iter().map(|w| w.iops).collect();
        if agreeing_tail(&iops, plan.agree, plan.tolerance) {
            break;
        }
        let elapsed = started.elapsed().as_nanos() as Nanos;
        if elapsed + plan.window_ns > plan.cap_ns {
            break;
        }
    }
    let mut point = aggregate(
        spec,
        role,
        &windows,
        plan.agree,
        plan.tolerance,
        started.elapsed().as_nanos() as Nanos,
    );
    let k = plan.agree.max(1).min(dists.len());
    let last: Vec<(u64, &[(u64, f64)])> = dists[dists.len() - k..]
        .iter()
        .map(|(n, c)| (*n, c.as_slice()))
        .collect();
    if let Some(p99) = analysis::pooled_quantile(&last, 0.99) {
        point.lat_p99_pooled_ns = p99;
    }
    Ok(point)
}

/// Measure the whole grid of `plan` on `target` (see the module doc for the order).
/// `between(k)` is called before grid point `k` and, with the point count, after the
/// last: the command runs the validation's device rounds there
/// ([`crate::validate::round_positions`]); an error it returns ends the grid.
pub fn measure(
    target: &Target,
    plan: &Plan,
    seed: u64,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(Progress<'_>),
    between: &mut dyn FnMut(usize) -> Result<(), CalibrateError>,
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
            between(index)?;
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
    for spec in sweep_specs(plan) {
        run(&mut points, spec, Role::QdSweep)?;
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
    for read_pct in [100u8, 0] {
        let mid = mid_of(&points, read_pct);
        for &bs in &plan.mid_sizes {
            run(
                &mut points,
                PointSpec {
                    read_pct,
                    bs,
                    qd: mid,
                },
                Role::MidSize,
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
    if plan.repeat_sweeps {
        for spec in sweep_specs(plan) {
            run(&mut points, spec, Role::QdRepeat)?;
        }
    }
    between(points.len())?;
    Ok(points)
}

/// The 4 KiB queue-depth sweeps' points in the order measured: reads, then writes,
/// each over `plan.qds`.
fn sweep_specs(plan: &Plan) -> impl Iterator<Item = PointSpec> + '_ {
    [100u8, 0].into_iter().flat_map(move |read_pct| {
        plan.qds.iter().map(move |&qd| PointSpec {
            read_pct,
            bs: 4096,
            qd,
        })
    })
}

/// The points the fits take: each queue-depth sweep point together with its repeat
/// from the grid's end ([`Role::QdRepeat`], [`Plan::repeat_sweeps`]), the repeats
/// themselves dropped; every other point as measured.
///
/// Two passes minutes apart describe the device over the grid's span, as the
/// validation's rounds spread over it do ([`crate::validate::round_positions`]); one
/// pass is one moment of a shared disk whose writes, on this machine, ran at 91–99K or
/// at 117–138K IOPS at QD32 from one minute to the next (docs/calibrate.md). When both
/// passes settled: the mean of their IOPS, bandwidth and percentiles, the latency means
/// weighted by IOPS (the I/Os of equal windows; at a fixed depth this is Little's
/// `QD / IOPS` of the mean IOPS), the windows of both. When one did not settle, the
/// other alone; when neither did, both together, unsteady.
pub fn merge_repeats(points: &[Point]) -> Vec<Point> {
    points
        .iter()
        .filter(|p| p.role != Role::QdRepeat)
        .map(|p| match repeat_of(points, p) {
            Some(r) => match (p.steady, r.steady) {
                (true, false) => p.clone(),
                (false, true) => Point {
                    role: Role::QdSweep,
                    ..r.clone()
                },
                _ => two_passes(p, r),
            },
            None => p.clone(),
        })
        .collect()
}

/// How far the two passes of a direction's 4 KiB sweep were apart: the largest
/// `|repeat / first − 1|` of their IOPS over the depths, in % (`None` without repeats).
pub fn repeat_apart_pct(points: &[Point], read_pct: u8) -> Option<f64> {
    points
        .iter()
        .filter(|p| p.spec.read_pct == read_pct && p.iops > 0.0)
        .filter_map(|p| Some((repeat_of(points, p)?.iops / p.iops - 1.0).abs() * 100.0))
        .reduce(f64::max)
}

/// The repeat of queue-depth sweep point `p` from the grid's end, if measured.
fn repeat_of<'a>(points: &'a [Point], p: &Point) -> Option<&'a Point> {
    (p.role == Role::QdSweep)
        .then(|| {
            points
                .iter()
                .find(|r| r.role == Role::QdRepeat && r.spec == p.spec)
        })
        .flatten()
}

/// One point of two passes of it (see [`merge_repeats`]).
fn two_passes(a: &Point, b: &Point) -> Point {
    let mean = |f: fn(&Point) -> f64| (f(a) + f(b)) / 2.0;
    let by_iops = |f: fn(&Point) -> f64| match a.iops + b.iops {
        w if w > 0.0 => (f(a) * a.iops + f(b) * b.iops) / w,
        _ => mean(f),
    };
    Point {
        spec: a.spec,
        role: a.role,
        iops: mean(|p| p.iops),
        bw_bytes: mean(|p| p.bw_bytes),
        lat_mean_ns: by_iops(|p| p.lat_mean_ns),
        lat_p50_ns: mean(|p| p.lat_p50_ns),
        lat_p99_ns: mean(|p| p.lat_p99_ns),
        lat_p99_pooled_ns: mean(|p| p.lat_p99_pooled_ns),
        read_lat_mean_ns: by_iops(|p| p.read_lat_mean_ns),
        write_lat_mean_ns: by_iops(|p| p.write_lat_mean_ns),
        window_iops: a
            .window_iops
            .iter()
            .chain(&b.window_iops)
            .copied()
            .collect(),
        steady: a.steady && b.steady,
        spread: a.spread.max(b.spread),
        wall_ns: a.wall_ns + b.wall_ns,
    }
}

fn knee_of(points: &[Point], read_pct: u8) -> u32 {
    analysis::knee_qd(&curve_of(points, read_pct)).unwrap_or(1)
}

/// The direction's middle depth ([`crate::plan::MID_FRACTION`]).
fn mid_of(points: &[Point], read_pct: u8) -> u32 {
    analysis::first_reaching(&curve_of(points, read_pct), crate::plan::MID_FRACTION).unwrap_or(1)
}

/// 4 KiB IOPS against queue depth of one direction's sweep.
fn curve_of(points: &[Point], read_pct: u8) -> Vec<(u32, f64)> {
    points
        .iter()
        .filter(|p| p.role == Role::QdSweep && p.spec.read_pct == read_pct)
        .map(|p| (p.spec.qd, p.iops))
        .collect()
}
