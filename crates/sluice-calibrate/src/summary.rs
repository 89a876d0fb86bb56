//! The figures a measured grid gives ([`Summary`]) and the profile parameters they feed.

use crate::analysis::{self, linear_fit, LinearFit};
use crate::{model, CalibrateError, Point, Role};

/// The figures derived from a grid, per direction.
#[derive(Clone, Debug, PartialEq)]
pub struct DirSummary {
    /// Mean QD1 4 KiB latency, ns.
    pub lat_qd1_ns: f64,
    /// Best 4 KiB IOPS of the queue-depth sweep.
    pub max_iops: f64,
    /// The queue depth of the best IOPS.
    pub max_iops_qd: u32,
    /// Knee queue depth ([`analysis::knee_qd`]).
    pub knee_qd: u32,
    /// IOPS at the knee.
    pub knee_iops: f64,
    /// Mean latency at the knee, ns.
    pub knee_lat_ns: f64,
    /// Mean latency at the deepest queue depth measured, ns, and that depth.
    pub deepest_lat_ns: f64,
    /// The deepest queue depth measured.
    pub deepest_qd: u32,
    /// IOPS at the deepest queue depth.
    pub deepest_iops: f64,
    /// Knee size ([`analysis::knee_size`]) at the knee queue depth, bytes.
    pub knee_size: Option<u32>,
    /// Best bandwidth of the size sweep, bytes/s.
    pub max_bw_bytes: f64,
    /// Minimum efficient size ([`analysis::min_efficient_size`]), bytes.
    pub min_efficient_size: Option<u32>,
    /// QD1 cost model: latency (ns) against size (bytes).
    pub cost: Option<LinearFit>,
    /// 4 KiB IOPS against queue depth.
    pub curve: Vec<(u32, f64)>,
    /// IOPS against request size (4 KiB and up, bytes) at the knee queue depth: the
    /// front end's form ([`model::front`]). Steady points only, unless fewer than
    /// [`model::front::MIN_SIZES`] of them settled (then all).
    pub size_curve: Vec<(u32, f64)>,
    /// Sizes (4 KiB and up) left out of `size_curve` as not steady, bytes.
    pub size_left_out: Vec<u32>,
}

/// What a grid says about the device.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    /// Random reads.
    pub read: DirSummary,
    /// Random writes.
    pub write: DirSummary,
    /// Points that did not reach a steady state within the cap.
    pub unsteady: usize,
}

impl Summary {
    /// Derive the figures from measured points (those of [`measure`]).
    pub fn of(points: &[Point]) -> Result<Summary, CalibrateError> {
        let dir = |read_pct: u8| -> Result<DirSummary, CalibrateError> {
            let of_dir = || points.iter().filter(move |p| p.spec.read_pct == read_pct);
            let sweep: Vec<&Point> = of_dir().filter(|p| p.role == Role::QdSweep).collect();
            let qd1 = sweep.iter().find(|p| p.spec.qd == 1).ok_or_else(|| {
                CalibrateError::BadInput("the grid has no QD1 4 KiB point".into())
            })?;
            let curve: Vec<(u32, f64)> = sweep.iter().map(|p| (p.spec.qd, p.iops)).collect();
            let knee = analysis::knee_qd(&curve).unwrap_or(1);
            let at_knee = sweep
                .iter()
                .find(|p| p.spec.qd == knee)
                .expect("knee is a measured depth");
            let best = sweep
                .iter()
                .max_by(|a, b| a.iops.total_cmp(&b.iops))
                .expect("non-empty sweep");
            let deepest = sweep
                .iter()
                .max_by_key(|p| p.spec.qd)
                .expect("non-empty sweep");
            // Sizes at the knee: the 4 KiB knee point, the small sizes, the size sweep.
            let mut at_knee_sizes: Vec<(u32, f64, f64, bool)> =
                vec![(4096, at_knee.iops, at_knee.bw_bytes, at_knee.steady)];
            for p in of_dir().filter(|p| matches!(p.role, Role::SmallSize | Role::SizeSweep)) {
                at_knee_sizes.push((p.spec.bs, p.iops, p.bw_bytes, p.steady));
            }
            // The front end's sweep: sizes of 4 KiB and up, the steady ones when enough
            // of them settled.
            let sized = || at_knee_sizes.iter().filter(|p| p.0 >= 4096);
            let only_steady = sized().filter(|p| p.3).count() >= model::front::MIN_SIZES;
            let (kept, left): (Vec<_>, Vec<_>) = sized().partition(|p| p.3 || !only_steady);
            let bw: Vec<(u32, f64)> = at_knee_sizes.iter().map(|&(s, _, b, _)| (s, b)).collect();
            let iops: Vec<(u32, f64)> = at_knee_sizes.iter().map(|&(s, i, _, _)| (s, i)).collect();
            let cost_pts: Vec<(f64, f64)> = of_dir()
                .filter(|p| p.spec.qd == 1 && matches!(p.role, Role::QdSweep | Role::Qd1Size))
                .map(|p| (p.spec.bs as f64, p.lat_mean_ns))
                .collect();
            Ok(DirSummary {
                lat_qd1_ns: qd1.lat_mean_ns,
                max_iops: best.iops,
                max_iops_qd: best.spec.qd,
                knee_qd: knee,
                knee_iops: at_knee.iops,
                knee_lat_ns: at_knee.lat_mean_ns,
                deepest_lat_ns: deepest.lat_mean_ns,
                deepest_qd: deepest.spec.qd,
                deepest_iops: deepest.iops,
                knee_size: analysis::knee_size(&bw),
                max_bw_bytes: bw.iter().map(|p| p.1).fold(0.0, f64::max),
                min_efficient_size: analysis::min_efficient_size(&iops),
                cost: linear_fit(&cost_pts),
                curve,
                size_curve: kept.iter().map(|&&(s, i, _, _)| (s, i)).collect(),
                size_left_out: left.iter().map(|p| p.0).collect(),
            })
        };
        Ok(Summary {
            read: dir(100)?,
            write: dir(0)?,
            unsteady: points.iter().filter(|p| !p.steady).count(),
        })
    }

    /// The anchors of the device profile.
    pub fn anchors(&self) -> model::Anchors {
        model::Anchors {
            read_lat_qd1_ns: self.read.lat_qd1_ns,
            write_lat_qd1_ns: self.write.lat_qd1_ns,
            read_iops: self.read.max_iops,
            write_iops: self.write.max_iops,
            knee_qd: self.read.knee_qd,
            read_bw_bytes: self.read.max_bw_bytes,
            write_bw_bytes: self.write.max_bw_bytes,
            read_fit: self.read.cost,
            write_fit: self.write.cost,
            read_curve: self.read.curve.clone(),
            write_curve: self.write.curve.clone(),
            read_size_curve: self.read.size_curve.clone(),
            write_size_curve: self.write.size_curve.clone(),
            read_size_left_out: self.read.size_left_out.clone(),
            write_size_left_out: self.write.size_left_out.clone(),
            write_buffer_bytes: None,
        }
    }
}
