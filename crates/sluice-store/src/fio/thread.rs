//! One fio thread on the store: `iodepth` slot tasks over one [`IoSource`], its files,
//! its syncs and its end.
//!
//! Invariants (checked where they are kept): a sync is issued only with nothing of the
//! thread in flight (the source says [`NextIo::Drain`] until then) and nothing is
//! issued while it runs (`syncing`); `in_flight` counts the thread's store calls under
//! way, syncs included; a file is created once (under the files' lock).

use std::io;
use std::rc::Rc;

use sluice_core::{Nanos, Op};
use sluice_metrics::Sample;
use sluice_runtime::{now, sleep, spawn, Condvar, DmaBuffer, Mutex, TaskCtx};
use sluice_workload::{IoSource, IoSpec, JobSpec, NextIo};

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

/// What the slots of one thread share, under the runtime's lock.
#[derive(Debug)]
struct State {
    src: IoSource,
    in_flight: u32,
    /// A sync is under way: nothing new goes out.
    syncing: bool,
    /// The thread ends: its runtime passed, or an I/O failed.
    stop: bool,
    failed: bool,
    /// The file the last write went to (the periodic sync's file).
    last_write: u32,
}

struct Thread {
    sh: Rc<Shared>,
    job: usize,
    thread: u32,
    /// Pacer slots count from here (the job's start).
    base_ns: Nanos,
    /// `runtime`'s end, if any.
    end_ns: Option<Nanos>,
    state: Mutex<State>,
    changed: Condvar,
    files: Mutex<Vec<Option<FsFile>>>,
}

enum Action {
    Done,
    Sleep(Nanos),
    Io(IoSpec, u32),
}

/// Run thread `t` of job `j`, which starts at `begin_ns`: its slots, then its end
/// syncs. The job ends when its last thread does (a runtime end was recorded at its
/// instant already: the first record wins).
pub(super) async fn run_thread(sh: Rc<Shared>, j: usize, t: u32, begin_ns: Nanos) {
    thread_body(&sh, j, t, begin_ns).await;
    let mut live = sh.live.borrow_mut();
    live[j] -= 1;
    if live[j] == 0 {
        sh.collector.borrow_mut().job_done(j, now());
    }
}

async fn thread_body(sh: &Rc<Shared>, j: usize, t: u32, begin_ns: Nanos) {
    let job = &sh.jobs[j];
    if begin_ns > now() {
        sleep(begin_ns - now()).await;
    }
    // The source's own end sync is one flush; the store syncs every file instead.
    let mut spec = job.clone();
    spec.end_fsync = false;
    let nfiles = job.nrfiles.max(1) as usize;
    let th = Rc::new(Thread {
        sh: sh.clone(),
        job: j,
        thread: t,
        base_ns: begin_ns,
        end_ns: job
            .runtime_ns
            .map(|r| begin_ns.saturating_add(job.ramp_ns).saturating_add(r)),
        state: Mutex::new(State {
            src: IoSource::new(&spec, j, t, sh.seed),
            in_flight: 0,
            syncing: false,
            stop: false,
            failed: false,
            last_write: 0,
        }),
        changed: Condvar::new(),
        files: Mutex::new(vec![None; nfiles]),
    });
    if !job.create_on_open {
        let mut files = th.files.lock().await;
        for (f, slot) in files.iter_mut().enumerate() {
            match sh.fs.open(&file_name(job, t, f as u32)).await {
                Ok(file) => *slot = Some(file),
                Err(e) => {
                    th.fail(Op::Write, &e);
                    return;
                }
            }
        }
    }
    let ctx = task_ctx(job, t);
    let others: Vec<_> = (1..job.iodepth.max(1))
        .map(|_| spawn(ctx.clone(), slot(th.clone())))
        .collect();
    slot(th.clone()).await;
    for h in others {
        h.await;
    }
    // end_fsync and fsync_on_close: every file of the thread, however it ended (by
    // size or by its runtime, as fio syncs when its I/O loop ends), unless an I/O
    // failed or the run was interrupted.
    let failed = th.state.lock().await.failed;
    if failed || sh.stopped() || !(job.fsync_on_close || job.end_fsync) {
        return;
    }
    let files: Vec<FsFile> = th.files.lock().await.iter().flatten().cloned().collect();
    for file in files {
        let submit = now();
        let r = file.fsync().await.map(|_| 0);
        th.record(Op::Flush, submit, &r);
        if r.is_err() {
            return;
        }
    }
}

impl Thread {
    fn job(&self) -> &JobSpec {
        &self.sh.jobs[self.job]
    }

    /// Count a failure of the job (the first message kept).
    fn fail(&self, op: Op, e: &io::Error) {
        self.sh.collector.borrow_mut().record_error(self.job, op);
        let mut errs = self.sh.errors.borrow_mut();
        let slot = &mut errs[self.job];
        slot.0 += 1;
        if slot.1.is_none() {
            slot.1 = Some(format!("thread {}: {e}", self.thread));
        }
    }

    /// Record a finished store call of `op` (the bytes it moved, or its failure).
    fn record(&self, op: Op, submit_ns: Nanos, r: &io::Result<usize>) {
        let reaped_ns = now();
        match r {
            Ok(n) => self.sh.collector.borrow_mut().record(&Sample {
                job: self.job,
                op,
                class: self.job().class,
                bytes: *n as u32,
                submit_ns,
                admit_ns: submit_ns,
                // One store call may be several device I/Os: no single dispatch, so
                // the whole call counts as time on the device (module docs).
                dispatch_ns: submit_ns,
                device_done_ns: reaped_ns,
                reaped_ns,
                ok: true,
            }),
            Err(e) => self.fail(op, e),
        }
    }

    /// The file `f`, created now if the job creates its files on open.
    async fn file(&self, f: u32) -> io::Result<FsFile> {
        let mut files = self.files.lock().await;
        if let Some(file) = &files[f as usize] {
            return Ok(file.clone());
        }
        let file = self
            .sh
            .fs
            .create(&file_name(self.job(), self.thread, f))
            .await?;
        files[f as usize] = Some(file.clone());
        Ok(file)
    }

    /// Which file an offset of the generator's address space falls in, and where.
    fn locate(&self, offset: u64) -> (u32, u64) {
        let job = self.job();
        let fsz = file_size(job);
        let rel = offset.saturating_sub(job.offset);
        let f = (rel / fsz).min(job.nrfiles.max(1) as u64 - 1);
        (f as u32, job.offset + rel - f * fsz)
    }

    /// What the slot does next (under the lock, waiting while a sync is due or under
    /// way).
    async fn next(&self) -> Action {
        let mut st = self.state.lock().await;
        loop {
            if st.stop {
                return Action::Done;
            }
            if self.sh.stopped() {
                // Stopped (Ctrl-C): the job ends here, as at its runtime's end.
                st.stop = true;
                self.sh.collector.borrow_mut().job_done(self.job, now());
                self.changed.notify_all();
                return Action::Done;
            }
            if let Some(end) = self.end_ns {
                if now() >= end {
                    st.stop = true;
                    self.sh.collector.borrow_mut().job_done(self.job, end);
                    self.changed.notify_all();
                    return Action::Done;
                }
            }
            if st.syncing {
                st = self.changed.wait(st).await;
                continue;
            }
            let in_flight = st.in_flight;
            match st.src.next_with(now(), self.base_ns, in_flight) {
                NextIo::Issue(io) => {
                    let f = match io.op {
                        Op::Flush => {
                            debug_assert_eq!(in_flight, 0, "a sync goes out quiesced");
                            st.syncing = true;
                            st.last_write
                        }
                        op => {
                            let (f, _) = self.locate(io.offset);
                            if op == Op::Write {
                                st.last_write = f;
                            }
                            f
                        }
                    };
                    st.in_flight += 1;
                    return Action::Io(io, f);
                }
                NextIo::At(t) => return Action::Sleep(t),
                NextIo::Drain => st = self.changed.wait(st).await,
                NextIo::Exhausted => return Action::Done,
            }
        }
    }

    /// Do one I/O (or sync) of file `f` through the store; returns the bytes moved.
    async fn io(&self, io: IoSpec, f: u32, buf: &mut Vec<u8>) -> io::Result<usize> {
        let job = self.job();
        let file = self.file(f).await?;
        let (_, off) = self.locate(io.offset);
        let len = io.len as usize;
        match (io.op, job.buffered) {
            (Op::Flush, _) if job.sync_data_only => file.fdatasync().await.map(|_| 0),
            (Op::Flush, _) => file.fsync().await.map(|_| 0),
            (Op::Read, false) => file.read_at(DmaBuffer::new(len), off).await.0,
            (Op::Read, true) => {
                buf.resize(len, 0);
                file.read_buffered(off, buf).await
            }
            (Op::Write, false) => {
                let mut b = DmaBuffer::new(len);
                let name = file_name(job, self.thread, f);
                fill_pattern(self.sh.seed, &name, off, &mut b);
                file.write_at(b, off).await.0
            }
            (Op::Write, true) => {
                buf.resize(len, 0);
                let name = file_name(job, self.thread, f);
                fill_pattern(self.sh.seed, &name, off, buf);
                file.write_buffered(off, buf).await
            }
        }
    }
}

/// One of a thread's `iodepth` slots: take the next I/O, do it, record it, repeat.
async fn slot(th: Rc<Thread>) {
    let mut buf = Vec::new();
    loop {
        match th.next().await {
            Action::Done => return,
            Action::Sleep(t) => {
                let until = th.end_ns.map_or(t, |e| t.min(e));
                let n = now();
                if until > n {
                    sleep(until - n).await;
                }
            }
            Action::Io(io, f) => {
                let submit = now();
                let r = th.io(io, f, &mut buf).await;
                th.record(io.op, submit, &r);
                {
                    let mut st = th.state.lock().await;
                    st.in_flight -= 1;
                    if io.op == Op::Flush {
                        st.syncing = false;
                    }
                    if r.is_err() {
                        st.stop = true;
                        st.failed = true;
                    }
                }
                th.changed.notify_all();
                let think = th.job().thinktime_ns;
                if think > 0 && r.is_ok() {
                    sleep(think).await;
                }
            }
        }
    }
}
