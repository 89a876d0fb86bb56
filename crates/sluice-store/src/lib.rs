//! # sluice-store — a journaled file store
//!
//! A small file store with its own layout ([`layout`]) on one runtime [`File`] (a file
//! of the stack, on the simulated SSD or on a real disk), with ordered-mode semantics:
//! a file's data reaches the device before the transaction that makes it reachable
//! commits. Two ways to make a file durable:
//!
//! * **compound** commit (jbd2-like): one running transaction holds every file's
//!   metadata changes; a journal task commits it (descriptor, metadata blocks, commit
//!   block, then one FLUSH — single-flush commits, below) and an `fsync` waits for the
//!   whole transaction, including the other files' ordered data;
//! * **fjournal** (FastResponse, ICS '22 §3.4): the fsyncing task commits an
//!   f-transaction holding only its file's inode and indirect block, in a separate
//!   area (header with F_entries and block tags, metadata blocks, commit block); the
//!   normal journal commits the same blocks again later. Recovery redoes the normal
//!   transactions, then the f-transactions whose id is above the last normal one, in
//!   order, and rebuilds the block bitmap from the inodes.
//!
//! Blocks and inode numbers freed by a transaction are not reused until it commits, so
//! an f-transaction never makes a block reachable from two files after a crash (a freed
//! indirect block not until the next checkpoint, so no replay writes its old image
//! over a new owner). Files can be truncated; `fdatasync` skips the commit when only
//! the change counter moved. Journal blocks are checksummed (crc32c) and damage is
//! reported at mount, never replayed; inodes and directory entries carry their own
//! crc32c at home, and mount refuses a store with a damaged one, naming it.
//!
//! A commit's data, journal blocks and commit record go out before one FLUSH
//! ([`journal::Claims`]): its records carry data tags (crc32c of the new blocks they make
//! readable) and what was durable when they were written; recovery drops a last,
//! unclaimed record whose body or data the crash cut, and a block such a record vouches
//! for moves to a new block when a write grows the file over it, or is sealed (the
//! claims made durable) before it is written again.
//!
//! Applications use [`Fs`]: the runtime `File`'s API over either the stack's own files
//! or a store's, chosen by one setting ([`FsConfig`]). [`crashtest`] is the seeded
//! crash-and-recover harness the tests and `sluice crashtest` run.
//! Every journal I/O carries the class of the task that issues it (the fsyncing task's
//! in fjournal; the journal task's — inherited from a critical fsync waiter through
//! the commit condition — in compound).

#![warn(missing_docs, missing_debug_implementations)]

pub mod crashtest;
pub mod fio;
pub mod fs;
pub mod journal;
pub mod layout;
mod recover;
mod store;

pub use fs::{Fs, FsConfig, FsFile};
pub use layout::Geometry;
pub use store::{
    CommitMode, FileStat, FsyncBreakdown, FsyncPath, Inspection, Store, StoreError, StoreFile,
    StoreStats, INLINE_BLOCKS, SLOWEST_KEPT,
};
