//! Reading job text as fio does before options are parsed: `include FILE` directives
//! (relative to the including file, nested up to [`MAX_INCLUDE_DEPTH`], a cycle is an
//! error), and in option values `${VAR}` environment variables and fio's reserved
//! keywords.

use std::path::{Path, PathBuf};
use std::rc::Rc;

use crate::error::WorkloadError;

/// How deep `include` directives may nest.
pub const MAX_INCLUDE_DEPTH: usize = 16;

/// One line of job text and where it came from.
#[derive(Clone, Debug)]
pub(crate) struct SrcLine {
    /// The file (or origin) the line is in.
    pub origin: Rc<str>,
    /// 1-based line number in that file.
    pub line: usize,
    /// The text.
    pub text: String,
    /// Whether the line came from an included file (which may not hold sections).
    pub included: bool,
}

/// If `s` (comment-stripped and trimmed) is an `include` directive, its file name.
pub(crate) fn include_target(s: &str) -> Option<&str> {
    let rest = s.strip_prefix("include")?;
    // A bare `include` is a directive missing its file (told so), not an option.
    if !rest.is_empty() && !rest.starts_with([' ', '\t']) {
        return None;
    }
    Some(rest.trim())
}

/// The lines of `text` (from `origin`) with every `include` directive replaced by the
/// lines of the file it names. `stack` holds the files being read (for cycles).
pub(crate) fn expand_includes(
    text: &str,
    origin: &str,
    stack: &mut Vec<PathBuf>,
    out: &mut Vec<SrcLine>,
) -> Result<(), WorkloadError> {
    let o: Rc<str> = Rc::from(origin);
    let included = !stack.is_empty();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let s = crate::parse::strip_comment(raw).trim();
        let Some(target) = include_target(s) else {
            out.push(SrcLine {
                origin: o.clone(),
                line,
                text: raw.to_string(),
                included,
            });
            continue;
        };
        let err = |message: String| WorkloadError::Syntax {
            origin: origin.to_string(),
            line,
            message,
        };
        if target.is_empty() {
            return Err(err(
                "'include' needs a file name, e.g. include common.fio".to_string()
            ));
        }
        // Relative to the including file's directory, as fio does.
        let base = Path::new(origin).parent().unwrap_or(Path::new(""));
        let path = if Path::new(target).is_absolute() {
            PathBuf::from(target)
        } else {
            base.join(target)
        };
        if stack.len() >= MAX_INCLUDE_DEPTH {
            return Err(err(format!(
                "'include {target}' nests includes more than {MAX_INCLUDE_DEPTH} deep; flatten them"
            )));
        }
        let key = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
        if stack.contains(&key) {
            return Err(err(format!(
                "'include {target}' includes {} again, which is already being read (an include cycle); remove one of the includes",
                path.display()
            )));
        }
        let text = crate::read_text(&path).map_err(|e| {
            err(format!(
                "cannot read the included file {}: {e}; include names a file relative to the including file",
                path.display()
            ))
        })?;
        stack.push(key);
        expand_includes(&text, &path.display().to_string(), stack, out)?;
        stack.pop();
    }
    Ok(())
}

/// Expand `${VAR}` (from `vars`) and fio's reserved keywords `$pagesize`, `$ncpus`,
/// `$mb_memory` in an option value. Other `$` text (e.g. `$jobname` in
/// `filename_format`) is left as it is.
pub(crate) fn expand_value(
    value: &str,
    vars: &dyn Fn(&str) -> Option<String>,
) -> Result<String, String> {
    if !value.contains('$') {
        return Ok(value.to_string());
    }
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if let Some(body) = tail.strip_prefix("${") {
            let Some(end) = body.find('}') else {
                return Err(format!(
                    "'{value}' has '${{' without a closing '}}'; write ${{NAME}}"
                ));
            };
            let name = &body[..end];
            if name.is_empty() {
                return Err(format!("'{value}' has an empty '${{}}'; write ${{NAME}}"));
            }
            match vars(name) {
                Some(v) => out.push_str(&v),
                None => {
                    return Err(format!(
                        "environment variable {name} is not set (fio would put an empty string in its place); \
                         set it, e.g. {name}=... sluice sim JOB.fio, or write the value"
                    ))
                }
            }
            rest = &body[end + 1..];
            continue;
        }
        let word: String = tail[1..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        match word.as_str() {
            // The page size of the platforms sluice runs on; a fixed value keeps job
            // files reproducible.
            "pagesize" => out.push_str("4096"),
            "ncpus" | "mb_memory" => {
                return Err(format!(
                "fio's keyword ${word} stands for a property of the machine, which would make the \
                     simulated run depend on where it runs; write the number you mean"
            ))
            }
            _ => out.push('$'),
        }
        rest = &tail[1 + if word == "pagesize" { word.len() } else { 0 }..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "SIZE" => Some("64m".into()),
            "N" => Some("4".into()),
            _ => None,
        }
    }

    #[test]
    fn variables_and_keywords() {
        assert_eq!(expand_value("${SIZE}", &env).unwrap(), "64m");
        assert_eq!(expand_value("(${N}*${SIZE})", &env).unwrap(), "(4*64m)");
        assert_eq!(expand_value("($pagesize*2)", &env).unwrap(), "(4096*2)");
        assert_eq!(
            expand_value("$jobname.$jobnum", &env).unwrap(),
            "$jobname.$jobnum"
        );
        assert!(expand_value("${NOPE}", &env)
            .unwrap_err()
            .contains("NOPE is not set"));
        assert!(expand_value("${SIZE", &env)
            .unwrap_err()
            .contains("closing"));
        assert!(expand_value("${}", &env).unwrap_err().contains("empty"));
        assert!(expand_value("$ncpus", &env)
            .unwrap_err()
            .contains("machine"));
        assert_eq!(expand_value("a$", &env).unwrap(), "a$");
    }

    #[test]
    fn include_directive() {
        assert_eq!(include_target("include a.fio"), Some("a.fio"));
        assert_eq!(include_target("include\tdir/a b.fio"), Some("dir/a b.fio"));
        assert_eq!(include_target("include_dir=x"), None);
        assert_eq!(include_target("included"), None);
        assert_eq!(include_target("include"), Some(""));
    }
}
