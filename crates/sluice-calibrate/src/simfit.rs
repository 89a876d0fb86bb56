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

use std::collections::HashMap;

use serde::Serialize;
use sluice_core::Nanos;
use sluice_device::{DeviceProfile, ServiceVariation};

use crate::model::{Model, MIN_STAGE_NS};
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

/// The two forms of a direction's tail the tail fit tries ([`Model::with_tails`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TailKind {
    /// Rare slow operations, one at a time (`tail_prob`, `tail_mean_ns`).
    Op,
    /// Stalls of the whole device (`stall_prob`, `stall_ns`): an operation that draws
    /// one holds every operation of its kind from starting, so deeper queues meet more
    /// of them.
    Stall,
}

impl TailKind {
    /// The candidate on lattice point `(i, j)`, `i ∈ 0..=16`, `j ∈ −8..=2`, with `scale`
    /// the largest measured p99: `(p, m)` = `(10^(−4 + i/8), scale · 2^(j/2))` for a
    /// per-operation tail, `(p, length)` = `(10^(−5 + i/8), scale · 2^(j/2))` for
    /// stalls (rarer: each holds about a queue depth's worth of operations, so the
    /// share of operations a stall delays grows as `p · QD` and crosses the 1 % of a
    /// p99 between two depths only in a narrow band of `p` — hence eighth decades).
    fn param(self, i: i32, j: i32, scale: f64) -> (f64, u64) {
        let lo = match self {
            TailKind::Op => -4.0,
            TailKind::Stall => -5.0,
        };
        let x = sig3(10f64.powf(lo + i as f64 / 8.0));
        let m = (scale * 2f64.powf(j as f64 / 2.0) / 1000.0).round() as u64 * 1000;
        (x, m.max(1000))
    }
}

impl Model {
    /// The model with the tail of `write`'s direction set (`None` for the body alone),
    /// with what it adds to a QD1 operation's mean, `p · m` (at QD1 a stall is a slow
    /// operation of exactly its length), taken from the nominal time; `None` when that
    /// is more than [`MAX_TAIL_SHARE`] of it.
    pub(crate) fn tail_candidate(
        &self,
        write: bool,
        tail: Option<(TailKind, f64, u64)>,
    ) -> Option<Model> {
        let mut c = self.clone();
        let Some((kind, x, m)) = tail else {
            return Some(c);
        };
        let nominal = if write { self.write_ns } else { self.read_ns } as f64;
        let share = x * m as f64;
        if share > MAX_TAIL_SHARE * nominal || nominal - share < MIN_STAGE_NS {
            return None;
        }
        let sv = c.service.get_or_insert_with(ServiceVariation::default);
        let op = if write { &mut sv.write } else { &mut sv.read };
        match kind {
            TailKind::Op => {
                op.tail_prob = x;
                op.tail_mean_ns = m;
            }
            TailKind::Stall => {
                op.stall_prob = x;
                op.stall_ns = m;
            }
        }
        let body = (nominal - share).round() as u64;
        if write {
            c.write_ns = body;
        } else {
            c.read_ns = body;
        }
        Some(c)
    }

    /// Fit the tail of reads and of writes to the p99s of their 4 KiB queue-depth
    /// sweeps by simulation (see the module doc): a per-operation tail or stalls,
    /// whichever fits better. A direction with fewer than three sweep points keeps its
    /// body alone.
    pub fn with_tails(self, points: &[Point], setup: &FitSetup) -> Result<Model, CalibrateError> {
        let m = self.with_tail(points, setup, false)?;
        m.with_tail(points, setup, true)
    }

    fn with_tail(
        mut self,
        points: &[Point],
        setup: &FitSetup,
        write: bool,
    ) -> Result<Model, CalibrateError> {
        let dir = if write { "write" } else { "read" };
        let (pts, unsteady) = qd_sweep(points, write);
        if pts.len() < 3 {
            self.derivation.push(format!(
                "service.{dir} tail not fitted: {} steady queue-depth points with a p99 (at least 3 needed){unsteady}",
                pts.len()
            ));
            return Ok(self);
        }
        // (sum of p99 terms, sum of IOPS terms, IOPS per point) of a candidate.
        let run = |m: &Model| -> Result<(f64, Vec<f64>, Vec<f64>), CalibrateError> {
            let profile = m.to_profile("fit", "tail fit");
            let (mut e, mut iops, mut p99) = (0.0, Vec::new(), Vec::new());
            for p in &pts {
                let w = simulate(&profile, &p.spec, p.iops, setup)?;
                e += ln2(w.lat_p99_ns, p.lat_p99_pooled_ns);
                iops.push(w.iops);
                p99.push(w.lat_p99_ns);
            }
            Ok((e, iops, p99))
        };
        let base = self.tail_candidate(write, None).expect("no tail");
        let (e0, base_iops, _) = run(&base)?;
        let scale = pts.iter().map(|p| p.lat_p99_pooled_ns).fold(0.0, f64::max);
        let mut seen: HashMap<(TailKind, i32, i32), Option<f64>> = HashMap::new();
        let mut eval = |kind: TailKind, i: i32, j: i32| -> Result<Option<f64>, CalibrateError> {
            if !(0..=16).contains(&i) || !(-8..=2).contains(&j) {
                return Ok(None);
            }
            if let Some(&e) = seen.get(&(kind, i, j)) {
                return Ok(e);
            }
            let (x, m) = kind.param(i, j, scale);
            let e = match self.tail_candidate(write, Some((kind, x, m))) {
                Some(c) => {
                    let (ep, iops, _) = run(&c)?;
                    let moved = iops
                        .iter()
                        .zip(&base_iops)
                        .any(|(&s, &b)| (s / b - 1.0).abs() > MAX_TAIL_IOPS_MOVE);
                    let ei: f64 = iops.iter().zip(&base_iops).map(|(&s, &b)| ln2(s, b)).sum();
                    let ei = TAIL_IOPS_WEIGHT * ei;
                    (!moved).then_some(ep + ei)
                }
                None => None,
            };
            seen.insert((kind, i, j), e);
            Ok(e)
        };
        let mut best: Option<((TailKind, i32, i32), f64)> = None;
        for kind in [TailKind::Op, TailKind::Stall] {
            // A coarse pass (every fourth point of p's lattice, every other of m's), then
            // a descent to the best lattice neighbour until none is better — per kind.
            let mut here: Option<((i32, i32), f64)> = None;
            for i in (0..=16).step_by(4) {
                for j in (-8..=2).step_by(2) {
                    if let Some(e) = eval(kind, i, j)? {
                        if here.is_none_or(|b| e < b.1 - 1e-12) {
                            here = Some(((i, j), e));
                        }
                    }
                }
            }
            while let Some(((i, j), e)) = here {
                let mut next = None;
                for (di, dj) in [
                    (-1, -1),
                    (-1, 0),
                    (-1, 1),
                    (0, -1),
                    (0, 1),
                    (1, -1),
                    (1, 0),
                    (1, 1),
                ] {
                    if let Some(en) = eval(kind, i + di, j + dj)? {
                        if en < e - 1e-12 && next.is_none_or(|(_, b)| en < b) {
                            next = Some(((i + di, j + dj), en));
                        }
                    }
                }
                match next {
                    Some(n) => here = Some(n),
                    None => break,
                }
            }
            if let Some(((i, j), e)) = here {
                if best.is_none_or(|b| e < b.1 - 1e-12) {
                    best = Some(((kind, i, j), e));
                }
            }
        }
        let candidates = 1 + seen.len();
        let chosen = best.filter(|b| b.1 < e0 - 1e-12);
        let Some(((kind, i, j), _)) = chosen else {
            self.derivation.push(format!(
                "service.{dir} tail not fitted: no tail and no stalls ({candidates} candidates simulated on the {} steady 4 KiB {dir} queue-depth points, none moving IOPS by more than {:.0} %) fit their p99s and IOPS better than the body alone (p99 {:.1} % rms){unsteady}",
                pts.len(),
                MAX_TAIL_IOPS_MOVE * 100.0,
                rms_pct(e0, pts.len())
            ));
            self.sim_fits.push(FitReport {
                what: format!("service.{dir} tail"),
                points: pts.len(),
                candidates,
                rms_before_pct: rms_pct(e0, pts.len()),
                rms_after_pct: rms_pct(e0, pts.len()),
            });
            return Ok(self);
        };
        let (x, m) = kind.param(i, j, scale);
        let fitted = self
            .tail_candidate(write, Some((kind, x, m)))
            .expect("evaluated");
        let (ep, iops, p99) = run(&fitted)?;
        let worst_iops = iops
            .iter()
            .zip(&base_iops)
            .map(|(&s, &b)| (s / b - 1.0) * 100.0)
            .fold(0.0f64, |a, x| if x.abs() > a.abs() { x } else { a });
        let nominal = if write { self.write_ns } else { self.read_ns };
        let body = if write {
            fitted.write_ns
        } else {
            fitted.read_ns
        };
        let what = match kind {
            TailKind::Op => format!("service.{dir}.tail_prob = {x}, tail_mean_ns = {m}"),
            TailKind::Stall => format!(
                "service.{dir}.stall_prob = {x}, stall_ns = {m} (stalls of the device, not slow operations alone: they fit better)"
            ),
        };
        let mut model = fitted;
        model.derivation.push(format!(
            "{what}: fitted by simulating the {} steady 4 KiB {dir} queue-depth points (QD {}) on {candidates} candidates; pooled p99 error {:.1} % rms without a tail, {:.1} % with (sim p99 {} against measured {}); IOPS moved by at most {worst_iops:+.1} %; {dir}_ns {nominal} → {body} (what it adds to a QD1 mean moved out of the body){unsteady}",
            pts.len(),
            pts.iter().map(|p| p.spec.qd.to_string()).collect::<Vec<_>>().join(", "),
            rms_pct(e0, pts.len()),
            rms_pct(ep, pts.len()),
            us_list(&p99),
            us_list(&pts.iter().map(|p| p.lat_p99_pooled_ns).collect::<Vec<_>>()),
        ));
        model.sim_fits.push(FitReport {
            what: format!("service.{dir} tail"),
            points: pts.len(),
            candidates,
            rms_before_pct: rms_pct(e0, pts.len()),
            rms_after_pct: rms_pct(ep, pts.len()),
        });
        Ok(model)
    }

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
            let profile = c.to_profile("fit", "interference fit");
            let mut e = 0.0;
            for p in &pts {
                let w = simulate(&profile, &p.spec, p.iops, setup)?;
                e += ln2(w.read_lat_mean_ns, p.read_lat_mean_ns)
                    + ln2(w.write_lat_mean_ns, p.write_lat_mean_ns);
            }
            Ok(e)
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

mod load;
mod placement;
#[cfg(test)]
mod tests;
