//! fio's `atomic=1`: the job's writes are atomic (untorn) writes — Linux's
//! `RWF_ATOMIC` per write (`REQ_ATOMIC` in the block layer), an NVMe write within the
//! namespace's atomic write unit (AWUPF/NAWUPF). A write either reaches the media whole
//! or not at all, also across a power failure.
//!
//! Linux's rules for an `RWF_ATOMIC` write (`generic_atomic_write_valid`), which fio's
//! `atomic=1` jobs must meet, are checked in two places:
//!
//! - the job file alone ([`check_job`], when the job is parsed): direct I/O; every
//!   write size a power of two; every write naturally aligned (its offset a multiple of
//!   its size) — the job's `offset`, `offset_increment`, `blockalign`, a sequential
//!   `:N` modifier and the files' sizes must keep it so;
//! - the world's limits ([`AtomicLimits::check`], when the world is set up): every
//!   write size within the device's or file's atomic write unit `[min, max]`
//!   (`statx`'s `stx_atomic_write_unit_min`/`_max` under `sluice run`, the simulated
//!   profile's `atomic_write_bytes` under `sluice sim`).

use crate::job::{BlockSize, JobSpec, RwModifier};
use crate::units::show_size;

/// The write sizes of `job` that an atomic job issues (each `bssplit` entry, or the
/// one `bs`), smallest first.
pub fn atomic_write_sizes(job: &JobSpec) -> Vec<u32> {
    let mut v: Vec<u32> = match &job.bs.write {
        BlockSize::Fixed(n) => vec![*n],
        BlockSize::Split(t) => t.iter().map(|e| e.len).collect(),
    };
    v.sort_unstable();
    v.dedup();
    v
}

/// Why an `atomic=1` job cannot be run as written (device-independent rules); `None`
/// when it can. The message names the job and the size at fault.
pub fn check_job(job: &JobSpec) -> Option<String> {
    if !job.atomic || !job.rw.writes() {
        return None;
    }
    let name = &job.name;
    if job.buffered {
        return Some(format!(
            "job '{name}' has atomic=1 and buffered I/O (direct=0 or buffered=1): atomic \
             writes are direct I/O (RWF_ATOMIC is refused on buffered writes); set direct=1"
        ));
    }
    let sizes = atomic_write_sizes(job);
    if let Some(&bad) = sizes.iter().find(|s| !s.is_power_of_two()) {
        return Some(format!(
            "job '{name}' has atomic=1 with a write size of {} ({bad} bytes), which is not a \
             power of two; an atomic write's size must be (e.g. bs=4k, 8k, 16k)",
            show_size(bad as u64)
        ));
    }
    let max = *sizes.last().unwrap_or(&0) as u64;
    if max == 0 {
        return None;
    }
    // Natural alignment: a write's offset is a multiple of its size. Offsets start at
    // the thread's offset (plus each file's start) and move by the sizes, blockalign or
    // a `:N` modifier.
    let misaligned = |what: &str, v: u64| {
        Some(format!(
            "job '{name}' has atomic=1 with {what} = {}, not a multiple of its write size {}: \
             an atomic write must be naturally aligned (its offset a multiple of its size)",
            show_size(v),
            show_size(max)
        ))
    };
    if !job.offset.is_multiple_of(max) {
        return misaligned("offset", job.offset);
    }
    if job.numjobs > 1 && !job.offset_increment.is_multiple_of(max) {
        return misaligned("offset_increment", job.offset_increment);
    }
    let align = job.blockalign[1] as u64;
    if align > 0 && !align.is_multiple_of(max) {
        return misaligned("blockalign (for writes)", align);
    }
    if job.nrfiles > 1 {
        let file = job.size / job.nrfiles as u64;
        if !file.is_multiple_of(max) {
            return misaligned("the file size (size / nrfiles)", file);
        }
    }
    if let RwModifier::SeqAdd(n) = job.rw_modifier {
        if !n.unsigned_abs().is_multiple_of(max) {
            return misaligned("the rw modifier ':N'", n.unsigned_abs());
        }
    }
    let sequential = !job.rw.is_random()
        || job.percentage_random[1] < 100
        || matches!(job.rw_modifier, RwModifier::RandEvery(_));
    if sizes.len() > 1 && sequential {
        return Some(format!(
            "job '{name}' has atomic=1 with several write sizes ({}) and sequential writes: \
             a write following a smaller one would not be aligned to its size; give one bs, \
             or random writes (rw=randwrite) whose offsets align to each size",
            sizes
                .iter()
                .map(|&s| show_size(s as u64))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    None
}

/// The atomic write unit of a device or file: the sizes an atomic write may have
/// (Linux's `atomic_write_unit_min_bytes`/`_max_bytes`, `statx`'s
/// `stx_atomic_write_unit_min`/`_max`; NVMe's AWUPF/NAWUPF + 1 logical blocks for the
/// maximum). `max == 0`: no atomic writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AtomicLimits {
    /// Smallest atomic write, bytes.
    pub min: u32,
    /// Largest atomic write, bytes (0: none supported).
    pub max: u32,
}

impl AtomicLimits {
    /// Whether `job`'s atomic writes fit these limits; the error names the job, the
    /// size at fault and the limit, `what` the device or file they belong to.
    pub fn check(&self, job: &JobSpec, what: &str) -> Result<(), String> {
        if !job.atomic || !job.rw.writes() {
            return Ok(());
        }
        let name = &job.name;
        if self.max == 0 {
            return Err(format!(
                "job '{name}' has atomic=1, but {what} does not support atomic writes \
                 (atomic write unit max 0: no torn-write protection); run it on a device or \
                 file system that has it, or remove atomic=1"
            ));
        }
        for s in atomic_write_sizes(job) {
            if s > self.max || s < self.min {
                return Err(format!(
                    "job '{name}' has atomic=1 with a write size of {}, outside the atomic \
                     write unit of {what}, {}..{}; use a bs within it",
                    show_size(s as u64),
                    show_size(self.min as u64),
                    show_size(self.max as u64)
                ));
            }
        }
        Ok(())
    }
}
