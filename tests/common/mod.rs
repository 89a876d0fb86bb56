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
pub fn refused(o: &Output, needles: &[&str]) {
    let e = stderr(o);
    assert_eq!(o.status.code(), Some(2), "exit status; stderr: {e}");
    assert!(!e.contains("panicked"), "{e}");
    for n in needles {
        assert!(e.contains(n), "stderr lacks {n:?}: {e}");
    }
}
