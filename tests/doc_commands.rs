//! The docs cannot drift: every ```` ```console ```` block of README.md, ARCHITECTURE.md and
//! docs/**/*.md is run, and what each command prints on stdout must be what the block
//! shows. A block holds `$ COMMAND` lines, each followed by its expected output:
//!
//! * `$ sluice ARGS` runs the `sluice` binary this test was built with;
//! * `$ cargo run --release --example NAME -- ARGS` runs that example, as built by
//!   `cargo test` (which builds the examples);
//! * in the expected output, a line `...` stands for any number of lines and `[..]`
//!   inside a line for any text, so a block may quote only the lines it speaks of.
//!
//! Only simulated runs belong there (deterministic: same inputs, same output). Real-disk
//! figures are shown in ```` ```text ```` blocks with their date, machine and command
//! and are not checked; [`shown_commands_are_checked_or_real`] refuses a ```` ```text ````
//! block that shows a `$ sluice` command of the simulator, so one cannot slip out of the
//! check. A failure prints the command's whole output, to paste into the doc.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A fenced block: its file, the line of its first command, its language and lines.
struct Block {
    file: PathBuf,
    line: usize,
    lang: String,
    body: Vec<String>,
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// README.md, ARCHITECTURE.md and every .md under docs/.
fn doc_files() -> Vec<PathBuf> {
    let mut files = vec![root().join("README.md"), root().join("ARCHITECTURE.md")];
    let mut dirs = vec![root().join("docs")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "md") {
                files.push(p);
            }
        }
    }
    files.sort();
    files
}

/// The fenced blocks of a markdown text.
fn blocks(file: &Path, text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        if let Some(rest) = t.strip_prefix("```") {
            match open.take() {
                Some(b) => out.push(b),
                None => {
                    open = Some(Block {
                        file: file.to_path_buf(),
                        line: i + 2,
                        lang: rest.trim().to_string(),
                        body: Vec::new(),
                    })
                }
            }
        } else if let Some(b) = open.as_mut() {
            b.body.push(line.to_string());
        }
    }
    out
}

/// One `$ COMMAND` of a console block and the output it must print.
struct Case {
    line: usize,
    command: String,
    expected: Vec<String>,
}

fn cases(b: &Block) -> Vec<Case> {
    let mut out: Vec<Case> = Vec::new();
    for (i, l) in b.body.iter().enumerate() {
        if let Some(cmd) = l.strip_prefix("$ ") {
            out.push(Case {
                line: b.line + i,
                command: cmd.trim().to_string(),
                expected: Vec::new(),
            });
        } else if let Some(c) = out.last_mut() {
            c.expected.push(l.clone());
        } else {
            panic!(
                "{}:{}: a console block starts with `$ COMMAND`, not {l:?}",
                b.file.display(),
                b.line + i
            );
        }
    }
    out
}

/// The program and arguments of a shown command, or why it cannot be run here.
fn program(command: &str) -> Result<(PathBuf, Vec<String>), String> {
    let words: Vec<&str> = command.split_whitespace().collect();
    if let Some(w) = words.iter().find(|w| {
        ["|", ">", "<", "&&", ";", "#"]
            .iter()
            .any(|m| w.starts_with(m))
    }) {
        return Err(format!(
            "`{w}`: a checked command is one program and its arguments (no shell)"
        ));
    }
    if words.contains(&"--real") {
        return Err("`--real`: real-disk runs are not checked (use a text block)".into());
    }
    let args = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    match words.as_slice() {
        ["sluice", rest @ ..] => Ok((PathBuf::from(env!("CARGO_BIN_EXE_sluice")), args(rest))),
        ["cargo", "run", "--release", "--example", name, rest @ ..] => {
            let rest = match rest {
                ["--", r @ ..] => r,
                [] => rest,
                _ => return Err("the example's arguments come after `--`".into()),
            };
            // The examples `cargo test` built, beside this test binary's directory.
            let exe = std::env::current_exe().unwrap();
            let path = exe
                .parent()
                .unwrap()
                .parent()
                .unwrap()
                .join("examples")
                .join(name);
            if !path.exists() {
                return Err(format!(
                    "{} is not built: run the tests with `cargo test` (which builds the \
                     examples) or `cargo build --examples --profile test` first",
                    path.display()
                ));
            }
            Ok((path, args(rest)))
        }
        _ => Err(
            "only `sluice ...` and `cargo run --release --example NAME -- ...` are checked".into(),
        ),
    }
}

/// Whether `line` matches `pattern`, where `[..]` stands for any text.
fn line_matches(pattern: &str, line: &str) -> bool {
    let mut parts = pattern.split("[..]");
    let first = parts.next().unwrap();
    let Some(mut rest) = line.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    for (k, p) in parts.iter().enumerate() {
        if k + 1 == parts.len() {
            return rest.ends_with(p);
        }
        match rest.find(p) {
            Some(i) => rest = &rest[i + p.len()..],
            None => return false,
        }
    }
    rest.is_empty()
}

/// Whether `actual` matches `expected`, where a line `...` stands for any lines.
fn lines_match(expected: &[String], actual: &[&str]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((e, rest)) if e.trim() == "..." => {
            (0..=actual.len()).any(|skip| lines_match(rest, &actual[skip..]))
        }
        Some((e, rest)) => {
            !actual.is_empty()
                && line_matches(e.trim_end(), actual[0].trim_end())
                && lines_match(rest, &actual[1..])
        }
    }
}

#[test]
fn console_blocks_print_what_they_show() {
    let mut failures = Vec::new();
    let mut ran = 0;
    for file in doc_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        for b in blocks(&file, &text).iter().filter(|b| b.lang == "console") {
            for c in cases(b) {
                let at = format!(
                    "{}:{}",
                    b.file.strip_prefix(root()).unwrap().display(),
                    c.line
                );
                let (prog, args) = match program(&c.command) {
                    Ok(p) => p,
                    Err(why) => {
                        failures.push(format!("{at}: `{}`: {why}", c.command));
                        continue;
                    }
                };
                let o = Command::new(&prog)
                    .args(&args)
                    .current_dir(root())
                    .env("NO_COLOR", "1")
                    .output()
                    .unwrap();
                ran += 1;
                let stdout = String::from_utf8_lossy(&o.stdout);
                let mut expected = c.expected.clone();
                while expected.last().is_some_and(|l| l.trim().is_empty()) {
                    expected.pop();
                }
                let mut actual: Vec<&str> = stdout.lines().collect();
                while actual.last().is_some_and(|l| l.trim().is_empty()) {
                    actual.pop();
                }
                if !o.status.success() || !lines_match(&expected, &actual) {
                    failures.push(format!(
                        "{at}: `{}` ({}) printed:\n{stdout}{}",
                        c.command,
                        o.status,
                        String::from_utf8_lossy(&o.stderr)
                    ));
                }
            }
        }
    }
    assert!(ran >= 1, "no console block found");
    assert!(
        failures.is_empty(),
        "{} doc command(s) no longer print what the docs show:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn shown_commands_are_checked_or_real() {
    // A text block that shows a simulator command with `$ ` is a console block that
    // escaped the check; real-disk runs (`--real`, `sluice run`, `calibrate`, `mount`)
    // stay in text blocks, with their date, machine and command.
    let mut escaped = Vec::new();
    for file in doc_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        for b in blocks(&file, &text).iter().filter(|b| b.lang != "console") {
            for (i, l) in b.body.iter().enumerate() {
                let Some(cmd) = l.trim_start().strip_prefix("$ ") else {
                    continue;
                };
                let real = [
                    "--real",
                    "sluice run",
                    "sluice calibrate",
                    "sluice mount",
                    "sluice fsck",
                ]
                .iter()
                .any(|r| cmd.contains(r));
                if (cmd.starts_with("sluice ") || cmd.contains("--example")) && !real {
                    let f = b.file.strip_prefix(root()).unwrap().display().to_string();
                    escaped.push(format!("{f}:{}: {cmd}", b.line + i));
                }
            }
        }
    }
    assert!(
        escaped.is_empty(),
        "simulator commands shown with their output outside a ```console block (make it \
         one, so the output is checked): {escaped:#?}"
    );
}

#[test]
fn the_matcher_reads_elisions() {
    let e = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert!(lines_match(&e(&["a", "...", "d"]), &["a", "b", "c", "d"]));
    assert!(lines_match(&e(&["a", "...", "d"]), &["a", "d"]));
    assert!(!lines_match(&e(&["a", "...", "d"]), &["a", "b"]));
    assert!(!lines_match(&e(&["a", "b"]), &["a", "c"]));
    assert!(line_matches("p99 [..] µs", "p99 12.5 µs"));
    assert!(line_matches("[..]x", "abcx"));
    assert!(!line_matches("a[..]b", "a-c"));
    assert!(!line_matches("ab", "abc"));
    assert!(program("sluice sim | head").is_err());
    assert!(program("cargo run --release --example inversion -- --real DIR").is_err());
}

#[test]
fn relative_links_of_the_docs_exist() {
    // A clone has only the repository: a link to a file outside it (or one since
    // renamed) is a dead end for its reader.
    let mut dead = Vec::new();
    for file in doc_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        let dir = file.parent().unwrap();
        for (i, line) in text.lines().enumerate() {
            for (k, _) in line.match_indices("](") {
                let rest = &line[k + 2..];
                let Some(end) = rest.find(')') else { continue };
                let target = rest[..end].split('#').next().unwrap();
                if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                if !dir.join(target).exists() {
                    let f = file.strip_prefix(root()).unwrap().display().to_string();
                    dead.push(format!("{f}:{}: {target}", i + 1));
                }
            }
        }
    }
    assert!(
        dead.is_empty(),
        "links to files that do not exist: {dead:#?}"
    );
}
