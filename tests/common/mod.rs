//! What the command's end-to-end tests share: running `sluice`, reading its stderr,
//! writing a job file, and checking a refusal.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

/// Run the `sluice` binary with `args`.
pub fn sluice(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(args)
        .output()
        .expect("sluice runs")
}

/// Its stderr as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Write `text` to `dir/name`; returns the path.
pub fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

/// Bad input: exit status 2, no panic, every needle in the message.
/// `sluice run JOB -q --keep-files --directory DIR --json OUT` plus `extra`; its JSON,
/// or `None` (said on stderr) where io_uring cannot be set up here.
pub fn run_kept_json(
    job: &str,
    dir: &Path,
    out: &Path,
    extra: &[&str],
) -> Option<serde_json::Value> {
    let mut args = vec![
        "run",
        job,
        "-q",
        "--keep-files",
        "--directory",
        dir.to_str().unwrap(),
        "--json",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = sluice(&args);
    if o.status.code() == Some(2) && stderr(&o).contains("cannot create an io_uring") {
        eprintln!("io_uring unavailable, test skipped: {}", stderr(&o));
        return None;
    }
    assert!(o.status.success(), "{}", stderr(&o));
    Some(serde_json::from_slice(&std::fs::read(out).unwrap()).unwrap())
}

pub fn refused(o: &Output, needles: &[&str]) {
    let e = stderr(o);
    assert_eq!(o.status.code(), Some(2), "exit status; stderr: {e}");
    assert!(!e.contains("panicked"), "{e}");
    for n in needles {
        assert!(e.contains(n), "stderr lacks {n:?}: {e}");
    }
}

/// Start `sluice ARGS` with a readiness file (`SLUICE_READY_FILE`), wait until sluice
/// creates it (the run is under way), send SIGINT and wait for the exit. The wait is
/// for the file, bounded only generously (a run that never gets under way fails).
pub fn interrupt_when_ready(args: &[&str]) -> Output {
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().unwrap();
    let ready = dir.path().join("ready");
    let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(args)
        .env("SLUICE_READY_FILE", &ready)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if !wait_for_file(&mut child, &ready) {
        return child.wait_with_output().unwrap(); // ended before it got under way
    }
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    child.wait_with_output().unwrap()
}

/// Wait until `child` creates `path` (its readiness file): true once it exists, false
/// if the child ended without it. The 600 s bound only catches a run that never gets
/// under way; it is not a timing.
pub fn wait_for_file(child: &mut std::process::Child, path: &Path) -> bool {
    use std::time::{Duration, Instant};
    let t0 = Instant::now();
    loop {
        if path.exists() {
            return true;
        }
        if child.try_wait().unwrap().is_some() {
            return path.exists();
        }
        assert!(
            t0.elapsed() < Duration::from_secs(600),
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}
