//! `sluice calibrate`: measure a device through the real engine, derive a simulated
//! device profile, and check the simulator against the device on validation jobs.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;

use sluice::calibrate::validate::{self, Check};
use sluice::calibrate::{
    self, analysis, model, DirSummary, Plan, Point, Progress, Role, Summary, Target, Window,
};
use sluice::cli::CliError;
use sluice::device::DeviceProfile;

#[derive(clap::Args, Debug)]
pub struct CalibrateArgs {
    /// A directory (a temporary file is created there and removed at the end), or a
    /// file or block device to measure in place (see --allow-*).
    path: PathBuf,
    /// Write the device profile (TOML, for `sluice sim --device FILE`) here; without
    /// it the profile is printed after the tables.
    #[arg(long, short = 'o')]
    out: Option<PathBuf>,
    /// Bytes of the file to measure (`1g`, `256m`; default 1g, 64m with --quick).
    #[arg(long)]
    size: Option<String>,
    /// A short grid (a few seconds): QD 1, 4, 16; 4, 16, 64 KiB; short windows.
    #[arg(long)]
    quick: bool,
    /// Allow a block device as PATH (the measurement writes to it: its data is destroyed).
    #[arg(long)]
    allow_device: bool,
    /// Allow writing to an existing file that sluice did not create.
    #[arg(long)]
    allow_write_existing: bool,
    /// Name of the profile (default: the --out file's stem, else `calibrated`).
    #[arg(long)]
    name: Option<String>,
    /// Write the raw points, the derived figures and the validation as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Seed of the I/O generators and of the simulation.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// No progress on stderr.
    #[arg(long, short = 'q')]
    quiet: bool,
}

fn bad(msg: String) -> CliError {
    CliError::Calibrate(calibrate::CalibrateError::BadInput(msg))
}

pub fn cmd_calibrate(args: CalibrateArgs) -> Result<(), CliError> {
    let mut plan = if args.quick {
        Plan::quick()
    } else {
        Plan::full()
    };
    if let Some(s) = &args.size {
        plan.size_bytes = sluice::workload::units::parse_positive_size(s)
            .map_err(|e| bad(format!("--size '{s}': {e}")))?;
    }
    plan.check()?;
    let name = match (&args.name, &args.out) {
        (Some(n), _) => n.clone(),
        (None, Some(o)) => o
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "calibrated".into()),
        (None, None) => "calibrated".into(),
    };
    if name.trim().is_empty() {
        return Err(bad("--name: give the profile a non-empty name".into()));
    }
    if let Some(out) = &args.out {
        let dir = out
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        if !dir.is_dir() {
            return Err(bad(format!(
                "--out {}: the directory {} does not exist",
                out.display(),
                dir.display()
            )));
        }
    }

    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(sig, 130, Arc::clone(&stop))?;
        signal_hook::flag::register(sig, Arc::clone(&stop))?;
    }
    let quiet = args.quiet;
    let term = !quiet && std::io::stderr().is_terminal();
    let started = Instant::now();

    // The target: checks, then the lay-out of a new file.
    let max_qd = plan.qds.iter().copied().max().unwrap_or(1);
    let mut lay_bar: Option<ProgressBar> = None;
    let target = Target::open(
        &args.path,
        plan.size_bytes,
        max_qd,
        args.allow_device,
        args.allow_write_existing,
        &stop,
        &mut |done, total| {
            if term && lay_bar.is_none() && done < total {
                lay_bar = Some(bar("laying out", total));
            }
            if let Some(b) = &lay_bar {
                b.set_position(done);
            }
        },
    )?;
    if let Some(b) = lay_bar {
        b.finish_and_clear();
    }
    for w in target.warnings() {
        eprintln!("sluice: warning: {w}");
    }
    if !quiet {
        eprintln!(
            "sluice: calibrating {} ({} MiB{}, alignment {} B): {} points",
            target.path().display(),
            target.size_bytes() >> 20,
            if target.created() { ", created" } else { "" },
            target.align(),
            plan.point_count(target.align())
        );
    }

    // The grid.
    let mut pbar: Option<ProgressBar> = None;
    let points = calibrate::measure(&target, &plan, args.seed, &stop, &mut |p| match p {
        Progress::Start { index, total, spec } => {
            if term {
                let b = pbar.get_or_insert_with(|| bar("calibrate", total as u64));
                b.set_position(index as u64);
                b.set_message(spec.label());
            }
        }
        Progress::Done {
            index,
            total,
            point,
        } => {
            if !term && !quiet {
                eprintln!(
                    "sluice: [{}/{total}] {}: {:.0} IOPS, {} mean{}",
                    index + 1,
                    point.spec.label(),
                    point.iops,
                    fmt_ns(point.lat_mean_ns),
                    if point.steady { "" } else { " (not steady)" }
                );
            }
        }
    })?;
    if let Some(b) = pbar {
        b.finish_and_clear();
    }
    let summary = Summary::of(&points)?;
    // The write buffer: bursts of rising size after pauses (calibrate/buffer.rs).
    let probe = calibrate::buffer::probe(
        &target,
        plan.burst_pause_ns,
        args.seed,
        &stop,
        &mut |bytes| {
            if !quiet {
                eprintln!(
                    "sluice: write burst of {} MiB (after a {} ms pause)",
                    bytes >> 20,
                    plan.burst_pause_ns / 1_000_000
                );
            }
        },
    )?;
    let mut anchors = summary.anchors();
    anchors.write_buffer_bytes = probe.size_bytes;
    let m = model::derive(&anchors);
    let description = format!(
        "calibrated on {}: {:.0} us 4K read / {:.0} us write at QD1, {:.0}K read / {:.0}K write IOPS, knee QD {}",
        target.path().display(),
        summary.read.lat_qd1_ns / 1e3,
        summary.write.lat_qd1_ns / 1e3,
        summary.read.max_iops / 1e3,
        summary.write.max_iops / 1e3,
        summary.read.knee_qd
    );
    // The QD1 spread (median, p99) of 4 KiB reads and writes → `[service]`.
    let qd1 = |read_pct: u8| {
        points
            .iter()
            .find(|p| p.role == Role::QdSweep && p.spec.read_pct == read_pct && p.spec.qd == 1)
            .map_or((0.0, 0.0), |p| (p.lat_p50_ns, p.lat_p99_ns))
    };
    let m = m.with_spread(qd1(100), qd1(0));
    let profile = m.to_profile(&name, &description);
    profile
        .validate()
        .map_err(calibrate::CalibrateError::from)?;

    // Validation: the same jobs on the device (median of rounds) and in the simulator.
    let checks = validate::validate(&target, &plan, &profile, args.seed, &stop, &mut |job| {
        if !quiet {
            eprintln!("sluice: validating {} (real, then simulated)", job.label());
        }
    })?;
    let created = target.created();
    let target_path = target.path().to_path_buf();
    let align = target.align();
    let size_bytes = target.size_bytes();
    drop(target);
    if !quiet && created {
        eprintln!("sluice: removed {}", target_path.display());
    }

    let header = header_lines(
        &args,
        &plan,
        &summary,
        &points,
        &checks,
        &target_path,
        size_bytes,
        align,
        &name,
    );
    let mut header = header;
    header.push(format!(
        "Write buffer (bursts of 4 KiB random writes at QD{}, each after a {} ms pause): {}",
        calibrate::buffer::BURST_QD,
        plan.burst_pause_ns / 1_000_000,
        probe.verdict
    ));
    let text = model::profile_text(&profile, &m, &header)
        .map_err(|e| bad(format!("cannot write the profile as TOML: {e}")))?;
    // What is written loads back as the same profile.
    debug_assert_eq!(
        DeviceProfile::from_toml_str(&text, &name).ok().as_ref(),
        Some(&profile)
    );
    DeviceProfile::from_toml_str(&text, &name)?;

    let mut out = std::io::stdout().lock();
    print_grid(&mut out, &points)?;
    print_summary(&mut out, &summary, &m)?;
    print_bursts(&mut out, &probe)?;
    print_checks(&mut out, &checks)?;
    match &args.out {
        Some(path) => {
            std::fs::write(path, &text).map_err(|e| {
                bad(format!(
                    "cannot write the profile to {}: {e}",
                    path.display()
                ))
            })?;
            writeln!(
                out,
                "\nprofile written to {} (try: sluice sim JOB.fio --device {})",
                path.display(),
                path.display()
            )?;
        }
        None => {
            writeln!(out, "\nprofile (give --out FILE to save it):\n")?;
            write!(out, "{text}")?;
        }
    }
    if let Some(path) = &args.json {
        let v = to_json(
            &plan,
            &points,
            &summary,
            &m,
            &checks,
            &target_path,
            size_bytes,
            align,
        );
        let mut v = v;
        v["write_buffer"] = json!({
            "size_bytes": probe.size_bytes,
            "verdict": probe.verdict,
            "bursts": probe.bursts.iter().map(|b| json!({
                "bytes": b.bytes, "iops": b.iops, "lat_mean_ns": b.lat_mean_ns, "lat_p99_ns": b.lat_p99_ns,
            })).collect::<Vec<_>>(),
        });
        let s = serde_json::to_string_pretty(&v).expect("JSON values serialize");
        std::fs::write(path, s + "\n")
            .map_err(|e| bad(format!("cannot write {}: {e}", path.display())))?;
    }
    if !quiet {
        eprintln!(
            "sluice: calibration took {:.1} s",
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

fn bar(prefix: &str, len: u64) -> ProgressBar {
    let b = ProgressBar::new(len);
    b.set_style(
        ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {elapsed} {msg}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    b.set_prefix(prefix.to_string());
    b
}

fn fmt_ns(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.2}ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.1}µs", ns / 1e3)
    } else {
        format!("{ns:.0}ns")
    }
}

fn fmt_size(b: Option<u32>) -> String {
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
    let head = format!(
        "{:<10} {:<14} {:>5} {:>3} {:>8} {:>8} {:>9} {:>9} {:>9} {:>4} {:>7}",
        "part", "mix", "bs", "qd", "IOPS", "MiB/s", "lat mean", "p50", "p99", "win", "spread"
    );
    writeln!(out, "{head}")?;
    writeln!(out, "{}", "-".repeat(head.chars().count()))?;
    for p in points {
        writeln!(
            out,
            "{:<10} {:<14} {:>5} {:>3} {:>8.0} {:>8.1} {:>9} {:>9} {:>9} {:>4} {:>6.1}%{}",
            p.role.name(),
            p.spec.mix_name(),
            fmt_size(Some(p.spec.bs))
                .replace(" KiB", "k")
                .replace(" B", ""),
            p.spec.qd,
            p.iops,
            p.bw_bytes / (1 << 20) as f64,
            fmt_ns(p.lat_mean_ns),
            fmt_ns(p.lat_p50_ns),
            fmt_ns(p.lat_p99_ns),
            p.window_iops.len(),
            p.spread * 100.0,
            if p.steady { "" } else { " unsteady" }
        )?;
    }
    Ok(())
}

fn print_bursts(out: &mut dyn Write, p: &calibrate::buffer::BufferProbe) -> std::io::Result<()> {
    writeln!(
        out,
        "\nWrite bursts (4 KiB random writes, QD{}, each after a pause)",
        calibrate::buffer::BURST_QD
    )?;
    writeln!(
        out,
        "{:>9} {:>9} {:>10} {:>10}",
        "burst", "IOPS", "mean", "p99"
    )?;
    for b in &p.bursts {
        writeln!(
            out,
            "{:>5} MiB {:>9.0} {:>10} {:>10}",
            b.bytes >> 20,
            b.iops,
            fmt_ns(b.lat_mean_ns),
            fmt_ns(b.lat_p99_ns)
        )?;
    }
    writeln!(out, "{}", p.verdict)
}

fn print_summary(out: &mut dyn Write, s: &Summary, m: &model::Model) -> std::io::Result<()> {
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
    for c in &m.caveats {
        writeln!(out, "  caveat: {c}")?;
    }
    Ok(())
}

fn fios_params(r: &analysis::LinearFit, w: &analysis::LinearFit) -> String {
    format!(
        "read_cost_ns={:.0},read_ns_per_kb={:.0},write_cost_ns={:.0},write_ns_per_kb={:.0}",
        r.offset.max(0.0),
        (r.slope * 1024.0).max(0.0),
        w.offset.max(0.0),
        (w.slope * 1024.0).max(0.0)
    )
}

fn print_checks(out: &mut dyn Write, checks: &[Check]) -> std::io::Result<()> {
    writeln!(
        out,
        "\nValidation: simulator on the new profile vs. the device (error = sim / real − 1)"
    )?;
    let head = format!(
        "{:<22} {:>9} {:>9} {:>7} {:>9} {:>9} {:>7} {:>9} {:>9} {:>7}",
        "job",
        "real IOPS",
        "sim IOPS",
        "err",
        "real lat",
        "sim lat",
        "err",
        "real p99",
        "sim p99",
        "err"
    );
    writeln!(out, "{head}")?;
    writeln!(out, "{}", "-".repeat(head.chars().count()))?;
    for c in checks {
        let (ei, em, ep) = c.errors();
        writeln!(
            out,
            "{:<22} {:>9.0} {:>9.0} {:>+6.1}% {:>9} {:>9} {:>+6.1}% {:>9} {:>9} {:>+6.1}%",
            c.job.label(),
            c.real.iops,
            c.sim.iops,
            ei,
            fmt_ns(c.real.lat_mean_ns),
            fmt_ns(c.sim.lat_mean_ns),
            em,
            fmt_ns(c.real.lat_p99_ns),
            fmt_ns(c.sim.lat_p99_ns),
            ep
        )?;
    }
    Ok(())
}

/// Now in UTC, as RFC 3339 to the second (`2026-11-23T12:22:43Z`).
fn utc_now() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
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

#[allow(clippy::too_many_arguments)]
fn header_lines(
    args: &CalibrateArgs,
    plan: &Plan,
    s: &Summary,
    points: &[Point],
    checks: &[Check],
    path: &Path,
    size_bytes: u64,
    align: u32,
    name: &str,
) -> Vec<String> {
    let cmdline: Vec<String> = std::env::args().collect();
    let mut h = vec![
        format!("{name} — a device profile measured by `sluice calibrate`."),
        "MACHINE-SPECIFIC: it describes the device below as this host saw it on the date below,".into(),
        "not a product; measure again (sluice calibrate DIR --out FILE) on another machine.".into(),
        String::new(),
        format!("When:  {}", utc_now()),
        format!(
            "Where: host {}, Linux {}, {} {} on block device {}, {} MiB measured, O_DIRECT alignment {align} B",
            read_trim("/proc/sys/kernel/hostname"),
            read_trim("/proc/sys/kernel/osrelease"),
            if args.path.is_dir() { "a temporary file in" } else { "file" },
            args.path.display(),
            device_of(path),
            size_bytes >> 20
        ),
        format!("How:   {}", cmdline.join(" ")),
        format!(
            "       io_uring engine, policy none, one worker; per point a {} ms warm-up, then {} ms windows until the last {} agree within {:.0} % (at most {} ms); {} points, {} not steady",
            plan.warmup_ns / 1_000_000,
            plan.window_ns / 1_000_000,
            plan.agree,
            plan.tolerance * 100.0,
            plan.cap_ns / 1_000_000,
            points.len(),
            s.unsteady
        ),
        String::new(),
        "Measured (means of the agreeing windows):".into(),
    ];
    let dir = |label: &str, d: &DirSummary| -> Vec<String> {
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
    };
    h.extend(dir("reads", &s.read));
    h.extend(dir("writes", &s.write));
    h.push(String::new());
    h.push(
        "Validation (simulator on this profile vs. the device; real = median of rounds):".into(),
    );
    for c in checks {
        let (ei, em, ep) = c.errors();
        h.push(format!(
            "  {}: IOPS real {:.0} sim {:.0} ({ei:+.1} %); mean real {:.1} µs sim {:.1} µs ({em:+.1} %); p99 real {:.1} µs sim {:.1} µs ({ep:+.1} %)",
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
        validate::GOAL_IOPS_MEAN,
        validate::GOAL_P99,
        checks.iter().filter(|c| c.meets_goals()).count(),
        checks.len()
    ));
    h.push(format!(
        "  IOPS and mean within {:.0} % (p99 aside): {} of {} jobs; the spread is fitted at QD1 only (no tail at depth)",
        validate::GOAL_IOPS_MEAN,
        checks
            .iter()
            .filter(|c| {
                let (i, m, _) = c.errors();
                i.abs() <= validate::GOAL_IOPS_MEAN && m.abs() <= validate::GOAL_IOPS_MEAN
            })
            .count(),
        checks.len()
    ));
    h
}

#[allow(clippy::too_many_arguments)]
fn to_json(
    plan: &Plan,
    points: &[Point],
    s: &Summary,
    m: &model::Model,
    checks: &[Check],
    path: &Path,
    size_bytes: u64,
    align: u32,
) -> serde_json::Value {
    let fit = |f: Option<analysis::LinearFit>| {
        f.map(|f| json!({"offset_ns": f.offset, "ns_per_byte": f.slope, "r2": f.r2, "sizes": f.n}))
    };
    let dir = |d: &DirSummary| {
        json!({
            "lat_qd1_ns": d.lat_qd1_ns, "max_iops": d.max_iops, "max_iops_qd": d.max_iops_qd,
            "knee_qd": d.knee_qd, "knee_iops": d.knee_iops, "knee_lat_ns": d.knee_lat_ns,
            "deepest_qd": d.deepest_qd, "deepest_iops": d.deepest_iops, "deepest_lat_ns": d.deepest_lat_ns,
            "knee_size": d.knee_size, "max_bw_bytes": d.max_bw_bytes,
            "min_efficient_size": d.min_efficient_size, "cost_model": fit(d.cost),
        })
    };
    let win = |w: &Window| {
        json!({"iops": w.iops, "bw_bytes": w.bw_bytes, "lat_mean_ns": w.lat_mean_ns,
               "lat_p50_ns": w.lat_p50_ns, "lat_p99_ns": w.lat_p99_ns})
    };
    json!({
        "target": {"path": path.display().to_string(), "size_bytes": size_bytes, "align": align},
        "plan": {
            "qds": plan.qds, "sizes": plan.sizes, "small_sizes": plan.small_sizes, "mixes": plan.mixes,
            "warmup_ns": plan.warmup_ns, "window_ns": plan.window_ns, "cap_ns": plan.cap_ns,
            "agree": plan.agree, "tolerance": plan.tolerance,
            "validate_ns": plan.validate_ns, "validate_rounds": plan.validate_rounds,
        },
        "points": points.iter().map(|p| json!({
            "role": p.role.name(), "rw": p.spec.mix_name(), "read_pct": p.spec.read_pct,
            "bs": p.spec.bs, "qd": p.spec.qd, "iops": p.iops, "bw_bytes": p.bw_bytes,
            "lat_mean_ns": p.lat_mean_ns, "lat_p50_ns": p.lat_p50_ns, "lat_p99_ns": p.lat_p99_ns,
            "read_lat_mean_ns": p.read_lat_mean_ns, "write_lat_mean_ns": p.write_lat_mean_ns,
            "window_iops": p.window_iops, "steady": p.steady, "spread": p.spread, "wall_ns": p.wall_ns,
        })).collect::<Vec<_>>(),
        "summary": {"read": dir(&s.read), "write": dir(&s.write), "unsteady": s.unsteady},
        "model": {
            "fetch_ns": m.fetch_ns, "complete_ns": m.complete_ns, "read_cmd_ns": m.read_cmd_ns,
            "write_cmd_ns": m.write_cmd_ns, "units": m.units, "stripe_bytes": m.stripe_bytes,
            "read_ns": m.read_ns, "write_ns": m.write_ns,
            "unit_bandwidth_bytes": m.unit_bandwidth_bytes, "bus_bandwidth_bytes": m.bus_bandwidth_bytes,
            "write_unit_bandwidth_bytes": m.write_unit_bandwidth_bytes,
            "write_bus_bandwidth_bytes": m.write_bus_bandwidth_bytes,
            "read_parallel_units": m.read_parallel_units,
            "write_parallel_units": m.write_parallel_units,
            "write_buffer_ack_ns": m.write_buffer.as_ref().map(|w| w.ack_ns),
            "write_buffer_bytes": m.write_buffer.as_ref().map(|w| w.capacity_bytes),
            "derivation": m.derivation, "caveats": m.caveats,
        },
        "validation": checks.iter().map(|c| {
            let (ei, em, ep) = c.errors();
            json!({"job": c.job.label(), "real": win(&c.real), "real_rounds_iops": c.real_rounds,
                   "sim": win(&c.sim), "iops_error_pct": ei, "mean_error_pct": em, "p99_error_pct": ep})
        }).collect::<Vec<_>>(),
    })
}
