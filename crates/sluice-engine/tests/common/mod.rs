//! What the engine's real-I/O tests share: job text → specs, a configuration on a
//! temporary directory, and file preparation that skips (with the reason) where
//! io_uring cannot be set up.
#![allow(dead_code)]

use std::path::Path;
use std::sync::atomic::AtomicBool;

use sluice_engine::{EngineConfig, EngineError, FileSet};
use sluice_workload::{parse_str, JobSpec, ParseOptions};

/// Parse job-file text. The tests here are of the device path: the text starts from
/// `direct=1` (fio's default is `direct=0`); a job's own `direct=0` makes it buffered.
pub fn jobs(text: &str) -> Vec<JobSpec> {
    let text = format!("[global]\ndirect=1\n{text}");
    parse_str(&text, "test.fio", &ParseOptions::default())
        .unwrap()
        .jobs
}

/// The default configuration in `dir` with `workers` workers (`None`: the default).
pub fn cfg_in(dir: &Path, workers: Option<usize>) -> EngineConfig {
    EngineConfig {
        directory: dir.to_path_buf(),
        workers,
        ..EngineConfig::default()
    }
}

/// Prepare the files, or `None` (with the reason printed) when io_uring is unusable.
pub fn prepare(j: &[JobSpec], c: &EngineConfig) -> Option<FileSet> {
    let stop = AtomicBool::new(false);
    match sluice_engine::prepare(j, c, &stop, &mut |_, _, _| {}) {
        Ok(f) => Some(f),
        Err(e @ EngineError::Ring { .. }) => {
            eprintln!("io_uring unavailable, test skipped: {e}");
            None
        }
        Err(e) => panic!("prepare: {e}"),
    }
}
