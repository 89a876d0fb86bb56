//! `sluice calibrate`: measure a device through the real engine, derive a simulated
//! device profile, and check the simulator against the device on validation jobs.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};

use sluice::calibrate::report::fmt_ns;
use sluice::calibrate::{
    self, validate, Calibration, Plan, Progress, Provenance, Target, TargetFacts,
};
use sluice::cli::CliError;

#[derive(clap::Args, Debug)]
pub struct CalibrateArgs {
    /// A directory (a temporary file is created there and removed at the end), or a
    /// file or block device to measure in place (see --allow-*). Not with --refit.
    #[arg(required_unless_present = "refit")]
    path: Option<PathBuf>,
    /// Measure nothing: fit the points of a saved calibration (a --json file) again with
    /// this build, and simulate its validation jobs on the new profile against the
    /// device rounds the file holds.
    #[arg(long, value_name = "JSON", conflicts_with_all = ["path", "size", "quick", "allow_device", "allow_write_existing"])]
    refit: Option<PathBuf>,
    /// Write the device profile (TOML, for `sluice sim --device FILE`) here; without
    /// it the profile is printed after the tables.
    #[arg(long, short = 'o')]
    out: Option<PathBuf>,
    /// Bytes of the file to measure (`1g`, `256m`; default 1g, 64m with --quick).
    #[arg(long)]
    size: Option<String>,
    /// A short grid (a few seconds): QD 1, 4, 16; 4, 16, 64 KiB; 16 KiB at the middle depth; short windows.
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

impl CalibrateArgs {
    /// `-q`.
    pub(crate) fn quiet(&self) -> bool {
        self.quiet
    }
}

pub fn cmd_calibrate(args: CalibrateArgs) -> Result<(), CliError> {
    let name = profile_name(&args)?;
    if let Some(file) = &args.refit {
        return refit(&args, file, &name);
    }
    let plan = plan_of(&args)?;
    let given = args
        .path
        .clone()
        .expect("clap requires PATH without --refit");
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
        &given,
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
        sluice::cli::warn(w);
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

    // The grid, with the validation's device rounds spread over it (before the first
    // point, in the middle, after the last: validate::SpreadRounds), so that they
    // see the device over the same minutes as the points the profile is fitted to.
    let total = plan.point_count(target.align());
    let mut rounds = validate::SpreadRounds::new(total, plan.validate_rounds);
    let pbar = term.then(|| bar("calibrate", total as u64));
    let mut between = |k: usize| {
        let n = rounds.at.len();
        rounds.run_due(k, &target, &plan, args.seed, &stop, &mut |r, job| {
            let msg = format!("validation round {} of {n}: {}", r + 1, job.label());
            match &pbar {
                Some(b) => b.set_message(msg),
                None if !quiet => eprintln!("sluice: {msg} (on the device)"),
                None => {}
            }
        })
    };
    let points = calibrate::measure(
        &target,
        &plan,
        args.seed,
        &stop,
        &mut |p| match p {
            Progress::Start { index, spec, .. } => {
                if let Some(b) = &pbar {
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
        },
        &mut between,
    )?;
    if let Some(b) = pbar {
        b.finish_and_clear();
    }
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
    let facts = TargetFacts::of(&target);
    if !quiet {
        eprintln!("sluice: fitting the tails and the read/write interference (simulating the grid's points)");
    }
    let mut cal = Calibration::derive(plan, points, probe, &name, facts, args.seed)?;

    // Validation: the device's rounds (median) against the simulator on the profile.
    if !quiet {
        eprintln!("sluice: simulating the validation jobs on the new profile");
    }
    cal.set_validation(rounds.by_job, rounds.at, args.seed)?;
    let created = target.created();
    drop(target);
    if !quiet && created {
        eprintln!("sluice: removed {}", cal.target.path.display());
    }

    let prov = Provenance::of_this_run(&given, &cal.target.path);
    let header = cal.header(&prov);
    write_out(&args, &cal, header, &prov)?;
    if !quiet {
        eprintln!(
            "sluice: calibration took {:.1} s",
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// `--refit FILE`: the saved calibration's points fitted again, its validation
/// simulated again; nothing measured.
fn refit(args: &CalibrateArgs, file: &Path, name: &str) -> Result<(), CliError> {
    let bytes = std::fs::read(file)
        .map_err(|e| bad(format!("--refit {}: cannot read it: {e}", file.display())))?;
    let text = String::from_utf8(bytes).map_err(|_| {
        bad(format!(
            "--refit {}: not JSON (not text); give a file written by `sluice calibrate --json`",
            file.display()
        ))
    })?;
    let saved = calibrate::report::saved::read(&text, &file.display().to_string())?;
    if !args.quiet {
        eprintln!(
            "sluice: fitting the {} saved points of {} again (nothing is measured)",
            saved.points.len(),
            file.display()
        );
    }
    let measured = saved.provenance.clone();
    let cal = Calibration::refit(saved, name, args.seed)?;
    let prov = Provenance::refitted(measured, file, &cal.target.path);
    let mut header = cal.header(&prov);
    if cal.checks.is_empty() {
        header.push("The saved file holds no validation rounds: no validation.".into());
    } else {
        header.push(
            "Validation: the device's rounds are the saved ones; the simulator ran on this profile."
                .into(),
        );
    }
    write_out(args, &cal, header, &prov)
}

/// Print the tables and the profile (or write it to `--out`), and the JSON file.
fn write_out(
    args: &CalibrateArgs,
    cal: &Calibration,
    header: Vec<String>,
    prov: &Provenance,
) -> Result<(), CliError> {
    let text = cal.profile_toml(&header)?;
    let mut out = std::io::stdout().lock();
    cal.print_tables(&mut out)?;
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
        let s =
            serde_json::to_string_pretty(&cal.to_json(Some(prov))).expect("JSON values serialize");
        std::fs::write(path, s + "\n")
            .map_err(|e| bad(format!("cannot write {}: {e}", path.display())))?;
    }
    Ok(())
}

/// The grid of `--quick` or the full one, with `--size`.
fn plan_of(args: &CalibrateArgs) -> Result<Plan, CliError> {
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
    Ok(plan)
}

/// The profile's name (`--name`, else the `--out` file's stem, else `calibrated`);
/// checks that `--out`'s directory exists.
fn profile_name(args: &CalibrateArgs) -> Result<String, CliError> {
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
    Ok(name)
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
