//! Locks and condition variables that know their holders, waiters and helpers, so the
//! runtime can pass a critical waiter's class to whoever it waits on (RCP's I/O
//! priority inheritance, FAST '17 §4.2.1; see [`crate::deps`] for the walk).
//!
//! They are for the tasks of one [`crate::Stack`], on any of its cores: share them with
//! `Rc` among the tasks of one core, with `Arc` across the cores of a real stack (they
//! are `Send` and `Sync`; their state lives in the runtime's shared dependency table,
//! under its lock, so a critical task on core 0 waiting on a task of core 1 boosts it).
//! Their ids are registered under the runtime's lock, which also orders a guard's
//! release before the next holder's access to the value. A lock is handed to its next holder at unlock —
//! critical waiters first, in arrival order within a class (as `rt_mutex` orders its
//! waiters by priority).

use std::cell::UnsafeCell;
use std::future::Future;
use std::ops::{Deref, DerefMut};
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::task::{Context, Poll};

use sluice_core::IoClass;

use crate::deps::{CondState, Dep, LockState};
use crate::exec::{self, with, Inner};

mod range;
pub use range::{RangeAcquire, RangeGuard, RangeLock};

/// The id of a primitive not yet registered: an application's (user-level) …
const UNREGISTERED: u32 = u32::MAX;
/// … or one of the stack's own (RCP's kernel-level: `new_stack_level`). The level
/// rides in the unregistered id, so registering needs nothing else.
const UNREGISTERED_STACK: u32 = u32::MAX - 1;

/// Whether `cell` still holds an unregistered id, and then whether it is stack-level.
fn unregistered(cell: &AtomicU32) -> Option<bool> {
    match cell.load(Relaxed) {
        UNREGISTERED => Some(false),
        UNREGISTERED_STACK => Some(true),
        _ => None,
    }
}

fn lock_id(cell: &AtomicU32, name: &'static str, inner: &mut Inner) -> u32 {
    if let Some(stack) = unregistered(cell) {
        inner.deps.locks.push(LockState {
            stack,
            name,
            ..LockState::default()
        });
        cell.store(inner.deps.locks.len() as u32 - 1, Relaxed);
    }
    cell.load(Relaxed)
}

fn cond_id(cell: &AtomicU32, name: &'static str, inner: &mut Inner) -> u32 {
    if let Some(stack) = unregistered(cell) {
        inner.deps.conds.push(CondState {
            stack,
            name,
            ..CondState::default()
        });
        cell.store(inner.deps.conds.len() as u32 - 1, Relaxed);
    }
    cell.load(Relaxed)
}

/// Try to take lock `l` for task `t` (exclusively or shared); queue it otherwise.
/// `true` when `t` holds it. `queued`: this acquisition queued `t` before (so holding
/// the lock now means it was handed over at an unlock).
///
/// # Panics
/// If `t` already holds the lock and asks again: the locks are not reentrant (with
/// `std::sync::Mutex` this would deadlock; here it is said).
fn acquire(inner: &mut Inner, l: u32, t: u32, write: bool, queued: bool) -> bool {
    let ls = &mut inner.deps.locks[l as usize];
    let held = ls.owner == Some(t) || ls.readers.contains(&t);
    if held {
        assert!(
            queued,
            "task {t} '{}' locks a lock it already holds (sluice_runtime locks are not reentrant)",
            inner.tasks[t as usize].ctx.name()
        );
        // Handed over at an unlock.
        inner.unblock(t);
        return true;
    }
    let free = ls.owner.is_none() && (!write || ls.readers.is_empty());
    let queued_first = ls.waiters.front().is_none_or(|w| w.0 == t);
    if free && queued_first {
        ls.waiters.retain(|w| w.0 != t);
        if write {
            ls.owner = Some(t);
        } else {
            ls.readers.push(t);
        }
        inner.deps.dirty = true;
        inner.unblock(t);
        return true;
    }
    if !ls.waiters.iter().any(|w| w.0 == t) {
        ls.waiters.push_back((t, write));
    }
    inner.block_on(t, Dep::Lock(l));
    false
}

/// `t` releases lock `l`: hand it to the next waiter(s).
fn release(inner: &mut Inner, l: u32, t: u32, write: bool) {
    let ls = &mut inner.deps.locks[l as usize];
    if write {
        debug_assert_eq!(
            ls.owner,
            Some(t),
            "unlock by a task that does not hold the lock"
        );
        ls.owner = None;
    } else {
        ls.readers.retain(|&r| r != t);
    }
    inner.deps.dirty = true;
    let ls = &inner.deps.locks[l as usize];
    if ls.owner.is_some() || ls.waiters.is_empty() {
        return;
    }
    // Critical (by class or inheritance) waiters first, arrival order within a class.
    let pick = ls
        .waiters
        .iter()
        .position(|w| inner.tasks[w.0 as usize].effective_class() == IoClass::Critical)
        .unwrap_or(0);
    let (w, wants_write) = ls.waiters[pick];
    if wants_write && !ls.readers.is_empty() {
        return; // The last reader hands it over.
    }
    let ls = &mut inner.deps.locks[l as usize];
    ls.waiters.remove(pick);
    let mut granted = vec![w];
    if wants_write {
        ls.owner = Some(w);
    } else {
        ls.readers.push(w);
        // Every other waiting reader shares it too.
        let (readers, rest): (Vec<_>, Vec<_>) = ls.waiters.drain(..).partition(|x| !x.1);
        ls.waiters = rest.into();
        for (r, _) in readers {
            ls.readers.push(r);
            granted.push(r);
        }
    }
    for g in granted {
        inner.wake(g);
    }
}

/// A mutual-exclusion lock whose holder inherits the class of a critical waiter.
///
/// ```
/// use std::rc::Rc;
/// use sluice_runtime::{spawn, Mutex, Stack, TaskCtx};
/// let out = Stack::builder().build().unwrap().run(|| async {
///     let m = Rc::new(Mutex::new(0u32));
///     let m2 = m.clone();
///     let h = spawn(TaskCtx::new("bg"), async move { *m2.lock().await += 1 });
///     h.await;
///     let v = *m.lock().await;
///     v
/// }).unwrap();
/// assert_eq!(out.value, 1);
/// ```
pub struct Mutex<T> {
    id: AtomicU32,
    /// Its name in the table of waits ([`Mutex::named`]).
    name: &'static str,
    value: UnsafeCell<T>,
}

// SAFETY: the value is reached only through a guard, and the runtime grants a lock to
// one task at a time (or to readers only, for `RwLock`) under its own mutex, which
// orders one holder's accesses before the next holder's.
unsafe impl<T: Send> Sync for Mutex<T> {}
// SAFETY: as above; readers share `&T` across threads, so `T: Sync` too.
unsafe impl<T: Send + Sync> Sync for RwLock<T> {}

impl<T> Mutex<T> {
    /// A new, unlocked mutex.
    pub fn new(value: T) -> Mutex<T> {
        Mutex {
            id: AtomicU32::new(UNREGISTERED),
            name: "",
            value: UnsafeCell::new(value),
        }
    }

    /// A new, unlocked mutex of the I/O stack itself (a page cache's, a file system's,
    /// a buffer pool's), not of the application: inheritance through it is RCP's
    /// *kernel-level* dependency handling ([`crate::Inherit::stack`]), through
    /// [`Mutex::new`]'s the *user-level* one ([`crate::Inherit::user`]).
    pub fn new_stack_level(value: T) -> Mutex<T> {
        Mutex {
            id: AtomicU32::new(UNREGISTERED_STACK),
            name: "",
            value: UnsafeCell::new(value),
        }
    }

    /// This mutex, named `name` in the report's table of where critical tasks waited
    /// (`runtime.waits`, RCP Table 2's rows: "BH Lock", "mutex lock"); unnamed locks
    /// are counted together by level.
    pub fn named(mut self, name: &'static str) -> Mutex<T> {
        self.name = name;
        self
    }

    /// Wait for the lock.
    pub fn lock(&self) -> LockFuture<'_, T> {
        LockFuture {
            m: self,
            done: false,
            queued: false,
        }
    }

    /// Take the lock if it is free and nobody waits.
    pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        with(|inner, t| {
            let l = lock_id(&self.id, self.name, inner);
            let ls = &inner.deps.locks[l as usize];
            if ls.owner.is_none() && ls.readers.is_empty() && ls.waiters.is_empty() {
                inner.deps.locks[l as usize].owner = Some(t);
                inner.deps.dirty = true;
                Some(MutexGuard { m: self, task: t })
            } else {
                None
            }
        })
    }

    /// The value, when the mutex is not shared any more.
    pub fn into_inner(self) -> T {
        self.value.into_inner()
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for Mutex<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mutex")
            .field("id", &self.id.load(Relaxed))
            .finish()
    }
}

/// The future of [`Mutex::lock`].
#[derive(Debug)]
pub struct LockFuture<'a, T> {
    m: &'a Mutex<T>,
    done: bool,
    queued: bool,
}

impl<'a, T> Future for LockFuture<'a, T> {
    type Output = MutexGuard<'a, T>;
    fn poll(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Self::Output> {
        let (m, queued) = (self.m, self.queued);
        let got = with(|inner, t| {
            let l = lock_id(&m.id, m.name, inner);
            acquire(inner, l, t, true, queued).then_some(t)
        });
        match got {
            Some(task) => {
                self.done = true;
                Poll::Ready(MutexGuard { m, task })
            }
            None => {
                self.queued = true;
                Poll::Pending
            }
        }
    }
}

impl<T> Drop for LockFuture<'_, T> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        // Cancelled while waiting: leave the queue (and give the lock back if it was
        // handed over meanwhile).
        let id = self.m.id.load(Relaxed);
        if id == UNREGISTERED || !self.queued {
            return;
        }
        exec::try_with(|inner, t| {
            let ls = &mut inner.deps.locks[id as usize];
            ls.waiters.retain(|w| w.0 != t);
            if ls.owner == Some(t) {
                release(inner, id, t, true);
            }
            inner.unblock(t);
        });
    }
}

/// Holds a [`Mutex`]; unlocks when dropped.
pub struct MutexGuard<'a, T> {
    m: &'a Mutex<T>,
    task: u32,
}

impl<T> Deref for MutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard is the lock's only holder.
        unsafe { &*self.m.value.get() }
    }
}

impl<T> DerefMut for MutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in deref.
        unsafe { &mut *self.m.value.get() }
    }
}

impl<T> Drop for MutexGuard<'_, T> {
    fn drop(&mut self) {
        let id = self.m.id.load(Relaxed);
        let task = self.task;
        exec::try_with(|inner, _| release(inner, id, task, true));
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

/// A reader-writer lock; every holder (readers too) inherits a critical waiter's class.
#[derive(Debug)]
pub struct RwLock<T> {
    id: AtomicU32,
    value: UnsafeCell<T>,
}

impl<T> RwLock<T> {
    /// A new, unlocked lock.
    pub fn new(value: T) -> RwLock<T> {
        RwLock {
            id: AtomicU32::new(UNREGISTERED),
            value: UnsafeCell::new(value),
        }
    }

    /// Wait for shared access.
    pub async fn read(&self) -> RwReadGuard<'_, T> {
        let task = Acquire {
            cell: &self.id,
            write: false,
            queued: false,
        }
        .await;
        RwReadGuard { l: self, task }
    }

    /// Wait for exclusive access.
    pub async fn write(&self) -> RwWriteGuard<'_, T> {
        let task = Acquire {
            cell: &self.id,
            write: true,
            queued: false,
        }
        .await;
        RwWriteGuard { l: self, task }
    }
}

struct Acquire<'a> {
    cell: &'a AtomicU32,
    write: bool,
    queued: bool,
}

impl Future for Acquire<'_> {
    type Output = u32;
    fn poll(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<u32> {
        let (cell, write, queued) = (self.cell, self.write, self.queued);
        match with(|inner, t| {
            let l = lock_id(cell, "", inner);
            acquire(inner, l, t, write, queued).then_some(t)
        }) {
            Some(t) => Poll::Ready(t),
            None => {
                self.queued = true;
                Poll::Pending
            }
        }
    }
}

/// Shared access to an [`RwLock`].
#[derive(Debug)]
pub struct RwReadGuard<'a, T> {
    l: &'a RwLock<T>,
    task: u32,
}

impl<T> Deref for RwReadGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: no writer while a reader holds the lock.
        unsafe { &*self.l.value.get() }
    }
}

impl<T> Drop for RwReadGuard<'_, T> {
    fn drop(&mut self) {
        let (id, task) = (self.l.id.load(Relaxed), self.task);
        exec::try_with(|inner, _| release(inner, id, task, false));
    }
}

/// Exclusive access to an [`RwLock`].
#[derive(Debug)]
pub struct RwWriteGuard<'a, T> {
    l: &'a RwLock<T>,
    task: u32,
}

impl<T> Deref for RwWriteGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the writer is the only holder.
        unsafe { &*self.l.value.get() }
    }
}

impl<T> DerefMut for RwWriteGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in deref.
        unsafe { &mut *self.l.value.get() }
    }
}

impl<T> Drop for RwWriteGuard<'_, T> {
    fn drop(&mut self) {
        let (id, task) = (self.l.id.load(Relaxed), self.task);
        exec::try_with(|inner, _| release(inner, id, task, true));
    }
}

/// A condition variable. The tasks that signal it become its *helpers* (RCP's inference
/// for user-level condition variables: a task that signals a condition is likely to
/// signal it again; forgotten after the stack's helper window without a signal);
/// [`Condvar::register_helper`] makes the current task one explicitly. While a critical
/// task waits, the helpers inherit its class.
#[derive(Debug)]
pub struct Condvar {
    id: AtomicU32,
    /// Its name in the table of waits ([`Condvar::named`]).
    name: &'static str,
}

impl Default for Condvar {
    /// [`Condvar::new`] (a derived default would name the runtime's first condition).
    fn default() -> Condvar {
        Condvar::new()
    }
}

impl Condvar {
    /// A new condition variable.
    pub fn new() -> Condvar {
        Condvar {
            id: AtomicU32::new(UNREGISTERED),
            name: "",
        }
    }

    /// A new condition variable of the I/O stack itself (as
    /// [`Mutex::new_stack_level`]: inheritance through it is RCP's kernel-level
    /// dependency handling, as through jbd2's `j_wait_done_commit`).
    pub fn new_stack_level() -> Condvar {
        Condvar {
            id: AtomicU32::new(UNREGISTERED_STACK),
            name: "",
        }
    }

    /// This condition variable, named `name` in the table of waits (as
    /// [`Mutex::named`]: RCP Table 2's "j_wait_done_commit").
    pub fn named(mut self, name: &'static str) -> Condvar {
        self.name = name;
        self
    }

    /// Unlock `guard`'s mutex, wait for a notification, lock it again. As with every
    /// condition variable, check the condition in a loop.
    pub async fn wait<'a, T>(&self, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
        let m = guard.m;
        let c = with(|inner, t| {
            let c = cond_id(&self.id, self.name, inner);
            inner.deps.conds[c as usize].waiters.push_back(t);
            c
        });
        drop(guard);
        CondWait { c }.await;
        m.lock().await
    }

    /// Wake the longest-waiting task (the caller becomes a helper).
    pub fn notify_one(&self) {
        self.notify(false);
    }

    /// Wake every waiting task (the caller becomes a helper).
    pub fn notify_all(&self) {
        self.notify(true);
    }

    fn notify(&self, all: bool) {
        with(|inner, t| {
            let c = cond_id(&self.id, self.name, inner);
            let now = inner.now;
            let cs = &mut inner.deps.conds[c as usize];
            match cs.helpers.iter_mut().find(|h| h.0 == t) {
                Some(h) => h.1 = now,
                None if t != u32::MAX => cs.helpers.push((t, now)),
                None => {}
            }
            let woken: Vec<u32> = if all {
                cs.waiters.drain(..).collect()
            } else {
                cs.waiters.pop_front().into_iter().collect()
            };
            inner.deps.dirty = true;
            for w in woken {
                inner.wake(w);
            }
        });
    }

    /// Make the current task a helper of this condition (it will signal it), until
    /// [`Condvar::unregister_helper`].
    pub fn register_helper(&self) {
        with(|inner, t| {
            let c = cond_id(&self.id, self.name, inner);
            let cs = &mut inner.deps.conds[c as usize];
            if !cs.fixed_helpers.contains(&t) {
                cs.fixed_helpers.push(t);
            }
            inner.deps.dirty = true;
        });
    }

    /// Stop being a registered helper (and forget the inferred helper role).
    pub fn unregister_helper(&self) {
        with(|inner, t| {
            let c = cond_id(&self.id, self.name, inner);
            let cs = &mut inner.deps.conds[c as usize];
            cs.fixed_helpers.retain(|&h| h != t);
            cs.helpers.retain(|h| h.0 != t);
            inner.deps.dirty = true;
        });
    }
}

struct CondWait {
    c: u32,
}

impl Future for CondWait {
    type Output = ();
    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<()> {
        let c = self.c;
        with(|inner, t| {
            if inner.deps.conds[c as usize].waiters.contains(&t) {
                inner.block_on(t, Dep::Cond(c));
                Poll::Pending
            } else {
                inner.unblock(t);
                Poll::Ready(())
            }
        })
    }
}

impl Drop for CondWait {
    fn drop(&mut self) {
        let c = self.c;
        exec::try_with(|inner, t| {
            // A wait dropped while its stack unwinds from a panic may find the
            // conditions gone: nothing to undo then (and no second panic).
            if let Some(cond) = inner.deps.conds.get_mut(c as usize) {
                cond.waiters.retain(|&w| w != t);
                inner.unblock(t);
            }
        });
    }
}
