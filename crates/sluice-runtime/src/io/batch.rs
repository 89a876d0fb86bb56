//! Real backend: a core's I/O between two of its turns, without the runtime's lock.
//!
//! A task's `read_at`/`write_at`/`submit` on a real stack does not take the lock: the
//! I/O gets a slot from the core's stash (reserved under the lock at the core's turn)
//! and waits in the core's batch; a completed I/O is collected from the core's table
//! of results (written when the core handled the completion, in its turn). What needs
//! the shared state — the block layer's submission, the slot, the task as the I/O's
//! waiter, the report's sample, the slot's release — is done for the whole batch under
//! one lock: when the core's round of tasks ends (at its next turn), or earlier when a
//! task of the core takes the lock for anything else (`exec::with` flushes this
//! thread's batch first, so whatever a task reads under the lock already includes its
//! own I/O: a file's length after its write, the slot of `IoHandle::waiter`).
//!
//! A core's completions are always handled by that core (a request's pieces go to the
//! ring of the core it was issued from), and a task's futures never leave its core, so
//! an `IoHandle` is normally collected where its result was written; one moved to a
//! task of another core finds nothing in that core's table and takes the lock (the
//! slot keeps the result too). The simulator does not use any of this: its I/O is
//! submitted at once under the lock, as before.

use std::cell::RefCell;

use sluice_block::Finished;
use sluice_core::Op;
use sluice_metrics::Sample;

use super::file::{issue, Issue};
use crate::exec::Inner;

/// Slots a core keeps reserved (topped up at its turn).
const STASH: usize = 64;

/// An I/O waiting for the core's next flush.
#[derive(Debug)]
struct Pending {
    task: u32,
    slot: u32,
    issue: Issue,
}

/// A completed I/O, as its handle collects it without the lock.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ready {
    pub gen: u32,
    /// The block layer's result (`None`: the I/O was refused at the flush; the handle
    /// takes the lock for its error).
    pub done: Option<Finished>,
    /// Bytes transferred (a failed I/O: the kernel's errno, 0 when unknown).
    pub n: usize,
    pub op: Op,
    pub len: u32,
    pub job: usize,
}

/// A result collected without the lock: its slot to release, its sample to record.
#[derive(Debug)]
struct Collected {
    task: u32,
    slot: u32,
    sample: Sample,
}

#[derive(Debug)]
struct Batch {
    pending: Vec<Pending>,
    /// Reserved slots with their generation.
    stash: Vec<(u32, u32)>,
    /// By slot: the result of a completed I/O of this core, until collected.
    ready: Vec<Option<Ready>>,
    collected: Vec<Collected>,
}

thread_local! {
    static BATCH: RefCell<Batch> = const {
        RefCell::new(Batch {
            pending: Vec::new(),
            stash: Vec::new(),
            ready: Vec::new(),
            collected: Vec::new(),
        })
    };
}

/// Forget this thread's batch (a stack starts or ends on this thread: reserved slots
/// and results belong to the stack that made them).
pub(crate) fn reset() {
    BATCH.with(|b| {
        let mut b = b.borrow_mut();
        b.pending.clear();
        b.stash.clear();
        b.ready.clear();
        b.collected.clear();
    });
}

/// Whether this thread's batch has something for the shared state (false once the
/// thread's storage is being torn down: a task future dropped then, after a panic
/// unwound past its stack, has nothing left to hand over).
pub(crate) fn dirty() -> bool {
    BATCH
        .try_with(|b| {
            let b = b.borrow();
            !b.pending.is_empty() || !b.collected.is_empty()
        })
        .unwrap_or(false)
}

/// A reserved slot `(slot, generation)` for a new I/O, if the stash has one.
pub(crate) fn take_slot() -> Option<(u32, u32)> {
    BATCH.with(|b| b.borrow_mut().stash.pop())
}

/// Top this thread's stash of reserved slots up (under the lock).
pub(crate) fn reserve(inner: &mut Inner) {
    BATCH.with(|b| {
        let mut b = b.borrow_mut();
        while b.stash.len() < STASH {
            let s = inner.io.alloc_slot();
            b.stash.push((s, inner.io.slots[s as usize].gen));
        }
    });
}

/// Queue I/O `issue` of task `task` in slot `slot` for the next flush.
pub(super) fn push(task: u32, slot: u32, issue: Issue) {
    BATCH.with(|b| b.borrow_mut().pending.push(Pending { task, slot, issue }));
}

/// The core completed the I/O of slot `slot` (under the lock, in its turn).
pub(super) fn set_ready(slot: u32, r: Ready) {
    BATCH.with(|b| {
        let mut b = b.borrow_mut();
        let i = slot as usize;
        if b.ready.len() <= i {
            b.ready.resize(i + 1, None);
        }
        b.ready[i] = Some(r);
    });
}

/// The result of slot `slot`, generation `gen`, if this core has it (taken).
pub(super) fn take_ready(slot: u32, gen: u32) -> Option<Ready> {
    BATCH.with(|b| {
        let mut b = b.borrow_mut();
        let e = b.ready.get_mut(slot as usize)?;
        if e.is_some_and(|r| r.gen == gen) {
            e.take()
        } else {
            None
        }
    })
}

/// A result collected without the lock: the slot is released and the sample recorded
/// at the next flush.
pub(super) fn collected(task: u32, slot: u32, sample: Sample) {
    BATCH.with(|b| {
        b.borrow_mut()
            .collected
            .push(Collected { task, slot, sample });
    });
}

/// Apply this thread's batch to the shared state (under the lock): results collected
/// (the task stops waiting on its I/O, the sample is recorded, the slot released), then
/// new I/O in order (submitted to the block layer, its task made its waiter).
pub(crate) fn flush(inner: &mut Inner) {
    let (mut pending, mut collected) = BATCH.with(|b| {
        let mut b = b.borrow_mut();
        (
            std::mem::take(&mut b.pending),
            std::mem::take(&mut b.collected),
        )
    });
    for c in collected.drain(..) {
        inner.unblock(c.task);
        inner.io.collector.record(&c.sample);
        inner.io.release(c.slot);
    }
    for p in pending.drain(..) {
        if let Err((e, _)) = issue(inner, p.task, Some(p.slot), &p.issue, None) {
            // Refused (a closed file, a write to a read-only one): the slot holds the
            // error for the handle, and an awaiting task is woken to take it.
            let gen = inner.io.refuse(p.slot, p.task, e);
            set_ready(
                p.slot,
                Ready {
                    gen,
                    done: None,
                    n: 0,
                    op: p.issue.op,
                    len: 0,
                    job: 0,
                },
            );
            if p.issue.awaited {
                inner.wake(p.task);
            }
        }
    }
    // The vectors go back (their capacity kept: no allocation per batch).
    BATCH.with(|b| {
        let mut b = b.borrow_mut();
        if b.pending.is_empty() {
            b.pending = pending;
        }
        if b.collected.is_empty() {
            b.collected = collected;
        }
    });
}
