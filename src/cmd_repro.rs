//! `sluice repro`: the papers' experiments, run side by side on all cores, with the
//! goals table of a serial run.

use std::io::Write;
use std::path::PathBuf;

use sluice::cli::CliError;
use sluice::repro::runner::{self, Progress, RunOptions};

#[derive(clap::Args, Debug)]
#[command(
    after_help = "Every experiment runs at each seed (default: seeds 1-5; --seed S alone: seed S \
                  only; --seed S --seeds N: seeds S..S+N-1). Each goal is judged on the median \
                  of its value over the seeds, with the spread (min-max) shown: it passes when \
                  the median meets its line and at most one seed in five misses it. The \
                  (experiment, seed) runs go side by side on --jobs threads (default: all \
                  cores); the table, figures and exit status are those of a serial run (-j 1)."
)]
pub(crate) struct ReproArgs {
    /// Suites to run (see `sluice repro --list`); all when none is given.
    suites: Vec<String>,
    /// List the suites and their experiments, run nothing.
    #[arg(long)]
    list: bool,
    /// Only the experiments whose id contains this text.
    #[arg(long)]
    only: Option<String>,
    /// The (first) seed; alone, the only seed.
    #[arg(long)]
    seed: Option<u64>,
    /// How many seeds each experiment runs at (from --seed, default 1); default 5, or 1
    /// when --seed is given alone.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1000))]
    seeds: Option<u64>,
    /// Write the experiments' figures (SVG) here.
    #[arg(long)]
    plot: Option<PathBuf>,
    /// Threads to run experiments (and their simulations) on; default: the available
    /// parallelism; 1 runs them one after another.
    #[arg(long, short = 'j', value_parser = clap::value_parser!(u64).range(1..=4096))]
    jobs: Option<u64>,
    /// No progress lines on stderr.
    #[arg(long, short = 'q')]
    quiet: bool,
}

/// Seeds each experiment runs at when neither --seed nor --seeds is given.
const DEFAULT_SEEDS: u64 = 5;

pub(crate) fn cmd_repro(args: ReproArgs) -> Result<(), CliError> {
    let suites = if args.suites.is_empty() {
        sluice::repro::suites()
    } else {
        args.suites
            .iter()
            .map(|n| sluice::repro::suite(n))
            .collect::<Result<Vec<_>, _>>()?
    };
    let mut out = std::io::stdout().lock();
    if args.list {
        for s in &suites {
            writeln!(out, "{} — {}", s.name, s.about)?;
            for e in s.experiments {
                writeln!(out, "  {:<12} {}  ({})", e.id, e.title, e.file)?;
            }
        }
        return Ok(());
    }
    if let Some(d) = &args.plot {
        sluice::cli::check_writable_dir(d, "--plot")?;
    }
    let picked = runner::pick(&suites, args.only.as_deref());
    if picked.is_empty() {
        let ids: Vec<&str> = suites
            .iter()
            .flat_map(|s| s.experiments.iter().map(|e| e.id))
            .collect();
        return Err(CliError::Usage(format!(
            "--only '{}': no experiment's id contains it; the ids are {} (sluice repro --list)",
            args.only.as_deref().unwrap_or(""),
            ids.join(", ")
        )));
    }
    let first = args.seed.unwrap_or(1);
    let n = match (args.seed, args.seeds) {
        (_, Some(n)) => n,
        (Some(_), None) => 1,
        (None, None) => DEFAULT_SEEDS,
    };
    let seeds: Vec<u64> = (0..n)
        .map(|k| first.checked_add(k))
        .collect::<Option<_>>()
        .ok_or_else(|| {
            CliError::Usage(format!(
                "--seed {first} --seeds {n}: the last seed passes {}; give a smaller --seed",
                u64::MAX
            ))
        })?;
    let many = seeds.len() > 1;
    let opts = RunOptions {
        seeds,
        plot_dir: args.plot.clone(),
        jobs: args.jobs.map_or_else(runner::default_jobs, |j| j as usize),
    };
    let serial = opts.jobs == 1;
    let quiet = args.quiet;
    // One line per event; each `eprintln!` holds stderr's lock, so lines from several
    // threads do not mix. Side by side, a simulation's line names its experiment.
    let progress = |p: Progress<'_>| {
        if quiet {
            return;
        }
        match p {
            Progress::Start { picked, seed, .. } => eprintln!(
                "sluice repro {}: {} — {}{}",
                picked.suite,
                picked.experiment.id,
                picked.experiment.title,
                if many {
                    format!(" (seed {seed})")
                } else {
                    String::new()
                }
            ),
            Progress::Sim { label, .. } if serial => eprintln!("  running {label}"),
            Progress::Sim {
                picked,
                label,
                seed,
                ..
            } => {
                eprintln!("  {}@{seed}: running {label}", picked.experiment.id)
            }
            Progress::Note { line, .. } => eprintln!("  {line}"),
            Progress::Done { .. } if serial => {}
            Progress::Done {
                picked,
                seed,
                secs,
                done,
                total,
                ..
            } => eprintln!(
                "  {}@{seed}: done in {secs:.1} s ({done}/{total})",
                picked.experiment.id
            ),
        }
    };
    let all = runner::run(&picked, &opts, &progress)?;
    write!(out, "{}", sluice::repro::format_verdicts(&all))?;
    if all.iter().any(|v| !v.pass) {
        return Err(CliError::GoalsFailed(
            all.iter().filter(|v| !v.pass).count(),
        ));
    }
    Ok(())
}
