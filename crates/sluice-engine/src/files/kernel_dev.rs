//! `/dev/null` and `/dev/zero` as a job's file, as fio takes them (fio's
//! examples/steadystate.fio writes /dev/null and reads /dev/zero): the kernel's memory
//! character devices (major 1; minor 3 null, 5 zero). They hold no data and take no
//! O_DIRECT (the kernel refuses it with EINVAL), so they are opened without it; any
//! offset is valid, so they have no size to check, and a write to them overwrites
//! nothing, so writing them needs no `allow_write_existing`. A run on them measures the
//! kernel and sluice, no storage.
//!
//! What cannot work is refused before anything runs: reads of /dev/null (it gives end
//! of file at once, every read would be a short transfer), trims of either (they are
//! not files: no hole to punch), and verify (it reads back what was written, which
//! neither keeps).

use std::fs::{File, Metadata, OpenOptions};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

use sluice_workload::JobSpec;

use crate::error::EngineError;

/// Which of the two a file is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelDev {
    /// `/dev/null`: writes vanish, reads give nothing.
    Null,
    /// `/dev/zero`: writes vanish, reads give zeros.
    Zero,
}

impl KernelDev {
    /// The device `m` describes, if it is /dev/null or /dev/zero (by its device
    /// number, whatever the path's name).
    pub fn of(m: &Metadata) -> Option<KernelDev> {
        if !m.file_type().is_char_device() {
            return None;
        }
        match (libc::major(m.rdev()), libc::minor(m.rdev())) {
            (1, 3) => Some(KernelDev::Null),
            (1, 5) => Some(KernelDev::Zero),
            _ => None,
        }
    }

    /// Refuse a job whose I/O this device cannot serve.
    pub(crate) fn check(self, path: &Path, job: &JobSpec) -> Result<(), EngineError> {
        let what = if job.rw.trims() {
            "trims need a file (a hole punched) or a block device (a discard); this character \
             device has neither: use a file, or a job without trims"
        } else if job.verify.is_some() {
            "verify reads back what was written, and this device keeps nothing: verify on a \
             file instead"
        } else if self == KernelDev::Null && job.rw.reads() {
            "reads of /dev/null give end of file at once (no data): read /dev/zero, or a file"
        } else {
            return Ok(());
        };
        Err(EngineError::KernelDevice {
            path: path.to_path_buf(),
            job: job.name.clone(),
            what,
        })
    }
}

/// Open it (read-write when a job writes to it), without O_DIRECT.
pub(crate) fn open(path: &Path, write: bool) -> std::io::Result<File> {
    OpenOptions::new().read(true).write(write).open(path)
}
