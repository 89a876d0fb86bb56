//! The fio job-file parser (see the crate documentation for the subset).

use std::collections::BTreeSet;
use std::path::Path;
use std::rc::Rc;

use sluice_core::IoClass;

use crate::error::WorkloadError;
use crate::include::{expand_includes, expand_value, SrcLine};
use crate::job::{
    weight_from_prio, BlockSize, BsEntry, Distribution, FileService, JobSpec, RateProcess, RwMode,
};
use crate::options::{engine_class, lookup, option_table, EngineClass, Support};
use crate::units::{
    parse_bool, parse_percent_ppm, parse_positive_size, parse_size, parse_time, parse_uint,
    show_size, TimeUnit, PPM,
};
use crate::values::{parse_bsrange, parse_distribution, parse_file_service, split_paths};

/// How strictly to parse.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ParseOptions {
    /// Turn unknown options, and options sluice refuses, into warnings instead of
    /// errors (the CLI's `--ignore-unknown`).
    pub ignore_unknown: bool,
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
}

/// Read and parse a job file. The file name is used as the origin in messages;
/// `include` directives are read relative to it, and `${VAR}` from the process
/// environment.
pub fn parse_file(path: &Path, opts: &ParseOptions) -> Result<Parsed, WorkloadError> {
    let text = std::fs::read_to_string(path).map_err(|source| WorkloadError::Io {
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
        global: Draft::default(),
        section: Section::None,
        jobs: Vec::new(),
        warnings: Vec::new(),
        warned: BTreeSet::new(),
    };
    for l in &lines {
        p.origin = l.origin.clone();
        p.line(l)?;
    }
    p.origin = main;
    p.finish_section()?;
    if p.jobs.is_empty() {
        return Err(WorkloadError::NoJobs {
            origin: origin.to_string(),
        });
    }
    check_flows(origin, &p.jobs)?;
    Ok(Parsed {
        jobs: p.jobs,
        warnings: p.warnings,
    })
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
struct Loc {
    origin: Rc<str>,
    line: usize,
}

/// Options collected for a section before defaults and checks are applied.
#[derive(Clone, Debug, Default)]
struct Draft {
    name: Option<String>,
    rw: Option<RwMode>,
    rwmixread: Option<u8>,
    /// `[read, write]`: size and where it was set.
    bs: [Option<(u32, Loc)>; 2],
    /// `[read, write]`: a table from `bssplit` or `bsrange`, the option and where.
    bssplit: [Option<(Vec<BsEntry>, &'static str, Loc)>; 2],
    size: Option<(u64, Loc)>,
    filesize: Option<(u64, Loc)>,
    nrfiles: Option<(u32, Loc)>,
    file_service: Option<FileService>,
    io_size: Option<(u64, Loc)>,
    loops: Option<u32>,
    number_ios: Option<u64>,
    offset: Option<(u64, Loc)>,
    iodepth: Option<u32>,
    numjobs: Option<u32>,
    runtime_ns: Option<u64>,
    time_based: bool,
    ramp_ns: u64,
    startdelay_ns: u64,
    thinktime_ns: u64,
    rate_bytes: [Option<u64>; 2],
    rate_bytes_total: bool,
    rate_iops: [Option<u64>; 2],
    rate_iops_total: bool,
    rate_process: Option<RateProcess>,
    randseed: Option<u64>,
    distribution: Option<([Distribution; 2], Loc)>,
    percentage_random: Option<([u8; 2], Loc)>,
    prio: Option<u8>,
    prioclass: Option<u8>,
    stonewall: bool,
    exitall: bool,
    filename: Option<(String, Loc)>,
    filename_format: Option<(String, Loc)>,
    directory: Option<(Vec<String>, Loc)>,
    passthrough: Vec<(String, String)>,
    critical: bool,
    weight: Option<u32>,
    flow: Option<String>,
}

enum Section {
    None,
    Global,
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

/// What the table says to do with an option `Draft::apply` does not act on itself.
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
            } else {
                Section::Job {
                    name: name.to_string(),
                    line,
                    draft: Box::new(self.global.clone()),
                }
            };
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
            if let Some(v) = value {
                match engine_class(v) {
                    EngineClass::Refused(why) => {
                        return Err(engine_error(&self.origin, line, v, why))
                    }
                    EngineClass::Local => self.warn_once(
                        "ioengine",
                        line,
                        key,
                        format!(
                            "accepted, no effect in sluice: '{v}' is local I/O; sluice runs every job on its simulated \
                             device (sluice sim) or with io_uring (sluice run)"
                        ),
                    ),
                }
            }
        }
        let at = self.loc(line);
        let result = match &mut self.section {
            Section::None => Ok(()),
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
            Section::None => return,
            Section::Global => &mut self.global,
            Section::Job { draft, .. } => draft,
        };
        draft.record(key, value);
    }

    fn finish_section(&mut self) -> Result<(), WorkloadError> {
        if let Section::Job { name, line, draft } =
            std::mem::replace(&mut self.section, Section::None)
        {
            let job = self.finish_job(name, line, *draft)?;
            self.jobs.push(job);
        }
        Ok(())
    }

    fn finish_job(
        &mut self,
        section: String,
        line: usize,
        d: Draft,
    ) -> Result<JobSpec, WorkloadError> {
        let name = d.name.clone().unwrap_or(section);
        let defaults = JobSpec::default();
        let rw = d.rw.unwrap_or(defaults.rw);
        let header = self.loc(line);

        // Files: nrfiles × filesize, side by side; size then defaults io_size.
        let nrfiles = d.nrfiles.as_ref().map_or(1, |n| n.0);
        let (file_size, size_where, size_at) = match (&d.filesize, &d.size) {
            (Some((f, at)), _) => (
                *f,
                format!("filesize={} on {}", show_size(*f), self.where_(at)),
                at.clone(),
            ),
            (None, Some((s, at))) => {
                let per = s / nrfiles as u64;
                if per == 0 {
                    let n_at = d.nrfiles.as_ref().map_or(at, |n| &n.1);
                    return Err(self.option_err_at(
                        n_at,
                        "nrfiles",
                        format!(
                            "size={} split over nrfiles={nrfiles} leaves less than a byte per file in job '{name}'; \
                             use fewer files or a larger size",
                            show_size(*s)
                        ),
                    ));
                }
                let w = if nrfiles > 1 {
                    format!(
                        "the file size {} (size={} on {} over nrfiles={nrfiles})",
                        show_size(per),
                        show_size(*s),
                        self.where_(at)
                    )
                } else {
                    format!("size={} on {}", show_size(*s), self.where_(at))
                };
                (per, w, at.clone())
            }
            (None, None) => {
                let per = defaults.size / nrfiles as u64;
                let w = if nrfiles > 1 {
                    format!(
                        "the file size {} (the default size {} over nrfiles={nrfiles})",
                        show_size(per),
                        show_size(defaults.size)
                    )
                } else {
                    format!("the default size {}", show_size(defaults.size))
                };
                (per, w, header.clone())
            }
        };
        let region = file_size.checked_mul(nrfiles as u64).ok_or_else(|| {
            self.option_err_at(
                &size_at,
                "filesize",
                format!("nrfiles × filesize overflows 64 bits in job '{name}'; use smaller files"),
            )
        })?;
        let io_size = match (&d.io_size, &d.filesize, &d.size) {
            (Some((n, _)), _, _) => Some(*n),
            // fio: with filesize, size only sets how much I/O to do.
            (None, Some(_), Some((s, _))) => Some(*s),
            _ => None,
        };
        let offset = d.offset.as_ref().map_or(0, |o| o.0);
        let mut sizes = [BlockSize::Fixed(4096), BlockSize::Fixed(4096)];
        for (dir, slot) in sizes.iter_mut().enumerate() {
            let used = if dir == 0 { rw.reads() } else { rw.writes() };
            let (table, option, set_at) = match (&d.bssplit[dir], &d.bs[dir]) {
                (Some((t, opt, at)), _) => (BlockSize::Split(t.clone()), *opt, Some(at)),
                (None, Some((b, at))) => (BlockSize::Fixed(*b), "bs", Some(at)),
                (None, None) => (BlockSize::Fixed(4096), "size", None),
            };
            let max = table.max_len() as u64;
            if used && max > file_size {
                let dir_name = if dir == 0 { "reads" } else { "writes" };
                return Err(match set_at {
                    Some(at) => self.option_err_at(
                        at,
                        option,
                        format!(
                            "block size {} for {dir_name} is larger than {size_where} in job '{name}'; \
                             use a smaller block size or a larger size",
                            show_size(max)
                        ),
                    ),
                    None => self.option_err_at(
                        &size_at,
                        if d.filesize.is_some() { "filesize" } else { "size" },
                        format!(
                            "{size_where} in job '{name}' is smaller than the default block size 4KiB; \
                             make it at least one block, or set bs"
                        ),
                    ),
                });
            }
            *slot = table;
        }
        let [read_bs, write_bs] = sizes;
        if offset.checked_add(region).is_none() {
            let at = d.offset.as_ref().map_or(&header, |o| &o.1);
            return Err(self.option_err_at(
                at,
                "offset",
                format!("offset + size overflows 64 bits in job '{name}'; use a smaller offset"),
            ));
        }
        // zoned_abs zones must fit in a file (fio stops on "sizes exceed file size").
        let distribution = match d.distribution.clone() {
            Some((dist, at)) => {
                for dd in &dist {
                    if let Distribution::ZonedAbs(z) = dd {
                        let total: u64 = z.iter().map(|z| z.size).fold(0, u64::saturating_add);
                        if total > file_size {
                            return Err(self.option_err_at(
                                &at,
                                "random_distribution",
                                format!(
                                    "the zones add up to {}, more than {size_where} in job '{name}'; \
                                     make the zones smaller or the file larger",
                                    show_size(total)
                                ),
                            ));
                        }
                    }
                }
                if !rw.is_random() && dist.iter().any(|x| *x != Distribution::Uniform) {
                    self.warnings.push(format!(
                        "{}:{}: option 'random_distribution': no effect on the sequential rw={} of job '{name}'",
                        at.origin, at.line, rw.name()
                    ));
                }
                dist
            }
            None => [Distribution::Uniform, Distribution::Uniform],
        };
        let percentage_random = match d.percentage_random.clone() {
            Some((p, at)) => {
                if !rw.is_random() && p != [100, 100] {
                    self.warnings.push(format!(
                        "{}:{}: option 'percentage_random': no effect on the sequential rw={} of job '{name}' (as in fio)",
                        at.origin, at.line, rw.name()
                    ));
                }
                p
            }
            None => [100, 100],
        };
        let filename = self.resolve_file(&name, &d)?;
        let class = if d.critical || d.prioclass == Some(1) {
            if d.critical && d.prioclass == Some(3) {
                self.warnings.push(format!(
                    "{}:{line}: job '{name}' sets both sluice_critical=1 and prioclass=3 (idle); it is treated as critical",
                    self.origin
                ));
            }
            IoClass::Critical
        } else if d.prioclass == Some(3) {
            IoClass::Idle
        } else {
            IoClass::Normal
        };
        if d.time_based && d.runtime_ns.is_none() {
            // fio itself needs a runtime for a time-based job to end.
            return Err(WorkloadError::Option {
                origin: self.origin.to_string(),
                line,
                option: "time_based".into(),
                message: format!(
                    "job '{name}' is time_based but has no runtime, so it would never end; \
                     add runtime= (e.g. runtime=10s) or remove time_based"
                ),
            });
        }
        Ok(JobSpec {
            flow: d.flow.unwrap_or_else(|| name.clone()),
            weight: d
                .weight
                .unwrap_or_else(|| weight_from_prio(d.prio, d.prioclass)),
            name,
            line,
            class,
            rw,
            rwmixread: d.rwmixread.unwrap_or(defaults.rwmixread),
            bs: crate::job::BlockSizes {
                read: read_bs,
                write: write_bs,
            },
            size: region,
            nrfiles,
            file_service: d.file_service.unwrap_or(defaults.file_service),
            io_size,
            loops: d.loops.unwrap_or(1),
            number_ios: d.number_ios,
            distribution,
            percentage_random,
            rate_process: d.rate_process.unwrap_or(RateProcess::Linear),
            exitall: d.exitall,
            directory: d.directory.map(|x| x.0).unwrap_or_default(),
            offset,
            iodepth: d.iodepth.unwrap_or(1),
            numjobs: d.numjobs.unwrap_or(1),
            runtime_ns: d.runtime_ns,
            time_based: d.time_based,
            ramp_ns: d.ramp_ns,
            startdelay_ns: d.startdelay_ns,
            thinktime_ns: d.thinktime_ns,
            rate_bytes: d.rate_bytes,
            rate_bytes_total: d.rate_bytes_total,
            rate_iops: d.rate_iops,
            rate_iops_total: d.rate_iops_total,
            randseed: d.randseed,
            prio: d.prio,
            prioclass: d.prioclass,
            stonewall: d.stonewall,
            filename,
            passthrough: d.passthrough,
        })
    }

    /// The job's shared file name, as fio resolves it: `filename` (in the first
    /// `directory` when relative), or a `filename_format` without `$jobnum` (every
    /// thread of the job uses the same files); `None` when each thread has its own.
    fn resolve_file(&mut self, name: &str, d: &Draft) -> Result<Option<String>, WorkloadError> {
        let dir0 = d.directory.as_ref().and_then(|(v, _)| v.first().cloned());
        let join = |f: &str| match &dir0 {
            Some(dir) if !Path::new(f).is_absolute() => {
                Path::new(dir).join(f).display().to_string()
            }
            _ => f.to_string(),
        };
        if let Some((f, _)) = &d.filename {
            return Ok(Some(join(f)));
        }
        if let Some((fmt, at)) = &d.filename_format {
            let named = fmt
                .replace("$jobname", name)
                .replace("$clientuid", "")
                .replace("$filenum", "0");
            if !fmt.contains("$jobnum") {
                return Ok(Some(join(&named)));
            }
            if !fmt.contains("$jobname") {
                self.warnings.push(format!(
                    "{}:{}: option 'filename_format': '{fmt}' gives threads of different jobs the same file names; \
                     sluice gives each thread of job '{name}' its own region instead (files shared across jobs need filename=)",
                    at.origin, at.line
                ));
            }
            return Ok(None);
        }
        if let Some((_, at)) = &d.directory {
            self.warnings.push(format!(
                "{}:{}: option 'directory': job '{name}' names no file, so each thread gets its own region; \
                 the directory only places named files (`sluice run` creates generated files in --directory)",
                at.origin, at.line
            ));
        }
        Ok(None)
    }
}

/// The closest known option name, if one is close enough to be a likely typo.
fn suggest(key: &str) -> Option<&'static str> {
    let key = key.to_ascii_lowercase();
    let (name, dist) = option_table()
        .iter()
        .flat_map(|o| std::iter::once(o.name).chain(o.aliases.iter().copied()))
        .map(|n| (n, edit_distance(&key, n)))
        .min_by_key(|&(_, d)| d)?;
    (dist <= 2.max(key.len() / 4) && dist < key.len()).then_some(name)
}

/// Levenshtein distance (option names are short).
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

fn example(key: &str) -> &'static str {
    lookup(key).map_or("key=value", |o| o.example)
}

fn need<'v>(key: &str, value: Option<&'v str>) -> Result<&'v str, String> {
    match value {
        Some(v) if !v.is_empty() => Ok(v),
        _ => Err(format!("needs a value, e.g. {}", example(key))),
    }
}

/// Split `read,write[,trim]` into its read and write parts. A single value applies to
/// both directions (second result true); an empty part leaves that direction unset;
/// a trim part is accepted and ignored.
fn split_dirs(key: &str, v: &str) -> Result<([Option<String>; 2], bool), String> {
    let parts: Vec<&str> = v.split(',').map(str::trim).collect();
    if parts.len() > 3 {
        return Err(format!(
            "'{v}' has more than three comma-separated values; write one value, or read,write (e.g. {key}=4k,64k)"
        ));
    }
    let opt = |s: &str| (!s.is_empty()).then(|| s.to_string());
    if parts.len() == 1 {
        return Ok(([opt(parts[0]), opt(parts[0])], true));
    }
    Ok(([opt(parts[0]), opt(parts[1])], false))
}

fn parse_bs(s: &str) -> Result<u32, String> {
    let n = parse_positive_size(s)?;
    u32::try_from(n).map_err(|_| format!("block size '{s}' is too large; at most 4GiB - 1"))
}

fn show_pct(ppm: u64) -> String {
    let s = format!("{:.4}", ppm as f64 / 10_000.0);
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Parse one `bssplit` table: `size/percent:size/percent:…`; an entry with an empty
/// percentage (`64k/` or `64k`) gets an equal part of the rest.
fn parse_bssplit(s: &str) -> Result<Vec<BsEntry>, String> {
    let mut entries = Vec::new();
    let mut empties = Vec::new();
    let mut sum: u64 = 0;
    for item in s.split(':') {
        let item = item.trim();
        if item.is_empty() {
            return Err(format!(
                "'{s}' has an empty entry; write size/percent entries separated by ':' (e.g. 4k/50:64k/50)"
            ));
        }
        let (size, pct) = match item.split_once('/') {
            Some((a, b)) => (a.trim(), b.trim()),
            None => (item, ""),
        };
        let len = parse_bs(size)?;
        if pct.is_empty() {
            empties.push(entries.len());
            entries.push(BsEntry { len, ppm: 0 });
        } else {
            let ppm = parse_percent_ppm(pct)?;
            sum += ppm as u64;
            entries.push(BsEntry { len, ppm });
        }
    }
    if sum > PPM as u64 {
        return Err(format!(
            "the percentages in '{s}' add up to {}, more than 100; make them add up to 100",
            show_pct(sum)
        ));
    }
    let rest = PPM as u64 - sum;
    if empties.is_empty() {
        if rest != 0 {
            return Err(format!(
                "the percentages in '{s}' add up to {}, not 100; fix them, or leave one empty (e.g. 64k/) to take the rest",
                show_pct(sum)
            ));
        }
    } else {
        if rest == 0 {
            return Err(format!(
                "in '{s}' the other entries already add up to 100, so those with an empty percentage would never be used; remove them"
            ));
        }
        let n = empties.len() as u64;
        for (k, &i) in empties.iter().enumerate() {
            let share = rest / n + u64::from((k as u64) < rest % n);
            entries[i].ppm = share as u32;
        }
    }
    Ok(entries)
}

fn parse_rw(v: &str) -> Result<RwMode, String> {
    const LIST: &str = "read, write, randread, randwrite, rw (or readwrite), randrw";
    let lower = v.to_ascii_lowercase();
    let (base, modifier) = match lower.split_once(':') {
        Some((b, m)) => (b, Some(m)),
        None => (lower.as_str(), None),
    };
    let mode = match base {
        "read" => RwMode::Read,
        "write" => RwMode::Write,
        "randread" => RwMode::RandRead,
        "randwrite" => RwMode::RandWrite,
        "rw" | "readwrite" => RwMode::ReadWrite,
        "randrw" => RwMode::RandRw,
        "trim" | "randtrim" | "trimwrite" | "randtrimwrite" => {
            return Err(format!(
                "'{v}' is not supported: sluice does not model trim/discard; use one of {LIST}"
            ))
        }
        _ => {
            return Err(format!(
                "cannot read '{v}' as an I/O pattern; use one of {LIST}"
            ))
        }
    };
    if modifier.is_some() {
        return Err(format!(
            "the ':' modifier in '{v}' is not supported; write rw={}",
            mode.name()
        ));
    }
    Ok(mode)
}

fn small_uint<T: TryFrom<u64>>(v: &str, ex: &str, lo: u64, hi: u64) -> Result<T, String> {
    let n = parse_uint(v, ex)?;
    if n < lo || n > hi {
        return Err(format!(
            "{n} is out of range; use a value from {lo} to {hi}"
        ));
    }
    T::try_from(n).map_err(|_| format!("{n} is out of range"))
}

impl Draft {
    /// Record an option accepted without action (the last value of an option wins).
    fn record(&mut self, key: &str, value: Option<&str>) {
        let v = value.unwrap_or("1").to_string();
        self.passthrough.retain(|(n, _)| n != key);
        self.passthrough.push((key.to_string(), v));
    }

    fn apply(&mut self, key: &str, value: Option<&str>, at: &Loc) -> Result<(), ApplyError> {
        match key {
            "name" => self.name = Some(need(key, value)?.to_string()),
            "rw" | "readwrite" => self.rw = Some(parse_rw(need(key, value)?)?),
            "rwmixread" => self.rwmixread = Some(small_uint(need(key, value)?, "70", 0, 100)?),
            "rwmixwrite" => {
                let w: u8 = small_uint(need(key, value)?, "30", 0, 100)?;
                self.rwmixread = Some(100 - w);
            }
            "bs" | "blocksize" => {
                let (parts, _) = split_dirs(key, need(key, value)?)?;
                for (dir, part) in parts.iter().enumerate() {
                    if let Some(p) = part {
                        self.bs[dir] = Some((parse_bs(p)?, at.clone()));
                        // A later bs overrides an inherited bssplit/bsrange for that direction.
                        self.bssplit[dir] = None;
                    }
                }
            }
            "bssplit" | "bsrange" | "blocksize_range" => {
                let (parts, _) = split_dirs(key, need(key, value)?)?;
                let name = if key == "bssplit" {
                    "bssplit"
                } else {
                    "bsrange"
                };
                for (dir, part) in parts.iter().enumerate() {
                    if let Some(p) = part {
                        let t = if key == "bssplit" {
                            parse_bssplit(p)?
                        } else {
                            parse_bsrange(p)?
                        };
                        self.bssplit[dir] = Some((t, name, at.clone()));
                    }
                }
            }
            "size" => {
                let v = need(key, value)?;
                if v.trim().ends_with('%') {
                    return Err(ApplyError::Bad(format!(
                        "'{v}': a size in percent of the device is not supported; give bytes, e.g. size=1g"
                    )));
                }
                self.size = Some((parse_positive_size(v)?, at.clone()))
            }
            "filesize" => {
                let v = need(key, value)?;
                if v.contains('-') || v.contains(':') {
                    return Err(ApplyError::Bad(format!(
                        "'{v}': a range of file sizes is not supported; give one size, e.g. filesize=64m"
                    )));
                }
                self.filesize = Some((parse_positive_size(v)?, at.clone()))
            }
            "nrfiles" | "nr_files" => {
                self.nrfiles = Some((small_uint(need(key, value)?, "4", 1, 1 << 20)?, at.clone()))
            }
            "file_service_type" => self.file_service = Some(parse_file_service(need(key, value)?)?),
            "io_size" | "io_limit" => {
                let v = need(key, value)?;
                if v.trim().ends_with('%') {
                    return Err(ApplyError::Bad(format!(
                        "'{v}': io_size in percent is not supported; give bytes, e.g. io_size=10g"
                    )));
                }
                self.io_size = Some((parse_positive_size(v)?, at.clone()))
            }
            "loops" => self.loops = Some(small_uint(need(key, value)?, "3", 1, u32::MAX as u64)?),
            "number_ios" => {
                let n = parse_uint(need(key, value)?, "100000")?;
                self.number_ios = (n > 0).then_some(n);
            }
            "offset" => {
                let v = need(key, value)?;
                if v.trim().ends_with('%') {
                    return Err(ApplyError::Bad(format!(
                        "'{v}': an offset in percent of the device is not supported; give bytes, e.g. offset=1g"
                    )));
                }
                self.offset = Some((parse_size(v)?, at.clone()))
            }
            "iodepth" => self.iodepth = Some(small_uint(need(key, value)?, "32", 1, 65535)?),
            "numjobs" => self.numjobs = Some(small_uint(need(key, value)?, "4", 1, 65535)?),
            "runtime" | "timeout" => {
                let t = parse_time(need(key, value)?, TimeUnit::Seconds)?;
                self.runtime_ns = (t > 0).then_some(t);
            }
            "time_based" => self.time_based = parse_bool(value)?,
            "ramp_time" => self.ramp_ns = parse_time(need(key, value)?, TimeUnit::Seconds)?,
            "startdelay" => self.startdelay_ns = parse_time(need(key, value)?, TimeUnit::Seconds)?,
            "thinktime" => self.thinktime_ns = parse_time(need(key, value)?, TimeUnit::Micros)?,
            "rate" | "rate_iops" => {
                let (parts, single) = split_dirs(key, need(key, value)?)?;
                let mut out = [None; 2];
                for (dir, part) in parts.iter().enumerate() {
                    if let Some(p) = part {
                        let n = if key == "rate" {
                            parse_size(p)?
                        } else {
                            parse_uint(p, "1000")?
                        };
                        out[dir] = (n > 0).then_some(n);
                    }
                }
                if key == "rate" {
                    self.rate_bytes = out;
                    self.rate_bytes_total = single;
                } else {
                    self.rate_iops = out;
                    self.rate_iops_total = single;
                }
            }
            "rate_process" => {
                self.rate_process = Some(
                    match need(key, value)?.trim().to_ascii_lowercase().as_str() {
                        "linear" => RateProcess::Linear,
                        "poisson" => RateProcess::Poisson,
                        v => {
                            return Err(ApplyError::Bad(format!(
                                "cannot read '{v}' as a rate process; use linear or poisson"
                            )))
                        }
                    },
                )
            }
            "randseed" => self.randseed = Some(parse_uint(need(key, value)?, "42")?),
            "random_distribution" => {
                self.distribution = Some((parse_distribution(need(key, value)?)?, at.clone()))
            }
            "percentage_random" => {
                let (parts, _) = split_dirs(key, need(key, value)?)?;
                let mut p = self.percentage_random.as_ref().map_or([100, 100], |x| x.0);
                for (dir, part) in parts.iter().enumerate() {
                    if let Some(v) = part {
                        p[dir] = small_uint(v, "80", 0, 100)?;
                    }
                }
                self.percentage_random = Some((p, at.clone()));
            }
            "prio" => self.prio = Some(small_uint(need(key, value)?, "4", 0, 7)?),
            "prioclass" => self.prioclass = Some(small_uint(need(key, value)?, "2", 0, 3)?),
            "stonewall" | "wait_for_previous" => self.stonewall = parse_bool(value)?,
            "exitall" => self.exitall = parse_bool(value)?,
            "filename" => {
                let v = need(key, value)?;
                let files = split_paths(v);
                match files.len() {
                    0 => return Err(ApplyError::Bad(format!("needs a value, e.g. {}", example(key)))),
                    1 => self.filename = Some((files[0].clone(), at.clone())),
                    n => {
                        return Err(ApplyError::Bad(format!(
                            "'{v}' names {n} files; sluice takes one file per job (write '\\:' for a colon in a name). \
                             Give each file its own job with filename=, or use nrfiles for several files per thread"
                        )))
                    }
                }
            }
            "filename_format" => {
                self.filename_format = Some((need(key, value)?.to_string(), at.clone()))
            }
            "directory" => {
                let dirs = split_paths(need(key, value)?);
                if dirs.is_empty() {
                    return Err(ApplyError::Bad(format!(
                        "needs a value, e.g. {}",
                        example(key)
                    )));
                }
                self.directory = Some((dirs, at.clone()));
            }
            "ioengine" | "description" => self.record(key, Some(need(key, value)?)),
            "sluice_critical" => {
                self.critical = match value.map(str::trim) {
                    Some("1") | None => true,
                    Some("0") => false,
                    Some(v) => {
                        return Err(ApplyError::Bad(format!(
                    "cannot read '{v}'; write sluice_critical=1 (critical) or sluice_critical=0"
                )))
                    }
                }
            }
            "sluice_weight" => {
                self.weight = Some(small_uint(need(key, value)?, "8", 1, u32::MAX as u64)?)
            }
            "sluice_flow" => self.flow = Some(need(key, value)?.to_string()),
            _ => return Err(ApplyError::Unknown),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments() {
        assert_eq!(strip_comment("  ; all"), "");
        assert_eq!(strip_comment("# all"), "");
        assert_eq!(strip_comment("bs=4k ; trailing"), "bs=4k ");
        assert_eq!(strip_comment("bs=4k\t# trailing"), "bs=4k\t");
        assert_eq!(strip_comment("filename=a#b"), "filename=a#b");
    }

    #[test]
    fn bssplit_tables() {
        let t = parse_bssplit("4k/50:8k/30:64k/20").unwrap();
        assert_eq!(
            t,
            vec![
                BsEntry {
                    len: 4096,
                    ppm: 500_000
                },
                BsEntry {
                    len: 8192,
                    ppm: 300_000
                },
                BsEntry {
                    len: 65536,
                    ppm: 200_000
                },
            ]
        );
        let t = parse_bssplit("4k/10:8k/:16k").unwrap();
        assert_eq!(t[1].ppm, 450_000);
        assert_eq!(t[2].ppm, 450_000);
        let t = parse_bssplit("4k/:8k/:16k/").unwrap();
        assert_eq!(t.iter().map(|e| e.ppm).sum::<u32>(), PPM);
        assert!(parse_bssplit("4k/50:8k/30")
            .unwrap_err()
            .contains("add up to 80"));
        assert!(parse_bssplit("4k/70:8k/40")
            .unwrap_err()
            .contains("more than 100"));
        assert!(parse_bssplit("4k/x").is_err());
        assert!(parse_bssplit("4k/100:8k/").is_err());
        assert!(parse_bssplit("4k/50::8k/50").is_err());
    }

    #[test]
    fn suggestions() {
        assert_eq!(suggest("iodepht"), Some("iodepth"));
        assert_eq!(suggest("runtim"), Some("runtime"));
        assert_eq!(suggest("completely_different"), None);
    }
}
