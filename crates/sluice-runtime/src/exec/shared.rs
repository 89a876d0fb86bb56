//! What the cores share and what each thread keeps: the runtime's state under its one
//! mutex ([`Shared`], locked through [`InnerGuard`], which rings the doorbells of the
//! cores that got work when it is released), the generic wake list, and per thread:
//! the running stack, the task being polled, the thread's core and the futures of its
//! tasks (which need not be `Send`: they never leave the thread).

use std::cell::{Cell, RefCell};
use std::sync::{Arc, Mutex as StdMutex, MutexGuard};
use std::task::Wake;

use sluice_uring::Doorbell;

use super::{Inner, TaskFuture};

/// Generic wake-ups (a waker used by a future that is not the runtime's), and the
/// cores' doorbells (real world, several threads; empty otherwise).
#[derive(Debug, Default)]
pub(crate) struct WakeList {
    list: StdMutex<Vec<u32>>,
    pub bells: Vec<Doorbell>,
}

impl WakeList {
    pub(crate) fn new(bells: Vec<Doorbell>) -> WakeList {
        WakeList {
            list: StdMutex::new(Vec::new()),
            bells,
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.list
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_empty()
    }

    pub(crate) fn take(&self) -> Vec<u32> {
        std::mem::take(&mut *self.list.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

pub(super) struct TaskWaker {
    pub id: u32,
    pub core: u16,
    pub list: Arc<WakeList>,
}

impl Wake for TaskWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.list
            .list
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(self.id);
        // The task's own core, waking it from its own thread (a task of its round, or
        // a completion it reaps): it looks at this list in its next turn before it can
        // wait again, so no doorbell (an eventfd write, and a completion to re-arm).
        let own = MY_CORE.with(|m| m.get()) == self.core
            && CURRENT.with(|c| {
                c.borrow()
                    .as_ref()
                    .is_some_and(|sh| Arc::ptr_eq(&sh.wakes, &self.list))
            });
        if own {
            return;
        }
        if let Some(b) = self.list.bells.get(self.core as usize) {
            b.ring();
        }
    }
}

pub(crate) struct Shared {
    pub(super) inner: StdMutex<Inner>,
    pub wakes: Arc<WakeList>,
    /// The registered buffer pool (real world).
    pub pool: Option<Arc<crate::pool::BufferPool>>,
    /// Whether the stack has a page cache (fixed at build: read without the lock).
    pub has_cache: bool,
    /// Real world: the clock's origin (read without the lock); `None` in simulation.
    pub origin: Option<std::time::Instant>,
    /// Real world: `Inner::now` as of the last turn, for `now()` without the lock.
    pub now: std::sync::atomic::AtomicU64,
}

/// The runtime's state, locked by this thread; on release, the doorbells of the cores
/// that got work are rung (outside the lock).
pub(crate) struct InnerGuard<'a> {
    g: Option<MutexGuard<'a, Inner>>,
    bells: &'a [Doorbell],
}

impl std::ops::Deref for InnerGuard<'_> {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        self.g.as_ref().expect("held until dropped")
    }
}

impl std::ops::DerefMut for InnerGuard<'_> {
    fn deref_mut(&mut self) -> &mut Inner {
        self.g.as_mut().expect("held until dropped")
    }
}

impl Drop for InnerGuard<'_> {
    fn drop(&mut self) {
        let Some(mut g) = self.g.take() else { return };
        HELD.with(|h| h.set(false));
        if !g.kicked {
            return;
        }
        g.kicked = false;
        // At most one kick per core and turn: a fixed-size mask, no allocation.
        let mut ring = [0u64; 16];
        for (c, k) in g.kicks.iter_mut().enumerate() {
            if std::mem::take(k) {
                ring[c / 64] |= 1 << (c % 64);
            }
        }
        drop(g);
        let me = MY_CORE.with(|m| m.get());
        for (c, bell) in self.bells.iter().enumerate() {
            if ring[c / 64] & (1 << (c % 64)) != 0 && c != me as usize {
                bell.ring();
            }
        }
    }
}

impl Shared {
    /// Lock the runtime's state.
    pub(crate) fn lock(&self) -> InnerGuard<'_> {
        LOCKS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        HELD.with(|h| h.set(true));
        InnerGuard {
            g: Some(g),
            bells: &self.wakes.bells,
        }
    }
}

/// Times any stack of the process took its runtime's lock ([`crate::diag`]).
pub(crate) static LOCKS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// This thread's core in the real world with several threads; `ALL_CORES` otherwise
/// (one thread runs every core).
pub(crate) const ALL_CORES: u16 = u16::MAX;

thread_local! {
    pub(super) static CURRENT: RefCell<Option<Arc<Shared>>> = const { RefCell::new(None) };
    pub(super) static CUR_TASK: Cell<u32> = const { Cell::new(u32::MAX) };
    pub(crate) static MY_CORE: Cell<u16> = const { Cell::new(ALL_CORES) };
    /// This thread holds the runtime's lock.
    static HELD: Cell<bool> = const { Cell::new(false) };
    /// The futures of the tasks of this thread's core(s), by task id.
    static LOCAL: RefCell<Vec<Option<TaskFuture>>> = const { RefCell::new(Vec::new()) };
}

/// Keep task `t`'s future on this thread.
pub(crate) fn put_local(t: u32, fut: TaskFuture) {
    LOCAL.with(|l| {
        let mut l = l.borrow_mut();
        if l.len() <= t as usize {
            l.resize_with(t as usize + 1, || None);
        }
        l[t as usize] = Some(fut);
    });
}

/// Take task `t`'s future from this thread's table (to poll or drop it).
pub(crate) fn take_local(t: u32) -> Option<TaskFuture> {
    LOCAL.with(|l| l.borrow_mut().get_mut(t as usize).and_then(Option::take))
}

/// Every future of this thread's table (at shutdown).
pub(crate) fn take_all_local() -> Vec<(u32, TaskFuture)> {
    LOCAL.with(|l| {
        std::mem::take(&mut *l.borrow_mut())
            .into_iter()
            .enumerate()
            .filter_map(|(i, f)| f.map(|f| (i as u32, f)))
            .collect()
    })
}

/// Before a run on this thread: drop the futures an earlier run left in this thread's
/// table because it ended by a panic (with no runtime current, as they would have been
/// dropped with that run's state). Nothing is done while a run is current here.
pub(crate) fn discard_stale_futures() {
    if CURRENT.with(|c| c.borrow().is_some()) {
        return;
    }
    drop(take_all_local());
}

/// Make `sh` this thread's runtime, running core `core` (or [`ALL_CORES`]).
pub(crate) fn enter(sh: &Arc<Shared>, core: u16) {
    crate::io::batch::reset();
    CURRENT.with(|c| *c.borrow_mut() = Some(sh.clone()));
    MY_CORE.with(|m| m.set(core));
}

/// This thread runs no runtime any more.
pub(crate) fn leave() {
    crate::io::batch::reset();
    CURRENT.with(|c| *c.borrow_mut() = None);
    MY_CORE.with(|m| m.set(ALL_CORES));
}

/// Run `f` on the runtime of this thread and the task being polled.
///
/// # Panics
/// Outside a running [`crate::Stack`] (the runtime's functions are for its tasks).
pub(crate) fn with<R>(f: impl FnOnce(&mut Inner, u32) -> R) -> R {
    let sh = current_shared();
    let t = CUR_TASK.with(|c| c.get());
    let mut inner = sh.lock();
    flush_batch(&mut inner);
    f(&mut inner, t)
}

/// Real world: this thread's batch of I/O goes to the shared state first, so what is
/// read under the lock includes it (`io/batch.rs`).
fn flush_batch(inner: &mut Inner) {
    if crate::io::batch::dirty() {
        crate::io::batch::flush(inner);
    }
}

/// Like [`with`], but `None` when no runtime is running or this thread holds its lock
/// already (a guard dropped while the runtime shuts down).
/// Also `None` while the thread's storage is being torn down (a task future dropped
/// by it after a panic unwound past the stack).
pub(crate) fn try_with<R>(f: impl FnOnce(&mut Inner, u32) -> R) -> Option<R> {
    let sh = CURRENT.try_with(|c| c.borrow().clone()).ok().flatten()?;
    if HELD.try_with(|h| h.get()).unwrap_or(true) {
        return None;
    }
    let t = CUR_TASK.try_with(|c| c.get()).ok()?;
    let mut inner = sh.lock();
    flush_batch(&mut inner);
    Some(f(&mut inner, t))
}

/// Drop the futures of this thread's unfinished tasks with `sh` as its runtime and each
/// task as the current one (their destructors may release locks or cancel waits).
pub(crate) fn drop_tasks(sh: &Arc<Shared>, core: u16) {
    enter(sh, core);
    let futs = take_all_local();
    // Tasks spawned onto this core (or any, with one thread) that never ran: their
    // futures were never made; the closures go (outside the lock).
    let sent: Vec<_> = {
        let mut inner = sh.lock();
        if core != ALL_CORES {
            std::mem::take(&mut inner.inbox[core as usize])
        } else {
            inner.inbox.iter_mut().flat_map(|b| b.drain(..)).collect()
        }
    };
    drop(sent);
    for (t, f) in futs {
        CUR_TASK.with(|x| x.set(t));
        drop(f);
    }
    CUR_TASK.with(|x| x.set(u32::MAX));
    leave();
}

/// The registered buffer pool of this thread's running stack, if it has one.
pub(crate) fn current_pool() -> Option<Arc<crate::pool::BufferPool>> {
    CURRENT.with(|c| c.borrow().as_ref().and_then(|sh| sh.pool.clone()))
}

/// Whether this thread's running stack has a page cache (no lock taken: the direct
/// I/O path asks it on every read and write).
pub(crate) fn current_has_cache() -> bool {
    CURRENT.with(|c| c.borrow().as_ref().is_some_and(|sh| sh.has_cache))
}

/// Whether this thread runs a real stack (no lock taken: the I/O path asks it on every
/// submission).
pub(crate) fn current_is_real() -> bool {
    CURRENT.with(|c| c.borrow().as_ref().is_some_and(|sh| sh.origin.is_some()))
}

/// The task being polled on this thread.
pub(crate) fn current_task() -> u32 {
    CUR_TASK.with(|c| c.get())
}

/// This thread's core ([`ALL_CORES`] when one thread runs every core).
pub(crate) fn my_core() -> u16 {
    MY_CORE.with(|m| m.get())
}

/// Real world: nanoseconds since the stack started (the real port's clock), without
/// the lock.
pub(crate) fn real_clock() -> sluice_core::Nanos {
    CURRENT.with(|c| {
        c.borrow()
            .as_ref()
            .and_then(|sh| sh.origin)
            .map_or(0, |o| o.elapsed().as_nanos() as sluice_core::Nanos)
    })
}

/// Real world: `Inner::now`, the time of the last turn of any core (`now()` without
/// the lock); `None` in simulation.
pub(crate) fn real_now() -> Option<sluice_core::Nanos> {
    CURRENT.with(|c| {
        let c = c.borrow();
        let sh = c.as_ref()?;
        sh.origin?;
        Some(sh.now.load(std::sync::atomic::Ordering::Relaxed))
    })
}

/// The runtime of this thread, for spawning.
pub(crate) fn current_shared() -> Arc<Shared> {
    CURRENT.with(|c| c.borrow().clone()).unwrap_or_else(|| {
        panic!("sluice_runtime: called outside a running Stack (use Stack::run)")
    })
}
