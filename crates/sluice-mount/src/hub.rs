//! Between the FUSE threads and the stack: the FUSE threads hand each request, with its
//! reply, to the queue of its caller's [`Who`]; the queue's worker tasks (up to
//! [`WORKERS`] per caller kind, spawned on the runtime's cores by the dispatcher task)
//! take it, do the I/O ([`crate::data::run`]) and reply. A FUSE thread wakes a worker
//! with its `Waker` (the runtime's doorbell); what only a task may do — spawn, give the
//! stack an opened file, close it — goes to the dispatcher through the control queue.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use fuser::{Errno, ReplyData, ReplyEmpty, ReplyLseek, ReplyWrite};
use sluice_runtime::{spawn_on, File, TaskCtx};

use crate::class::Who;
use crate::data::{run, AttrDone, DataFile};
use crate::placement::{worker_core, Placement};
use crate::stats::Stats;
use crate::trace::Trace;

/// Most worker tasks per caller kind (its requests in flight at once).
pub const WORKERS: usize = 64;
/// The dispatcher's idle wake-up (ns): a pending timer tells the runtime that the stack
/// is waiting for the outside, not deadlocked.
const KEEPALIVE_NS: u64 = 100_000_000;

/// One data request and its reply.
pub enum Job {
    Read {
        df: Arc<DataFile>,
        off: u64,
        size: u32,
        /// Through the page cache (the caller has no `O_DIRECT`).
        cached: bool,
        reply: Answer<ReplyData>,
    },
    Write {
        df: Arc<DataFile>,
        off: u64,
        /// The bytes, already in the buffer of the blocks they fall in.
        data: crate::data::WriteData,
        sync: bool,
        cached: bool,
        reply: Answer<ReplyWrite>,
    },
    Fsync {
        df: Arc<DataFile>,
        datasync: bool,
        reply: Answer<ReplyEmpty>,
    },
    /// `ftruncate`, then `done` with the result (the caller's attributes reply).
    Truncate {
        df: Arc<DataFile>,
        size: u64,
        done: AttrDone,
    },
    /// `SEEK_DATA`/`SEEK_HOLE` with a page cache: the file's dirty pages go to the
    /// backing file first, whose extents answer.
    Lseek {
        df: Arc<DataFile>,
        offset: i64,
        whence: i32,
        reply: ReplyLseek,
    },
    Fallocate {
        df: Arc<DataFile>,
        off: u64,
        len: u64,
        mode: i32,
        reply: Answer<ReplyEmpty>,
    },
}

/// Where a data request's answer goes: fuser's reply (the request came through a
/// read of `/dev/fuse`) or the ring entry that brought it (`crate::uring`).
pub enum Answer<R> {
    Fuse(R),
    Ring(crate::uring::Slot),
}

impl Answer<ReplyData> {
    pub fn data(self, b: &[u8]) {
        match self {
            Answer::Fuse(r) => r.data(b),
            Answer::Ring(s) => s.reply(0, b),
        }
    }
    pub fn error(self, e: Errno) {
        match self {
            Answer::Fuse(r) => r.error(e),
            Answer::Ring(s) => s.error(e),
        }
    }
}

impl Answer<ReplyWrite> {
    pub fn written(self, n: u32) {
        match self {
            Answer::Fuse(r) => r.written(n),
            // `fuse_write_out`: size, padding.
            Answer::Ring(s) => s.reply(0, &u64::from(n).to_le_bytes()),
        }
    }
    pub fn error(self, e: Errno) {
        match self {
            Answer::Fuse(r) => r.error(e),
            Answer::Ring(s) => s.error(e),
        }
    }
}

impl Answer<ReplyEmpty> {
    pub fn ok(self) {
        match self {
            Answer::Fuse(r) => r.ok(),
            Answer::Ring(s) => s.reply(0, &[]),
        }
    }
    pub fn error(self, e: Errno) {
        match self {
            Answer::Fuse(r) => r.error(e),
            Answer::Ring(s) => s.error(e),
        }
    }
}

/// A FUSE ring queue's task (`crate::uring`): made on its core, stopped at unmount.
pub struct RingTask {
    pub core: u16,
    pub name: String,
    pub make: Box<dyn FnOnce() -> Pin<Box<dyn Future<Output = ()>>> + Send>,
    /// Tells the task to end.
    pub stop: StopRing,
}

/// Tells a ring queue's task to end.
pub type StopRing = Box<dyn Fn() + Send>;

/// What only a task may do.
enum Control {
    Spawn(Arc<Queue>),
    Ring(RingTask),
    Adopt {
        name: String,
        file: std::fs::File,
        back: mpsc::Sender<io::Result<File>>,
    },
    Close(Arc<DataFile>),
    Stop,
}

#[derive(Default)]
struct QState {
    jobs: VecDeque<(Stamps, Job)>,
    idle: Vec<Waker>,
    workers: usize,
}

/// The requests of one caller kind (on one core, for a FUSE ring queue's requests).
struct Queue {
    who: Arc<Who>,
    /// Its workers' core; `None`: [`worker_core`]'s choice.
    core: Option<u16>,
    st: Mutex<QState>,
}

#[derive(Default)]
struct HubState {
    /// By caller kind, then core (`None`: [`worker_core`]'s).
    queues: HashMap<Who, Vec<Arc<Queue>>>,
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
    /// The data files open in the stack (their lengths are fixed on the backing files
    /// before the stack stops, when it has a page cache: the file system that kept
    /// them is gone by then).
    files: Mutex<Vec<Arc<DataFile>>>,
    /// Closes under way (their write-back running).
    closing: Arc<AtomicUsize>,
    /// Where the daemon's work runs on the cores ([`crate::placement`]).
    pub placement: Placement,
    /// The CPUs the stack's cores are pinned to (core `c` on `cpus[c % len]`; empty: not
    /// pinned): [`crate::placement::core_cpus`].
    pub cpus: Vec<usize>,
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
        let placement = Placement::from_env();
        Hub {
            trace: Trace::from_env(),
            stats: Stats::every(stats),
            placement,
            cpus: crate::placement::core_cpus(placement, &crate::placement::allowed_cpus()),
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

    /// Queue `job` for `who`'s workers (on core `at`, when given).
    pub fn submit(&self, who: &Arc<Who>, at: Option<u16>, job: Job) {
        let t = self.trace.now();
        self.submit_at(who, at, job, t);
    }

    /// Queue `job` for `who`'s workers (on core `at`: a FUSE ring queue's requests are
    /// served on the core that owns the queue); its FUSE handler started at `t0`.
    pub fn submit_at(&self, who: &Arc<Who>, at: Option<u16>, job: Job, t0: Option<Instant>) {
        let stamps = [t0, self.now(), None, None, None];
        let q = {
            let mut st = self.state();
            let found = st
                .queues
                .get(&**who)
                .and_then(|v| v.iter().find(|q| q.core == at).cloned());
            match found {
                Some(q) => q,
                None => {
                    let q = Arc::new(Queue {
                        who: who.clone(),
                        core: at,
                        st: Mutex::new(QState::default()),
                    });
                    st.queues
                        .entry((**who).clone())
                        .or_default()
                        .push(q.clone());
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

    /// Note a data file (see [`Hub::files`]).
    pub fn register(&self, df: &Arc<DataFile>) {
        let mut v = self.files.lock().unwrap_or_else(|e| e.into_inner());
        v.push(df.clone());
    }

    /// The last open of `df` ended.
    pub fn close(&self, df: Arc<DataFile>) {
        self.files
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|d| !Arc::ptr_eq(d, &df));
        self.control(Control::Close(df));
    }

    /// Run a FUSE ring queue's task on its core (until it ends, or [`Hub::stop`]).
    pub fn ring(&self, t: RingTask) {
        self.control(Control::Ring(t));
    }

    /// End the dispatcher (the stack's run returns and reports), after the ring
    /// queues' tasks.
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

/// Close `df` in a task of its own (the write-back of its dirty pages may take a
/// while: the dispatcher goes on adopting and spawning), as the daemon's writeback.
fn close_task(hub: &Hub, df: Arc<DataFile>) {
    let ctx = TaskCtx::new("writeback").activity(sluice_runtime::Activity::WRITEBACK);
    let n = hub.closing.clone();
    n.fetch_add(1, Ordering::SeqCst);
    let done = df.closed.clone();
    drop(spawn_on(ctx, move || async move {
        crate::cached::close(df).await;
        done.set();
        n.fetch_sub(1, Ordering::SeqCst);
    }));
}

/// Before the stack stops: the closes under way finished, every dirty page of the
/// cache written back, each file still open cut to its length on its backing file.
async fn drain(hub: &Hub) {
    // Checked every millisecond: only at unmount.
    while hub.closing.load(Ordering::SeqCst) > 0 {
        sluice_runtime::sleep(1_000_000).await;
    }
    if let Err(e) = sluice_runtime::write_back_all().await {
        eprintln!("sluice mount: writing back the page cache at unmount: {e}");
    }
    let open: Vec<Arc<DataFile>> =
        std::mem::take(&mut *hub.files.lock().unwrap_or_else(|e| e.into_inner()));
    for df in open.iter().filter(|d| d.cache && d.writable) {
        if let Err(e) = crate::cached::fix_len(df).await {
            eprintln!(
                "sluice mount: a file's length at unmount: {}",
                std::io::Error::from_raw_os_error(i32::from(e))
            );
        }
    }
}

/// The stack's main task (on core 0): spawns workers, adopts and closes files, until
/// stopped; then, with a page cache, writes it back ([`drain`]). `cores`: the stack's
/// cores.
pub async fn dispatcher(hub: Arc<Hub>, cores: u16) {
    let mut next = 0u16;
    // The ring queues' tasks and how to stop them.
    let mut rings: Vec<(sluice_runtime::JoinHandle<()>, StopRing)> = Vec::new();

    loop {
        let c = NextControl {
            hub: &hub,
            keepalive: None,
        }
        .await;
        match c {
            Control::Spawn(q) => {
                let core = q
                    .core
                    .unwrap_or_else(|| worker_core(q.who.class, cores, &mut next));
                let ctx = TaskCtx::new(q.who.flow.clone())
                    .class(q.who.class)
                    .weight(q.who.weight)
                    .core(core);
                let hub = hub.clone();
                drop(spawn_on(ctx, move || worker(hub, q)));
            }
            Control::Ring(t) => {
                let ctx = TaskCtx::new(t.name).core(t.core);
                rings.push((spawn_on(ctx, t.make), t.stop));
            }
            Control::Adopt { name, file, back } => {
                let _ = back.send(File::adopt(&name, file));
            }
            Control::Close(df) if df.cache => close_task(&hub, df),
            Control::Close(df) => {
                let _ = df.file.close().await;
                df.closed.set();
            }
            Control::Stop => {
                // What is still queued is dropped, but closes: an adoption's waiter
                // gets an error (its sender is dropped), later ones are refused at once.
                let rest = {
                    let mut st = hub.state();
                    st.stopped = true;
                    std::mem::take(&mut st.control)
                };
                for c in rest {
                    if let Control::Close(df) = c {
                        close_task(&hub, df);
                    }
                }
                // The ring queues' tasks end (unmounted: the kernel has ended their
                // entries, or their rings go with them).
                for (_, stop) in &rings {
                    stop();
                }
                for (h, _) in rings.drain(..) {
                    h.await;
                }
                drain(&hub).await;
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
            hub.stats.record(&q.who, bytes, b.duration_since(a));
        }
    }
}
