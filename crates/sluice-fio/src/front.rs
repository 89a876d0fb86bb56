//! # The buffered front: fio's buffered jobs through the page cache
//!
//! fio jobs with `direct=0` (or `buffered=1`) read and write through the host's page
//! cache. In sluice both request loops that run fio jobs — the simulator's
//! (`sluice sim`) and the real engine's workers (`sluice run`) — hand such a job's
//! I/Os to this one state machine, which sits between the job threads and the one
//! [`BlockLayer`]: written once, driven by both. It reads no clock (the caller passes
//! `now`), sleeps on nothing and spawns nothing.
//!
//! ## What a job's I/O does here
//! * **read**: pages in the cache are copied out at once (a hit); the missing pages
//!   are read from the device in runs of contiguous pages (one device read per run,
//!   at most [`FrontConfig::run_pages`]) under the reader's class and flow, with
//!   AIOS's **lazy indexing**: a run's pages are only *reserved* when its read is
//!   issued and are indexed when it completes, so a second reader that misses on the
//!   same page meanwhile issues a **duplicate read**; the later of the two is
//!   abandoned when it completes (the reader is given the indexed page, see
//!   [`PageCache::insert_read`]). A read whose page was written and left the cache
//!   while it was in flight is stale: that page is read again. The I/O completes when
//!   every page has been copied out. There is no readahead.
//! * **write**: completes as soon as its bytes are in the cache (dirty pages). It
//!   first waits for every page of its range under writeback (stable pages); a
//!   **critical** writer that waits on a writeback **promotes** that write in the
//!   block layer (RCP §4.4: inheritance through outstanding I/O); a partial page not
//!   cached is read first (read-modify-write); a writer about to dirty new pages while
//!   *paced* by Linux's dirty-ratelimit control against its class's limit (RCP's
//!   class-aware dirty limits, [`CacheConfig::dirty_limit`]; [`sluice_cache::throttle`],
//!   the rule the runtime's page cache follows too): each job thread is a task with its
//!   own `nr_dirtied`; past freerun it pauses `pages dirtied / task_ratelimit` every
//!   `nr_dirtied_pause` pages, and at the limit it pauses `max_pause` and tries again,
//!   before its write dirties a page. The caller fires the pauses' ends
//!   ([`Front::next_timer_ns`], [`Front::fire_timer`]).
//! * **fsync** (fio's `fsync=`, `fdatasync=`, `end_fsync`, `fsync_on_close`): starts
//!   writeback of every dirty page of the file under the caller's class and flow,
//!   waits for every writeback of the file in flight (promoting them for a critical
//!   caller), then sends a device FLUSH; it completes with the flush. A raw fio file
//!   has no metadata, so `fdatasync` is the same operation here.
//!
//! ## Writeback
//! Background writeback is the flusher's job, not the writers': it runs while dirty
//! pages are above [`CacheConfig::background_pages`] or a writer waits for room or
//! pauses at its limit, in (file, page) order, in runs of contiguous dirty pages, as
//! **non-critical** I/O charged to the file's flow (cgroup writeback charges the
//! owner), with at most [`FrontConfig::writeback_pages`] pages and
//! [`FrontConfig::writeback_depth`] requests in flight, each run at most
//! [`FrontConfig::writeback_run_pages`] pages (under `sluice run` the disk's largest
//! request, `max_sectors_kb`, and its writeback throttling's depths, as Linux's
//! flusher; the simulator keeps 128 KiB and no depth bound).
//!
//! ## The protocol
//! The client [`submit`](Front::submit)s each I/O of a buffered job with an id of its
//! own; the front submits device requests to the block layer with the token of
//! [`Owner::Front`]; the client routes every [`Finished`] whose token is one to
//! [`Front::finished`]. Both calls push the job I/Os that completed to `done`. Data is
//! optional: the simulator's jobs carry none ([`sluice_cache::NoData`] pages, `()` buffers),
//! the engine's carry their slot buffers.

use std::collections::{HashMap, VecDeque};

use sluice_cache::throttle::{Dirtier, Throttle};

use sluice_block::{BlockLayer, Finished, Meter};
use sluice_cache::{CacheConfig, Failing, PageCache};
use sluice_cache::{PageData, PageKey, PageRange, PAGE};
use sluice_core::{FlowId, IoClass, Nanos, ReqId};

pub use sluice_cache::FrontStats;

use crate::Owner;

mod paths;
#[cfg(test)]
mod tests;

/// The front's settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FrontConfig {
    /// The page cache.
    pub cache: CacheConfig,
    /// Most pages under background writeback at once (256 = 1 MiB).
    pub writeback_pages: usize,
    /// Most pages in one device read of missing pages (32 = 128 KiB).
    pub run_pages: u32,
    /// Most pages in one writeback write: Linux's writeback merges a file's contiguous
    /// dirty pages up to the device queue's `max_sectors_kb` (32 = 128 KiB, the
    /// simulator's; `sluice run` takes the disk's, [`FrontConfig::with_queue`]).
    pub writeback_run_pages: u32,
    /// Most background writeback requests in flight, and the most while a writer
    /// waits at its dirty limit or for room: Linux's writeback throttling (`blk-wbt`,
    /// `calc_wb_limits`: `wb_background` and `wb_normal`). `usize::MAX`: no bound
    /// but [`FrontConfig::writeback_pages`] (the simulator's).
    pub writeback_depth: WritebackDepth,
}

/// Background writeback requests in flight at most ([`FrontConfig::writeback_depth`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WritebackDepth {
    /// While no writer waits (Linux's `wb_background`).
    pub background: usize,
    /// While a writer pauses at its dirty limit or waits for room (`wb_normal`: the
    /// flusher works for a throttled writer).
    pub throttled: usize,
}

impl WritebackDepth {
    /// No bound.
    pub const UNBOUNDED: WritebackDepth = WritebackDepth {
        background: usize::MAX,
        throttled: usize::MAX,
    };

    /// Linux's writeback throttling on a queue of `queue_depth` requests
    /// (`nr_requests`) with throttling on (`wbt_lat_usec` > 0): the queue's depth is
    /// `min(RWB_DEF_DEPTH = 16, queue_depth)` (scale step 0, `rq_depth_calc_max_depth`);
    /// `wb_normal = (depth + 1) / 2`, `wb_background = (depth + 3) / 4`, or `depth`
    /// and 1 on a queue of at most 2 (`calc_wb_limits`). Throttling off: the queue's
    /// depth for both.
    pub fn of_queue(queue_depth: u32, wbt_on: bool) -> WritebackDepth {
        let q = queue_depth.max(1) as usize;
        if !wbt_on {
            return WritebackDepth {
                background: q,
                throttled: q,
            };
        }
        let depth = q.min(16);
        if depth <= 2 {
            WritebackDepth {
                background: 1,
                throttled: depth,
            }
        } else {
            WritebackDepth {
                background: depth.div_ceil(4),
                throttled: depth.div_ceil(2),
            }
        }
    }
}

impl Default for FrontConfig {
    fn default() -> Self {
        FrontConfig {
            cache: CacheConfig::default(),
            writeback_pages: 256,
            run_pages: 32,
            writeback_run_pages: 32,
            writeback_depth: WritebackDepth::UNBOUNDED,
        }
    }
}

impl FrontConfig {
    /// The settings on a real disk whose queue takes requests of up to
    /// `max_transfer` bytes (`max_sectors_kb`) and whose writeback is throttled to
    /// `depth`: writeback writes of up to `max_transfer` (at least a page), `depth`
    /// of them in flight (the pages in flight bounded by that, not by
    /// [`FrontConfig::writeback_pages`]'s default).
    pub fn with_queue(mut self, max_transfer: u64, depth: WritebackDepth) -> FrontConfig {
        let pages = (max_transfer / PAGE).clamp(1, u32::MAX as u64) as u32;
        self.writeback_run_pages = pages;
        self.writeback_depth = depth;
        let most = depth.throttled.saturating_mul(pages as usize);
        self.writeback_pages = self.writeback_pages.max(most);
        self
    }
}

/// A file the front serves: where its pages are on the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrontFile {
    /// Byte offset of the file's first page in the block layer's address space.
    pub base: u64,
    /// The flow its background writeback is charged to.
    pub flow: FlowId,
    /// The hardware queue (simulated core, engine worker) its device I/O goes out on:
    /// the one whose ring has the file open.
    pub hwq: u16,
    /// Every queue whose ring has the file open, as bits (queues 0–63; the real
    /// engine's workers): where [`Front::set_issuer`] may send its I/O. 0: only `hwq`.
    pub open_on: u64,
}

/// What a job's I/O asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrontOp {
    /// Read bytes.
    Read,
    /// Write bytes.
    Write,
    /// Make the file's written bytes durable (fsync / fdatasync).
    Fsync,
    /// Deallocate the bytes (a trim: a punched hole on a file), after dropping their
    /// cached pages.
    Trim,
}

/// A job's I/O buffer: its bytes, where data is carried.
pub trait IoBuf {
    /// The I/O's bytes (`len` of them), or `None` when data is not modelled.
    fn bytes(&mut self) -> Option<&mut [u8]>;
}

impl IoBuf for () {
    fn bytes(&mut self) -> Option<&mut [u8]> {
        None
    }
}

/// Where the front's page and device-I/O buffers come from.
pub trait Alloc {
    /// A buffer (zeroed, `len` bytes; DMA-aligned where the device needs it).
    type Buf: PageData;
    /// A new buffer of `len` bytes.
    fn alloc(&mut self, len: usize) -> Self::Buf;
}

/// No data: buffers are [`sluice_cache::NoData`].
#[derive(Clone, Copy, Debug, Default)]
pub struct NoAlloc;

impl Alloc for NoAlloc {
    type Buf = sluice_cache::NoData;
    fn alloc(&mut self, _len: usize) -> sluice_cache::NoData {
        sluice_cache::NoData
    }
}

/// One I/O of a buffered job.
#[derive(Debug)]
pub struct FrontIo<D> {
    /// The client's id (returned in [`FrontDone`]).
    pub id: u64,
    /// The file (an index into the files given to [`Front::new`]).
    pub file: u32,
    /// Read, write or fsync.
    pub op: FrontOp,
    /// Byte offset in the file (ignored by fsync).
    pub offset: u64,
    /// Length in bytes (ignored by fsync).
    pub len: u32,
    /// The issuing job's class: its dirty limit, and its device I/O's class.
    pub class: IoClass,
    /// The issuing job's flow (its device reads and fsyncs are charged to it).
    pub flow: FlowId,
    /// The issuing thread (the task the dirty throttle paces: one per job thread).
    pub task: u64,
    /// The data.
    pub data: D,
}

/// A job's I/O that completed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrontDone {
    /// The client's id.
    pub id: u64,
    /// False when a device request it needed failed.
    pub ok: bool,
    /// Admission, dispatch and device completion of the last device request it waited
    /// on, or all `now` when it needed none (a hit, a write into the cache).
    pub admit_ns: Nanos,
    /// See `admit_ns`.
    pub dispatch_ns: Nanos,
    /// See `admit_ns`.
    pub device_done_ns: Nanos,
}

#[derive(Debug)]
struct Pending<D> {
    io: FrontIo<D>,
    /// Reads issued for it and not yet taken.
    reads_left: u32,
    /// A read: pages below this are copied or being read; a write: a
    /// read-modify-write read is in flight.
    next_page: u64,
    /// A read: pages to read again (their read was stale).
    redo: Vec<u64>,
    /// An fsync: its writeback was started.
    started: bool,
    /// A write: it paused at its dirty limit at least once (counted once).
    paused: bool,
    /// A write pausing now: at its limit (not only paced).
    at_limit: bool,
    ok: bool,
    times: Option<(Nanos, Nanos, Nanos)>,
}

#[derive(Debug)]
enum Kind {
    /// A read of pages for job I/O `waiter` (a read, or a write's read-modify-write).
    Read { waiter: u32 },
    /// Pages written back: by the flusher (`background`) or by an fsync.
    Writeback { background: bool },
    /// An fsync's flush, or a trim: job I/O `waiter` ends with it.
    Command { waiter: u32 },
}

#[derive(Debug)]
struct Dev<B> {
    kind: Kind,
    file: u32,
    first: u64,
    n: u32,
    buf: Option<B>,
    id: ReqId,
}

/// Where a blocked job I/O waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Blocked {
    /// Page reads of its own.
    Reads,
    /// A writeback (token).
    Writeback(u64),
    /// A pause of the dirty throttle (`at_limit`: at its class's limit).
    Pause { ns: Nanos, at_limit: bool },
    /// Room in the cache.
    Room,
}

/// The buffered front (see the module docs). `D`: the job I/Os' buffers; `A`: where
/// page buffers come from.
#[derive(Debug)]
pub struct Front<D, A: Alloc> {
    cfg: FrontConfig,
    pc: PageCache<A::Buf>,
    alloc: A,
    files: Vec<FrontFile>,
    pending: Vec<Option<Pending<D>>>,
    free: Vec<u32>,
    devs: HashMap<u64, Dev<A::Buf>>,
    next_seq: u64,
    /// Job I/Os waiting for a writeback, by its token.
    wb_waiters: HashMap<u64, Vec<u32>>,
    /// Writers pausing at their dirty limit: (end of the pause, job I/O), in order.
    paused: std::collections::BTreeSet<(Nanos, u32)>,
    /// The dirty throttle (Linux's dirty-ratelimit control).
    throttle: Throttle,
    /// Each job thread's throttle state, by [`FrontIo::task`].
    dirtiers: HashMap<u64, Dirtier>,
    /// Writers in `paused` at their limit (the flusher keeps going for them).
    limit_paused: usize,
    /// Job I/Os waiting for room in the cache.
    no_room: VecDeque<u32>,
    /// Pages under writeback started by the flusher.
    wb_inflight: usize,
    /// Writeback requests started by the flusher, in flight.
    wb_requests: usize,
    stats: FrontStats,
    /// The queue every device request goes out on, if set ([`Front::set_issuer`]).
    issuer: Option<u16>,
    /// Writeback that keeps failing ([`sluice_cache::failing`]: each writeback
    /// request counts).
    failing: Failing,
}

impl<D: IoBuf, A: Alloc> Front<D, A> {
    /// A front over an empty cache serving `files`.
    ///
    /// # Panics
    /// If `cfg.cache` does not validate (check it with [`CacheConfig::validate`]).
    pub fn new(cfg: FrontConfig, files: Vec<FrontFile>, alloc: A) -> Self {
        Front {
            cfg,
            pc: PageCache::new(cfg.cache),
            alloc,
            files,
            pending: Vec::new(),
            free: Vec::new(),
            devs: HashMap::new(),
            next_seq: 0,
            wb_waiters: HashMap::new(),
            paused: std::collections::BTreeSet::new(),
            throttle: Throttle::default(),
            dirtiers: HashMap::new(),
            limit_paused: 0,
            no_room: VecDeque::new(),
            wb_inflight: 0,
            wb_requests: 0,
            stats: FrontStats::default(),
            issuer: None,
            failing: Failing::default(),
        }
    }

    /// The counters.
    pub fn stats(&self) -> FrontStats {
        FrontStats {
            cache: self.pc.stats(),
            ..self.stats
        }
    }

    /// After a real run: write every page still dirty to its file through `write`
    /// (the file, the page run's offset in the block layer's address space —
    /// `base + index × PAGE` —, its bytes), in runs of up to `writeback_run_pages` contiguous
    /// pages, outside the block layer and unmeasured: fio's buffered jobs leave their
    /// data in the kernel's cache, which writes it back after they have gone, and a
    /// file sluice wrote must hold what its jobs wrote. A run `write` fails stays
    /// dirty and the writing stops; returns that error. Call it once every job I/O and
    /// every device request of the front has ended.
    pub fn write_out<E>(
        &mut self,
        mut write: impl FnMut(FrontFile, u64, &[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        const TOKEN: u64 = u64::MAX;
        while let Some((first, f0)) = self.pc.start_writeback(None) {
            let mut run = vec![(first, f0)];
            while (run.len() as u32) < self.cfg.writeback_run_pages {
                let index = first.index + run.len() as u64;
                let next = PageRange {
                    file: first.file,
                    first: index,
                    last: index,
                };
                match self.pc.start_writeback(Some(next)) {
                    Some(p) => run.push(p),
                    None => break,
                }
            }
            let mut bytes = self.alloc.alloc(run.len() * PAGE as usize);
            for (k, &(key, f)) in run.iter().enumerate() {
                self.pc.set_token(f, TOKEN);
                if let Some(b) = bytes.bytes_mut() {
                    let at = k * PAGE as usize;
                    self.pc.read(f, 0, &mut b[at..at + PAGE as usize]);
                }
                debug_assert_eq!(key.file, first.file);
            }
            let file = self.files[first.file as usize];
            let res = match bytes.bytes_mut() {
                Some(b) => write(file, file.base + first.index * PAGE, b),
                None => Ok(()),
            };
            for &(key, _) in &run {
                self.pc.end_writeback(key, TOKEN, res.is_ok());
            }
            res?;
            self.stats.written_after_run += run.len() as u64;
        }
        Ok(())
    }

    /// The real engine: its device requests from now on go out on queue `hwq` (the
    /// worker now holding the device lock, which is running and will submit them; a
    /// file's own queue may belong to a worker whose jobs have all ended) where that
    /// worker has the file open ([`FrontFile::open_on`]), else on the file's own queue.
    /// `None` (the simulator): each file's own queue.
    pub fn set_issuer(&mut self, hwq: Option<u16>) {
        self.issuer = hwq;
    }

    /// The queue a device request for `file` goes out on.
    pub(crate) fn queue_of(&self, file: u32) -> u16 {
        let f = &self.files[file as usize];
        match self.issuer {
            Some(q) if q < 64 && f.open_on & (1 << q) != 0 => q,
            _ => f.hwq,
        }
    }

    /// The page cache (read-only: pages, dirty pages, settings).
    pub fn cache(&self) -> &PageCache<A::Buf> {
        &self.pc
    }

    /// Job I/Os not yet completed.
    pub fn pending(&self) -> usize {
        self.pending.len() - self.free.len()
    }

    /// The buffer of the front's device request `seq` ([`Owner::Front`]) from its
    /// byte `dev_offset` (in the block layer's address space: a piece's offset) on,
    /// for the engine's SQE; `None` for a flush, or without data.
    pub fn device_buf(&mut self, seq: u64, dev_offset: u64) -> Option<&mut [u8]> {
        let d = self.devs.get_mut(&seq)?;
        let start = self.files[d.file as usize].base + d.first * PAGE;
        let at = dev_offset.checked_sub(start)? as usize;
        d.buf.as_mut()?.bytes_mut()?.get_mut(at..)
    }

    /// The file of the front's device request `seq` ([`Owner::Front`]).
    pub fn device_file(&self, seq: u64) -> Option<FrontFile> {
        let d = self.devs.get(&seq)?;
        Some(self.files[d.file as usize])
    }

    /// The files served.
    pub fn files(&self) -> &[FrontFile] {
        &self.files
    }

    /// A job's I/O arrives.
    pub fn submit<M: Meter>(
        &mut self,
        now: Nanos,
        io: FrontIo<D>,
        block: &mut BlockLayer<M>,
        done: &mut Vec<FrontDone>,
    ) {
        let p = Pending {
            next_page: io.offset / PAGE,
            io,
            reads_left: 0,
            redo: Vec::new(),
            started: false,
            paused: false,
            at_limit: false,
            ok: true,
            times: None,
        };
        let i = match self.free.pop() {
            Some(i) => {
                self.pending[i as usize] = Some(p);
                i
            }
            None => {
                self.pending.push(Some(p));
                (self.pending.len() - 1) as u32
            }
        };
        let mut cx = Cx { now, block, done };
        self.attempt(&mut cx, i);
        self.kick(&mut cx);
    }

    /// One of the front's device requests finished (its token is an [`Owner::Front`]).
    ///
    /// # Panics
    /// If `f` is not one of the front's requests in flight.
    pub fn finished<M: Meter>(
        &mut self,
        now: Nanos,
        f: &Finished,
        block: &mut BlockLayer<M>,
        done: &mut Vec<FrontDone>,
    ) {
        let Owner::Front(seq) = Owner::of(f.token) else {
            panic!("a job's request handed to the buffered front");
        };
        let d = self.devs.remove(&seq).expect("a front request in flight");
        let times = (f.admit_ns, f.dispatch_ns, f.device_done_ns);
        let mut cx = Cx { now, block, done };
        match d.kind {
            Kind::Read { waiter } => self.read_done(&mut cx, d, waiter, f.ok, times),
            Kind::Writeback { background } => {
                for i in 0..d.n as u64 {
                    let key = PageKey {
                        file: d.file,
                        index: d.first + i,
                    };
                    self.pc.end_writeback(key, seq, f.ok);
                }
                self.failing.ended(f.ok, now);
                if background {
                    self.wb_inflight -= d.n as usize;
                    self.wb_requests -= 1;
                }
                self.throttle.written(d.n as u64, now);
                for w in self.wb_waiters.remove(&seq).unwrap_or_default() {
                    let p = self.p(w);
                    p.times = Some(times);
                    self.attempt(&mut cx, w);
                }
                if self.failing.hopeless() {
                    self.fail_waiting_for_room(&mut cx);
                }
                self.wake_blocked(&mut cx);
            }
            Kind::Command { waiter } => {
                let p = self.p(waiter);
                p.ok &= f.ok;
                p.times = Some(times);
                self.complete(&mut cx, waiter);
            }
        }
        self.kick(&mut cx);
    }

    fn p(&mut self, i: u32) -> &mut Pending<D> {
        self.pending[i as usize]
            .as_mut()
            .expect("a pending job I/O")
    }

    /// Try to make progress on job I/O `i`; it completes or is left waiting.
    fn attempt<M: Meter>(&mut self, cx: &mut Cx<'_, M>, i: u32) {
        let blocked = match self.p(i).io.op {
            FrontOp::Read => self.try_read(cx, i),
            FrontOp::Write => self.try_write(cx, i),
            FrontOp::Fsync => self.try_fsync(cx, i),
            FrontOp::Trim => self.try_trim(cx, i),
        };
        match blocked {
            None => self.complete(cx, i),
            Some(Blocked::Pause { at_limit: true, .. } | Blocked::Room)
                if self.failing.hopeless() =>
            {
                self.p(i).ok = false;
                self.complete(cx, i);
            }
            Some(Blocked::Reads) => {}
            Some(Blocked::Writeback(tok)) => {
                self.wb_waiters.entry(tok).or_default().push(i);
                if self.p(i).io.class == IoClass::Critical {
                    self.promote(cx, tok);
                }
            }
            Some(Blocked::Pause { ns, at_limit }) => {
                let p = self.p(i);
                p.at_limit = at_limit;
                if !std::mem::replace(&mut p.paused, true) {
                    self.pc.note_throttled();
                }
                self.limit_paused += usize::from(at_limit);
                self.paused.insert((cx.now + ns, i));
            }
            Some(Blocked::Room) => self.no_room.push_back(i),
        }
    }

    /// RCP: a critical task waits on the writeback `tok`: raise it to critical.
    fn promote<M: Meter>(&mut self, cx: &mut Cx<'_, M>, tok: u64) {
        if let Some(d) = self.devs.get(&tok) {
            if cx.block.promote(cx.now, d.id) {
                self.stats.promotions += 1;
            }
        }
    }

    /// When the earliest pause at a dirty limit ends, or the flusher's pause after a
    /// failed writeback while job I/Os are pending: call [`Front::fire_timer`] then.
    pub fn next_timer_ns(&self) -> Option<Nanos> {
        let paused = self.paused.first().map(|p| p.0);
        let retry = self.failing.retry_at().filter(|_| self.pending() > 0);
        match (paused, retry) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Writeback keeps failing: every job I/O waiting for room (paused at its limit, or
    /// for a clean page) completes with an error.
    fn fail_waiting_for_room<M: Meter>(&mut self, cx: &mut Cx<'_, M>) {
        self.limit_paused = 0;
        let waiting: Vec<u32> = std::mem::take(&mut self.paused)
            .into_iter()
            .map(|(_, i)| i)
            .chain(std::mem::take(&mut self.no_room))
            .collect();
        for i in waiting {
            self.p(i).ok = false;
            self.complete(cx, i);
        }
    }

    /// The pauses that ended by `now`: those writers try again (in the order their
    /// pauses end).
    pub fn fire_timer<M: Meter>(
        &mut self,
        now: Nanos,
        block: &mut BlockLayer<M>,
        done: &mut Vec<FrontDone>,
    ) {
        let mut cx = Cx { now, block, done };
        while let Some(&(at, i)) = self.paused.first() {
            if at > now {
                break;
            }
            self.paused.pop_first();
            let p = self.p(i);
            if std::mem::take(&mut p.at_limit) {
                self.limit_paused -= 1;
            }
            self.attempt(&mut cx, i);
        }
        self.kick(&mut cx);
    }

    /// The flusher: background writeback while dirty pages are above the background
    /// threshold or a writer waits for room or pauses at its limit. Its depth is the
    /// throttled one while any writer pauses (Linux's `wb_recent_wait`: a dirty
    /// throttle sleep); a writer only paced (below its limit) does not keep it going
    /// below the background threshold.
    fn kick<M: Meter>(&mut self, cx: &mut Cx<'_, M>) {
        if !self.failing.may_issue(cx.now) {
            return;
        }
        loop {
            let waiting = !self.paused.is_empty() || !self.no_room.is_empty();
            let depth = if waiting {
                self.cfg.writeback_depth.throttled
            } else {
                self.cfg.writeback_depth.background
            };
            if self.wb_inflight >= self.cfg.writeback_pages || self.wb_requests >= depth {
                break;
            }
            let need = self.pc.dirty_pages() > self.pc.config().background_pages()
                || self.limit_paused > 0
                || !self.no_room.is_empty();
            if !need || !self.write_back(cx, None, IoClass::Normal, FlowId(0)) {
                break;
            }
        }
    }

    /// Writebacks ended or pages arrived: the I/Os waiting for room try again (the
    /// writers pausing at their limit wait for their pauses to end).
    fn wake_blocked<M: Meter>(&mut self, cx: &mut Cx<'_, M>) {
        // In place: each I/O tried goes back to the end of the queue if it still has
        // no room. Once the cache is full of dirty, written-back and awaited pages, the
        // rest wait for the next writeback or read to end (retrying each of them now
        // would only fail — with a million I/Os waiting, a million times per
        // completion); the queue is turned back to their order, those tried first.
        let n = self.no_room.len();
        for tried in 1..=n {
            let i = self.no_room.pop_front().expect("n waiting");
            self.attempt(cx, i);
            if tried < n && !self.pc.has_room() {
                let rest = n - tried;
                self.no_room.rotate_left(rest);
                break;
            }
        }
    }

    fn complete<M: Meter>(&mut self, cx: &mut Cx<'_, M>, i: u32) {
        let p = self.pending[i as usize].take().expect("a pending job I/O");
        self.free.push(i);
        let (a, d, dd) = p.times.unwrap_or((cx.now, cx.now, cx.now));
        cx.done.push(FrontDone {
            id: p.io.id,
            ok: p.ok,
            admit_ns: a,
            dispatch_ns: d,
            device_done_ns: dd,
        });
    }
}

/// The bytes `lo..hi` of `offset..offset + len` that page `index` holds.
pub(crate) fn page_part(offset: u64, len: u32, index: u64) -> (u64, u64) {
    let lo = offset.max(index * PAGE);
    let hi = (offset + len as u64).min((index + 1) * PAGE);
    (lo, hi)
}

/// The caller's context of one call.
pub(crate) struct Cx<'a, M: Meter> {
    pub(crate) now: Nanos,
    pub(crate) block: &'a mut BlockLayer<M>,
    pub(crate) done: &'a mut Vec<FrontDone>,
}

/// Whether a job (named `name`, whose largest I/O is `max_io` bytes and whose file
/// ends at byte `end`) can run buffered with `cfg`: its file must end on a page (pages
/// are read and written whole), and its largest I/O must take at most a quarter of the
/// cache (a write needs all its pages at once).
pub fn check_job(cfg: &FrontConfig, name: &str, max_io: u32, end: u64) -> Result<(), String> {
    if !end.is_multiple_of(PAGE) {
        return Err(format!(
            "job '{name}': a buffered job (direct=0) works in 4 KiB pages, but its file ends at byte {end}; give offset and size as multiples of 4k"
        ));
    }
    let pages = (max_io as u64).div_ceil(PAGE) + 1;
    if pages * 4 > cfg.cache.pages as u64 {
        return Err(format!(
            "job '{name}': its {max_io}-byte I/Os need {pages} pages, more than a quarter of the {}-page cache; give a larger --page-cache (at least {} KiB) or a smaller bs",
            cfg.cache.pages,
            pages * 4 * PAGE / 1024
        ));
    }
    Ok(())
}
