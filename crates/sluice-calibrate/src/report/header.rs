//! The profile's header: when, where and how it was measured ([`Provenance`]), what
//! was measured and how the simulator on it compares with the device.

use std::path::Path;

use super::table::fmt_size;
use super::Calibration;
use crate::buffer::BURST_QD;
use crate::validate::{self, GOAL_IOPS_MEAN, GOAL_P99};
use crate::DirSummary;

/// Where and when a calibration ran, as its profile's header says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Provenance {
    /// When, UTC, RFC 3339 to the second (`2026-11-23T12:22:43Z`).
    pub when: String,
    /// The host's name.
    pub host: String,
    /// The kernel's release.
    pub kernel: String,
    /// The path given to `sluice calibrate`.
    pub path: String,
    /// Whether that path is a directory (the file measured was a temporary one in it).
    pub in_directory: bool,
    /// The block device holding the file measured, as `vda (253:0)` (`?` unknown).
    pub device: String,
    /// The command line.
    pub command: String,
}

impl Provenance {
    /// This run's: now, this host, the path given (`given`) and the file measured
    /// (`measured`), this process's command line.
    pub fn of_this_run(given: &Path, measured: &Path) -> Provenance {
        Provenance {
            when: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
            host: read_trim("/proc/sys/kernel/hostname"),
            kernel: read_trim("/proc/sys/kernel/osrelease"),
            path: given.display().to_string(),
            in_directory: given.is_dir(),
            device: device_of(measured),
            command: std::env::args().collect::<Vec<_>>().join(" "),
        }
    }
}

impl Provenance {
    /// A saved calibration's (`measured`, if its file says) refitted now from `file`:
    /// where and when it was measured, and when, from which file and by which command
    /// it was fitted again; without the saved provenance, what is known (the file
    /// measured, `target`) and "unknown".
    pub fn refitted(measured: Option<Provenance>, file: &Path, target: &Path) -> Provenance {
        let now = Provenance::of_this_run(file, file);
        match measured {
            Some(p) => Provenance {
                when: format!(
                    "{} (refitted {} from {} by: {})",
                    p.when,
                    now.when,
                    file.display(),
                    now.command
                ),
                ..p
            },
            None => Provenance {
                when: format!(
                    "unknown: refitted {} from {}, a file that does not say when it was measured",
                    now.when,
                    file.display()
                ),
                path: target.display().to_string(),
                in_directory: false,
                device: "?".into(),
                host: "?".into(),
                kernel: "?".into(),
                ..now
            },
        }
    }
}

fn read_trim(path: &str) -> String {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "?".into())
}

/// The block device holding `path`, as `vda (253:0)` where /sys says.
fn device_of(path: &Path) -> String {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let probe = if path.exists() {
        path.to_path_buf()
    } else {
        path.parent().unwrap_or(Path::new(".")).to_path_buf()
    };
    let Ok(m) = std::fs::metadata(&probe) else {
        return "?".into();
    };
    let dev = if m.file_type().is_block_device() {
        m.rdev()
    } else {
        m.dev()
    };
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    let uevent = std::fs::read_to_string(format!("/sys/dev/block/{major}:{minor}/uevent"))
        .unwrap_or_default();
    let name = uevent
        .lines()
        .find_map(|l| l.strip_prefix("DEVNAME="))
        .unwrap_or("?");
    format!("{name} ({major}:{minor})")
}

impl Calibration {
    /// The profile's header lines (the TOML comment above the derivation): what the
    /// profile is, `prov`, the plan, the figures per direction, the validation against
    /// its goals and the write-buffer probe's verdict.
    pub fn header(&self, prov: &Provenance) -> Vec<String> {
        let (plan, s, t) = (&self.plan, &self.summary, &self.target);
        let mut h = vec![
            format!("{} — a device profile measured by `sluice calibrate`.", self.profile.name),
            "MACHINE-SPECIFIC: it describes the device below as this host saw it on the date below,".into(),
            "not a product; measure again (sluice calibrate DIR --out FILE) on another machine.".into(),
            String::new(),
            format!("When:  {}", prov.when),
            format!(
                "Where: host {}, Linux {}, {} {} on block device {}, {} MiB measured, O_DIRECT alignment {} B",
                prov.host,
                prov.kernel,
                if prov.in_directory { "a temporary file in" } else { "file" },
                prov.path,
                prov.device,
                t.size_bytes >> 20,
                t.align
            ),
            format!("How:   {}", prov.command),
            format!(
                "       io_uring engine, policy none, one worker; per point a {} ms warm-up, then {} ms windows until the last {} agree within {:.0} % (at most {} ms); {} points, {} not steady{}",
                plan.warmup_ns / 1_000_000,
                plan.window_ns / 1_000_000,
                plan.agree,
                plan.tolerance * 100.0,
                plan.cap_ns / 1_000_000,
                self.points.len(),
                self.points.iter().filter(|p| !p.steady).count(),
                match self.fitted_points().len() {
                    n if n < self.points.len() => format!(
                        " ({n} fitted, each sweep depth's two passes as one; {} of them not steady)",
                        s.unsteady
                    ),
                    _ => String::new(),
                }
            ),
        ];
        if let (Some(r), Some(w)) = (
            crate::measure::repeat_apart_pct(&self.points, 100),
            crate::measure::repeat_apart_pct(&self.points, 0),
        ) {
            h.push(format!(
                "       the 4 KiB sweeps measured twice, at the grid's start and end, and fitted as the two passes together; their IOPS apart by at most {r:.1} % (reads) and {w:.1} % (writes)"
            ));
        }
        h.push(String::new());
        h.push("Measured (means of the agreeing windows):".into());
        h.extend(dir_lines("reads", &s.read));
        h.extend(dir_lines("writes", &s.write));
        h.push(String::new());
        h.push(
            "Validation (simulator on this profile vs. the device; real = median of rounds):"
                .into(),
        );
        let checks = &self.checks;
        let fitted = self.fitted_points();
        if !checks.is_empty() {
            h.push(format!(
                "  the device's rounds ran {}",
                validate::describe_positions(&self.validate_at, self.points.len())
            ));
        }
        for c in checks {
            let (ei, em, ep) = c.errors();
            let (si, sm, sp) = c.device_spread();
            let drift = c.grid_drift(&fitted).map_or(String::new(), |d| {
                format!("; the device {d:+.1} % from the grid's IOPS at that point")
            });
            h.push(format!(
                "  {}: IOPS real {:.0} sim {:.0} ({ei:+.1} %); mean real {:.1} µs sim {:.1} µs ({em:+.1} %); p99 real {:.1} µs sim {:.1} µs ({ep:+.1} %); the device's rounds {si:.0} / {sm:.0} / {sp:.0} % apart{drift}",
                c.job.label(),
                c.real.iops,
                c.sim.iops,
                c.real.lat_mean_ns / 1e3,
                c.sim.lat_mean_ns / 1e3,
                c.real.lat_p99_ns / 1e3,
                c.sim.lat_p99_ns / 1e3,
            ));
        }
        h.push(format!(
            "  goals: IOPS and mean within {:.0} %, p99 within {:.0} %; met by {} of {} jobs",
            GOAL_IOPS_MEAN,
            GOAL_P99,
            checks.iter().filter(|c| c.meets_goals()).count(),
            checks.len()
        ));
        h.push(format!(
            "  IOPS and mean within {:.0} % (p99 aside): {} of {} jobs; p99 within {:.0} % (IOPS and mean aside): {} of {}",
            GOAL_IOPS_MEAN,
            checks
                .iter()
                .filter(|c| {
                    let (i, m, _) = c.errors();
                    i.abs() <= GOAL_IOPS_MEAN && m.abs() <= GOAL_IOPS_MEAN
                })
                .count(),
            checks.len(),
            GOAL_P99,
            checks
                .iter()
                .filter(|c| c.errors().2.abs() <= GOAL_P99)
                .count(),
            checks.len()
        ));
        h.push(format!(
            "Write buffer (bursts of 4 KiB random writes at QD{}, each after a {} ms pause): {}",
            BURST_QD,
            plan.burst_pause_ns / 1_000_000,
            self.probe.verdict
        ));
        h
    }
}

/// One direction's figures, and its cost model if there is one.
fn dir_lines(label: &str, d: &DirSummary) -> Vec<String> {
    let mut v = vec![format!(
        "  {label}: QD1 4 KiB {:.1} µs; best 4 KiB IOPS {:.0} at QD{}; knee QD {} ({:.0} IOPS, {:.1} µs; QD{}: {:.0} IOPS, {:.1} µs); knee size {}; best bandwidth {:.1} MB/s; minimum efficient size {}",
        d.lat_qd1_ns / 1e3,
        d.max_iops,
        d.max_iops_qd,
        d.knee_qd,
        d.knee_iops,
        d.knee_lat_ns / 1e3,
        d.deepest_qd,
        d.deepest_iops,
        d.deepest_lat_ns / 1e3,
        fmt_size(d.knee_size),
        d.max_bw_bytes / 1e6,
        fmt_size(d.min_efficient_size)
    )];
    if let Some(f) = d.cost {
        v.push(format!(
            "  {label} cost model (FIOS §4.3, least squares at QD1): {:.1} µs + {:.1} ns/KiB, R² {:.3}",
            f.offset / 1e3,
            f.slope * 1024.0,
            f.r2
        ));
    }
    v
}
