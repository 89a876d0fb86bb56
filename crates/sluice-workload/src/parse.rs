//! The fio job-file parser (see the crate documentation for the subset).

use std::collections::BTreeSet;
use std::path::Path;
use std::rc::Rc;

use sluice_core::IoClass;

use crate::error::WorkloadError;
use crate::include::{expand_includes, expand_value, SrcLine};
use crate::job::{
    weight_from_prio, BlockSize, BsEntry, Distribution, JobSpec, RateProcess, RwMode, RwModifier,
};
use crate::on_error::ContinueOn;
use crate::options::{engine_class, lookup, option_table, EngineClass, OptionInfo, Support};
use crate::placement::{num, parse_pi_chk, parse_plid_select, parse_plids};
use crate::steady::{parse_steadystate, SteadyMetric, SteadySpec};
use crate::units::{
    parse_bool, parse_percent_ppm, parse_positive_size, parse_size, parse_time, parse_uint,
    show_size, TimeUnit, PPM,
};
use crate::values::{parse_bsrange, parse_distribution, parse_file_service, split_paths};
use crate::verify::{parse_pattern, parse_verify_kind, VerifyKind, VerifySpec};
use crate::zones::{parse_ratio, parse_zone_mode, zone_count, ZoneMode};

mod draft;
mod fields;
mod finish;
mod prio;
mod rows;
mod zoned;

use fields::*;
pub(crate) use rows::ACTED;

/// How strictly to parse.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ParseOptions {
    /// Turn unknown options, and options sluice refuses, into warnings instead of
    /// errors (the CLI's `--ignore-unknown`).
    pub ignore_unknown: bool,
    /// fio's `--section`: only these job sections (and `[global]`) are read; the lines
    /// of the others are skipped unread, as fio skips them (their `${VAR}`s are not
    /// expanded). Empty: every section.
    pub sections: Vec<String>,
}

/// A warning, formatted like an error (`file:line: option 'x': …`).
pub type Warning = String;

/// The result of parsing a job file.
#[derive(Clone, Debug, PartialEq)]
pub struct Parsed {
    /// The job sections in file order.
    pub jobs: Vec<JobSpec>,
    /// Things that did not stop the parse but that the user should see (unknown options
    /// under `ignore_unknown`, options with no effect — once per option —, ignored
    /// settings, contradictions resolved by a rule).
    pub warnings: Vec<Warning>,
    /// The jobs that gave neither `direct=` nor `buffered=`: buffered, as fio's default
    /// `direct=0` (sluice's default was `direct=1`; see [`buffered_note`]).
    pub buffered_by_default: Vec<String>,
}

/// The note a command prints once about the jobs of `origin` that run buffered by
/// default (`None` when every job says `direct=`).
pub fn buffered_note(origin: &str, jobs: &[String]) -> Option<String> {
    if jobs.is_empty() {
        return None;
    }
    Some(format!(
        "{origin}: {} {} no direct=: buffered I/O through sluice's page cache, as fio's \
         default direct=0 (sluice's default was direct=1 before); add direct=1 to measure \
         the device",
        name_list(jobs),
        if jobs.len() == 1 { "gives" } else { "give" }
    ))
}

/// Read and parse a job file. The file name is used as the origin in messages;
/// `include` directives are read relative to it, and `${VAR}` from the process
/// environment.
pub fn parse_file(path: &Path, opts: &ParseOptions) -> Result<Parsed, WorkloadError> {
    let text = crate::read_text(path).map_err(|source| WorkloadError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse_str(&text, &path.display().to_string(), opts)
}

/// Parse job-file text. `origin` names the text in messages (usually the file name);
/// `include` directives are read relative to its directory, and `${VAR}` from the
/// process environment.
pub fn parse_str(text: &str, origin: &str, opts: &ParseOptions) -> Result<Parsed, WorkloadError> {
    parse_str_with(text, origin, opts, &|name| std::env::var(name).ok())
}

/// [`parse_str`] with `${VAR}` values taken from `vars` instead of the process
/// environment (an unset variable is `None`).
pub fn parse_str_with(
    text: &str,
    origin: &str,
    opts: &ParseOptions,
    vars: &dyn Fn(&str) -> Option<String>,
) -> Result<Parsed, WorkloadError> {
    // A UTF-8 byte-order mark (editors on some systems write one) is not text.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    // A job for an engine sluice cannot stand in for stops on that one line, before
    // any of the engine's own options is reported as unknown.
    prescan_engine(text, origin)?;
    let mut lines = Vec::new();
    expand_includes(text, origin, &mut Vec::new(), &mut lines)?;
    let main: Rc<str> = Rc::from(origin);
    let mut p = Parser {
        origin: main.clone(),
        opts,
        vars,
        global: Draft::fio_default(),
        section: Section::None,
        jobs: Vec::new(),
        warnings: Vec::new(),
        warned: BTreeSet::new(),
        implicit_buffered: Vec::new(),
    };
    for l in &lines {
        p.origin = l.origin.clone();
        p.line(l)?;
    }
    p.origin = main;
    p.finish_section()?;
    if p.jobs.is_empty() && !opts.sections.is_empty() {
        return Err(WorkloadError::NoSection {
            origin: origin.to_string(),
            sections: opts.sections.join(", --section "),
        });
    }
    if p.jobs.is_empty() {
        return Err(WorkloadError::NoJobs {
            origin: origin.to_string(),
        });
    }
    check_flows(origin, &p.jobs)?;
    Ok(Parsed {
        jobs: p.jobs,
        warnings: p.warnings,
        buffered_by_default: p.implicit_buffered,
    })
}

/// "job 'a'", "jobs 'a', 'b'", "jobs 'a', 'b', 'c' and 4 more".
fn name_list(names: &[String]) -> String {
    let shown: Vec<String> = names.iter().take(3).map(|n| format!("'{n}'")).collect();
    let more = match names.len() {
        0..=3 => String::new(),
        n => format!(" and {} more", n - 3),
    };
    let s = if names.len() == 1 { "" } else { "s" };
    format!("job{s} {}{more}", shown.join(", "))
}

/// The first `ioengine=` line of the text naming an engine that is not local I/O.
fn prescan_engine(text: &str, origin: &str) -> Result<(), WorkloadError> {
    for (i, raw) in text.lines().enumerate() {
        let s = strip_comment(raw).trim();
        let Some((k, v)) = s.split_once('=') else {
            continue;
        };
        let v = v.trim();
        if k.trim() != "ioengine" || v.contains('$') {
            continue;
        }
        if let EngineClass::Refused(why) = engine_class(v) {
            return Err(engine_error(origin, i + 1, v, why));
        }
    }
    Ok(())
}

fn engine_error(origin: &str, line: usize, v: &str, why: &str) -> WorkloadError {
    WorkloadError::Option {
        origin: origin.to_string(),
        line,
        option: "ioengine".to_string(),
        message: format!(
            "'{v}' cannot run in sluice: {why}. sluice runs every job with its own engine (the \
             simulator, or io_uring for `sluice run`); remove ioengine or use a local one such as io_uring"
        ),
    }
}

/// Jobs of one flow must agree on its weight.
fn check_flows(origin: &str, jobs: &[JobSpec]) -> Result<(), WorkloadError> {
    for (i, b) in jobs.iter().enumerate() {
        if let Some(a) = jobs[..i].iter().find(|a| a.flow == b.flow) {
            if a.weight != b.weight {
                return Err(WorkloadError::Option {
                    origin: origin.to_string(),
                    line: b.line,
                    option: "sluice_weight".to_string(),
                    message: format!(
                        "job '{}' is in flow '{}' with weight {}, but job '{}' (line {}) gave that flow weight {}; \
                         jobs of one flow must have the same weight (set sluice_weight, or prio/prioclass, alike)",
                        b.name, b.flow, b.weight, a.name, a.line, a.weight
                    ),
                });
            }
        }
    }
    Ok(())
}

/// Where an option was set: file (origin) and line.
#[derive(Clone, Debug)]
pub(crate) struct Loc {
    origin: Rc<str>,
    line: usize,
}

/// A section's options as collected, before the checks that join them. A simple
/// option's row ([`rows::ACTED`]) writes its [`JobSpec`] field straight into `job`
/// (which starts from [`JobSpec::default`]); the options below, whose meaning depends
/// on others, keep their value (and where it was set) for `finish`.
#[derive(Clone, Debug, Default)]
pub(crate) struct Draft {
    /// The job as the simple options leave it (`finish` fills in the rest).
    job: JobSpec,
    name: Option<String>,
    /// `[read, write]`: size and where it was set.
    bs: [Option<(u32, Loc)>; 2],
    /// The trim size of `bs=read,write,trim` and where it was set.
    bs_trim: Option<(u32, Loc)>,
    /// `[read, write]`: a table from `bssplit` or `bsrange`, the option and where.
    bssplit: [Option<(Vec<BsEntry>, &'static str, Loc)>; 2],
    size: Option<(u64, Loc)>,
    filesize: Option<(u64, Loc)>,
    nrfiles: Option<(u32, Loc)>,
    io_size: Option<(u64, Loc)>,
    offset: Option<(u64, Loc)>,
    distribution: Option<([Distribution; 2], Loc)>,
    percentage_random: Option<([u8; 2], Loc)>,
    /// `verify=` (its kind, `None` for `verify=0`) and where.
    verify: Option<(Option<VerifyKind>, Loc)>,
    verify_pattern: Option<Vec<u8>>,
    do_verify: Option<bool>,
    verify_fatal: bool,
    verify_backlog: Option<u64>,
    verify_interval: Option<(u32, Loc)>,
    /// `write_bw_log`, `write_lat_log`, `write_iops_log`: `Some(None)` when bare (the
    /// job name).
    log_bw: Option<Option<String>>,
    log_lat: Option<Option<String>>,
    log_iops: Option<Option<String>>,
    /// `steadystate`: (metric, slope, limit, percent) and where.
    ss: Option<((SteadyMetric, bool, f64, bool), Loc)>,
    ss_dur: Option<(u64, Loc)>,
    ss_ramp: u64,
    ss_interval: Option<(u64, Loc)>,
    filename: Option<(String, Loc)>,
    filename_format: Option<(String, Loc)>,
    directory: Option<(Vec<String>, Loc)>,
    fsync: u32,
    fdatasync: u32,
    critical: bool,
    weight: Option<u32>,
    flow: Option<String>,
    /// Per-I/O priorities (`cmdprio_*`).
    prio: prio::PrioDraft,
    /// `wait_for`: the waitee's name and where.
    wait_for: Option<(String, Loc)>,
    /// Whether `direct=` or `buffered=` was given (else fio's default, `direct=0`).
    direct_given: bool,
    /// Sizes given in zones (`size=8z`), resolved with the zone size at the end.
    nz: ZoneCounts,
    /// `zonemode=`, if given.
    zonemode: Option<ZoneMode>,
    /// `fdp=` and `dataplacement=` (FDP or none), if given, and where.
    fdp: Option<(bool, Loc)>,
    dataplacement: Option<(bool, Loc)>,
    /// `atomic=`, if given, and where.
    atomic: Option<(bool, Loc)>,
}

/// Sizes given as a number of zones (fio's `size_nz`, …) and where.
#[derive(Clone, Debug, Default)]
pub(crate) struct ZoneCounts {
    size: Option<(u64, Loc)>,
    io_size: Option<(u64, Loc)>,
    offset: Option<(u64, Loc)>,
    offset_increment: Option<(u64, Loc)>,
    skip: Option<(u64, Loc)>,
}

impl Draft {
    /// Where every job file starts, as fio's: `direct=0` (buffered I/O, here through
    /// sluice's page cache) unless the file says `direct=1`.
    fn fio_default() -> Draft {
        let mut d = Draft::default();
        d.job.buffered = true;
        d
    }
}

/// One option as written, handed to its row's setter.
pub(crate) struct Arg<'a> {
    /// The name as written (the option's name or an alias).
    key: &'a str,
    /// The value (`None` for a bare flag).
    value: Option<&'a str>,
    /// Where it was set.
    at: &'a Loc,
}

/// How an option's value is read and where it lands: a row's setter.
pub(crate) type Setter = fn(&mut Draft, &Arg<'_>) -> Result<(), String>;

enum Section {
    None,
    Global,
    /// A job section fio's `--section` leaves out: its lines are not read.
    Skipped,
    Job {
        name: String,
        line: usize,
        draft: Box<Draft>,
    },
}

enum ApplyError {
    Unknown,
    Bad(String),
}

impl From<String> for ApplyError {
    fn from(s: String) -> Self {
        ApplyError::Bad(s)
    }
}

struct Parser<'a> {
    /// The file of the line being read.
    origin: Rc<str>,
    opts: &'a ParseOptions,
    vars: &'a dyn Fn(&str) -> Option<String>,
    global: Draft,
    section: Section,
    jobs: Vec<JobSpec>,
    warnings: Vec<Warning>,
    /// Options already warned about (once per option and file).
    warned: BTreeSet<&'static str>,
    /// The jobs that gave no `direct=`/`buffered=` (they run buffered, as fio's).
    implicit_buffered: Vec<String>,
}

/// Drop a whole-line comment, or a trailing one that starts after whitespace.
pub(crate) fn strip_comment(raw: &str) -> &str {
    let s = raw.trim_start();
    if s.starts_with(';') || s.starts_with('#') {
        return "";
    }
    let mut prev_ws = false;
    for (i, c) in s.char_indices() {
        if prev_ws && (c == ';' || c == '#') {
            return &s[..i];
        }
        prev_ws = c.is_whitespace();
    }
    s
}

/// What the table says to do with an option no row's setter acts on.
enum TableAction {
    /// Record it, and warn once with this text.
    Warn(String),
    /// Record it silently.
    Quiet,
    /// Refuse it with this text.
    Refuse(String),
}

fn table_action(key: &str, value: Option<&str>) -> Option<(&'static str, TableAction)> {
    let info = lookup(key)?;
    let shown = value.map_or_else(|| key.to_string(), |v| format!("{key}={v}"));
    let action = match info.support {
        Support::Yes => return None,
        Support::NoEffect => TableAction::Warn(format!("accepted, no effect in sluice: {}", info.note)),
        Support::NotYet if info.quiet_for(value) => TableAction::Quiet,
        Support::NotYet => TableAction::Warn(format!("not supported yet: {shown}: {}", info.note)),
        Support::Refused if info.quiet_for(value) => TableAction::Quiet,
        Support::Refused => TableAction::Refuse(format!(
            "'{}' is not supported: {}. Remove the option, or pass --ignore-unknown to run the job without it (with a warning)",
            value.unwrap_or("1"),
            info.note
        )),
    };
    Some((info.name, action))
}

impl Parser<'_> {
    fn loc(&self, line: usize) -> Loc {
        Loc {
            origin: self.origin.clone(),
            line,
        }
    }

    fn syntax(&self, line: usize, message: String) -> WorkloadError {
        WorkloadError::Syntax {
            origin: self.origin.to_string(),
            line,
            message,
        }
    }

    fn option_err(&self, line: usize, option: &str, message: String) -> WorkloadError {
        self.option_err_at(&self.loc(line), option, message)
    }

    fn option_err_at(&self, at: &Loc, option: &str, message: String) -> WorkloadError {
        WorkloadError::Option {
            origin: at.origin.to_string(),
            line: at.line,
            option: option.to_string(),
            message,
        }
    }

    /// `line N` when `at` is in the file being reported on, else `file:N`.
    fn where_(&self, at: &Loc) -> String {
        if at.origin == self.origin {
            format!("line {}", at.line)
        } else {
            format!("{}:{}", at.origin, at.line)
        }
    }

    fn warn_once(&mut self, name: &'static str, line: usize, key: &str, text: String) {
        if self.warned.insert(name) {
            self.warnings
                .push(format!("{}:{line}: option '{key}': {text}", self.origin));
        }
    }

    fn line(&mut self, src: &SrcLine) -> Result<(), WorkloadError> {
        let line = src.line;
        let s = strip_comment(&src.text).trim();
        if s.is_empty() {
            return Ok(());
        }
        if let Some(rest) = s.strip_prefix('[') {
            if src.included {
                return Err(self.syntax(
                    line,
                    format!(
                        "'{s}': an included file may not hold sections (as in fio); only options"
                    ),
                ));
            }
            let Some(name) = rest.strip_suffix(']') else {
                return Err(self.syntax(
                    line,
                    format!("cannot read '{s}' as a section header; write it as [name]"),
                ));
            };
            let name = name.trim();
            if name.is_empty() || name.contains(['[', ']']) {
                return Err(self.syntax(
                    line,
                    format!("'{s}' is not a valid section header; write [global] or [jobname]"),
                ));
            }
            self.finish_section()?;
            self.section = if name == "global" {
                Section::Global
            } else if !self.opts.sections.is_empty()
                && !self.opts.sections.iter().any(|n| n == name)
            {
                Section::Skipped
            } else {
                let mut draft = Box::new(self.global.clone());
                // As fio: a `name=` in [global] does not rename the jobs; the section's
                // header (or its own `name=`) does.
                draft.name = None;
                Section::Job {
                    name: name.to_string(),
                    line,
                    draft,
                }
            };
            return Ok(());
        }
        if matches!(self.section, Section::Skipped) {
            return Ok(());
        }
        let (key, value) = match s.split_once('=') {
            Some((k, v)) => (k.trim(), Some(v.trim())),
            None => (s, None),
        };
        if key.is_empty() {
            return Err(self.syntax(
                line,
                format!("'{s}' has no option name before '='; write key=value"),
            ));
        }
        if key.contains(char::is_whitespace) {
            return Err(self.syntax(
                line,
                format!(
                    "cannot read '{s}' as an option; write key=value, or a bare flag such as time_based"
                ),
            ));
        }
        if matches!(self.section, Section::None) {
            return Err(self.option_err(
                line,
                key,
                "appears before any section; put it under [global] or under a job header such as [job1]"
                    .to_string(),
            ));
        }
        // ${VAR} and fio's keywords, on the right of '=' only (as fio).
        let expanded = match value {
            Some(v) => Some(expand_value(v, self.vars).map_err(|m| self.option_err(line, key, m))?),
            None => None,
        };
        let value = expanded.as_deref();
        if key == "ioengine" {
            // A local engine (psync, libaio, io_uring, …) is accepted silently: sluice
            // runs every job with its own engine, and a job file written for fio names
            // one in nearly every section (fio, too, says nothing).
            if let Some(EngineClass::Refused(why)) = value.map(engine_class) {
                return Err(engine_error(&self.origin, line, value.unwrap_or(""), why));
            }
        }
        // As written, for fio's `job options` / `global options` in the JSON (the last
        // value of a repeated option).
        let written = (key.to_string(), value.unwrap_or("").to_string());
        match &mut self.section {
            Section::None | Section::Skipped => {}
            Section::Global => {
                let o = &mut self.global.job.global_options;
                o.retain(|(k, _)| *k != written.0);
                o.push(written);
            }
            Section::Job { draft, .. } => {
                let o = &mut draft.job.job_options;
                o.retain(|(k, _)| *k != written.0);
                o.push(written);
            }
        }
        let at = self.loc(line);
        let result = match &mut self.section {
            Section::None | Section::Skipped => Ok(()),
            Section::Global => self.global.apply(key, value, &at),
            Section::Job { draft, .. } => draft.apply(key, value, &at),
        };
        match result {
            Ok(()) => Ok(()),
            Err(ApplyError::Bad(m)) => Err(self.option_err(line, key, m)),
            Err(ApplyError::Unknown) => match table_action(key, value) {
                Some((name, action)) => {
                    match action {
                        TableAction::Warn(text) => self.warn_once(name, line, key, text),
                        TableAction::Quiet => {}
                        TableAction::Refuse(text) => {
                            if self.opts.ignore_unknown {
                                self.warn_once(
                                    name,
                                    line,
                                    key,
                                    format!("ignored (--ignore-unknown): {text}"),
                                );
                            } else {
                                return Err(self.option_err(line, key, text));
                            }
                        }
                    }
                    self.record(key, value);
                    Ok(())
                }
                None => {
                    let typo = suggest(key)
                        .map(|k| format!(" Did you mean '{k}'?"))
                        .unwrap_or_default();
                    if self.opts.ignore_unknown {
                        self.warnings.push(format!(
                            "{}:{line}: option '{key}': unknown option, ignored (--ignore-unknown).{typo}",
                            self.origin
                        ));
                        Ok(())
                    } else {
                        Err(self.option_err(
                            line,
                            key,
                            format!(
                                "unknown option (sluice reads a subset of fio's options).{typo} \
                                 Remove it, or pass --ignore-unknown to skip unknown options with a warning"
                            ),
                        ))
                    }
                }
            },
        }
    }

    /// Record an option accepted without action in the section's passthrough list.
    fn record(&mut self, key: &str, value: Option<&str>) {
        let draft = match &mut self.section {
            Section::None | Section::Skipped => return,
            Section::Global => &mut self.global,
            Section::Job { draft, .. } => draft,
        };
        draft.record(key, value);
    }

    fn finish_section(&mut self) -> Result<(), WorkloadError> {
        if let Section::Job { name, line, draft } =
            std::mem::replace(&mut self.section, Section::None)
        {
            // An FDP job's writes are passthrough commands: no page cache to name.
            let fdp = draft.fdp.as_ref().is_some_and(|f| f.0)
                || draft.dataplacement.as_ref().is_some_and(|f| f.0);
            if !draft.direct_given && !fdp {
                self.implicit_buffered.push(name.clone());
            }
            let job = self.finish_job(name, line, *draft)?;
            self.jobs.push(job);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
