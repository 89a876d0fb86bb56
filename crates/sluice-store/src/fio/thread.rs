//! The store's side of the one fio runner ([`sluice_fio::Runner`]): the runner's
//! threads, depth, pacing, ends and samples drive store calls, each a runtime task
//! with its thread's context (flow, weight, class).
//!
//! The port: a request becomes a task that does the store call (opening or creating
//! the file first if needed) and hands the completion back; a wake-up, a `runtime`
//! end or an `exitall` becomes a task that sleeps until its instant and calls the
//! runner. The runner is borrowed only inside [`Driver::with`], never across an
//! `.await`, and no port method calls back into it (they spawn), so it is never
//! borrowed twice. A file is opened or created once (under its thread's lock).

use std::cell::{Cell, RefCell};
use std::io;
use std::rc::Rc;

use sluice_block::{Finished, NewRequest};
use sluice_core::{Nanos, Op, ReqId};
use sluice_fio::{Port, Runner, Scope, Submit, ThreadSetup};
use sluice_metrics::Sample;
use sluice_runtime::{now, sleep, spawn, Condvar, DmaBuffer, Mutex, TaskCtx};
use sluice_workload::{flows_of, IoSpec, JobSpec};

use super::{file_name, file_size, Shared};
use crate::FsFile;

/// The SplitMix64 finaliser.
fn mix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The bytes the runner writes at `offset` of file `name` in a run seeded `seed`:
/// byte `p` of the file is byte `p mod 8` (little-endian) of `mix64(key ^ p / 8)`,
/// `key` from the seed and the name — position-determined, so a file can be checked
/// after a run whatever order its blocks were written in.
pub fn fill_pattern(seed: u64, name: &str, offset: u64, out: &mut [u8]) {
    let key = name.bytes().fold(mix64(seed), |h, b| mix64(h ^ b as u64));
    let mut p = offset;
    let mut i = 0;
    while i < out.len() {
        let word = mix64(key ^ (p / 8)).to_le_bytes();
        let from = (p % 8) as usize;
        let n = (8 - from).min(out.len() - i);
        out[i..i + n].copy_from_slice(&word[from..from + n]);
        i += n;
        p += n as u64;
    }
}

/// The context of thread `t` of `job`: the job's flow, weight and class.
pub(super) fn task_ctx(job: &JobSpec, t: u32) -> TaskCtx {
    TaskCtx::new(format!("{}.{t}", job.name))
        .flow(job.flow.clone())
        .weight(job.weight.max(1))
        .class(job.class)
}

/// Lay out file `f` of thread `t` of job `j` before the run, as fio's "laying out IO
/// file" and `sluice run` on raw files: created, written whole (the pattern, so a
/// reader reads data and a writer overwrites allocated blocks) and fsynced.
pub(super) async fn lay_out(sh: &Shared, j: usize, t: u32, f: u32) -> io::Result<()> {
    let job = &sh.jobs[j];
    let name = file_name(job, t, f);
    let file = sh.fs.create(&name).await?;
    let len = job.offset + file_size(job);
    const CHUNK: u64 = 256 << 10;
    let mut at = 0;
    while at < len {
        let n = CHUNK.min(len - at) as usize;
        let mut buf = DmaBuffer::new(n);
        fill_pattern(sh.seed, &name, at, &mut buf);
        let (r, _) = file.write_at(buf, at).await;
        r?;
        at += n as u64;
    }
    file.fsync().await
}

/// One runner thread's files.
struct ThreadFiles {
    job: usize,
    thread: u32,
    /// Its files, opened (or created) at first use.
    files: Mutex<Vec<Option<FsFile>>>,
}

/// The runner and the store's side of it, shared by the tasks of a run.
pub(super) struct Driver {
    sh: Rc<Shared>,
    runner: RefCell<Runner>,
    threads: Vec<ThreadFiles>,
    /// The stop flag was seen and the runner interrupted.
    interrupted: Cell<bool>,
    /// Some job syncs (`fsync=N`, `end_fsync`): the run is under way at its first sync.
    syncs: bool,
    /// Every stonewall group has ended.
    finished: Condvar,
    finished_lock: Mutex<()>,
}

/// The runner's port: a handle on the driver.
struct Handle(Rc<Driver>);

impl Port for Handle {
    fn submit(&mut self, s: Submit<'_>) {
        let d = self.0.clone();
        let ctx = d.ctx(s.thread);
        let (t, req, io) = (s.thread, s.req, s.io);
        drop(spawn(ctx, async move { d.io_task(t, req, io).await }));
    }

    fn wake_at(&mut self, thread: u32, at: Nanos) {
        let d = self.0.clone();
        let ctx = d.ctx(thread);
        drop(spawn(ctx, async move {
            sleep_until(at).await;
            d.with(|r, p| {
                r.wake(thread, now(), p);
            });
        }));
    }

    fn job_start(&mut self, job: u32, start_ns: Nanos) {
        let ramp = self.0.sh.jobs[job as usize].ramp_ns;
        self.0
            .sh
            .collector
            .borrow_mut()
            .set_job_window(job as usize, start_ns + ramp);
    }

    fn end_at(&mut self, job: u32, at: Nanos) {
        let d = self.0.clone();
        drop(spawn(TaskCtx::new("fio-end"), async move {
            sleep_until(at).await;
            d.with(|r, p| r.end_job(job, at, p));
        }));
    }

    fn record(&mut self, s: &Sample) {
        let sh = &self.0.sh;
        sh.collector.borrow_mut().record(s);
        if s.op == Op::Flush || !self.0.syncs {
            if let Some(ready) = sh.ready.take() {
                ready();
            }
        }
    }

    fn thread_end(&mut self, job: usize, thread: u32, at: Nanos) {
        self.0
            .sh
            .collector
            .borrow_mut()
            .thread_done(job, thread, at);
    }

    fn record_error(&mut self, job: usize, thread: u32, op: Op, errno: i32) {
        self.0
            .sh
            .collector
            .borrow_mut()
            .record_thread_error(job, thread, op, errno);
    }

    fn job_done(&mut self, job: usize, at: Nanos) {
        self.0.sh.collector.borrow_mut().job_done(job, at);
    }

    fn exit_all(&mut self, _job: u32, others: &[u32]) {
        let d = self.0.clone();
        let others = others.to_vec();
        drop(spawn(TaskCtx::new("fio-exitall"), async move {
            d.with(|r, p| {
                for &k in &others {
                    r.end_job(k, now(), p);
                }
            });
        }));
    }
}

async fn sleep_until(at: Nanos) {
    let n = now();
    if at > n {
        sleep(at - n).await;
    }
}

impl Driver {
    /// The driver of `sh`'s jobs, nothing started.
    pub(super) fn new(sh: Rc<Shared>) -> Rc<Driver> {
        let jobs = &sh.jobs;
        let (_, job_flow) = flows_of(jobs).expect("flows checked by run_jobs");
        let mut setups = Vec::new();
        let mut threads = Vec::new();
        for (j, job) in jobs.iter().enumerate() {
            for t in 0..job.numjobs {
                // The generator's offsets are the thread's own (its files cut them).
                setups.push(ThreadSetup {
                    job: j as u32,
                    index: t,
                    base: 0,
                    hwq: 0,
                });
                let nfiles = job.nrfiles.max(1) as usize;
                threads.push(ThreadFiles {
                    job: j,
                    thread: t,
                    files: Mutex::new(vec![None; nfiles]),
                });
            }
        }
        let runner = Runner::new(jobs, &job_flow, &setups, sh.seed, Scope::Whole, false);
        let syncs = jobs.iter().any(|j| j.fsync_every > 0 || j.end_fsync);
        Rc::new(Driver {
            sh,
            runner: RefCell::new(runner),
            threads,
            interrupted: Cell::new(false),
            syncs,
            finished: Condvar::new(),
            finished_lock: Mutex::new(()),
        })
    }

    /// Run the stonewall groups from now until the last one ends.
    pub(super) async fn run(self: &Rc<Driver>) {
        let start = now();
        self.with(|r, p| r.start_group(0, start, p));
        let mut g = self.finished_lock.lock().await;
        while !self.over() {
            g = self.finished.wait(g).await;
        }
    }

    fn over(&self) -> bool {
        let r = self.runner.borrow();
        r.group() >= r.groups()
    }

    /// The run is over: the runner's depth maps go to the collector; when the last job
    /// ended.
    pub(super) fn finish(&self) -> Nanos {
        let r = self.runner.borrow();
        r.report_queue_facts(&mut self.sh.collector.borrow_mut());
        r.last_job_end()
    }

    /// Call the runner with the driver as its port; a stop seen first interrupts the
    /// run (every job ends as its runtime would; I/Os in flight complete and count).
    fn with(self: &Rc<Driver>, f: impl FnOnce(&mut Runner, &mut Handle)) {
        let mut port = Handle(self.clone());
        let mut r = self.runner.borrow_mut();
        if self.sh.stopped() && !self.interrupted.get() {
            self.interrupted.set(true);
            r.interrupt(now(), &mut port);
        }
        f(&mut r, &mut port);
        if r.group() >= r.groups() {
            self.finished.notify_all();
        }
    }

    /// The context of runner thread `t`'s tasks.
    fn ctx(&self, t: u32) -> TaskCtx {
        let th = &self.threads[t as usize];
        task_ctx(&self.sh.jobs[th.job], th.thread)
    }

    /// One request of thread `t` as a store call; its completion goes to the runner.
    /// A failed call ends its thread unless the job's `continue_on_error` names it
    /// (the runner decides, as fio), its error kept.
    async fn io_task(self: Rc<Driver>, t: u32, req: NewRequest, io: IoSpec) {
        let submit_ns = now();
        let r = self.io(t, io).await;
        let reaped_ns = now();
        let th = &self.threads[t as usize];
        if let Err(e) = &r {
            let mut errs = self.sh.errors.borrow_mut();
            let slot = &mut errs[th.job];
            slot.0 += 1;
            if slot.1.is_none() {
                slot.1 = Some(format!("thread {}: {e}", th.thread));
            }
        }
        let f = Finished {
            id: ReqId(u64::MAX),
            token: t as u64,
            op: io.op,
            len: r.as_ref().map_or(io.len, |n| *n as u32),
            offset: req.offset,
            class: req.class,
            // One store call may be several device I/Os (data, journal, FLUSH): no
            // single dispatch, so the whole call counts as time on the device.
            submit_ns,
            admit_ns: submit_ns,
            dispatch_ns: submit_ns,
            device_done_ns: reaped_ns,
            ok: r.is_ok(),
        };
        // A failure ends the thread unless `continue_on_error` names it: the runner's
        // rule, as in the other worlds.
        self.with(|run, p| run.complete(t, &f, reaped_ns, None, p));
    }

    /// The file `f` of thread `t`, opened — or created, if its job creates its files
    /// on open — at its first use.
    async fn file(&self, t: u32, f: u32) -> io::Result<FsFile> {
        let th = &self.threads[t as usize];
        let mut files = th.files.lock().await;
        if let Some(file) = &files[f as usize] {
            return Ok(file.clone());
        }
        let job = &self.sh.jobs[th.job];
        let name = file_name(job, th.thread, f);
        let file = if job.create_on_open {
            self.sh.fs.create(&name).await?
        } else {
            self.sh.fs.open(&name).await?
        };
        files[f as usize] = Some(file.clone());
        Ok(file)
    }

    /// Which file an offset of the generator's address space falls in, and where.
    fn locate(job: &JobSpec, offset: u64) -> (u32, u64) {
        let fsz = file_size(job);
        let rel = offset.saturating_sub(job.offset);
        let f = (rel / fsz).min(job.nrfiles.max(1) as u64 - 1);
        (f as u32, job.offset + rel - f * fsz)
    }

    /// Do one I/O of thread `t` through the store; returns the bytes moved (a sync's
    /// offset names its file, as the runner's source gives it).
    async fn io(&self, t: u32, io: IoSpec) -> io::Result<usize> {
        let th = &self.threads[t as usize];
        let job = &self.sh.jobs[th.job];
        let (f, off) = Self::locate(job, io.offset);
        let len = io.len as usize;
        let name = file_name(job, th.thread, f);
        match (io.op, job.buffered) {
            (Op::Flush, _) => self.sync(t, f).await.map(|_| 0),
            // Refused by `check` before any thread runs.
            (Op::Trim, _) => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "the store path has no trim",
            )),
            (Op::Read, false) => {
                let file = self.file(t, f).await?;
                file.read_at(DmaBuffer::new(len), off).await.0
            }
            (Op::Read, true) => {
                let file = self.file(t, f).await?;
                let mut buf = vec![0; len];
                file.read_buffered(off, &mut buf).await
            }
            (Op::Write, buffered) => {
                let file = self.file(t, f).await?;
                if buffered {
                    let mut buf = vec![0; len];
                    fill_pattern(self.sh.seed, &name, off, &mut buf);
                    file.write_buffered(off, &buf).await
                } else {
                    let mut b = DmaBuffer::new(len);
                    fill_pattern(self.sh.seed, &name, off, &mut b);
                    file.write_at(b, off).await.0
                }
            }
        }
    }

    /// Thread `t`'s sync of its file `f` (`fsync=N`: the file of its last write;
    /// the end sync: each of its files in turn).
    async fn sync(&self, t: u32, f: u32) -> io::Result<()> {
        let job = &self.sh.jobs[self.threads[t as usize].job];
        let file = self.file(t, f).await?;
        if job.sync_data_only {
            file.fdatasync().await
        } else {
            file.fsync().await
        }
    }
}
