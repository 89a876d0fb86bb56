//! A calibration's results together ([`Calibration`]): the measured grid, the figures
//! and the profile derived from it ([`Calibration::derive`]), the write-buffer probe and
//! the validation; and what is made of them — the tables (`report/table.rs`), the JSON
//! file ([`Calibration::to_json`]), the profile's header (`report/header.rs`) and its
//! TOML text ([`Calibration::profile_toml`]).

use std::path::PathBuf;

use serde_json::json;
use sluice_device::DeviceProfile;

use crate::analysis::LinearFit;
use crate::buffer::BufferProbe;
use crate::model::{self, Model};
use crate::simfit::FitSetup;
use crate::validate::Check;
use crate::{CalibrateError, DirSummary, Plan, Point, Summary, Target, Window};

mod header;
pub mod saved;
mod table;

pub use header::Provenance;
pub use table::fmt_ns;

/// What a calibration measured and derived.
#[derive(Clone, Debug)]
pub struct Calibration {
    /// The grid's plan.
    pub plan: Plan,
    /// The measured points, in the order measured.
    pub points: Vec<Point>,
    /// The figures the points give.
    pub summary: Summary,
    /// The write-buffer probe.
    pub probe: BufferProbe,
    /// The model derived from the figures (with the QD1 spread).
    pub model: Model,
    /// The profile of the model, validated.
    pub profile: DeviceProfile,
    /// The simulator against the device on the validation jobs (empty until run:
    /// [`crate::validate::checks`] of the device's rounds on [`Calibration::profile`]).
    pub checks: Vec<Check>,
    /// The grid positions the device's validation rounds ran at, one per round (a
    /// round at `k` ran before grid point `k`; at the grid's length, after its last
    /// point: [`crate::validate::round_positions`]). Empty: after the grid and the fits
    /// (files saved before 2026-11-26 evening).
    pub validate_at: Vec<usize>,
    /// The file measured.
    pub target: TargetFacts,
}

/// The file a calibration measured (what is left of its [`Target`] once it is closed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TargetFacts {
    /// Its path.
    pub path: PathBuf,
    /// Bytes of it measured.
    pub size_bytes: u64,
    /// Its direct-I/O alignment, bytes.
    pub align: u32,
}

impl TargetFacts {
    /// The facts of `target`.
    pub fn of(target: &Target) -> TargetFacts {
        TargetFacts {
            path: target.path().to_path_buf(),
            size_bytes: target.size_bytes(),
            align: target.align(),
        }
    }
}

impl Calibration {
    /// From the measured `points` and the write-buffer `probe`: the figures
    /// ([`Summary::of`]), the model ([`model::derive`], with the buffer's measured size,
    /// the spread of 4 KiB reads and writes at QD1, the tails fitted to the queue-depth
    /// sweeps' p99s and the read/write interference fitted to the mixed points — the
    /// last two by simulating the points with `seed`, [`crate::simfit`]) and the
    /// profile named `name`, validated. No validation jobs yet ([`Calibration::checks`]
    /// is empty).
    pub fn derive(
        plan: Plan,
        points: Vec<Point>,
        probe: BufferProbe,
        name: &str,
        target: TargetFacts,
        seed: u64,
    ) -> Result<Calibration, CalibrateError> {
        // Each 4 KiB sweep point with its repeat from the grid's end, if measured.
        let fitted = crate::measure::merge_repeats(&points);
        let summary = Summary::of(&fitted)?;
        let mut anchors = summary.anchors();
        anchors.write_buffer_bytes = probe.size_bytes;
        let description = format!(
            "calibrated on {}: {:.0} us 4K read / {:.0} us write at QD1, {:.0}K read / {:.0}K write IOPS, knee QD {}",
            target.path.display(),
            summary.read.lat_qd1_ns / 1e3,
            summary.write.lat_qd1_ns / 1e3,
            summary.read.max_iops / 1e3,
            summary.write.max_iops / 1e3,
            summary.read.knee_qd
        );
        // The QD1 spread (median, p99) of 4 KiB reads and writes → `[service]`.
        let qd1 = |read_pct: u8| {
            crate::simfit::qd1_point(&fitted, read_pct)
                .map_or((0.0, 0.0), |p| (p.lat_p50_ns, p.lat_p99_ns))
        };
        let setup = FitSetup {
            ios: plan.fit_ios,
            seed,
            size_bytes: target.size_bytes,
        };
        let model = model::derive(&anchors)
            .with_spread(qd1(100), qd1(0))
            .with_placement(&fitted, &setup)?
            .with_read_block(&fitted, &setup)?;
        let profile = model.to_profile(name, &description);
        profile.validate()?;
        Ok(Calibration {
            plan,
            points,
            summary,
            probe,
            model,
            profile,
            checks: Vec::new(),
            validate_at: Vec::new(),
            target,
        })
    }

    /// The profile as TOML (`header` lines as comments, then the derivation), checked to
    /// load back as the same profile.
    pub fn profile_toml(&self, header: &[String]) -> Result<String, CalibrateError> {
        let text = model::profile_text(&self.profile, &self.model, header).map_err(|e| {
            CalibrateError::BadInput(format!("cannot write the profile as TOML: {e}"))
        })?;
        let back = DeviceProfile::from_toml_str(&text, &self.profile.name)?;
        debug_assert_eq!(back, self.profile, "the profile's TOML loads back the same");
        Ok(text)
    }

    /// The validation: the device's rounds `by_job` (by job of [`crate::validate::JOBS`],
    /// run at grid positions `at`, empty when unknown) checked against the simulator on
    /// [`Calibration::profile`] ([`crate::validate::checks`]).
    pub fn set_validation(
        &mut self,
        by_job: Vec<Vec<Window>>,
        at: Vec<usize>,
        seed: u64,
    ) -> Result<(), CalibrateError> {
        self.checks = crate::validate::checks(
            by_job,
            &self.plan,
            self.target.size_bytes,
            &self.profile,
            seed,
        )?;
        self.validate_at = at;
        Ok(())
    }

    /// The points the profile is fitted to: [`Calibration::points`] with each 4 KiB
    /// sweep point and its repeat together ([`crate::measure::merge_repeats`]).
    pub fn fitted_points(&self) -> Vec<Point> {
        crate::measure::merge_repeats(&self.points)
    }

    /// Everything as JSON: the target, the plan, the points, the figures, the model, the
    /// validation and the write-buffer probe.
    ///
    /// With `prov` (where and when it was measured) the file can be fitted again
    /// later with the run's provenance ([`saved`]).
    pub fn to_json(&self, prov: Option<&Provenance>) -> serde_json::Value {
        let (plan, s, m) = (&self.plan, &self.summary, &self.model);
        let fitted = self.fitted_points();
        let fit = |f: Option<LinearFit>| {
            f.map(|f| json!({"offset_ns": f.offset, "ns_per_byte": f.slope, "r2": f.r2, "sizes": f.n}))
        };
        let dir = |d: &DirSummary| {
            json!({
                "lat_qd1_ns": d.lat_qd1_ns, "max_iops": d.max_iops, "max_iops_qd": d.max_iops_qd,
                "knee_qd": d.knee_qd, "knee_iops": d.knee_iops, "knee_lat_ns": d.knee_lat_ns,
                "deepest_qd": d.deepest_qd, "deepest_iops": d.deepest_iops, "deepest_lat_ns": d.deepest_lat_ns,
                "knee_size": d.knee_size, "max_bw_bytes": d.max_bw_bytes,
                "min_efficient_size": d.min_efficient_size, "cost_model": fit(d.cost),
                "size_curve": d.size_curve,
            })
        };
        let win = |w: &Window| {
            json!({"iops": w.iops, "bw_bytes": w.bw_bytes, "lat_mean_ns": w.lat_mean_ns,
                   "lat_p50_ns": w.lat_p50_ns, "lat_p99_ns": w.lat_p99_ns})
        };
        let t = &self.target;
        let mut v = json!({
            "target": {"path": t.path.display().to_string(), "size_bytes": t.size_bytes, "align": t.align},
            "provenance": prov.map(|p| json!({
                "when": p.when, "host": p.host, "kernel": p.kernel, "path": p.path,
                "in_directory": p.in_directory, "device": p.device, "command": p.command,
            })),
            "plan": {
                "qds": plan.qds, "sizes": plan.sizes, "small_sizes": plan.small_sizes, "mid_sizes": plan.mid_sizes, "mixes": plan.mixes, "repeat_sweeps": plan.repeat_sweeps,
                "warmup_ns": plan.warmup_ns, "window_ns": plan.window_ns, "cap_ns": plan.cap_ns,
                "agree": plan.agree, "tolerance": plan.tolerance,
                "validate_ns": plan.validate_ns, "validate_rounds": plan.validate_rounds,
                "fit_ios": plan.fit_ios, "burst_pause_ns": plan.burst_pause_ns,
            },
            "points": self.points.iter().map(|p| json!({
                "role": p.role.name(), "rw": p.spec.mix_name(), "read_pct": p.spec.read_pct,
                "bs": p.spec.bs, "qd": p.spec.qd, "iops": p.iops, "bw_bytes": p.bw_bytes,
                "lat_mean_ns": p.lat_mean_ns, "lat_p50_ns": p.lat_p50_ns, "lat_p99_ns": p.lat_p99_ns, "lat_p99_pooled_ns": p.lat_p99_pooled_ns,
                "read_lat_mean_ns": p.read_lat_mean_ns, "write_lat_mean_ns": p.write_lat_mean_ns,
                "window_iops": p.window_iops, "steady": p.steady, "spread": p.spread, "wall_ns": p.wall_ns,
            })).collect::<Vec<_>>(),
            "summary": {"read": dir(&s.read), "write": dir(&s.write), "unsteady": s.unsteady},
            "model": {
                "fetch_ns": m.fetch_ns, "complete_ns": m.complete_ns, "read_cmd_ns": m.read_cmd_ns,
                "write_cmd_ns": m.write_cmd_ns, "front_end": m.front_end.name(),
                "front_end_fits": front_fits(&m.front_choice),
                "units": m.units, "stripe_bytes": m.stripe_bytes,
                "read_ns": m.read_ns, "write_ns": m.write_ns,
                "unit_bandwidth_bytes": m.unit_bandwidth_bytes, "bus_bandwidth_bytes": m.bus_bandwidth_bytes,
                "write_unit_bandwidth_bytes": m.write_unit_bandwidth_bytes,
                "write_bus_bandwidth_bytes": m.write_bus_bandwidth_bytes,
                "read_parallel_units": m.read_parallel_units,
                "write_parallel_units": m.write_parallel_units,
                "read_block_after_write_ns": m.read_block_after_write_ns,
                "placement": m.placement.name(),
                "read_load_exponent": m.read_load_exponent,
                "write_load_exponent": m.write_load_exponent,
                "service": m.service.as_ref().map(|v| json!({
                    "read": {"sigma": v.read.sigma, "tail_prob": v.read.tail_prob, "tail_mean_ns": v.read.tail_mean_ns},
                    "write": {"sigma": v.write.sigma, "tail_prob": v.write.tail_prob, "tail_mean_ns": v.write.tail_mean_ns},
                })),
                "sim_fits": m.sim_fits,
                "write_buffer_ack_ns": m.write_buffer.as_ref().map(|w| w.ack_ns),
                "write_buffer_bytes": m.write_buffer.as_ref().map(|w| w.capacity_bytes),
                "derivation": m.derivation, "caveats": m.caveats,
            },
            "validation_at": self.validate_at,
            "validation": self.checks.iter().map(|c| {
                let (ei, em, ep) = c.errors();
                let (si, sm, sp) = c.device_spread();
                json!({"job": c.job.label(), "real": win(&c.real),
                       "real_rounds_iops": c.real_rounds.iter().map(|w| w.iops).collect::<Vec<_>>(),
                       "real_rounds": c.real_rounds.iter().map(win).collect::<Vec<_>>(),
                       "device_spread_pct": {"iops": si, "mean": sm, "p99": sp},
                       "grid_drift_pct": c.grid_drift(&fitted),
                       "sim": win(&c.sim), "iops_error_pct": ei, "mean_error_pct": em, "p99_error_pct": ep})
            }).collect::<Vec<_>>(),
        });
        let probe = &self.probe;
        v["write_buffer"] = json!({
            "size_bytes": probe.size_bytes,
            "verdict": probe.verdict,
            "bursts": probe.bursts.iter().map(|b| json!({
                "bytes": b.bytes, "iops": b.iops, "lat_mean_ns": b.lat_mean_ns, "lat_p99_ns": b.lat_p99_ns,
            })).collect::<Vec<_>>(),
        });
        v
    }
}

/// The size-sweep fits that chose the front end, per direction, as JSON.
fn front_fits(c: &model::FrontChoice) -> serde_json::Value {
    let fit = |f: &model::front::SizeFit| json!({"cmd_ns": f.cmd_ns, "ns_per_byte": f.ns_per_byte, "rms_error_pct": f.rms_pct(), "sizes": f.points});
    let capped = |f: &model::front::SizeFit| json!({"cmd_ns": f.cmd_ns, "link_ns_per_byte": f.link_ns_per_byte, "ceiling_ns_per_byte": f.ns_per_byte, "break_bytes": f.break_bytes(), "rms_error_pct": f.rms_pct(), "sizes": f.points});
    let dir = |d: Option<&model::front::DirFits>| {
        d.map(|d| json!({"additive": fit(&d.additive), "max": fit(&d.max), "additive_capped": d.capped.as_ref().map(capped)}))
    };
    json!({"read": dir(c.of(false)), "write": dir(c.of(true)), "derivation": c.lines()})
}

#[cfg(test)]
mod tests;
