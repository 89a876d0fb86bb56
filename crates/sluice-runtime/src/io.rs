//! Files, buffers and the I/O path: every read, write and flush a task issues becomes a
//! request of the one block layer (sluice-block) with the task's flow and (effective)
//! class, and completes on the simulated NVMe SSD.
//!
//! # Files in simulation
//! Each file gets its own region of the device's address space (`FILE_SPAN` bytes,
//! starting at `file index × FILE_SPAN`); its data is kept by the device's
//! [`Contents`] (4 KiB pages; a page never written reads as zeros), written when the
//! write completes and read when the read completes. `Contents` also keeps the
//! durability contract of the device's write cache (FLUSH, FUA), so a simulated crash
//! ([`crate::StackBuilder::crash_at`]) keeps exactly what the contract promises. File
//! metadata (creation, length) costs no I/O and survives a crash: the journaled store
//! (a later layer) gives it a layout.

use std::collections::BTreeMap;

use sluice_block::{BlockLayer, DevicePort, Finished, NewRequest};
use sluice_core::policy::Dispatch;
use sluice_core::{Flow, FlowId, IoClass, Nanos, Op, ReqId};
use sluice_device::{Contents, FlushTicket, SimPort};
use sluice_metrics::{Collector, FlowInfo, JobInfo};

use crate::buffer::DmaBuffer;
use crate::ctx::{Activity, TaskCtx};

mod adopt;
pub(crate) mod batch;
mod file;
mod handle;
mod names;
pub use file::File;
pub use handle::{IoHandle, IoWait};

/// Address-space span of one file (1 TiB).
pub const FILE_SPAN: u64 = 1 << 40;
/// The alignment reads and writes need (offset, length, buffer): a logical block.
pub const IO_ALIGN: usize = 512;

#[derive(Debug)]
struct FileMeta {
    /// Empty once removed (or replaced by a rename).
    name: String,
    len: u64,
    /// Opened from outside the stack (real world): reads only.
    read_only: bool,
    /// Opens (`File::create`, `File::open`) not closed yet; the file's handles do I/O
    /// only while it is above 0.
    open: u32,
    /// I/Os of the file submitted and not completed.
    inflight: u32,
    /// Closed by every opener, and what it held given back (on real files its
    /// descriptor and its ring slot): `File::open` opens it again.
    released: bool,
}

impl FileMeta {
    fn new(name: String, len: u64, read_only: bool, open: u32) -> FileMeta {
        FileMeta {
            name,
            len,
            read_only,
            open,
            inflight: 0,
            released: false,
        }
    }
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
    /// Bytes transferred (a read is short at the end of the file); for a failed I/O on
    /// real files, the errno the kernel returned (0 when unknown).
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
    /// A write with force unit access.
    fua: bool,
    /// An atomic write (`IoOptions::atomic`): never torn by a simulated crash.
    atomic: bool,
    /// A flush: the writes it covers (those completed before it was submitted).
    ticket: Option<FlushTicket>,
    /// Simulation: the request, until the submitting core has spent the CPU that sends
    /// it ([`IoState::submit_pending`]); `req` is meaningless meanwhile.
    pending: Option<NewRequest>,
    /// Real files: refused when the core's batch was flushed (the handle's error).
    refused: Option<std::io::Error>,
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
    /// The simulated device's contents (unused in the real world).
    pub contents: Contents,
    /// The page cache, if the stack has one.
    pub cache: Option<std::sync::Arc<crate::cache::Cache>>,
    slots: Vec<IoSlot>,
    free: Vec<u32>,
    /// Files closed by every opener whose release waits (I/O in flight, dirty pages).
    closing: Vec<u32>,
    flows: BTreeMap<String, (FlowId, usize)>,
    jobs: BTreeMap<(u32, Activity), usize>,
    pub collector: Collector,
    completions: Vec<sluice_device::DeviceCompletion>,
    pub last_io_ns: Nanos,
}

impl IoState {
    pub(crate) fn new(block: BlockLayer, port: Port, collector: Collector) -> IoState {
        let contents = match &port {
            Port::Sim(p) => Contents::for_profile(p.device.profile()),
            Port::Real(_) => Contents::new(None),
        };
        IoState {
            block,
            port,
            files: Vec::new(),
            names: BTreeMap::new(),
            contents,
            cache: None,
            slots: Vec::new(),
            free: Vec::new(),
            closing: Vec::new(),
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
            options: Vec::new(),
            group: 0,
            group_reporting: false,
            continue_on: Default::default(),
            latency: sluice_metrics::LatencyTarget::default(),
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
            // The real world's completions are handled by the cores' loops
            // (exec::cores), from each core's own ring.
            Port::Real(_) => {}
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
            let raw = p.bytes.get(f.id.0 as usize).copied().unwrap_or(0);
            n = if f.ok { raw.max(0) } else { (-raw).max(0) } as usize;
        } else if f.ok {
            let base = file as u64 * FILE_SPAN;
            match op {
                Op::Read => {
                    let flen = self.files[file as usize].len;
                    n = flen.saturating_sub(offset).min(len as u64) as usize;
                    let mut buf = self.slots[s].buf.take().expect("a read has its buffer");
                    self.contents.read(base + offset, &mut buf[..n]);
                    buf[n..len as usize].fill(0);
                    self.slots[s].buf = Some(buf);
                }
                Op::Write => {
                    let buf = self.slots[s].buf.take().expect("a write has its buffer");
                    let (fua, atomic) = (self.slots[s].fua, self.slots[s].atomic);
                    self.contents
                        .write_done_as(base + offset, &buf[..len as usize], fua, atomic);
                    self.slots[s].buf = Some(buf);
                    n = len as usize;
                }
                Op::Flush => {
                    if let Some(t) = self.slots[s].ticket {
                        self.contents.flush_done(t);
                    }
                }
                // The runtime's File issues no trims.
                Op::Trim => {}
            }
        }
        let slot = &mut self.slots[s];
        slot.done = Some(f);
        slot.n = n;
        let core = slot.core;
        woken.append(&mut slot.waiters);
        if slot.orphan {
            self.release(s as u32);
        } else if self.is_real() {
            // This core's thread handles the completions of the I/O it issued: its
            // handle collects the result here without the lock (`io/batch.rs`).
            let slot = &self.slots[s];
            batch::set_ready(
                s as u32,
                batch::Ready {
                    gen: slot.gen,
                    done: Some(f),
                    n,
                    op: slot.op,
                    len: slot.len,
                    job: slot.job,
                },
            );
        }
        self.io_ended(file);
        core
    }

    /// Real files: the I/O of reserved slot `s`, issued by task `issuer`, was refused
    /// when the core's batch was flushed: the slot holds the error as an ended I/O (for
    /// its handle, and for `IoWait`s: a failure). Returns the slot's generation.
    pub(crate) fn refuse(&mut self, s: u32, issuer: u32, e: std::io::Error) -> u32 {
        let slot = &mut self.slots[s as usize];
        slot.live = true;
        slot.orphan = false;
        slot.issuer = issuer;
        slot.waiters.clear();
        slot.buf = None;
        slot.done = Some(Finished {
            id: ReqId(u64::MAX),
            token: s as u64,
            op: slot.op,
            len: 0,
            offset: 0,
            class: IoClass::Normal,
            submit_ns: 0,
            admit_ns: 0,
            dispatch_ns: 0,
            device_done_ns: 0,
            ok: false,
        });
        slot.refused = Some(e);
        slot.gen
    }

    /// Free slot `s` (its result was collected, or nobody will).
    fn release(&mut self, s: u32) {
        let slot = &mut self.slots[s as usize];
        slot.live = false;
        slot.orphan = false;
        slot.buf = None;
        slot.refused = None;
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
        if let Some(r) = &mut slot.pending {
            // Not sent yet: it goes out critical.
            r.class = IoClass::Critical;
            return true;
        }
        let req = slot.req;
        self.block.promote(now, req)
    }

    /// Simulation: the request of slot `s` (generation `gen`) reaches the block layer
    /// now, its submission CPU spent.
    pub(crate) fn submit_pending(&mut self, now: Nanos, s: u32, gen: u32) {
        let slot = &mut self.slots[s as usize];
        if slot.gen != gen {
            return;
        }
        if let Some(r) = slot.pending.take() {
            slot.req = self.block.submit(now, r, s as u64);
        }
    }

    pub(crate) fn alloc_slot(&mut self) -> u32 {
        match self.free.pop() {
            Some(s) => s,
            None => {
                self.slots.push(IoSlot {
                    live: false,
                    gen: 0,
                    orphan: false,
                    req: ReqId(0),
                    issuer: 0,
                    // Room for the usual waiter (the issuer) and a few more, given
                    // now: a reserved slot (real files) may see its first I/O much later.
                    waiters: Vec::with_capacity(4),
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
                    pending: None,
                    fua: false,
                    atomic: false,
                    ticket: None,
                    refused: None,
                });
                (self.slots.len() - 1) as u32
            }
        }
    }
}

/// The stack's files and device contents, as a crash left them (simulated world).
#[derive(Clone, Debug)]
pub struct DiskImage {
    pub(crate) contents: Contents,
    pub(crate) files: Vec<(String, u64)>,
}

impl DiskImage {
    /// The files (name, length) the image holds.
    pub fn files(&self) -> impl Iterator<Item = (&str, u64)> {
        self.files
            .iter()
            .filter(|(n, _)| !n.is_empty())
            .map(|(n, l)| (n.as_str(), *l))
    }

    /// Read `out.len()` bytes of file `name` at `offset` as the image holds them
    /// (`None`: no such file).
    pub fn read(&self, name: &str, offset: u64, out: &mut [u8]) -> Option<()> {
        let id = self.files.iter().position(|(n, _)| n == name)?;
        self.contents.read(id as u64 * FILE_SPAN + offset, out);
        Some(())
    }
}

impl IoState {
    /// Start from `image`: its files (created by the stack, so writable) and contents.
    pub(crate) fn install(&mut self, image: DiskImage) {
        self.contents = image.contents;
        for (name, len) in image.files {
            // A removed file keeps its place (its data's region), without a name.
            if !name.is_empty() {
                self.names.insert(name.clone(), self.files.len() as u32);
            }
            // Not open: File::open opens it.
            self.files.push(FileMeta::new(name, len, false, 0));
        }
    }

    /// The power goes now: writes not durable survive, are lost or are torn as `spec`
    /// draws (in-flight writes included); returns the image left and what happened.
    pub(crate) fn crash(
        &mut self,
        spec: sluice_device::CrashSpec,
    ) -> (DiskImage, sluice_device::CrashReport) {
        let in_flight = self.slots.iter().filter_map(|s| {
            let flying = s.live && s.done.is_none() && s.op == Op::Write;
            let buf = s.buf.as_ref().filter(|_| flying)?;
            Some((
                s.file as u64 * FILE_SPAN + s.offset,
                &buf[..s.len as usize],
                s.atomic,
            ))
        });
        let report = self.contents.crash(spec, in_flight);
        let image = DiskImage {
            contents: self.contents.clone(),
            files: self.files.iter().map(|f| (f.name.clone(), f.len)).collect(),
        };
        (image, report)
    }
}
