//! One worker: an OS thread with its own io_uring and the job threads assigned to it,
//! run as state machines on one event loop. The block layer (admission, policy,
//! pieces) is not the worker's: it is the device's one [`BlockLayer`], shared by every
//! worker under one lock ([`crate::device`]).
//!
//! # The submission path (AIOS's LBIO, in userspace)
//! * **Request slots** are preallocated, one per unit of `iodepth` of the worker's
//!   threads; a request takes a slot from a free stack and gives its index to the
//!   block layer as its token. Each slot owns one page-aligned buffer, registered with
//!   the ring at set-up (the counterpart of AIOS's pool of DMA-mapped pages): nothing
//!   is allocated, pinned or mapped per I/O, and a buffer goes back to the pool with
//!   its slot when the job thread has handled the completion, after the sample is
//!   taken.
//! * **Piece tags** are the block layer's piece slots; the tag is the SQE's
//!   `user_data`, so a completion finds its piece, request and thread by indexing.
//! * **Batched submission**: the SQEs written during one loop turn go to the kernel
//!   with the wait for the next completion in one `io_uring_enter`; the device lock is
//!   taken once per loop turn for the new requests and once per batch of completions.
//! * Samples go to the shared collector in batches (a lock per batch of up to 256
//!   samples or 10 ms, never per I/O).
//!
//! # Time
//! The worker reads a monotonic clock (ns since the run's start); the block layer and
//! the policy are given that time and never read a clock themselves. Instants of one
//! I/O: `submit` (the job thread generated it), `dispatch` (the policy released it; the
//! SQE is written when its owner next takes the device lock and submitted by the
//! `io_uring_enter` that ends the same loop turn), `device done` (the clock read right
//! after the `io_uring_enter` that returned with its CQE), `reaped` (the job thread
//! handled the completion).

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::time::Instant;

use io_uring::IoUring;
use sluice_block::{Finished, NewRequest};
use sluice_core::{FlowId, IoClass, Nanos, Op};
use sluice_metrics::Sample;
use sluice_workload::{IoSource, IoSpec, JobSpec, NextIo};

use crate::buf::{AlignedBuf, BUF_ALIGN};
use crate::buffered::SlotData;
use crate::device::{DevState, Doorbell, Outgoing};
use crate::error::EngineError;
use crate::ring::new_ring;
use crate::verify::Verifier;
use sluice_cache::front::{FrontDone, FrontIo, FRONT_TOKEN};

mod buffered;
mod kernel;
mod setup;
mod verify_hook;
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
/// `user_data` of the doorbell read (piece tags are below it).
const BELL: u64 = u64::MAX;

/// What a worker is given: its threads and the files they use.
#[derive(Debug, Clone)]
pub(crate) struct WorkerPlan {
    pub index: usize,
    /// `(global thread index, job index, thread index within the job, file index into
    /// `fds`, base of the file in the policy's address space)`.
    pub threads: Vec<(u32, u32, u32, u32, u64)>,
    /// The files this worker registers, in fixed-file order.
    pub fds: Vec<RawFd>,
}

/// Settings every worker shares.
#[derive(Debug, Clone)]
pub(crate) struct WorkerCfg {
    pub seed: u64,
    pub submit_batch: u32,
    pub job_flow: Vec<FlowId>,
    pub job_group: Vec<usize>,
}

/// What a worker reports at the end.
#[derive(Debug, Default)]
pub(crate) struct WorkerResult {
    pub ios: u64,
    pub enters: u64,
    pub last_job_end: Nanos,
    /// Per job: errors and the first error's description.
    pub errors: Vec<(u64, Option<String>)>,
    /// Per job: blocks checked, failed, the first failure (jobs with `verify`).
    pub verify: Vec<(u64, u64, Option<String>)>,
    pub fixed_buffers: bool,
    pub ring_entries: u32,
    pub interrupted: bool,
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
    /// The job's data verification (`verify=`), if any.
    verify: Option<Box<Verifier>>,
    /// Its file in the page cache, for a buffered job.
    front_file: Option<u32>,
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

pub(crate) struct Worker<'a> {
    index: usize,
    sh: &'a Shared<'a>,
    dev: &'a Mutex<DevState>,
    bells: &'a [Doorbell],
    specs: &'a [JobSpec],
    ring: IoUring,
    _region: AlignedBuf,
    region_ptr: *mut u8,
    slot_len: usize,
    fixed_bufs: bool,
    threads: Vec<Thread>,
    jobs: Vec<JobRt>,
    /// Request slot → the thread that owns it.
    slot_thread: Vec<u32>,
    /// Request slot → the request's offset (a piece's place in the slot's buffer is
    /// its offset minus this).
    slot_offset: Vec<u64>,
    /// Request slot → its read is checked by the thread's verifier.
    slot_check: Vec<bool>,
    free_slots: Vec<u32>,
    /// Requests the job threads issued this turn, for the block layer.
    new_reqs: Vec<(NewRequest, u32)>,
    /// Buffered jobs' I/Os issued this turn, for the page cache.
    new_front: Vec<FrontIo<SlotData>>,
    /// Buffered jobs' I/Os the page cache completed, to hand to their threads.
    front_done: Vec<FrontDone>,
    /// Request slot → (op, bytes, submitted) of a buffered job's I/O.
    slot_io: Vec<(Op, u32, Nanos)>,
    /// CQEs of this turn: (user_data, result).
    cqes: Vec<(u64, i32)>,
    finished: Vec<Finished>,
    outgoing: Vec<Outgoing>,
    to_wake: Vec<usize>,
    /// This worker's commands in its ring (the doorbell read not counted).
    in_ring: u32,
    /// This worker's requests in the block layer.
    outstanding: u32,
    bell_armed: bool,
    bell_buf: Box<u64>,
    submit_batch: usize,
    now: Nanos,
    next_wake: Nanos,
    next_job_end: Nanos,
    block_timer: Nanos,
    active: u32,
    samples: Vec<Sample>,
    last_flush: Nanos,
    next_counter_ns: Nanos,
    interval_ns: Nanos,
    interrupted: bool,
    /// The stonewall group running.
    cur_group: usize,
    /// Per job: completed I/Os and bytes not yet handed to [`crate::early::EarlyEnd`].
    done_acc: Vec<(u64, u64)>,
    res: WorkerResult,
}

fn clock(origin: Instant) -> Nanos {
    origin.elapsed().as_nanos() as Nanos
}

impl<'a> Worker<'a> {
    #[inline]
    fn clock(&mut self) -> Nanos {
        self.now = clock(self.sh.origin);
        self.now
    }

    /// Run the jobs of stonewall group `g`, which started at `group_start`.
    pub(crate) fn run_group(&mut self, g: usize, group_start: Nanos) -> Result<(), EngineError> {
        self.cur_group = g;
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
        loop {
            if !self.interrupted && self.sh.stopped() {
                self.interrupt();
            }
            self.clock();
            self.timers();
            self.sync(None)?;
            // The page cache's own I/O in this ring ends before the worker does (its
            // buffers stay the cache's until their completions are reaped).
            if self.active == 0 && self.outstanding == 0 && self.in_ring == 0 {
                break;
            }
            if self.new_front.is_empty() {
                self.enter()?;
            } else {
                // The page cache completed I/Os at once (hits, writes into the cache)
                // and their threads issued more: go round without waiting.
                self.submit_now()?;
            }
            self.reap()?;
            if self.samples.len() >= SAMPLE_BATCH || self.now >= self.last_flush + FLUSH_NS {
                self.flush();
            }
        }
        self.flush();
        Ok(())
    }

    /// The run is over: this worker's facts.
    pub(crate) fn finish(mut self) -> WorkerResult {
        for th in &self.threads {
            if let Some(v) = &th.verify {
                let r = &mut self.res.verify[th.job as usize];
                r.0 += v.checked;
                r.1 += v.failed;
                if r.2.is_none() {
                    r.2.clone_from(&v.first);
                }
            }
        }
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

    /// Job ends and thread wake-ups that are due.
    fn timers(&mut self) {
        let now = self.now;
        if self.sh.early.any_flagged() {
            // exitall or steady state, decided elsewhere: end this worker's part.
            for j in 0..self.jobs.len() {
                let rt = &self.jobs[j];
                if rt.here && !rt.ended && rt.group == self.cur_group && self.sh.early.flagged(j) {
                    self.end_job(j, now);
                }
            }
        }
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
    }

    /// Job `j` ends (runtime over, or interrupted) at `end`.
    fn end_job(&mut self, j: usize, end: Nanos) {
        self.jobs[j].ended = true;
        self.sh.early.job_ended(j);
        self.res.last_job_end = self.res.last_job_end.max(end);
        self.sh
            .collector
            .lock()
            .expect("collector lock")
            .job_done(j, end);
        for t in 0..self.threads.len() {
            let th = &mut self.threads[t];
            if th.job as usize == j && matches!(th.state, State::Running | State::Waiting) {
                th.wake_at = NONE;
                // Its end sync (end_fsync) goes once its I/O has drained (a verify job
                // keeps its end as before: no final read-back after its runtime).
                if th.verify.is_none() && th.source.end_now() {
                    th.state = State::Running;
                    self.try_issue(t);
                    continue;
                }
                th.state = State::Stopping;
                self.maybe_thread_done(t);
            }
        }
    }

    fn wake(&mut self, t: usize, at: Nanos) {
        let th = &mut self.threads[t];
        th.wake_at = th.wake_at.min(at);
        self.next_wake = self.next_wake.min(at);
    }

    /// Issue from thread `t` as far as its depth, pacer and size allow; the requests
    /// reach the block layer at the next [`Worker::sync`].
    fn try_issue(&mut self, t: usize) {
        loop {
            let now = self.now;
            let th = &mut self.threads[t];
            if th.state != State::Running || th.outstanding >= th.iodepth {
                return;
            }
            // A verify job reads back what it wrote before it issues more (see verify.rs).
            let mut check = false;
            let read_back = th.verify.as_mut().and_then(|v| v.next_read());
            let io = if let Some((offset, len)) = read_back {
                check = true;
                IoSpec {
                    op: Op::Read,
                    offset,
                    len,
                }
            } else if th.verify.as_ref().is_some_and(|v| v.busy()) {
                return;
            } else {
                match th.source.next_with(
                    now,
                    self.jobs[th.job as usize].pacer_base,
                    th.outstanding,
                ) {
                    NextIo::Issue(io) => io,
                    NextIo::Drain => return,
                    NextIo::At(at) => {
                        self.wake(t, at);
                        return;
                    }
                    NextIo::Exhausted => {
                        if let Some(v) = th.verify.as_mut() {
                            // The final read-back starts when no write is in flight.
                            if v.final_pending() && th.outstanding > 0 {
                                return;
                            }
                            if v.start_final() {
                                continue;
                            }
                        }
                        th.state = State::Stopping;
                        self.maybe_thread_done(t);
                        return;
                    }
                }
            };
            if let Some(v) = th.verify.as_mut() {
                check |= io.op == Op::Read && v.checks_every_read();
            }
            th.outstanding += 1;
            let rt = &self.jobs[th.job as usize];
            let r = NewRequest {
                flow: rt.flow,
                op: io.op,
                offset: th.file_base + io.offset,
                len: io.len,
                class: rt.class,
                hwq: self.index as u16,
                fua: false,
            };
            let slot = self
                .free_slots
                .pop()
                .expect("a slot per unit of iodepth: outstanding ≤ iodepth");
            self.slot_thread[slot as usize] = t as u32;
            self.slot_offset[slot as usize] = r.offset;
            self.slot_check[slot as usize] = check;
            if let (Op::Write, Some(v)) = (io.op, th.verify.as_mut()) {
                // SAFETY: the slot is free (taken just now), its buffer is slot_len ≥
                // len bytes inside the region, and no other reference to it exists.
                let buf = unsafe {
                    std::slice::from_raw_parts_mut(
                        self.region_ptr.add(slot as usize * self.slot_len),
                        io.len as usize,
                    )
                };
                v.fill(buf, io.offset);
            }
            self.outstanding += 1;
            if let Some(file) = th.front_file {
                self.issue_buffered(slot, file, r, io.offset, now);
            } else {
                self.new_reqs.push((r, slot));
            }
        }
    }

    /// One turn at the device (under its lock): hand the completions `cqes[range]` to
    /// the block layer, then this turn's new requests; fire the policy's timer if due;
    /// pump; take this worker's outbox. Then wake the workers whose outbox filled,
    /// write the SQEs and handle the finished requests.
    fn sync(&mut self, done: Option<(usize, usize, Nanos)>) -> Result<(), EngineError> {
        let dev_lock = self.dev;
        let mut guard = dev_lock.lock().expect("device lock");
        let dev = &mut *guard;
        let now = self.now;
        if let Some((from, to, t_dev)) = done {
            for i in from..to {
                let (ud, res) = self.cqes[i];
                let tag = ud as u32;
                let p = dev.block.piece(tag).req;
                let ok = res >= 0 && (p.op == Op::Flush || res as u32 == p.len);
                let token = dev.block.request(p.id).token;
                if !ok && token & FRONT_TOKEN == 0 {
                    self.note_error(token as u32, p.op, p.len, p.offset, res);
                }
                self.in_ring -= 1;
                if let Some(f) = dev.complete(t_dev, tag, ok) {
                    if f.token & FRONT_TOKEN != 0 {
                        let ef = dev
                            .front
                            .as_mut()
                            .expect("front requests come from the cache");
                        ef.front.finished(t_dev, &f, &mut dev.block, &mut ef.done);
                    } else {
                        self.finished.push(f);
                    }
                }
            }
        }
        for (r, slot) in self.new_reqs.drain(..) {
            dev.block.submit(now, r, slot as u64);
        }
        if let Some(ef) = dev.front.as_mut() {
            for io in self.new_front.drain(..) {
                ef.front.submit(now, io, &mut dev.block, &mut ef.done);
            }
            // Writers whose pause at the dirty limit ended try again.
            ef.front.fire_timer(now, &mut dev.block, &mut ef.done);
            ef.route(self.index, &mut self.front_done, &mut self.to_wake);
        }
        dev.block.fire_timer(now);
        dev.pump_and_take(now, self.index, &mut self.outgoing, &mut self.to_wake);
        let front_timer = dev.front.as_ref().and_then(|ef| ef.front.next_timer_ns());
        self.block_timer = dev
            .block
            .next_timer_ns()
            .unwrap_or(NONE)
            .min(front_timer.unwrap_or(NONE));
        let stall = if self.outstanding > 0 && self.next_wake == NONE && self.finished.is_empty() {
            dev.block.stall()
        } else {
            None
        };
        let policy = dev.block.policy().name();
        drop(guard);
        for w in self.to_wake.drain(..) {
            self.bells[w].ring();
        }
        if let Some(s) = stall {
            return Err(EngineError::Stalled {
                now_ns: now,
                worker: self.index,
                policy: policy.to_string(),
                queued: s.queued,
                waiting: s.waiting,
            });
        }
        self.push_sqes();
        let mut finished = std::mem::take(&mut self.finished);
        for f in finished.drain(..) {
            self.request_done(f);
        }
        self.finished = finished;
        self.buffered_done();
        Ok(())
    }

    fn request_done(&mut self, f: Finished) {
        let t_reap = self.clock();
        let slot = f.token as u32;
        let t = self.slot_thread[slot as usize] as usize;
        if self.threads[t].verify.is_some() {
            self.verify_done(t, slot, &f);
        }
        self.free_slots.push(slot);
        self.outstanding -= 1;
        self.res.ios += 1;
        let th = &mut self.threads[t];
        th.outstanding -= 1;
        let job = th.job as usize;
        let rt = &self.jobs[job];
        // Completions after a job's time-based end are not counted, as in fio — but its
        // end sync is (fio issues it after its I/O loop and counts it).
        if !rt.ended || f.op == Op::Flush {
            self.samples.push(Sample {
                job,
                op: f.op,
                class: rt.class,
                bytes: f.len,
                submit_ns: f.submit_ns,
                admit_ns: f.admit_ns,
                dispatch_ns: f.dispatch_ns,
                device_done_ns: f.device_done_ns,
                reaped_ns: t_reap,
                ok: f.ok,
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
            self.sh.early.job_ended(j);
            self.res.last_job_end = self.res.last_job_end.max(end);
            self.sh
                .collector
                .lock()
                .expect("collector lock")
                .job_done(j, end);
        }
    }

    /// Hand the samples to the collector (one lock), publish progress; worker 0 samples
    /// the (device-wide) policy counters once per interval.
    fn flush(&mut self) {
        self.last_flush = self.now;
        if !self.samples.is_empty() {
            let mut c = self.sh.collector.lock().expect("collector lock");
            for s in &self.samples {
                c.record(s);
            }
            drop(c);
            for s in &self.samples {
                if s.ok {
                    let a = &mut self.done_acc[s.job];
                    a.0 += 1;
                    a.1 += s.bytes as u64;
                }
            }
            for (j, a) in self.done_acc.iter_mut().enumerate() {
                if a.0 > 0 {
                    self.sh.early.add(j, a.0, a.1);
                    *a = (0, 0);
                }
            }
            self.samples.clear();
        }
        for th in &self.threads {
            self.sh.issued[th.global as usize].store(th.source.issued_bytes(), Ordering::Relaxed);
        }
        if self.index == 0 && self.now >= self.next_counter_ns {
            let mut dev = self.dev.lock().expect("device lock");
            dev.block.sample_counters(self.now);
            self.next_counter_ns = self.now + self.interval_ns;
        }
    }
}
