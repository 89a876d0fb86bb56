//! `sluice sweep`: a job file over the cross product of devices, `--set` job options,
//! policies and seeds, cells side by side on all cores; `--list` and `--cell N` for
//! running cells elsewhere, `sluice sweep merge` to join their files.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use sluice::cli::{check_writable_file, progress_bar, CliError};
use sluice::sweep::rows::{merge, CellRow, SweepFile};
use sluice::sweep::{table, Sweep, SweepInput, DEFAULT_CORES};

const AFTER_HELP: &str = "\
Cells are numbered in cross-product order: devices, then file systems (--fs), then each --set
in the order given, then policies, then seeds (the last varies fastest). Each row carries the
`sluice sim` command that replays its cell alone.

Examples:
  sluice sweep --policy none,ld,rcp --seed 1..3 --set iodepth=1,4,32 --csv out.csv
  sluice sweep job.fio --device ull,zssd --policy none,d2fq --set writers.bs=64k,128k --json out.json
  sluice sweep job.fio --fs raw,compound,fjournal --policy none,rcp --csv out.csv   # on the store
  sluice sweep job.fio --policy none,ld --seed 1..100 --list > cells.txt   # one command per cell
  sluice sweep merge cell-*.json --csv out.csv                            # join the cells' files
See docs/sweep.md (Slurm job arrays, GNU parallel over ssh).";

#[derive(clap::Args, Debug)]
#[command(
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    after_help = AFTER_HELP
)]
pub(crate) struct SweepArgs {
    #[command(subcommand)]
    cmd: Option<SweepCmd>,
    /// fio job file; without it, sluice's embedded default job.
    job: Option<PathBuf>,
    /// Simulated devices: built-in profile names or profile TOML files, comma-separated
    /// or the flag repeated. Default: ull.
    #[arg(long, short = 'd')]
    device: Vec<String>,
    /// Policies `NAME[:key=value,...]`, comma-separated or the flag repeated (as `sluice
    /// sim`). Default: none for a job file, none,ld,rcp for the embedded job.
    #[arg(long, short = 'p')]
    policy: Vec<String>,
    /// Where the job's files live, comma-separated or the flag repeated: `raw` (simulated
    /// files of the device) or the journaled store — `compound`, `fjournal`,
    /// `compound+async`, `fjournal+async`, each optionally `+rcp` — as `sluice sim
    /// --fs`. Default: raw.
    #[arg(long, value_name = "raw|compound|fjournal[+async][+rcp],...")]
    fs: Vec<String>,
    /// Seeds: numbers and inclusive ranges, comma-separated (`1,2,3`, `1..10`). Default: 1.
    #[arg(long, value_name = "LIST")]
    seed: Vec<String>,
    /// An fio option and the values it takes in the sweep, for every job section
    /// (`iodepth=1,4,32`) or one (`writers.bs=64k,128k`); repeat for more axes. Write
    /// `\,` for a comma inside one value (`bs=4k\,64k,8k` is two values).
    #[arg(long, value_name = "[JOB.]KEY=V1,V2,...")]
    set: Vec<String>,
    /// Simulated host cores of every cell, 1 to 16383.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=16383), default_value_t = DEFAULT_CORES)]
    cores: u16,
    /// Treat unknown job-file options as warnings instead of errors.
    #[arg(long)]
    ignore_unknown: bool,
    #[command(flatten)]
    cache: sluice::cli::CacheArgs,
    /// Threads to run cells on; default: the available parallelism.
    #[arg(long, short = 'j', value_parser = clap::value_parser!(u64).range(1..=4096))]
    jobs: Option<u64>,
    /// Write one CSV row per cell here.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Write the sweep's JSON here (one object per cell, and the sweep's command).
    #[arg(long)]
    json: Option<PathBuf>,
    /// Print each cell as one plain command writing its own JSON file, run nothing.
    #[arg(long, conflicts_with_all = ["cell", "csv", "json"])]
    list: bool,
    /// With --list: the directory the cells' files go to.
    #[arg(long, default_value = ".", requires = "list")]
    cells_dir: PathBuf,
    /// Run only cell N (0-based; see --list).
    #[arg(long, value_name = "N")]
    cell: Option<usize>,
    /// No progress on stderr.
    #[arg(long, short = 'q')]
    quiet: bool,
}

impl SweepArgs {
    /// `-q`.
    pub(crate) fn quiet(&self) -> bool {
        self.quiet
    }
}

#[derive(clap::Subcommand, Debug)]
enum SweepCmd {
    /// Join cell files (`--cell N --json FILE`) of one sweep into its table, CSV and JSON.
    Merge(MergeArgs),
}

#[derive(clap::Args, Debug)]
struct MergeArgs {
    /// The cells' JSON files (or whole sweeps' files), in any order.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Write one CSV row per cell here.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Write the merged JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Merge although some cells are missing (they are named on stderr).
    #[arg(long)]
    partial: bool,
}

pub(crate) fn cmd_sweep(args: SweepArgs) -> Result<(), CliError> {
    if let Some(SweepCmd::Merge(m)) = args.cmd {
        return cmd_merge(m);
    }
    for (p, flag) in [(&args.csv, "--csv"), (&args.json, "--json")] {
        if let Some(p) = p {
            check_writable_file(p, flag)?;
        }
    }
    let sweep = Sweep::new(&SweepInput {
        job: args.job.clone(),
        devices: args.device.clone(),
        policies: args.policy.clone(),
        seeds: args.seed.clone(),
        sets: args.set.clone(),
        fs: args.fs.clone(),
        cores: args.cores,
        ignore_unknown: args.ignore_unknown,
        cache: args.cache.clone(),
    })?;
    let n = sweep.len();
    if args.list {
        return list(&sweep, &args.cells_dir);
    }
    let which: Vec<usize> = match args.cell {
        Some(c) if c >= n => {
            return Err(CliError::Usage(format!(
                "--cell {c}: the sweep has {n} cells, numbered 0 to {}",
                n - 1
            )))
        }
        Some(c) => vec![c],
        None => (0..n).collect(),
    };
    warn_logs(&sweep)?;
    let threads = args
        .jobs
        .map_or_else(sluice::repro::runner::default_jobs, |j| j as usize);
    let started = Instant::now();
    let bar = (!args.quiet && std::io::stderr().is_terminal() && which.len() > 1)
        .then(|| progress_bar("sweep", which.len() as u64));
    let lines = !args.quiet && bar.is_none();
    let done = |k: usize, total: usize, r: &CellRow| {
        if let Some(b) = &bar {
            b.inc(1);
        } else if lines {
            let sets: String = r.set.0.iter().map(|(t, v)| format!(", {t}={v}")).collect();
            let fs = match r.fs.as_str() {
                "raw" => String::new(),
                fs => format!(" ({fs})"),
            };
            eprintln!(
                "sluice sweep: cell {} done ({k}/{total}): {} on {}{fs}, seed {}{sets}",
                r.cell, r.policy, r.device, r.seed
            );
        }
    };
    let (rows, warnings) = sweep.run(&which, threads, &done)?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    for w in &warnings {
        sluice::cli::warn(w);
    }
    if !args.quiet {
        eprintln!(
            "sluice sweep: {} cell(s) in {:.2} s on {threads} thread(s)",
            rows.len(),
            started.elapsed().as_secs_f64()
        );
    }
    let file = SweepFile {
        sweep: sweep.info(),
        cells: rows,
    };
    emit(&file, args.csv.as_deref(), args.json.as_deref())
}

/// The table on stdout, then the files asked for.
fn emit(file: &SweepFile, csv: Option<&Path>, json: Option<&Path>) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    table::write_table(&file.cells, &mut out)?;
    if let Some(p) = csv {
        let mut bytes = Vec::new();
        table::write_csv(&file.cells, &mut bytes)?;
        write_file(p, &bytes)?;
    }
    if let Some(p) = json {
        write_file(p, &file.to_bytes())?;
    }
    Ok(())
}

fn write_file(p: &Path, bytes: &[u8]) -> Result<(), CliError> {
    std::fs::write(p, bytes).map_err(|e| {
        CliError::Io(std::io::Error::new(
            e.kind(),
            format!("{}: {e}", p.display()),
        ))
    })
}

/// `--list`: one command per cell, each writing `DIR/cell-N.json` (N zero-padded so
/// the files sort in cell order). Every cell's jobs are parsed first, so a value the
/// job file refuses is found here rather than on a cluster.
fn list(sweep: &Sweep, dir: &Path) -> Result<(), CliError> {
    let n = sweep.len();
    for w in sweep.check()? {
        sluice::cli::warn(w);
    }
    let width = (n.saturating_sub(1)).to_string().len();
    let mut out = std::io::stdout().lock();
    for i in 0..n {
        let path = dir.join(format!("cell-{i:0width$}.json"));
        writeln!(out, "{}", sweep.cell_command(i, &path))?;
    }
    Ok(())
}

/// fio log files are `sluice sim`'s: a sweep writes none (its cells would overwrite
/// each other's); say so once.
fn warn_logs(sweep: &Sweep) -> Result<(), CliError> {
    let (jobs, _) = sweep.jobs(&sweep.cell(0))?;
    if let Some(j) = jobs
        .iter()
        .find(|j| j.logs.bw.is_some() || j.logs.lat.is_some() || j.logs.iops.is_some())
    {
        sluice::cli::warn(format_args!(
            "job '{}' asks for fio log files; a sweep writes none (replay a \
             cell with its `sluice sim` command to get them)",
            j.name
        ));
    }
    Ok(())
}

fn cmd_merge(m: MergeArgs) -> Result<(), CliError> {
    for (p, flag) in [(&m.csv, "--csv"), (&m.json, "--json")] {
        if let Some(p) = p {
            check_writable_file(p, flag)?;
        }
    }
    let files = m
        .files
        .iter()
        .map(|p| SweepFile::read(p))
        .collect::<Result<Vec<_>, _>>()?;
    let names: Vec<String> = m.files.iter().map(|p| p.display().to_string()).collect();
    let (merged, note) = merge(files, &names, m.partial)?;
    if let Some(n) = note {
        sluice::cli::warn(format_args!("sweep merge: {n}"));
    }
    emit(&merged, m.csv.as_deref(), m.json.as_deref())
}
