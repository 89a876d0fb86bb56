//! The executor: tasks, the simulated host's cores and their run queues, virtual time.
//!
//! # The simulated host
//! `cores` CPU cores, each with a run queue. A core runs one task at a time; a task runs
//! when its core picks it and holds the core until its poll returns, plus the CPU it
//! asked for ([`crate::cpu`]) and the CPU the stack charges on its behalf (the
//! [`CostTable`]: submission per I/O, a context switch when the core changes task, an
//! interrupt per completion on the core the I/O came from). A CPU burst runs in slices
//! of `quantum_ns`; between slices the core may give way to another runnable task, and
//! a critical wake-up may preempt a non-critical burst. So a task whose I/O completed
//! waits to run again — the "after device" part of the latency breakdown.
//!
//! # Wake-up order ([`Wakeup`])
//! `fifo`: runnable tasks run in the order they became runnable. `critical` is
//! FastResponse's Algorithm 1 (ICS '22 §3.5): if the woken task is critical (by class or
//! by inheritance) — whatever woke it: its I/O's completion, a lock, a condition, a
//! join, a timer — and the core's `next` is empty or not critical, the task becomes
//! `next` (run before the queue) and the core reschedules at once (a non-critical burst
//! is preempted); otherwise it joins the queue. The paper's scheduler acts on every
//! wake-up of a critical process: its BS-Opt cuts T_Sched, the wake-ups of the journal
//! thread and of the fsync thread, which involve no I/O (§4.4, Fig. 15(b)).
//!
//! The paper keeps CFS's guard against starvation: "the process pointed by next is
//! scheduled only if the difference between its vtime and the minimum vtime is less
//! than a given threshold" (CFS's `wakeup_preempt_entity`, 4 ms on its server). So each
//! simulated task keeps a *vtime*, the CPU it has run, and a waking task is placed no
//! further back than the core's minimum vtime less half of CFS's 6 ms latency (CFS's
//! `place_entity` for sleepers, so a long sleep earns no unbounded credit); a core picks
//! its `next` only while that task's vtime is within [`WAKEUP_GRAN_NS`] of the least
//! vtime in its queue, and its queue's head otherwise. Critical tasks that keep waking
//! one another into `next` therefore cannot shut the queue out. (The real world polls
//! every runnable task of a core in each round, `next` first: nothing starves there.)
//!
//! # Determinism
//! One thread, virtual time, events ordered by (time, sequence); cores are visited in
//! index order; nothing reads a clock. The same program, configuration and seed give the
//! same report, byte for byte.
//!
//! # The real world, thread per core
//! With a directory, core `c` is an OS thread with its own io_uring ([`cores`]); the
//! state above (tasks, run queues, dependencies, the one block layer) is shared under
//! one mutex, taken for the runtime's bookkeeping and never around a poll or a system
//! call — and not per I/O: a core polls a round of its tasks without it, their I/O
//! waits in the core's batch (`io/batch.rs`), and the round's outcome goes to the
//! shared state at the core's next turn. A task's future lives on its core's thread
//! ([`put_local`]); a wake-up of a task of another core rings that core's doorbell when
//! the lock is released.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Waker;

use sluice_core::{FlowId, IoClass, Nanos};

use crate::config::{CostTable, Inherit, Wakeup};
use crate::ctx::TaskCtx;
use crate::deps::{self, Dep, Deps, Graph};
use crate::io::IoState;

pub(crate) mod cores;
mod driver;
mod shared;
pub(crate) mod waits;
pub use driver::RunError;
pub(crate) use shared::{
    current_has_cache, current_is_real, current_pool, current_shared, current_task,
    discard_stale_futures, drop_tasks, enter, leave, my_core, put_local, real_clock, real_now,
    take_local, try_with, with, InnerGuard, Shared, WakeList, ALL_CORES, MY_CORE,
};
use shared::{TaskWaker, CUR_TASK};

/// Times the runtime's lock was taken in this process.
pub(crate) fn shared_locks() -> u64 {
    shared::LOCKS.load(std::sync::atomic::Ordering::Relaxed)
}

/// CFS's wake-up granularity as FastResponse's server had it: a critical `next` runs
/// before the queue only while its vtime is within this of the queue's least (§3.5).
pub const WAKEUP_GRAN_NS: Nanos = 4_000_000;
/// How far behind the core's minimum vtime a waking task is placed (CFS: half of
/// `sched_latency`, 6 ms).
const SLEEPER_CREDIT_NS: Nanos = 3_000_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TState {
    /// Waiting for something.
    Blocked,
    /// In its core's run queue (or its `next`).
    Queued,
    /// Holding its core (switching to it, polled, or running a CPU burst).
    Running,
    /// Finished.
    Done,
}

/// A task's future, boxed.
pub(crate) type TaskFuture = Pin<Box<dyn Future<Output = ()>>>;
/// What makes a task's future on another core's thread (the closure is sent; the
/// future it makes there never moves, so it need not be `Send`).
pub(crate) type MakeFuture = Box<dyn FnOnce() -> TaskFuture + Send>;

pub(crate) struct Task {
    pub ctx: TaskCtx,
    pub flow: FlowId,
    pub core: u16,
    waker: Waker,
    pub state: TState,
    /// Woken while running: queue it again when its poll returns pending.
    notified: bool,
    pub blocked_on: Option<Dep>,
    /// When its wait on `blocked_on` began, and where (a task critical by itself:
    /// [`waits`]).
    wait: Option<(Nanos, waits::Site)>,
    /// Critical by inheritance.
    pub boosted: bool,
    /// Explicit boosts ([`crate::TaskHandle::boost`]).
    pub explicit: u32,
    /// I/O slots it issued that have not completed.
    pub outstanding: Vec<u32>,
    /// CPU still to run of the burst it asked for.
    pub burst: Nanos,
    /// Its last CPU burst finished (the `cpu` future resolves).
    pub burst_done: bool,
    /// Tasks waiting for it to end.
    joiners: Vec<u32>,
    /// CPU it has run (simulation), placed on wake-up: its CFS vtime.
    pub vtime: Nanos,
    /// Its pause at the cache's admission was resolved by inheritance (RCP §4.4): the
    /// pause ends at its next poll.
    pub admission_resolved: bool,
    /// Its state in the page cache's dirty throttle (Linux's per-task `nr_dirtied`,
    /// `nr_dirtied_pause`, `dirty_paused_when`).
    pub dirtier: sluice_cache::throttle::Dirtier,
}

impl Task {
    /// Task `t` waits for this one to end.
    pub(crate) fn add_joiner(&mut self, t: u32) {
        if !self.joiners.contains(&t) {
            self.joiners.push(t);
        }
    }

    /// Critical by its class or an explicit boost (a root of inheritance).
    pub fn critical_by_itself(&self) -> bool {
        self.ctx.class == IoClass::Critical || self.explicit > 0
    }

    /// The class its I/O and wake-ups get now.
    pub fn effective_class(&self) -> IoClass {
        if self.critical_by_itself() || self.boosted {
            IoClass::Critical
        } else {
            self.ctx.class
        }
    }
}

#[derive(Debug, Default)]
pub(crate) struct Core {
    fifo: VecDeque<u32>,
    next: Option<u32>,
    /// The core cannot pick a task before this (a burst slice, a switch, stack CPU).
    busy_until: Nanos,
    /// The task holding the core.
    current: Option<u32>,
    /// The core is in a CPU burst of `current` (preemptible).
    in_burst: bool,
    /// The last busy period of `current` was a burst slice (a quantum boundary).
    slice_ended: bool,
    /// CPU `current` has run since the core picked it.
    ran_ns: Nanos,
    /// Bumped whenever `busy_until` moves, to recognise stale core events.
    gen: u64,
    last: Option<u32>,
    /// The least vtime of its tasks, never decreasing (CFS's `min_vruntime`).
    min_vtime: Nanos,
    pub busy_ns: Nanos,
    /// Real world: a task spun in `cpu` this round (its core handles every reaped
    /// completion at its next turn).
    pub spun: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// A core's busy period ended (if `gen` still matches).
    CoreFree { core: u16, gen: u64 },
    /// A sleeping task's deadline.
    Timer { task: u32 },
    /// The block layer's policy timer.
    PolicyTimer,
    /// Sample the policy's counters.
    Sample,
    /// Simulation: an I/O's request reaches the block layer (its submission CPU spent).
    Submit { slot: u32, gen: u32 },
}

/// Figures of the run (the report's `extra.runtime`).
#[derive(Clone, Debug, Default)]
pub(crate) struct RtStats {
    pub spawned: u64,
    pub polls: u64,
    pub critical_next: u64,
    pub next_deferred: u64,
    pub preemptions: u64,
    pub boosts: u64,
    pub boost_ends: u64,
    pub inherited_promotions: u64,
    /// Real cores' idle waits that lasted the whole timeout with nothing in flight.
    pub idle_timeouts: u64,
}

/// The settings the executor runs with.
#[derive(Clone, Debug)]
pub(crate) struct ExecConfig {
    pub cores: u16,
    pub wakeup: Wakeup,
    pub inherit: Inherit,
    pub costs: CostTable,
    pub read_path: crate::ReadPath,
    pub interval_ns: Nanos,
    /// Real backend: the cores' rings take 128-byte SQEs (tasks' io_uring commands).
    pub uring_commands: bool,
    /// Real backend: core `c`'s thread pinned to CPU `core_cpus[c % len]` (empty: not).
    pub core_cpus: Vec<usize>,
}

pub(crate) struct Inner {
    pub now: Nanos,
    pub cfg: ExecConfig,
    pub tasks: Vec<Task>,
    pub cores: Vec<Core>,
    events: BinaryHeap<Reverse<(Nanos, u64, Ev)>>,
    seq: u64,
    pub deps: Deps,
    pub io: IoState,
    pub stats: RtStats,
    /// Where critical tasks waited (RCP Table 2).
    pub waits: waits::WaitTally,
    next_core: u16,
    /// Stack CPU charged to the task being polled (added to its core after the poll).
    pub charge: Nanos,
    /// Scratch for completion handling (kept, so nothing is allocated per batch).
    finished: Vec<sluice_block::Finished>,
    woken: Vec<u32>,
    policy_timer: Option<Nanos>,
    /// Real world, several threads: per core, its doorbell is to be rung (a task of
    /// it became runnable, or its outbox filled) when the lock is released.
    pub kicks: Vec<bool>,
    pub kicked: bool,
    /// Real world, several threads: per core, tasks spawned onto it from another core,
    /// whose futures it makes at its next poll.
    pub inbox: Vec<Vec<(u32, MakeFuture)>>,
    /// Real world: the threads stop (the main task ended, or the run failed).
    pub stop: bool,
    pub failure: Option<RunError>,
    /// Real world: per core, its thread found nothing to do and waits in its ring.
    pub idle: Vec<bool>,
}

// SAFETY: `Inner` is shared by the real backend's core threads under a mutex. What it
// holds is plain data, wakers (Send + Sync), `Send` closures in `inbox`, and the I/O
// state, whose non-`Send` parts are the raw addresses of buffers in flight — owned by
// their I/O slots, used only to build SQEs. (The page cache it points to is `Sync`: its
// state machine is behind its own mutex, `cache.rs`.) Task
// futures (which may be `!Send`) are not here: they live in their core thread's table
// (`put_local`).
unsafe impl Send for Inner {}

impl Inner {
    pub(crate) fn new(cfg: ExecConfig, io: IoState, helper_window_ns: Nanos) -> Inner {
        let cores_n = cfg.cores as usize;
        let cores = (0..cfg.cores).map(|_| Core::default()).collect();
        Inner {
            now: 0,
            cfg,
            tasks: Vec::new(),
            cores,
            events: BinaryHeap::new(),
            seq: 0,
            deps: Deps {
                helper_window_ns,
                ..Deps::default()
            },
            io,
            stats: RtStats::default(),
            waits: waits::WaitTally::default(),
            next_core: 0,
            charge: 0,
            policy_timer: None,
            finished: Vec::new(),
            woken: Vec::new(),
            kicks: vec![false; cores_n],
            kicked: false,
            inbox: (0..cores_n).map(|_| Vec::new()).collect(),
            stop: false,
            failure: None,
            idle: vec![false; cores_n],
        }
    }

    /// Whether the cores are threads of their own (the real world).
    pub(crate) fn threaded(&self) -> bool {
        self.io.is_real()
    }

    /// Core `c` has work: ring its doorbell when the lock is released.
    pub(crate) fn kick(&mut self, c: u16) {
        if self.threaded() {
            self.kicks[c as usize] = true;
            self.kicked = true;
        }
    }

    /// Whether something pending can still wake a task: a sleeping task's deadline, a
    /// core's busy period ending, or a request in the block layer. A policy timer or a
    /// counter sample alone cannot: with none of the above, every blocked task waits for
    /// another (a deadlock), however many of those events are still due.
    pub(crate) fn can_wake(&self) -> bool {
        self.io.block.live() > 0
            || self.events.iter().any(|Reverse((_, _, e))| {
                matches!(
                    e,
                    Ev::Timer { .. } | Ev::CoreFree { .. } | Ev::Submit { .. }
                )
            })
    }

    /// When core `c` is done with what it was charged so far.
    pub(crate) fn core_free_at(&self, c: u16) -> Nanos {
        self.cores[c as usize].busy_until
    }

    /// Simulation: slot `s`'s request reaches the block layer at `at`.
    pub(crate) fn submit_at(&mut self, at: Nanos, s: u32, gen: u32) {
        self.push(at, Ev::Submit { slot: s, gen });
    }

    fn push(&mut self, at: Nanos, ev: Ev) {
        self.seq += 1;
        self.events.push(Reverse((at, self.seq, ev)));
    }

    /// Make `t` runnable (see the module documentation for the order).
    pub(crate) fn wake(&mut self, t: u32) {
        let task = &mut self.tasks[t as usize];
        match task.state {
            TState::Done | TState::Queued => return,
            TState::Running => {
                task.notified = true;
                return;
            }
            TState::Blocked => {}
        }
        task.state = TState::Queued;
        let c = task.core as usize;
        if self.end_wait(t) {
            self.deps.blocked.remove(&t);
            self.deps.dirty = true;
        }
        let task = &mut self.tasks[t as usize];
        // CFS's placement of a waking sleeper (GENTLE_FAIR_SLEEPERS: half the latency).
        task.vtime = task
            .vtime
            .max(self.cores[c].min_vtime.saturating_sub(SLEEPER_CREDIT_NS));
        let critical = task.effective_class() == IoClass::Critical;
        if self.cfg.wakeup == Wakeup::Critical && critical {
            let next_critical = self.cores[c]
                .next
                .is_some_and(|n| self.tasks[n as usize].effective_class() == IoClass::Critical);
            if !next_critical {
                let core = &mut self.cores[c];
                if let Some(old) = core.next.take() {
                    core.fifo.push_front(old);
                }
                core.next = Some(t);
                self.stats.critical_next += 1;
                self.resched(c);
                self.kick(c as u16);
                return;
            }
        }
        self.cores[c].fifo.push_back(t);
        self.kick(c as u16);
    }

    /// The task core `c` runs next (simulation): its `next`, unless a queued task has
    /// run more than [`WAKEUP_GRAN_NS`] less CPU (then the queue's head; `next` keeps
    /// its place), else the queue's head. Moves the core's minimum vtime forward.
    pub(crate) fn pick(&mut self, c: usize) -> Option<u32> {
        let tasks = &self.tasks;
        let core = &mut self.cores[c];
        let least = core.fifo.iter().map(|&t| tasks[t as usize].vtime).min();
        let t = match core.next {
            Some(n) if least.is_some_and(|l| tasks[n as usize].vtime > l + WAKEUP_GRAN_NS) => {
                self.stats.next_deferred += 1;
                core.fifo.pop_front()
            }
            _ => core.next.take().or_else(|| core.fifo.pop_front()),
        }?;
        let v = least.map_or(tasks[t as usize].vtime, |l| l.min(tasks[t as usize].vtime));
        core.min_vtime = core.min_vtime.max(v);
        Some(t)
    }

    /// Need-resched: a non-critical CPU burst in progress on core `c` gives way now.
    fn resched(&mut self, c: usize) {
        let now = self.now;
        let core = &mut self.cores[c];
        let Some(cur) = core.current else { return };
        if !core.in_burst || self.tasks[cur as usize].effective_class() == IoClass::Critical {
            return;
        }
        let left = core.busy_until.saturating_sub(now);
        core.busy_ns -= left;
        core.busy_until = now;
        core.current = None;
        core.in_burst = false;
        core.gen += 1;
        core.fifo.push_front(cur);
        let task = &mut self.tasks[cur as usize];
        // What it had not run yet (the core's busy time may hold more than its slice:
        // stack CPU, an interrupt). A slice that ends at this very instant left nothing:
        // the burst stays as it was, done if that was its last slice (marking it not
        // done with nothing left to run would leave the task pending for ever).
        if left > 0 {
            task.burst += left;
            task.vtime = task.vtime.saturating_sub(left);
            task.burst_done = false;
        }
        task.state = TState::Queued;
        self.stats.preemptions += 1;
    }

    /// The device's completions due at `t`: each finished request's waiters are woken
    /// (the I/O rule) and its core is charged the completion (simulation only).
    fn handle_completions(&mut self, t: Nanos) {
        let mut finished = std::mem::take(&mut self.finished);
        self.io.advance_device(t, &mut finished);
        self.finish_requests(&mut finished);
        self.finished = finished;
    }

    /// Requests the block layer finished: their waiters are woken (the I/O rule).
    pub(crate) fn finish_requests(&mut self, finished: &mut Vec<sluice_block::Finished>) {
        let mut woken = std::mem::take(&mut self.woken);
        for f in finished.drain(..) {
            let s = f.token as u32;
            let issuer = self.io.issuer(s);
            self.tasks[issuer as usize].outstanding.retain(|&x| x != s);
            let core = self.io.complete(f, &mut woken);
            let ns = self.cfg.costs.complete_ns;
            self.charge_core(core, ns);
            self.deps.dirty = true;
            for w in woken.drain(..) {
                self.wake(w);
            }
        }
        self.woken = woken;
    }

    /// Scratch vector for finished requests (kept: no allocation per batch).
    pub(crate) fn take_finished(&mut self) -> Vec<sluice_block::Finished> {
        std::mem::take(&mut self.finished)
    }

    pub(crate) fn keep_finished(&mut self, v: Vec<sluice_block::Finished>) {
        self.finished = v;
    }

    /// Core `c` is busy for `ns` more (stack CPU, an interrupt), after what it is doing.
    pub(crate) fn charge_core(&mut self, c: u16, ns: Nanos) {
        if ns == 0 || self.io.is_real() {
            // Real: the CPU the stack uses is real, not charged.
            return;
        }
        let now = self.now;
        let core = &mut self.cores[c as usize];
        core.busy_until = core.busy_until.max(now) + ns;
        core.busy_ns += ns;
        core.gen += 1;
        let (at, gen) = (core.busy_until, core.gen);
        self.push(at, Ev::CoreFree { core: c, gen });
    }

    /// Record that the task being polled waits on `dep`.
    pub(crate) fn block_on(&mut self, t: u32, dep: Dep) {
        if self.tasks[t as usize].blocked_on != Some(dep) {
            self.end_wait(t);
            let task = &self.tasks[t as usize];
            let wait = task.critical_by_itself().then(|| {
                let site = waits::site(&self.deps, t, dep, |s| self.io.issuer(s));
                (self.now, site)
            });
            let task = &mut self.tasks[t as usize];
            task.blocked_on = Some(dep);
            task.wait = wait;
            self.deps.blocked.insert(t);
            self.deps.dirty = true;
        }
    }

    /// Take task `t`'s edge, if any (`true`), tallying a critical task's wait at its
    /// site. The caller updates `deps.blocked`.
    pub(crate) fn end_wait(&mut self, t: u32) -> bool {
        let task = &mut self.tasks[t as usize];
        if let Some((since, site)) = task.wait.take() {
            self.waits.add(site, self.now.saturating_sub(since));
        }
        task.blocked_on.take().is_some()
    }

    /// Forget the waits tallied so far; waits going on count from now.
    pub(crate) fn restart_waits(&mut self) {
        self.waits = waits::WaitTally::default();
        let now = self.now;
        for task in &mut self.tasks {
            if let Some((since, _)) = &mut task.wait {
                *since = now;
            }
        }
    }

    /// Stop waiting (the wait ended without a wake, e.g. the resource was free).
    pub(crate) fn unblock(&mut self, t: u32) {
        if (t as usize) < self.tasks.len() && self.end_wait(t) {
            self.deps.blocked.remove(&t);
            self.deps.dirty = true;
        }
    }

    /// Wake `t` at `at` (a sleep).
    pub(crate) fn timer(&mut self, t: u32, at: Nanos) {
        self.push(at, Ev::Timer { task: t });
    }

    /// The task being polled asks for `ns` of CPU.
    pub(crate) fn cpu(&mut self, t: u32, ns: Nanos) {
        let task = &mut self.tasks[t as usize];
        task.burst += ns;
        task.burst_done = false;
    }

    /// A new task on `core`, or `ctx`'s core, or the next core round robin. Its future
    /// is placed by the caller (before the task can be polled).
    pub(crate) fn spawn_task(
        &mut self,
        ctx: TaskCtx,
        core: Option<u16>,
        wakes: &Arc<WakeList>,
    ) -> u32 {
        let id = self.tasks.len() as u32;
        let core = match core.or(ctx.core) {
            Some(c) => c % self.cfg.cores,
            None => {
                let c = self.next_core;
                self.next_core = (c + 1) % self.cfg.cores;
                c
            }
        };
        let flow = self.io.flow_of(&ctx);
        self.tasks.push(Task {
            ctx,
            flow,
            core,
            waker: Waker::from(Arc::new(TaskWaker {
                id,
                core,
                list: wakes.clone(),
            })),
            state: TState::Blocked,
            notified: false,
            blocked_on: None,
            wait: None,
            boosted: false,
            explicit: 0,
            outstanding: Vec::new(),
            burst: 0,
            burst_done: true,
            joiners: Vec::new(),
            admission_resolved: false,
            vtime: 0,
            dirtier: Default::default(),
        });
        self.stats.spawned += 1;
        self.wake(id);
        id
    }

    /// Recompute inheritance if anything changed.
    pub(crate) fn refresh_deps(&mut self) {
        if !self.deps.dirty {
            return;
        }
        let sw = self.cfg.inherit;
        let now = self.now;
        let mut deps = std::mem::take(&mut self.deps);
        let (started, ended) = deps::refresh(&mut deps, &mut GraphView(self), sw, now);
        let mut resolved = std::mem::take(&mut deps.resolved);
        self.deps = deps;
        for &t in &resolved {
            self.tasks[t as usize].admission_resolved = true;
            self.wake(t);
        }
        resolved.clear();
        self.deps.resolved = resolved;
        self.stats.boosts += started as u64;
        self.stats.boost_ends += ended as u64;
    }
}

/// The tasks and the I/O as the dependency walk sees them.
struct GraphView<'a>(&'a mut Inner);

impl Graph for GraphView<'_> {
    fn edge(&self, t: u32) -> Option<Dep> {
        self.0.tasks[t as usize].blocked_on
    }
    fn critical_by_itself(&self, t: u32) -> bool {
        self.0.tasks[t as usize].critical_by_itself()
    }
    fn set_boost(&mut self, t: u32, on: bool) {
        let task = &mut self.0.tasks[t as usize];
        assert_ne!(
            task.boosted, on,
            "inheritance: task {t} boosted twice or undone twice"
        );
        task.boosted = on;
        // Its outstanding requests are I/O dependencies of the chain (RCP §4.2.2).
        if on && self.0.cfg.inherit.follows_io() {
            // By index: `promote` does not change the list (no copy of it).
            for i in 0..self.0.tasks[t as usize].outstanding.len() {
                let s = self.0.tasks[t as usize].outstanding[i];
                if self.0.io.promote(self.0.now, s) {
                    self.0.stats.inherited_promotions += 1;
                }
            }
        }
    }
    fn promote_io(&mut self, s: u32) {
        if self.0.io.promote(self.0.now, s) {
            self.0.stats.inherited_promotions += 1;
        }
    }
}
