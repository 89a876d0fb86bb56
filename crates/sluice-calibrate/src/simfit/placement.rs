//! The placement fit (`media.pool`, `media.write_placement`): see the module docs of
//! [`crate::simfit`].

use super::{ln2, qd_sweep, rms_pct, simulate_all, us_list, FitReport, FitSetup, TAIL_IOPS_WEIGHT};
use crate::model::{Model, Placement};
use crate::{CalibrateError, Point};

impl Model {
    /// Choose where commands meet the units ([`Placement`]): both directions striped
    /// by LBA, reads striped and writes at a write pointer, or one pool — each with
    /// its own load exponents and units ([`Model::with_load`]: the units a structure
    /// needs for the measured IOPS depend on whether its commands collide) and its
    /// service-time tails ([`Model::with_tails`]) — by simulating them on
    /// the steady 4 KiB read and write queue-depth points: the structure whose p99s
    /// and IOPS are closest to the measured ones. (Compared without their tails, a
    /// pool's even queues would lose to striping's collisions wherever the device has
    /// a tail of its own, which only a tail can give.) On a tie the earlier of
    /// [`Placement::ALL`] stays. With a write buffer (its destage has the write
    /// pointer), or fewer than three points, the units stay striped (load and tails
    /// fitted).
    pub fn with_placement(
        mut self,
        points: &[Point],
        setup: &FitSetup,
    ) -> Result<Model, CalibrateError> {
        let (reads, r_note) = qd_sweep(points, false);
        let (writes, w_note) = qd_sweep(points, true);
        let pts: Vec<&Point> = reads.into_iter().chain(writes).collect();
        if self.write_buffer.is_some() || pts.len() < 3 {
            self.derivation.push(match self.write_buffer {
                Some(_) => "placement not fitted: the write buffer's destage has the write pointer, reads are striped".into(),
                None => format!(
                    "placement not fitted (striped): {} steady 4 KiB queue-depth points with a p99 (at least 3 needed){r_note}{w_note}",
                    pts.len()
                ),
            });
            return self.with_load(points, setup)?.with_tails(points, setup);
        }
        // (error, simulated p99 per point) of a structure.
        let run = |m: &Model| -> Result<(f64, Vec<f64>), CalibrateError> {
            let ws = simulate_all(m, "placement fit", &pts, setup)?;
            let e = pts
                .iter()
                .zip(&ws)
                .map(|(p, w)| {
                    ln2(w.lat_p99_ns, p.lat_p99_pooled_ns) + TAIL_IOPS_WEIGHT * ln2(w.iops, p.iops)
                })
                .sum();
            Ok((e, ws.iter().map(|w| w.lat_p99_ns).collect()))
        };
        let n = pts.len();
        let mut tried: Vec<(Model, f64, String)> = Vec::new();
        for placement in Placement::ALL {
            let m = Model {
                placement,
                ..self.clone()
            }
            .with_load(points, setup)?
            .with_tails(points, setup)?;
            let (e, p99) = run(&m)?;
            let line = format!(
                "{} (p99 {}, error of p99 and IOPS {:.1} % rms)",
                placement.name(),
                us_list(&p99),
                rms_pct(e, n)
            );
            tried.push((m, e, line));
        }
        let best = (0..tried.len())
            .min_by(|&a, &b| tried[a].1.total_cmp(&tried[b].1))
            .expect("three structures");
        let before = tried[0].1;
        let after = tried[best].1;
        let lines: Vec<String> = tried.iter().map(|t| t.2.clone()).collect();
        let mut model = tried.swap_remove(best).0;
        let measured = us_list(&pts.iter().map(|p| p.lat_p99_pooled_ns).collect::<Vec<_>>());
        let labels: Vec<String> = pts.iter().map(|p| p.spec.label()).collect();
        model.derivation.push(format!(
            "placement = {}: the {n} steady 4 KiB queue-depth points ({}) simulated, each structure with its own fitted load and tails, as {}, against measured p99 {measured}{r_note}{w_note}",
            model.placement.name(),
            labels.join(", "),
            lines.join("; "),
        ));
        model.sim_fits.push(FitReport {
            what: "placement".into(),
            points: n,
            candidates: Placement::ALL.len(),
            rms_before_pct: rms_pct(before, n),
            rms_after_pct: rms_pct(after, n),
        });
        Ok(model)
    }
}
