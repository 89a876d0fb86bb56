//! A byte-range lock whose holders inherit the class of a critical waiter (RCP, FAST '17
//! §4.2.1: "a lock holder inherits the critical class of a critical waiter until it
//! unlocks"), for a file system's ranges of a file.
//!
//! Each held range records its holder task; a task whose range overlaps held ones waits
//! with the edge [`Dep::Range`], which the dependency walk ([`crate::deps`]) follows to
//! the holders of the overlapping ranges only — not to every holder of the file. A holder
//! reached from a critical task is boosted: its requests already queued in the block
//! layer are promoted (`Policy::promote`, RCP §4.2.2, counted as the report's
//! `inherited_promotions`), the I/O it issues while boosted is critical, and the boost
//! ends at the walk after it releases the range (what was promoted stays critical). The
//! walk goes on from a boosted holder that itself waits (on another range, a page under
//! writeback, its own I/O) as for every edge.
//!
//! A released range wakes the waiters whose ranges overlap it; each looks again (a
//! range free when it looks is taken at once: no queue order among waiters).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::task::{Context, Poll};

use super::{unregistered, UNREGISTERED, UNREGISTERED_STACK};
use crate::deps::{Dep, RangeState};
use crate::exec::{self, with, Inner};

/// Byte ranges of one object (a file), each held by one task at a time; overlapping
/// ranges wait their turn. Share it with `Arc` across the cores of a real stack.
///
/// ```
/// use std::rc::Rc;
/// use sluice_runtime::{spawn, RangeLock, Stack, TaskCtx};
/// Stack::builder().build().unwrap().run(|| async {
///     let l = Rc::new(RangeLock::new_stack_level());
///     let a = l.lock(0, 4096).await;
///     let b = l.lock(4096, 8192).await; // disjoint: both held
///     drop((a, b));
/// }).unwrap();
/// ```
#[derive(Debug)]
pub struct RangeLock {
    id: AtomicU32,
    name: &'static str,
}

impl Default for RangeLock {
    /// [`RangeLock::new`].
    fn default() -> RangeLock {
        RangeLock::new()
    }
}

impl RangeLock {
    /// A new range lock of the application (inheritance through it at
    /// [`crate::Inherit::user`]).
    pub fn new() -> RangeLock {
        RangeLock {
            id: AtomicU32::new(UNREGISTERED),
            name: "",
        }
    }

    /// A new range lock of the I/O stack itself (a file system's ranges of a file):
    /// inheritance through it is RCP's kernel-level dependency handling
    /// ([`crate::Inherit::stack`]).
    pub fn new_stack_level() -> RangeLock {
        RangeLock {
            id: AtomicU32::new(UNREGISTERED_STACK),
            name: "",
        }
    }

    /// This lock, named `name` in the report's table of where critical tasks waited.
    pub fn named(mut self, name: &'static str) -> RangeLock {
        self.name = name;
        self
    }

    /// Wait for `[start, end)` and hold it until the guard is dropped.
    pub fn lock(&self, start: u64, end: u64) -> RangeAcquire<'_> {
        RangeAcquire {
            l: self,
            start,
            end,
            done: false,
            queued: false,
        }
    }

    /// How many ranges are held now (the tasks holding them, with repeats).
    pub fn held(&self) -> usize {
        self.with_state(|rs| rs.held.len())
    }

    /// How many tasks wait for a range now.
    pub fn waiting(&self) -> usize {
        self.with_state(|rs| rs.waiters.len())
    }

    fn with_state<R>(&self, f: impl FnOnce(&RangeState) -> R) -> R {
        with(|inner, _| {
            let r = self.id(inner);
            f(&inner.deps.ranges[r as usize])
        })
    }

    /// Its index in the runtime's table (registered at first use, reusing a dropped
    /// lock's entry).
    fn id(&self, inner: &mut Inner) -> u32 {
        if let Some(stack) = unregistered(&self.id) {
            let st = RangeState {
                stack,
                name: self.name,
                ..RangeState::default()
            };
            let r = match inner.deps.free_ranges.pop() {
                Some(r) => {
                    inner.deps.ranges[r as usize] = st;
                    r
                }
                None => {
                    inner.deps.ranges.push(st);
                    inner.deps.ranges.len() as u32 - 1
                }
            };
            self.id.store(r, Relaxed);
        }
        self.id.load(Relaxed)
    }
}

impl Drop for RangeLock {
    fn drop(&mut self) {
        if unregistered(&self.id).is_some() {
            return;
        }
        let r = self.id.load(Relaxed);
        // Outside the runtime (dropped after the stack stopped) the entry is not
        // reused: nothing else refers to it.
        exec::try_with(|inner, _| {
            if let Some(rs) = inner.deps.ranges.get_mut(r as usize) {
                *rs = RangeState::default();
                inner.deps.free_ranges.push(r);
            }
        });
    }
}

/// The future of [`RangeLock::lock`].
#[derive(Debug)]
pub struct RangeAcquire<'a> {
    l: &'a RangeLock,
    start: u64,
    end: u64,
    done: bool,
    queued: bool,
}

impl<'a> Future for RangeAcquire<'a> {
    type Output = RangeGuard<'a>;
    fn poll(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<RangeGuard<'a>> {
        let (l, s, e) = (self.l, self.start, self.end);
        let got = with(|inner, t| {
            let r = l.id(inner);
            let rs = &mut inner.deps.ranges[r as usize];
            if rs.held.iter().any(|h| h.0 < e && s < h.1) {
                if !rs.waiters.iter().any(|w| w.0 == t) {
                    rs.waiters.push((t, s, e));
                }
                inner.block_on(t, Dep::Range(r));
                // The holders may have changed since the last look: walk again.
                inner.deps.dirty = true;
                return None;
            }
            rs.waiters.retain(|w| w.0 != t);
            let id = rs.next;
            rs.next += 1;
            rs.held.push((s, e, t, id));
            inner.deps.dirty = true;
            inner.unblock(t);
            Some(id)
        });
        match got {
            Some(id) => {
                self.done = true;
                Poll::Ready(RangeGuard { l, id })
            }
            None => {
                self.queued = true;
                Poll::Pending
            }
        }
    }
}

impl Drop for RangeAcquire<'_> {
    fn drop(&mut self) {
        if self.done || !self.queued {
            return;
        }
        // Cancelled while waiting: leave the waiters.
        let r = self.l.id.load(Relaxed);
        exec::try_with(|inner, t| {
            if let Some(rs) = inner.deps.ranges.get_mut(r as usize) {
                rs.waiters.retain(|w| w.0 != t);
                inner.unblock(t);
            }
        });
    }
}

/// A held range of a [`RangeLock`]; dropping it ends the holder's inherited boost (at
/// the next walk) and wakes the waiters of overlapping ranges.
#[derive(Debug)]
pub struct RangeGuard<'a> {
    l: &'a RangeLock,
    id: u64,
}

impl Drop for RangeGuard<'_> {
    fn drop(&mut self) {
        let (r, id) = (self.l.id.load(Relaxed), self.id);
        exec::try_with(|inner, _| {
            let Some(rs) = inner.deps.ranges.get_mut(r as usize) else {
                return;
            };
            let Some(i) = rs.held.iter().position(|h| h.3 == id) else {
                return;
            };
            let (s, e, _, _) = rs.held.swap_remove(i);
            inner.deps.dirty = true;
            let woken: Vec<u32> = rs
                .waiters
                .iter()
                .filter(|w| w.1 < e && s < w.2)
                .map(|w| w.0)
                .collect();
            for w in woken {
                inner.wake(w);
            }
        });
    }
}
