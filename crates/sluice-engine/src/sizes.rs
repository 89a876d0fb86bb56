//! fio's size of a job that gives none (`size=`, `filesize=`) under `sluice run`: the
//! size of the file it names (fio's `total_file_size`: a file that exists is as large
//! as it is, a block device as its capacity), from the thread's offset on. A new file
//! without a size is refused, as fio refuses it ("you need to specify size="), where
//! sluice used to make it 1 GiB. Jobs that `fill_device` sizes (a filling job, and a job
//! without a size that reads a filled file) are left to [`crate::resolve_fill`]; a
//! character device (`/dev/null`, `/dev/zero`) keeps the 1 GiB default.

use std::io::{self, Seek};
use std::os::unix::fs::FileTypeExt;
use std::path::Path;

use sluice_workload::JobSpec;

use crate::files::thread_path;
use crate::EngineError;

/// The jobs with every missing size taken from its files (see the module's text).
/// Call it before [`crate::resolve_fill`] and [`crate::prepare`].
pub fn resolve_sizes(jobs: &[JobSpec], dir: &Path) -> Result<Vec<JobSpec>, EngineError> {
    let filled: Vec<_> = jobs
        .iter()
        .filter(|j| j.fill_device)
        .flat_map(|j| (0..j.numjobs).map(move |t| thread_path(j, t, dir)))
        .collect();
    let mut out = jobs.to_vec();
    for job in out.iter_mut().filter(|j| !j.size_given && !j.fill_device) {
        let mut size: Option<u64> = None;
        for t in 0..job.numjobs.max(1) {
            let path = thread_path(job, t, dir);
            if filled.contains(&path) {
                size = None;
                break;
            }
            let err = |reason: String| EngineError::NoSize {
                job: job.name.clone(),
                path: path.clone(),
                reason,
            };
            let len = match std::fs::metadata(&path) {
                Ok(m) if m.file_type().is_block_device() => std::fs::File::open(&path)
                    .and_then(|mut f| f.seek(io::SeekFrom::End(0)))
                    .map_err(|e| err(format!("is a device whose size cannot be read: {e}")))?,
                Ok(m) if m.is_file() => m.len(),
                // A character device or anything else: the default stays (`plan`
                // judges the kind).
                Ok(_) => {
                    size = None;
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    return Err(err(
                        "does not exist: sluice cannot know how large to make it (fio \
                         refuses it too: \"you need to specify size=\"); give size= or \
                         filesize="
                            .into(),
                    ))
                }
                Err(e) => return Err(err(format!("cannot be read: {e}"))),
            };
            let start = job.thread_offset(t);
            if len <= start {
                return Err(err(format!(
                    "has {len} bytes and the job starts at byte {start}: nothing says how \
                     much to use past its end; give size= or a smaller offset"
                )));
            }
            // Each thread's region is the same size in sluice: the smallest one.
            size = Some(size.map_or(len - start, |s: u64| s.min(len - start)));
        }
        if let Some(s) = size {
            job.size = s;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_workload::{parse_str, ParseOptions};

    fn jobs(text: &str) -> Vec<JobSpec> {
        parse_str(text, "t.fio", &ParseOptions::default())
            .unwrap()
            .jobs
    }

    #[test]
    fn an_existing_file_gives_its_size_and_a_new_one_needs_a_size() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("data"), vec![0u8; 8 << 20]).unwrap();
        // An existing file without size=: its own 8 MiB, less the offset.
        let j = resolve_sizes(
            &jobs("[r]\nfilename=data\nrw=read\n[s]\nfilename=data\noffset=1m\n"),
            d.path(),
        )
        .unwrap();
        assert_eq!((j[0].size, j[1].size), (8 << 20, 7 << 20));
        // A size given is kept.
        let j = resolve_sizes(&jobs("[r]\nfilename=data\nsize=1m\n"), d.path()).unwrap();
        assert_eq!(j[0].size, 1 << 20);
        // A new file without one is refused, naming the job, the file and the fix.
        let e = resolve_sizes(&jobs("[w]\nfilename=new\nrw=write\n"), d.path())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("'w'") && e.contains("new") && e.contains("size="),
            "{e}"
        );
        // An offset at or past the end is refused too.
        let e = resolve_sizes(&jobs("[r]\nfilename=data\noffset=8m\n"), d.path()).unwrap_err();
        assert!(e.to_string().contains("starts at byte 8388608"), "{e}");
        // A job without a size reading what a fill_device job fills is left to it.
        let j = resolve_sizes(
            &jobs("[f]\nfilename=fill\nrw=write\nfill_device=1\n[r]\nfilename=fill\nrw=read\n"),
            d.path(),
        )
        .unwrap();
        assert_eq!(j[1].size, jobs("[r]\n")[0].size);
    }
}
