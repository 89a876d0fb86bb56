//! The `sluice` command.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, Subcommand};

use sluice::cli::{parse_policy_list, CliError, OutputArgs, OutputFormat};
use sluice::core::policy::{self, PolicySpec, POLICY_NAMES};
use sluice::device::DeviceProfile;
use sluice::jobset::{load_jobs_with_sets, JobSet};
use sluice::metrics;
use sluice::sim::SimConfig;

mod cmd_calibrate;
mod cmd_crashtest;
mod cmd_fs;
mod cmd_fsck;
mod cmd_mount;
mod cmd_repro;
mod cmd_run;
mod cmd_sweep;

#[derive(Parser, Debug)]
#[command(
    name = "sluice",
    version,
    about = "I/O scheduling for fast SSDs: the same policies on a simulated NVMe SSD and on real devices",
    after_help = "Examples:\n  sluice sim                                   # the embedded default job on the simulated `ull` device\n  sluice sim jobs/weights-8642.fio --device zssd --policy none --json out.json\n  sluice run job.fio --directory /mnt/ssd --policy none --json out.json   # real I/O\n  sluice sweep --policy none,ld,rcp --seed 1..3 --set iodepth=1,4,32 --csv out.csv\n  sluice repro -j 2                            # the papers' experiments, two at a time\n  sluice list                                  # devices and policies"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Run a fio job file in the deterministic simulator.
    Sim(SimArgs),
    /// Run a fio job file on real files (or devices) through io_uring, under the same policies.
    Run(cmd_run::RunArgs),
    /// Measure a device (directory, file or block device) and write a simulated device profile for it.
    Calibrate(cmd_calibrate::CalibrateArgs),
    /// Run a paper's experiments in the simulator and check their goals (pass/fail).
    Repro(cmd_repro::ReproArgs),
    /// Crash the journaled store at seeded instants and check each recovery (the
    /// test suite's harness, for long runs).
    Crashtest(cmd_crashtest::CrashtestArgs),
    /// Check a journaled store's image without changing it: what recovery would redo,
    /// the metadata checksums and the structure (exit 1 if damaged or inconsistent).
    Fsck(cmd_fsck::FsckArgs),
    /// Run a job file over the cross product of devices, job options, policies and seeds
    /// (cells side by side on all cores), one table, CSV and JSON row per cell.
    Sweep(cmd_sweep::SweepArgs),
    /// Mount a directory through sluice (FUSE): unmodified programs' file I/O scheduled
    /// by the policy, classed by ionice, cgroup or a rules file; tables at unmount.
    Mount(cmd_mount::MountArgs),
    /// List the built-in device profiles, the policies and the repro suites.
    List,
}

#[derive(clap::Args, Debug)]
struct SimArgs {
    /// fio job file; without it, sluice's embedded default job (a critical 4 KB random
    /// reader beside throughput writers).
    job: Option<PathBuf>,
    /// Simulated device: a built-in profile name or a profile TOML file.
    #[arg(long, short = 'd', default_value = "ull")]
    device: String,
    /// Override the device's NVMe arbitration: `rr`, `rr:BURST`, `wrr` (weights
    /// 252,126,42, burst 8), `wrr:HPW,MPW,LPW` or `wrr:HPW,MPW,LPW,BURST`.
    #[arg(long)]
    arbitration: Option<String>,
    /// Override how the commands in flight share the device's host transfer: `fifo`
    /// (one at a time, in fetch order) or `shared` (processor sharing, as PCIe
    /// interleaves packets; `ull`'s own). See docs/devices.md, "The transfer".
    #[arg(long)]
    transfer: Option<sluice::device::Transfer>,
    /// Also run each job alone (under `none`) and report FIOS's figures: each task's
    /// slowdown against its alone-run, the proportional slowdown and the concurrent
    /// efficiency (FIOS Eq. 2).
    #[arg(long)]
    alone: bool,
    /// Run even when the simulation would take more than an hour of wall time. Before a
    /// run, sluice bounds its simulated I/Os from the jobs' sizes, loops, runtimes and
    /// rate caps and the device's nominal IOPS, and refuses what would take longer at
    /// about a million I/Os a second (docs/limits.md).
    #[arg(long)]
    allow_long: bool,
    /// Scheduling policy `NAME[:key=value,...]`; repeat the flag or give a comma list
    /// (`none,d2fq:mode=static`) to run the same job under each, side by side.
    /// Default: `none` for a job file; for the embedded default job, `none,ld,rcp` —
    /// the point of sluice side by side.
    #[arg(long, short = 'p')]
    policy: Vec<String>,
    /// Seed of the simulation's random streams.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Simulated host cores (each gets its own device queue pairs), 1 to 16383
    /// (four queue pairs a core, and queue ids are 16-bit).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=16383), default_value_t = 8)]
    cores: u16,
    /// Width of a bandwidth-over-time bin, in milliseconds, 1 to 3600000 (default: about
    /// 1/200 of the run).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    interval_ms: Option<u64>,
    /// Seeded command faults of the simulated device:
    /// `media=P,timeout=P,timeout_ms=N,seed=N` (P: probability per command; a timed-out
    /// command hangs until the host's timeout, default 30 ms, then fails). Failed I/Os
    /// count in each job's `error`; see `docs/devices.md`.
    #[arg(long, value_name = "SPEC")]
    faults: Option<String>,
    /// Set an fio option in every job section (`KEY=VALUE`, e.g. `iodepth=32`) or in
    /// one (`JOB.KEY=VALUE`), as if written at the end of the section; repeatable.
    /// The value is taken whole (`bs=4k,64k` is fio's read,write pair).
    #[arg(long, value_name = "[JOB.]KEY=VALUE")]
    set: Vec<String>,
    /// Where the job's files live: `raw` (default: simulated files of the device, as
    /// fio's) or the journaled store — `compound`, `fjournal`, `compound+async`,
    /// `fjournal+async`, each optionally `+rcp` (RCP's limits of buffered data) — with
    /// the job's threads as runtime tasks on it (direct=0 through the store's buffer,
    /// and reads through its read cache of `--page-cache`'s size). `--faults`, `--alone`,
    /// `--dirty-ratio` and `--single-dirty-limit` are refused with it.
    #[arg(long, value_name = "raw|compound|fjournal[+async][+rcp]")]
    fs: Option<String>,
    #[command(flatten)]
    cache: sluice::cli::CacheArgs,
    #[command(flatten)]
    out: OutputArgs,
    /// The job text of fio's command-line form (`--name=r --rw=randread …`), taken
    /// from the arguments before clap reads them.
    #[arg(skip)]
    cmdline_job: Option<String>,
}

fn main() -> ExitCode {
    // fio's command-line job form (`sluice sim --name=r --rw=randread …`).
    // `sim` and `run` take it; their own long flags stay theirs.
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let sub = match argv.get(1).and_then(|a| a.to_str()) {
        Some(s @ ("sim" | "run")) => s.to_owned(),
        _ => String::new(),
    };
    let own: Vec<(String, bool)> = {
        use clap::CommandFactory;
        let cmd = Cli::command();
        cmd.find_subcommand(&sub)
            .map(|c| {
                c.get_arguments()
                    .filter_map(|a| {
                        a.get_long()
                            .map(|l| (l.to_owned(), a.get_action().takes_values()))
                    })
                    .chain([("help".to_string(), false)])
                    .collect()
            })
            .unwrap_or_default()
    };
    let (argv, cmdline_job) = sluice::cmdline_job::split(argv, &sub, &own);
    let mut cli = Cli::parse_from(argv);
    match &mut cli.cmd {
        Cmd::Sim(a) => a.cmdline_job = cmdline_job,
        Cmd::Run(a) => a.cmdline_job = cmdline_job,
        _ => {}
    }
    sluice::cli::set_quiet(match &cli.cmd {
        Cmd::Sim(a) => a.out.quiet,
        Cmd::Run(a) => a.out.quiet,
        Cmd::Sweep(a) => a.quiet(),
        Cmd::Calibrate(a) => a.quiet(),
        _ => false,
    });
    let result = match cli.cmd {
        Cmd::Sim(args) => cmd_sim(args),
        Cmd::Repro(args) => cmd_repro::cmd_repro(args),
        Cmd::Run(args) => cmd_run::cmd_run(args),
        Cmd::Calibrate(args) => cmd_calibrate::cmd_calibrate(args),
        Cmd::Crashtest(args) => cmd_crashtest::cmd_crashtest(args),
        Cmd::Fsck(args) => cmd_fsck::cmd_fsck(args),
        Cmd::Sweep(args) => cmd_sweep::cmd_sweep(args),
        Cmd::Mount(args) => cmd_mount::cmd_mount(args),
        Cmd::List => cmd_list(),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // `sluice sim … | head`: the reader has what it wanted (fio ends quietly too).
        Err(e) if e.is_broken_pipe() => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sluice: error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

fn cmd_list() -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "devices (--device NAME, or a profile .toml file):")?;
    for name in DeviceProfile::BUILTIN {
        let p = DeviceProfile::builtin(name).expect("listed builtin exists");
        writeln!(out, "  {name:<8} {}", p.description)?;
    }
    writeln!(out, "policies (--policy NAME[:key=value,...]):")?;
    for name in POLICY_NAMES {
        writeln!(out, "  {name}")?;
    }
    writeln!(out, "repro suites (sluice repro NAME):")?;
    for s in sluice::repro::suites() {
        writeln!(out, "  {:<20} {}", s.name, s.about)?;
    }
    Ok(())
}

fn cmd_sim(args: SimArgs) -> Result<(), CliError> {
    let mut inputs: Vec<&std::path::Path> = args.job.iter().map(|p| p.as_path()).collect();
    inputs.push(std::path::Path::new(&args.device));
    args.out.check_inputs(&inputs)?;
    let sets = args
        .set
        .iter()
        .map(|s| JobSet::parse(s))
        .collect::<Result<Vec<_>, _>>()?;
    let (jobs, warnings) = match &args.cmdline_job {
        Some(_) if args.job.is_some() => {
            return Err(CliError::Usage(
                "a job file and fio's command-line job options (--name=…, --rw=…) together; \
                 give one or the other"
                    .into(),
            ))
        }
        Some(text) => sluice::jobset::parse_with_sets(
            text,
            sluice::cmdline_job::ORIGIN,
            &sluice::workload::ParseOptions {
                ignore_unknown: args.out.ignore_unknown,
                sections: args.out.section.clone(),
            },
            &sets,
        )?,
        None => load_jobs_with_sets(
            args.job.as_deref(),
            args.out.ignore_unknown,
            &args.out.section,
            &sets,
        )?,
    };
    for w in &warnings {
        sluice::cli::warn(w);
    }
    sluice::cli::check_log_prefixes(&jobs)?;
    if let Some(fs) = cmd_fs::store_of(args.fs.as_deref())? {
        return sim_on_store(&args, &jobs, &fs);
    }
    for w in sluice::cli::raw_file_warnings(&jobs) {
        sluice::cli::warn(w);
    }
    for j in &jobs {
        if let Some(v) = &j.verify {
            sluice::cli::warn(format_args!(
                "job '{}': verify={}: the simulator does not model data, so nothing is checked \
                 and the job runs without its verify reads; `sluice run` checks it on real files",
                j.name,
                v.kind.name()
            ));
        }
    }
    let profile = sim_profile(&args)?;
    let default_policies = if args.job.is_none() && args.cmdline_job.is_none() {
        vec!["none,ld,rcp".to_string()]
    } else {
        vec!["none".to_string()]
    };
    let policies = if args.policy.is_empty() {
        &default_policies
    } else {
        &args.policy
    };
    let specs: Vec<PolicySpec> = parse_policy_list(policies)?;
    // Build every policy first, so a bad name fails before any run starts.
    for spec in &specs {
        policy::build(spec)?;
    }
    sluice::cli::check_log_names(&jobs, &specs)?;
    // Ctrl-C (or SIGTERM) once: stop and report what was simulated; twice: exit now.
    let stop = sluice::cli::stop_flag()?;
    let cfg = SimConfig {
        seed: args.seed,
        cores: args.cores,
        interval_ns: args.interval_ms.map(|ms| ms * 1_000_000),
        faults: match &args.faults {
            Some(s) => {
                sluice::device::FaultConfig::parse(s).map_err(|e| CliError::Usage(e.to_string()))?
            }
            None => sluice::device::FaultConfig::none(),
        },
        stop: Some(stop.clone()),
        page_cache: args.cache.front_config()?,
        ..SimConfig::default()
    };
    sluice::cli::check_work(
        &jobs,
        &profile,
        specs.len() * if args.alone { 2 } else { 1 },
        cfg.max_sim_ns,
        args.allow_long,
        args.out.quiet,
    )?;
    let show_progress = !args.out.quiet && std::io::stderr().is_terminal();
    let (mut reports, _) =
        sluice::cli::each_policy(&specs, "sim", show_progress, &stop, |spec, progress| {
            let started = Instant::now();
            let out = sluice::cli::simulate(&jobs, &profile, spec, &cfg, progress)?;
            let wall = started.elapsed().as_secs_f64();
            if !args.out.quiet {
                eprintln!(
                "sluice: {}: {} simulated I/Os, {:.3} s simulated, {:.2} s wall ({:.2} M I/O/s)",
                spec.text,
                out.stats.ios,
                out.stats.sim_ns as f64 / 1e9,
                wall,
                out.stats.ios as f64 / wall.max(1e-9) / 1e6
            );
            }
            Ok(sluice::cli::PolicyRun {
                interrupted: out.stats.interrupted,
                report: out.report,
            })
        })?;
    let interrupted = stop.load(std::sync::atomic::Ordering::Relaxed);
    if args.alone && !interrupted {
        let alone = sluice::repro::fios::alone_runs(&jobs, &profile, &cfg)?;
        for report in &mut reports {
            let fig = metrics::fios_figures(report, &alone)?;
            report.extra.fios = Some(fig);
        }
    }
    let mut stdout = args.out.sink()?;
    args.out.emit(&mut reports, &mut stdout)?;
    if args.alone && !interrupted && args.out.output_format == OutputFormat::Normal {
        sluice::cli::print_fios(&reports, &mut stdout)?;
    }
    stdout.flush()?;
    if interrupted {
        return Err(CliError::Interrupted);
    }
    sluice::cli::jobs_ended(&reports)
}

/// `sluice sim --fs …`: the jobs on the journaled store of a simulated stack.
/// `--device` with `--arbitration` and `--transfer` applied.
fn sim_profile(args: &SimArgs) -> Result<DeviceProfile, CliError> {
    let mut profile = DeviceProfile::resolve(&args.device)?;
    if let Some(text) = &args.arbitration {
        profile = profile.with_arbitration(text.parse()?);
    }
    if let Some(t) = args.transfer {
        profile.controller.transfer = t;
    }
    profile.validate()?;
    Ok(profile)
}

fn sim_on_store(
    args: &SimArgs,
    jobs: &[sluice::workload::JobSpec],
    fs: &sluice::store::FsConfig,
) -> Result<(), CliError> {
    let why = "the store path runs on the application runtime, which does not take it";
    cmd_fs::refuse(args.faults.is_some(), "--faults", why)?;
    cmd_fs::refuse(args.alone, "--alone", why)?;
    let fs = &fs.clone().with_read_cache(args.cache.store_read_cache()?);
    let plan = cmd_fs::plan(jobs, fs)?;
    let profile = sim_profile(args)?;
    let policies = if args.policy.is_empty() {
        vec!["none".to_string()]
    } else {
        args.policy.clone()
    };
    let specs: Vec<PolicySpec> = parse_policy_list(&policies)?;
    for spec in &specs {
        policy::build(spec)?;
    }
    cmd_fs::sim(
        &plan,
        &profile,
        &specs,
        args.seed,
        args.cores,
        args.interval_ms.map(|ms| ms * 1_000_000),
        &args.out,
    )
}
