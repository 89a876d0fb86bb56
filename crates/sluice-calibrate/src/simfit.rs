//! Fits that run the grid's own points in the simulator: the service-time tail of
//! each direction ([`Model::with_tails`]) and the read/write interference
//! ([`Model::with_read_block`]). Neither has a closed form the model could use: the
//! mean-value analysis of [`crate::model::mva_iops`] gives means, not percentiles, and
//! a slow operation on one unit of a closed loop does more than add its own time —
//! every command that picks that unit while it is slow queues behind it, so the
//! loop's commands pile up there and a rare stall reaches the p99 of deep queues. So
//! each candidate profile is simulated on the measured points (the same jobs the
//! engine ran: 4 KiB random, the point's depth and mix, policy `none`, one core, the
//! measured region) and the candidate whose simulated figures are closest to the
//! measured ones (least squares of log ratios) wins. Every run of a fit uses the same
//! seed (common random numbers), so candidates differ by their parameters, not by
//! their draws. Only steady grid points are used — an unsteady point's windows
//! disagree, so its figures mix states of the device — and never the validation jobs,
//! which stay an independent check.
//!
//! * **Tail** (`[service.read|write] tail_prob`, `tail_mean_ns` or `stall_prob`,
//!   `stall_ns`): on the direction's
//!   4 KiB queue-depth sweep (QD 1 … 64), the error is the sum over the points of
//!   `ln(sim p99 / measured p99)²` (the measured p99 pooled over the point's agreeing
//!   windows, [`Point::lat_p99_pooled_ns`]) plus [`TAIL_IOPS_WEIGHT`] ×
//!   `ln(sim IOPS / IOPS without the tail)²`: a slow operation also stalls the
//!   commands that pile up behind it, so a tail costs throughput in the model, while
//!   the measured IOPS (stalls and all) are the queue-depth fit's to match; the fit
//!   weighs that cost against the percentiles the tail explains, and rejects a
//!   candidate that moves any point's IOPS by more than [`MAX_TAIL_IOPS_MOVE`]. (Against
//!   the measured IOPS instead, a tail would be chosen to mend the queue-depth fit's
//!   own errors.) The tail's mean `p·m` is taken from the
//!   operation's nominal time (`read_ns` or `write_ns`), so the QD1 mean stays the
//!   measured one; at most [`MAX_TAIL_SHARE`] of it. The body's σ (fitted at QD1) is
//!   kept. Two forms are tried ([`TailKind`]): slow operations (`tail_prob`,
//!   `tail_mean_ns`) and stalls of the device (`stall_prob`, `stall_ns`: a read that
//!   draws one holds every read starting in it, so the share delayed grows with the
//!   depth — the p99 jump from QD32 to QD64 this machine's disk has); the better
//!   wins. Candidates: `p` on a lattice of eighth decades from 10⁻⁴ to 10⁻² (stalls:
//!   10⁻⁵ to 10⁻³) and `m` on half octaves from 1/16 to 2 × the largest measured
//!   p99; per form a coarse pass (every fourth `p`, every other `m`), then a descent
//!   to the best lattice neighbour until none is better. A tail can only add spread:
//!   where the model's queueing alone already gives a p99 above the measured one, the
//!   fit cannot bring it down.
//! * **Load** (`media.read_load_exponent`, `write_load_exponent`, first; `simfit/load.rs`):
//!   fixed units give IOPS linear in depth until the commands collide, then flat; a
//!   virtual disk's host can instead slow every request as more are in flight (on
//!   this machine's disk 4 KiB read IOPS grow as about `√QD` from QD1 to QD32: 15K,
//!   21K, 32K, 46K, 55K, 79K, which the mean-value analysis's best fixed units miss by
//!   +76 % at QD4). Per direction, candidates `β` = 0.05 … 0.8 (every 0.1, then ±0.05
//!   around the best) on the fixed fit's units and on 2, 4, … 32 times as many (at most
//!   256) are simulated on the steady 4 KiB queue-depth points; the error is the sum of
//!   `ln(sim IOPS / measured IOPS)²`, and the best is taken when its rms is lower than
//!   the fixed units' by more than [`load::LOAD_MARGIN_PCT`] point. At QD1 the factor
//!   is 1, so the QD1 means stay the measured ones.
//! * **Placement** (`media.pool`, `media.write_placement`, around the tails;
//!   [`crate::model::Placement`]): the device's layout is hidden, so whether random
//!   4 KiB commands collide on units as LBA striping makes them (each unit its own
//!   queue), whether only reads do while writes go to a write pointer (a flash FTL
//!   places new data on the next unit in turn, while a read must go where its data
//!   lives), or whether every command goes to whichever unit is free (one queue in
//!   front of interchangeable units: a virtual disk's host) is a structure the grid
//!   decides. The three, each with its tails fitted (below), are simulated on the
//!   read and write queue-depth sweeps; the error is the sum over the points of
//!   `ln(sim p99 / measured p99)²` plus [`TAIL_IOPS_WEIGHT`] ×
//!   `ln(sim IOPS / measured IOPS)²`, and the least error wins. Striping puts a
//!   Binomial share of a deep queue on each unit, so its p99 at depth sits far above
//!   the mean; a write pointer and a pool keep the units evenly busy. Not with a
//!   write buffer (its destage has the write pointer).
//! * **Interference** (`media.read_block_after_write_ns`, see `sluice-device`): on the
//!   mixed 4 KiB points (70/30 and 50/50 at QD1 and at the read knee), the error is the
//!   sum of `ln(sim / measured)²` of the mean read and the mean write latency. `t = 0`
//!   (off) and `t = T · 2^(k/2)` for `T` the write's unit time: a coarse pass in
//!   octaves from T/16 to 8T, then half and quarter octaves around the best. The
//!   parameter is only set when it lowers the error.

use serde::Serialize;
use sluice_core::Nanos;
use sluice_device::DeviceProfile;

use crate::model::Model;
use crate::validate::{GOAL_IOPS_MEAN, GOAL_P99};
use crate::{CalibrateError, Point, PointSpec, Role, Window};

/// Most of an operation's nominal time its tail may take (`p · m`): the body keeps
/// the rest.
pub const MAX_TAIL_SHARE: f64 = 0.5;
/// Most a tail may move the simulated IOPS of any fitted point (against the model
/// without it), as a fraction: throughput is the queue-depth fit's.
pub const MAX_TAIL_IOPS_MOVE: f64 = 0.10;
/// Weight of a point's IOPS term against its p99 term in the tail fit: the square of
/// the ratio of the validation goals' widths (p99 within 25 %, IOPS within 15 %), so
/// an IOPS error counts as much as a p99 error of the same share of its goal.
pub const TAIL_IOPS_WEIGHT: f64 = (GOAL_P99 / GOAL_IOPS_MEAN) * (GOAL_P99 / GOAL_IOPS_MEAN);

/// How the fits simulate: simulated I/Os per point and candidate, the seed, the region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FitSetup {
    /// About this many I/Os per simulated point (the run lasts `ios / measured IOPS`).
    pub ios: u64,
    /// Seed of every simulation of the fits.
    pub seed: u64,
    /// Bytes of the region measured (the jobs' `size`).
    pub size_bytes: u64,
}

/// What one fit did, for the header and the JSON file.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FitReport {
    /// What was fitted (`service.read tail`, `service.write tail`,
    /// `media.read_block_after_write_ns`).
    pub what: String,
    /// Grid points simulated per candidate.
    pub points: usize,
    /// Candidates simulated.
    pub candidates: usize,
    /// Root-mean-square error of the fitted figures without the parameter, % (the
    /// log ratio's rms, as `e^rms − 1`).
    pub rms_before_pct: f64,
    /// The same with the fitted parameter.
    pub rms_after_pct: f64,
}

/// Simulate grid point `spec` on `profile` for about `setup.ios` I/Os at `iops`.
pub fn simulate(
    profile: &DeviceProfile,
    spec: &PointSpec,
    iops: f64,
    setup: &FitSetup,
) -> Result<Window, CalibrateError> {
    let runtime =
        ((setup.ios as f64 * 1e9 / iops.max(1.0)) as Nanos).clamp(5_000_000, 10_000_000_000);
    let ramp = (runtime / 10).max(1_000_000);
    let job = spec.job("fit.dat", setup.size_bytes, runtime, ramp, setup.seed)?;
    crate::validate::sim_window(job, profile, setup.seed)
}

/// Every point of `pts` simulated on `m`'s profile (named for the fit, `what`), in
/// order: what each fit's candidates are judged by.
fn simulate_all(
    m: &Model,
    what: &str,
    pts: &[&Point],
    setup: &FitSetup,
) -> Result<Vec<Window>, CalibrateError> {
    let profile = m.to_profile("fit", what);
    pts.iter()
        .map(|p| simulate(&profile, &p.spec, p.iops, setup))
        .collect()
}

/// The direction's QD1 4 KiB point of the queue-depth sweep (`read_pct` 100 or 0).
pub(crate) fn qd1_point(points: &[Point], read_pct: u8) -> Option<&Point> {
    points
        .iter()
        .find(|p| p.role == Role::QdSweep && p.spec.read_pct == read_pct && p.spec.qd == 1)
}

fn ln2(sim: f64, real: f64) -> f64 {
    if sim > 0.0 && real > 0.0 {
        (sim / real).ln().powi(2)
    } else {
        0.0
    }
}

fn rms_pct(sum_sq: f64, n: usize) -> f64 {
    ((sum_sq / n.max(1) as f64).sqrt().exp() - 1.0) * 100.0
}

/// `x` rounded to three significant digits (tidy profile values).
fn sig3(x: f64) -> f64 {
    format!("{x:.2e}").parse().unwrap_or(x)
}

impl Model {
    /// Fit `media.read_block_after_write_ns` to the mean read and write latencies of
    /// the mixed 4 KiB points by simulation (see the module doc). Without a mixed
    /// point beyond QD1 it stays off.
    pub fn with_read_block(
        mut self,
        points: &[Point],
        setup: &FitSetup,
    ) -> Result<Model, CalibrateError> {
        let mixed: Vec<&Point> = points
            .iter()
            .filter(|p| {
                p.role == Role::Mixed
                    && p.spec.bs == 4096
                    && p.read_lat_mean_ns > 0.0
                    && p.write_lat_mean_ns > 0.0
            })
            .collect();
        let (pts, unsteady) = steady_only(&mixed);
        if !pts.iter().any(|p| p.spec.qd > 1) {
            self.derivation.push(format!(
                "media.read_block_after_write_ns not fitted: no steady mixed point beyond QD1{unsteady}"
            ));
            return Ok(self);
        }
        let run = |t: u64| -> Result<f64, CalibrateError> {
            let mut c = self.clone();
            c.read_block_after_write_ns = (t > 0).then_some(t);
            let ws = simulate_all(&c, "interference fit", &pts, setup)?;
            Ok(pts
                .iter()
                .zip(&ws)
                .map(|(p, w)| {
                    ln2(w.read_lat_mean_ns, p.read_lat_mean_ns)
                        + ln2(w.write_lat_mean_ns, p.write_lat_mean_ns)
                })
                .sum())
        };
        let unit = self.write_ns as f64
            + 4096.0 * 1e9
                / self
                    .write_unit_bandwidth_bytes
                    .unwrap_or(self.unit_bandwidth_bytes) as f64;
        let t_of = |k: f64| ((unit * 2f64.powf(k / 2.0) / 100.0).round() as u64 * 100).max(100);
        let e0 = run(0)?;
        let mut seen: Vec<(f64, f64)> = Vec::new();
        let mut eval = |k: f64| -> Result<f64, CalibrateError> {
            if let Some(&(_, e)) = seen.iter().find(|s| s.0 == k) {
                return Ok(e);
            }
            let e = run(t_of(k))?;
            seen.push((k, e));
            Ok(e)
        };
        let mut best = (f64::NAN, e0);
        for k in (-8..=6).step_by(2) {
            let e = eval(k as f64)?;
            if e < best.1 - 1e-12 {
                best = (k as f64, e);
            }
        }
        if !best.0.is_nan() {
            for step in [1.0, 0.5] {
                let k = best.0;
                for kk in [k - step, k + step] {
                    let e = eval(kk)?;
                    if e < best.1 - 1e-12 {
                        best = (kk, e);
                    }
                }
            }
        }
        let candidates = 1 + seen.len();
        let n = 2 * pts.len();
        let labels = pts
            .iter()
            .map(|p| p.spec.label())
            .collect::<Vec<_>>()
            .join(", ");
        self.sim_fits.push(FitReport {
            what: "media.read_block_after_write_ns".into(),
            points: pts.len(),
            candidates,
            rms_before_pct: rms_pct(e0, n),
            rms_after_pct: rms_pct(best.1, n),
        });
        if best.0.is_nan() {
            self.derivation.push(format!(
                "media.read_block_after_write_ns not set: on {labels}, no block ({candidates} candidates simulated) brings the mean read and write latencies closer than none ({:.1} % rms){unsteady}",
                rms_pct(e0, n)
            ));
            return Ok(self);
        }
        let t = t_of(best.0);
        self.read_block_after_write_ns = Some(t);
        self.derivation.push(format!(
            "media.read_block_after_write_ns = {t}: fitted by simulating {labels} on {candidates} candidates; mean read and write latency error {:.1} % rms without it, {:.1} % with{unsteady}",
            rms_pct(e0, n),
            rms_pct(best.1, n)
        ));
        Ok(self)
    }
}

/// The steady points of a direction's 4 KiB queue-depth sweep with a p99, and a note
/// naming those left out as not steady.
fn qd_sweep(points: &[Point], write: bool) -> (Vec<&Point>, String) {
    let sweep: Vec<&Point> = points
        .iter()
        .filter(|p| {
            p.role == Role::QdSweep
                && p.spec.read_pct == if write { 0 } else { 100 }
                && p.iops > 0.0
                && p.lat_p99_pooled_ns > 0.0
        })
        .collect();
    steady_only(&sweep)
}

/// The steady points of `pts`, and a note naming the unsteady ones left out ("" for
/// none): an unsteady point's windows disagree, so its figures mix states of the
/// device.
fn steady_only<'a>(pts: &[&'a Point]) -> (Vec<&'a Point>, String) {
    let left: Vec<String> = pts
        .iter()
        .filter(|p| !p.steady)
        .map(|p| p.spec.label())
        .collect();
    let note = if left.is_empty() {
        String::new()
    } else {
        format!(" (left out, not steady: {})", left.join(", "))
    };
    (pts.iter().copied().filter(|p| p.steady).collect(), note)
}

fn us_list(v: &[f64]) -> String {
    v.iter()
        .map(|x| format!("{:.0}", x / 1e3))
        .collect::<Vec<_>>()
        .join("/")
        + " µs"
}

mod batch;
mod load;
mod placement;
mod tail;
pub use tail::TailKind;
#[cfg(test)]
mod tests;
