//! The tail fit (`[service.read|write] tail_prob`, `tail_mean_ns` or `stall_prob`,
//! `stall_ns`): see the module docs of [`crate::simfit`].

use std::collections::HashMap;

use sluice_device::ServiceVariation;

use super::{
    ln2, qd_sweep, rms_pct, sig3, simulate_all, us_list, FitReport, FitSetup, MAX_TAIL_IOPS_MOVE,
    MAX_TAIL_SHARE, TAIL_IOPS_WEIGHT,
};
use crate::model::{Model, MIN_STAGE_NS};
use crate::{CalibrateError, Point};

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
    /// is more than [`MAX_TAIL_SHARE`] of it. With batched service
    /// (`controller.batch_ns`) a command's media time is little beside its batch: the
    /// share may then be up to [`MAX_TAIL_SHARE`] of the two together, and what the
    /// media time cannot give (at most that share of it) adds to the QD1 mean.
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
        let batch = self.batch_ns.unwrap_or(0) as f64;
        let share = x * m as f64;
        if share > MAX_TAIL_SHARE * (nominal + batch) {
            return None;
        }
        let share = match batch > 0.0 {
            true => share
                .min(MAX_TAIL_SHARE * nominal)
                .min((nominal - MIN_STAGE_NS).max(0.0)),
            false => share,
        };
        if nominal - share < MIN_STAGE_NS {
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
            let ws = simulate_all(m, "tail fit", &pts, setup)?;
            let e = pts
                .iter()
                .zip(&ws)
                .map(|(p, w)| ln2(w.lat_p99_ns, p.lat_p99_pooled_ns))
                .sum();
            Ok((
                e,
                ws.iter().map(|w| w.iops).collect(),
                ws.iter().map(|w| w.lat_p99_ns).collect(),
            ))
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
        // The fit's report, with the error after it (`e0`: nothing fitted).
        let report = |after: f64| FitReport {
            what: format!("service.{dir} tail"),
            points: pts.len(),
            candidates,
            rms_before_pct: rms_pct(e0, pts.len()),
            rms_after_pct: rms_pct(after, pts.len()),
        };
        let chosen = best.filter(|b| b.1 < e0 - 1e-12);
        let Some(((kind, i, j), _)) = chosen else {
            self.derivation.push(format!(
                "service.{dir} tail not fitted: no tail and no stalls ({candidates} candidates simulated on the {} steady 4 KiB {dir} queue-depth points, none moving IOPS by more than {:.0} %) fit their p99s and IOPS better than the body alone (p99 {:.1} % rms){unsteady}",
                pts.len(),
                MAX_TAIL_IOPS_MOVE * 100.0,
                rms_pct(e0, pts.len())
            ));
            self.sim_fits.push(report(e0));
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
        model.sim_fits.push(report(ep));
        Ok(model)
    }
}
