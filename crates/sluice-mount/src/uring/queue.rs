//! One core's share of the entries of a queue of the kernel's FUSE ring (all of them,
//! or with `SLUICE_MOUNT_PLACEMENT=spread` a part: `crate::placement::ring_entry_cores`),
//! each entry a 288-byte header buffer and a payload buffer, registered on the
//! `/dev/fuse` descriptor (`IORING_OP_URING_CMD`, `FUSE_IO_URING_CMD_REGISTER`) **on
//! the core's own io_uring** ([`sluice_runtime::commands`]: the stack's rings take
//! 128-byte SQEs for it). The kernel completes an entry's command when it has put a
//! request in its buffers; the completion comes with the core's own I/O completions
//! (the ring defers that work to the core's wait: the requests ready by then come
//! together), and the core hands it to [`Sink`], which serves the request there and
//! then: READ, WRITE and FSYNC go to worker tasks of the caller's class on the same
//! core (`crate::placement`) ([`DataOps`], the functions the file system's handlers
//! call); FLUSH is answered at once (as the handler does); every other request goes to
//! the file system's session through the proxy. Whoever answers writes the reply into
//! the entry's buffers ([`Slot`]) and commits it with `FUSE_IO_URING_CMD_COMMIT_AND_FETCH`
//! — on the core's thread (a worker), queued straight for the core's ring; from another
//! thread (the session's replies), through the queue's task, which the reply wakes.
//! The commits, the fetches and the backing I/O of a turn go with one `io_uring_enter`:
//! no ring of the queue's own to poll and enter, no thread between the kernel and the
//! stack.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::future::Future;
use std::os::fd::RawFd;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll, Waker};

use fuser::Errno;
use io_uring::{opcode, squeue, types};
use sluice_runtime::Commands;

use super::proto::{self, InHeader, HEADER_LEN, IN_HEADER, OP_IN, OUT_HEADER, PAYLOAD_SZ};
use super::Proxy;
use crate::fs::DataOps;
use crate::hub::Answer;

fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A zeroed buffer of `len` bytes, written through raw pointers by the queue's thread
/// and by whoever holds the entry's [`Slot`] — never both at once: the kernel hands
/// an entry to user space with a request and takes it back at the commit.
struct Buf {
    ptr: *mut u8,
    len: usize,
}

impl Buf {
    fn new(len: usize) -> Buf {
        let layout = Layout::from_size_align(len, 4096).expect("buffer layout");
        // SAFETY: a non-zero size (HEADER_LEN or the payload size).
        let ptr = unsafe { alloc_zeroed(layout) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        Buf { ptr, len }
    }

    /// SAFETY: the caller owns the entry (see [`Buf`]).
    unsafe fn bytes(&self) -> &[u8] {
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// SAFETY: the caller owns the entry (see [`Buf`]).
    #[allow(clippy::mut_from_ref)]
    unsafe fn bytes_mut(&self) -> &mut [u8] {
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for Buf {
    fn drop(&mut self) {
        let layout = Layout::from_size_align(self.len, 4096).expect("buffer layout");
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.ptr, layout) };
    }
}

/// A queue's entries on one core, what serves their requests, and what the answerers
/// of other threads hand back.
pub struct Shared {
    qid: u16,
    /// The `/dev/fuse` descriptor the commands go to.
    dev: RawFd,
    /// The core whose ring takes the commands and whose workers serve the requests.
    core: u16,
    ops: DataOps,
    proxy: Arc<Proxy>,
    headers: Vec<Buf>,
    payloads: Vec<Buf>,
    /// Each entry's `iovec[2]` {header, payload} for REGISTER.
    iovecs: Vec<[libc::iovec; 2]>,
    /// Each entry's command is with the kernel (registered, not ended by it).
    live: Mutex<Vec<bool>>,
    /// Entries live.
    alive: AtomicUsize,
    /// The core's ring, once the queue's task asked for it.
    cmds: OnceLock<Commands>,
    /// Entries answered on another thread: (index, unique) to commit.
    commits: Mutex<Vec<(u16, u64)>>,
    /// The queue's task, when it waits.
    waker: Mutex<Option<Waker>>,
    /// Set at unmount: the task ends (what is left of its commands the kernel cancels
    /// with the core's ring, at the stack's end).
    stop: AtomicBool,
}

// SAFETY: the buffers are only touched by the owner of their entry (the queue's thread
// until it hands a request out, then the request's `Slot`); the rest is locked.
unsafe impl Send for Shared {}
// SAFETY: as above.
unsafe impl Sync for Shared {}

impl Shared {
    /// Queue `qid`'s `entries` entries with payloads of `payload` bytes, registered on
    /// `/dev/fuse` descriptor `dev` by a task of core `core` ([`run`]), their requests
    /// served through `ops` and `proxy`.
    pub fn new(
        qid: u16,
        entries: usize,
        payload: usize,
        dev: RawFd,
        core: u16,
        ops: DataOps,
        proxy: Arc<Proxy>,
    ) -> Arc<Shared> {
        let headers: Vec<Buf> = (0..entries).map(|_| Buf::new(HEADER_LEN)).collect();
        let payloads: Vec<Buf> = (0..entries).map(|_| Buf::new(payload)).collect();
        let iovecs = headers
            .iter()
            .zip(&payloads)
            .map(|(h, p)| {
                [
                    libc::iovec {
                        iov_base: h.ptr.cast(),
                        iov_len: h.len,
                    },
                    libc::iovec {
                        iov_base: p.ptr.cast(),
                        iov_len: p.len,
                    },
                ]
            })
            .collect();
        Arc::new(Shared {
            qid,
            dev,
            core,
            ops,
            proxy,
            headers,
            payloads,
            iovecs,
            live: Mutex::new(vec![false; entries]),
            alive: AtomicUsize::new(0),
            cmds: OnceLock::new(),
            commits: Mutex::new(Vec::new()),
            waker: Mutex::new(None),
            stop: AtomicBool::new(false),
        })
    }

    fn wake(&self) {
        if let Some(w) = locked(&self.waker).take() {
            w.wake();
        }
    }

    /// End the queue's task (at unmount).
    pub fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        self.wake();
    }

    /// Commit entry `i`'s reply to request `unique` (and fetch the next): straight to
    /// the core's ring on its thread, else through the queue's task.
    fn commit(&self, i: u16, unique: u64) {
        if let Some(c) = self.cmds.get().filter(|c| c.here()) {
            if !locked(&self.live)[i as usize] {
                return;
            }
            let e = command(self, proto::CMD_COMMIT_AND_FETCH, i as usize, unique);
            // SAFETY: the entry's iovecs and buffers live in `self`, which the core's
            // ring keeps (through the sink) as long as it may use them.
            match unsafe { c.submit(e, u32::from(i)) } {
                Ok(()) => return,
                Err(e) => eprintln!("sluice mount: FUSE ring queue {}: {e}", self.qid),
            }
        }
        locked(&self.commits).push((i, unique));
        self.wake();
    }

    /// Entry `i`'s command ended with `res` < 0: the entry is gone.
    fn end(&self, i: usize, res: i32) {
        let was = std::mem::replace(&mut locked(&self.live)[i], false);
        if was && self.alive.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.wake();
        }
        // The connection ended (-ENOTCONN at unmount, -ECANCELED), or a REGISTER was
        // refused.
        if res != -libc::ENOTCONN && res != -libc::ECANCELED {
            eprintln!(
                "sluice mount: FUSE ring queue {}: entry {i}: {}",
                self.qid,
                std::io::Error::from_raw_os_error(-res)
            );
        }
    }
}

/// Where the core's ring hands the completions of a queue's commands: an entry that
/// holds a request is served at once, on the core's thread.
pub struct Sink(pub Arc<Shared>);

impl sluice_runtime::CmdSink for Sink {
    fn done(&self, key: u32, res: i32) {
        let i = key as usize;
        if res < 0 {
            self.0.end(i, res);
        } else if self.0.stop.load(Ordering::SeqCst) {
            // Unmounting: the entry goes back with an error.
            drop(slot(&self.0, i));
        } else {
            serve_entry(&self.0, i);
        }
    }
}

/// The answer to one request that came through the ring: the entry it came in.
pub struct Slot {
    sh: Arc<Shared>,
    ent: u16,
    unique: u64,
    done: bool,
}

impl Slot {
    pub fn unique(&self) -> u64 {
        self.unique
    }

    /// Reply with `error` (0 or a negative errno) and, without an error, `payload`
    /// (the reply's arguments, as after the `fuse_out_header` on `/dev/fuse`).
    pub fn reply(mut self, error: i32, payload: &[u8]) {
        self.done = true;
        let i = self.ent as usize;
        // SAFETY: this slot owns entry `i` until it is queued for commit below.
        let (h, p) = unsafe {
            (
                self.sh.headers[i].bytes_mut(),
                self.sh.payloads[i].bytes_mut(),
            )
        };
        let (error, n) = if error == 0 && payload.len() > p.len() {
            (-libc::EIO, 0)
        } else if error != 0 {
            (error, 0)
        } else {
            (0, payload.len())
        };
        p[..n].copy_from_slice(&payload[..n]);
        h[..OUT_HEADER].copy_from_slice(&proto::out_header(
            (OUT_HEADER + n) as u32,
            error,
            self.unique,
        ));
        h[PAYLOAD_SZ..PAYLOAD_SZ + 4].copy_from_slice(&(n as u32).to_le_bytes());
        self.sh.commit(self.ent, self.unique);
    }

    pub fn error(self, e: Errno) {
        self.reply(-i32::from(e), &[]);
    }
}

impl Drop for Slot {
    /// A request dropped unanswered (the stack stopping) still gets its entry back.
    fn drop(&mut self) {
        if !self.done {
            let s = Slot {
                sh: self.sh.clone(),
                ent: self.ent,
                unique: self.unique,
                done: false,
            };
            self.done = true;
            s.error(Errno::EIO);
        }
    }
}

/// The SQE of `cmd` for entry `i` of queue `sh`.
fn command(sh: &Shared, cmd: u32, i: usize, commit_id: u64) -> squeue::Entry128 {
    let e = opcode::UringCmd80::new(types::Fd(sh.dev), cmd)
        .cmd(proto::cmd_req(commit_id, sh.qid))
        .addr(Some(sh.iovecs[i].as_ptr() as u64))
        .build();
    // The SQE's `len` (bytes 24..28) is the iovec count, 2, which the builder does not
    // set. SAFETY: `Entry128` is `repr(C)`, 128 bytes: `io_uring_sqe` and its tail.
    let mut raw: [u8; 128] = unsafe { std::mem::transmute(e) };
    raw[24..28].copy_from_slice(&2u32.to_le_bytes());
    // SAFETY: as above.
    unsafe { std::mem::transmute::<[u8; 128], squeue::Entry128>(raw) }
}

/// The queue's task waits for an answer of another thread to commit, the end of every
/// entry, or the stop.
struct Next<'a>(&'a Shared);

impl Future for Next<'_> {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let sh = self.0;
        *locked(&sh.waker) = Some(cx.waker().clone());
        if sh.stop.load(Ordering::SeqCst)
            || sh.alive.load(Ordering::SeqCst) == 0
            || !locked(&sh.commits).is_empty()
        {
            return Poll::Ready(());
        }
        Poll::Pending
    }
}

/// Register queue `sh`'s entries on the ring of the core this task runs on (their
/// requests are served there: [`Sink`]; their workers run there too:
/// `crate::placement::ring_request_core`), then commit the answers given on other
/// threads, until the kernel ends every entry (unmount) or [`Shared::stop`].
pub async fn run(sh: Arc<Shared>) -> std::io::Result<()> {
    let n = sh.headers.len();
    let cmds = sluice_runtime::commands(Arc::new(Sink(sh.clone())))?;
    let _ = sh.cmds.set(cmds);
    {
        let mut live = locked(&sh.live);
        for (i, l) in live.iter_mut().enumerate() {
            // SAFETY: the iovecs and buffers live in `sh`, which the core's ring keeps
            // through the sink as long as it may use them.
            unsafe { cmds.submit(command(&sh, proto::CMD_REGISTER, i, 0), i as u32)? };
            *l = true;
        }
        sh.alive.store(n, Ordering::SeqCst);
    }
    while sh.alive.load(Ordering::SeqCst) > 0 && !sh.stop.load(Ordering::SeqCst) {
        let commits = std::mem::take(&mut *locked(&sh.commits));
        for (i, unique) in commits {
            // On the core's thread: straight to its ring.
            sh.commit(i, unique);
        }
        Next(&sh).await;
    }
    *locked(&sh.waker) = None;
    Ok(())
}

/// The slot of entry `i`, which the kernel just handed to user space with a request.
fn slot(sh: &Arc<Shared>, i: usize) -> Slot {
    // SAFETY: the kernel handed entry `i` to user space with this completion.
    let h = unsafe { sh.headers[i].bytes() };
    Slot {
        sh: sh.clone(),
        ent: i as u16,
        unique: InHeader::parse(h).unique,
        done: false,
    }
}

/// Entry `i` holds a request: serve it (data requests on the queue's core).
fn serve_entry(sh: &Arc<Shared>, i: usize) {
    let (ops, proxy, core) = (&sh.ops, &sh.proxy, sh.core);
    // SAFETY: the kernel handed entry `i` to user space with this completion; the
    // slot made below owns it from here.
    let (h, p) = unsafe { (sh.headers[i].bytes(), sh.payloads[i].bytes()) };
    let ih = InHeader::parse(h);
    let payload_sz = (proto::u32_at(h, PAYLOAD_SZ) as usize).min(p.len());
    let slot = slot(sh, i);
    let op = &h[OP_IN..OP_IN + 128];
    match ih.opcode {
        proto::FUSE_READ => {
            proxy.counts.note_ring(true);
            let r = proto::read_in(op);
            let at = Some(core);
            ops.read(
                ih.pid,
                r.fh,
                r.offset,
                r.size,
                r.flags,
                at,
                Answer::Ring(slot),
            );
        }
        proto::FUSE_WRITE => {
            proxy.counts.note_ring(true);
            let w = proto::write_in(op);
            let n = (w.size as usize).min(payload_sz);
            let kill = w.write_flags & proto::FUSE_WRITE_KILL_SUIDGID != 0;
            let (data, at) = (&p[..n], Some(core));
            ops.write(
                ih.pid,
                w.fh,
                w.offset,
                data,
                w.flags,
                kill,
                at,
                Answer::Ring(slot),
            );
        }
        proto::FUSE_FSYNC => {
            proxy.counts.note_ring(true);
            let (fh, flags) = proto::fsync_in(op);
            let datasync = flags & proto::FUSE_FSYNC_FDATASYNC != 0;
            ops.fsync(ih.pid, fh, datasync, Some(core), Answer::Ring(slot));
        }
        proto::FUSE_FLUSH => {
            // As the file system's handler: close(2) of a local file writes nothing
            // back (the last close of the file does, in the stack).
            proxy.counts.note_ring(true);
            slot.reply(0, &[]);
        }
        _ => {
            proxy.counts.note_ring(false);
            // The request as `/dev/fuse` gives it: header, the opcode's fixed argument
            // (its length is what `len` leaves besides the payload), the payload.
            let op_len = (ih.len as usize)
                .checked_sub(IN_HEADER + payload_sz)
                .filter(|&l| l <= 128);
            match op_len {
                Some(l) => proxy.forward(slot, &[&h[..IN_HEADER], &op[..l], &p[..payload_sz]]),
                None => slot.error(Errno::EIO),
            }
        }
    }
}
