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
