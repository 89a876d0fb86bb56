//! What an application holds: [`File`], and the submission of its I/O ([`issue`]).

use std::io;

use sluice_block::NewRequest;
use sluice_core::{IoClass, Op, ReqId};

use super::handle::{wait_on, IoHandle};
use super::{batch, FileMeta, IoSlot, Port, FILE_SPAN, IO_ALIGN};
use crate::buffer::DmaBuffer;
use crate::ctx::IoOptions;
use crate::exec::{self, with};

/// A file of the stack (in simulation, a region of the simulated device).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct File {
    id: u32,
}

fn bad(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

impl File {
    /// Create `name` (empty; an existing file is truncated in simulation — as
    /// [`File::set_len`]`(0)`: its cached pages go and a later growth reads zeros —
    /// and refused on real files). The file is open until [`File::close`].
    pub async fn create(name: &str) -> io::Result<File> {
        check_name(name)?;
        let (file, existed) = with(|inner, _| {
            let io = &mut inner.io;
            let (id, existed) = match io.names.get(name) {
                Some(_) if io.is_real() => {
                    return Err(io::Error::new(
                        io::ErrorKind::AlreadyExists,
                        format!("file '{name}' exists in the stack; open it instead"),
                    ))
                }
                Some(&id) => {
                    io.reopen(id)?;
                    (id, true)
                }
                None => {
                    let id = io.new_id(name)?;
                    if let Port::Real(p) = &mut io.port {
                        p.create(id, name)?;
                    }
                    io.files.push(FileMeta::new(name.to_string(), 0, false, 1));
                    io.names.insert(name.to_string(), id);
                    (id, false)
                }
            };
            Ok((File { id }, existed))
        })?;
        if existed {
            file.set_len(0).await?;
        }
        Ok(file)
    }

    /// Open an existing file `name`: one the stack created, or (real world) a file of
    /// the stack's directory, read-only — the stack never writes a file it did not
    /// create, unless [`crate::StackBuilder::allow_write_existing`]. Each `create` and
    /// `open` of a file is closed by one [`File::close`] (all return the same handle).
    pub async fn open(name: &str) -> io::Result<File> {
        check_name(name)?;
        with(|inner, _| {
            let io = &mut inner.io;
            if let Some(&id) = io.names.get(name) {
                io.reopen(id)?;
                return Ok(File { id });
            }
            let id = io.new_id(name)?;
            let Port::Real(p) = &mut io.port else {
                return Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("no file '{name}' in the stack (create it first)"),
                ));
            };
            let len = p.open_existing(id, name)?;
            let read_only = !p.write_existing;
            io.files
                .push(FileMeta::new(name.to_string(), len, read_only, 1));
            io.names.insert(name.to_string(), id);
            Ok(File { id })
        })
    }

    pub(crate) fn from_id(id: u32) -> File {
        File { id }
    }

    pub(crate) fn id(&self) -> u32 {
        self.id
    }

    /// Extend the length to `end` (a buffered write).
    pub(crate) fn grow(&self, end: u64) {
        with(|inner, _| {
            let f = &mut inner.io.files[self.id as usize];
            f.len = f.len.max(end);
        })
    }

    /// An error if the file is closed or the stack did not create it (it never writes
    /// such a file).
    pub(crate) fn check_writable(&self) -> io::Result<()> {
        with(|inner, _| inner.io.files[self.id as usize].check(Op::Write, false))
    }

    /// An error if the file is closed.
    pub(crate) fn check_open(&self) -> io::Result<()> {
        with(|inner, _| inner.io.files[self.id as usize].check(Op::Read, false))
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
        self.read_at_with(buf, offset, IoOptions::new()).await
    }

    /// [`File::read_at`] with per-I/O options (class, activity). With a page cache,
    /// dirty pages of the range are written back first and their writebacks awaited (a
    /// critical reader promotes them), so the read sees buffered writes.
    pub async fn read_at_with(
        &self,
        buf: DmaBuffer,
        offset: u64,
        opts: IoOptions,
    ) -> (io::Result<usize>, DmaBuffer) {
        if let Err(e) = self.direct_coherence(offset, buf.len()).await {
            return (Err(e), buf);
        }
        self.start(Op::Read, buf, offset, opts, true).await
    }

    /// Write `buf` at `offset`; returns the bytes written and the buffer.
    pub async fn write_at(&self, buf: DmaBuffer, offset: u64) -> (io::Result<usize>, DmaBuffer) {
        self.write_at_with(buf, offset, IoOptions::new()).await
    }

    /// [`File::write_at`] with per-I/O options. With a page cache, the range's dirty
    /// pages are written back first and its clean cached pages dropped after.
    pub async fn write_at_with(
        &self,
        buf: DmaBuffer,
        offset: u64,
        opts: IoOptions,
    ) -> (io::Result<usize>, DmaBuffer) {
        let len = buf.len();
        if let Err(e) = self.direct_coherence(offset, len).await {
            return (Err(e), buf);
        }
        let r = self.start(Op::Write, buf, offset, opts, true).await;
        self.direct_written(offset, len);
        r
    }

    /// Make the data written so far durable: the file's dirty pages in the page cache
    /// (if the stack has one) are written back by the calling task, with its class, and
    /// their writebacks in flight awaited (a critical caller promotes them); then a
    /// device FLUSH covers every write completed so far (the store's journal gives
    /// fsync its metadata part later).
    pub async fn fsync(&self) -> io::Result<()> {
        if with(|inner, _| inner.io.cache.is_some()) {
            self.sync_range(sluice_cache::PageRange::file(self.id))
                .await?;
        }
        let (r, _) = self
            .start(Op::Flush, DmaBuffer::new(0), 0, IoOptions::new(), true)
            .await;
        r.map(|_| ())
    }

    /// Start an I/O and return at once; await the handle for its result. Another task
    /// may wait for it too ([`IoHandle::waiter`]): a critical waiter promotes the
    /// request (RCP's inheritance through outstanding I/O).
    pub fn submit(&self, op: Op, buf: DmaBuffer, offset: u64, opts: IoOptions) -> IoHandle {
        self.start(op, buf, offset, opts, false)
    }

    /// [`File::submit`]; `awaited`: the caller awaits the handle at once, so the task is
    /// made a waiter of the I/O with its submission (its first poll then needs nothing:
    /// the I/O cannot complete before it, since completions are handled by the task's
    /// own core between polls). In simulation the I/O is submitted at once under the
    /// lock; on real files it goes into the core's batch (`io/batch.rs`), submitted
    /// under one lock with the rest of the core's round.
    fn start(
        &self,
        op: Op,
        buf: DmaBuffer,
        offset: u64,
        opts: IoOptions,
        awaited: bool,
    ) -> IoHandle {
        let len = if op == Op::Flush { 0 } else { buf.len() };
        let checked = if op == Op::Flush {
            Ok(())
        } else {
            check_io(op, offset, len)
        };
        if let Err(e) = checked {
            return IoHandle::early(Err(e), buf);
        }
        // A simulated device without a volatile write cache makes every write durable
        // when it completes: a FLUSH has nothing to do, and is not sent — as Linux's
        // block layer ends an empty flush at submission on a queue without a write
        // cache (NVMe VWC = 0: Optane, a drive with power-loss protection). A closed
        // file's flush is refused all the same. (Real files: checked at the flush of
        // the core's batch.)
        if op == Op::Flush && !exec::current_is_real() {
            let skip = with(|inner, _| -> io::Result<bool> {
                inner.io.files[self.id as usize].check_open(opts.writeback)?;
                Ok(matches!(inner.io.port, Port::Sim(_)) && !inner.io.contents.is_volatile())
            });
            match skip {
                Err(e) => return IoHandle::early(Err(e), buf),
                Ok(true) => return IoHandle::early(Ok(0), buf),
                Ok(false) => {}
            }
        }
        let r = Issue {
            file: self.id,
            op,
            offset,
            len: len as u32,
            opts,
            awaited,
            ptr: buf.as_ptr() as usize,
            fixed: buf.fixed_index(),
        };
        if exec::current_is_real() {
            let t = exec::current_task();
            let (slot, gen) = batch::take_slot().unwrap_or_else(|| {
                // The stash ran dry in this round: reserve more (and flush).
                with(|inner, _| crate::io::batch::reserve(inner));
                batch::take_slot().expect("just reserved")
            });
            batch::push(t, slot, r);
            return IoHandle::batched(slot, gen, buf, awaited);
        }
        let started = with(|inner, t| match issue(inner, t, None, &r, Some(buf)) {
            Ok(s) => Ok((s, inner.io.slots[s as usize].gen)),
            Err((e, buf)) => Err((e, buf)),
        });
        match started {
            Ok((slot, gen)) => IoHandle::started(slot, gen, awaited),
            Err((e, buf)) => IoHandle::early(Err(e), buf.expect("given")),
        }
    }
}

/// One I/O a task asks for (what [`issue`] submits).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Issue {
    file: u32,
    pub op: Op,
    offset: u64,
    len: u32,
    opts: IoOptions,
    /// The task awaits it at once: made its waiter with the submission.
    pub awaited: bool,
    /// The buffer's address and its registered index (for the real port's SQE).
    ptr: usize,
    fixed: Option<(usize, u32)>,
}

/// An atomic write on the simulated device must fit its atomic write unit
/// (`controller.atomic_write_bytes`): a power of two within it, aligned to its
/// length — Linux's rules for `RWF_ATOMIC`, which refuses the others with `EINVAL`.
/// On real files the kernel checks (and refuses) itself.
fn check_atomic(
    port: &crate::io::Port,
    op: Op,
    offset: u64,
    len: u32,
    atomic: bool,
) -> io::Result<()> {
    let crate::io::Port::Sim(p) = port else {
        return Ok(());
    };
    if !atomic || op != Op::Write {
        return Ok(());
    }
    let (min, max) = p.device.profile().atomic_write_unit();
    if len.is_power_of_two() && (min..=max).contains(&len) && offset.is_multiple_of(len as u64) {
        return Ok(());
    }
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "an atomic write of {len} bytes at offset {offset}: it must be a power of two \
             within the device's atomic write unit ({min}..={max} bytes, profile '{}' \
             controller.atomic_write_bytes) and aligned to its length",
            p.device.profile().name
        ),
    ))
}

/// Submit `r` for task `t` into slot `slot` (a reserved one, or `None`: a new one)
/// under the lock: the file's checks, the request to the block layer with the task's
/// flow and effective class, the slot, the task as its issuer (and waiter when
/// awaited). `buf`: the buffer the slot keeps (simulation, where the device's data is
/// copied at completion; on real files the handle keeps it). A refused I/O changes
/// nothing and gives the buffer back.
#[allow(clippy::type_complexity)]
pub(crate) fn issue(
    inner: &mut exec::Inner,
    t: u32,
    slot: Option<u32>,
    r: &Issue,
    buf: Option<DmaBuffer>,
) -> Result<u32, (io::Error, Option<DmaBuffer>)> {
    let (op, offset, len, opts) = (r.op, r.offset, r.len, r.opts);
    if let Err(e) = inner.io.files[r.file as usize].check(op, opts.writeback) {
        return Err((e, buf));
    }
    if let Err(e) = check_atomic(&inner.io.port, op, offset, len, opts.atomic) {
        return Err((e, buf));
    }
    let now = inner.now;
    let task = &inner.tasks[t as usize];
    let flow = task.flow;
    let boosted =
        task.effective_class() == IoClass::Critical && task.ctx.class != IoClass::Critical;
    let mut class = opts.class.unwrap_or_else(|| task.effective_class());
    if boosted {
        class = IoClass::Critical;
    }
    let activity = opts.activity.unwrap_or(task.ctx.activity);
    let core = task.core;
    let io = &mut inner.io;
    let f = &mut io.files[r.file as usize];
    if op == Op::Write {
        f.len = f.len.max(offset + len as u64);
    }
    f.inflight += 1;
    // Looked up without the flow's name (no allocation per I/O) once it exists.
    let job = match io.jobs.get(&(flow.0, activity)) {
        Some(&j) => j,
        None => {
            let flow_name = inner.tasks[t as usize].ctx.flow_name().to_string();
            io.job_of(flow, &flow_name, activity, class)
        }
    };
    let s = slot.unwrap_or_else(|| io.alloc_slot());
    let nr = NewRequest {
        flow,
        op,
        offset: r.file as u64 * FILE_SPAN + offset,
        len,
        class,
        hwq: core,
        fua: opts.fua,
        placement: 0,
        atomic: opts.atomic && op == Op::Write,
    };
    // The submission's CPU (system call, block layer, driver), on the submitting core.
    let cost = if opts.lean {
        inner.cfg.costs.lean_submit_ns
    } else {
        inner.cfg.costs.submit_ns
    };
    inner.charge += cost;
    // Simulation: the request leaves when its core has spent the CPU before it — what
    // the core still had to do, what this poll charged so far, this submission — so
    // submission time is on the I/O's path, as on a real host.
    let leaves = match inner.io.port {
        Port::Real(_) => now,
        Port::Sim(_) => inner.core_free_at(core).max(now) + inner.charge,
    };
    let io = &mut inner.io;
    let (req, pending) = if leaves > now {
        (ReqId(u64::MAX), Some(nr))
    } else {
        (io.block.submit(now, nr, s as u64), None)
    };
    if let Port::Real(p) = &mut io.port {
        // The real port needs the buffer before the next pump dispatches it.
        p.set_buffer(req.0, r.ptr, nr.offset, r.fixed);
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
        file: r.file,
        offset,
        len,
        class,
        job,
        buf,
        done: None,
        promoted: false,
        fua: opts.fua && op == Op::Write,
        atomic: opts.atomic && op == Op::Write,
        ticket: (op == Op::Flush).then(|| io.contents.flush_start()),
        pending,
        refused: None,
    };
    io.last_io_ns = now;
    if leaves > now {
        inner.submit_at(leaves, s, gen);
    }
    inner.tasks[t as usize].outstanding.push(s);
    if r.awaited {
        let waiting = !wait_on(inner, t, s, gen);
        debug_assert!(waiting, "an I/O cannot end in the poll that issued it");
    }
    Ok(s)
}

impl FileMeta {
    /// Whether the file's handles may do I/O now: it is open (a writeback of the page
    /// cache goes to a file closed with dirty pages until it is released).
    fn check_open(&self, writeback: bool) -> io::Result<()> {
        if self.open == 0 && (!writeback || self.released) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "'{}': the file is closed (File::close by everyone who opened it): open \
                     it again",
                    self.name
                ),
            ));
        }
        Ok(())
    }

    /// Whether `op` may go to the file now: it is open (a writeback of the page cache
    /// goes to a file closed with dirty pages), and a write or flush only to a file the
    /// stack created.
    fn check(&self, op: Op, writeback: bool) -> io::Result<()> {
        self.check_open(writeback)
            .map_err(|e| io::Error::new(e.kind(), format!("{op} on {e}")))?;
        if op != Op::Read && self.read_only {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "{op} on '{}': the file was not created by the stack, so it is read-only",
                    self.name
                ),
            ));
        }
        Ok(())
    }
}

pub(super) fn check_name(name: &str) -> io::Result<()> {
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
