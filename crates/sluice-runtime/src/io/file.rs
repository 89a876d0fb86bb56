//! What an application holds: [`File`] and the I/O futures ([`IoHandle`], [`IoWait`]).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use sluice_block::NewRequest;
use sluice_core::{IoClass, Op, ReqId};
use sluice_metrics::Sample;

use super::{FileMeta, IoSlot, Port, FILE_SPAN, IO_ALIGN};
use crate::buffer::DmaBuffer;
use crate::ctx::IoOptions;
use crate::deps::Dep;
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
    /// Create `name` (empty; an existing file is truncated in simulation, refused on
    /// real files). The file is open until [`File::close`].
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
                    io.reopen(id)?;
                    io.files[id as usize].len = 0;
                    id
                }
                None => {
                    let id = io.new_id(name)?;
                    if let Port::Real(p) = &mut io.port {
                        p.create(id, name)?;
                    }
                    io.files.push(FileMeta::new(name.to_string(), 0, false, 1));
                    io.names.insert(name.to_string(), id);
                    id
                }
            };
            Ok(File { id })
        })
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
    /// made a waiter of the I/O under the same lock as the submission (its first poll
    /// then needs none: the I/O cannot complete before it, since completions are
    /// handled by the task's own core between polls).
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
        // file's flush is refused all the same.
        if op == Op::Flush {
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
        let started = with(|inner, t| {
            if let Err(e) = inner.io.files[self.id as usize].check(op, opts.writeback) {
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
            let f = &mut io.files[self.id as usize];
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
            let s = io.alloc_slot();
            let r = NewRequest {
                flow,
                op,
                offset: self.id as u64 * FILE_SPAN + offset,
                len: len as u32,
                class,
                hwq: core,
                fua: opts.fua,
            };
            // The submission's CPU (system call, block layer, driver), on the
            // submitting core.
            let cost = if opts.lean {
                inner.cfg.costs.lean_submit_ns
            } else {
                inner.cfg.costs.submit_ns
            };
            inner.charge += cost;
            // Simulation: the request leaves when its core has spent the CPU before it —
            // what the core still had to do, what this poll charged so far, this
            // submission — so submission time is on the I/O's path, as on a real host.
            let leaves = match inner.io.port {
                Port::Real(_) => now,
                Port::Sim(_) => inner.core_free_at(core).max(now) + inner.charge,
            };
            let io = &mut inner.io;
            // The real port needs the buffer before the next pump dispatches it.
            let ptr = buf.as_ptr() as usize;
            let fixed = buf.fixed_index();
            let (req, pending) = if leaves > now {
                (ReqId(u64::MAX), Some(r))
            } else {
                (io.block.submit(now, r, s as u64), None)
            };
            if let Port::Real(p) = &mut io.port {
                p.set_buffer(req.0, ptr, r.offset, fixed);
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
                fua: opts.fua && op == Op::Write,
                ticket: (op == Op::Flush).then(|| io.contents.flush_start()),
                pending,
            };
            io.last_io_ns = now;
            if leaves > now {
                inner.submit_at(leaves, s, gen);
            }
            inner.tasks[t as usize].outstanding.push(s);
            if awaited {
                let gen = inner.io.slots[s as usize].gen;
                let waiting = !wait_on(inner, t, s, gen);
                debug_assert!(waiting, "an I/O cannot end in the poll that issued it");
            }
            Ok(s)
        });
        let slot = match started {
            Ok(s) => s,
            Err((e, buf)) => return IoHandle::early(Err(e), buf),
        };
        IoHandle {
            slot,
            early: None,
            collected: false,
            waiting: awaited,
        }
    }
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

/// An I/O in flight. Await it for `(result, buffer)`; dropping it unawaited lets the
/// I/O finish and discards its buffer.
#[derive(Debug)]
#[must_use = "an I/O handle does nothing unless awaited"]
pub struct IoHandle {
    slot: u32,
    early: Option<(io::Result<usize>, DmaBuffer)>,
    collected: bool,
    /// The task was made a waiter at submission: the first poll is pending at once.
    waiting: bool,
}

impl IoHandle {
    /// A handle that has its result already (the I/O was refused).
    fn early(r: io::Result<usize>, buf: DmaBuffer) -> IoHandle {
        IoHandle {
            slot: u32::MAX,
            early: Some((r, buf)),
            collected: true,
            waiting: false,
        }
    }

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

impl IoWait {
    pub(crate) fn parts(self) -> (u32, u32) {
        (self.slot, self.gen)
    }

    pub(crate) fn from_parts(slot: u32, gen: u32) -> IoWait {
        IoWait { slot, gen }
    }

    /// Whether the I/O succeeded, once it has completed and while its result has not
    /// been collected (`None` otherwise).
    pub(crate) fn outcome(self) -> Option<bool> {
        with(|inner, _| {
            let s = inner.io.slots.get(self.slot as usize)?;
            (s.live && s.gen == self.gen).then_some(s.done?.ok)
        })
    }
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
        if std::mem::take(&mut self.waiting) {
            return Poll::Pending;
        }
        let s = self.slot;
        let out = with(|inner, t| {
            let gen = inner.io.slots[s as usize].gen;
            if !wait_on(inner, t, s, gen) {
                return None;
            }
            // Done: the sample is taken now, when a waiting task runs again (on real
            // files the clock is read: the turn's time is that of the completion's
            // handling, and the wait after it is the "after device" part).
            let now = match &inner.io.port {
                Port::Real(p) => p.clock().max(inner.now),
                Port::Sim(_) => inner.now,
            };
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
            } else if io.is_real() {
                Err(io::Error::other(format!(
                    "{op} of {len} bytes failed: the kernel returned an error for it"
                )))
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
