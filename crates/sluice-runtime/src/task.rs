//! The task API: spawning (on this core or, `Send`, on any), join handles, explicit
//! boosts, the current task's class, time, sleeping, yielding and declared CPU work.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex as StdMutex};
use std::task::{Context, Poll};

use sluice_core::Nanos;

use crate::deps::Dep;
use crate::exec::{self, with};
use crate::{IoClass, TaskCtx};

/// A spawned task: await it for its result.
#[must_use = "dropping a JoinHandle does not stop the task"]
pub struct JoinHandle<T> {
    task: u32,
    value: Arc<StdMutex<Option<T>>>,
}

impl<T> std::fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JoinHandle")
            .field("task", &self.task)
            .finish()
    }
}

impl<T> JoinHandle<T> {
    /// A handle on the task itself (to boost it).
    pub fn task(&self) -> TaskHandle {
        TaskHandle { task: self.task }
    }
}

impl<T> Future for JoinHandle<T> {
    type Output = T;
    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<T> {
        let v = self.value.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(v) = v {
            with(|inner, t| inner.unblock(t));
            return Poll::Ready(v);
        }
        let task = self.task;
        let value = &self.value;
        let ready = with(|inner, t| {
            // Checked again under the runtime's lock: a task of another core may have
            // ended since (it sets its value before it is marked done, under this lock).
            if inner.tasks[task as usize].state == exec::TState::Done {
                return true;
            }
            inner.tasks[task as usize].add_joiner(t);
            inner.block_on(t, Dep::Join(task));
            false
        });
        if ready {
            let v = value.lock().unwrap_or_else(|e| e.into_inner()).take();
            with(|inner, t| inner.unblock(t));
            return Poll::Ready(v.expect("a task that ended left its value"));
        }
        Poll::Pending
    }
}

/// A task, for [`TaskHandle::boost`] (RocksDB's idea of raising a background job's
/// priority while foreground work stalls on it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskHandle {
    task: u32,
}

impl TaskHandle {
    /// Make the task critical until the guard is dropped: its queued requests are
    /// promoted, its new I/O is critical, its wake-ups use the critical rule.
    pub fn boost(&self) -> BoostGuard {
        let task = self.task;
        with(|inner, _| {
            inner.tasks[task as usize].explicit += 1;
            let slots = inner.tasks[task as usize].outstanding.clone();
            let now = inner.now;
            for s in slots {
                inner.io.promote(now, s);
            }
            inner.deps.dirty = true;
        });
        BoostGuard { task }
    }
}

/// Ends an explicit boost when dropped.
#[derive(Debug)]
pub struct BoostGuard {
    task: u32,
}

impl Drop for BoostGuard {
    fn drop(&mut self) {
        let task = self.task;
        exec::try_with(|inner, _| {
            let t = &mut inner.tasks[task as usize];
            t.explicit = t.explicit.saturating_sub(1);
            inner.deps.dirty = true;
        });
    }
}

/// Spawn a task with context `ctx`. Its future stays on the thread that spawns it (it
/// need not be `Send`): in simulation it goes to `ctx`'s core or the next core round
/// robin; on a real stack, to the spawner's core (`ctx`'s core must be that one — use
/// [`spawn_on`] for another core).
///
/// # Panics
/// On a real stack, if `ctx` names another core than the spawner's.
pub fn spawn<F>(ctx: TaskCtx, fut: F) -> JoinHandle<F::Output>
where
    F: Future + 'static,
    F::Output: 'static,
{
    let value = Arc::new(StdMutex::new(None));
    let out = value.clone();
    let sh = exec::current_shared();
    let task = sh.spawn(
        ctx,
        Box::pin(async move {
            let v = fut.await;
            *out.lock().unwrap_or_else(|e| e.into_inner()) = Some(v);
        }),
    );
    JoinHandle { task, value }
}

/// Spawn a task on another core: `make` (which must be `Send`) goes to `ctx`'s core (or
/// the next core round robin, in both worlds, as [`spawn`] does in simulation) and makes
/// the task's future there, so the future itself need not be `Send` (it may hold `Rc`s
/// or the runtime's non-`Send` futures); only its output must be.
///
/// ```
/// use sluice_runtime::{spawn_on, DmaBuffer, File, Stack, TaskCtx};
/// let dir = tempfile::tempdir().unwrap();
/// let out = Stack::builder().directory(dir.path()).direct(false).cores(2).build().unwrap()
///     .run(|| async {
///         let h = spawn_on(TaskCtx::new("other").core(1), || async {
///             let f = File::create("on-core-1").await.unwrap();
///             f.write_at(DmaBuffer::new(4096), 0).await.0.unwrap()
///         });
///         h.await
///     })
///     .unwrap();
/// assert_eq!(out.value, 4096);
/// ```
pub fn spawn_on<F, Fut>(ctx: TaskCtx, make: F) -> JoinHandle<Fut::Output>
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future + 'static,
    Fut::Output: Send + 'static,
{
    let value = Arc::new(StdMutex::new(None));
    let out = value.clone();
    let sh = exec::current_shared();
    let task = sh.spawn_on(
        ctx,
        Box::new(move || -> exec::TaskFuture {
            Box::pin(async move {
                let v = make().await;
                *out.lock().unwrap_or_else(|e| e.into_inner()) = Some(v);
            })
        }),
    );
    JoinHandle { task, value }
}

/// Start the table of where critical tasks waited (the report's `runtime.waits`)
/// afresh: waits that ended before now are forgotten, waits going on count from now —
/// a program calls it where its measured run starts (RCP Table 2 covers the run, not
/// the load or the warm-up).
pub fn restart_wait_tally() {
    with(|inner, _| inner.restart_waits());
}

/// Virtual time now, ns since the stack started.
pub fn now() -> Nanos {
    // Real world: the time of the core's last turn, without the lock (the same value
    // the lock would give: `Inner::now` is published at every turn).
    if let Some(t) = exec::real_now() {
        return t;
    }
    with(|inner, _| inner.now)
}

/// The current task's effective class (critical by inheritance included).
pub fn current_class() -> IoClass {
    with(|inner, t| inner.tasks[t as usize].effective_class())
}

/// The current task's own class: the one its context gives or [`set_class`] set, without
/// inheritance or boosts ([`current_class`] has them).
pub fn current_base_class() -> IoClass {
    with(|inner, t| inner.tasks[t as usize].ctx.class)
}

/// The current task's state in the page cache's dirty throttle.
pub(crate) fn dirtier() -> sluice_cache::throttle::Dirtier {
    with(|inner, t| inner.tasks[t as usize].dirtier)
}

/// Keep the current task's state in the dirty throttle.
pub(crate) fn set_dirtier(d: sluice_cache::throttle::Dirtier) {
    with(|inner, t| inner.tasks[t as usize].dirtier = d);
}

/// Change the current task's class (e.g. a worker that starts serving a request).
pub fn set_class(class: IoClass) {
    with(|inner, t| {
        inner.tasks[t as usize].ctx.class = class;
        inner.deps.dirty = true;
    });
}

/// Sleep for `ns` of (virtual) time.
pub fn sleep(ns: Nanos) -> Sleep {
    Sleep {
        ns,
        until: None,
        throttle: false,
    }
}

/// A pause at a cache's admission (a writer over its dirty limit, Linux's
/// `balance_dirty_pages`): `ns` of sleep during which the task is blocked on the
/// cache's admission (a dependency of its own kind), ended early when a critical task's
/// chain of waits reaches it (RCP §4.4: with inheritance on, the task is then judged
/// by the critical limit). The runtime's page cache pauses its writers with it, and a
/// file store with its own buffer (sluice-store) can pause its writers the same way.
pub fn throttle_pause(ns: Nanos) -> Sleep {
    Sleep {
        ns,
        until: None,
        throttle: true,
    }
}

/// The future of [`sleep`].
#[derive(Debug)]
pub struct Sleep {
    ns: Nanos,
    until: Option<Nanos>,
    /// A pause at the cache's admission that inheritance may end.
    throttle: bool,
}

impl Future for Sleep {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<()> {
        let (ns, until, throttle) = (self.ns, self.until, self.throttle);
        let (ready, at) = with(|inner, t| {
            let at = until.unwrap_or_else(|| {
                let at = inner.now + ns;
                inner.timer(t, at);
                at
            });
            if !throttle {
                // The first poll always waits for the timer (a zero sleep yields).
                return (until.is_some() && inner.now >= at, at);
            }
            // A resolution counts only for this pause (one left from a pause the timer
            // ended in the same instant is dropped at the first poll).
            let resolved =
                std::mem::take(&mut inner.tasks[t as usize].admission_resolved) && until.is_some();
            if resolved || inner.now >= at {
                inner.unblock(t);
                (true, at)
            } else {
                inner.block_on(t, crate::deps::Dep::Throttle);
                (false, at)
            }
        });
        self.until = Some(at);
        if ready {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

/// Let the other runnable tasks of this core run first.
pub fn yield_now() -> YieldNow {
    YieldNow { yielded: false }
}

/// The future of [`yield_now`].
#[derive(Debug)]
pub struct YieldNow {
    yielded: bool,
}

impl Future for YieldNow {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<()> {
        if self.yielded {
            return Poll::Ready(());
        }
        self.yielded = true;
        with(|inner, t| inner.wake(t));
        Poll::Pending
    }
}

/// Use `ns` of CPU on the task's core (in slices of the cost table's quantum; a
/// critical wake-up may preempt it). In simulation this is how a task says it computes.
pub fn cpu(ns: Nanos) -> Cpu {
    Cpu { ns, asked: false }
}

/// Charge a stack layer's own work from the cost table: `pick` chooses the entry (and
/// multiplies it by a count), for example `charge(|c| c.journal_block_ns * n)`. In
/// simulation the task's core computes that long, as with [`cpu`]; on real hardware the
/// layer's work has just taken its real time, so this returns at once.
pub fn charge(pick: impl FnOnce(&crate::CostTable) -> Nanos) -> Cpu {
    let ns = with(|inner, _| {
        if inner.io.is_real() {
            0
        } else {
            pick(&inner.cfg.costs)
        }
    });
    cpu(ns)
}

/// The future of [`cpu`] and [`charge`].
#[derive(Debug)]
pub struct Cpu {
    ns: Nanos,
    asked: bool,
}

impl Cpu {
    /// Real world: spin one quantum of what is left; the rest after the core went back
    /// to its ring (it reaps and handles the completions of the other tasks between two
    /// quanta, as the simulated host looks at its queue between slices).
    fn spin(&mut self, quantum: Nanos) -> Poll<()> {
        let slice = self.ns.min(quantum);
        let t0 = std::time::Instant::now();
        while (t0.elapsed().as_nanos() as Nanos) < slice {
            std::hint::spin_loop();
        }
        self.ns -= slice;
        if self.ns == 0 {
            return Poll::Ready(());
        }
        with(|inner, t| {
            let c = inner.tasks[t as usize].core;
            inner.cores[c as usize].spun = true;
            inner.wake(t);
        });
        Poll::Pending
    }
}

impl Future for Cpu {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<()> {
        if self.ns == 0 {
            return Poll::Ready(());
        }
        if !self.asked {
            self.asked = true;
            let ns = self.ns;
            let real = with(|inner, t| {
                if inner.io.is_real() {
                    return Some(inner.cfg.costs.quantum_ns.max(1));
                }
                inner.cpu(t, ns);
                None
            });
            if let Some(quantum) = real {
                self.asked = false;
                return self.spin(quantum);
            }
            return Poll::Pending;
        }
        if with(|inner, t| {
            let task = &inner.tasks[t as usize];
            task.burst == 0 && task.burst_done
        }) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}
