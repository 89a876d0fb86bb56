//! One worker: an OS thread with its own io_uring, its own policy instance and the job
//! threads assigned to it, run as state machines on one event loop.
//!
//! # The submission path (AIOS's LBIO, in userspace)
//! * **Request slots** are preallocated, one per unit of `iodepth` of the worker's
//!   threads; a request takes a slot index from a free stack, and that index is its
//!   [`ReqId`]. Each slot owns one page-aligned buffer, registered with the ring at
//!   set-up (the counterpart of AIOS's pool of DMA-mapped pages): nothing is
//!   allocated, pinned or mapped per I/O, and a buffer goes back to the pool with its
//!   slot when the job thread has handled the completion, after the sample is taken.
//! * **Piece slots** (what the policy dispatched: a request or one piece of a split
//!   one) are preallocated too; the piece slot index is the SQE's `user_data`, so a
//!   completion finds its piece, request and thread by indexing — no lookup, no lock.
//! * **Batched submission**: the SQEs written during one loop turn go to the kernel
//!   with the wait for the next completion in one `io_uring_enter`.
//! * Samples go to the shared collector in batches (a lock per batch of up to 256
//!   samples or 10 ms, never per I/O).
//!
//! # Time
//! The worker reads a monotonic clock (ns since the run's start); the policy is given
//! that time and never reads a clock itself. Instants of one I/O:
//! `submit` (the job thread generated it), `dispatch` (the policy released it; in the
//! fast path the SQE is written at once and submitted by the `io_uring_enter` that
//! ends the same loop turn), `device done` (the clock read right after the
//! `io_uring_enter` that returned with its CQE), `reaped` (the job thread handled the
//! completion — after the policy was told and earlier completions of the same batch
//! were handled).
//!
//! # Policy CPU time
//! Every call into the policy on the I/O path (`admit`, `enqueue`, `dispatch` —
//! including the one that finds nothing —, `complete`, `timer`, `next_timer_ns`) is
//! bracketed by two reads of the CPU's time-stamp counter ([`PolicyTime`]; the
//! monotonic clock where there is no TSC), so the cost of scheduling can be told
//! apart from the kernel's and the engine's. The bracket's own cost (the median
//! interval of two back-to-back reads, measured when the worker starts) is subtracted
//! per call and reported; an interval longer than [`OUTLIER_NS`] is a preemption, not
//! policy work, and is left out (and counted). Ticks become ns by the ratio of the TSC
//! to the monotonic clock over the worker's life. The policy never sees any of it.

use std::collections::VecDeque;
use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::Ordering;
use std::time::Instant;

use io_uring::{opcode, squeue, types, IoUring};
use sluice_core::policy::{Admission, Completion, DeviceView, Dispatch, Policy};
use sluice_core::{Flow, FlowId, IoClass, Nanos, Op, QueueClass, ReqId, Request};
use sluice_metrics::Sample;
use sluice_workload::{IoSource, IoSpec, JobSpec, NextIo};

use crate::arbiter::Arbiter;
use crate::buf::{AlignedBuf, BUF_ALIGN};
use crate::error::{ring_hint, EngineError};
use crate::Shared;

const NONE: Nanos = Nanos::MAX;
/// Samples kept before taking the collector's lock.
const SAMPLE_BATCH: usize = 256;
/// Longest time samples wait before being handed to the collector.
const FLUSH_NS: Nanos = 10_000_000;
/// Longest sleep when idle, so a stop request is seen.
const IDLE_POLL_NS: Nanos = 50_000_000;
/// A deadline closer than this makes a wait for completions carry a timeout.
const SHORT_DEADLINE_NS: Nanos = 2_000_000;

/// A timed policy call longer than this is taken for a preemption of the worker
/// thread (or a long interrupt), not policy work: it is left out of the policy time
/// and counted in [`PolicyTimeReport::outliers`].
pub(crate) const OUTLIER_NS: u64 = 100_000;

/// The kinds of timed policy calls, in report order.
pub(crate) const CALL_KINDS: [&str; 6] = [
    "admit",
    "enqueue",
    "dispatch",
    "complete",
    "timer",
    "next_timer",
];
const ADMIT: usize = 0;
const ENQUEUE: usize = 1;
const DISPATCH: usize = 2;
const COMPLETE: usize = 3;
const TIMER: usize = 4;
const NEXT_TIMER: usize = 5;

/// The time-stamp counter (x86-64) or the monotonic clock in ns (elsewhere).
#[inline(always)]
fn ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: RDTSC has no preconditions on x86-64.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: valid out pointer.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    }
}

/// Name of the counter [`ticks`] reads.
pub(crate) const TICK_SOURCE: &str = if cfg!(target_arch = "x86_64") {
    "tsc"
} else {
    "clock_monotonic"
};

/// Time spent inside policy calls, accumulated per call kind in ticks.
#[derive(Debug)]
pub(crate) struct PolicyTime {
    ticks: [u64; 6],
    calls: [u64; 6],
    outliers: u64,
    outlier_ticks: u64,
    /// Median interval of two back-to-back `ticks()` reads: the bracket's own cost.
    overhead_ticks: u64,
    start_ticks: u64,
    start: Instant,
}

impl PolicyTime {
    pub(crate) fn new() -> PolicyTime {
        // The bracket's cost, and a first ticks-per-ns estimate for the outlier bound.
        let mut d: Vec<u64> = (0..4096)
            .map(|_| {
                let a = ticks();
                let b = std::hint::black_box(ticks());
                b.wrapping_sub(a)
            })
            .collect();
        d.sort_unstable();
        let (t0, i0) = (ticks(), Instant::now());
        while i0.elapsed().as_nanos() < 200_000 {
            std::hint::spin_loop();
        }
        let per_ns = ticks().wrapping_sub(t0) as f64 / i0.elapsed().as_nanos().max(1) as f64;
        PolicyTime {
            ticks: [0; 6],
            calls: [0; 6],
            outliers: 0,
            outlier_ticks: (OUTLIER_NS as f64 * per_ns.max(1e-3)) as u64,
            overhead_ticks: d[d.len() / 2],
            start_ticks: ticks(),
            start: Instant::now(),
        }
    }

    /// Run `f` (one policy call of kind `k`) and add its duration.
    #[inline(always)]
    fn time<R>(&mut self, k: usize, f: impl FnOnce() -> R) -> R {
        let a = ticks();
        let r = f();
        let d = ticks().wrapping_sub(a);
        if d < self.outlier_ticks {
            self.ticks[k] += d;
            self.calls[k] += 1;
        } else {
            self.outliers += 1;
        }
        r
    }

    /// Ticks to ns over the worker's life, and the per-kind figures in ns.
    pub(crate) fn report(&self) -> PolicyTimeReport {
        let ns = self.start.elapsed().as_nanos() as f64;
        let tk = ticks().wrapping_sub(self.start_ticks) as f64;
        let ns_per_tick = if tk > 0.0 { ns / tk } else { 1.0 };
        let mut r = PolicyTimeReport {
            raw_ns: [0.0; 6],
            ns: [0.0; 6],
            calls: self.calls,
            outliers: self.outliers,
            overhead_ns: self.overhead_ticks as f64 * ns_per_tick,
        };
        for k in 0..6 {
            let raw = self.ticks[k] as f64;
            let net = (raw - (self.calls[k] * self.overhead_ticks) as f64).max(0.0);
            r.raw_ns[k] = raw * ns_per_tick;
            r.ns[k] = net * ns_per_tick;
        }
        r
    }
}

/// A worker's policy time in ns (see [`PolicyTime`]), per kind of [`CALL_KINDS`].
#[derive(Clone, Debug, Default)]
pub(crate) struct PolicyTimeReport {
    /// Measured, the bracket's cost included.
    pub raw_ns: [f64; 6],
    /// Measured minus `overhead_ns` per call.
    pub ns: [f64; 6],
    /// Timed calls (outliers not included).
    pub calls: [u64; 6],
    /// Calls longer than [`OUTLIER_NS`], left out.
    pub outliers: u64,
    /// The bracket's cost per call, ns.
    pub overhead_ns: f64,
}

/// What a worker is given: its threads and the files they use.
#[derive(Debug, Clone)]
pub(crate) struct WorkerPlan {
    pub index: usize,
    /// `(global thread index, job index, thread index within the job, file index into
    /// `fds`, base of the file in the policy's address space)`.
    pub threads: Vec<(u32, u32, u32, u32, u64)>,
    /// The files this worker registers, in fixed-file order.
    pub fds: Vec<RawFd>,
    /// The flows of its jobs.
    pub flows: Vec<Flow>,
}

/// Settings every worker shares.
#[derive(Debug, Clone)]
pub(crate) struct WorkerCfg {
    pub seed: u64,
    pub ring_cap: Option<u32>,
    pub submit_batch: u32,
    pub wrr_weights: [u32; 3],
    pub job_flow: Vec<FlowId>,
    pub job_group: Vec<usize>,
}

/// What a worker reports at the end.
#[derive(Debug, Default)]
pub(crate) struct WorkerResult {
    pub ios: u64,
    pub enters: u64,
    pub fetched: [u64; 4],
    pub fast_path: u64,
    pub last_job_end: Nanos,
    /// Per job: errors and the first error's description.
    pub errors: Vec<(u64, Option<String>)>,
    pub counters: Vec<(&'static str, f64)>,
    pub counter_names: Vec<&'static str>,
    pub counter_rows: Vec<(Nanos, Vec<f64>)>,
    pub fixed_buffers: bool,
    pub ring_entries: u32,
    pub ring_cap: u32,
    pub interrupted: bool,
    pub policy_time: PolicyTimeReport,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Idle,
    Waiting,
    Running,
    Stopping,
    Done,
}

#[derive(Debug)]
struct Thread {
    global: u32,
    job: u32,
    file: u32,
    file_base: u64,
    source: IoSource,
    outstanding: u32,
    iodepth: u32,
    state: State,
    wake_at: Nanos,
}

#[derive(Debug, Clone)]
struct JobRt {
    here: bool,
    flow: FlowId,
    class: IoClass,
    group: usize,
    start_ns: Nanos,
    end_ns: Nanos,
    ended: bool,
    thinktime_ns: Nanos,
    pacer_base: Nanos,
}

#[derive(Clone, Copy, Debug)]
struct ReqSlot {
    thread: u32,
    op: Op,
    len: u32,
    offset: u64,
    submit_ns: Nanos,
    admit_ns: Nanos,
    dispatch_ns: Nanos,
    device_done_ns: Nanos,
    remaining: u16,
    ok: bool,
}

#[derive(Clone, Copy, Debug)]
struct Piece {
    req: Request,
    queue: QueueClass,
    dispatch_ns: Nanos,
}

pub(crate) struct Worker<'a> {
    index: usize,
    sh: &'a Shared<'a>,
    specs: &'a [JobSpec],
    ring: IoUring,
    policy: Box<dyn Policy>,
    _region: AlignedBuf,
    region_ptr: *mut u8,
    slot_len: usize,
    fixed_bufs: bool,
    threads: Vec<Thread>,
    jobs: Vec<JobRt>,
    reqs: Vec<ReqSlot>,
    free_reqs: Vec<u32>,
    pieces: Vec<Piece>,
    free_pieces: Vec<u32>,
    arb: Arbiter,
    sq_batch: Vec<u32>,
    cqes: Vec<(u32, i32)>,
    waiting: VecDeque<Request>,
    inflight: u32,
    inflight_per_class: [u32; 4],
    max_inflight: u32,
    in_ring: u32,
    cap: u32,
    submit_batch: usize,
    now: Nanos,
    next_wake: Nanos,
    next_job_end: Nanos,
    policy_timer: Nanos,
    active: u32,
    samples: Vec<Sample>,
    last_flush: Nanos,
    next_counter_ns: Nanos,
    interval_ns: Nanos,
    interrupted: bool,
    ptime: PolicyTime,
    res: WorkerResult,
}

fn clock(origin: Instant) -> Nanos {
    origin.elapsed().as_nanos() as Nanos
}

/// Create a ring with `entries` SQEs (and twice as many CQEs). Tries the flags that
/// make a single-threaded submitter cheaper first (single issuer, deferred task
/// work), then plain set-up for older kernels.
pub(crate) fn new_ring(entries: u32) -> Result<IoUring, EngineError> {
    let lean = IoUring::builder()
        .setup_single_issuer()
        .setup_coop_taskrun()
        .setup_defer_taskrun()
        .build(entries);
    match lean {
        Ok(r) => Ok(r),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            IoUring::new(entries).map_err(|source| EngineError::Ring {
                entries,
                hint: ring_hint(&source),
                source,
            })
        }
        Err(source) => Err(EngineError::Ring {
            entries,
            hint: ring_hint(&source),
            source,
        }),
    }
}

/// Ring entries for a worker whose ring holds at most `cap` commands.
pub(crate) fn ring_entries(cap: u32) -> u32 {
    cap.max(8).next_power_of_two()
}

impl<'a> Worker<'a> {
    pub(crate) fn new(
        plan: &WorkerPlan,
        specs: &'a [JobSpec],
        cfg: &WorkerCfg,
        mut policy: Box<dyn Policy>,
        sh: &'a Shared<'a>,
    ) -> Result<Worker<'a>, EngineError> {
        let total_depth: u32 = plan
            .threads
            .iter()
            .map(|t| specs[t.1 as usize].iodepth.max(1))
            .sum::<u32>()
            .max(1);
        let cap = cfg.ring_cap.unwrap_or(total_depth).clamp(1, 32768);
        let entries = ring_entries(cap);
        let ring = new_ring(entries)?;
        ring.submitter()
            .register_files(&plan.fds)
            .map_err(|source| EngineError::Ring {
                entries,
                hint: "registering the job files with the ring failed; raise ulimit -n",
                source,
            })?;

        // One buffer per request slot, each as long as the largest block of the
        // worker's jobs, filled with random data for writes.
        let slot_len = plan
            .threads
            .iter()
            .map(|t| {
                let s = &specs[t.1 as usize];
                s.bs.read.max_len().max(s.bs.write.max_len()) as usize
            })
            .max()
            .unwrap_or(BUF_ALIGN)
            .div_ceil(BUF_ALIGN)
            * BUF_ALIGN;
        let slots = total_depth as usize;
        let mut region = AlignedBuf::new(slots * slot_len);
        region.fill_random(0xB0FF_0000 ^ plan.index as u64);
        let region_ptr = region.as_mut_ptr();
        let iovecs: Vec<libc::iovec> = (0..slots)
            .map(|i| libc::iovec {
                // SAFETY: within the region.
                iov_base: unsafe { region_ptr.add(i * slot_len) } as *mut libc::c_void,
                iov_len: slot_len,
            })
            .collect();
        // SAFETY: the buffers live in `region`, which the worker owns and drops after
        // the ring (field order), so they outlive every registered use.
        let fixed_bufs = slots <= u16::MAX as usize
            && unsafe { ring.submitter().register_buffers(&iovecs) }.is_ok();

        for f in &plan.flows {
            policy.add_flow(f);
        }
        let mut jobs: Vec<JobRt> = specs
            .iter()
            .enumerate()
            .map(|(j, s)| JobRt {
                here: false,
                flow: cfg.job_flow[j],
                class: s.class,
                group: cfg.job_group[j],
                start_ns: 0,
                end_ns: NONE,
                ended: false,
                thinktime_ns: s.thinktime_ns,
                pacer_base: 0,
            })
            .collect();
        let threads: Vec<Thread> = plan
            .threads
            .iter()
            .map(|&(global, job, t, file, base)| {
                let spec = &specs[job as usize];
                jobs[job as usize].here = true;
                Thread {
                    global,
                    job,
                    file,
                    file_base: base,
                    source: IoSource::new(spec, job as usize, t, cfg.seed),
                    outstanding: 0,
                    iodepth: spec.iodepth.max(1),
                    state: State::Idle,
                    wake_at: NONE,
                }
            })
            .collect();
        let max_inflight = 4 * total_depth.max(cap);
        let empty_req = ReqSlot {
            thread: 0,
            op: Op::Read,
            len: 0,
            offset: 0,
            submit_ns: 0,
            admit_ns: 0,
            dispatch_ns: NONE,
            device_done_ns: 0,
            remaining: 0,
            ok: true,
        };
        let empty_piece = Piece {
            req: Request {
                id: ReqId(0),
                flow: FlowId(0),
                op: Op::Read,
                offset: 0,
                len: 0,
                class: IoClass::Normal,
                submit_ns: 0,
                hwq: 0,
                parts: 1,
            },
            queue: QueueClass::Medium,
            dispatch_ns: 0,
        };
        let counter_names: Vec<&'static str> = policy.counters().iter().map(|c| c.0).collect();
        Ok(Worker {
            index: plan.index,
            sh,
            specs,
            ring,
            policy,
            _region: region,
            region_ptr,
            slot_len,
            fixed_bufs,
            threads,
            jobs,
            reqs: vec![empty_req; slots],
            free_reqs: (0..slots as u32).rev().collect(),
            pieces: vec![empty_piece; max_inflight as usize],
            free_pieces: (0..max_inflight).rev().collect(),
            arb: Arbiter::new(max_inflight as usize, cfg.wrr_weights),
            sq_batch: Vec::with_capacity(entries as usize),
            cqes: Vec::with_capacity(2 * entries as usize),
            waiting: VecDeque::with_capacity(slots),
            inflight: 0,
            inflight_per_class: [0; 4],
            max_inflight,
            in_ring: 0,
            cap,
            submit_batch: cfg.submit_batch.max(1) as usize,
            now: 0,
            next_wake: NONE,
            next_job_end: NONE,
            policy_timer: NONE,
            active: 0,
            samples: Vec::with_capacity(SAMPLE_BATCH),
            last_flush: 0,
            next_counter_ns: 0,
            interval_ns: sh.interval_ns,
            interrupted: false,
            ptime: PolicyTime::new(),
            res: WorkerResult {
                errors: vec![(0, None); specs.len()],
                counter_names,
                fixed_buffers: fixed_bufs,
                ring_entries: entries,
                ring_cap: cap,
                ..WorkerResult::default()
            },
        })
    }

    #[inline]
    fn clock(&mut self) -> Nanos {
        self.now = clock(self.sh.origin);
        self.now
    }

    /// Run the jobs of stonewall group `g`, which started at `group_start`.
    pub(crate) fn run_group(&mut self, g: usize, group_start: Nanos) -> Result<(), EngineError> {
        for (j, rt) in self.jobs.iter_mut().enumerate() {
            if rt.group != g || !rt.here {
                continue;
            }
            let s = &self.specs[j];
            rt.start_ns = group_start + s.startdelay_ns;
            rt.pacer_base = rt.start_ns;
            rt.end_ns = s.runtime_ns.map_or(NONE, |r| rt.start_ns + s.ramp_ns + r);
            self.next_job_end = self.next_job_end.min(rt.end_ns);
        }
        for th in &mut self.threads {
            let rt = &self.jobs[th.job as usize];
            if rt.group == g {
                th.state = State::Waiting;
                th.wake_at = rt.start_ns;
                self.next_wake = self.next_wake.min(th.wake_at);
                self.active += 1;
            }
        }
        self.clock();
        self.last_flush = self.now;
        self.interrupted = false;
        while self.active > 0 || self.inflight > 0 {
            if !self.interrupted && self.sh.stopped() {
                self.interrupt();
            }
            self.timers();
            self.pump();
            if self.active == 0 && self.inflight == 0 {
                break;
            }
            self.check_stall()?;
            self.enter()?;
            self.reap()?;
            if self.samples.len() >= SAMPLE_BATCH || self.now >= self.last_flush + FLUSH_NS {
                self.flush();
            }
        }
        self.flush();
        Ok(())
    }

    /// The run is over: final counters and facts.
    pub(crate) fn finish(mut self) -> WorkerResult {
        self.res.counters = self.policy.counters();
        self.res.policy_time = self.ptime.report();
        self.res
    }

    /// Stop every job at once (Ctrl-C or another worker's failure).
    fn interrupt(&mut self) {
        self.interrupted = true;
        let now = self.now;
        self.res.interrupted = true;
        for j in 0..self.jobs.len() {
            let started = self
                .threads
                .iter()
                .any(|t| t.job as usize == j && !matches!(t.state, State::Idle | State::Done));
            if self.jobs[j].here && !self.jobs[j].ended && started {
                self.end_job(j, now);
            }
        }
    }

    fn timers(&mut self) {
        let now = self.now;
        if now >= self.next_job_end {
            let mut next = NONE;
            for j in 0..self.jobs.len() {
                let rt = &self.jobs[j];
                if !rt.here || rt.ended || rt.end_ns == NONE {
                    continue;
                }
                if rt.end_ns <= now {
                    let end = rt.end_ns;
                    self.end_job(j, end);
                } else {
                    next = next.min(rt.end_ns);
                }
            }
            self.next_job_end = next;
        }
        if now >= self.next_wake {
            let mut next = NONE;
            for t in 0..self.threads.len() {
                let w = self.threads[t].wake_at;
                if w == NONE {
                    continue;
                }
                if w <= now {
                    let th = &mut self.threads[t];
                    th.wake_at = NONE;
                    if th.state == State::Waiting {
                        th.state = State::Running;
                    }
                    self.try_issue(t);
                }
                next = next.min(self.threads[t].wake_at);
            }
            self.next_wake = next;
        }
        if self.policy_timer <= now {
            self.policy_timer = NONE;
            let policy = &mut self.policy;
            self.ptime.time(TIMER, || policy.timer(now));
            self.retry_admission();
        }
    }

    /// Job `j` ends (runtime over, or interrupted) at `end`.
    fn end_job(&mut self, j: usize, end: Nanos) {
        self.jobs[j].ended = true;
        self.res.last_job_end = self.res.last_job_end.max(end);
        self.sh
            .collector
            .lock()
            .expect("collector lock")
            .job_done(j, end);
        for t in 0..self.threads.len() {
            let th = &mut self.threads[t];
            if th.job as usize == j && matches!(th.state, State::Running | State::Waiting) {
                th.state = State::Stopping;
                th.wake_at = NONE;
                self.maybe_thread_done(t);
            }
        }
    }

    fn wake(&mut self, t: usize, at: Nanos) {
        let th = &mut self.threads[t];
        th.wake_at = th.wake_at.min(at);
        self.next_wake = self.next_wake.min(at);
    }

    /// Issue from thread `t` as far as its depth, pacer and size allow.
    fn try_issue(&mut self, t: usize) {
        loop {
            let now = self.now;
            let th = &mut self.threads[t];
            if th.state != State::Running || th.outstanding >= th.iodepth {
                return;
            }
            let io = match th.source.next(now, self.jobs[th.job as usize].pacer_base) {
                NextIo::Issue(io) => io,
                NextIo::At(at) => {
                    self.wake(t, at);
                    return;
                }
                NextIo::Exhausted => {
                    th.state = State::Stopping;
                    self.maybe_thread_done(t);
                    return;
                }
            };
            th.outstanding += 1;
            self.submit(t, io);
        }
    }

    fn submit(&mut self, t: usize, io: IoSpec) {
        let idx = self
            .free_reqs
            .pop()
            .expect("a slot per unit of iodepth: outstanding ≤ iodepth");
        let th = &self.threads[t];
        let rt = &self.jobs[th.job as usize];
        let offset = th.file_base + io.offset;
        self.reqs[idx as usize] = ReqSlot {
            thread: t as u32,
            op: io.op,
            len: io.len,
            offset,
            submit_ns: self.now,
            admit_ns: self.now,
            dispatch_ns: NONE,
            device_done_ns: 0,
            remaining: 0,
            ok: true,
        };
        let req = Request {
            id: ReqId(idx as u64),
            flow: rt.flow,
            op: io.op,
            offset,
            len: io.len,
            class: rt.class,
            submit_ns: self.now,
            hwq: self.index as u16,
            parts: 1,
        };
        let (now, policy, pt) = (self.now, &mut self.policy, &mut self.ptime);
        if self.waiting.is_empty() && pt.time(ADMIT, || policy.admit(now, &req)) == Admission::Admit
        {
            pt.time(ENQUEUE, || policy.enqueue(now, req));
        } else {
            self.waiting.push_back(req);
        }
    }

    fn retry_admission(&mut self) {
        for _ in 0..self.waiting.len() {
            let req = self.waiting.pop_front().expect("counted");
            let (now, policy, pt) = (self.now, &mut self.policy, &mut self.ptime);
            if pt.time(ADMIT, || policy.admit(now, &req)) == Admission::Admit {
                self.reqs[req.id.0 as usize].admit_ns = now;
                pt.time(ENQUEUE, || policy.enqueue(now, req));
            } else {
                self.waiting.push_back(req);
            }
        }
    }

    /// Offer dispatch opportunities until the policy has nothing or the view is full;
    /// feed the ring from the arbiter; keep the policy's timer.
    fn pump(&mut self) {
        while self.inflight < self.max_inflight {
            let view = DeviceView {
                inflight: self.inflight,
                inflight_per_class: self.inflight_per_class,
                max_inflight: self.max_inflight,
            };
            let (now, policy) = (self.now, &mut self.policy);
            let Some(d) = self.ptime.time(DISPATCH, || policy.dispatch(now, &view)) else {
                break;
            };
            self.route(d);
        }
        while self.in_ring < self.cap {
            let Some((tag, class)) = self.arb.pop() else {
                break;
            };
            self.res.fetched[class.index()] += 1;
            self.sq_batch.push(tag);
            self.in_ring += 1;
        }
        let policy = &self.policy;
        self.policy_timer = self
            .ptime
            .time(NEXT_TIMER, || policy.next_timer_ns())
            .unwrap_or(NONE);
    }

    fn route(&mut self, d: Dispatch) {
        let tag = self
            .free_pieces
            .pop()
            .expect("piece slots = max_inflight, and dispatch is offered only below it");
        let rs = &mut self.reqs[d.req.id.0 as usize];
        debug_assert!(
            rs.remaining > 0 || rs.dispatch_ns == NONE,
            "dispatch of an unknown request"
        );
        if rs.dispatch_ns == NONE {
            rs.dispatch_ns = self.now;
            rs.remaining = d.req.parts.max(1);
        }
        self.pieces[tag as usize] = Piece {
            req: d.req,
            queue: d.queue,
            dispatch_ns: self.now,
        };
        self.inflight += 1;
        self.inflight_per_class[d.queue.index()] += 1;
        if self.arb.staged() == 0 && self.in_ring < self.cap {
            // Fast path: nothing staged and room in the ring.
            self.res.fetched[d.queue.index()] += 1;
            self.res.fast_path += 1;
            self.sq_batch.push(tag);
            self.in_ring += 1;
        } else {
            self.arb.push(tag, d.queue);
        }
    }

    /// Write the SQEs of the pieces queued this turn into the submission ring.
    fn push_sqes(&mut self) {
        if self.sq_batch.is_empty() {
            return;
        }
        let src = SqeSource {
            pieces: &self.pieces,
            reqs: &self.reqs,
            threads: &self.threads,
            region: self.region_ptr,
            slot_len: self.slot_len,
            fixed_bufs: self.fixed_bufs,
        };
        let mut sq = self.ring.submission();
        for &tag in &self.sq_batch {
            let e = src.sqe(tag);
            // SAFETY: the buffer and the registered file stay valid until the CQE is
            // reaped; the ring has room: in_ring ≤ cap ≤ entries.
            unsafe { sq.push(&e) }.expect("ring has room: in_ring ≤ cap ≤ entries");
        }
        drop(sq);
        self.sq_batch.clear();
    }

    /// Submit the SQEs written this turn and wait for a completion (or a deadline).
    fn enter(&mut self) -> Result<(), EngineError> {
        self.push_sqes();
        let deadline = self.next_wake.min(self.next_job_end).min(self.policy_timer);
        self.res.enters += 1;
        let r = if self.in_ring > 0 && deadline.saturating_sub(self.now) > SHORT_DEADLINE_NS {
            self.ring.submit_and_wait(1)
        } else {
            let wait = deadline.saturating_sub(self.now).clamp(1_000, IDLE_POLL_NS);
            let ts = types::Timespec::new()
                .sec(wait / 1_000_000_000)
                .nsec((wait % 1_000_000_000) as u32);
            let args = types::SubmitArgs::new().timespec(&ts);
            self.ring.submitter().submit_with_args(1, &args)
        };
        match r {
            Ok(_) => Ok(()),
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ETIME) | Some(libc::EINTR) | Some(libc::EAGAIN) | Some(libc::EBUSY)
                ) =>
            {
                Ok(())
            }
            Err(source) => Err(EngineError::RingFailed {
                worker: self.index,
                source,
            }),
        }
    }

    /// Handle every completion the ring holds. Once `submit_batch` new SQEs are
    /// ready, they are submitted at once (without waiting), so the device gets work
    /// back while the rest of the batch is handled.
    fn reap(&mut self) -> Result<(), EngineError> {
        self.cqes.clear();
        for c in self.ring.completion() {
            self.cqes.push((c.user_data() as u32, c.result()));
        }
        let t_dev = self.clock();
        let n = self.cqes.len();
        for i in 0..n {
            let (tag, res) = self.cqes[i];
            self.piece_done(tag, res, t_dev);
            if i + 1 < n {
                self.pump();
                if self.sq_batch.len() >= self.submit_batch {
                    self.push_sqes();
                    self.res.enters += 1;
                    self.ring
                        .submit()
                        .map_err(|source| EngineError::RingFailed {
                            worker: self.index,
                            source,
                        })?;
                }
            }
        }
        Ok(())
    }

    fn piece_done(&mut self, tag: u32, res: i32, t_dev: Nanos) {
        let p = self.pieces[tag as usize];
        self.free_pieces.push(tag);
        self.inflight -= 1;
        self.in_ring -= 1;
        self.inflight_per_class[p.queue.index()] -= 1;
        let ok = res >= 0 && (p.req.op == Op::Flush || res as u32 == p.req.len);
        if !ok {
            self.note_error(&p.req, res);
        }
        let done = Completion {
            req: p.req,
            queue: p.queue,
            dispatch_ns: p.dispatch_ns,
            complete_ns: t_dev,
            ok,
        };
        let policy = &mut self.policy;
        self.ptime.time(COMPLETE, || policy.complete(t_dev, &done));
        let idx = p.req.id.0 as usize;
        let rs = &mut self.reqs[idx];
        rs.ok &= ok;
        rs.device_done_ns = t_dev;
        rs.remaining -= 1;
        if rs.remaining == 0 {
            self.request_done(idx as u32);
        }
    }

    fn note_error(&mut self, req: &Request, res: i32) {
        let job = self.threads[self.reqs[req.id.0 as usize].thread as usize].job as usize;
        let e = &mut self.res.errors[job];
        e.0 += 1;
        if e.1.is_none() {
            let what = if res < 0 {
                io::Error::from_raw_os_error(-res).to_string()
            } else {
                format!("short transfer, {res} of {} bytes", req.len)
            };
            e.1 = Some(format!(
                "{what} on {} of {} bytes at file offset {}",
                req.op,
                req.len,
                req.offset - self.threads[self.reqs[req.id.0 as usize].thread as usize].file_base
            ));
        }
    }

    fn request_done(&mut self, idx: u32) {
        let t_reap = self.clock();
        let rs = self.reqs[idx as usize];
        self.free_reqs.push(idx);
        self.res.ios += 1;
        let t = rs.thread as usize;
        let th = &mut self.threads[t];
        th.outstanding -= 1;
        let job = th.job as usize;
        let rt = &self.jobs[job];
        // Completions after a job's time-based end are not counted, as in fio.
        if !rt.ended {
            self.samples.push(Sample {
                job,
                op: rs.op,
                class: rt.class,
                bytes: rs.len,
                submit_ns: rs.submit_ns,
                admit_ns: rs.admit_ns,
                dispatch_ns: rs.dispatch_ns,
                device_done_ns: rs.device_done_ns,
                reaped_ns: t_reap,
                ok: rs.ok,
            });
        }
        if self.threads[t].state == State::Running {
            let think = rt.thinktime_ns;
            if think > 0 {
                self.wake(t, t_reap + think);
            } else {
                self.try_issue(t);
            }
        } else {
            self.maybe_thread_done(t);
        }
    }

    fn maybe_thread_done(&mut self, t: usize) {
        let th = &mut self.threads[t];
        if th.state != State::Stopping || th.outstanding > 0 {
            return;
        }
        th.state = State::Done;
        self.active -= 1;
        let j = th.job as usize;
        if self.sh.job_live[j].fetch_sub(1, Ordering::AcqRel) == 1 {
            // The job's last thread, over all workers.
            let rt = &mut self.jobs[j];
            let end = if rt.ended && rt.end_ns != NONE && rt.end_ns <= self.now {
                rt.end_ns
            } else {
                self.now
            };
            rt.ended = true;
            self.res.last_job_end = self.res.last_job_end.max(end);
            self.sh
                .collector
                .lock()
                .expect("collector lock")
                .job_done(j, end);
        }
    }

    fn check_stall(&self) -> Result<(), EngineError> {
        if self.inflight == 0
            && self.policy_timer == NONE
            && self.next_wake == NONE
            && (self.policy.queued() > 0 || !self.waiting.is_empty())
        {
            return Err(EngineError::Stalled {
                now_ns: self.now,
                worker: self.index,
                policy: self.policy.name().to_string(),
                queued: self.policy.queued(),
                waiting: self.waiting.len(),
            });
        }
        Ok(())
    }

    /// Hand the samples to the collector (one lock), publish progress, sample counters.
    fn flush(&mut self) {
        self.last_flush = self.now;
        if !self.samples.is_empty() {
            let mut c = self.sh.collector.lock().expect("collector lock");
            for s in &self.samples {
                c.record(s);
            }
            drop(c);
            self.samples.clear();
        }
        for th in &self.threads {
            self.sh.issued[th.global as usize].store(th.source.issued_bytes(), Ordering::Relaxed);
        }
        if !self.res.counter_names.is_empty() && self.now >= self.next_counter_ns {
            let row = self.policy.counters().into_iter().map(|c| c.1).collect();
            self.res.counter_rows.push((self.now, row));
            self.next_counter_ns = self.now + self.interval_ns;
        }
    }
}

/// What writing an SQE needs, borrowed apart from the ring.
struct SqeSource<'w> {
    pieces: &'w [Piece],
    reqs: &'w [ReqSlot],
    threads: &'w [Thread],
    region: *mut u8,
    slot_len: usize,
    fixed_bufs: bool,
}

impl SqeSource<'_> {
    /// The SQE of piece `tag`: its file (fixed index), offset in the file, and the part
    /// of its request's buffer it covers; `user_data` is the piece slot index.
    #[inline]
    fn sqe(&self, tag: u32) -> squeue::Entry {
        let p = &self.pieces[tag as usize];
        let slot = p.req.id.0 as usize;
        let rs = &self.reqs[slot];
        let th = &self.threads[rs.thread as usize];
        let fd = types::Fixed(th.file);
        let file_off = p.req.offset - th.file_base;
        // SAFETY: a piece lies inside its request, whose buffer is slot_len ≥ len long.
        let buf = unsafe {
            self.region
                .add(slot * self.slot_len + (p.req.offset - rs.offset) as usize)
        };
        let e = match (p.req.op, self.fixed_bufs) {
            (Op::Read, true) => opcode::ReadFixed::new(fd, buf, p.req.len, slot as u16)
                .offset(file_off)
                .build(),
            (Op::Read, false) => opcode::Read::new(fd, buf, p.req.len)
                .offset(file_off)
                .build(),
            (Op::Write, true) => opcode::WriteFixed::new(fd, buf, p.req.len, slot as u16)
                .offset(file_off)
                .build(),
            (Op::Write, false) => opcode::Write::new(fd, buf, p.req.len)
                .offset(file_off)
                .build(),
            (Op::Flush, _) => opcode::Fsync::new(fd).build(),
        };
        e.user_data(tag as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ring_the_kernel_refuses_is_a_clear_set_up_error() {
        // More entries than io_uring allows (32768): the kernel says EINVAL.
        match new_ring(1 << 20) {
            Err(e @ EngineError::Ring { .. }) => {
                assert_eq!(e.exit_code(), 2);
                let msg = e.to_string();
                assert!(
                    msg.contains("cannot create an io_uring with 1048576 entries"),
                    "{msg}"
                );
            }
            Err(e) => panic!("unexpected error {e}"),
            Ok(_) => panic!("the kernel accepted a ring of 2^20 entries"),
        }
    }

    #[test]
    fn ring_entries_are_a_power_of_two_of_at_least_eight() {
        assert_eq!(ring_entries(1), 8);
        assert_eq!(ring_entries(32), 32);
        assert_eq!(ring_entries(33), 64);
    }
}
