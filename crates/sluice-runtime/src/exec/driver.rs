//! The event loop of [`Shared`]: run the main task to its end — drain wake-ups, let each
//! core run its tasks (switches, CPU slices, polls), pump the block layer, then advance:
//! to the next simulated event (device completions first, then timers, core events and
//! the policy's timer), or, in the real world, into the ring until a completion or the
//! next deadline.

use std::cmp::Reverse;
use std::sync::{Arc, Mutex as StdMutex};
use std::task::{Context, Poll};

use sluice_core::Nanos;

use super::{
    put_local, take_local, Ev, Inner, InnerGuard, MakeFuture, Shared, TState, TaskFuture, WakeList,
    ALL_CORES, CUR_TASK, MY_CORE,
};
use crate::ctx::TaskCtx;

/// Why a run could not finish.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Every task waits and nothing can wake any of them.
    #[error(
        "deadlock at {now_ns} ns: the main task has not finished, every task waits and \
         nothing can wake one ({blocked})"
    )]
    Deadlock {
        /// Virtual time.
        now_ns: Nanos,
        /// The blocked tasks and what each waits on.
        blocked: String,
    },
    /// The block layer's policy holds requests with nothing in flight and no timer.
    #[error("the policy '{policy}' stalled at {now_ns} ns: {queued} request(s) held, {waiting} waiting for admission, nothing in flight and no timer — a policy bug")]
    Stalled {
        /// Virtual time.
        now_ns: Nanos,
        /// Policy name.
        policy: String,
        /// Requests the policy holds.
        queued: usize,
        /// Requests waiting for admission.
        waiting: usize,
    },
    /// Simulated time passed the cap.
    #[error("simulated time passed {0} ns before the main task finished")]
    TimeCap(Nanos),
    /// The real backend's ring failed.
    #[error("io_uring failed: {0}")]
    Ring(#[source] std::io::Error),
    /// The real backend could not set up a core (its thread or its ring).
    #[error("core {core}: {why}")]
    Core {
        /// The core.
        core: u16,
        /// What failed.
        why: String,
    },
}

impl Shared {
    /// The shared state; `bells`: the cores' doorbells (real world, one per core);
    /// `pool`: the registered buffers (real world).
    pub(crate) fn new(
        inner: Inner,
        bells: Vec<sluice_uring::Doorbell>,
        pool: Option<Arc<crate::pool::BufferPool>>,
    ) -> Arc<Shared> {
        let has_cache = inner.io.cache.is_some();
        let origin = match &inner.io.port {
            crate::io::Port::Real(p) => Some(p.origin()),
            crate::io::Port::Sim(_) => None,
        };
        Arc::new(Shared {
            inner: StdMutex::new(inner),
            wakes: Arc::new(WakeList::new(bells)),
            pool,
            has_cache,
            origin,
            now: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// Spawn a task whose future stays on this thread: on the spawner's core in the
    /// real world with several threads (or `ctx`'s core if it is this one), by `ctx`'s
    /// core or round robin when one thread runs every core.
    ///
    /// # Panics
    /// If `ctx` names another core of a real stack: that future is not `Send`.
    pub(crate) fn spawn(&self, ctx: TaskCtx, fut: TaskFuture) -> u32 {
        let me = MY_CORE.with(|m| m.get());
        let mut inner = self.lock();
        let core = if me == ALL_CORES {
            None
        } else {
            let want = ctx.core.map(|c| c % inner.cfg.cores).unwrap_or(me);
            assert!(
                want == me,
                "sluice_runtime::spawn: task '{}' is for core {want} but is spawned on core \
                 {me}, and a real stack's cores are threads: use spawn_on for a task of \
                 another core (it makes the future there)",
                ctx.name()
            );
            Some(me)
        };
        let t = inner.spawn_task(ctx, core, &self.wakes);
        drop(inner);
        put_local(t, fut);
        t
    }

    /// Spawn a task on `ctx`'s core (or the next core round robin) whose future `make`
    /// makes there: the closure goes to the core's thread, the future never moves.
    pub(crate) fn spawn_on(&self, ctx: TaskCtx, make: MakeFuture) -> u32 {
        let me = MY_CORE.with(|m| m.get());
        let mut inner = self.lock();
        let t = inner.spawn_task(ctx, None, &self.wakes);
        let core = inner.tasks[t as usize].core;
        // Outside a run (ALL_CORES): in simulation every core is this thread; a real
        // stack not yet running will run core 0 on this thread, the others on theirs.
        let here = me == core || (me == ALL_CORES && (!inner.threaded() || core == 0));
        if here {
            drop(inner);
            put_local(t, make());
        } else {
            inner.inbox[core as usize].push((t, make));
            inner.kick(core);
        }
        t
    }

    /// Run until task `main` is done (or the run cannot go on).
    pub(crate) fn run(self: &Arc<Self>, main: u32, max_ns: Nanos) -> Result<(), RunError> {
        if self.lock().threaded() {
            return super::cores::run(self, main);
        }
        super::enter(self, ALL_CORES);
        let r = self.run_loop(main, max_ns);
        super::leave();
        r
    }

    fn run_loop(self: &Arc<Self>, main: u32, max_ns: Nanos) -> Result<(), RunError> {
        {
            let mut inner = self.lock();
            if inner.io.block.has_counters() {
                inner.push(0, Ev::Sample);
            }
        }
        loop {
            {
                let mut inner = self.lock();
                if let crate::io::Port::Real(p) = &inner.io.port {
                    let t = p.clock();
                    inner.now = inner.now.max(t);
                }
            }
            self.drain_wakes();
            let ncores = self.lock().cores.len();
            for c in 0..ncores {
                self.run_core(c);
            }
            {
                let mut inner = self.lock();
                inner.refresh_deps();
                let now = inner.now;
                inner.io.pump(now);
                let want = inner.io.block.next_timer_ns();
                if let Some(w) = want.filter(|_| want != inner.policy_timer) {
                    inner.policy_timer = want;
                    inner.push(w.max(now), Ev::PolicyTimer);
                }
                if inner.tasks[main as usize].state == TState::Done {
                    return Ok(());
                }
            }
            if !self.wakes.is_empty() {
                continue;
            }
            if self.runnable_now() {
                continue;
            }
            self.advance(max_ns)?;
        }
    }

    /// Whether a core can pick a task at the current time.
    fn runnable_now(&self) -> bool {
        let inner = self.lock();
        inner.cores.iter().any(|c| {
            c.current.is_none()
                && c.busy_until <= inner.now
                && (c.next.is_some() || !c.fifo.is_empty())
        })
    }

    pub(super) fn drain_wakes(&self) {
        let woken: Vec<u32> = self.wakes.take();
        if woken.is_empty() {
            return;
        }
        let mut inner = self.lock();
        for t in woken {
            inner.wake(t);
        }
    }

    /// Move time to the next event and handle everything due then.
    fn advance(&self, max_ns: Nanos) -> Result<(), RunError> {
        let mut inner = self.lock();
        let t_dev = inner.io.next_event_ns();
        let t_ev = inner.events.peek().map(|Reverse((t, _, _))| *t);
        if t_dev.is_none() && !inner.can_wake() {
            return Err(stuck(&inner));
        }
        let t = match (t_dev, t_ev) {
            (None, None) => return Err(stuck(&inner)),
            (Some(a), None) | (None, Some(a)) => a,
            (Some(a), Some(b)) => a.min(b),
        };
        if t > max_ns {
            return Err(RunError::TimeCap(max_ns));
        }
        debug_assert!(t >= inner.now, "time went backwards");
        inner.now = t;
        // Device completions first (as in the fio simulator), then events due now.
        if t_dev == Some(t) {
            inner.handle_completions(t);
        }
        self.due_events(&mut inner, t);
        if inner.io.block.stall().is_some() {
            // A completion or the policy's timer just now may have made a dispatch
            // possible (RCP: the non-critical request out completes after the
            // starvation timer fired): the block layer gets its dispatch opportunity
            // before a stall is declared, as the loop would give it.
            inner.io.pump(t);
        }
        if let Some(s) = inner.io.block.stall() {
            if inner.io.next_event_ns().is_none() && inner.policy_timer.is_none() {
                return Err(RunError::Stalled {
                    now_ns: t,
                    policy: inner.io.block.policy().name().to_string(),
                    queued: s.queued,
                    waiting: s.waiting,
                });
            }
        }
        Ok(())
    }

    /// Handle the events due at `t`.
    pub(super) fn due_events(&self, inner: &mut Inner, t: Nanos) {
        while let Some(&Reverse((at, _, ev))) = inner.events.peek() {
            if at > t {
                break;
            }
            inner.events.pop();
            match ev {
                Ev::CoreFree { core, gen } => {
                    let c = &mut inner.cores[core as usize];
                    if c.gen == gen && c.in_burst {
                        c.in_burst = false;
                        c.slice_ended = true;
                    }
                }
                Ev::Timer { task } => inner.wake(task),
                Ev::PolicyTimer => {
                    if inner.policy_timer.is_some_and(|p| p <= t) {
                        inner.policy_timer = None;
                        inner.io.block.fire_timer(t);
                    }
                }
                Ev::Submit { slot, gen } => {
                    inner.io.submit_pending(t, slot, gen);
                    inner.io.pump(t);
                }
                Ev::Sample => {
                    inner.io.block.sample_counters(t);
                    let next = t + inner.cfg.interval_ns;
                    inner.push(next, Ev::Sample);
                }
            }
        }
    }

    /// Let core `c` run tasks while it is free at the current time, until none is
    /// runnable (the one thread of simulation; a real core polls its rounds without the
    /// lock, `exec/cores.rs`).
    pub(super) fn run_core(&self, c: usize) {
        self.run_core_budget(c, usize::MAX);
    }

    /// [`Shared::run_core`] with at most `budget` polls; returns whether a task of the
    /// core is still runnable. One lock per poll to pick the task (and run its switch
    /// and CPU slices in simulation), one after it.
    pub(super) fn run_core_budget(&self, c: usize, mut budget: usize) -> bool {
        // The lock the last poll's bookkeeping took, kept for the next pick.
        let mut held: Option<InnerGuard<'_>> = None;
        loop {
            let (t, waker, sent) = {
                let mut inner = held.take().unwrap_or_else(|| self.lock());
                let inner = &mut *inner;
                let now = inner.now;
                let core = &mut inner.cores[c];
                if budget == 0 {
                    return core.next.is_some() || !core.fifo.is_empty();
                }
                let (t, switch) = if core.busy_until > now {
                    return false;
                } else if let Some(cur) = core.current {
                    // The core finished a slice, a switch or stack CPU for `cur`.
                    core.in_burst = false;
                    let slice_ended = std::mem::take(&mut core.slice_ended);
                    let others = core.next.is_some() || !core.fifo.is_empty();
                    if slice_ended && others && core.ran_ns >= inner.cfg.costs.quantum_ns {
                        // Round robin at the quantum boundary.
                        core.current = None;
                        core.fifo.push_back(cur);
                        inner.tasks[cur as usize].state = TState::Queued;
                        continue;
                    }
                    (cur, false)
                } else if let Some(t) = inner.pick(c) {
                    let core = &mut inner.cores[c];
                    core.current = Some(t);
                    core.slice_ended = false;
                    core.ran_ns = 0;
                    let switch = core.last != Some(t);
                    core.last = Some(t);
                    inner.tasks[t as usize].state = TState::Running;
                    (t, switch)
                } else {
                    return false;
                };
                if switch {
                    let ns = inner.cfg.costs.switch_ns;
                    if ns > 0 {
                        inner.charge_core(c as u16, ns);
                        continue;
                    }
                }
                // A CPU burst still to run?
                let burst = inner.tasks[t as usize].burst;
                if burst > 0 {
                    let slice = burst.min(inner.cfg.costs.quantum_ns);
                    let task = &mut inner.tasks[t as usize];
                    task.burst -= slice;
                    task.vtime += slice;
                    if task.burst == 0 {
                        task.burst_done = true;
                    }
                    inner.charge_core(c as u16, slice);
                    inner.cores[c].in_burst = true;
                    inner.cores[c].ran_ns += slice;
                    continue;
                }
                budget -= 1;
                // The poll.
                inner.charge = 0;
                inner.stats.polls += 1;
                // Futures sent to this core since its last turn.
                let sent = std::mem::take(&mut inner.inbox[c]);
                let task = &mut inner.tasks[t as usize];
                task.notified = false;
                (t, task.waker.clone(), sent)
            };
            for (id, make) in sent {
                put_local(id, make());
            }
            let Some(fut) = take_local(t) else {
                unreachable!("task {t} runs on core {c} but its future is not on this thread")
            };
            let (g, ended) = self.poll(c, t, fut, waker);
            match ended {
                Some(f) => {
                    drop(g);
                    drop(f);
                }
                None => held = Some(g),
            }
        }
    }

    /// Poll task `t` on core `c`.
    /// Returns the runtime's lock, still held (the next pick takes it over), and the
    /// future of a task that ended (to drop without the lock: its destructors may call
    /// back).
    fn poll(
        &self,
        c: usize,
        t: u32,
        mut fut: TaskFuture,
        waker: std::task::Waker,
    ) -> (InnerGuard<'_>, Option<TaskFuture>) {
        CUR_TASK.with(|x| x.set(t));
        let mut cx = Context::from_waker(&waker);
        let r = fut.as_mut().poll(&mut cx);
        CUR_TASK.with(|x| x.set(u32::MAX));
        let mut dropped = None;
        let mut inner = self.lock();
        {
            let charge = std::mem::take(&mut inner.charge);
            let task = &mut inner.tasks[t as usize];
            match r {
                Poll::Ready(()) => {
                    task.state = TState::Done;
                    dropped = Some(fut);
                    let joiners = std::mem::take(&mut task.joiners);
                    if inner.end_wait(t) {
                        inner.deps.blocked.remove(&t);
                    }
                    inner.deps.dirty = true;
                    inner.cores[c].current = None;
                    for j in joiners {
                        inner.wake(j);
                    }
                }
                Poll::Pending => {
                    put_local(t, fut);
                    if task.burst > 0 {
                        // Keeps the core: the burst runs next (see run_core).
                    } else {
                        inner.cores[c].current = None;
                        let notified = std::mem::take(&mut inner.tasks[t as usize].notified);
                        inner.tasks[t as usize].state = TState::Blocked;
                        if notified {
                            inner.wake(t);
                        }
                    }
                }
            }
            inner.tasks[t as usize].vtime += charge;
            inner.charge_core(c as u16, charge);
        }
        (inner, dropped)
    }
}

/// The deadlock error, naming what each blocked task waits on.
pub(super) fn stuck(inner: &Inner) -> RunError {
    let mut list: Vec<String> = inner
        .tasks
        .iter()
        .enumerate()
        .filter(|(_, t)| t.state == TState::Blocked)
        .take(8)
        .map(|(i, t)| format!("task {i} '{}' waits on {:?}", t.ctx.name, t.blocked_on))
        .collect();
    if list.is_empty() {
        list.push("no task waits: a future returned Pending without arranging a wake-up".into());
    }
    RunError::Deadlock {
        now_ns: inner.now,
        blocked: list.join("; "),
    }
}
