//! The real backend's run loop, thread per core (as glommio's and Seastar's executors):
//! core 0 is the calling thread, cores 1..N are threads of their own, each with its own
//! io_uring ([`CoreRing`]). A task runs on the core it was spawned on.
//!
//! # A core's turn
//! 1. under the runtime's lock: read the clock; hand up to [`HANDLE_BATCH`] of the
//!    completions this core reaped to the block layer (all of them after a round in
//!    which a task spun in `cpu`, so a CPU burst delays them by one quantum at most) and
//!    wake their waiters; wake the tasks of generic wakers; fire the timers due (any
//!    core may: the timer heap is shared); recompute inheritance; pump the one block
//!    layer; take this core's outbox (pieces of requests issued from this core, whoever
//!    dispatched them) and the changes of the table of registered files its ring has
//!    not applied yet (files opened, slots of closed files cleared: `real/files.rs`);
//! 2. without the lock: apply those changes, write the SQEs, ring the doorbells of the
//!    cores that got work; when there is a round to run, submit the SQEs (so the I/O the
//!    last round issued does not wait for this round's tasks), then run one round of
//!    this core's run queue (the tasks runnable at the start of the round, each polled
//!    once);
//! 3. enter the ring: submit what is left, and wait for a completion, the doorbell or
//!    the next timer when nothing is runnable.
//!
//! # No lost wake-ups
//! A core's doorbell read is armed before the core looks for work, and an eventfd keeps
//! its count: a wake-up that comes after the look completes the read, so the wait ends.
//!
//! # The end
//! The main task's end (or a deadlock: every core idle with nothing in flight and no
//! timer) stops every core; each waits until its ring gave back every buffer, then
//! drops the futures of its unfinished tasks on its own thread.

use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use sluice_core::Nanos;

use super::driver::stuck;
use super::{Ev, Shared, TState};
use crate::io::Port;
use crate::real::{CoreRing, HANDLE_BATCH};
use sluice_uring::RingSqe;

mod pin;

/// How long an idle core waits in its ring before it looks again (ns).
const IDLE_WAIT_NS: Nanos = 10_000_000;

/// Run the cores until task `main` is done.
pub(crate) fn run(sh: &Arc<Shared>, main: u32) -> Result<(), super::RunError> {
    let n = {
        let mut inner = sh.lock();
        if inner.io.block.has_counters() {
            inner.push(0, Ev::Sample);
        }
        inner.cfg.cores
    };
    std::thread::scope(|s| {
        let mut threads = Vec::new();
        for c in 1..n {
            let sh2 = sh.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("sluice-core-{c}"))
                .spawn_scoped(s, move || guarded(&sh2, c, main));
            match spawned {
                Ok(h) => threads.push(h),
                Err(e) => {
                    fail(
                        sh,
                        super::RunError::Core {
                            core: c,
                            why: format!("cannot start its thread: {e}"),
                        },
                    );
                    break;
                }
            }
        }
        let r0 = guarded(sh, 0, main);
        let mut panic = None;
        for h in threads {
            match h.join() {
                Ok(Ok(r)) => drop(r),
                Ok(Err(p)) | Err(p) => panic = panic.or(Some(p)),
            }
        }
        let r0 = match r0 {
            Ok(r) => r,
            Err(p) => resume_unwind(p),
        };
        if let Some(p) = panic {
            resume_unwind(p);
        }
        r0?;
        match sh.lock().failure.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    })
}

type Panic = Box<dyn std::any::Any + Send + 'static>;

/// Core `c`'s thread: its loop, then its tasks dropped; a panic stops every core.
fn guarded(sh: &Arc<Shared>, c: u16, main: u32) -> Result<Result<(), super::RunError>, Panic> {
    let r = catch_unwind(AssertUnwindSafe(|| core_loop(sh, c, main)));
    if r.is_err() {
        stop_all(sh);
    }
    if c != 0 {
        // Core 0's tasks are dropped by `Stack::run`, after the report.
        let _ = catch_unwind(AssertUnwindSafe(|| super::drop_tasks(sh, c)));
    }
    super::leave();
    r
}

/// Stop every core.
fn stop_all(sh: &Shared) {
    let mut inner = sh.lock();
    inner.stop = true;
    for c in 0..inner.cfg.cores {
        inner.kick(c);
    }
}

fn fail(sh: &Shared, e: super::RunError) {
    let mut inner = sh.lock();
    if inner.failure.is_none() {
        inner.failure = Some(e);
    }
    drop(inner);
    stop_all(sh);
}

fn core_loop(sh: &Arc<Shared>, c: u16, main: u32) -> Result<(), super::RunError> {
    let cpus = sh.lock().cfg.core_cpus.clone();
    if cpus.is_empty() {
        return core_loop_sized(sh, c, main);
    }
    let cpu = cpus[c as usize % cpus.len()];
    let before = match pin::pin_to(cpu) {
        Ok(before) => before,
        Err(why) => {
            fail(sh, super::RunError::Core { core: c, why });
            return Ok(());
        }
    };
    let r = core_loop_sized(sh, c, main);
    // Core 0 is the caller's thread: its CPU mask back (the other threads end here).
    if c == 0 {
        pin::restore(&before);
    }
    r
}

fn core_loop_sized(sh: &Arc<Shared>, c: u16, main: u32) -> Result<(), super::RunError> {
    // 128-byte SQEs only when asked for (tasks' io_uring commands): the one loop, for
    // either size.
    if sh.lock().cfg.uring_commands {
        core_loop_of::<io_uring::squeue::Entry128>(sh, c, main)
    } else {
        core_loop_of::<io_uring::squeue::Entry>(sh, c, main)
    }
}

fn core_loop_of<S: RingSqe>(sh: &Arc<Shared>, c: u16, main: u32) -> Result<(), super::RunError> {
    super::enter(sh, c);
    let mut ring = match CoreRing::<S>::new(&sh.wakes.bells[c as usize], sh.pool.as_deref()) {
        Ok(r) => r,
        Err(why) => {
            fail(sh, super::RunError::Core { core: c, why });
            return Ok(());
        }
    };
    let r = turns(sh, c, main, &mut ring);
    ring.drain();
    if let Err(e) = r {
        fail(sh, e);
    }
    Ok(())
}

fn turns<S: RingSqe>(
    sh: &Arc<Shared>,
    c: u16,
    main: u32,
    ring: &mut CoreRing<S>,
) -> Result<(), super::RunError> {
    let ci = c as usize;
    let mut out = Vec::with_capacity(crate::real::RING_CAP as usize);
    let mut fds = Vec::new();
    let mut wake = Vec::new();
    // This core's round: the tasks to poll, the futures sent to it, what became of
    // the tasks polled (kept: no allocation per turn).
    let mut round = Vec::new();
    let mut sent = Vec::new();
    let mut outcomes = Vec::new();
    // The last turn's wait in the ring was an idle timeout (counted under the lock).
    let mut idle_timeout = false;
    loop {
        let wait_ns = {
            let mut g = sh.lock();
            let inner = &mut *g;
            if inner.stop {
                return Ok(());
            }
            inner.stats.idle_timeouts += std::mem::take(&mut idle_timeout) as u64;
            inner.idle[ci] = false;
            let Port::Real(p) = &inner.io.port else {
                unreachable!("the threaded loop runs the real backend")
            };
            let now = p.clock().max(inner.now);
            inner.now = now;
            sh.now.store(now, Ordering::Relaxed);
            // 1. The last round: its I/O (submitted, collected) and its tasks' states.
            crate::io::batch::flush(inner);
            end_round(inner, &mut outcomes);
            // Completions this core reaped.
            let n = if std::mem::take(&mut inner.cores[ci].spun) {
                ring.cqes.len()
            } else {
                HANDLE_BATCH
            };
            let mut fin = inner.take_finished();
            let io = &mut inner.io;
            if let Port::Real(p) = &mut io.port {
                for _ in 0..n {
                    let Some((tag, res)) = ring.cqes.pop_front() else {
                        break;
                    };
                    p.complete(&mut io.block, now, tag, res, &mut fin);
                }
            }
            inner.finish_requests(&mut fin);
            inner.keep_finished(fin);
            // Generic wakers, timers.
            if !sh.wakes.is_empty() {
                for t in sh.wakes.take() {
                    inner.wake(t);
                }
            }
            sh.due_events(inner, now);
            // Inheritance, the block layer.
            inner.refresh_deps();
            inner.io.pump(now);
            let want = inner.io.block.next_timer_ns();
            if let Some(w) = want.filter(|_| want != inner.policy_timer) {
                inner.policy_timer = want;
                inner.push(w.max(now), Ev::PolicyTimer);
            }
            let io = &mut inner.io;
            if let Port::Real(p) = &mut io.port {
                p.take(&io.block, ci, &mut out, &mut fds, &mut wake);
            }
            for w in wake.drain(..) {
                inner.kick(w as u16);
            }
            if inner.tasks[main as usize].state == TState::Done {
                drop(g);
                stop_all(sh);
                ring.register(&fds).map_err(super::RunError::Ring)?;
                ring.push(&out);
                ring.enter(false, 0).map_err(super::RunError::Ring)?;
                return Ok(());
            }
            // The next round's slots and tasks (those runnable now).
            crate::io::batch::reserve(inner);
            start_round(inner, ci, &mut round, &mut sent);
            let deadline = inner.events.peek().map(|std::cmp::Reverse((t, _, _))| *t);
            // A core with a task waiting on its ring for a descriptor of the outside
            // (`readable`) is not idle: that wait can wake it.
            if round.is_empty() && ring.cqes.is_empty() && !ring.waits_outside() {
                inner.idle[ci] = true;
                // Every core waits in its ring, and none has a task to run (a core's
                // flag is from its last turn: a task queued on it since then, whose
                // doorbell is on its way, is seen here).
                let all_idle = inner.idle.iter().all(|&i| i);
                let none_queued = inner
                    .cores
                    .iter()
                    .all(|k| k.next.is_none() && k.fifo.is_empty() && k.current.is_none());
                if all_idle
                    && none_queued
                    && !inner.can_wake()
                    && out.is_empty()
                    && inner.inbox.iter().all(Vec::is_empty)
                    && sh.wakes.is_empty()
                {
                    let e = stuck(inner);
                    drop(g);
                    fail(sh, e);
                    return Ok(());
                }
            }
            deadline.map_or(IDLE_WAIT_NS, |d| d.saturating_sub(now).min(IDLE_WAIT_NS))
        };
        // 2. Files, SQEs, one round of the run queue, without the lock.
        ring.register(&fds).map_err(super::RunError::Ring)?;
        fds.clear();
        ring.push(&out);
        UNSUBMITTED.with(|u| u.set(out.len()));
        out.clear();
        let ran = !round.is_empty();
        if ran {
            // The SQEs just written go to the kernel before the round, not after it: an
            // I/O a task issued in the last round (a critical read among them) does not
            // wait for this round's tasks — a bulk writer's copy, another's reply — to
            // reach the device. The same one submission the enter below would make
            // (none when nothing was written); the enter below then only reaps.
            ring.enter(false, 0).map_err(super::RunError::Ring)?;
            UNSUBMITTED.with(|u| u.set(0));
        }
        run_round(&mut round, &mut sent, &mut outcomes);
        // 3. The ring: wait only when this core has nothing to run or to handle (a task
        // another core makes runnable from now on rings this core's doorbell). After a
        // round of tasks, go around once more without waiting: the I/O they issued is in
        // this core's batch, and reaches the block layer and the ring only in the next
        // turn's first step — waiting here would leave it there until another
        // completion or the idle timeout (a 10 ms stall of every lone synchronous I/O).
        let idle = ring.enter(!ran, wait_ns).map_err(super::RunError::Ring)?;
        UNSUBMITTED.with(|u| u.set(0));
        idle_timeout = idle && wait_ns == IDLE_WAIT_NS;
    }
}

thread_local! {
    /// SQEs this core's thread wrote in its turn and has not submitted yet (what a task
    /// of the round would wait behind; [`unsubmitted_sqes`]).
    static UNSUBMITTED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// SQEs written by this core's current turn and not yet submitted to the kernel: 0
/// while the round's tasks run (the turn submits before its round).
pub(crate) fn unsubmitted_sqes() -> usize {
    UNSUBMITTED.with(|u| u.get())
}

/// Under the lock: core `c`'s round is the tasks runnable now (its `next`, then its
/// queue in order), each marked running; the futures sent to the core go to `sent`.
fn start_round(
    inner: &mut super::Inner,
    c: usize,
    round: &mut Vec<(u32, Waker)>,
    sent: &mut Vec<(u32, super::MakeFuture)>,
) {
    let core = &mut inner.cores[c];
    while let Some(t) = core.next.take().or_else(|| core.fifo.pop_front()) {
        core.last = Some(t);
        let task = &mut inner.tasks[t as usize];
        task.state = TState::Running;
        task.notified = false;
        round.push((t, task.waker.clone()));
    }
    inner.stats.polls += round.len() as u64;
    sent.append(&mut inner.inbox[c]);
}

/// Without the lock: make the futures sent to this core, poll each task of the round
/// once (a task woken meanwhile — `wake` of a running task — is queued again by
/// [`end_round`]); a task that ended has its future dropped here, as after a poll.
fn run_round(
    round: &mut Vec<(u32, Waker)>,
    sent: &mut Vec<(u32, super::MakeFuture)>,
    outcomes: &mut Vec<(u32, bool)>,
) {
    for (id, make) in sent.drain(..) {
        super::put_local(id, make());
    }
    for (t, waker) in round.drain(..) {
        let Some(mut fut) = super::take_local(t) else {
            unreachable!("task {t} runs on this core but its future is not on this thread")
        };
        super::CUR_TASK.with(|x| x.set(t));
        let r = fut.as_mut().poll(&mut Context::from_waker(&waker));
        super::CUR_TASK.with(|x| x.set(u32::MAX));
        match r {
            Poll::Ready(()) => {
                outcomes.push((t, true));
                drop(fut);
            }
            Poll::Pending => {
                super::put_local(t, fut);
                outcomes.push((t, false));
            }
        }
    }
}

/// Under the lock, at the next turn: the round's tasks as its polls left them (what the
/// simulated run loop does after each poll): ended — done, joiners woken; pending —
/// blocked, or queued again if woken while it ran.
fn end_round(inner: &mut super::Inner, outcomes: &mut Vec<(u32, bool)>) {
    for (t, ended) in outcomes.drain(..) {
        let task = &mut inner.tasks[t as usize];
        if ended {
            task.state = TState::Done;
            let joiners = std::mem::take(&mut task.joiners);
            if inner.end_wait(t) {
                inner.deps.blocked.remove(&t);
            }
            inner.deps.dirty = true;
            for j in joiners {
                inner.wake(j);
            }
        } else {
            task.state = TState::Blocked;
            if std::mem::take(&mut task.notified) {
                inner.wake(t);
            }
        }
    }
}
