//! `sluice repro`: the papers' experiments, run side by side on all cores, with the
//! goals table of a serial run.

use std::io::Write;
use std::path::PathBuf;

use sluice::cli::CliError;
use sluice::repro::runner::{self, Progress, RunOptions};

#[derive(clap::Args, Debug)]
#[command(
    after_help = "Experiments run side by side on --jobs threads (default: all cores); the table, \
                  figures and exit status are those of a serial run (-j 1), in the same order."
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
    /// Seed of every simulation.
    #[arg(long, default_value_t = 1)]
    seed: u64,
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
    let opts = RunOptions {
        seed: args.seed,
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
            Progress::Start { picked, .. } => eprintln!(
                "sluice repro {}: {} — {}",
                picked.suite, picked.experiment.id, picked.experiment.title
            ),
            Progress::Sim { label, .. } if serial => eprintln!("  running {label}"),
            Progress::Sim { picked, label, .. } => {
                eprintln!("  {}: running {label}", picked.experiment.id)
            }
            Progress::Note { line, .. } => eprintln!("  {line}"),
            Progress::Done { .. } if serial => {}
            Progress::Done {
                picked,
                secs,
                done,
                total,
                ..
            } => eprintln!(
                "  {}: done in {secs:.1} s ({done}/{total})",
                picked.experiment.id
            ),
        }
    };
    let per = runner::run_per_experiment(&picked, &opts, &progress)?;
    let all: Vec<(&str, sluice::repro::Goal)> = picked
        .iter()
        .zip(per)
        .flat_map(|(p, goals)| goals.into_iter().map(move |g| (p.suite, g)))
        .collect();
    write!(out, "{}", sluice::repro::format_suite_table(&all))?;
    if all.iter().any(|(_, g)| !g.pass) {
        return Err(CliError::GoalsFailed(
            all.iter().filter(|(_, g)| !g.pass).count(),
        ));
    }
    Ok(())
}
