//! `--fs compound|fjournal|compound+async|fjournal+async` (each optionally `+rcp`) on
//! `sluice sim` and `sluice run`: the job file on the journaled store, as runtime tasks
//! (`sluice_store::fio`) — on a simulated stack, or on a real one whose store is a
//! file the command creates in `--directory`. Ctrl-C (or SIGTERM) once ends the jobs
//! early, syncs the store and prints the report of what ran, exit status 130, as on raw
//! files; twice exits at once.

use std::path::Path;
use std::time::Instant;

use sluice::cli::{each_policy, CliError, OutputArgs, PolicyRun};
use sluice::core::policy::PolicySpec;
use sluice::device::DeviceProfile;
use sluice::metrics::RunReport;
use sluice::runtime::Stack;
use sluice::store::fio::{self, FioOutput, FioPlan};
use sluice::store::FsConfig;
use sluice::workload::JobSpec;

/// `--fs`'s value: `None` for raw files (the default, `raw`), else the store.
pub fn store_of(text: Option<&str>) -> Result<Option<FsConfig>, CliError> {
    match text {
        None | Some("raw") => Ok(None),
        Some(t) => Ok(Some(fio::store_config(t)?)),
    }
}

/// An option the store path cannot honour, given on the command line: a usage error
/// naming it (never a silent change of meaning).
pub fn refuse(given: bool, option: &str, why: &str) -> Result<(), CliError> {
    if given {
        return Err(CliError::Usage(format!(
            "{option} with --fs: {why}; drop it, or run without --fs (raw files)"
        )));
    }
    Ok(())
}

/// Check the jobs for the store and print what is ignored.
pub fn plan(jobs: &[JobSpec], fs: &FsConfig) -> Result<FioPlan, CliError> {
    let plan = fio::check(jobs, fs)?;
    for w in &plan.warnings {
        sluice::cli::warn(w);
    }
    Ok(plan)
}

/// The reports, then the exit status an interruption gives.
fn finish(out: &OutputArgs, reports: &mut [RunReport], interrupted: bool) -> Result<(), CliError> {
    out.emit(reports, &mut out.sink()?)?;
    if interrupted {
        return Err(CliError::Interrupted);
    }
    Ok(())
}

fn summary(spec: &PolicySpec, fs: &FsConfig, out: &FioOutput, wall_s: f64, quiet: bool) {
    for (job, n, first) in &out.errors {
        eprintln!("sluice: job '{job}': {n} I/O error(s); first: {first}");
    }
    if quiet {
        return;
    }
    let ios: u64 = out
        .report
        .jobs
        .iter()
        .map(|j| j.read.total_ios + j.write.total_ios + j.sync.total_ios)
        .sum();
    let s = &out.store;
    eprintln!(
        "sluice: {} on the store ({fs}): {ios} fio I/Os and syncs, {:.3} s measured, {:.2} s wall; \
         store: {} commits, {} f-transactions, {} syncs without a commit, {} seals, {} \
         commits with two FLUSHes",
        spec.text,
        out.report.duration_ns as f64 / 1e9,
        wall_s,
        s.commits,
        s.ftxns,
        s.data_syncs,
        s.seals,
        s.two_flush
    );
}

/// `sluice sim --fs …`: each policy on a fresh simulated stack.
pub fn sim(
    plan: &FioPlan,
    profile: &DeviceProfile,
    specs: &[PolicySpec],
    seed: u64,
    cores: u16,
    interval_ns: Option<u64>,
    out: &OutputArgs,
) -> Result<(), CliError> {
    plan.check_simulated()?;
    let stop = sluice::cli::stop_flag()?;
    let plan = &plan
        .clone()
        .stop_on(stop.clone())
        .on_ready(sluice::cli::signal_ready);
    let (mut reports, interrupted) = each_policy(specs, "sim", false, &stop, |spec, _| {
        let started = Instant::now();
        let stack = Stack::builder()
            .device_profile(profile.clone())
            .policy(&spec.text)
            .seed(seed)
            .cores(cores)
            .build()
            .map_err(|e| CliError::Usage(e.to_string()))?;
        let o = fio::run(stack, plan, seed, interval_ns)?;
        summary(
            spec,
            &plan.fs,
            &o,
            started.elapsed().as_secs_f64(),
            out.quiet,
        );
        Ok(PolicyRun {
            interrupted: o.interrupted,
            report: o.report,
        })
    })?;
    finish(out, &mut reports, interrupted)
}

/// `sluice run --fs …`: each policy on a real stack (one core, `O_DIRECT`) whose store
/// is a new file in `dir`, removed after the run unless `keep`.
pub fn run(
    plan: &FioPlan,
    dir: &Path,
    specs: &[PolicySpec],
    seed: u64,
    interval_ns: Option<u64>,
    keep: bool,
    out: &OutputArgs,
) -> Result<(), CliError> {
    let image = dir.join(fio::STORE_IMAGE);
    refuse(
        keep && specs.len() > 1,
        "--keep-files with several policies",
        "each policy's run makes its own store in the same file; keep one policy's",
    )?;
    // The image grows to its full size as the run writes it: refuse up front what the
    // file system cannot hold, rather than fail with ENOSPC midway.
    let need = plan.image_bytes();
    let avail = sluice::engine::free_bytes(dir).map_err(|e| {
        CliError::Usage(format!(
            "--directory {}: cannot read its free space: {e}",
            dir.display()
        ))
    })?;
    if need > avail {
        return Err(CliError::Usage(format!(
            "--directory {}: the store's image takes {need} bytes ({:.2} GiB) but only {avail} \
             bytes ({:.2} GiB) are free on its file system; free space, shrink the jobs' \
             size=, or give another --directory",
            dir.display(),
            need as f64 / (1u64 << 30) as f64,
            avail as f64 / (1u64 << 30) as f64,
        )));
    }
    let stop = sluice::cli::stop_flag()?;
    let plan = &plan
        .clone()
        .stop_on(stop.clone())
        .on_ready(sluice::cli::signal_ready);
    let (mut reports, interrupted) = each_policy(specs, "run", false, &stop, |spec, _| {
        if image.exists() {
            return Err(CliError::Usage(format!(
                "{}: exists; sluice never writes a file it did not create — remove it or give \
                 another --directory",
                image.display()
            )));
        }
        let started = Instant::now();
        let stack = Stack::builder()
            .directory(dir)
            .cores(1)
            .policy(&spec.text)
            .seed(seed)
            .build()
            .map_err(|e| CliError::Usage(e.to_string()))?;
        let r = fio::run(stack, plan, seed, interval_ns);
        let created = image.exists();
        if created && !keep {
            std::fs::remove_file(&image)?;
        }
        let o = r?;
        summary(
            spec,
            &plan.fs,
            &o,
            started.elapsed().as_secs_f64(),
            out.quiet,
        );
        if created && !out.quiet {
            if keep {
                eprintln!("sluice: kept the store {}", image.display());
            } else {
                eprintln!("sluice: removed the store {} it created", image.display());
            }
        }
        Ok(PolicyRun {
            interrupted: o.interrupted,
            report: o.report,
        })
    })?;
    finish(out, &mut reports, interrupted)
}
