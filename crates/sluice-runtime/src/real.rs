//! The real backend's device side, thread per core: the part the cores share (the
//! io_uring layer's [`RingPort`] between the one block layer and the cores' rings, the files,
//! each request's buffer) and the part each core's thread owns ([`CoreRing`]: its
//! io_uring, its doorbell read, its copy of the file table).
//!
//! ```text
//!  core 0 thread                core 1 thread             (one per core)
//!    tasks ─ submit ─┐            tasks ─ submit ─┐
//!                    ▼                            ▼
//!  ┌─ one BlockLayer + RingPort (sluice-uring), under the runtime's one lock ─────┐
//!  │ policy dispatch → outbox of the core the request came from (its hwq)         │
//!  └──────────┬───────────────────────────────────────────┬───────────────────────┘
//!   SQEs (registered file, user_data = piece tag)  doorbell (eventfd) if another
//!   CoreRing 0: submit + wait ── CQE              core filled this core's outbox
//! ```
//!
//! A piece goes to the ring of the core its request was issued from, so a task's I/O
//! completes on its own core (where its waker runs), whichever core's turn dispatched it.

use std::os::fd::RawFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use sluice_block::{BlockLayer, DevicePort, Finished};
use sluice_core::policy::Dispatch;
use sluice_core::{Nanos, Op};
use sluice_uring::{doorbell_read, Doorbell, RingPort, BELL, D2FQ_WEIGHTS};
use sluice_uring::{Ring, RingSqe};

use crate::io::FILE_SPAN;
use crate::pool::BufferPool;

mod cmd;
mod files;
mod readable;
pub use cmd::{commands, CmdSink, Commands};
pub(crate) use files::{FileTable, SlotUpdate};
pub use readable::{readable, Readable};

/// The `user_data` of a [`readable`] wait's poll: this bit and its index in the core's
/// table (pieces use their 32-bit tag, the doorbell [`BELL`]).
const POLL_BIT: u64 = 1 << 62;

/// The `user_data` of a task's command ([`commands`]): this bit, its sink's index
/// (bits 32..61) and its key (bits 0..32).
const CMD_BIT: u64 = 1 << 61;

/// Most files a stack can have open at once (each ring's sparse table of registered
/// files; a closed file's slot is reused, `real/files.rs`).
pub const MAX_FILES: u32 = 1024;

/// Most commands in all the cores' rings together (the stand-in for the controller's
/// command slots, as the engine's `--ring-cap`).
pub const RING_CAP: u32 = 255;

/// Completions handled between two submissions (as the engine's `--submit-batch`: holding
/// every new I/O until a whole burst of completions was handled cost 16–20 % of the IOPS
/// at QD32 on this machine's disk).
pub const HANDLE_BATCH: usize = 4;

const NOT_FIXED: u32 = u32::MAX;

/// What the cores share: the port, the files, the buffers of the requests in flight.
pub(crate) struct RealPort {
    pub rings: RingPort,
    pub dir: PathBuf,
    /// Open files with `O_DIRECT` (the default); off: through the host's page cache.
    direct: bool,
    /// Open existing files (not created by the stack) for writing too.
    pub write_existing: bool,
    /// The open files and the rings' table of registered files.
    pub files: FileTable,
    /// By block-layer request id: the buffer's address, the request's offset and the
    /// buffer's index in the registered pool (`NOT_FIXED`: from the heap).
    bufs: Vec<(usize, u64, u32)>,
    /// By block-layer request id: bytes transferred so far (its pieces' results).
    pub bytes: Vec<i64>,
    origin: Instant,
    /// The identity of the stack's registered pool (0: none): a buffer of another
    /// stack's pool goes as a plain read or write.
    pool: usize,
}

impl std::fmt::Debug for RealPort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RealPort").field("dir", &self.dir).finish()
    }
}

/// One SQE to write, copied out of the shared state under the lock.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Outgoing {
    tag: u32,
    op: Op,
    file: u32,
    file_off: u64,
    buf: usize,
    len: u32,
    /// A write with FUA (durable when it completes).
    fua: bool,
    /// An atomic write (`RWF_ATOMIC`; `IoOptions::atomic`).
    atomic: bool,
    fixed: u32,
}

impl RealPort {
    pub(crate) fn new(
        dir: &Path,
        cores: u16,
        direct: bool,
        cap: u32,
        pool: Option<&Arc<BufferPool>>,
    ) -> Result<RealPort, String> {
        let meta =
            std::fs::metadata(dir).map_err(|e| format!("directory {}: {e}", dir.display()))?;
        if !meta.is_dir() {
            return Err(format!("{} is not a directory", dir.display()));
        }
        Ok(RealPort {
            rings: RingPort::new(cores as usize, cap, RING_CAP, D2FQ_WEIGHTS),
            dir: dir.to_path_buf(),
            direct,
            write_existing: false,
            files: FileTable::new(cores),
            bufs: Vec::new(),
            bytes: Vec::new(),
            origin: Instant::now(),
            pool: pool.map_or(0, |p| Arc::as_ptr(p) as usize),
        })
    }

    /// When the stack started (the clock's origin).
    pub(crate) fn origin(&self) -> Instant {
        self.origin
    }

    /// Nanoseconds since the stack started.
    pub(crate) fn clock(&self) -> Nanos {
        self.origin.elapsed().as_nanos() as Nanos
    }

    /// The path of `name` in the stack's directory.
    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// The buffer of block-layer request `req` (`fixed`: its registered index).
    pub(crate) fn set_buffer(
        &mut self,
        req: u64,
        ptr: usize,
        offset: u64,
        fixed: Option<(usize, u32)>,
    ) {
        let fixed = fixed
            .filter(|f| f.0 == self.pool && self.pool != 0)
            .map(|f| f.1);
        let i = req as usize;
        if self.bufs.len() <= i {
            self.bufs.resize(i + 1, (0, 0, NOT_FIXED));
            self.bytes.resize(i + 1, 0);
        }
        self.bufs[i] = (ptr, offset, fixed.unwrap_or(NOT_FIXED));
        self.bytes[i] = 0;
    }

    /// Core `me`'s turn at the shared state: its outbox becomes SQEs to write (in
    /// `out`), the changes of the table of registered files it has not applied yet are
    /// appended to `fds` (to apply before the SQEs), and the cores whose outbox another
    /// dispatch filled are pushed to `wake`.
    pub(crate) fn take(
        &mut self,
        block: &BlockLayer,
        me: usize,
        out: &mut Vec<Outgoing>,
        fds: &mut Vec<SlotUpdate>,
        wake: &mut Vec<usize>,
    ) {
        self.files.updates(me, fds);
        let (bufs, files) = (&self.bufs, &self.files);
        self.rings.take_outbox(
            me,
            |tag| {
                let req = block.piece(tag).req;
                let (ptr, req_off, fixed) = bufs[req.id.0 as usize];
                out.push(Outgoing {
                    tag,
                    op: req.op,
                    file: files.slot((req.offset / FILE_SPAN) as u32),
                    file_off: req.offset % FILE_SPAN,
                    buf: ptr + (req.offset - req_off) as usize,
                    len: req.len,
                    fua: req.fua,
                    atomic: req.is_atomic_write(),
                    fixed,
                });
            },
            wake,
        );
    }

    /// Piece `tag` came back from a ring with `res`: count its bytes, tell the block
    /// layer, let the port feed the rings. The finished parent goes to `out`.
    pub(crate) fn complete(
        &mut self,
        block: &mut BlockLayer,
        now: Nanos,
        tag: u32,
        res: i32,
        out: &mut Vec<Finished>,
    ) {
        let req = block.piece(tag).req;
        let ok = res >= 0;
        // The request's bytes, summed over its pieces; the first failed piece's
        // negative errno instead, kept (the handle's error names it).
        let b = &mut self.bytes[req.id.0 as usize];
        if *b >= 0 {
            *b = if ok { *b + res as i64 } else { res as i64 };
        }
        let f = block.piece_done(now, tag, ok);
        self.rings.command_done();
        if let Some(f) = f {
            out.push(f);
        }
    }
}

impl DevicePort for RealPort {
    fn max_inflight(&self) -> u32 {
        self.rings.max_inflight()
    }

    fn try_submit(&mut self, now_ns: Nanos, tag: u32, d: &Dispatch) -> bool {
        self.rings.try_submit(now_ns, tag, d)
    }

    fn set_wrr_weights(&mut self, weights: [u32; 3]) {
        // Only the port's arbiter (beyond the cap): a file has no NVMe arbitration.
        self.rings.set_wrr_weights(weights);
    }
}

/// What a core's thread owns: its ring (of 64- or 128-byte SQEs, `S`), the pending
/// read of its doorbell, the completions it reaped and has not handled yet.
pub(crate) struct CoreRing<S: RingSqe> {
    /// Dropped first (fields drop in order): the kernel cancels the commands still in
    /// it while their sinks, below, still keep what they point at.
    ring: Ring<S>,
    bell_fd: RawFd,
    bell_buf: Box<u64>,
    bell_armed: bool,
    /// Commands in this ring (written and not reaped).
    pub in_ring: u32,
    /// Reaped and not yet handled (handled [`HANDLE_BATCH`] at a time).
    pub cqes: std::collections::VecDeque<(u32, i32)>,
    /// The [`readable`] waits in the ring, by index (`None`: a free index).
    polls: Vec<Option<std::sync::Arc<readable::PollState>>>,
    /// The sinks of the tasks' commands, by index ([`commands`]).
    sinks: Vec<Arc<dyn CmdSink>>,
    /// Scratch: the commands' completions of one enter (sink, key, result).
    cmd_done: Vec<(u32, u32, i32)>,
}

impl<S: RingSqe> Drop for CoreRing<S> {
    fn drop(&mut self) {
        // Waits asked for from now on resolve to an error at once; commands are refused.
        readable::WAITS.with(|w| *w.borrow_mut() = None);
        cmd::CMDS.with(|c| *c.borrow_mut() = None);
    }
}

impl<S: RingSqe> CoreRing<S> {
    /// A ring with the doorbell `bell`, a sparse file table, and `pool`'s slots
    /// registered as its fixed buffers.
    pub(crate) fn new(bell: &Doorbell, pool: Option<&BufferPool>) -> Result<CoreRing<S>, String> {
        let entries = sluice_uring::ring_entries(RING_CAP);
        let ring = sluice_uring::new_ring_of::<S>(entries).map_err(|e| e.to_string())?;
        ring.submitter()
            .register_files_sparse(MAX_FILES)
            .map_err(|e| format!("cannot register a file table with the ring: {e}"))?;
        if let Some(pool) = pool {
            // SAFETY: the pool's region outlives the ring (the stack holds the pool until
            // every core's thread, and its ring, ended).
            unsafe { pool.register(&ring) }.map_err(|e| {
                format!(
                    "cannot register the buffer pool ({} × {} bytes) with the ring: {e} \
                     (raise the locked-memory limit, `ulimit -l`, give a smaller \
                     StackBuilder::buffer_pool, or buffer_pool(0, 0) for none)",
                    pool.count, pool.slot_len
                )
            })?;
        }
        readable::WAITS.with(|w| *w.borrow_mut() = Some(Vec::new()));
        cmd::CMDS.with(|c| *c.borrow_mut() = Some(cmd::CmdState::new(S::BIG)));
        Ok(CoreRing {
            ring,
            bell_fd: bell.raw(),
            bell_buf: Box::new(0),
            bell_armed: false,
            in_ring: 0,
            cqes: std::collections::VecDeque::with_capacity(2 * entries as usize),
            polls: Vec::new(),
            sinks: Vec::new(),
            cmd_done: Vec::new(),
        })
    }

    /// Whether a task of this core waits for a descriptor (`readable`): in the ring,
    /// or to be written to it.
    pub(crate) fn waits_outside(&self) -> bool {
        self.polls.iter().any(Option::is_some)
            || readable::WAITS.with(|w| w.borrow().as_ref().is_some_and(|v| !v.is_empty()))
            || cmd::CMDS.with(|c| {
                c.borrow()
                    .as_ref()
                    .is_some_and(|st| st.in_ring > 0 || !st.pending.is_empty())
            })
    }

    /// Apply the changes `fds` of the table of registered files to this ring (a file
    /// in its slot, or the slot cleared), in order.
    pub(crate) fn register(&mut self, fds: &[SlotUpdate]) -> std::io::Result<()> {
        for u in fds {
            self.ring
                .submitter()
                .register_files_update(u.0, &[files::raw(u)])?;
        }
        Ok(())
    }

    /// Write the SQEs of `out` (and re-arm the doorbell's read).
    pub(crate) fn push(&mut self, out: &[Outgoing]) {
        let mut sq = self.ring.submission();
        // The tasks' commands first (and their new sinks): a command is often the reply
        // a caller waits for (FUSE's commit), which should not wait behind the turn's
        // I/O in the enter's submission. They take only the room the pieces and the
        // doorbell leave; the rest go with the next turn.
        let room = (sq.capacity() - sq.len()).saturating_sub(out.len() + 1);
        cmd::CMDS.with(|c| {
            let mut c = c.borrow_mut();
            let Some(st) = c.as_mut() else { return };
            self.sinks.append(&mut st.new_sinks);
            let mut written = 0;
            for (e, sink, key) in st.pending.iter().take(room) {
                let ud = CMD_BIT | u64::from(*sink) << 32 | u64::from(*key);
                let Some(e) = S::command(e.clone().user_data(ud)) else {
                    break;
                };
                // SAFETY: the command's submitter keeps what it points at alive until
                // its completion reached its sink, or the ring is gone (`Commands::submit`).
                if unsafe { sq.push(&e) }.is_err() {
                    break;
                }
                written += 1;
            }
            st.pending.drain(..written);
            st.in_ring += written as u32;
        });
        if !self.bell_armed {
            let e = S::from(doorbell_read(self.bell_fd, &mut self.bell_buf));
            // SAFETY: the buffer is boxed and lives as long as the ring; one entry is
            // always left for it (commands in all rings ≤ RING_CAP < entries).
            unsafe { sq.push(&e) }.expect("an entry is reserved for the doorbell");
            self.bell_armed = true;
        }
        for o in out {
            let e = S::from(sluice_uring::sqe(&o.piece()));
            // SAFETY: the buffer is owned by the I/O slot until its completion is
            // handled; the file is registered; commands in all rings ≤ RING_CAP < entries.
            unsafe { sq.push(&e) }.expect("ring has room: in_ring ≤ cap < entries");
            self.in_ring += 1;
        }
        // The tasks' new `readable` waits; those the ring has no room for now wait for
        // the next turn.
        let waits = readable::WAITS.with(|w| w.borrow_mut().as_mut().map(std::mem::take));
        let mut waits = waits.unwrap_or_default().into_iter();
        for (fd, st) in waits.by_ref() {
            let i = match self.polls.iter().position(Option::is_none) {
                Some(i) => i,
                None => {
                    self.polls.push(None);
                    self.polls.len() - 1
                }
            };
            let e = io_uring::opcode::PollAdd::new(io_uring::types::Fd(fd), libc::POLLIN as u32)
                .build()
                .user_data(POLL_BIT | i as u64);
            let e = S::from(e);
            // SAFETY: a poll holds no buffer of ours.
            if unsafe { sq.push(&e) }.is_err() {
                readable::WAITS.with(|w| {
                    if let Some(v) = w.borrow_mut().as_mut() {
                        v.push((fd, st));
                    }
                });
                break;
            }
            self.polls[i] = Some(st);
        }
        let rest: Vec<_> = waits.collect();
        if !rest.is_empty() {
            readable::WAITS.with(|w| {
                if let Some(v) = w.borrow_mut().as_mut() {
                    v.extend(rest);
                }
            });
        }
    }

    /// Submit what was written; wait for a completion, the doorbell or `wait_ns` when
    /// `block` (and nothing is left to handle); collect the CQEs. Returns whether it
    /// waited the whole `wait_ns` with no I/O in flight and nothing came (an idle
    /// timeout).
    pub(crate) fn enter(&mut self, block: bool, wait_ns: Nanos) -> std::io::Result<bool> {
        let mut waited_idle = false;
        if !block || !self.cqes.is_empty() {
            // No wait: submit what the turn wrote, and post the completions whose
            // work the kernel deferred to this ring (it marks the ring when there is
            // such work; `sluice_uring::submit` then asks for events) — a core whose
            // tasks are runnable at every turn never waits, and without that its
            // deferred completions would never be posted. No system call when there
            // is neither. After every round of tasks the core comes here; the I/O that
            // round issued is submitted in the next turn's enter.
            sluice_uring::submit(&mut self.ring)?;
        } else {
            waited_idle = self.in_ring == 0;
            sluice_uring::submit_and_wait(&self.ring, Some(wait_ns))?;
        }
        for c in self.ring.completion() {
            waited_idle = false;
            if c.user_data() == BELL {
                self.bell_armed = false;
            } else if c.user_data() & CMD_BIT != 0 {
                let ud = c.user_data() & !CMD_BIT;
                self.cmd_done
                    .push(((ud >> 32) as u32, ud as u32, c.result()));
            } else if c.user_data() & POLL_BIT != 0 {
                let i = (c.user_data() & !POLL_BIT) as usize;
                if let Some(st) = self.polls.get_mut(i).and_then(Option::take) {
                    st.done(c.result());
                }
            } else {
                self.cqes.push_back((c.user_data() as u32, c.result()));
                self.in_ring -= 1;
            }
        }
        if !self.cmd_done.is_empty() {
            let n = self.cmd_done.len() as u32;
            cmd::CMDS.with(|c| {
                if let Some(st) = c.borrow_mut().as_mut() {
                    st.in_ring -= n;
                }
            });
            // The sinks run outside every borrow: they may submit commands.
            let mut done = std::mem::take(&mut self.cmd_done);
            for (sink, key, res) in done.drain(..) {
                if let Some(s) = self.sinks.get(sink as usize) {
                    s.done(key, res);
                }
            }
            self.cmd_done = done;
        }
        Ok(waited_idle)
    }

    /// At the end of a run: wait until the kernel is done with every buffer this ring
    /// was given (the completions are dropped: nobody waits for them any more).
    pub(crate) fn drain(&mut self) {
        while self.in_ring > 0 {
            self.cqes.clear();
            if self.enter(true, 100_000_000).is_err() {
                break;
            }
        }
    }
}

impl Outgoing {
    /// The piece its SQE carries; the SQE is the io_uring layer's one mapping
    /// ([`sluice_uring::sqe`]: FUA = `RWF_DSYNC`, FLUSH = `fdatasync` — the same as the
    /// engine's). A flush covers the writes completed before it was submitted (the
    /// runtime submits it after the task's writes completed): the ring does not order
    /// an fsync after writes still in flight, and this ring is not polled (IOPOLL
    /// rings refuse fsync).
    fn piece(&self) -> sluice_uring::Piece {
        sluice_uring::Piece {
            op: self.op,
            fua: self.fua,
            file: self.file,
            offset: self.file_off,
            buf: self.buf as *mut u8,
            len: self.len,
            buf_index: (self.fixed != NOT_FIXED).then_some(self.fixed as u16),
            tag: self.tag,
            // The runtime's real files are regular files.
            block_device: false,
            atomic: self.atomic,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use io_uring::{opcode, types};
    use sluice_uring::{inspect, meaning, sqe};

    /// The runtime's path from an outgoing piece to its SQE means what the io_uring
    /// layer decides for READ, WRITE, WRITE+FUA and FLUSH (the engine's path is checked
    /// against the same decision in `sluice-engine`'s `worker/kernel.rs`).
    #[test]
    fn the_runtimes_sqes_mean_what_the_io_uring_layer_decides() {
        let dsync = libc::RWF_DSYNC as u32;
        let datasync = types::FsyncFlags::DATASYNC.bits();
        for (op, fua, code, flags) in [
            (Op::Read, false, opcode::Read::CODE, 0),
            (Op::Write, false, opcode::Write::CODE, 0),
            (Op::Write, true, opcode::Write::CODE, dsync),
            (Op::Flush, false, opcode::Fsync::CODE, datasync),
        ] {
            for fixed in [NOT_FIXED, 3] {
                let o = Outgoing {
                    tag: 5,
                    op,
                    file: 2,
                    file_off: 8192,
                    buf: 0x2000,
                    len: 4096,
                    fua,
                    atomic: false,
                    fixed,
                };
                let v = inspect(&sqe(&o.piece()));
                let is_fixed = fixed != NOT_FIXED;
                assert_eq!(
                    v.meaning(),
                    meaning(op, fua, false, is_fixed, false),
                    "{op:?} fua {fua}"
                );
                assert_eq!(v.op_flags, flags, "{op:?} fua {fua}");
                if !is_fixed {
                    assert_eq!(v.opcode, code, "{op:?} fua {fua}");
                }
                assert_eq!((v.user_data, v.fd), (5, 2));
                if op != Op::Flush {
                    assert_eq!((v.offset, v.addr, v.len), (8192, 0x2000, 4096));
                }
            }
        }
    }
}
