//! fio's `fill_device` (`fill_fs`), in every world: a job with it has a file that
//! reaches to the end of the space there is, and ends there, as fio's ends at ENOSPC
//! or EDQUOT ("sets size to something really large and waits for ENOSPC … as the
//! terminating condition", fio's HOWTO) — without an error.
//!
//! Before a run the world says how many bytes each file that a `fill_device` job uses
//! can hold (the simulator: from the file's base to the device's capacity; `sluice
//! run`: the file system's free space, or a block device's size), and [`resolve`]
//! gives the jobs their sizes:
//! * a `fill_device` job's region ends at the room, floored to its largest block:
//!   `size = ⌊room / bs_max⌋ · bs_max − thread_offset(numjobs − 1)`; it writes once
//!   (`loops = 1`, no `io_size`, not `time_based`: at ENOSPC fio's job is over);
//! * another job on that file that gave no `size` reads (or writes) what the filling
//!   job wrote — fio's job without a size takes the file's size (surface-scan.fio's
//!   verify phase).
//!
//! Under `sluice run` the file system may say ENOSPC before that end (its metadata);
//! the runner then ends the job there, without an error ([`is_fill_end`]).

use sluice_workload::JobSpec;

use crate::plan::{AddressPlan, PlannedFile};

/// Linux's ENOSPC: no space left on the device.
pub const ENOSPC: i32 = 28;
/// Linux's EDQUOT: the disk quota is exceeded.
pub const EDQUOT: i32 = 122;

/// Whether a write that failed with `errno` (positive) ends a `fill_device` job as
/// fio's: at ENOSPC or EDQUOT, the job is over and the error is not one.
pub fn is_fill_end(errno: i32) -> bool {
    errno == ENOSPC || errno == EDQUOT
}

/// Why the jobs cannot fill their device.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("job '{job}' has fill_device=1, but {reason}")]
pub struct FillError {
    /// The `fill_device` job.
    pub job: String,
    /// What is wrong, and how to fix it.
    pub reason: String,
}

/// The jobs with `fill_device` resolved, or `None` when no job has it (the jobs run
/// as they are). `key` names each thread's file as for [`AddressPlan::new`]; `room`
/// says how many bytes a file that a `fill_device` job uses can hold (or why it holds
/// none).
pub fn resolve<K: Ord + Clone>(
    jobs: &[JobSpec],
    key: impl FnMut(usize, u32) -> K,
    mut room: impl FnMut(&PlannedFile<K>) -> Result<u64, String>,
) -> Result<Option<Vec<JobSpec>>, FillError> {
    if !jobs.iter().any(|j| j.fill_device) {
        return Ok(None);
    }
    let plan = AddressPlan::new(jobs, key);
    let mut out = jobs.to_vec();
    for f in &plan.files {
        let Some(&filler) = f.users.iter().find(|&&u| jobs[u].fill_device) else {
            continue;
        };
        let err = |reason: String| FillError {
            job: jobs[filler].name.clone(),
            reason,
        };
        let bytes = room(f).map_err(err)?;
        // The filling job's largest block: its last I/O fits whole.
        let fj = &jobs[filler];
        let unit = [fj.bs.read.max_len(), fj.bs.write.max_len()]
            .into_iter()
            .max()
            .unwrap_or(4096)
            .max(1) as u64;
        let end = bytes / unit * unit;
        for &u in &f.users {
            let job = &mut out[u];
            if !job.fill_device && job.size_given {
                continue;
            }
            let start = job.thread_offset(job.numjobs.max(1) - 1);
            let size = end.saturating_sub(start);
            if size < unit {
                return Err(err(format!(
                    "its file has room for {bytes} bytes, and job '{}' starts at byte {start}: \
                     no whole block of {unit} bytes fits; free some space or give a smaller offset",
                    job.name
                )));
            }
            job.size = size;
            if job.fill_device {
                job.io_size = None;
                job.loops = 1;
                job.time_based = false;
            }
        }
    }
    Ok(Some(out))
}

/// After [`resolve`], on one device of `capacity` bytes (the simulator's): every file
/// of `plan` must end within it — a file laid out after a filled one would lie past
/// the device's end.
pub fn check_within<K>(
    jobs: &[JobSpec],
    plan: &AddressPlan<K>,
    capacity: u64,
) -> Result<(), FillError> {
    let Some(filler) = jobs.iter().find(|j| j.fill_device) else {
        return Ok(());
    };
    match plan
        .files
        .iter()
        .find(|f| f.base.saturating_add(f.size) > capacity)
    {
        None => Ok(()),
        Some(f) => Err(FillError {
            job: filler.name.clone(),
            reason: format!(
                "job '{}' uses a file that would lie past the end of the {capacity}-byte device \
                 it fills; give the jobs one filename (filename=) or run the filling job alone",
                jobs[f.users[0]].name
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_workload::{parse_str, ParseOptions};

    fn jobs(text: &str) -> Vec<JobSpec> {
        parse_str(text, "test", &ParseOptions::default())
            .expect("a valid job file")
            .jobs
    }

    fn by_name(j: &[JobSpec]) -> impl FnMut(usize, u32) -> String + '_ {
        |k, t| match &j[k].filename {
            Some(n) => n.clone(),
            None => format!("\u{0}{k}.{t}"),
        }
    }

    #[test]
    fn no_filling_job_changes_nothing() {
        let j = jobs("[a]\nrw=write\nsize=1m\n");
        assert_eq!(resolve(&j, by_name(&j), |_| Ok(1 << 20)), Ok(None));
    }

    #[test]
    fn fills_to_the_room_and_a_sizeless_reader_follows() {
        let j = jobs(
            "[w]\nrw=write\nbs=64k\nfill_fs=1\nfilename=d\nloops=3\n\
             [r]\nstonewall\nrw=read\nfilename=d\n[s]\nstonewall\nrw=read\nfilename=d\nsize=64k\n",
        );
        let out = resolve(&j, by_name(&j), |f| Ok((10 << 20) + 4096 - f.base))
            .unwrap()
            .unwrap();
        // Floored to the 64 KiB block: the partial block at the end is not written.
        assert_eq!(out[0].size, 10 << 20);
        assert_eq!(out[0].loops, 1);
        assert!(out[0].fill_device);
        assert_eq!(
            out[1].size,
            10 << 20,
            "the reader without a size reads it all"
        );
        assert_eq!(out[2].size, 64 << 10, "a given size is kept");
    }

    #[test]
    fn no_room_is_a_clear_error() {
        let j = jobs("[w]\nrw=write\nfill_device=1\noffset=1m\n");
        let e = resolve(&j, by_name(&j), |_| Ok(1 << 20)).unwrap_err();
        assert!(e.to_string().contains("no whole block"), "{e}");
        let e = resolve(&j, by_name(&j), |_| Err("the device is full".into())).unwrap_err();
        assert_eq!(
            e.to_string(),
            "job 'w' has fill_device=1, but the device is full"
        );
    }

    #[test]
    fn a_file_past_the_filled_end_is_refused() {
        let j = jobs("[w]\nrw=write\nfill_device=1\n[x]\nrw=read\nsize=1m\n");
        let out = resolve(&j, by_name(&j), |f| Ok((8 << 20) - f.base))
            .unwrap()
            .unwrap();
        let plan = AddressPlan::new(&out, by_name(&out));
        let e = check_within(&out, &plan, 8 << 20).unwrap_err();
        assert!(e.to_string().contains("job 'x'"), "{e}");
    }

    #[test]
    fn enospc_and_edquot_end_a_fill() {
        assert!(is_fill_end(ENOSPC) && is_fill_end(EDQUOT) && !is_fill_end(5));
    }
}
