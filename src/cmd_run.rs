//! `sluice run`: the job file on real files or devices through io_uring.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use indicatif::ProgressBar;

use sluice::cli::{load_jobs, parse_policy_list, progress_bar, CliError, OutputArgs};
use sluice::core::policy::{self, PolicySpec};
use sluice::engine::{self, EngineConfig, D2FQ_WEIGHTS};

#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// fio job file (the same language as `sluice sim`); or fio's command-line job form
    /// instead (`--name=r --rw=randread --bs=4k --size=1g …`).
    job: Option<PathBuf>,
    /// Scheduling policy `NAME[:key=value,...]`; repeat the flag or give a comma list
    /// to run the same job under each, one after the other, side by side.
    #[arg(long, short = 'p', default_value = "none")]
    policy: Vec<String>,
    /// Directory for the job files (`<job>.<thread>.0`, as fio names them); relative
    /// `filename=`s are taken inside it.
    #[arg(long, short = 'D', default_value = ".")]
    directory: PathBuf,
    /// Worker threads, each with its own io_uring (default: min(cores, job threads)).
    /// Whatever their number, the device has one block layer and one policy instance.
    /// 1 to the jobs' threads (Σ numjobs): a worker runs whole threads.
    #[arg(long, short = 'w', value_parser = clap::value_parser!(u64).range(1..=65535))]
    workers: Option<u64>,
    /// Allow block devices as job files (writes destroy their data).
    #[arg(long)]
    allow_device: bool,
    /// Allow writing to existing files sluice did not create (files under fio's own
    /// names, `<job>.<thread>.0`, are reused and written without it, as fio does).
    #[arg(long)]
    allow_write_existing: bool,
    /// Keep the files sluice created (default: remove them at the end).
    #[arg(long)]
    keep_files: bool,
    /// Seed of the I/O generators.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Width of a bandwidth-over-time bin, in milliseconds, 1 to 3600000 (default: about
    /// 1/200 of the run).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    interval_ms: Option<u64>,
    /// Most commands in all workers' rings together (default: the jobs' total iodepth);
    /// below the offered depth, the software WRR arbiter decides which queue class goes
    /// next.
    /// 1 to 32767 (io_uring's 32768 entries, one kept for the doorbell).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=32767))]
    ring_cap: Option<u32>,
    /// While a batch of completions is handled, submit new I/Os as soon as this many
    /// are ready (1: each at once, as fio does; large: one submission per batch), 1 to 4096.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=4096))]
    submit_batch: u32,
    /// WRR weights of the high, medium and low queue classes, `H,M,L`, until the
    /// policy asks for its own (D2FQ's dynamic H/L).
    #[arg(long, default_value = "252,126,42")]
    wrr: String,
    /// Where the job's files live: `raw` (default: files in `--directory`, as fio's) or
    /// the journaled store — `compound`, `fjournal`, `compound+async`, `fjournal+async`,
    /// each optionally `+rcp` (RCP's limits of buffered data) — in a new file of `--directory` (`sluice-fio-store.img`, removed at the end
    /// unless `--keep-files`), the job's threads as runtime tasks on one core.
    /// `--workers`, `--allow-device`, `--allow-write-existing`, `--ring-cap`,
    /// `--submit-batch`, `--wrr` and the page-cache options are refused with it.
    #[arg(long, value_name = "raw|compound|fjournal[+async]")]
    fs: Option<String>,
    #[command(flatten)]
    cache: sluice::cli::CacheArgs,
    #[command(flatten)]
    pub(crate) out: OutputArgs,
    /// The job text of fio's command-line form, taken from the arguments before clap
    /// reads them.
    #[arg(skip)]
    pub cmdline_job: Option<String>,
}

fn parse_wrr(s: &str) -> Result<[u32; 3], CliError> {
    let bad = || {
        CliError::Usage(format!(
            "--wrr '{s}': give three weights high,medium,low, each 1..=256, e.g. {},{},{}",
            D2FQ_WEIGHTS[0], D2FQ_WEIGHTS[1], D2FQ_WEIGHTS[2]
        ))
    };
    let v: Vec<u32> = s
        .split(',')
        .map(|p| p.trim().parse::<u32>().map_err(|_| bad()))
        .collect::<Result<_, _>>()?;
    // 1..=256, as `--arbitration wrr:H,M,L` and NVMe's weight fields (a register
    // value plus one).
    match v[..] {
        [h, m, l] if [h, m, l].iter().all(|w| (1..=256).contains(w)) => Ok([h, m, l]),
        _ => Err(bad()),
    }
}

pub fn cmd_run(args: RunArgs) -> Result<(), CliError> {
    let (jobs, warnings) = match (&args.job, &args.cmdline_job) {
        (Some(_), Some(_)) => {
            return Err(CliError::Usage(
                "a job file and fio's command-line job options (--name=…, --rw=…) together; \
                 give one or the other"
                    .into(),
            ))
        }
        (Some(job), None) => {
            args.out.check_inputs(&[job])?;
            load_jobs(Some(job), args.out.ignore_unknown, &args.out.section)?
        }
        (None, Some(text)) => sluice::jobset::parse_with_sets(
            text,
            sluice::cmdline_job::ORIGIN,
            &sluice::workload::ParseOptions {
                ignore_unknown: args.out.ignore_unknown,
                sections: args.out.section.clone(),
            },
            &[],
        )?,
        (None, None) => {
            return Err(CliError::Usage(
                "no job: give a job file (sluice run JOB.fio), or fio's command-line job \
                 options (sluice run --name=r --rw=randread --bs=4k --size=1g)"
                    .into(),
            ))
        }
    };
    for w in &warnings {
        sluice::cli::warn(w);
    }
    sluice::cli::check_log_prefixes(&jobs)?;
    let specs: Vec<PolicySpec> = parse_policy_list(&args.policy)?;
    for spec in &specs {
        policy::build(spec)?;
    }
    sluice::cli::check_log_names(&jobs, &specs)?;
    if let Some(fs) = crate::cmd_fs::store_of(args.fs.as_deref())? {
        if let Some(j) = jobs.iter().find(|j| j.fill_device) {
            return Err(CliError::Usage(format!(
                "job '{}' has fill_device=1, which the journaled store (--fs) does not do \
                 yet: run it on files (without --fs) or under sluice sim",
                j.name
            )));
        }
        return run_on_store(&args, &jobs, &fs, &specs);
    }
    for w in sluice::cli::raw_file_warnings(&jobs) {
        sluice::cli::warn(w);
    }
    let threads: u64 = jobs.iter().map(|j| j.numjobs as u64).sum();
    if let Some(w) = args.workers.filter(|&w| w > threads) {
        return Err(CliError::Usage(format!(
            "--workers {w}: the jobs have {threads} thread(s) (Σ numjobs) and a worker runs \
             whole threads; give 1..={threads}"
        )));
    }
    let (page_cache, host_default) = args.cache.front_config_on_host()?;
    if let (Some(bytes), false, true) = (
        host_default,
        args.out.quiet,
        jobs.iter().any(|j| j.buffered),
    ) {
        eprintln!(
            "sluice: page cache of {} MiB for the buffered jobs (a quarter of the available \
             memory; --page-cache sets it)",
            bytes >> 20
        );
    }
    if args.cache.single_dirty_limit
        && args.cache.dirty_ratio == sluice::cli::CacheArgs::DIRTY_RATIO
        && !args.out.quiet
        && jobs.iter().any(|j| j.buffered)
    {
        let c = &page_cache.cache;
        let mib = |pages: usize| (pages as u64 * sluice_cache::PAGE) >> 20;
        eprintln!(
            "sluice: one dirty limit of {} MiB, background writeback from {} MiB (this \
             kernel's vm.dirty_ratio and vm.dirty_background_ratio of its dirtyable memory, \
             at most the cache; --dirty-ratio sets a share of the cache instead)",
            mib(c.dirty_limit(sluice_core::IoClass::Normal)),
            mib(c.background_pages())
        );
    }
    let cfg = EngineConfig {
        directory: args.directory.clone(),
        workers: args.workers.map(|w| w as usize),
        allow_device: args.allow_device,
        allow_write_existing: args.allow_write_existing,
        keep_files: args.keep_files,
        seed: args.seed,
        interval_ns: args.interval_ms.map(|ms| ms * 1_000_000),
        ring_cap: args.ring_cap,
        wrr_weights: parse_wrr(&args.wrr)?,
        submit_batch: args.submit_batch,
        page_cache,
    };

    // Ctrl-C (or SIGTERM) once: stop and report what was measured; twice: exit now.
    let stop = sluice::cli::stop_flag()?;

    let show_progress = !args.out.quiet && std::io::stderr().is_terminal();
    let started = Instant::now();
    let mut lay_bar: Option<ProgressBar> = None;
    let mut announced: Option<PathBuf> = None;
    // fio's sizes: a job without size= takes its file's; fill_device's from the free
    // space, read once, before any file is created (prepare and run both take the
    // resolved jobs).
    let jobs = engine::resolve_sizes(&jobs, &cfg.directory)?;
    let jobs = match engine::resolve_fill(&jobs, &cfg.directory)? {
        Some(resolved) => resolved,
        None => jobs,
    };
    let mut laid_bytes = 0u64;
    let files = engine::prepare(&jobs, &cfg, &stop, &mut |path, done, total| {
        laid_bytes = done;
        if !args.out.quiet && announced.as_deref() != Some(path) {
            announced = Some(path.to_path_buf());
            if lay_bar.is_none() {
                eprintln!("sluice: laying out {}", path.display());
            }
        }
        if show_progress && lay_bar.is_none() && started.elapsed() > Duration::from_secs(1) {
            lay_bar = Some(progress_bar("laying out files", total));
        }
        if let Some(b) = &lay_bar {
            b.set_position(done);
        }
    });
    let files = match files {
        // Interrupted before anything ran: say so, and still give the report a
        // script waits for (no runs), then exit 130 as an interrupted run does.
        Err(e @ sluice::engine::EngineError::InterruptedPrefill) => {
            if let Some(b) = lay_bar {
                b.finish_and_clear();
            }
            args.out.emit(&mut [], &mut std::io::stdout().lock())?;
            return Err(CliError::InterruptedBefore(e.to_string()));
        }
        other => other?,
    };
    if let Some(b) = lay_bar {
        b.finish_and_clear();
    }
    // The end of the lay-out, as fio's "Laying out IO file" has one: the jobs' I/O
    // begins now (a script timing the I/O, scripts/fio-examples.sh, starts its clock).
    if !args.out.quiet && announced.is_some() {
        let secs = started.elapsed().as_secs_f64();
        eprintln!(
            "sluice: laid out {} file(s), {:.2} GiB, in {secs:.1} s ({:.0} MiB/s)",
            files.created().len(),
            laid_bytes as f64 / (1u64 << 30) as f64,
            laid_bytes as f64 / (1u64 << 20) as f64 / secs.max(1e-9),
        );
    }
    for w in &files.plan().warnings {
        sluice::cli::warn(w);
    }

    let mut verify_failed = 0u64;
    let mut io_errors = 0u64;
    let (mut reports, interrupted) =
        sluice::cli::each_policy(&specs, "run", show_progress, &stop, |spec, progress| {
            let started_unix_ms = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64);
            let before = rusage();
            let mut out = engine::run(&jobs, &files, spec, &cfg, &stop, progress)?;
            cpu_fields(&mut out.report, &out.stats, &before, &rusage());
            out.report.started_unix_ms = started_unix_ms;
            let st = &out.stats;
            if !args.out.quiet {
                let secs = st.wall_ns as f64 / 1e9;
                let cpu = (st.cpu_user_ns + st.cpu_sys_ns) as f64;
                eprintln!(
                    "sluice: {}: {} I/Os in {:.2} s wall ({:.0} I/O/s), CPU {:.0} ns/I/O \
                     (user {:.2} s, sys {:.2} s), {:.2} io_uring_enter/I/O",
                    spec.text,
                    st.ios,
                    secs,
                    st.ios as f64 / secs.max(1e-9),
                    cpu / st.ios.max(1) as f64,
                    st.cpu_user_ns as f64 / 1e9,
                    st.cpu_sys_ns as f64 / 1e9,
                    st.enters as f64 / st.ios.max(1) as f64,
                );
            }
            let after = out
                .report
                .extra
                .page_cache
                .map_or(0, |p| p.written_after_run);
            if !args.out.quiet && after > 0 {
                eprintln!(
                    "sluice: page cache: {after} dirty page(s) written to their files after \
                     the run (not measured; add end_fsync=1 to measure it)"
                );
            }
            for (job, n, first) in &st.errors {
                eprintln!("sluice: job '{job}': {n} I/O error(s); first: {first}");
                io_errors += n;
            }
            for v in &st.verify {
                eprintln!(
                    "sluice: job '{}': verify={}: {} block(s) checked, {} failed{}",
                    v.job,
                    v.kind,
                    v.checked,
                    v.failed,
                    v.first
                        .as_ref()
                        .map(|f| format!("; first: {f}"))
                        .unwrap_or_default()
                );
                verify_failed += v.failed;
            }
            Ok(sluice::cli::PolicyRun {
                interrupted: out.stats.interrupted,
                report: out.report,
            })
        })?;
    let created = files.created().len();
    drop(files);
    if !args.out.quiet && created > 0 {
        if args.keep_files {
            eprintln!(
                "sluice: kept {created} file(s) in {}",
                args.directory.display()
            );
        } else {
            eprintln!("sluice: removed the {created} file(s) it created");
        }
    }

    let mut stdout = args.out.sink()?;
    args.out.emit(&mut reports, &mut stdout)?;
    outcome(interrupted, verify_failed, io_errors)
}

/// The process's resource use (`getrusage(RUSAGE_SELF)`: every thread's).
fn rusage() -> libc::rusage {
    // SAFETY: getrusage fills the struct it is given; a zeroed rusage is a valid value.
    unsafe {
        let mut r: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut r);
        r
    }
}

/// fio's `usr_cpu`, `sys_cpu` (percent of the run's wall time), `ctx`, `majf` and
/// `minf` of every job: the process's, over the run (sluice's workers serve every job
/// together, so the figures are the run's, not one job's).
fn cpu_fields(
    report: &mut sluice::metrics::RunReport,
    st: &sluice::engine::EngineStats,
    before: &libc::rusage,
    after: &libc::rusage,
) {
    let wall = st.wall_ns.max(1) as f64;
    let d = |a: libc::c_long, b: libc::c_long| (a - b).max(0) as u64;
    for j in report.jobs.iter_mut().chain(&mut report.entries) {
        j.usr_cpu = st.cpu_user_ns as f64 * 100.0 / wall;
        j.sys_cpu = st.cpu_sys_ns as f64 * 100.0 / wall;
        j.ctx = d(after.ru_nvcsw, before.ru_nvcsw) + d(after.ru_nivcsw, before.ru_nivcsw);
        j.majf = d(after.ru_majflt, before.ru_majflt);
        j.minf = d(after.ru_minflt, before.ru_minflt);
    }
}

/// The exit of a run that reported: interrupted (130), blocks that failed their verify
/// check, or I/O errors (1, as fio exits non-zero when a job had errors — a run that
/// hit ENOSPC 633 times did not measure what was asked), else success.
fn outcome(interrupted: bool, verify_failed: u64, io_errors: u64) -> Result<(), CliError> {
    if interrupted {
        return Err(CliError::Interrupted);
    }
    if verify_failed > 0 {
        return Err(CliError::VerifyFailed(verify_failed));
    }
    if io_errors > 0 {
        return Err(CliError::IoErrors(io_errors));
    }
    Ok(())
}

/// `sluice run --fs …`: the jobs on a journaled store in a new file of the directory.
fn run_on_store(
    args: &RunArgs,
    jobs: &[sluice::workload::JobSpec],
    fs: &sluice::store::FsConfig,
    specs: &[PolicySpec],
) -> Result<(), CliError> {
    use crate::cmd_fs::refuse;
    let why = "the store path runs on the application runtime's real backend (one core, \
               its own ring), which does not take it";
    refuse(args.workers.is_some_and(|w| w != 1), "--workers", why)?;
    refuse(
        args.allow_device,
        "--allow-device",
        "the store lives in a new file of --directory",
    )?;
    refuse(
        args.allow_write_existing,
        "--allow-write-existing",
        "the store is always a new file sluice creates",
    )?;
    refuse(args.ring_cap.is_some(), "--ring-cap", why)?;
    refuse(args.submit_batch != 4, "--submit-batch", why)?;
    refuse(args.wrr != "252,126,42", "--wrr", why)?;
    let fs = &fs.clone().with_read_cache(args.cache.store_read_cache()?);
    if !args.directory.is_dir() {
        return Err(CliError::Usage(format!(
            "--directory {}: not a directory; give an existing directory for the store's file",
            args.directory.display()
        )));
    }
    let plan = crate::cmd_fs::plan(jobs, fs)?;
    crate::cmd_fs::run(
        &plan,
        &args.directory,
        specs,
        args.seed,
        args.interval_ms.map(|ms| ms * 1_000_000),
        args.keep_files,
        &args.out,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_errors_fail_the_run() {
        assert!(outcome(false, 0, 0).is_ok());
        let e = outcome(false, 0, 633).unwrap_err();
        assert_eq!(e.exit_code(), 1);
        assert!(e.to_string().contains("633 I/O error(s)"), "{e}");
        assert_eq!(outcome(false, 2, 633).unwrap_err().exit_code(), 1);
        assert_eq!(outcome(true, 0, 633).unwrap_err().exit_code(), 130);
    }

    #[test]
    fn wrr_weights_parse() {
        assert_eq!(parse_wrr("252,126,42").unwrap(), [252, 126, 42]);
        assert_eq!(parse_wrr(" 6, 3 ,1").unwrap(), [6, 3, 1]);
        assert!(parse_wrr("1,2").is_err());
        assert!(parse_wrr("0,1,1").is_err());
        assert!(parse_wrr("257,1,1").is_err());
        assert_eq!(parse_wrr("256,1,1").unwrap(), [256, 1, 1]);
        assert!(parse_wrr("a,b,c").is_err());
    }
}
