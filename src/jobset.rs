//! `--set [JOB.]KEY=VALUE`: an fio option given on the command line, applied to every
//! job section of a job file (or to the section `[JOB]`), as if written at the end of
//! the section — so it overrides the job's own value and its `[global]` default.
//!
//! It is applied to the text, before parsing: the option line is inserted at the end of
//! each job section and the result goes through the one job-file parser, so every
//! option means exactly what it means in a file and is checked the same way. Messages
//! about the file keep its own line numbers; a message about an inserted line names
//! the `--set` that put it there.

use std::path::Path;

use sluice_workload::{JobSpec, ParseOptions, WorkloadError};

use crate::cli::{CliError, DEFAULT_JOB, DEFAULT_JOB_NAME};

/// One `--set` assignment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobSet {
    /// The job section it applies to (`JOB.KEY=...`); `None`: every job section.
    pub job: Option<String>,
    /// The fio option.
    pub key: String,
    /// Its value, as fio reads it (commas included: `bs=4k,64k` is fio's read,write pair).
    pub value: String,
}

impl JobSet {
    /// Read `[JOB.]KEY=VALUE`. The key must be an option of the job-file language
    /// (`docs/workloads.md`); the value is checked when the job is parsed.
    pub fn parse(text: &str) -> Result<JobSet, CliError> {
        let bad = |why: &str| {
            CliError::Usage(format!(
                "--set '{text}': {why}; write KEY=VALUE (an fio option, e.g. iodepth=4) or \
                 JOB.KEY=VALUE for one job section"
            ))
        };
        let (target, value) = text.split_once('=').ok_or_else(|| bad("no '='"))?;
        let (job, key) = match target.rsplit_once('.') {
            Some((job, key)) => (Some(job.trim()), key.trim()),
            None => (None, target.trim()),
        };
        if key.is_empty() {
            return Err(bad("no option name before '='"));
        }
        if job.is_some_and(str::is_empty) {
            return Err(bad("no job name before '.'"));
        }
        if value.trim().is_empty() {
            return Err(bad("no value after '='"));
        }
        if text.chars().any(char::is_control) {
            return Err(bad("a control character (a line break?) in it"));
        }
        if !sluice_workload::option_table().iter().any(|o| o.is(key)) {
            return Err(unknown_key(key, value));
        }
        Ok(JobSet {
            job: job.map(str::to_string),
            key: key.to_string(),
            value: value.trim().to_string(),
        })
    }

    /// `KEY` or `JOB.KEY`, as written.
    pub fn target(&self) -> String {
        match &self.job {
            Some(j) => format!("{j}.{}", self.key),
            None => self.key.clone(),
        }
    }
}

impl std::fmt::Display for JobSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}={}", self.target(), self.value)
    }
}

/// The parser's own message for an unknown option (with its suggestion for a typo).
fn unknown_key(key: &str, value: &str) -> CliError {
    let probe = format!("[job]\n{key}={value}\n");
    let why = match sluice_workload::parse_str(&probe, "--set", &ParseOptions::default()) {
        Err(WorkloadError::Option { message, .. }) => message,
        _ => "not an option of the job-file language (docs/workloads.md)".to_string(),
    };
    CliError::Usage(format!("--set {key}={value}: option '{key}': {why}"))
}

/// Where a line of the rewritten text came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Origin {
    /// The file's own line (1-based).
    File(usize),
    /// Inserted for `sets[i]`.
    Set(usize),
}

/// `text` with each of `sets` written at the end of the job sections it applies to,
/// and where each line of the result came from.
fn rewrite(text: &str, sets: &[JobSet]) -> Result<(String, Vec<Origin>), CliError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut out = String::with_capacity(text.len() + 64 * sets.len());
    let mut origins = Vec::new();
    let mut sections: Vec<String> = Vec::new();
    let mut used = vec![false; sets.len()];
    // The job section being copied (None: before any, or [global]).
    let mut current: Option<String> = None;
    let mut close = |current: &Option<String>, out: &mut String, origins: &mut Vec<Origin>| {
        let Some(name) = current else { return };
        for (i, s) in sets.iter().enumerate() {
            if s.job.as_deref().is_none_or(|j| j == name) {
                used[i] = true;
                out.push_str(&format!("{}={}\n", s.key, s.value));
                origins.push(Origin::Set(i));
            }
        }
    };
    for (i, raw) in text.lines().enumerate() {
        if let Some(name) = section_name(raw) {
            close(&current, &mut out, &mut origins);
            current = (name != "global").then(|| name.to_string());
            sections.extend(current.clone());
        }
        out.push_str(raw);
        out.push('\n');
        origins.push(Origin::File(i + 1));
    }
    close(&current, &mut out, &mut origins);
    if let Some(i) = (0..sets.len()).find(|&i| !used[i]) {
        let job = sets[i].job.as_deref().unwrap_or_default();
        return Err(CliError::Usage(format!(
            "--set {}: the job file has no job section [{job}]; its job sections: {}",
            sets[i],
            if sections.is_empty() {
                "none".to_string()
            } else {
                sections.join(", ")
            }
        )));
    }
    Ok((out, origins))
}

/// The name of the section a line opens, read as the parser reads a header: comments
/// dropped (a whole-line one, or one that starts after whitespace), then `[name]`.
/// Malformed headers are left to the parser.
fn section_name(raw: &str) -> Option<&str> {
    let s = raw.trim_start();
    if s.starts_with([';', '#']) {
        return None;
    }
    let mut end = s.len();
    let mut prev_ws = false;
    for (i, c) in s.char_indices() {
        if prev_ws && (c == ';' || c == '#') {
            end = i;
            break;
        }
        prev_ws = c.is_whitespace();
    }
    let name = s[..end].trim().strip_prefix('[')?.strip_suffix(']')?.trim();
    (!name.is_empty() && !name.contains(['[', ']'])).then_some(name)
}

/// Parse job text with `sets` applied; messages refer to the file's own lines, or name
/// the `--set` an inserted line came from. Returns the jobs and the parser's warnings.
pub fn parse_with_sets(
    text: &str,
    origin: &str,
    opts: &ParseOptions,
    sets: &[JobSet],
) -> Result<(Vec<JobSpec>, Vec<String>), CliError> {
    if sets.is_empty() {
        let p = sluice_workload::parse_str(text, origin, opts)?;
        let mut warnings = p.warnings;
        warnings.extend(sluice_workload::buffered_note(
            origin,
            &p.buffered_by_default,
        ));
        return Ok((p.jobs, warnings));
    }
    let (rewritten, origins) = rewrite(text, sets)?;
    let at = |line: usize| origins.get(line.wrapping_sub(1)).copied();
    match sluice_workload::parse_str(&rewritten, origin, opts) {
        Ok(p) => {
            let mut warnings: Vec<String> = p
                .warnings
                .into_iter()
                .map(|w| relocate_warning(&w, origin, &at, sets))
                .collect();
            warnings.extend(sluice_workload::buffered_note(
                origin,
                &p.buffered_by_default,
            ));
            Ok((p.jobs, warnings))
        }
        Err(mut e) => {
            let (e_origin, line) = match &mut e {
                WorkloadError::Syntax { origin, line, .. }
                | WorkloadError::Option { origin, line, .. } => (origin.clone(), line),
                _ => return Err(e.into()),
            };
            if e_origin != origin {
                // In an included file: its lines were not moved.
                return Err(e.into());
            }
            match at(*line) {
                Some(Origin::Set(i)) => {
                    let what = match &e {
                        WorkloadError::Option {
                            option, message, ..
                        } => format!("option '{option}': {message}"),
                        WorkloadError::Syntax { message, .. } => message.clone(),
                        _ => unreachable!("matched above"),
                    };
                    Err(CliError::Usage(format!("--set {}: {what}", sets[i])))
                }
                Some(Origin::File(n)) => {
                    *line = n;
                    let list: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
                    Err(CliError::Usage(format!(
                        "{e} (with --set {} applied)",
                        list.join(" --set ")
                    )))
                }
                None => Err(e.into()),
            }
        }
    }
}

/// A warning `ORIGIN:LINE: text` with the line put back to the file's own, or to the
/// `--set` that inserted it.
fn relocate_warning(
    w: &str,
    origin: &str,
    at: &dyn Fn(usize) -> Option<Origin>,
    sets: &[JobSet],
) -> String {
    let Some(rest) = w.strip_prefix(origin).and_then(|r| r.strip_prefix(':')) else {
        return w.to_string();
    };
    let Some((num, tail)) = rest.split_once(':') else {
        return w.to_string();
    };
    match num.parse::<usize>().ok().and_then(at) {
        Some(Origin::File(n)) => format!("{origin}:{n}:{tail}"),
        Some(Origin::Set(i)) => format!("--set {}:{tail}", sets[i]),
        None => w.to_string(),
    }
}

/// Load the jobs of `path` (or the embedded default job) with `sets` applied.
pub fn load_jobs_with_sets(
    path: Option<&Path>,
    ignore_unknown: bool,
    sections: &[String],
    sets: &[JobSet],
) -> Result<(Vec<JobSpec>, Vec<String>), CliError> {
    let opts = ParseOptions {
        ignore_unknown,
        sections: sections.to_vec(),
    };
    match path {
        Some(p) => {
            let text = sluice_workload::read_text(p).map_err(|source| WorkloadError::Io {
                path: p.to_path_buf(),
                source,
            })?;
            parse_with_sets(&text, &p.display().to_string(), &opts, sets)
        }
        None => parse_with_sets(DEFAULT_JOB, DEFAULT_JOB_NAME, &opts, sets),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "[global]\nsize=64m\niodepth=2\n\n[a]\nrw=randread\niodepth=8\n\
                        ; a comment\n[b] ; trailing\nrw=randwrite\n";

    fn sets(list: &[&str]) -> Vec<JobSet> {
        list.iter().map(|s| JobSet::parse(s).unwrap()).collect()
    }

    fn jobs(list: &[&str]) -> Vec<JobSpec> {
        parse_with_sets(TEXT, "t.fio", &ParseOptions::default(), &sets(list))
            .unwrap()
            .0
    }

    #[test]
    fn set_overrides_every_job_and_the_global_default() {
        let j = jobs(&["iodepth=32"]);
        assert_eq!((j[0].iodepth, j[1].iodepth), (32, 32));
        let j = jobs(&[]);
        assert_eq!((j[0].iodepth, j[1].iodepth), (8, 2));
    }

    #[test]
    fn job_scoped_set_touches_one_section() {
        let j = jobs(&["b.iodepth=16"]);
        assert_eq!((j[0].iodepth, j[1].iodepth), (8, 16));
    }

    #[test]
    fn bad_sets_are_refused_with_what_and_where() {
        let e = |list: &[&str]| {
            let s: Result<Vec<JobSet>, _> = list.iter().map(|s| JobSet::parse(s)).collect();
            match s {
                Err(e) => e.to_string(),
                Ok(s) => parse_with_sets(TEXT, "t.fio", &ParseOptions::default(), &s)
                    .unwrap_err()
                    .to_string(),
            }
        };
        assert!(
            e(&["iodepht=4"]).contains("iodepth"),
            "{}",
            e(&["iodepht=4"])
        );
        assert!(e(&["iodepth"]).contains("no '='"));
        assert!(e(&["iodepth="]).contains("no value"));
        assert!(e(&["iodepth=x"]).starts_with("--set iodepth=x: option 'iodepth'"));
        assert!(e(&["c.iodepth=4"]).contains("no job section [c]; its job sections: a, b"));
        assert!(e(&["iodepth=1\n[x]"]).contains("control character"));
    }

    #[test]
    fn file_lines_keep_their_numbers() {
        // Line 10 of the file is `rw=randwrite` under [b]; make it fail there by a
        // job-scoped set that moves it down by one line.
        let bad = TEXT.replace("rw=randwrite", "rw=sideways");
        let e = parse_with_sets(&bad, "t.fio", &ParseOptions::default(), &sets(&["a.bs=8k"]))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("t.fio:10: option 'rw'"), "{e}");
        assert!(e.ends_with("(with --set a.bs=8k applied)"), "{e}");
    }
}
