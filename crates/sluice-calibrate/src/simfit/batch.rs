//! The batch fit (`controller.batch_ns`): see the module docs of [`crate::simfit`].
//!
//! A front end that serves commands in batches (`sluice-device`, `batch_ns`) runs a
//! closed loop of `n` commands in batches of `n`, so its throughput is
//! `1 / IOPS = b / n + s`: the batch's cost `b` amortised over the depth, and each
//! command's own front-end time `s`. Per direction, the line of least relative
//! squares of the steady 4 KiB points' `1 / IOPS` against `1 / n` gives a slope (a
//! batch cost) and an intercept; the device has one batch cost, so candidates `b` around the
//! directions' slopes (their geometric mean times `2^(k/4)`, `k` = −8 … 2) are each
//! completed — each direction's `s` the least-relative-squares intercept with the
//! slope held at `b`,
//! its command time what gives that 4 KiB front-end time, its media time what is left
//! of the QD1 latency — and simulated on both sweeps. The best is taken when its IOPS
//! error is below the load-dependent units' (the form [`Model::with_load`] fitted
//! just before) by more than [`LOAD_MARGIN_PCT`] point: the two are alternative
//! explanations of the same curve, and the batch has no more parameters.

use super::load::LOAD_MARGIN_PCT;
use super::{ln2, qd1_point, qd_sweep, rms_pct, simulate_all, FitReport, FitSetup};
use crate::analysis::relative_line;
use crate::model::{fit_sigma, Model, MIN_STAGE_NS};
use crate::{CalibrateError, Point, Role};
use sluice_device::FrontEnd;

/// The candidates' batch costs: the regression's times `2^(k/4)` for `k` in this range.
const STEPS: std::ops::RangeInclusive<i32> = -8..=2;

impl Model {
    /// Try batched service against the fitted load (module docs): the model keeps the
    /// better. Not with a write buffer (its acknowledgement, not a batch, sets a
    /// write's latency) or with fewer than three steady points beyond QD1 in either
    /// direction.
    pub(super) fn with_batch(
        mut self,
        points: &[Point],
        setup: &FitSetup,
    ) -> Result<Model, CalibrateError> {
        let key = "controller.batch_ns";
        let (reads, r_note) = qd_sweep(points, false);
        let (writes, w_note) = qd_sweep(points, true);
        let deep = |v: &[&Point]| v.iter().filter(|p| p.spec.qd > 1).count();
        if self.write_buffer.is_some() || deep(&reads) < 3 || deep(&writes) < 3 {
            self.derivation.push(match self.write_buffer {
                Some(_) => format!("{key} not fitted: a write buffer acknowledges writes"),
                None => format!(
                    "{key} not fitted: {} and {} steady read and write queue-depth points beyond QD1 (at least 3 each needed){r_note}{w_note}",
                    deep(&reads),
                    deep(&writes)
                ),
            });
            return Ok(self);
        }
        // 1 / IOPS (ns) against 1 / n, per direction: (intercept, slope).
        let line = |v: &[&Point]| {
            let xy: Vec<(f64, f64)> = v
                .iter()
                .map(|p| (1.0 / p.spec.qd as f64, 1e9 / p.iops))
                .collect();
            (relative_line(&xy), xy)
        };
        let (fit_r, xy_r) = line(&reads);
        let (fit_w, xy_w) = line(&writes);
        let slopes: Vec<f64> = [fit_r, fit_w]
            .iter()
            .flatten()
            .map(|f| f.1)
            .filter(|&s| s > MIN_STAGE_NS)
            .collect();
        if slopes.is_empty() {
            self.derivation.push(format!(
                "{key} not set: 1 / IOPS does not fall with the depth as b / n in either direction"
            ));
            return Ok(self);
        }
        let b0 = (slopes.iter().map(|s| s.ln()).sum::<f64>() / slopes.len() as f64).exp();
        // Judged on every steady point of the grid (the queue-depth sweeps, the sizes at
        // QD1 and at the knee, the mixes): the two forms explain the 4 KiB curves about
        // equally, and differ in what a request's size and the other direction cost at
        // depth. Sizes below 4 KiB are left out (below the minimum efficient size).
        let pts: Vec<&Point> = points
            .iter()
            .filter(|p| p.steady && p.iops > 0.0 && p.role != Role::SmallSize)
            .collect();
        let error = |m: &Model| -> Result<(f64, Vec<f64>), CalibrateError> {
            let ws = simulate_all(m, "batch fit", &pts, setup)?;
            let e = pts.iter().zip(&ws).map(|(p, w)| ln2(w.iops, p.iops)).sum();
            Ok((e, ws.iter().map(|w| w.iops).collect()))
        };
        let (e0, _) = error(&self)?;
        let mut best: Option<(Model, f64, Vec<f64>)> = None;
        let mut candidates = 1;
        for k in STEPS {
            let b = (b0 * 2f64.powf(k as f64 / 4.0)).round().max(MIN_STAGE_NS);
            let c = self.batch_candidate(b, &xy_r, &xy_w);
            let (e, iops) = error(&c)?;
            candidates += 1;
            if best.as_ref().is_none_or(|x| e < x.1 - 1e-12) {
                best = Some((c, e, iops));
            }
        }
        let (c, e, iops) = best.expect("candidates tried");
        let n = pts.len();
        let (before, after) = (rms_pct(e0, n), rms_pct(e, n));
        let report = FitReport {
            what: key.into(),
            points: n,
            candidates,
            rms_before_pct: before,
            rms_after_pct: after.min(before),
        };
        let kilo = |v: &mut dyn Iterator<Item = f64>| {
            v.map(|x| format!("{:.1}", x / 1e3))
                .collect::<Vec<_>>()
                .join("/")
                + "K"
        };
        let measured = kilo(&mut pts.iter().map(|p| p.iops));
        let regression = format!(
            "1 / IOPS against 1 / QD: reads {}, writes {}",
            show_line(fit_r),
            show_line(fit_w)
        );
        if after >= before - LOAD_MARGIN_PCT {
            self.sim_fits.push(report);
            self.derivation.push(format!(
                "{key} not set: batched service (batch costs around {:.1} µs; {regression}) brings the IOPS of the grid's {n} steady points to {after:.1} % rms, not below the fitted load's {before:.1} % by more than {LOAD_MARGIN_PCT} point ({candidates} candidates simulated)",
                b0 / 1e3
            ));
            return Ok(self);
        }
        // The candidate was cloned from this model before the fit's report.
        let mut m = c.with_batch_spread(points);
        m.sim_fits.push(report);
        m.derivation.push(format!(
            "{key} = {}: batched service ({regression}; candidates around {:.1} µs, {candidates} simulated) fits the IOPS of the grid's {n} steady points at {after:.1} % rms against {before:.1} % with the fitted load (sim {} against measured {measured}); load exponents off; read_cmd {} ns, write_cmd {} ns (each direction's 4 KiB time per command: the intercept of 1 / IOPS − b / n), read_ns {} ns, write_ns {} ns (what is left of the QD1 latencies){r_note}{w_note}",
            m.batch_ns.unwrap_or(0),
            b0 / 1e3,
            kilo(&mut iops.into_iter()),
            m.read_cmd_ns,
            m.write_cmd_ns,
            m.read_ns,
            m.write_ns,
        ));
        Ok(m)
    }

    /// The model with batches of cost `b`: each direction's command time from its
    /// points `(1 / n, 1 / IOPS)` with the slope held at `b`, its media time what is
    /// left of its QD1 latency (at least [`MIN_STAGE_NS`]); no load exponents.
    fn batch_candidate(&self, b: f64, xy_r: &[(f64, f64)], xy_w: &[(f64, f64)]) -> Model {
        let mut c = self.clone();
        c.read_load_exponent = None;
        c.write_load_exponent = None;
        c.batch_ns = Some(b as u64);
        for (write, xy) in [(false, xy_r), (true, xy_w)] {
            // The intercept of least relative squares with the slope held at `b`.
            let w = |y: f64| 1.0 / (y * y);
            let s = xy.iter().map(|&(x, y)| w(y) * (y - b * x)).sum::<f64>()
                / xy.iter().map(|&(_, y)| w(y)).sum::<f64>();
            let cmd = c.cmd_for_front(write, s);
            let (_, media) = c.times(write);
            c.set_times(write, cmd, media);
            // The QD1 latency without the media time, and the media time what is left.
            let rest =
                self.qd1_latency_ns(write, 4096) - (c.qd1_latency_ns(write, 4096) - media as f64);
            c.set_times(write, cmd, rest.round().max(MIN_STAGE_NS) as u64);
        }
        c
    }

    /// The command time that makes a 4 KiB request's front-end time `s` ns under the
    /// model's form (at least [`MIN_STAGE_NS`]).
    fn cmd_for_front(&self, write: bool, s: f64) -> u64 {
        let transfer_in_series = match self.front_end {
            FrontEnd::Max => 0.0,
            FrontEnd::Additive | FrontEnd::AdditiveCapped => {
                self.front_ns(write, 4096) - self.times(write).0 as f64
            }
        };
        (s - transfer_in_series).round().max(MIN_STAGE_NS) as u64
    }

    /// `write`'s direction's (command, media) times, ns.
    fn times(&self, write: bool) -> (u64, u64) {
        match write {
            true => (self.write_cmd_ns, self.write_ns),
            false => (self.read_cmd_ns, self.read_ns),
        }
    }

    fn set_times(&mut self, write: bool, cmd: u64, media: u64) {
        match write {
            true => (self.write_cmd_ns, self.write_ns) = (cmd, media),
            false => (self.read_cmd_ns, self.read_ns) = (cmd, media),
        }
    }

    /// `[service] sigma` again for batched service: at QD1 a command's varied time is
    /// its batch and its media time (drawn apart; fitted as one log-normal on their
    /// sum, as `with_spread` does for its stages), from the QD1 points' median and p99.
    fn with_batch_spread(mut self, points: &[Point]) -> Model {
        let b = self.batch_ns.unwrap_or(0) as f64;
        let qd1 = |read_pct: u8| qd1_point(points, read_pct).map(|p| p.lat_p99_ns - p.lat_p50_ns);
        let (rs, ws) = (qd1(100), qd1(0));
        let (rm, wm) = (self.read_ns as f64 + b, self.write_ns as f64 + b);
        if let Some(sv) = &mut self.service {
            if let Some(s) = rs {
                sv.read.sigma = (fit_sigma(s, rm) * 1000.0).round() / 1000.0;
            }
            if let Some(s) = ws {
                sv.write.sigma = (fit_sigma(s, wm) * 1000.0).round() / 1000.0;
            }
            self.derivation.push(format!(
                "service.read.sigma = {:.3}, service.write.sigma = {:.3} again for batches: the QD1 spread on the batch and the media time ({:.1} and {:.1} µs)",
                sv.read.sigma,
                sv.write.sigma,
                rm / 1e3,
                wm / 1e3
            ));
        }
        self
    }
}

fn show_line(f: Option<(f64, f64)>) -> String {
    match f {
        Some((a, b)) => format!("{:.1} µs / QD + {:.1} µs", b / 1e3, a / 1e3),
        None => "no line".into(),
    }
}
