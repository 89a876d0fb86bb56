//! The fio job-file parser (see the crate documentation for the subset).

use std::path::Path;

use sluice_core::IoClass;

use crate::error::WorkloadError;
use crate::job::{weight_from_prio, BlockSize, BsEntry, JobSpec, RwMode};
use crate::units::{
    parse_bool, parse_percent_ppm, parse_positive_size, parse_size, parse_time, parse_uint,
    show_size, TimeUnit, PPM,
};

/// How strictly to parse.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ParseOptions {
    /// Turn unknown options into warnings instead of errors (the CLI's
    /// `--ignore-unknown`).
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
    /// under `ignore_unknown`, ignored settings, contradictions resolved by a rule).
    pub warnings: Vec<Warning>,
}

/// Every option the parser knows, with an example of its use (empty for bare flags).
const KNOWN: &[(&str, &str)] = &[
    ("name", "name=reader"),
    ("rw", "rw=randread"),
    ("readwrite", "readwrite=randread"),
    ("rwmixread", "rwmixread=70"),
    ("rwmixwrite", "rwmixwrite=30"),
    ("bs", "bs=4k"),
    ("blocksize", "blocksize=4k"),
    ("bssplit", "bssplit=4k/50:64k/50"),
    ("size", "size=1g"),
    ("offset", "offset=0"),
    ("iodepth", "iodepth=32"),
    ("numjobs", "numjobs=4"),
    ("runtime", "runtime=30s"),
    ("time_based", ""),
    ("ramp_time", "ramp_time=5s"),
    ("startdelay", "startdelay=1s"),
    ("thinktime", "thinktime=100us"),
    ("rate", "rate=4m"),
    ("rate_iops", "rate_iops=1000"),
    ("randseed", "randseed=42"),
    ("prio", "prio=4"),
    ("prioclass", "prioclass=2"),
    ("stonewall", ""),
    ("wait_for_previous", ""),
    ("filename", "filename=/dev/nvme0n1"),
    ("ioengine", "ioengine=io_uring"),
    ("direct", "direct=1"),
    ("group_reporting", ""),
    ("thread", ""),
    ("norandommap", ""),
    ("randrepeat", "randrepeat=1"),
    ("description", "description=some text"),
    ("sluice_critical", "sluice_critical=1"),
    ("sluice_weight", "sluice_weight=8"),
    ("sluice_flow", "sluice_flow=tenant-a"),
];

/// Options that are accepted and recorded in [`JobSpec::passthrough`] but not acted on.
const PASSTHROUGH: &[&str] = &[
    "ioengine",
    "direct",
    "group_reporting",
    "thread",
    "norandommap",
    "randrepeat",
    "description",
];

/// Read and parse a job file. The file name is used as the origin in messages.
pub fn parse_file(path: &Path, opts: &ParseOptions) -> Result<Parsed, WorkloadError> {
    let text = std::fs::read_to_string(path).map_err(|source| WorkloadError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse_str(&text, &path.display().to_string(), opts)
}

/// Parse job-file text. `origin` names the text in messages (usually the file name).
pub fn parse_str(text: &str, origin: &str, opts: &ParseOptions) -> Result<Parsed, WorkloadError> {
    let mut p = Parser {
        origin,
        opts,
        global: Draft::default(),
        section: Section::None,
        jobs: Vec::new(),
        warnings: Vec::new(),
    };
    for (i, raw) in text.lines().enumerate() {
        p.line(i + 1, raw)?;
    }
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

/// Options collected for a section before defaults and checks are applied.
#[derive(Clone, Debug, Default)]
struct Draft {
    name: Option<String>,
    rw: Option<RwMode>,
    rwmixread: Option<u8>,
    /// `[read, write]`: size and the line that set it.
    bs: [Option<(u32, usize)>; 2],
    bssplit: [Option<(Vec<BsEntry>, usize)>; 2],
    size: Option<(u64, usize)>,
    offset: Option<(u64, usize)>,
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
    randseed: Option<u64>,
    prio: Option<u8>,
    prioclass: Option<u8>,
    stonewall: bool,
    filename: Option<String>,
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
    origin: &'a str,
    opts: &'a ParseOptions,
    global: Draft,
    section: Section,
    jobs: Vec<JobSpec>,
    warnings: Vec<Warning>,
}

/// Drop a whole-line comment, or a trailing one that starts after whitespace.
fn strip_comment(raw: &str) -> &str {
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

impl Parser<'_> {
    fn syntax(&self, line: usize, message: String) -> WorkloadError {
        WorkloadError::Syntax {
            origin: self.origin.to_string(),
            line,
            message,
        }
    }

    fn option_err(&self, line: usize, option: &str, message: String) -> WorkloadError {
        WorkloadError::Option {
            origin: self.origin.to_string(),
            line,
            option: option.to_string(),
            message,
        }
    }

    fn line(&mut self, line: usize, raw: &str) -> Result<(), WorkloadError> {
        let s = strip_comment(raw).trim();
        if s.is_empty() {
            return Ok(());
        }
        if let Some(rest) = s.strip_prefix('[') {
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
            let hint = if key.starts_with("include") {
                "'include' is not supported; put the jobs into one file"
            } else {
                "write key=value, or a bare flag such as time_based"
            };
            return Err(self.syntax(line, format!("cannot read '{s}' as an option; {hint}")));
        }
        let mut warnings = Vec::new();
        let result = match &mut self.section {
            Section::None => {
                return Err(self.option_err(
                    line,
                    key,
                    "appears before any section; put it under [global] or under a job header such as [job1]"
                        .to_string(),
                ))
            }
            Section::Global => self.global.apply(key, value, line, &mut warnings),
            Section::Job { draft, .. } => draft.apply(key, value, line, &mut warnings),
        };
        for w in warnings {
            self.warnings
                .push(format!("{}:{line}: option '{key}': {w}", self.origin));
        }
        match result {
            Ok(()) => Ok(()),
            Err(ApplyError::Bad(m)) => Err(self.option_err(line, key, m)),
            Err(ApplyError::Unknown) => {
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
        }
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
        let name = d.name.unwrap_or(section);
        let defaults = JobSpec::default();
        let rw = d.rw.unwrap_or(defaults.rw);
        let (size, size_line) = match d.size {
            Some((s, l)) => (s, Some(l)),
            None => (defaults.size, None),
        };
        let offset = d.offset.map_or(0, |o| o.0);
        let mut sizes = [BlockSize::Fixed(4096), BlockSize::Fixed(4096)];
        for (dir, slot) in sizes.iter_mut().enumerate() {
            let used = if dir == 0 { rw.reads() } else { rw.writes() };
            let (table, option, set_line) = match (&d.bssplit[dir], d.bs[dir]) {
                (Some((t, l)), _) => (BlockSize::Split(t.clone()), "bssplit", Some(*l)),
                (None, Some((b, l))) => (BlockSize::Fixed(b), "bs", Some(l)),
                (None, None) => (BlockSize::Fixed(4096), "size", None),
            };
            let max = table.max_len() as u64;
            if used && max > size {
                let dir_name = if dir == 0 { "reads" } else { "writes" };
                let size_where = match size_line {
                    Some(l) => format!("size={} on line {l}", show_size(size)),
                    None => format!("the default size {}", show_size(size)),
                };
                return Err(match set_line {
                    Some(l) => self.option_err(
                        l,
                        option,
                        format!(
                            "block size {} for {dir_name} is larger than {size_where} in job '{name}'; \
                             use a smaller block size or a larger size",
                            show_size(max)
                        ),
                    ),
                    None => self.option_err(
                        size_line.unwrap_or(line),
                        "size",
                        format!(
                            "size {} in job '{name}' is smaller than the default block size 4KiB; \
                             make size at least one block, or set bs",
                            show_size(size)
                        ),
                    ),
                });
            }
            *slot = table;
        }
        let [read_bs, write_bs] = sizes;
        if offset.checked_add(size).is_none() {
            let l = d.offset.map_or(line, |o| o.1);
            return Err(self.option_err(
                l,
                "offset",
                format!("offset + size overflows 64 bits in job '{name}'; use a smaller offset"),
            ));
        }
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
            self.warnings.push(format!(
                "{}:{line}: job '{name}' is time_based but has no runtime; it runs until the run is stopped",
                self.origin
            ));
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
            size,
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
            filename: d.filename,
            passthrough: d.passthrough,
        })
    }
}

/// The closest known option name, if one is close enough to be a likely typo.
fn suggest(key: &str) -> Option<&'static str> {
    let key = key.to_ascii_lowercase();
    let (name, dist) = KNOWN
        .iter()
        .map(|(n, _)| (*n, edit_distance(&key, n)))
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
    KNOWN
        .iter()
        .find(|(n, _)| *n == key)
        .map_or("key=value", |(_, e)| e)
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
    fn apply(
        &mut self,
        key: &str,
        value: Option<&str>,
        line: usize,
        warnings: &mut Vec<String>,
    ) -> Result<(), ApplyError> {
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
                        self.bs[dir] = Some((parse_bs(p)?, line));
                        // A later bs overrides an inherited bssplit for that direction.
                        self.bssplit[dir] = None;
                    }
                }
            }
            "bssplit" => {
                let (parts, _) = split_dirs(key, need(key, value)?)?;
                for (dir, part) in parts.iter().enumerate() {
                    if let Some(p) = part {
                        self.bssplit[dir] = Some((parse_bssplit(p)?, line));
                    }
                }
            }
            "size" => self.size = Some((parse_positive_size(need(key, value)?)?, line)),
            "offset" => self.offset = Some((parse_size(need(key, value)?)?, line)),
            "iodepth" => self.iodepth = Some(small_uint(need(key, value)?, "32", 1, 65535)?),
            "numjobs" => self.numjobs = Some(small_uint(need(key, value)?, "4", 1, 65535)?),
            "runtime" => {
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
            "randseed" => self.randseed = Some(parse_uint(need(key, value)?, "42")?),
            "prio" => self.prio = Some(small_uint(need(key, value)?, "4", 0, 7)?),
            "prioclass" => self.prioclass = Some(small_uint(need(key, value)?, "2", 0, 3)?),
            "stonewall" | "wait_for_previous" => self.stonewall = parse_bool(value)?,
            "filename" => self.filename = Some(need(key, value)?.to_string()),
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
            k if PASSTHROUGH.contains(&k) => {
                let v = value.unwrap_or("1").to_string();
                if k == "direct" && v.trim() == "0" {
                    warnings
                        .push("direct=0 is ignored: sluice always issues direct I/O".to_string());
                }
                self.passthrough.retain(|(n, _)| n != k);
                self.passthrough.push((k.to_string(), v));
            }
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
