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
use sluice_fio::{Port, Runner, Scope, Submit, ThreadSetup, VerifyDone};
use sluice_metrics::Sample;
use sluice_workload::JobSpec;

use crate::buf::{AlignedBuf, BUF_ALIGN};
use crate::buffered::SlotData;
use crate::device::{DevState, Doorbell, OutBuf, Outgoing};
use crate::error::EngineError;
use crate::ring::new_ring;
use sluice_fio::front::{FrontDone, FrontIo};
use sluice_fio::Owner;

mod buffered;
mod kernel;
mod setup;
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

/// One job thread a worker is given.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PlannedThread {
    /// Its index over all threads.
    pub global: u32,
    /// Its job.
    pub job: u32,
    /// Its index within the job.
    pub index: u32,
    /// Its file's index into the worker's registered files.
    pub file: u32,
    /// Where its file starts in the policy's address space.
    pub base: u64,
    /// Its file is a block device (`--allow-device`): a trim is a discard.
    pub device: bool,
}

/// What a worker is given: its threads and the files they use.
#[derive(Debug, Clone)]
pub(crate) struct WorkerPlan {
    pub index: usize,
    pub threads: Vec<PlannedThread>,
    /// The files this worker registers, in fixed-file order.
    pub fds: Vec<RawFd>,
    /// The page cache's files (buffered jobs' files), registered by every worker so
    /// that any running worker can issue the cache's I/O: (base, fixed index, block
    /// device).
    pub cache_files: Vec<(u64, u32, bool)>,
}

/// Settings every worker shares.
#[derive(Debug, Clone)]
pub(crate) struct WorkerCfg {
    pub seed: u64,
    pub submit_batch: u32,
    pub job_flow: Vec<FlowId>,
}

/// A job's I/O errors in a worker.
#[derive(Debug, Default, Clone)]
pub(crate) struct JobErrors {
    /// How many requests failed.
    pub count: u64,
    /// The first failure, described.
    pub first: Option<String>,
}

/// A job's verify checks over its threads.
#[derive(Debug, Default, Clone)]
pub(crate) struct VerifyCount {
    /// Blocks checked.
    pub checked: u64,
    /// Blocks that failed their check.
    pub failed: u64,
    /// The first failure, described.
    pub first: Option<String>,
}

/// What a worker reports at the end.
#[derive(Debug, Default)]
pub(crate) struct WorkerResult {
    pub ios: u64,
    pub enters: u64,
    pub last_job_end: Nanos,
    /// Per job: its I/O errors.
    pub errors: Vec<JobErrors>,
    /// Per job: its verify checks (jobs with `verify`).
    pub verify: Vec<VerifyCount>,
    pub fixed_buffers: bool,
    pub ring_entries: u32,
    pub interrupted: bool,
}

/// A job thread's side in the worker: its file and where the page cache has it.
/// (Its state — pacing, depth, ends — is the runner's.)
#[derive(Debug)]
struct Thread {
    global: u32,
    job: u32,
    /// Its file's index among the worker's registered files.
    file: u32,
    file_base: u64,
    /// Its file is a block device.
    device: bool,
    /// Its file in the page cache, for a buffered job.
    front_file: Option<u32>,
}

pub(crate) struct Worker<'a> {
    index: usize,
    sh: &'a Shared<'a>,
    dev: &'a Mutex<DevState>,
    bells: &'a [Doorbell],
    /// The job threads (the one fio runner); taken out while it drives the worker as
    /// its port (see [`Worker::with_runner`]).
    runner: Option<Runner>,
    ring: IoUring,
    _region: AlignedBuf,
    region_ptr: *mut u8,
    slot_len: usize,
    fixed_bufs: bool,
    threads: Vec<Thread>,
    /// The page cache's files: (base, fixed index, block device).
    cache_files: Vec<(u64, u32, bool)>,
    /// Request slot → the thread that owns it.
    slot_thread: Vec<u32>,
    /// Request slot → the request's offset (a piece's place in the slot's buffer is
    /// its offset minus this).
    slot_offset: Vec<u64>,
    /// Request slot → its read is checked by the thread's verifier.
    slot_check: Vec<bool>,
    /// A write of the slot's request found no space (ENOSPC/EDQUOT): the piece, kept
    /// until the request is done, when the runner says whether that ends a
    /// `fill_device` job (no error) or is an error (`sluice_fio::fill`).
    slot_nospace: Vec<Option<(Op, u32, u64, i32)>>,
    free_slots: Vec<u32>,
    /// Requests the job threads issued this turn, for the block layer.
    new_reqs: Vec<(NewRequest, u32)>,
    /// Buffered jobs' I/Os issued this turn, for the page cache.
    new_front: Vec<FrontIo<SlotData>>,
    /// Buffered jobs' I/Os the page cache completed, to hand to their threads.
    front_done: Vec<FrontDone>,
    /// Request slot → (op, bytes, submitted, class) of a buffered job's I/O.
    slot_io: Vec<(Op, u32, Nanos, IoClass)>,
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
    samples: Vec<Sample>,
    last_flush: Nanos,
    next_counter_ns: Nanos,
    interval_ns: Nanos,
    interrupted: bool,
    /// The stonewall group running.
    cur_group: usize,
    /// Per job: completed I/Os and bytes not yet handed to [`crate::early::EarlyEnd`].
    done_acc: Vec<(u64, u64, u64)>,
    res: WorkerResult,
}

fn clock(origin: Instant) -> Nanos {
    origin.elapsed().as_nanos() as Nanos
}

/// The worker is the runner's port: requests go to the block layer (or the page
/// cache) at the next [`Worker::sync`], wake-ups and ends to the loop's timers,
/// samples to the collector in batches.
impl Port for Worker<'_> {
    fn submit(&mut self, s: Submit<'_>) {
        let slot = self
            .free_slots
            .pop()
            .expect("a slot per unit of iodepth: outstanding ≤ iodepth");
        self.slot_thread[slot as usize] = s.thread;
        self.slot_offset[slot as usize] = s.req.offset;
        self.slot_check[slot as usize] = s.check;
        if let (Op::Write, Some(v)) = (s.io.op, s.verify) {
            // SAFETY: the slot is free (taken just now), its buffer is slot_len ≥ len
            // bytes inside the region, and no other reference to it exists.
            let buf = unsafe {
                std::slice::from_raw_parts_mut(
                    self.region_ptr.add(slot as usize * self.slot_len),
                    s.io.len as usize,
                )
            };
            v.fill(buf, s.io.offset);
        }
        self.outstanding += 1;
        if let Some(file) = self.threads[s.thread as usize].front_file {
            let now = self.now;
            self.issue_buffered(slot, file, s.req, s.io.offset, now);
        } else {
            self.new_reqs.push((s.req, slot));
        }
    }

    fn wake_at(&mut self, _thread: u32, at: Nanos) {
        self.next_wake = self.next_wake.min(at);
    }

    fn end_at(&mut self, _job: u32, at: Nanos) {
        self.next_job_end = self.next_job_end.min(at);
    }

    fn record(&mut self, s: &Sample) {
        self.samples.push(*s);
    }

    fn record_error(&mut self, job: usize, thread: u32, op: Op, errno: i32) {
        self.sh
            .collector
            .lock()
            .expect("collector lock")
            .record_thread_error(job, thread, op, errno);
    }

    fn thread_end(&mut self, job: usize, thread: u32, at: Nanos) {
        self.sh
            .collector
            .lock()
            .expect("collector lock")
            .thread_done(job, thread, at);
    }

    fn job_done(&mut self, job: usize, at: Nanos) {
        self.res.last_job_end = self.res.last_job_end.max(at);
        self.sh
            .collector
            .lock()
            .expect("collector lock")
            .job_done(job, at);
    }

    fn exit_all(&mut self, job: u32, _others: &[u32]) {
        // Every part ends the group's jobs at its next loop turn.
        self.sh.early.job_ended(job as usize);
    }

    fn token_flow(&mut self, f: usize, d_count: i64, d_weight: i64) -> Option<(u64, u64)> {
        Some(
            self.sh
                .tokens
                .lock()
                .expect("token flow lock")
                .apply(f, d_count, d_weight),
        )
    }

    fn job_over(&mut self, job: u32) -> bool {
        // `wait_for`: every thread of the waitee, over all workers, is done.
        self.sh.job_live[job as usize].load(Ordering::Acquire) == 0
    }

    fn thread_done(&mut self, job: u32) -> bool {
        // The job's last thread, over all workers.
        self.sh.job_live[job as usize].fetch_sub(1, Ordering::AcqRel) == 1
    }
}

impl<'a> Worker<'a> {
    #[inline]
    fn clock(&mut self) -> Nanos {
        self.now = clock(self.sh.origin);
        self.now
    }

    /// Let the runner drive the worker as its port.
    fn with_runner<R>(&mut self, f: impl FnOnce(&mut Runner, &mut Self) -> R) -> R {
        let mut r = self
            .runner
            .take()
            .expect("the runner is home between calls");
        let out = f(&mut r, self);
        self.runner = Some(r);
        out
    }

    fn runner(&self) -> &Runner {
        self.runner
            .as_ref()
            .expect("the runner is home between calls")
    }

    /// Run this worker's jobs of stonewall group `g`, which started at `group_start`.
    pub(crate) fn run_group(&mut self, g: usize, group_start: Nanos) -> Result<(), EngineError> {
        self.cur_group = g;
        self.dev
            .lock()
            .expect("device lock")
            .port
            .rejoin(self.index);
        self.with_runner(|r, w| r.start_group(g, group_start, w));
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
            if self.runner().active() == 0
                && self.outstanding == 0
                && self.in_ring == 0
                && self.leave_port()
            {
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

    /// This worker's jobs of the group are done: it stops taking its outbox (the page
    /// cache's writeback queued for its queue goes out on the workers still running,
    /// which wait for it) — unless it is the last one and pieces are still in its
    /// outbox (`false`: go round once more).
    fn leave_port(&mut self) -> bool {
        let mut dev = self.dev.lock().expect("device lock");
        // The last worker stays while the block layer holds requests (the page cache's
        // writeback, held by the policy or a timer): their pages are under writeback,
        // not dirty, so the write-out after the run would pass them over.
        if !dev.port.others_live(self.index) && dev.block.live() > 0 {
            return false;
        }
        let left = dev.port.leave(self.index, &mut self.to_wake);
        drop(dev);
        for w in self.to_wake.drain(..) {
            self.bells[w].ring();
        }
        left
    }

    /// The run is over: this worker's facts.
    pub(crate) fn finish(mut self) -> WorkerResult {
        let runner = self
            .runner
            .take()
            .expect("the runner is home between calls");
        runner.report_queue_facts(&mut self.sh.collector.lock().expect("collector lock"));
        for (j, v) in runner.verifiers() {
            let r = &mut self.res.verify[j];
            r.checked += v.checked;
            r.failed += v.failed;
            if r.first.is_none() {
                r.first.clone_from(&v.first);
            }
        }
        self.res
    }

    /// Stop every job at once (Ctrl-C or another worker's failure).
    fn interrupt(&mut self) {
        self.interrupted = true;
        self.res.interrupted = true;
        let now = self.now;
        self.with_runner(|r, w| r.interrupt(now, w));
    }

    /// Job ends and thread wake-ups that are due.
    fn timers(&mut self) {
        let now = self.now;
        let g = self.cur_group;
        if self.sh.early.any_flagged() {
            // exitall or steady state, decided elsewhere: end this worker's part.
            let sh = self.sh;
            self.with_runner(|r, w| {
                for j in 0..sh.early.len() {
                    if r.job_group(j) == g && !r.ended(j) && sh.early.flagged(j) {
                        r.end_job(j as u32, now, w);
                    }
                }
            });
        }
        if now >= self.next_job_end {
            self.next_job_end = NONE;
            self.with_runner(|r, w| {
                let mut next = NONE;
                for j in 0..w.sh.early.len() {
                    let Some(end) = r.end_time(j).filter(|_| !r.ended(j)) else {
                        continue;
                    };
                    if end <= now {
                        r.end_job(j as u32, end, w);
                    } else {
                        next = next.min(end);
                    }
                }
                w.next_job_end = w.next_job_end.min(next);
            });
        }
        if now >= self.next_wake {
            self.next_wake = NONE;
            self.with_runner(|r, w| {
                let mut next = NONE;
                for t in 0..r.thread_count() as u32 {
                    r.wake(t, now, w);
                    next = next.min(r.wake_time(t).unwrap_or(NONE));
                }
                w.next_wake = w.next_wake.min(next);
            });
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
        if let Some(ef) = dev.front.as_mut() {
            // The cache's device I/O goes out on this worker's ring while it holds the
            // lock: it is running (a file's first worker may have ended its jobs).
            ef.front.set_issuer(Some(self.index as u16));
        }
        if let Some((from, to, t_dev)) = done {
            for i in from..to {
                let (ud, res) = self.cqes[i];
                let tag = ud as u32;
                let p = dev.block.piece(tag).req;
                // A flush and a trim (fallocate) return 0 on success, a read or write
                // its bytes.
                let ok = res >= 0 && (matches!(p.op, Op::Flush | Op::Trim) || res as u32 == p.len);
                let token = dev.block.request(p.id).token;
                if let (false, Owner::Job(slot)) = (ok, Owner::of(token)) {
                    // No space: ENOSPC/EDQUOT, or a write cut short (the file system
                    // took what it had room for).
                    let nospace = if res < 0 {
                        sluice_fio::fill::is_fill_end(-res)
                    } else {
                        (res as u32) < p.len
                    };
                    if p.op == Op::Write && nospace {
                        self.slot_nospace[slot as usize] = Some((p.op, p.len, p.offset, res));
                    } else {
                        self.note_error(slot, p.op, p.len, p.offset, res);
                    }
                }
                self.in_ring -= 1;
                if let Some(f) = dev.complete(t_dev, tag, ok) {
                    if let Owner::Front(_) = Owner::of(f.token) {
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
            dev.block.submit(now, r, Owner::Job(slot).token());
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

    /// A request finished: its slot goes back to the pool (after a verify read's
    /// check), and the runner takes its sample and lets its thread go on.
    fn request_done(&mut self, f: Finished) {
        let t_reap = self.clock();
        let slot = f.token as u32;
        let t = self.slot_thread[slot as usize];
        if let Some((op, len, offset, res)) = self.slot_nospace[slot as usize].take() {
            if !self.with_runner(|r, _| r.space_ran_out(t)) {
                self.note_error(slot, op, len, offset, res);
            }
        }
        self.free_slots.push(slot);
        self.outstanding -= 1;
        self.res.ios += 1;
        let verify = self.runner().verifier(t).is_some().then(|| VerifyDone {
            offset: self.slot_offset[slot as usize] - self.threads[t as usize].file_base,
            check: self.slot_check[slot as usize],
            // SAFETY: the slot's request completed; its buffer (len ≤ slot_len bytes)
            // is not in the kernel's hands, and the runner checks it before its
            // thread issues again (which could reuse the slot).
            data: unsafe {
                std::slice::from_raw_parts(
                    self.region_ptr.add(slot as usize * self.slot_len),
                    f.len as usize,
                )
            },
        });
        self.with_runner(|r, w| r.complete(t, &f, t_reap, verify, w));
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
                    a.2 += s.reaped_ns.saturating_sub(s.dispatch_ns);
                }
            }
            for (j, a) in self.done_acc.iter_mut().enumerate() {
                if a.0 > 0 {
                    self.sh.early.add(j, a.0, a.1, a.2);
                    *a = (0, 0, 0);
                }
            }
            self.samples.clear();
        }
        let r = self.runner();
        for (t, th) in self.threads.iter().enumerate() {
            self.sh.issued[th.global as usize].store(r.issued_bytes(t as u32), Ordering::Relaxed);
        }
        if self.index == 0 && self.now >= self.next_counter_ns {
            let mut dev = self.dev.lock().expect("device lock");
            dev.block.sample_counters(self.now);
            self.next_counter_ns = self.now + self.interval_ns;
        }
    }
}
