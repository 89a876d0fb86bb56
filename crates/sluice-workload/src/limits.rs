//! The largest runs sluice accepts, checked before anything is allocated (docs/limits.md
//! states them with the memory each unit costs).

use crate::JobSpec;

/// Most job threads over all jobs (Σ `numjobs`).
pub const MAX_THREADS: u64 = 65_535;

/// Most requests in flight over all jobs (Σ `numjobs × iodepth`). Each costs the
/// simulator about 250 bytes while outstanding (block-layer request and piece records,
/// the device's command slot, event-queue entries), so the limit bounds that state to
/// about 256 MiB; the real engine adds a buffer of the job's largest block per unit.
pub const MAX_INFLIGHT: u64 = 1 << 20;

/// Most check intervals in a steady-state window (`ss_dur / ss_interval`): a job's
/// window keeps one rate per interval (8 bytes), grown as the intervals pass, so a
/// window holds at most 8 MiB per thread (fio's `ss_dur` is in seconds: at the default
/// 1 s interval, the limit is 12 days).
pub const MAX_STEADY_INTERVALS: u64 = 1 << 20;

/// The largest job file (and included file) sluice reads: 16 MiB. A job file is text
/// of a few kilobytes; this bounds what a wrong path (`include /dev/zero`, a disk
/// image) costs before it is refused.
pub const MAX_JOB_FILE_BYTES: u64 = 16 << 20;

/// Read the text file `path`, at most [`MAX_JOB_FILE_BYTES`]: a larger one (or an
/// endless one, a device) is an error saying so, read no further than the limit.
pub fn read_text(path: &std::path::Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut f = std::fs::File::open(path)?;
    if f.metadata()?.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "is a directory; give a job file",
        ));
    }
    let mut bytes = Vec::new();
    (&mut f)
        .take(MAX_JOB_FILE_BYTES + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_JOB_FILE_BYTES {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "is larger than {} MiB, the most sluice reads of a job file: give the job \
                 file (text), not a device or a data file",
                MAX_JOB_FILE_BYTES >> 20
            ),
        ));
    }
    String::from_utf8(bytes).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "is not UTF-8 text; give the job file",
        )
    })
}

/// A run too large to start.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum LimitError {
    /// Too many threads.
    #[error("the jobs ask for {total} threads (Σ numjobs); the limit is {limit}: lower numjobs")]
    Threads {
        /// Σ numjobs.
        total: u64,
        /// [`MAX_THREADS`].
        limit: u64,
    },
    /// Too many requests in flight.
    #[error(
        "the jobs ask for {total} requests in flight (Σ numjobs × iodepth; job '{job}' \
         alone {job_total}); the limit is {limit} (about 250 bytes of state each): lower \
         iodepth or numjobs"
    )]
    Inflight {
        /// Σ numjobs × iodepth.
        total: u64,
        /// The largest contributor.
        job: String,
        /// Its numjobs × iodepth.
        job_total: u64,
        /// [`MAX_INFLIGHT`].
        limit: u64,
    },
}

/// Check `jobs` against [`MAX_THREADS`] and [`MAX_INFLIGHT`].
pub fn check_limits(jobs: &[JobSpec]) -> Result<(), LimitError> {
    let threads: u64 = jobs.iter().map(|j| j.numjobs as u64).sum();
    if threads > MAX_THREADS {
        return Err(LimitError::Threads {
            total: threads,
            limit: MAX_THREADS,
        });
    }
    let per_job = |j: &JobSpec| j.numjobs as u64 * j.iodepth.max(1) as u64;
    let total: u64 = jobs.iter().map(per_job).sum();
    if total > MAX_INFLIGHT {
        let big = jobs.iter().max_by_key(|j| per_job(j)).expect("non-empty");
        return Err(LimitError::Inflight {
            total,
            job: big.name.clone(),
            job_total: per_job(big),
            limit: MAX_INFLIGHT,
        });
    }
    Ok(())
}
