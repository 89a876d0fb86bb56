//! The checks of fio log prefixes (`write_bw_log=`, `write_lat_log=`, `write_iops_log=`)
//! made before a run, so a bad one fails before the run it was to record.

use sluice_core::policy::PolicySpec;
use sluice_workload::JobSpec;

use super::CliError;

/// A job's log prefixes, each with the option that gave it.
fn prefixes(j: &JobSpec) -> impl Iterator<Item = (&'static str, &str)> {
    [
        ("write_bw_log", &j.logs.bw),
        ("write_lat_log", &j.logs.lat),
        ("write_iops_log", &j.logs.iops),
    ]
    .into_iter()
    .filter_map(|(opt, p)| p.as_deref().map(|p| (opt, p)))
}

/// Before a run: the directory of every fio log prefix (`write_bw_log=DIR/PREFIX`, …)
/// exists and can be written (fio, too, creates no directory for its logs).
pub fn check_log_prefixes(jobs: &[JobSpec]) -> Result<(), CliError> {
    for j in jobs {
        for (opt, p) in prefixes(j) {
            let d = sluice_metrics::log_dir(p);
            let bad = |why: String| {
                CliError::Usage(format!(
                    "job '{}': {opt}={p}: {why}; create the directory or give a prefix in one that exists",
                    j.name
                ))
            };
            if !d.is_dir() {
                return Err(bad(format!("{} is not a directory", d.display())));
            }
            let probe = d.join(format!(".sluice-probe-{}", std::process::id()));
            std::fs::write(&probe, b"")
                .map_err(|e| bad(format!("{} cannot be written: {e}", d.display())))?;
            let _ = std::fs::remove_file(probe);
        }
    }
    Ok(())
}

/// Before a run: the fio log files the jobs ask for have names the file system takes
/// (`PREFIX_iops.N.POLICY.log` at its longest, within the directory's `NAME_MAX`), so a
/// long `write_bw_log=` fails here and not after the run it was to record.
pub fn check_log_names(jobs: &[JobSpec], specs: &[PolicySpec]) -> Result<(), CliError> {
    let threads: u64 = jobs.iter().map(|j| j.numjobs.max(1) as u64).sum();
    let digits = threads.max(1).to_string().len();
    // With several policies each file carries the policy's name (sanitised, as long as
    // its text) before `.log`; a few characters more for variants such as `--alone`.
    let policy = if specs.len() > 1 {
        1 + specs.iter().map(|s| s.text.len()).max().unwrap_or(0) + 8
    } else {
        0
    };
    for j in jobs {
        for (opt, p) in prefixes(j) {
            let base = std::path::Path::new(p)
                .file_name()
                .map_or(0, |b| b.as_encoded_bytes().len());
            // `_` + the longest kind (`iops`, `clat`, `slat`) + `.N` + policy + `.log`.
            let longest = base + 1 + 4 + 1 + digits + policy + 4;
            let max = name_max(sluice_metrics::log_dir(p));
            if longest > max {
                return Err(CliError::Usage(format!(
                    "job '{}': {opt}={p}: its log file names would be up to {longest} \
                     characters, past the file system's limit of {max} for a name; give a \
                     shorter prefix",
                    j.name
                )));
            }
        }
    }
    Ok(())
}

/// The longest file name the file system of `dir` takes (`pathconf(_PC_NAME_MAX)`,
/// 255 where it does not say).
fn name_max(dir: &std::path::Path) -> usize {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return 255;
    };
    // SAFETY: c is a valid C string.
    let n = unsafe { libc::pathconf(c.as_ptr(), libc::_PC_NAME_MAX) };
    if n > 0 {
        n as usize
    } else {
        255
    }
}
