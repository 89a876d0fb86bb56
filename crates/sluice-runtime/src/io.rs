//! Files, buffers and the I/O path: every read, write and flush a task issues becomes a
//! request of the one block layer (sluice-block) with the task's flow and (effective)
//! class, and completes on the simulated NVMe SSD.
//!
//! # Files in simulation
//! Each file gets its own region of the device's address space (`FILE_SPAN` bytes,
//! starting at `file index × FILE_SPAN`); its data is kept by the runtime in 4 KiB pages
//! (a page never written reads as zeros), written into the store when the write
//! completes and read from it when the read completes. File metadata (creation, length)
//! costs no I/O yet: the journaled store (a later layer) gives it a layout.

use std::collections::BTreeMap;
use std::future::Future;
use std::io;
use std::ops::{Deref, DerefMut};
use std::pin::Pin;
use std::task::{Context, Poll};

use sluice_block::{BlockLayer, DevicePort, Finished, NewRequest};
use sluice_core::policy::Dispatch;
use sluice_core::{Flow, FlowId, IoClass, Nanos, Op, ReqId};
use sluice_metrics::{Collector, FlowInfo, JobInfo, Sample};
use sluice_sim::SimPort;

use crate::ctx::{Activity, IoOptions, TaskCtx};
use crate::deps::Dep;
use crate::exec::{self, with};

/// Address-space span of one file (1 TiB).
pub const FILE_SPAN: u64 = 1 << 40;
/// The alignment reads and writes need (offset, length, buffer): a logical block.
pub const IO_ALIGN: usize = 512;
const PAGE: u64 = 4096;

/// A buffer for I/O, aligned to 4 KiB (what `O_DIRECT` and DMA want).
///
/// ```
/// let mut b = sluice_runtime::DmaBuffer::new(8192);
/// b[0] = 7;
/// assert_eq!(b.len(), 8192);
/// assert_eq!(b.as_ptr() as usize % 4096, 0);
/// ```
pub struct DmaBuffer {
    ptr: std::ptr::NonNull<u8>,
    len: usize,
}

impl DmaBuffer {
    /// A zeroed buffer of `len` bytes (at least 1 is allocated).
    pub fn new(len: usize) -> DmaBuffer {
        let layout = std::alloc::Layout::from_size_align(len.max(1), 4096)
            .expect("buffer size fits a layout");
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        let ptr =
            std::ptr::NonNull::new(ptr).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        DmaBuffer { ptr, len }
    }

    /// A buffer holding a copy of `data`.
    pub fn from_slice(data: &[u8]) -> DmaBuffer {
        let mut b = DmaBuffer::new(data.len());
        b.copy_from_slice(data);
        b
    }
}

impl Drop for DmaBuffer {
    fn drop(&mut self) {
        let layout =
            std::alloc::Layout::from_size_align(self.len.max(1), 4096).expect("as allocated");
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), layout) }
    }
}

impl Deref for DmaBuffer {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: `len` initialised bytes owned by the buffer.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl DerefMut for DmaBuffer {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in deref, and `&mut self` is unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl std::fmt::Debug for DmaBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DmaBuffer").field("len", &self.len).finish()
    }
}

// SAFETY: the buffer owns its allocation like a Box<[u8]>.
unsafe impl Send for DmaBuffer {}

#[derive(Debug)]
struct FileMeta {
    name: String,
    len: u64,
    /// Opened from outside the stack (real world): reads only.
    read_only: bool,
}

/// One I/O in flight or completed and not yet collected.
#[derive(Debug)]
struct IoSlot {
    live: bool,
    /// Bumped at every reuse, so a stale [`IoWait`] sees its I/O as ended.
    gen: u32,
    /// The handle was dropped unawaited: free the slot at completion.
    orphan: bool,
    req: ReqId,
    issuer: u32,
    waiters: Vec<u32>,
    /// Bytes transferred (a read is short at the end of the file).
    n: usize,
    core: u16,
    op: Op,
    file: u32,
    offset: u64,
    len: u32,
    class: IoClass,
    job: usize,
    buf: Option<DmaBuffer>,
    done: Option<Finished>,
    promoted: bool,
}

/// Where the block layer's dispatches go: the simulated SSD or the real ring (one per
/// stack, so the size difference of the variants does not matter).
#[allow(clippy::large_enum_variant)]
pub(crate) enum Port {
    Sim(SimPort),
    Real(crate::real::RealPort),
}

impl DevicePort for Port {
    fn max_inflight(&self) -> u32 {
        match self {
            Port::Sim(p) => p.max_inflight(),
            Port::Real(p) => p.max_inflight(),
        }
    }
    #[inline]
    fn try_submit(&mut self, now_ns: Nanos, tag: u32, d: &Dispatch) -> bool {
        match self {
            Port::Sim(p) => p.try_submit(now_ns, tag, d),
            Port::Real(p) => p.try_submit(now_ns, tag, d),
        }
    }
    fn set_wrr_weights(&mut self, w: [u32; 3]) {
        match self {
            Port::Sim(p) => p.set_wrr_weights(w),
            Port::Real(p) => p.set_wrr_weights(w),
        }
    }
}

/// The runtime's I/O state: the block layer, the device port, files, data, slots.
pub(crate) struct IoState {
    pub block: BlockLayer,
    pub port: Port,
    files: Vec<FileMeta>,
    names: BTreeMap<String, u32>,
    pages: BTreeMap<u64, Box<[u8]>>,
    slots: Vec<IoSlot>,
    free: Vec<u32>,
    flows: BTreeMap<String, (FlowId, usize)>,
    jobs: BTreeMap<(u32, Activity), usize>,
    pub collector: Collector,
    completions: Vec<sluice_device::DeviceCompletion>,
    pub last_io_ns: Nanos,
}

impl IoState {
    pub(crate) fn new(block: BlockLayer, port: Port, collector: Collector) -> IoState {
        IoState {
            block,
            port,
            files: Vec::new(),
            names: BTreeMap::new(),
            pages: BTreeMap::new(),
            slots: Vec::new(),
            free: Vec::new(),
            flows: BTreeMap::new(),
            jobs: BTreeMap::new(),
            collector,
            completions: Vec::with_capacity(64),
            last_io_ns: 0,
        }
    }

    /// The simulated device (none in the real world).
    pub(crate) fn device(&self) -> Option<&sluice_device::NvmeSsd> {
        match &self.port {
            Port::Sim(p) => Some(&p.device),
            Port::Real(_) => None,
        }
    }

    /// Whether this is the real world.
    pub(crate) fn is_real(&self) -> bool {
        matches!(self.port, Port::Real(_))
    }

    /// The block-layer flow of a task's context (registered on first use).
    pub(crate) fn flow_of(&mut self, ctx: &TaskCtx) -> FlowId {
        let name = ctx.flow_name().to_string();
        if let Some(&(id, _)) = self.flows.get(&name) {
            return id;
        }
        let id = FlowId(self.flows.len() as u32);
        let idx = self.collector.add_flow(FlowInfo {
            name: name.clone(),
            weight: ctx.weight,
            // A task's flow may carry critical and other I/O: it shares.
            latency_only: false,
        });
        self.block.add_flow(&Flow {
            id,
            name: name.clone(),
            weight: ctx.weight,
        });
        self.flows.insert(name, (id, idx));
        id
    }

    fn job_of(
        &mut self,
        flow: FlowId,
        flow_name: &str,
        activity: Activity,
        class: IoClass,
    ) -> usize {
        if let Some(&j) = self.jobs.get(&(flow.0, activity)) {
            return j;
        }
        let fidx = self.flows[flow_name].1;
        let j = self.collector.add_job(JobInfo {
            name: format!("{flow_name}/{}", activity.name()),
            flow: fidx,
            class,
            threads: 1,
        });
        self.jobs.insert((flow.0, activity), j);
        j
    }

    /// The simulated device's next event (none in the real world).
    pub(crate) fn next_event_ns(&self) -> Option<Nanos> {
        match &self.port {
            Port::Sim(p) => p.device.next_event_ns(),
            Port::Real(_) => None,
        }
    }

    pub(crate) fn pump(&mut self, now: Nanos) {
        self.block.pump(now, &mut self.port);
    }

    /// Device completions due at `now`, turned into finished requests (pushed to `out`,
    /// a vector the caller keeps: no allocation per batch).
    pub(crate) fn advance_device(&mut self, now: Nanos, out: &mut Vec<Finished>) {
        match &mut self.port {
            Port::Sim(p) => {
                let mut done = std::mem::take(&mut self.completions);
                p.device.advance(now, &mut done);
                for c in done.drain(..) {
                    if let Some(f) = self.block.piece_done(now, c.tag, c.ok) {
                        out.push(f);
                    }
                }
                self.completions = done;
            }
            Port::Real(p) => {
                for _ in 0..crate::real::HANDLE_BATCH {
                    let Some((tag, res)) = p.cqes.pop_front() else {
                        break;
                    };
                    let req = self.block.piece(tag).req;
                    let ok = res >= 0;
                    if ok {
                        p.bytes[req.id.0 as usize] += res as i64;
                    }
                    if let Some(f) = self.block.piece_done(now, tag, ok) {
                        out.push(f);
                    }
                }
            }
        }
    }

    /// A request finished: move its data, keep its result for the waiters. Appends the
    /// tasks to wake to `woken` (the slot keeps its list's capacity: no allocation per
    /// I/O) and returns the core to charge.
    pub(crate) fn complete(&mut self, f: Finished, woken: &mut Vec<u32>) -> u16 {
        let s = f.token as usize;
        let (op, file, offset, len) = {
            let slot = &self.slots[s];
            (slot.op, slot.file, slot.offset, slot.len)
        };
        let mut n = 0;
        if let Port::Real(p) = &self.port {
            // The kernel moved the data; the bytes are the pieces' results.
            n = p.bytes.get(f.id.0 as usize).copied().unwrap_or(0).max(0) as usize;
        } else if f.ok {
            let base = file as u64 * FILE_SPAN;
            match op {
                Op::Read => {
                    let flen = self.files[file as usize].len;
                    n = flen.saturating_sub(offset).min(len as u64) as usize;
                    let mut buf = self.slots[s].buf.take().expect("a read has its buffer");
                    read_pages(&self.pages, base + offset, &mut buf[..n]);
                    buf[n..len as usize].fill(0);
                    self.slots[s].buf = Some(buf);
                }
                Op::Write => {
                    let buf = self.slots[s].buf.take().expect("a write has its buffer");
                    write_pages(&mut self.pages, base + offset, &buf[..len as usize]);
                    self.slots[s].buf = Some(buf);
                    n = len as usize;
                }
                Op::Flush => {}
            }
        }
        let slot = &mut self.slots[s];
        slot.done = Some(f);
        slot.n = n;
        let core = slot.core;
        woken.extend(slot.waiters.drain(..));
        if slot.orphan {
            self.release(s as u32);
        }
        core
    }

    /// Free slot `s` (its result was collected, or nobody will).
    fn release(&mut self, s: u32) {
        let slot = &mut self.slots[s as usize];
        slot.live = false;
        slot.orphan = false;
        slot.buf = None;
        slot.waiters.clear();
        slot.gen = slot.gen.wrapping_add(1);
        self.free.push(s);
    }

    pub(crate) fn issuer(&self, s: u32) -> u32 {
        self.slots[s as usize].issuer
    }

    /// Promote slot `s`'s request (once). Returns whether the block layer raised it.
    pub(crate) fn promote(&mut self, now: Nanos, s: u32) -> bool {
        let slot = &mut self.slots[s as usize];
        if !slot.live || slot.done.is_some() || slot.promoted || slot.class == IoClass::Critical {
            return false;
        }
        slot.promoted = true;
        let req = slot.req;
        self.block.promote(now, req)
    }

    fn alloc_slot(&mut self) -> u32 {
        match self.free.pop() {
            Some(s) => s,
            None => {
                self.slots.push(IoSlot {
                    live: false,
                    gen: 0,
                    orphan: false,
                    req: ReqId(0),
                    issuer: 0,
                    waiters: Vec::new(),
                    n: 0,
                    core: 0,
                    op: Op::Read,
                    file: 0,
                    offset: 0,
                    len: 0,
                    class: IoClass::Normal,
                    job: 0,
                    buf: None,
                    done: None,
                    promoted: false,
                });
                (self.slots.len() - 1) as u32
            }
        }
    }
}

fn read_pages(pages: &BTreeMap<u64, Box<[u8]>>, addr: u64, out: &mut [u8]) {
    let mut done = 0usize;
    while done < out.len() {
        let a = addr + done as u64;
        let page = a / PAGE * PAGE;
        let off = (a - page) as usize;
        let n = (PAGE as usize - off).min(out.len() - done);
        match pages.get(&page) {
            Some(p) => out[done..done + n].copy_from_slice(&p[off..off + n]),
            None => out[done..done + n].fill(0),
        }
        done += n;
    }
}

fn write_pages(pages: &mut BTreeMap<u64, Box<[u8]>>, addr: u64, data: &[u8]) {
    let mut done = 0usize;
    while done < data.len() {
        let a = addr + done as u64;
        let page = a / PAGE * PAGE;
        let off = (a - page) as usize;
        let n = (PAGE as usize - off).min(data.len() - done);
        let p = pages
            .entry(page)
            .or_insert_with(|| vec![0u8; PAGE as usize].into_boxed_slice());
        p[off..off + n].copy_from_slice(&data[done..done + n]);
        done += n;
    }
}

/// A file of the stack (in simulation, a region of the simulated device).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct File {
    id: u32,
}

fn bad(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

impl File {
    /// Create `name` (empty; an existing file is truncated).
    pub async fn create(name: &str) -> io::Result<File> {
        check_name(name)?;
        with(|inner, _| {
            let io = &mut inner.io;
            let id = match io.names.get(name) {
                Some(_) if io.is_real() => {
                    return Err(io::Error::new(
                        io::ErrorKind::AlreadyExists,
                        format!("file '{name}' exists in the stack; open it instead"),
                    ))
                }
                Some(&id) => {
                    io.files[id as usize].len = 0;
                    id
                }
                None => {
                    let id = io.files.len() as u32;
                    if let Port::Real(p) = &mut io.port {
                        p.create(id, name)?;
                    }
                    io.files.push(FileMeta {
                        name: name.to_string(),
                        len: 0,
                        read_only: false,
                    });
                    io.names.insert(name.to_string(), id);
                    id
                }
            };
            Ok(File { id })
        })
    }

    /// Open an existing file `name`: one the stack created, or (real world) a file of
    /// the stack's directory, read-only — the stack never writes a file it did not
    /// create.
    pub async fn open(name: &str) -> io::Result<File> {
        check_name(name)?;
        with(|inner, _| {
            let io = &mut inner.io;
            if let Some(&id) = io.names.get(name) {
                return Ok(File { id });
            }
            let Port::Real(p) = &mut io.port else {
                return Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("no file '{name}' in the stack (create it first)"),
                ));
            };
            let id = io.files.len() as u32;
            let len = p.open_existing(id, name)?;
            io.files.push(FileMeta {
                name: name.to_string(),
                len,
                read_only: true,
            });
            io.names.insert(name.to_string(), id);
            Ok(File { id })
        })
    }

    /// Its length in bytes.
    pub fn len(&self) -> u64 {
        with(|inner, _| inner.io.files[self.id as usize].len)
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Its name.
    pub fn name(&self) -> String {
        with(|inner, _| inner.io.files[self.id as usize].name.clone())
    }

    /// Read `buf.len()` bytes at `offset` into `buf`; returns the bytes read (short at
    /// the end of the file) and the buffer.
    pub async fn read_at(&self, buf: DmaBuffer, offset: u64) -> (io::Result<usize>, DmaBuffer) {
        self.submit(Op::Read, buf, offset, IoOptions::new()).await
    }

    /// [`File::read_at`] with per-I/O options (class, activity).
    pub async fn read_at_with(
        &self,
        buf: DmaBuffer,
        offset: u64,
        opts: IoOptions,
    ) -> (io::Result<usize>, DmaBuffer) {
        self.submit(Op::Read, buf, offset, opts).await
    }

    /// Write `buf` at `offset`; returns the bytes written and the buffer.
    pub async fn write_at(&self, buf: DmaBuffer, offset: u64) -> (io::Result<usize>, DmaBuffer) {
        self.submit(Op::Write, buf, offset, IoOptions::new()).await
    }

    /// [`File::write_at`] with per-I/O options.
    pub async fn write_at_with(
        &self,
        buf: DmaBuffer,
        offset: u64,
        opts: IoOptions,
    ) -> (io::Result<usize>, DmaBuffer) {
        self.submit(Op::Write, buf, offset, opts).await
    }

    /// Make the data written so far durable: for now a device flush (the store's
    /// journal gives fsync its full meaning later).
    pub async fn fsync(&self) -> io::Result<()> {
        let (r, _) = self
            .submit(Op::Flush, DmaBuffer::new(0), 0, IoOptions::new())
            .await;
        r.map(|_| ())
    }

    /// Start an I/O and return at once; await the handle for its result. Another task
    /// may wait for it too ([`IoHandle::waiter`]): a critical waiter promotes the
    /// request (RCP's inheritance through outstanding I/O).
    pub fn submit(&self, op: Op, buf: DmaBuffer, offset: u64, opts: IoOptions) -> IoHandle {
        let len = if op == Op::Flush { 0 } else { buf.len() };
        let checked = if op == Op::Flush {
            Ok(())
        } else {
            check_io(op, offset, len)
        };
        if let Err(e) = checked {
            return IoHandle {
                slot: u32::MAX,
                early: Some((Err(e), buf)),
                collected: true,
            };
        }
        let read_only =
            op != Op::Read && with(|inner, _| inner.io.files[self.id as usize].read_only);
        if read_only {
            return IoHandle {
                slot: u32::MAX,
                early: Some((
                    Err(io::Error::new(
                        io::ErrorKind::PermissionDenied,
                        format!(
                            "{op} on '{}': the file was not created by the stack, so it is read-only",
                            self.name()
                        ),
                    )),
                    buf,
                )),
                collected: true,
            };
        }
        let slot = with(|inner, t| {
            let now = inner.now;
            let task = &inner.tasks[t as usize];
            let flow = task.flow;
            let flow_name = task.ctx.flow_name().to_string();
            let boosted =
                task.effective_class() == IoClass::Critical && task.ctx.class != IoClass::Critical;
            let mut class = opts.class.unwrap_or_else(|| task.effective_class());
            if boosted {
                class = IoClass::Critical;
            }
            let activity = opts.activity.unwrap_or(task.ctx.activity);
            let core = task.core;
            let io = &mut inner.io;
            if op == Op::Write {
                let f = &mut io.files[self.id as usize];
                f.len = f.len.max(offset + len as u64);
            }
            let job = io.job_of(flow, &flow_name, activity, class);
            let s = io.alloc_slot();
            let r = NewRequest {
                flow,
                op,
                offset: self.id as u64 * FILE_SPAN + offset,
                len: len as u32,
                class,
                hwq: core,
            };
            // The real port needs the buffer before the next pump dispatches it.
            let ptr = buf.as_ptr() as usize;
            let req = io.block.submit(now, r, s as u64);
            if let Port::Real(p) = &mut io.port {
                p.set_buffer(req.0, ptr, r.offset);
            }
            let gen = io.slots[s as usize].gen;
            // Keep the slot's waiter list (its capacity): no allocation per I/O.
            let mut waiters = std::mem::take(&mut io.slots[s as usize].waiters);
            waiters.clear();
            io.slots[s as usize] = IoSlot {
                live: true,
                gen,
                orphan: false,
                req,
                issuer: t,
                waiters,
                n: 0,
                core,
                op,
                file: self.id,
                offset,
                len: len as u32,
                class,
                job,
                buf: Some(buf),
                done: None,
                promoted: false,
            };
            io.last_io_ns = now;
            inner.tasks[t as usize].outstanding.push(s);
            inner.charge += inner.cfg.costs.submit_ns;
            s
        });
        IoHandle {
            slot,
            early: None,
            collected: false,
        }
    }
}

fn check_name(name: &str) -> io::Result<()> {
    if name.is_empty() || name.contains('/') || name.contains('\0') {
        return Err(bad(format!(
            "file name '{name}': give a plain name (no '/', not empty) inside the stack"
        )));
    }
    Ok(())
}

fn check_io(op: Op, offset: u64, len: usize) -> io::Result<()> {
    if len == 0 || !len.is_multiple_of(IO_ALIGN) || !offset.is_multiple_of(IO_ALIGN as u64) {
        return Err(bad(format!(
            "{op} of {len} bytes at offset {offset}: offset and length must be non-zero \
             multiples of {IO_ALIGN} bytes (direct I/O)"
        )));
    }
    if len > u32::MAX as usize || offset + len as u64 > FILE_SPAN {
        return Err(bad(format!(
            "{op} of {len} bytes at offset {offset}: beyond the largest file ({FILE_SPAN} bytes)"
        )));
    }
    Ok(())
}

/// An I/O in flight. Await it for `(result, buffer)`; dropping it unawaited lets the
/// I/O finish and discards its buffer.
#[derive(Debug)]
#[must_use = "an I/O handle does nothing unless awaited"]
pub struct IoHandle {
    slot: u32,
    early: Option<(io::Result<usize>, DmaBuffer)>,
    collected: bool,
}

impl IoHandle {
    /// A waiter another task can await for the end of this I/O (without its buffer).
    pub fn waiter(&self) -> IoWait {
        let gen = if self.slot == u32::MAX {
            0
        } else {
            with(|inner, _| inner.io.slots[self.slot as usize].gen)
        };
        IoWait {
            slot: self.slot,
            gen,
        }
    }
}

/// Waits for the end of another task's I/O ([`IoHandle::waiter`]); a critical task
/// waiting promotes the request (RCP's inheritance through outstanding I/O).
#[derive(Clone, Copy, Debug)]
pub struct IoWait {
    slot: u32,
    gen: u32,
}

/// Register task `t` as a waiter of slot `s` and record the dependency; `true` when
/// the I/O has ended already.
fn wait_on(inner: &mut exec::Inner, t: u32, s: u32, gen: u32) -> bool {
    let slot = &mut inner.io.slots[s as usize];
    if !slot.live || slot.gen != gen || slot.done.is_some() {
        inner.unblock(t);
        return true;
    }
    if !slot.waiters.contains(&t) {
        slot.waiters.push(t);
    }
    inner.block_on(t, Dep::Io(s));
    false
}

impl Future for IoWait {
    type Output = ();
    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<()> {
        if self.slot == u32::MAX {
            return Poll::Ready(());
        }
        with(|inner, t| {
            if wait_on(inner, t, self.slot, self.gen) {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
    }
}

impl Future for IoHandle {
    type Output = (io::Result<usize>, DmaBuffer);
    fn poll(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Self::Output> {
        if let Some(r) = self.early.take() {
            return Poll::Ready(r);
        }
        let s = self.slot;
        let out = with(|inner, t| {
            let gen = inner.io.slots[s as usize].gen;
            if !wait_on(inner, t, s, gen) {
                return None;
            }
            // Done: the sample is taken now, when a waiting task runs again.
            let now = inner.now;
            let io = &mut inner.io;
            let slot = &mut io.slots[s as usize];
            let f = slot.done.expect("ended");
            let (op, len, job, n) = (slot.op, slot.len, slot.job, slot.n);
            let buf = slot.buf.take().expect("buffer kept until collected");
            io.release(s);
            io.collector.record(&Sample {
                job,
                op,
                class: f.class,
                bytes: len,
                submit_ns: f.submit_ns,
                admit_ns: f.admit_ns,
                dispatch_ns: f.dispatch_ns,
                device_done_ns: f.device_done_ns,
                reaped_ns: now,
                ok: f.ok,
            });
            let r = if f.ok {
                Ok(n)
            } else {
                Err(io::Error::other(format!(
                    "{op} of {len} bytes failed on the simulated device (media error or timeout)"
                )))
            };
            Some((r, buf))
        });
        match out {
            Some(r) => {
                self.collected = true;
                Poll::Ready(r)
            }
            None => Poll::Pending,
        }
    }
}

impl Drop for IoHandle {
    fn drop(&mut self) {
        if self.collected || self.slot == u32::MAX {
            return;
        }
        let s = self.slot;
        exec::try_with(|inner, _| {
            let slot = &mut inner.io.slots[s as usize];
            if !slot.live {
                return;
            }
            if slot.done.is_some() {
                inner.io.release(s);
            } else {
                slot.orphan = true;
            }
        });
    }
}
