//! # sluice-apps — applications for the whole-stack experiments
//!
//! Programs written against sluice's public runtime API ([`sluice_runtime`]) that stand
//! in for the applications of the papers' whole-stack results, so that the same code
//! runs in the deterministic simulation and on real files:
//!
//! * [`oltp`]: RCP's PostgreSQL under TPC-C (FAST '17 §6–7.2): clients running
//!   transactions with buffer locks, reads through the page cache, a WAL appended under
//!   a lock and made durable by a WAL writer with group commit, and a checkpointer that
//!   writes the dirty pages out and fsyncs them every interval.
//! * [`fillsync`]: FastResponse's RocksDB fillsync beside HiBench co-runners (ICS '22
//!   §4.2, Fig. 13, Table 1) on the journaled store: puts appended and fsynced at a
//!   fixed rate, compound vs file-level journaling, with the Limited-Depth scheduler
//!   and critical wakeup.
//! * [`writefsync`]: FIO-like 4 KiB random write + fsync at 1 to N threads on the
//!   journaled store, the synchronous vs AIOS's asynchronous fsync path (ATC '19 §3.3,
//!   Fig. 11).
//! * [`readrand`]: FIO-like buffered random reads of 4 to 128 KiB, one thread, through
//!   the page cache: Linux's read path against AIOS's (ATC '19 §3.2, Fig. 8).
//! * [`varmail`]: Filebench's varmail (a mail server: small files created, appended,
//!   fsynced, read and deleted by 1 to N threads), which AIOS (Fig. 17) and FastResponse
//!   report, on the store or the stack's own files.

#![warn(missing_docs)]

pub mod fillsync;
pub mod oltp;
pub mod readcorun;
pub mod readrand;
pub mod varmail;
pub mod writefsync;

/// xorshift64*: the applications' deterministic choices (pages, offsets, gaps), one
/// stream per task, from a seed-derived state.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Xorshift(u64);

impl Xorshift {
    /// A stream starting from `state` (not 0).
    pub(crate) fn new(state: u64) -> Xorshift {
        Xorshift(state)
    }

    /// A stream for seed `seed`: the seed spread by the golden-ratio constant, made odd
    /// (never the all-zero state).
    pub(crate) fn from_seed(seed: u64) -> Xorshift {
        Xorshift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// The next 64-bit value.
    pub(crate) fn next(&mut self) -> u64 {
        let x = &mut self.0;
        *x ^= *x >> 12;
        *x ^= *x << 25;
        *x ^= *x >> 27;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

/// The value at percentile `p` (0–100) of `sorted` (nearest rank); 0 when empty.
pub(crate) fn percentile(sorted: &[u64], p: f64) -> u64 {
    let n = sorted.len();
    if n == 0 {
        return 0;
    }
    let rank = ((p / 100.0) * n as f64).ceil() as usize;
    sorted[rank.clamp(1, n) - 1]
}
