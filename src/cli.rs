//! Command-line plumbing shared by the `sluice` subcommands: loading jobs, reading
//! policy lists, output options; the one error type that knows its exit code is in
//! `cli/error.rs`.

use std::path::Path;

use sluice_core::policy::{ParamError, PolicySpec};
use sluice_workload::{JobSpec, ParseOptions};

mod cache;
mod error;
mod logs;

pub use cache::{host_page_cache, kernel_dirty_thresholds, CacheArgs, DirtyThresholds, VmDirty};
pub use error::{jobs_ended, CliError};
pub use logs::{check_log_names, check_log_prefixes};

/// sluice's embedded default job: a latency-critical 4 KB random reader beside
/// throughput writers (run on the simulated `ull` device unless told otherwise).
pub const DEFAULT_JOB: &str = include_str!("../jobs/default.fio");

/// Name under which the embedded default job reports errors and appears in output.
pub const DEFAULT_JOB_NAME: &str = "<embedded default job>";

static QUIET: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// `-q`/`--quiet` for the whole process: [`warn`] then prints nothing (as fio's
/// warnings, sluice's are advice; a script that asked for quiet gets none).
pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, std::sync::atomic::Ordering::Relaxed);
}

/// Whether `-q` was given ([`set_quiet`]).
pub fn is_quiet() -> bool {
    QUIET.load(std::sync::atomic::Ordering::Relaxed)
}

/// Print `sluice: warning: {w}` on stderr, unless `-q` ([`set_quiet`]).
pub fn warn(w: impl std::fmt::Display) {
    if !is_quiet() {
        eprintln!("sluice: warning: {w}");
    }
}

/// Load the jobs of `path`, or the embedded default job when `path` is `None`.
/// Returns the jobs and the parser's warnings.
pub fn load_jobs(
    path: Option<&Path>,
    ignore_unknown: bool,
    sections: &[String],
) -> Result<(Vec<JobSpec>, Vec<String>), CliError> {
    let opts = ParseOptions {
        ignore_unknown,
        sections: sections.to_vec(),
    };
    let parsed = match path {
        Some(p) => sluice_workload::parse_file(p, &opts)?,
        None => sluice_workload::parse_str(DEFAULT_JOB, DEFAULT_JOB_NAME, &opts)?,
    };
    let origin = path.map_or(DEFAULT_JOB_NAME.to_string(), |p| p.display().to_string());
    let mut warnings = parsed.warnings;
    warnings.extend(sluice_workload::buffered_note(
        &origin,
        &parsed.buffered_by_default,
    ));
    Ok((parsed.jobs, warnings))
}

/// What raw files (no `--fs`) do not act on, one warning each: `create_on_open` (the
/// files are laid out before the run; the journaled store acts on it).
pub fn raw_file_warnings(jobs: &[JobSpec]) -> Vec<String> {
    jobs.iter()
        .filter(|j| j.create_on_open)
        .map(|j| {
            format!(
                "job '{}': create_on_open=1 is acted on only on the journaled store (--fs);                  raw files are laid out before the run",
                j.name
            )
        })
        .collect()
}

/// Run `jobs` on `profile` under the policy `spec` and name the report after it: the
/// one simulation path of `sluice sim` and of each `sluice sweep` cell.
pub fn simulate(
    jobs: &[JobSpec],
    profile: &sluice_device::DeviceProfile,
    spec: &PolicySpec,
    cfg: &sluice_sim::SimConfig,
    progress: &mut dyn FnMut(f64),
) -> Result<sluice_sim::SimOutput, CliError> {
    let policy = sluice_core::policy::build(spec)?;
    let mut out = sluice_sim::run(jobs, profile, policy, cfg, progress)?;
    out.report.policy = spec.text.clone();
    Ok(out)
}

/// Read `--policy` values: each value is a comma list of `NAME[:key=value,...]`; a
/// comma-separated piece that holds `=` but no `:` continues the parameters of the
/// policy before it, so `d2fq:mode=static,hl=4,none` is two policies.
pub fn parse_policy_list(values: &[String]) -> Result<Vec<PolicySpec>, CliError> {
    let mut texts: Vec<String> = Vec::new();
    for v in values {
        let pieces: Vec<&str> = v.split(',').map(str::trim).collect();
        if v.trim().is_empty() || pieces.iter().any(|p| p.is_empty()) {
            return Err(CliError::Usage(format!(
                "--policy '{v}': an empty entry (two commas, or a comma at an end); give \
                 NAME[:key=value,...] entries separated by single commas"
            )));
        }
        for piece in pieces {
            let continues = piece.contains('=') && !piece.contains(':');
            match texts.last_mut() {
                Some(last) if continues && last.contains(':') => {
                    last.push(',');
                    last.push_str(piece);
                }
                _ => texts.push(piece.to_string()),
            }
        }
    }
    if texts.is_empty() {
        return Err(CliError::PolicySpec(ParamError::EmptyName));
    }
    let mut specs = Vec::with_capacity(texts.len());
    for t in texts {
        specs.push(t.parse::<PolicySpec>()?);
    }
    Ok(specs)
}

/// Print the `extra.fios` figures of each run as a table.
pub fn print_fios(
    runs: &[sluice_metrics::RunReport],
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    writeln!(
        out,
        "\nFIOS figures (slowdown = mean latency together / alone under none)"
    )?;
    let mut t = sluice_metrics::Table::new(
        &[
            ("policy", false),
            ("task", false),
            ("slowdown", true),
            ("proportional", true),
            ("efficiency", true),
        ],
        false,
    );
    for r in runs {
        let Some(f) = &r.extra.fios else {
            continue;
        };
        for task in &f.tasks {
            t.row(vec![
                r.policy.clone(),
                task.name.clone(),
                format!("{:.2}", task.slowdown),
                format!("{:.0}", f.proportional),
                format!("{:.2}", f.concurrent_efficiency),
            ]);
        }
    }
    t.write(out)?;
    Ok(())
}

/// What goes to stdout (fio's `--output-format`).
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputFormat {
    /// The table.
    #[default]
    Normal,
    /// fio-style JSON instead of the table.
    Json,
    /// JSON with fio's json+ latency bins (`clat_ns.bins`), instead of the table; a
    /// `--json` file gets the bins too.
    #[value(name = "json+")]
    JsonPlus,
    /// fio's terse format, version 3: one semicolon-separated line per job
    /// (`sluice_metrics::terse`).
    Terse,
}

/// The output options `sim` and `run` share.
#[derive(clap::Args, Debug, Clone)]
pub struct OutputArgs {
    /// Write fio-style JSON results here.
    #[arg(long)]
    pub json: Option<std::path::PathBuf>,
    /// stdout: `normal` (the table), `json`, `json+` (JSON with fio's latency bins,
    /// `clat_ns.bins`, which fio's json+ tools read) or `terse` (fio's terse v3 lines),
    /// as fio's `--output-format`.
    #[arg(long, value_enum, default_value = "normal")]
    pub output_format: OutputFormat,
    /// Write what would go to stdout (the table, or the `--output-format` document) to
    /// this file instead, as fio's `--output`.
    #[arg(long, value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,
    /// Write SVG figures (latency CCDF per job; bandwidth per flow over time) here.
    #[arg(long)]
    pub plot: Option<std::path::PathBuf>,
    /// Treat unknown job-file options as warnings instead of errors.
    #[arg(long)]
    pub ignore_unknown: bool,
    /// Run only this job section of the job file (with its [global]), as fio's
    /// `--section`; repeat it for several. The other sections are not read.
    #[arg(long, value_name = "NAME")]
    pub section: Vec<String>,
    /// No progress bar and no run summary on stderr.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

impl OutputArgs {
    /// Check, before a run starts, that every output path can be written (a bad path is
    /// a usage error found at once, not after the whole run).
    pub fn check(&self) -> Result<(), CliError> {
        self.check_inputs(&[])
    }

    /// [`OutputArgs::check`], and that no output is one of the run's `inputs` (its job
    /// file, a profile file): `sluice sim a.fio --json a.fio` would write its report
    /// over the job file.
    pub fn check_inputs(&self, inputs: &[&std::path::Path]) -> Result<(), CliError> {
        for (flag, path, what) in [
            ("--json", &self.json, "the report"),
            ("--output", &self.output, "the results"),
        ] {
            let Some(p) = path else { continue };
            if let Some(i) = inputs.iter().find(|i| same_file(p, i)) {
                return Err(CliError::Usage(format!(
                    "{flag} {}: is the run's input {}; {what} would overwrite it: give \
                     another path",
                    p.display(),
                    i.display()
                )));
            }
            check_writable_file(p, flag)?;
        }
        if let Some(d) = &self.plot {
            check_writable_dir(d, "--plot")?;
        }
        Ok(())
    }

    /// Where the results go: `--output`'s file (created now), else stdout.
    pub fn sink(&self) -> Result<Box<dyn std::io::Write>, CliError> {
        Ok(match &self.output {
            Some(p) => Box::new(std::io::BufWriter::new(std::fs::File::create(p).map_err(
                |e| CliError::Usage(format!("--output {}: cannot be written: {e}", p.display())),
            )?)),
            None => Box::new(std::io::stdout().lock()),
        })
    }

    /// The results to stdout in the `--output-format` (json+ bins are kept only for
    /// json+), then the files asked for.
    pub fn emit(
        &self,
        reports: &mut [sluice_metrics::RunReport],
        out: &mut dyn std::io::Write,
    ) -> Result<(), CliError> {
        if self.output_format != OutputFormat::JsonPlus {
            for r in reports.iter_mut() {
                r.drop_bins();
            }
        }
        if !self.quiet {
            for r in reports.iter() {
                for j in &r.jobs {
                    let Some(s) = &j.steadystate else { continue };
                    match (s.attained_ms, s.criterion) {
                        (Some(ms), Some(c)) => eprintln!(
                            "sluice: {}: job '{}': steady state ({}, window {} ms) reached at {:.3} s \
                             (criterion {c}); the job ended there",
                            r.policy,
                            j.jobname,
                            s.ss,
                            s.duration_ms,
                            ms as f64 / 1e3
                        ),
                        _ => eprintln!(
                            "sluice: {}: job '{}': steady state ({}, window {} ms) not reached",
                            r.policy, j.jobname, s.ss, s.duration_ms
                        ),
                    }
                }
            }
        }
        match self.output_format {
            OutputFormat::Normal => sluice_metrics::print_table(reports, out)?,
            OutputFormat::Terse => out.write_all(sluice_metrics::terse(reports).as_bytes())?,
            OutputFormat::Json | OutputFormat::JsonPlus => {
                let bytes = sluice_metrics::json_bytes(reports)
                    .map_err(|e| CliError::Io(std::io::Error::other(e)))?;
                out.write_all(&bytes)?;
                writeln!(out)?;
            }
        }
        out.flush()?;
        self.write_files(reports)?;
        self.write_logs(reports)
    }

    /// Write the fio log files the jobs asked for (`write_bw_log`, …); with several
    /// policies, each policy's files carry its name before `.log`.
    pub fn write_logs(&self, reports: &[sluice_metrics::RunReport]) -> Result<(), CliError> {
        let several = reports.len() > 1;
        for r in reports {
            if r.logs.is_empty() {
                continue;
            }
            let suffix: String = r
                .policy
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '-' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect();
            let paths =
                sluice_metrics::write_fio_logs(&r.logs, several.then_some(suffix.as_str()))?;
            if r.logs.iter().any(|f| f.truncated) {
                eprintln!(
                    "sluice: warning: policy {}: the fio logs reached {} entries and were cut; \
                     give log_avg_msec to average them",
                    r.policy,
                    sluice_metrics::MAX_LOG_ENTRIES
                );
            }
            if !self.quiet {
                eprintln!(
                    "sluice: wrote {} fio log file(s): {}",
                    paths.len(),
                    paths
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
        }
        Ok(())
    }

    /// Write the JSON file and the figures asked for (the table goes to stdout apart).
    pub fn write_files(&self, reports: &[sluice_metrics::RunReport]) -> Result<(), CliError> {
        if let Some(path) = &self.json {
            sluice_metrics::write_json(reports, path)?;
        }
        if let Some(dir) = &self.plot {
            let files = sluice_metrics::plot(reports, dir)?;
            if !self.quiet {
                for f in files {
                    eprintln!("sluice: wrote {}", f.display());
                }
            }
        }
        Ok(())
    }
}

/// Whether `a` and `b` name the same existing file (the same device and inode: a
/// path spelled another way, or a link, is the same file).
pub fn same_file(a: &std::path::Path, b: &std::path::Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

/// `flag`'s file `p` can be created or appended to (nothing is truncated; a file the
/// probe created is removed again).
pub fn check_writable_file(p: &std::path::Path, flag: &str) -> Result<(), CliError> {
    if p.is_dir() {
        return Err(CliError::Usage(format!(
            "{flag} {}: is a directory; give a file path",
            p.display()
        )));
    }
    let dir = p
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    if !dir.is_dir() {
        return Err(CliError::Usage(format!(
            "{flag} {}: the directory {} does not exist; create it or give another path",
            p.display(),
            dir.display()
        )));
    }
    let existed = p.exists();
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(p)
        .map_err(|e| CliError::Usage(format!("{flag} {}: cannot be written: {e}", p.display())))?;
    if !existed {
        let _ = std::fs::remove_file(p);
    }
    Ok(())
}

/// `flag`'s directory `d` exists (or can be created) and takes new files.
pub fn check_writable_dir(d: &std::path::Path, flag: &str) -> Result<(), CliError> {
    if d.exists() && !d.is_dir() {
        return Err(CliError::Usage(format!(
            "{flag} {}: exists and is not a directory",
            d.display()
        )));
    }
    std::fs::create_dir_all(d)
        .map_err(|e| CliError::Usage(format!("{flag} {}: cannot be created: {e}", d.display())))?;
    let probe = d.join(format!(".sluice-probe-{}", std::process::id()));
    std::fs::write(&probe, b"")
        .map_err(|e| CliError::Usage(format!("{flag} {}: cannot be written: {e}", d.display())))?;
    let _ = std::fs::remove_file(probe);
    Ok(())
}

/// Wall time beyond which a simulation is refused without `--allow-long`.
pub const LONG_RUN_SECS: f64 = 3600.0;

/// Refuse a simulation that would take more than [`LONG_RUN_SECS`] of wall time
/// (`runs` runs of `jobs`, see [`sluice_sim::estimate`]) unless `allow_long`; say the
/// estimate of one that takes more than a minute (unless `quiet`).
pub fn check_work(
    jobs: &[JobSpec],
    profile: &sluice_device::DeviceProfile,
    runs: usize,
    cap_ns: u64,
    allow_long: bool,
    quiet: bool,
) -> Result<(), CliError> {
    let w = sluice_sim::estimate::estimate(jobs, profile, cap_ns);
    let (ios, secs) = (w.ios * runs as f64, w.wall_secs() * runs as f64);
    let human = if secs >= 3600.0 {
        format!("{:.1} hours", secs / 3600.0)
    } else {
        format!("{:.0} minutes", (secs / 60.0).ceil())
    };
    let why = if w.capped {
        " (a job with neither a size bound nor `runtime=` runs until the one-day \
         simulated-time cap)"
    } else {
        ""
    };
    if secs > LONG_RUN_SECS && !allow_long {
        return Err(CliError::Usage(format!(
            "this simulation would do up to {ios:.3e} I/Os{why}, about {human} of wall time \
             at {:.0} M simulated I/Os a second over {runs} run(s); bound it with `runtime=`, \
             a smaller `size=`/`loops=`/`number_ios=`, or pass --allow-long to run it anyway",
            sluice_sim::estimate::SIM_IOS_PER_SEC / 1e6
        )));
    }
    if secs > 60.0 && !quiet {
        eprintln!(
            "sluice: this simulation may do up to {ios:.3e} I/Os, about {human} of wall time{why}"
        );
    }
    Ok(())
}

/// A progress bar on stderr for the long-running subcommands: `{prefix} [bar] N%
/// elapsed/eta`. Callers show it only on a terminal and only once a run has taken more
/// than a second.
pub fn progress_bar(prefix: impl Into<String>, len: u64) -> indicatif::ProgressBar {
    let b = indicatif::ProgressBar::new(len);
    b.set_style(
        indicatif::ProgressStyle::with_template(
            "{prefix} [{bar:40}] {percent:>3}% {elapsed}/{eta}",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    b.set_prefix(prefix.into());
    b
}

/// Ctrl-C (or SIGTERM) once sets the flag: the run stops and reports what it measured;
/// twice exits at once with status 130.
pub fn stop_flag() -> std::io::Result<std::sync::Arc<std::sync::atomic::AtomicBool>> {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(sig, 130, stop.clone())?;
        signal_hook::flag::register(sig, stop.clone())?;
    }
    Ok(stop)
}

/// The environment variable naming a file `sluice` creates once a run is under way
/// (`sim`, `run` and their `--fs` forms): a script or a test that stops the run with
/// Ctrl-C waits for the file instead of guessing a time.
pub const READY_FILE_VAR: &str = "SLUICE_READY_FILE";

/// Create the readiness file ([`READY_FILE_VAR`]) if one is asked for (once).
pub fn signal_ready() {
    static DONE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if let Some(path) = std::env::var_os(READY_FILE_VAR) {
        if !DONE.swap(true, std::sync::atomic::Ordering::Relaxed) {
            if let Err(e) = std::fs::File::create(&path) {
                eprintln!(
                    "sluice: {READY_FILE_VAR}={}: cannot create it: {e}",
                    std::path::Path::new(&path).display()
                );
            }
        }
    }
}

/// One policy's run in a series ([`each_policy`]): its report, and whether the stop
/// flag ended it early.
#[derive(Debug)]
pub struct PolicyRun {
    /// The report (its `policy` is set to the policy's text by [`each_policy`]).
    pub report: sluice_metrics::RunReport,
    /// The run was interrupted (the series ends after it).
    pub interrupted: bool,
}

/// Run each policy of `specs` in turn, as `sim`, `run` and their `--fs` forms do:
/// `run(spec, progress)` runs one (calling `progress` with the fraction done), a
/// progress bar `{verb} {policy}` shows up on stderr once a run has taken more than a
/// second (with `show`: a terminal, not `--quiet`), the readiness file is created at
/// the first progress past 0 ([`signal_ready`]), and the series ends at an
/// interrupted run or when `stop` is set before a run starts. Returns the reports and
/// whether the series was interrupted.
pub fn each_policy(
    specs: &[PolicySpec],
    verb: &str,
    show: bool,
    stop: &std::sync::atomic::AtomicBool,
    mut run: impl FnMut(&PolicySpec, &mut dyn FnMut(f64)) -> Result<PolicyRun, CliError>,
) -> Result<(Vec<sluice_metrics::RunReport>, bool), CliError> {
    let mut reports = Vec::with_capacity(specs.len());
    for spec in specs {
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            return Ok((reports, true));
        }
        let started = std::time::Instant::now();
        let mut bar: Option<indicatif::ProgressBar> = None;
        let mut on_progress = |f: f64| {
            if f > 0.0 {
                signal_ready();
            }
            if !show {
                return;
            }
            if bar.is_none() && started.elapsed() > std::time::Duration::from_secs(1) {
                bar = Some(progress_bar(format!("{verb} {}", spec.text), 1000));
            }
            if let Some(b) = &bar {
                b.set_position((f * 1000.0) as u64);
            }
        };
        let r = run(spec, &mut on_progress);
        if let Some(b) = bar {
            b.finish_and_clear();
        }
        let mut r = r?;
        r.report.policy = spec.text.clone();
        reports.push(r.report);
        if r.interrupted {
            eprintln!("sluice: interrupted; the results so far follow");
            return Ok((reports, true));
        }
    }
    Ok((reports, false))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_lists() {
        let names = |v: &[&str]| -> Vec<String> {
            parse_policy_list(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>())
                .unwrap()
                .into_iter()
                .map(|s| s.text)
                .collect()
        };
        assert_eq!(names(&["none"]), vec!["none"]);
        assert_eq!(
            names(&["d2fq:mode=static,hl=4,none", "mqfq"]),
            vec!["d2fq:mode=static,hl=4", "none", "mqfq"]
        );
        assert!(parse_policy_list(&["x=1".to_string()]).is_err());
    }

    #[test]
    fn run_s_page_cache_is_a_quarter_of_available_memory() {
        let info = "MemTotal:       24000000 kB\nMemAvailable:   23477892 kB\n";
        // 23 477 892 KiB / 4 = 5 869 473 KiB, down to whole MiB: 5 731 MiB.
        assert_eq!(host_page_cache(Some(info.into())), 5731 << 20);
        assert_eq!(
            host_page_cache(Some("MemAvailable: 100000 kB".into())),
            64 << 20
        );
        assert_eq!(host_page_cache(Some("garbage".into())), 64 << 20);
        assert_eq!(host_page_cache(None), 64 << 20);
    }

    #[test]
    fn run_s_single_dirty_limit_takes_the_kernels_thresholds() {
        let info = "MemFree:        15000000 kB\nMemAvailable:   23000000 kB\n\
                    Active(file):    3000000 kB\nInactive(file):  2000000 kB\n";
        let vm = VmDirty {
            ratio: 20,
            background_ratio: 10,
            bytes: 0,
            background_bytes: 0,
        };
        // Dirtyable: 20 000 000 KiB; 20 % and 10 % of it.
        let t = kernel_dirty_thresholds(info, vm).unwrap();
        assert_eq!(
            t,
            DirtyThresholds {
                limit: 4_000_000 * 1024,
                background: 2_000_000 * 1024,
            }
        );
        // The byte knobs replace the ratios; a background at or past the limit is half.
        let bytes = VmDirty {
            bytes: 1 << 30,
            background_bytes: 2 << 30,
            ..vm
        };
        let b = kernel_dirty_thresholds(info, bytes).unwrap();
        assert_eq!((b.limit, b.background), (1 << 30, 1 << 29));
        assert_eq!(kernel_dirty_thresholds("MemFree: 1 kB\n", vm), None);
        // On a 5 GB cache: the limit is 80 % of it (not 20 %), writeback from half.
        let mut c = sluice_cache::CacheConfig {
            pages: 5_000_000 * 1024 / 4096,
            class_limits: true,
            ..Default::default()
        };
        t.apply(&mut c);
        assert!(!c.class_limits);
        assert_eq!(c.dirty_limit(sluice_core::IoClass::Normal), 1_000_000);
        assert_eq!(c.background_pages(), 500_000);
        // A limit past the cache: all of it, writeback from half of it.
        let mut small = sluice_cache::CacheConfig::default();
        t.apply(&mut small);
        assert_eq!(small.dirty_limit(sluice_core::IoClass::Normal), small.pages);
        assert_eq!(small.background_pages(), small.pages / 2);
    }
}
