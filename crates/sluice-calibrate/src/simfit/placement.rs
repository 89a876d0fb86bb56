//! The placement fit (`media.pool`): see the module docs of [`crate::simfit`].

use super::{ln2, qd_sweep, rms_pct, simulate, us_list, FitReport, FitSetup, TAIL_IOPS_WEIGHT};
use crate::model::Model;
use crate::{CalibrateError, Point};

impl Model {
    /// Choose `media.pool` (one queue in front of the units) or LBA striping, each with
    /// its service-time tails fitted ([`Model::with_tails`]), by simulating both on the
    /// steady 4 KiB read and write queue-depth points: the structure whose p99s and
    /// IOPS are closer to the measured ones. (Compared without their tails, a pool's
    /// even queues would lose to striping's collisions wherever the device has a tail
    /// of its own, which only a tail can give.) With a write buffer, or fewer than
    /// three points, the units stay striped by LBA (tails fitted).
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
                Some(_) => "media.pool not fitted: the write buffer's destage places by write_placement".into(),
                None => format!(
                    "media.pool not fitted: {} steady 4 KiB queue-depth points with a p99 (at least 3 needed){r_note}{w_note}",
                    pts.len()
                ),
            });
            return self.with_tails(points, setup);
        }
        // (error, simulated p99 per point) of a structure.
        let run = |m: &Model| -> Result<(f64, Vec<f64>), CalibrateError> {
            let profile = m.to_profile("fit", "placement fit");
            let (mut e, mut p99) = (0.0, Vec::new());
            for p in &pts {
                let w = simulate(&profile, &p.spec, p.iops, setup)?;
                e +=
                    ln2(w.lat_p99_ns, p.lat_p99_pooled_ns) + TAIL_IOPS_WEIGHT * ln2(w.iops, p.iops);
                p99.push(w.lat_p99_ns);
            }
            Ok((e, p99))
        };
        let striped = Model {
            pool: false,
            ..self.clone()
        }
        .with_tails(points, setup)?;
        let pooled = Model { pool: true, ..self }.with_tails(points, setup)?;
        let (e_lba, p99_lba) = run(&striped)?;
        let (e_pool, p99_pool) = run(&pooled)?;
        let pool = e_pool < e_lba;
        let n = pts.len();
        let measured = us_list(&pts.iter().map(|p| p.lat_p99_pooled_ns).collect::<Vec<_>>());
        let labels: Vec<String> = pts.iter().map(|p| p.spec.label()).collect();
        let mut model = if pool { pooled } else { striped };
        model.derivation.push(format!(
            "media.pool = {pool}: the {n} steady 4 KiB queue-depth points ({}) simulated with the units striped by LBA (p99 {}, error of p99 and IOPS {:.1} % rms) and as one pool (p99 {}, {:.1} % rms), each with its own fitted tails, against measured p99 {measured}{r_note}{w_note}",
            labels.join(", "),
            us_list(&p99_lba),
            rms_pct(e_lba, n),
            us_list(&p99_pool),
            rms_pct(e_pool, n),
        ));
        model.sim_fits.push(FitReport {
            what: "media.pool".into(),
            points: n,
            candidates: 2,
            rms_before_pct: rms_pct(e_lba, n),
            rms_after_pct: rms_pct(e_lba.min(e_pool), n),
        });
        Ok(model)
    }
}
