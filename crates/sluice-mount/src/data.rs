//! The data path: every read, write, fsync, truncation and fallocate of an open file
//! goes through a running sluice stack (the runtime's real backend: io_uring on every
//! core, the one block layer, the chosen policy), as a task of the caller's flow, class
//! and weight.
//!
//! # Threads
//! The FUSE threads hand each request, with its reply, to the queue of its caller's
//! [`Who`]; the queue's worker tasks (up to [`WORKERS`] per caller kind, spawned on the
//! runtime's cores round robin by the dispatcher task) take it, do the I/O and reply.
//! A FUSE thread wakes a worker with its `Waker` (the runtime's doorbell); what only a
//! task may do — spawn, give the stack an opened file, close it — goes to the dispatcher
//! through the control queue.
//!
//! # Alignment
//! The backing files are `O_DIRECT`: a request is widened to whole [`BLOCK`]s. A read
//! reads the widened range and replies the part asked for, cut at the file's end as
//! the daemon knows it. A write that does not cover whole blocks reads its first and
//! last blocks (read-modify-write) under a range lock ([`crate::lock`]); a write past
//! the end cuts the file back to its true end with `ftruncate` under a lock to the end
//! of the address space, so the file never stays a block too long.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::pin::Pin;
use std::sync::{mpsc, Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use fuser::{Errno, ReplyAttr, ReplyData, ReplyEmpty, ReplyWrite};
use sluice_runtime::{spawn_on, Activity, DmaBuffer, File, IoOptions, Op, TaskCtx, FILE_SPAN};

use crate::class::Who;
use crate::lock::RangeLocks;
use crate::stats::Stats;
use crate::sys;
use crate::trace::Trace;
use sluice_core::IoClass;

/// The block the backing files' I/O is aligned to (a page: every `O_DIRECT` file
/// system takes it).
pub const BLOCK: u64 = 4096;
/// Most worker tasks per caller kind (its requests in flight at once).
pub const WORKERS: usize = 64;
/// The dispatcher's idle wake-up (ns): a pending timer tells the runtime that the stack
/// is waiting for the outside, not deadlocked.
const KEEPALIVE_NS: u64 = 100_000_000;

const READ: Activity = Activity("read");
const WRITE: Activity = Activity("write");
const SYNC: Activity = Activity("sync");

/// A backing file open in the stack, shared by every open of its inode.
#[derive(Debug)]
pub struct DataFile {
    pub file: File,
    /// A duplicate of the descriptor the stack holds, for `ftruncate`, `fallocate`,
    /// `fstat`, `fsync` and the errno of a failed I/O.
    pub fd: OwnedFd,
    /// The file's length as the daemon knows it (the backing file's, except for a
    /// moment after a write past the end, before it is cut back).
    pub size: Mutex<u64>,
    pub locks: Arc<RangeLocks>,
    pub writable: bool,
}

impl DataFile {
    fn size(&self) -> u64 {
        *self.size.lock().unwrap_or_else(|e| e.into_inner())
    }
    fn set_size(&self, s: u64) {
        *self.size.lock().unwrap_or_else(|e| e.into_inner()) = s;
    }
}

/// One data request and its reply.
pub enum Job {
    Read {
        df: Arc<DataFile>,
        off: u64,
        size: u32,
        reply: ReplyData,
    },
    Write {
        df: Arc<DataFile>,
        off: u64,
        data: Vec<u8>,
        sync: bool,
        reply: ReplyWrite,
    },
    Fsync {
        df: Arc<DataFile>,
        datasync: bool,
        reply: ReplyEmpty,
    },
    /// `ftruncate`, then `done` with the result (the caller's attributes reply).
    Truncate {
        df: Arc<DataFile>,
        size: u64,
        done: Box<dyn FnOnce(Result<(), Errno>) + Send>,
    },
    Fallocate {
        df: Arc<DataFile>,
        off: u64,
        len: u64,
        mode: i32,
        reply: ReplyEmpty,
    },
}

/// What only a task may do.
enum Control {
    Spawn(Arc<Queue>),
    Adopt {
        name: String,
        file: std::fs::File,
        back: mpsc::Sender<io::Result<File>>,
    },
    Close(File),
    Stop,
}

#[derive(Default)]
struct QState {
    jobs: VecDeque<(Stamps, Job)>,
    idle: Vec<Waker>,
    workers: usize,
}

/// The requests of one caller kind.
struct Queue {
    who: Arc<Who>,
    st: Mutex<QState>,
}

#[derive(Default)]
struct HubState {
    queues: HashMap<Who, Arc<Queue>>,
    control: VecDeque<Control>,
    dispatcher: Option<Waker>,
    stopped: bool,
}

/// A request's instants for [`Trace`]: handler start, queued, taken by a worker, I/O
/// done, replied.
pub type Stamps = [Option<Instant>; 5];

/// Between the FUSE threads and the stack.
#[derive(Default)]
pub struct Hub {
    st: Mutex<HubState>,
    pub trace: Trace,
    pub stats: Stats,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Hub")
    }
}

impl Hub {
    /// A hub whose requests are traced when `SLUICE_MOUNT_TRACE=1`, counted for the
    /// live view every `stats` when given.
    pub fn new(stats: Option<std::time::Duration>) -> Hub {
        Hub {
            trace: Trace::from_env(),
            stats: Stats::every(stats),
            ..Hub::default()
        }
    }

    /// Now, when the trace or the live view needs it.
    fn now(&self) -> Option<Instant> {
        (self.trace.on() || self.stats.on()).then(Instant::now)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, HubState> {
        self.st.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn control(&self, c: Control) {
        let w = {
            let mut st = self.state();
            if st.stopped {
                return;
            }
            st.control.push_back(c);
            st.dispatcher.take()
        };
        if let Some(w) = w {
            w.wake();
        }
    }

    /// Queue `job` for `who`'s workers.
    pub fn submit(&self, who: &Arc<Who>, job: Job) {
        let t = self.trace.now();
        self.submit_at(who, job, t);
    }

    /// Queue `job` for `who`'s workers; its FUSE handler started at `t0` (traced).
    pub fn submit_at(&self, who: &Arc<Who>, job: Job, t0: Option<Instant>) {
        let stamps = [t0, self.now(), None, None, None];
        let q = {
            let mut st = self.state();
            match st.queues.get(&**who) {
                Some(q) => q.clone(),
                None => {
                    let q = Arc::new(Queue {
                        who: who.clone(),
                        st: Mutex::new(QState::default()),
                    });
                    st.queues.insert((**who).clone(), q.clone());
                    q
                }
            }
        };
        let (wake, spawn) = {
            let mut s = q.st.lock().unwrap_or_else(|e| e.into_inner());
            s.jobs.push_back((stamps, job));
            match s.idle.pop() {
                Some(w) => (Some(w), false),
                None if s.workers < WORKERS => {
                    s.workers += 1;
                    (None, true)
                }
                None => (None, false),
            }
        };
        if let Some(w) = wake {
            w.wake();
        }
        if spawn {
            self.control(Control::Spawn(q));
        }
    }

    /// Give the stack `file` (opened by the caller) as `name`; waits for the answer.
    pub fn adopt(&self, name: String, file: std::fs::File) -> io::Result<File> {
        let (back, rx) = mpsc::channel();
        self.control(Control::Adopt { name, file, back });
        rx.recv()
            .unwrap_or_else(|_| Err(io::Error::other("the stack has stopped")))
    }

    /// The last open of `file` ended.
    pub fn close(&self, file: File) {
        self.control(Control::Close(file));
    }

    /// End the dispatcher (the stack's run returns and reports).
    pub fn stop(&self) {
        self.control(Control::Stop);
    }
}

/// The next control message, or a wake-up every [`KEEPALIVE_NS`].
struct NextControl<'a> {
    hub: &'a Hub,
    keepalive: Option<sluice_runtime::Sleep>,
}

impl Future for NextControl<'_> {
    type Output = Control;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Control> {
        {
            let mut st = self.hub.state();
            if let Some(c) = st.control.pop_front() {
                return Poll::Ready(c);
            }
            st.dispatcher = Some(cx.waker().clone());
        }
        let ka = self
            .keepalive
            .get_or_insert_with(|| sluice_runtime::sleep(KEEPALIVE_NS));
        if Pin::new(ka).poll(cx).is_ready() {
            self.keepalive = None;
            cx.waker().wake_by_ref();
        }
        Poll::Pending
    }
}

/// The core a new worker of class `class` runs on, with `cores` cores: with two or
/// more, the critical callers' workers have core 0 to themselves (with the dispatcher,
/// which does little) and every other worker is dealt round robin over cores 1..N
/// (`*next` counts them). A critical read then never waits for its core behind a round
/// of bulk writers' tasks (their 128 KiB copies, their completions and dispatches), nor
/// for that core's thread to get a CPU while it works for them.
fn worker_core(class: IoClass, cores: u16, next: &mut u16) -> u16 {
    if cores < 2 {
        return 0;
    }
    if class == IoClass::Critical {
        return 0;
    }
    let c = 1 + *next % (cores - 1);
    *next = next.wrapping_add(1);
    c
}

/// The stack's main task (on core 0): spawns workers, adopts and closes files, until
/// stopped. `cores`: the stack's cores.
pub async fn dispatcher(hub: Arc<Hub>, cores: u16) {
    let mut next = 0u16;
    loop {
        let c = NextControl {
            hub: &hub,
            keepalive: None,
        }
        .await;
        match c {
            Control::Spawn(q) => {
                let ctx = TaskCtx::new(q.who.flow.clone())
                    .class(q.who.class)
                    .weight(q.who.weight)
                    .core(worker_core(q.who.class, cores, &mut next));
                let hub = hub.clone();
                drop(spawn_on(ctx, move || worker(hub, q)));
            }
            Control::Adopt { name, file, back } => {
                let _ = back.send(File::adopt(&name, file));
            }
            Control::Close(f) => {
                let _ = f.close().await;
            }
            Control::Stop => {
                // What is still queued is dropped: an adoption's waiter gets an error
                // (its sender is dropped), later ones are refused at once.
                let rest = {
                    let mut st = hub.state();
                    st.stopped = true;
                    std::mem::take(&mut st.control)
                };
                drop(rest);
                return;
            }
        }
    }
}

/// The next job of queue `q`.
struct NextJob<'a>(&'a Queue);

impl Future for NextJob<'_> {
    type Output = (Stamps, Job);
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<(Stamps, Job)> {
        let mut s = self.0.st.lock().unwrap_or_else(|e| e.into_inner());
        match s.jobs.pop_front() {
            Some(j) => Poll::Ready(j),
            None => {
                s.idle.push(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

async fn worker(hub: Arc<Hub>, q: Arc<Queue>) {
    loop {
        let (mut ts, job) = NextJob(&q).await;
        let bytes = match &job {
            Job::Read { size, .. } => *size as u64,
            Job::Write { data, .. } => data.len() as u64,
            _ => 0,
        };
        ts[2] = hub.trace.now();
        run(job, &hub.trace, &mut ts).await;
        ts[4] = hub.now();
        hub.trace.record(q.who.class, &ts);
        if let (Some(a), Some(b)) = (ts[1], ts[4]) {
            hub.stats.record(q.who.class, bytes, b.duration_since(a));
        }
    }
}

fn floor(x: u64) -> u64 {
    x & !(BLOCK - 1)
}
fn ceil(x: u64) -> u64 {
    (x + BLOCK - 1) & !(BLOCK - 1)
}

/// The errno of a failed I/O of the stack: the runtime's error says only that the
/// kernel refused it, so the same call is made again on the descriptor to learn the
/// errno (`ENOSPC`, `EIO` reach the caller as such). If it now succeeds, its result
/// stands.
fn errno_by_retry(
    df: &DataFile,
    write: bool,
    buf: &mut DmaBuffer,
    off: u64,
) -> Result<usize, Errno> {
    let fd = df.fd.as_raw_fd();
    // SAFETY: `buf` is ours, `len` bytes, aligned for O_DIRECT.
    let r = unsafe {
        if write {
            libc::pwrite(
                fd,
                buf.as_ptr() as *const libc::c_void,
                buf.len(),
                off as i64,
            )
        } else {
            libc::pread(
                fd,
                buf.as_mut_ptr() as *mut libc::c_void,
                buf.len(),
                off as i64,
            )
        }
    };
    if r < 0 {
        Err(sys::last())
    } else {
        Ok(r as usize)
    }
}

async fn read_blocks(
    df: &DataFile,
    off: u64,
    len: u64,
    act: Activity,
) -> Result<(DmaBuffer, usize), Errno> {
    if off + len > FILE_SPAN {
        return Err(Errno::EFBIG);
    }
    let buf = DmaBuffer::new(len as usize);
    let (r, mut buf) = df
        .file
        .read_at_with(buf, off, IoOptions::new().activity(act))
        .await;
    let n = match r {
        Ok(n) => n,
        Err(_) => errno_by_retry(df, false, &mut buf, off)?,
    };
    Ok((buf, n))
}

/// The bytes of `[off, off + size)` up to the end of the file: the blocks read and the
/// part of them to reply (no copy).
async fn read(
    df: &DataFile,
    off: u64,
    size: u32,
) -> Result<(DmaBuffer, std::ops::Range<usize>), Errno> {
    // A read-only descriptor's length may lag a writable one of the same inode
    // (opened later, for writing): read it from the backing file.
    if !df.writable {
        df.set_size(sys::stat_fd(df.fd.as_raw_fd())?.st_size as u64);
    }
    let end = (off + size as u64).min(df.size());
    if size == 0 || off >= end {
        return Ok((DmaBuffer::new(0), 0..0));
    }
    let (a0, a1) = (floor(off), ceil(end));
    let (buf, n) = read_blocks(df, a0, a1 - a0, READ).await?;
    let got = (a0 + n as u64).min(end);
    if got <= off {
        return Ok((buf, 0..0));
    }
    Ok((buf, (off - a0) as usize..(got - a0) as usize))
}

async fn write(df: &DataFile, off: u64, data: &[u8], sync: bool) -> Result<usize, Errno> {
    if !df.writable {
        return Err(Errno::EBADF);
    }
    let len = data.len() as u64;
    if len == 0 {
        return Ok(0);
    }
    let end = off + len;
    if end > FILE_SPAN {
        return Err(Errno::EFBIG);
    }
    let (a0, a1) = (floor(off), ceil(end));
    // The range to hold: a write that moves the end (its last block past the end)
    // holds from the block of the end onward; any other its blocks (an aligned write
    // too: a read-modify-write of a block it covers must not put old bytes back).
    let _guard = loop {
        let size = df.size();
        let extends = a1 > size;
        let (ls, le) = if extends {
            (a0.min(floor(size)), u64::MAX)
        } else {
            (a0, a1)
        };
        let g = df.locks.lock(ls, le).await;
        // The end may have moved while we waited: hold what the end now needs.
        let now = df.size();
        if (a1 > now) == extends && (!extends || ls <= floor(now)) {
            break g;
        }
    };
    let size = df.size();
    let mut buf = DmaBuffer::new((a1 - a0) as usize);
    // Read-modify-write of a partial first and last block (what is past the end reads
    // as zeros).
    if off > a0 && a0 < size {
        let (b, n) = read_blocks(df, a0, BLOCK, WRITE).await?;
        buf[..n].copy_from_slice(&b[..n]);
    }
    if end < a1 && (a1 - BLOCK > a0 || off == a0) && a1 - BLOCK < size {
        let (b, n) = read_blocks(df, a1 - BLOCK, BLOCK, WRITE).await?;
        let at = (a1 - BLOCK - a0) as usize;
        buf[at..at + n].copy_from_slice(&b[..n]);
    }
    buf[(off - a0) as usize..(end - a0) as usize].copy_from_slice(data);
    let (r, mut buf) = df
        .file
        .write_at_with(buf, a0, IoOptions::new().activity(WRITE))
        .await;
    if r.is_err() {
        errno_by_retry(df, true, &mut buf, a0)?;
    }
    // The write's last block past the end made the backing file longer than the data:
    // cut it back to the new end (under the lock to the end of the address space).
    let new = size.max(end);
    if new > size {
        df.set_size(new);
    }
    if a1 > new {
        // SAFETY: a plain system call on our descriptor.
        sys::check(unsafe { libc::ftruncate(df.fd.as_raw_fd(), new as i64) })?;
    }
    if sync {
        fsync(df, true).await?;
    }
    Ok(data.len())
}

/// The file's data (and, unless `datasync`, its metadata) durable: a FLUSH through the
/// stack (`fdatasync` on the backing file, as the critical caller's request), then
/// `fsync` of the backing file for its metadata.
async fn fsync(df: &DataFile, datasync: bool) -> Result<(), Errno> {
    if df.writable {
        let flush = df.file.submit(
            Op::Flush,
            DmaBuffer::new(0),
            0,
            IoOptions::new().activity(SYNC),
        );
        if flush.await.0.is_err() {
            // SAFETY: a plain system call on our descriptor (its errno).
            sys::check(unsafe { libc::fdatasync(df.fd.as_raw_fd()) })?;
        }
    }
    if !datasync {
        // SAFETY: as above.
        sys::check(unsafe { libc::fsync(df.fd.as_raw_fd()) })?;
    }
    Ok(())
}

async fn truncate(df: &DataFile, size: u64) -> Result<(), Errno> {
    let old = df.size();
    let _g = df.locks.lock(floor(old.min(size)), u64::MAX).await;
    // SAFETY: a plain system call on our descriptor.
    sys::check(unsafe { libc::ftruncate(df.fd.as_raw_fd(), size as i64) })?;
    df.set_size(size);
    Ok(())
}

async fn fallocate(df: &DataFile, off: u64, len: u64, mode: i32) -> Result<(), Errno> {
    let _g = df.locks.lock(floor(off), u64::MAX).await;
    // SAFETY: a plain system call on our descriptor.
    sys::check(unsafe { libc::fallocate(df.fd.as_raw_fd(), mode, off as i64, len as i64) })?;
    let st = sys::stat_fd(df.fd.as_raw_fd())?;
    df.set_size(st.st_size as u64);
    Ok(())
}

/// Do `job` and reply; `ts[3]` is set when its I/O is done (before the reply).
async fn run(job: Job, trace: &Trace, ts: &mut Stamps) {
    match job {
        Job::Read {
            df,
            off,
            size,
            reply,
        } => {
            let r = read(&df, off, size).await;
            ts[3] = trace.now();
            match r {
                Ok((buf, range)) => reply.data(&buf[range]),
                Err(e) => reply.error(e),
            }
        }
        Job::Write {
            df,
            off,
            data,
            sync,
            reply,
        } => {
            let r = write(&df, off, &data, sync).await;
            ts[3] = trace.now();
            match r {
                Ok(n) => reply.written(n as u32),
                Err(e) => reply.error(e),
            }
        }
        Job::Fsync {
            df,
            datasync,
            reply,
        } => match fsync(&df, datasync).await {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        },
        Job::Truncate { df, size, done } => done(truncate(&df, size).await),
        Job::Fallocate {
            df,
            off,
            len,
            mode,
            reply,
        } => match fallocate(&df, off, len, mode).await {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        },
    }
}

/// Why the attributes reply of a truncation is what it is (used by the FUSE side).
pub type AttrDone = Box<dyn FnOnce(Result<(), Errno>) + Send>;

/// A reply for [`Job::Truncate`] that answers `reply` with `attr()` after the cut.
pub fn attr_after(
    reply: ReplyAttr,
    attr: impl FnOnce() -> Result<(fuser::FileAttr, std::time::Duration), Errno> + Send + 'static,
) -> AttrDone {
    Box::new(move |r| match r.and_then(|()| attr()) {
        Ok((a, ttl)) => reply.attr(&ttl, &a),
        Err(e) => reply.error(e),
    })
}

#[cfg(test)]
#[path = "data_tests.rs"]
mod tests;
