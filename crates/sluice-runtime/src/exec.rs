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
use std::task::{Wake, Waker};

use sluice_core::{FlowId, IoClass, Nanos};

use crate::config::{CostTable, Inherit, Wakeup};
use crate::ctx::TaskCtx;
use crate::deps::{self, Dep, Deps, Graph, Switches};
use crate::io::IoState;

mod driver;
pub use driver::RunError;

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
