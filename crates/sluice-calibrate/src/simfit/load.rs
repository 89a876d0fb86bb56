//! The load fit (`media.read_load_exponent`, `media.write_load_exponent`): see the
//! module docs of [`crate::simfit`].

use super::{ln2, qd_sweep, rms_pct, simulate_all, FitReport, FitSetup};
use crate::model::Model;
use crate::{CalibrateError, Point};

/// The exponents tried: β = k / 20 for k in 1..=16 (0.05 … 0.8), first every other one.
const STEPS: i32 = 16;
/// Most units a direction is given (beyond the knee depth of any measured device, more
/// units change nothing: its commands no longer collide).
const MAX_UNITS: u32 = 256;
/// How much lower (percentage points of rms IOPS error) a load-dependent fit must be
/// than the fixed units it replaces: it has a parameter more, so on a device of fixed
/// units it can match a point or two more closely by chance.
pub const LOAD_MARGIN_PCT: f64 = 1.0;

impl Model {
    /// Fit each direction's load exponent and unit count to the IOPS of its steady
    /// 4 KiB queue-depth points by simulation; a direction keeps its fixed units when
    /// no candidate is better by more than [`LOAD_MARGIN_PCT`]. Writes only without a
    /// write buffer (buffered writes have no in-place media time).
    pub fn with_load(self, points: &[Point], setup: &FitSetup) -> Result<Model, CalibrateError> {
        let m = self.with_load_of(points, setup, false)?;
        if m.write_buffer.is_some() {
            return Ok(m);
        }
        m.with_load_of(points, setup, true)?
            .with_batch(points, setup)
    }

    /// Units serving `write`'s direction.
    pub(super) fn units_of(&self, write: bool) -> u32 {
        let p = if write {
            self.write_parallel_units
        } else {
            self.read_parallel_units
        };
        p.unwrap_or(self.units)
    }

    /// The model with `write`'s direction on `units` units with load exponent `beta`
    /// (`None`: off); the other direction keeps its units.
    pub(super) fn load_candidate(&self, write: bool, units: u32, beta: Option<f64>) -> Model {
        let mut c = self.clone();
        let (r, w) = if write {
            (self.units_of(false), units)
        } else {
            (units, self.units_of(true))
        };
        c.units = r.max(w);
        c.read_parallel_units = (r < c.units).then_some(r);
        c.write_parallel_units = (w < c.units).then_some(w);
        if write {
            c.write_load_exponent = beta;
        } else {
            c.read_load_exponent = beta;
        }
        c
    }

    fn with_load_of(
        mut self,
        points: &[Point],
        setup: &FitSetup,
        write: bool,
    ) -> Result<Model, CalibrateError> {
        let dir = if write { "write" } else { "read" };
        let key = format!("media.{dir}_load_exponent");
        let (pts, unsteady) = qd_sweep(points, write);
        if pts.len() < 3 || !pts.iter().any(|p| p.spec.qd > 1) {
            self.derivation.push(format!(
                "{key} not fitted: {} steady queue-depth points (at least 3, one beyond QD1, needed){unsteady}",
                pts.len()
            ));
            return Ok(self);
        }
        let run = |m: &Model| -> Result<(f64, Vec<f64>), CalibrateError> {
            let ws = simulate_all(m, "load fit", &pts, setup)?;
            let e = pts.iter().zip(&ws).map(|(p, w)| ln2(w.iops, p.iops)).sum();
            Ok((e, ws.iter().map(|w| w.iops).collect()))
        };
        let u0 = self.units_of(write);
        let (e0, iops0) = run(&self)?;
        // Unit counts: the fixed fit's, then doubling up to MAX_UNITS.
        let units: Vec<u32> = (0..)
            .map(|k| u0.saturating_mul(1 << k))
            .take_while(|&u| u <= MAX_UNITS.max(u0))
            .take(6)
            .collect();
        let beta = |k: i32| k as f64 / 20.0;
        let mut seen: Vec<((i32, u32), f64)> = Vec::new();
        let mut eval = |k: i32, u: u32| -> Result<f64, CalibrateError> {
            if let Some(&(_, e)) = seen.iter().find(|s| s.0 == (k, u)) {
                return Ok(e);
            }
            let (e, _) = run(&self.load_candidate(write, u, Some(beta(k))))?;
            seen.push(((k, u), e));
            Ok(e)
        };
        let mut best: Option<((i32, u32), f64)> = None;
        for &u in &units {
            for k in (2..=STEPS).step_by(2) {
                let e = eval(k, u)?;
                if best.is_none_or(|b| e < b.1 - 1e-12) {
                    best = Some(((k, u), e));
                }
            }
        }
        if let Some(((k, u), _)) = best {
            for kk in [k - 1, k + 1] {
                if (1..=STEPS).contains(&kk) {
                    let e = eval(kk, u)?;
                    if best.is_none_or(|b| e < b.1 - 1e-12) {
                        best = Some(((kk, u), e));
                    }
                }
            }
        }
        let n = pts.len();
        let candidates = 1 + seen.len();
        let (before, after) = (
            rms_pct(e0, n),
            best.map_or(rms_pct(e0, n), |b| rms_pct(b.1, n)),
        );
        let qds = pts
            .iter()
            .map(|p| p.spec.qd.to_string())
            .collect::<Vec<_>>()
            .join(", ");
        let kilo = |v: &[f64]| {
            v.iter()
                .map(|x| format!("{:.1}", x / 1e3))
                .collect::<Vec<_>>()
                .join("/")
                + "K"
        };
        let measured = kilo(&pts.iter().map(|p| p.iops).collect::<Vec<_>>());
        self.sim_fits.push(FitReport {
            what: key.clone(),
            points: n,
            candidates,
            rms_before_pct: before,
            rms_after_pct: after.min(before),
        });
        match best.filter(|_| after < before - LOAD_MARGIN_PCT) {
            Some(((k, u), _)) => {
                let fitted = self.load_candidate(write, u, Some(beta(k)));
                let (_, iops) = run(&fitted)?;
                let mut model = fitted;
                model.derivation.push(format!(
                    "{key} = {}, {dir}s on {u} units (the fixed fit's {u0}): fitted by simulating the {n} steady 4 KiB {dir} queue-depth points (QD {qds}) on {candidates} candidates; IOPS error {before:.1} % rms with fixed units, {after:.1} % with the load (sim {} against measured {measured}){unsteady}",
                    beta(k),
                    kilo(&iops)
                ));
                Ok(model)
            }
            None => {
                self.derivation.push(format!(
                    "{key} not set: on the {n} steady 4 KiB {dir} queue-depth points (QD {qds}), no load exponent ({candidates} candidates simulated) brings the IOPS closer than the fixed units by more than {LOAD_MARGIN_PCT} point ({before:.1} % rms; sim {} against measured {measured}){unsteady}",
                    kilo(&iops0)
                ));
                Ok(self)
            }
        }
    }
}
