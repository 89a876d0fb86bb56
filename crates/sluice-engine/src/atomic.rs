//! fio's `atomic=1` under `sluice run`: each write of the job carries `RWF_ATOMIC`
//! (`sluice_uring::sqe`), which Linux (6.11+) accepts only on an `O_DIRECT` file whose
//! file system or block device has torn-write protection, for a power-of-two length
//! within the file's atomic write unit and an offset aligned to it. The unit is what
//! `statx(STATX_WRITE_ATOMIC)` reports (`stx_atomic_write_unit_min`/`_max`; for a
//! block device Linux fills them from `/sys/block/X/queue/atomic_write_unit_{min,max}_bytes`,
//! NVMe's AWUPF/NAWUPF).
//!
//! The limits are checked at set-up, before any file is laid out, so a job the kernel
//! would refuse write by write is refused once, in one line naming the job, the file
//! and the limit: an existing file or device is asked with `statx` on its path, a file
//! sluice is to create by a probe file created (empty, `O_DIRECT`) and removed in its
//! directory — a new file's unit is its file system's.

use std::ffi::CString;
use std::fs::OpenOptions;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use sluice_workload::{AtomicLimits, JobSpec};

use crate::error::EngineError;
use crate::files::FilePlan;

/// `STATX_WRITE_ATOMIC` (0x10000): ask for the atomic write unit.
pub(crate) const STATX_WRITE_ATOMIC: u32 = 0x1_0000;

/// The atomic write unit of a `statx` answer: its `stx_mask` and the two fields. A
/// kernel or file system that does not fill them (the mask lacks
/// `STATX_WRITE_ATOMIC`) has no atomic writes for the file: max 0.
pub(crate) fn limits_from(mask: u32, unit_min: u32, unit_max: u32) -> AtomicLimits {
    if mask & STATX_WRITE_ATOMIC == 0 {
        return AtomicLimits { min: 0, max: 0 };
    }
    AtomicLimits {
        min: unit_min,
        max: unit_max,
    }
}

/// `statx(path, STATX_WRITE_ATOMIC)`: the file's or device's atomic write unit.
pub(crate) fn statx_limits(path: &Path) -> io::Result<AtomicLimits> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a nul byte in the path"))?;
    // SAFETY: statx is plain old data; zeroed is a valid value.
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: a valid nul-terminated path, a valid out pointer.
    let rc = unsafe { libc::statx(libc::AT_FDCWD, c.as_ptr(), 0, STATX_WRITE_ATOMIC, &mut stx) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(limits_from(
        stx.stx_mask,
        stx.stx_atomic_write_unit_min,
        stx.stx_atomic_write_unit_max,
    ))
}

/// The atomic write unit a new file in `dir` gets: a probe file's, created `O_DIRECT`
/// and removed at once.
fn probe_new_file(dir: &Path) -> io::Result<AtomicLimits> {
    let probe = dir.join(format!(".sluice-atomic-probe-{}", std::process::id()));
    let f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_DIRECT)
        .mode(0o600)
        .open(&probe)?;
    let r = statx_limits(&probe);
    drop(f);
    let _ = std::fs::remove_file(&probe);
    r
}

/// Refuse an `atomic=1` job whose writes a file it uses cannot take atomically (see
/// the module text). `plan.thread_file` gives each thread's file, jobs in order.
pub(crate) fn check(jobs: &[JobSpec], plan: &FilePlan) -> Result<(), EngineError> {
    let mut thread = 0usize;
    for job in jobs {
        let n = job.numjobs.max(1) as usize;
        let mut seen: Vec<u32> = plan
            .thread_file
            .iter()
            .skip(thread)
            .take(n)
            .copied()
            .collect();
        thread += n;
        if !job.atomic || !job.rw.writes() {
            continue;
        }
        seen.sort_unstable();
        seen.dedup();
        for i in seen {
            let f = &plan.files[i as usize];
            let at = if f.create {
                f.path.parent().unwrap_or(Path::new("."))
            } else {
                f.path.as_path()
            };
            let limits = if f.create {
                probe_new_file(at)
            } else {
                statx_limits(at)
            }
            .map_err(|e| {
                EngineError::Atomic(format!(
                    "job '{}' has atomic=1, but the atomic write unit of {} could not be \
                     read (statx STATX_WRITE_ATOMIC: {e})",
                    job.name,
                    at.display()
                ))
            })?;
            let what = if f.create {
                format!("a new file in {} (statx STATX_WRITE_ATOMIC)", at.display())
            } else {
                format!("{} (statx STATX_WRITE_ATOMIC)", at.display())
            };
            limits.check(job, &what).map_err(EngineError::Atomic)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_workload::{parse_str, ParseOptions};

    fn job(text: &str) -> JobSpec {
        parse_str(text, "t.fio", &ParseOptions::default())
            .unwrap()
            .jobs
            .remove(0)
    }

    /// The limits of a `statx` answer: none when the mask lacks `STATX_WRITE_ATOMIC`
    /// (an older kernel, a file system without atomic writes), else its unit.
    #[test]
    fn statx_answers_become_limits() {
        assert_eq!(STATX_WRITE_ATOMIC, libc::STATX_WRITE_ATOMIC);
        assert_eq!(
            limits_from(0x7ff, 4096, 65536),
            AtomicLimits { min: 0, max: 0 }
        );
        assert_eq!(
            limits_from(0x7ff | STATX_WRITE_ATOMIC, 4096, 65536),
            AtomicLimits {
                min: 4096,
                max: 65536
            }
        );
    }

    /// Injected limits decide: a 4 KiB atomic write fits 4 KiB..64 KiB, 128 KiB does
    /// not, 2 KiB is under the minimum, and a file with max 0 refuses any.
    #[test]
    fn injected_limits_accept_and_refuse_write_sizes() {
        let nvme = limits_from(STATX_WRITE_ATOMIC, 4096, 65536);
        let ok = job("[w]\nrw=randwrite\nbs=4k\natomic=1\n");
        assert!(nvme.check(&ok, "/dev/nvme0n1").is_ok());
        let big = job("[w]\nrw=randwrite\nbs=128k\natomic=1\n");
        let e = nvme.check(&big, "/dev/nvme0n1").unwrap_err();
        assert!(e.contains("128KiB") && e.contains("4KiB..64KiB"), "{e}");
        let small = job("[w]\nrw=randwrite\nbs=2k\natomic=1\n");
        assert!(nvme.check(&small, "/dev/nvme0n1").is_err());
        let none = limits_from(STATX_WRITE_ATOMIC, 0, 0);
        let e = none.check(&ok, "/x").unwrap_err();
        assert!(e.contains("/x does not support atomic writes"), "{e}");
    }
}
