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
//! by inheritance) and was woken by the completion of its I/O, and the core's `next` is
//! empty or not critical, the task becomes `next` (run before the queue) and the core
//! reschedules at once (a non-critical burst is preempted); otherwise it joins the queue.
//!
//! # Determinism
//! One thread, virtual time, events ordered by (time, sequence); cores are visited in
//! index order; nothing reads a clock. The same program, configuration and seed give the
//! same report, byte for byte.

use std::cell::{Cell, RefCell};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::{Arc, Mutex as StdMutex};
use std::task::{Context, Poll, Wake, Waker};

use sluice_core::{FlowId, IoClass, Nanos};

use crate::config::{CostTable, Inherit, Wakeup};
use crate::ctx::TaskCtx;
use crate::deps::{self, Dep, Deps, Graph, Switches};
use crate::io::IoState;

/// Why a task became runnable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WakeKind {
    /// The completion of an I/O it waits on (the critical rule applies).
    Io,
    /// Anything else: a lock, a condition, a timer, a join, a generic waker.
    Other,
}

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

pub(crate) struct Task {
    fut: Option<TaskFuture>,
    pub ctx: TaskCtx,
    pub flow: FlowId,
    pub core: u16,
    waker: Waker,
    pub state: TState,
    /// Woken while running: queue it again when its poll returns pending.
    notified: bool,
    pub blocked_on: Option<Dep>,
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
}

impl Task {
    /// Take its future (at shutdown).
    pub(crate) fn take_future(&mut self) -> Option<TaskFuture> {
        self.fut.take()
    }

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
    pub busy_ns: Nanos,
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
}

/// Figures of the run (the report's `extra.runtime`).
#[derive(Clone, Debug, Default)]
pub(crate) struct RtStats {
    pub spawned: u64,
    pub polls: u64,
    pub critical_next: u64,
    pub preemptions: u64,
    pub boosts: u64,
    pub boost_ends: u64,
    pub inherited_promotions: u64,
}

/// The settings the executor runs with.
#[derive(Clone, Debug)]
pub(crate) struct ExecConfig {
    pub cores: u16,
    pub wakeup: Wakeup,
    pub inherit: Inherit,
    pub costs: CostTable,
    pub interval_ns: Nanos,
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
    next_core: u16,
    /// Stack CPU charged to the task being polled (added to its core after the poll).
    pub charge: Nanos,
    /// Scratch for completion handling (kept, so nothing is allocated per batch).
    finished: Vec<sluice_block::Finished>,
    woken: Vec<u32>,
    policy_timer: Option<Nanos>,
}

/// Generic wake-ups (a waker used by a future that is not the runtime's).
#[derive(Debug, Default)]
pub(crate) struct WakeList(StdMutex<Vec<u32>>);

struct TaskWaker {
    id: u32,
    list: Arc<WakeList>,
}

impl Wake for TaskWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.list.0.lock().expect("wake list").push(self.id);
    }
}

pub(crate) struct Shared {
    pub inner: RefCell<Inner>,
    wakes: Arc<WakeList>,
}

thread_local! {
    static CURRENT: RefCell<Option<Rc<Shared>>> = const { RefCell::new(None) };
    static CUR_TASK: Cell<u32> = const { Cell::new(u32::MAX) };
}

/// Run `f` on the runtime of this thread and the task being polled.
///
/// # Panics
/// Outside a running [`crate::Stack`] (the runtime's functions are for its tasks).
pub(crate) fn with<R>(f: impl FnOnce(&mut Inner, u32) -> R) -> R {
    let sh = CURRENT.with(|c| c.borrow().clone()).unwrap_or_else(|| {
        panic!("sluice_runtime: called outside a running Stack (use Stack::run)")
    });
    let t = CUR_TASK.with(|c| c.get());
    let mut inner = sh.inner.borrow_mut();
    f(&mut inner, t)
}

/// Like [`with`], but `None` when no runtime is running or it is busy (a guard dropped
/// while the runtime shuts down).
pub(crate) fn try_with<R>(f: impl FnOnce(&mut Inner, u32) -> R) -> Option<R> {
    let sh = CURRENT.with(|c| c.borrow().clone())?;
    let t = CUR_TASK.with(|c| c.get());
    let mut inner = sh.inner.try_borrow_mut().ok()?;
    Some(f(&mut inner, t))
}

impl Inner {
    pub(crate) fn new(cfg: ExecConfig, io: IoState, helper_window_ns: Nanos) -> Inner {
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
            next_core: 0,
            charge: 0,
            policy_timer: None,
            finished: Vec::new(),
            woken: Vec::new(),
        }
    }

    fn push(&mut self, at: Nanos, ev: Ev) {
        self.seq += 1;
        self.events.push(Reverse((at, self.seq, ev)));
    }

    /// Make `t` runnable (see the module documentation for the order).
    pub(crate) fn wake(&mut self, t: u32, kind: WakeKind) {
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
        if task.blocked_on.take().is_some() {
            self.deps.blocked.remove(&t);
            self.deps.dirty = true;
        }
        let critical = task.effective_class() == IoClass::Critical;
        let c = task.core as usize;
        if self.cfg.wakeup == Wakeup::Critical && kind == WakeKind::Io && critical {
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
                return;
            }
        }
        self.cores[c].fifo.push_back(t);
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
        task.burst += left;
        task.burst_done = false;
        task.state = TState::Queued;
        self.stats.preemptions += 1;
    }

    /// The device's completions due at `t`: each finished request's waiters are woken
    /// (the I/O rule) and its core is charged the completion (simulation only).
    fn handle_completions(&mut self, t: Nanos) {
        let mut finished = std::mem::take(&mut self.finished);
        let mut woken = std::mem::take(&mut self.woken);
        self.io.advance_device(t, &mut finished);
        for f in finished.drain(..) {
            let s = f.token as u32;
            let issuer = self.io.issuer(s);
            self.tasks[issuer as usize].outstanding.retain(|&x| x != s);
            let core = self.io.complete(f, &mut woken);
            let ns = self.cfg.costs.complete_ns;
            self.charge_core(core, ns);
            self.deps.dirty = true;
            for w in woken.drain(..) {
                self.wake(w, WakeKind::Io);
            }
        }
        self.finished = finished;
        self.woken = woken;
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
        let task = &mut self.tasks[t as usize];
        if task.blocked_on != Some(dep) {
            task.blocked_on = Some(dep);
            self.deps.blocked.insert(t);
            self.deps.dirty = true;
        }
    }

    /// Stop waiting (the wait ended without a wake, e.g. the resource was free).
    pub(crate) fn unblock(&mut self, t: u32) {
        let Some(task) = self.tasks.get_mut(t as usize) else {
            return;
        };
        if task.blocked_on.take().is_some() {
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

    /// A new task on `ctx`'s core (or the next core round robin).
    pub(crate) fn spawn_task(
        &mut self,
        ctx: TaskCtx,
        fut: Pin<Box<dyn Future<Output = ()>>>,
        wakes: &Arc<WakeList>,
    ) -> u32 {
        let id = self.tasks.len() as u32;
        let core = match ctx.core {
            Some(c) => c % self.cfg.cores,
            None => {
                let c = self.next_core;
                self.next_core = (c + 1) % self.cfg.cores;
                c
            }
        };
        let flow = self.io.flow_of(&ctx);
        self.tasks.push(Task {
            fut: Some(fut),
            ctx,
            flow,
            core,
            waker: Waker::from(Arc::new(TaskWaker {
                id,
                list: wakes.clone(),
            })),
            state: TState::Blocked,
            notified: false,
            blocked_on: None,
            boosted: false,
            explicit: 0,
            outstanding: Vec::new(),
            burst: 0,
            burst_done: true,
            joiners: Vec::new(),
        });
        self.stats.spawned += 1;
        self.wake(id, WakeKind::Other);
        id
    }

    /// Recompute inheritance if anything changed.
    pub(crate) fn refresh_deps(&mut self) {
        if !self.deps.dirty {
            return;
        }
        let inh = self.cfg.inherit;
        let sw = Switches {
            locks: inh.locks,
            condvars: inh.condvars,
            io: inh.io,
            transitive: inh.transitive,
        };
        let now = self.now;
        let mut deps = std::mem::take(&mut self.deps);
        let (started, ended) = deps::refresh(&mut deps, &mut GraphView(self), sw, now);
        self.deps = deps;
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
        if on {
            let slots = task.outstanding.clone();
            for s in slots {
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
}

impl Shared {
    pub(crate) fn new(inner: Inner) -> Rc<Shared> {
        Rc::new(Shared {
            inner: RefCell::new(inner),
            wakes: Arc::new(WakeList::default()),
        })
    }

    pub(crate) fn spawn(&self, ctx: TaskCtx, fut: Pin<Box<dyn Future<Output = ()>>>) -> u32 {
        self.inner.borrow_mut().spawn_task(ctx, fut, &self.wakes)
    }

    /// Run until task `main` is done (or the run cannot go on).
    pub(crate) fn run(self: &Rc<Self>, main: u32, max_ns: Nanos) -> Result<(), RunError> {
        CURRENT.with(|c| *c.borrow_mut() = Some(self.clone()));
        let r = self.run_loop(main, max_ns);
        CURRENT.with(|c| *c.borrow_mut() = None);
        r
    }

    fn run_loop(self: &Rc<Self>, main: u32, max_ns: Nanos) -> Result<(), RunError> {
        {
            let mut inner = self.inner.borrow_mut();
            if inner.io.block.has_counters() {
                inner.push(0, Ev::Sample);
            }
        }
        loop {
            {
                let mut inner = self.inner.borrow_mut();
                if let crate::io::Port::Real(p) = &inner.io.port {
                    let t = p.clock();
                    inner.now = inner.now.max(t);
                }
            }
            self.drain_wakes();
            let ncores = self.inner.borrow().cores.len();
            for c in 0..ncores {
                self.run_core(c);
            }
            {
                let mut inner = self.inner.borrow_mut();
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
            if !self.wakes.0.lock().expect("wake list").is_empty() {
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
        let inner = self.inner.borrow();
        inner.cores.iter().any(|c| {
            c.current.is_none()
                && c.busy_until <= inner.now
                && (c.next.is_some() || !c.fifo.is_empty())
        })
    }

    fn drain_wakes(&self) {
        let woken: Vec<u32> = std::mem::take(&mut *self.wakes.0.lock().expect("wake list"));
        if woken.is_empty() {
            return;
        }
        let mut inner = self.inner.borrow_mut();
        for t in woken {
            inner.wake(t, WakeKind::Other);
        }
    }

    /// Move time to the next event and handle everything due then.
    fn advance(&self, max_ns: Nanos) -> Result<(), RunError> {
        if self.inner.borrow().io.is_real() {
            return self.advance_real();
        }
        let mut inner = self.inner.borrow_mut();
        let t_dev = inner.io.next_event_ns();
        let t_ev = inner.events.peek().map(|Reverse((t, _, _))| *t);
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

    /// The real world: submit, wait for a completion or the next timer, read the clock,
    /// handle what is due.
    fn advance_real(&self) -> Result<(), RunError> {
        let mut inner = self.inner.borrow_mut();
        let deadline = inner.events.peek().map(|Reverse((t, _, _))| *t);
        let inflight = match &inner.io.port {
            crate::io::Port::Real(p) => p.inflight(),
            crate::io::Port::Sim(_) => 0,
        };
        if inflight == 0 && deadline.is_none() && inner.io.block.inflight() == 0 {
            return Err(stuck(&inner));
        }
        if let crate::io::Port::Real(p) = &mut inner.io.port {
            p.wait(deadline).map_err(RunError::Ring)?;
            inner.now = p.clock().max(inner.now);
        }
        let t = inner.now;
        inner.handle_completions(t);
        self.due_events(&mut inner, t);
        Ok(())
    }

    /// Handle the events due at `t`.
    fn due_events(&self, inner: &mut Inner, t: Nanos) {
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
                Ev::Timer { task } => inner.wake(task, WakeKind::Other),
                Ev::PolicyTimer => {
                    if inner.policy_timer.is_some_and(|p| p <= t) {
                        inner.policy_timer = None;
                        inner.io.block.fire_timer(t);
                    }
                }
                Ev::Sample => {
                    inner.io.block.sample_counters(t);
                    let next = t + inner.cfg.interval_ns;
                    inner.push(next, Ev::Sample);
                }
            }
        }
    }

    /// Let core `c` run tasks while it is free at the current time.
    fn run_core(&self, c: usize) {
        loop {
            let picked = {
                let mut inner = self.inner.borrow_mut();
                let inner = &mut *inner;
                let now = inner.now;
                let core = &mut inner.cores[c];
                if core.busy_until > now {
                    None
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
                    Some((cur, false))
                } else if let Some(t) = core.next.take().or_else(|| core.fifo.pop_front()) {
                    core.current = Some(t);
                    core.slice_ended = false;
                    core.ran_ns = 0;
                    let switch = core.last != Some(t);
                    core.last = Some(t);
                    inner.tasks[t as usize].state = TState::Running;
                    Some((t, switch))
                } else {
                    None
                }
            };
            let Some((t, switch)) = picked else { return };
            if switch {
                let mut inner = self.inner.borrow_mut();
                let ns = inner.cfg.costs.switch_ns;
                if ns > 0 {
                    inner.charge_core(c as u16, ns);
                    continue;
                }
            }
            // A CPU burst still to run?
            {
                let mut inner = self.inner.borrow_mut();
                let burst = inner.tasks[t as usize].burst;
                if burst > 0 {
                    let slice = burst.min(inner.cfg.costs.quantum_ns);
                    let task = &mut inner.tasks[t as usize];
                    task.burst -= slice;
                    if task.burst == 0 {
                        task.burst_done = true;
                    }
                    inner.charge_core(c as u16, slice);
                    inner.cores[c].in_burst = true;
                    inner.cores[c].ran_ns += slice;
                    continue;
                }
            }
            self.poll(c, t);
        }
    }

    /// Poll task `t` on core `c`.
    fn poll(&self, c: usize, t: u32) {
        let (mut fut, waker) = {
            let mut inner = self.inner.borrow_mut();
            inner.charge = 0;
            inner.stats.polls += 1;
            let task = &mut inner.tasks[t as usize];
            task.notified = false;
            match task.fut.take() {
                Some(f) => (f, task.waker.clone()),
                None => return,
            }
        };
        CUR_TASK.with(|x| x.set(t));
        let mut cx = Context::from_waker(&waker);
        let r = fut.as_mut().poll(&mut cx);
        CUR_TASK.with(|x| x.set(u32::MAX));
        let mut dropped = None;
        {
            let mut inner = self.inner.borrow_mut();
            let charge = std::mem::take(&mut inner.charge);
            let task = &mut inner.tasks[t as usize];
            match r {
                Poll::Ready(()) => {
                    task.state = TState::Done;
                    dropped = Some(fut);
                    let joiners = std::mem::take(&mut task.joiners);
                    if task.blocked_on.take().is_some() {
                        inner.deps.blocked.remove(&t);
                    }
                    inner.deps.dirty = true;
                    inner.cores[c].current = None;
                    for j in joiners {
                        inner.wake(j, WakeKind::Other);
                    }
                }
                Poll::Pending => {
                    task.fut = Some(fut);
                    if task.burst > 0 {
                        // Keeps the core: the burst runs next (see run_core).
                    } else {
                        inner.cores[c].current = None;
                        let notified = std::mem::take(&mut inner.tasks[t as usize].notified);
                        inner.tasks[t as usize].state = TState::Blocked;
                        if notified {
                            inner.wake(t, WakeKind::Other);
                        }
                    }
                }
            }
            inner.charge_core(c as u16, charge);
        }
        // Drop a finished future outside the borrow (its destructors may call back).
        drop(dropped);
    }
}

/// The deadlock error, naming what each blocked task waits on.
fn stuck(inner: &Inner) -> RunError {
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

/// Drop the futures of unfinished tasks with `sh` as this thread's runtime and each
/// task as the current one (their destructors may release locks or cancel waits).
pub(crate) fn drop_tasks(sh: &Rc<Shared>, futs: Vec<(u32, TaskFuture)>) {
    CURRENT.with(|c| *c.borrow_mut() = Some(sh.clone()));
    for (t, f) in futs {
        CUR_TASK.with(|x| x.set(t));
        drop(f);
    }
    CUR_TASK.with(|x| x.set(u32::MAX));
    CURRENT.with(|c| *c.borrow_mut() = None);
}

/// The runtime of this thread, for spawning.
pub(crate) fn current_shared() -> Rc<Shared> {
    CURRENT.with(|c| c.borrow().clone()).unwrap_or_else(|| {
        panic!("sluice_runtime: called outside a running Stack (use Stack::run)")
    })
}
