//! The tables `sluice calibrate` prints: the measured points, the derived figures and
//! model, the write bursts and the validation.

use std::io::Write;

use super::Calibration;
use crate::analysis::{self, LinearFit};
use crate::buffer::{BufferProbe, BURST_QD};
use crate::model::Model;
use crate::validate::{self, GOAL_IOPS_MEAN};
use crate::{Point, Summary};
use sluice_metrics::Table;

impl Calibration {
    /// The points, the figures and model, the bursts and the validation, one table after
    /// the other.
    pub fn print_tables(&self, out: &mut dyn Write) -> std::io::Result<()> {
        print_grid(out, &self.points)?;
        print_summary(out, &self.summary, &self.model)?;
        print_bursts(out, &self.probe)?;
        print_checks(out, self)
    }
}

/// A latency, as every table of sluice writes it (`850ns`, `12.3µs`, `1.25ms`).
pub use sluice_metrics::fmt_ns;

/// A size: `16 KiB`, `512 B`, `-` for none.
pub(crate) fn fmt_size(b: Option<u32>) -> String {
    match b {
        Some(b) if b >= 1024 && b % 1024 == 0 => format!("{} KiB", b / 1024),
        Some(b) => format!("{b} B"),
        None => "-".into(),
    }
}

fn print_grid(out: &mut dyn Write, points: &[Point]) -> std::io::Result<()> {
    writeln!(
        out,
        "Measured points (steady state: the last windows agree; policy none, one worker)"
    )?;
    let mut t = Table::new(
        &[
            ("part", false),
            ("mix", false),
            ("bs", true),
            ("qd", true),
            ("IOPS", true),
            ("MiB/s", true),
            ("lat mean", true),
            ("p50", true),
            ("p99", true),
            ("win", true),
            ("spread", true),
            ("", false),
        ],
        false,
    );
    for p in points {
        t.row(vec![
            p.role.name().to_string(),
            p.spec.mix_name(),
            fmt_size(Some(p.spec.bs))
                .replace(" KiB", "k")
                .replace(" B", ""),
            p.spec.qd.to_string(),
            format!("{:.0}", p.iops),
            format!("{:.1}", p.bw_bytes / (1 << 20) as f64),
            fmt_ns(p.lat_mean_ns),
            fmt_ns(p.lat_p50_ns),
            fmt_ns(p.lat_p99_ns),
            p.window_iops.len().to_string(),
            format!("{:.1}%", p.spread * 100.0),
            if p.steady { "" } else { "unsteady" }.to_string(),
        ]);
    }
    t.write(out)?;
    Ok(())
}

fn print_bursts(out: &mut dyn Write, p: &BufferProbe) -> std::io::Result<()> {
    writeln!(
        out,
        "\nWrite bursts (4 KiB random writes, QD{BURST_QD}, each after a pause)"
    )?;
    let mut t = Table::new(
        &[
            ("burst", true),
            ("IOPS", true),
            ("mean", true),
            ("p99", true),
        ],
        false,
    );
    for b in &p.bursts {
        t.row(vec![
            format!("{} MiB", b.bytes >> 20),
            format!("{:.0}", b.iops),
            fmt_ns(b.lat_mean_ns),
            fmt_ns(b.lat_p99_ns),
        ]);
    }
    t.write(out)?;
    writeln!(out, "{}", p.verdict)
}

fn print_summary(out: &mut dyn Write, s: &Summary, m: &Model) -> std::io::Result<()> {
    writeln!(out, "\nDerived figures")?;
    for (dir, d) in [("read", &s.read), ("write", &s.write)] {
        writeln!(out, "{dir}:")?;
        writeln!(out, "  QD1 4 KiB latency        {}", fmt_ns(d.lat_qd1_ns))?;
        writeln!(
            out,
            "  best 4 KiB IOPS          {:.0} (QD{})",
            d.max_iops, d.max_iops_qd
        )?;
        writeln!(out, "  knee QD (≥ 90 % of best) {}: {:.0} IOPS at {}; QD{}: {:+.0} % IOPS for {:.1}× the latency", d.knee_qd, d.knee_iops, fmt_ns(d.knee_lat_ns), d.deepest_qd, analysis::error_pct(d.deepest_iops, d.knee_iops), d.deepest_lat_ns / d.knee_lat_ns.max(1.0))?;
        writeln!(
            out,
            "  knee size (≥ 90 % of best bandwidth at the knee QD) {}; best bandwidth {:.1} MB/s",
            fmt_size(d.knee_size),
            d.max_bw_bytes / 1e6
        )?;
        writeln!(
            out,
            "  minimum efficient size (≥ 90 % of best IOPS) {}",
            fmt_size(d.min_efficient_size)
        )?;
        match d.cost {
            Some(f) => writeln!(
                out,
                "  cost model (QD1, FIOS §4.3) {:.1} µs + {:.0} ns/KiB, R² {:.3} over {} sizes",
                f.offset / 1e3,
                f.slope * 1024.0,
                f.r2,
                f.n
            )?,
            None => writeln!(out, "  cost model: fewer than two sizes measured at QD1")?,
        }
    }
    if let (Some(r), Some(w)) = (s.read.cost, s.write.cost) {
        writeln!(
            out,
            "FIOS policy with this cost model:\n  --policy fios:{}",
            fios_params(&r, &w)
        )?;
    }
    if s.unsteady > 0 {
        writeln!(
            out,
            "{} point(s) did not reach a steady state within the time cap (see 'spread')",
            s.unsteady
        )?;
    }
    writeln!(out, "\nModel (see the profile's header for the derivation)")?;
    writeln!(
        out,
        "  fetch {} ns, complete {} ns, read_cmd {} ns, write_cmd {} ns, {} units, read {} ns, write {} ns, unit {:.0} MB/s, bus {:.0} MB/s{}",
        m.fetch_ns,
        m.complete_ns,
        m.read_cmd_ns,
        m.write_cmd_ns,
        m.units,
        m.read_ns,
        m.write_ns,
        m.unit_bandwidth_bytes as f64 / 1e6,
        m.bus_bandwidth_bytes as f64 / 1e6,
        match &m.write_buffer {
            Some(w) => format!(", write buffer (ack {} ns)", w.ack_ns),
            None => String::new(),
        }
    )?;
    writeln!(out, "  front end ({}):", m.front_end.name())?;
    for line in m.front_choice.lines() {
        writeln!(out, "    {line}")?;
    }
    for c in &m.caveats {
        writeln!(out, "  caveat: {c}")?;
    }
    Ok(())
}

/// FIOS's cost-model parameters (`--policy fios:…`) from the read and write fits.
fn fios_params(r: &LinearFit, w: &LinearFit) -> String {
    format!(
        "read_cost_ns={:.0},read_ns_per_kb={:.0},write_cost_ns={:.0},write_ns_per_kb={:.0}",
        r.offset.max(0.0),
        (r.slope * 1024.0).max(0.0),
        w.offset.max(0.0),
        (w.slope * 1024.0).max(0.0)
    )
}

fn print_checks(out: &mut dyn Write, cal: &Calibration) -> std::io::Result<()> {
    let (checks, fitted) = (&cal.checks, cal.fitted_points());
    writeln!(
        out,
        "\nValidation: simulator on the new profile vs. the device (error = sim / real − 1; \
         the device's rounds ran {})",
        validate::describe_positions(&cal.validate_at, cal.points.len())
    )?;
    let mut t = Table::new(
        &[
            ("job", false),
            ("real IOPS", true),
            ("sim IOPS", true),
            ("err", true),
            ("real lat", true),
            ("sim lat", true),
            ("err", true),
            ("real p99", true),
            ("sim p99", true),
            ("err", true),
            ("device's rounds apart (IOPS/mean/p99)", false),
            ("grid → validation (IOPS)", false),
        ],
        false,
    );
    let pct = |e: f64| format!("{e:+.1}%");
    let mut moved = 0;
    for c in checks {
        let (ei, em, ep) = c.errors();
        let (si, sm, sp) = c.device_spread();
        let drift = c.grid_drift(&fitted);
        if drift.is_some_and(|d| d.abs() > GOAL_IOPS_MEAN) {
            moved += 1;
        }
        t.row(vec![
            c.job.label(),
            format!("{:.0}", c.real.iops),
            format!("{:.0}", c.sim.iops),
            pct(ei),
            fmt_ns(c.real.lat_mean_ns),
            fmt_ns(c.sim.lat_mean_ns),
            pct(em),
            fmt_ns(c.real.lat_p99_ns),
            fmt_ns(c.sim.lat_p99_ns),
            pct(ep),
            format!("{si:.0}/{sm:.0}/{sp:.0}%"),
            drift.map_or("-".into(), pct),
        ]);
    }
    t.write(out)?;
    writeln!(
        out,
        "(the device's rounds apart: (max − min) / median of its rounds of the job; an \
         error below it is within what the device repeats. grid → validation: the \
         device's IOPS in the job against the grid point that measured the same, \
         whose figures the profile was fitted to)"
    )?;
    if moved > 0 {
        writeln!(
            out,
            "the device moved by more than the {GOAL_IOPS_MEAN:.0} % goal between the grid and the validation on {moved} job(s): \
             there the simulator's error is mostly the device's drift (on a shared disk, run again and compare)"
        )?;
    }
    Ok(())
}
