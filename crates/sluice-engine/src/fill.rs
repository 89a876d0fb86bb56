//! fio's `fill_device` under `sluice run`: the room of each file a filling job uses
//! is what its file system has free (statvfs's `f_bavail · f_frsize`, plus the bytes
//! an existing file already holds), or a block device's size (where, as fio says,
//! ENOSPC never comes: the job ends at the device's end). The sizes follow from
//! `sluice_fio::fill::resolve`; the write that finds no space ends the job without an
//! error in the one runner (`Runner::space_ran_out`, the worker's completion path).

use std::io::{self, Seek};
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

use sluice_workload::JobSpec;

use crate::files::free_bytes;
use crate::EngineError;

/// The jobs with `fill_device` resolved against the machine (`None`: no job has it,
/// run the jobs as they are). Call it once, before [`crate::prepare`], and give both
/// `prepare` and [`crate::run`] the jobs it returns: the free space it reads is gone
/// once the files are created.
pub fn resolve_fill(jobs: &[JobSpec], dir: &Path) -> Result<Option<Vec<JobSpec>>, EngineError> {
    if let Some(j) = jobs.iter().find(|j| j.fill_device && !j.rw.writes()) {
        return Err(EngineError::Fill(format!(
            "job '{}' has fill_device=1 but does not write: under sluice run the file is \
             filled by a writing job (fio fills the mount point first); put a job with \
             rw=write and fill_device=1 before it, as fio's surface-scan.fio does",
            j.name
        )));
    }
    let path = |j: usize, t: u32| -> PathBuf { crate::files::thread_path(&jobs[j], t, dir) };
    // The other files the run creates take their space first (they are laid out
    // before the run): per file system (its device number), the bytes they need.
    let plan = sluice_fio::AddressPlan::new(jobs, path);
    let mut others: std::collections::BTreeMap<u64, u64> = Default::default();
    for f in &plan.files {
        if f.users.iter().any(|&u| jobs[u].fill_device) || f.key.exists() {
            continue;
        }
        if let Some(dev) = parent_dev(&f.key) {
            *others.entry(dev).or_default() += f.size;
        }
    }
    let resolved = sluice_fio::fill::resolve(jobs, path, |f| {
        let r = room(&f.key).map_err(|e| e.to_string())?;
        let taken = parent_dev(&f.key)
            .and_then(|d| others.get(&d))
            .copied()
            .unwrap_or(0);
        Ok(r.saturating_sub(taken))
    })
    .map_err(|e| EngineError::Fill(e.to_string()))?;
    let Some(mut out) = resolved else {
        return Ok(None);
    };
    // On a file, fio's "really large" size: twice the room, so the job ends at the
    // file system's ENOSPC (or EDQUOT), not at a size; a later job without a size
    // reads the room. A block device ends at its end (ENOSPC never comes there).
    for (j, job) in out.iter_mut().enumerate() {
        if job.fill_device && !is_block_device(&path(j, 0)) {
            job.size = job.size.saturating_mul(2);
        }
    }
    Ok(Some(out))
}

/// The device number of the file system `p` is (or would be created) on.
fn parent_dev(p: &Path) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    let parent = p
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::metadata(parent).ok().map(|m| m.dev())
}

fn is_block_device(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.file_type().is_block_device())
}

/// Bytes `path` can hold: a block device's size; a file's size plus the free space
/// of its file system; a file to create, that free space.
fn room(path: &Path) -> io::Result<u64> {
    match std::fs::metadata(path) {
        Ok(m) if m.file_type().is_block_device() => {
            let mut f = std::fs::File::open(path)?;
            f.seek(io::SeekFrom::End(0))
        }
        Ok(m) => {
            let parent = path.parent().unwrap_or(Path::new("."));
            Ok(m.len().saturating_add(free_bytes(parent)?))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let parent = path
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            free_bytes(parent).map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("cannot read the free space of {}: {e}", parent.display()),
                )
            })
        }
        Err(e) => Err(io::Error::new(
            e.kind(),
            format!("cannot inspect {}: {e}", path.display()),
        )),
    }
}
