//! One core's share of the entries of a queue of the kernel's FUSE ring (all of them,
//! or with `SLUICE_MOUNT_PLACEMENT=spread` a part: `crate::placement::ring_entry_cores`),
//! registered by a task on that core through its own io_uring (128-byte SQEs); the
//! entries — a 288-byte header buffer and a
//! payload buffer each — are registered on the `/dev/fuse` descriptor
//! (`IORING_OP_URING_CMD`, `FUSE_IO_URING_CMD_REGISTER`). The kernel completes an
//! entry's command when it has put a request in its buffers; the task waits for that
//! on its core's own ring ([`sluice_runtime::readable`] of this ring's descriptor), so
//! the core that serves the request is the thread the kernel wakes — no thread of the
//! queue's own, no hand-over between threads. READ, WRITE and FSYNC go to worker tasks
//! of the caller's class on the same core (`crate::placement`) ([`DataOps`], the
//! functions the file system's handlers call); FLUSH is answered at once (as the handler does); every
//! other request goes to the file system's session through the proxy. Whoever answers
//! writes the reply into the entry's buffers ([`Slot`]), queues the entry for
//! `FUSE_IO_URING_CMD_COMMIT_AND_FETCH` and wakes the task, which submits the commits:
//! the kernel takes the reply and refills the entry.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::future::Future;
use std::os::fd::{AsRawFd, RawFd};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use fuser::Errno;
use io_uring::{cqueue, opcode, squeue, types, IoUring};

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

/// A queue's entries and what the answerers hand back.
pub struct Shared {
    qid: u16,
    headers: Vec<Buf>,
    payloads: Vec<Buf>,
    /// Each entry's `iovec[2]` {header, payload} for REGISTER.
    iovecs: Vec<[libc::iovec; 2]>,
    /// Entries answered: (index, unique) to commit.
    commits: Mutex<Vec<(u16, u64)>>,
    /// The queue's task, when it waits.
    waker: Mutex<Option<Waker>>,
    /// Set at unmount: the task ends (its ring dropped: the kernel cancels what is
    /// left of its commands).
    stop: AtomicBool,
}

// SAFETY: the buffers are only touched by the owner of their entry (the queue's thread
// until it hands a request out, then the request's `Slot`); the rest is locked.
unsafe impl Send for Shared {}
// SAFETY: as above.
unsafe impl Sync for Shared {}

impl Shared {
    pub fn new(qid: u16, entries: usize, payload: usize) -> Arc<Shared> {
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
            headers,
            payloads,
            iovecs,
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
        locked(&self.sh.commits).push((self.ent, self.unique));
        self.sh.wake();
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
fn command(dev: RawFd, sh: &Shared, cmd: u32, i: usize, commit_id: u64) -> squeue::Entry128 {
    let e = opcode::UringCmd80::new(types::Fd(dev), cmd)
        .cmd(proto::cmd_req(commit_id, sh.qid))
        .addr(Some(sh.iovecs[i].as_ptr() as u64))
        .build()
        .user_data(i as u64);
    // The SQE's `len` (bytes 24..28) is the iovec count, 2, which the builder does not
    // set. SAFETY: `Entry128` is `repr(C)`, 128 bytes: `io_uring_sqe` and its tail.
    let mut raw: [u8; 128] = unsafe { std::mem::transmute(e) };
    raw[24..28].copy_from_slice(&2u32.to_le_bytes());
    // SAFETY: as above.
    unsafe { std::mem::transmute::<[u8; 128], squeue::Entry128>(raw) }
}

/// The queue's task waits for an answer to commit, a request in its ring (the ring's
/// descriptor readable: a completion), or the stop.
struct Next<'a> {
    sh: &'a Shared,
    ring_fd: RawFd,
    /// The poll of the ring's descriptor on the core's ring, kept across waits (one at
    /// a time).
    readable: &'a mut Option<sluice_runtime::Readable>,
}

impl Future for Next<'_> {
    type Output = std::io::Result<()>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        *locked(&self.sh.waker) = Some(cx.waker().clone());
        if self.sh.stop.load(Ordering::SeqCst) || !locked(&self.sh.commits).is_empty() {
            return Poll::Ready(Ok(()));
        }
        let fd = self.ring_fd;
        let r = self
            .readable
            .get_or_insert_with(|| sluice_runtime::readable(fd));
        match Pin::new(r).poll(cx) {
            Poll::Ready(r) => {
                *self.readable = None;
                Poll::Ready(r.map(drop))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

/// Serve queue `sh` on `/dev/fuse` descriptor `dev` until the kernel ends every entry
/// (unmount) or [`Shared::stop`]; a task on core `core` (the workers of its requests
/// run there too: `crate::placement::ring_request_core`). `ops`: the data path; `proxy`: the session for every other request.
pub async fn run(
    dev: RawFd,
    sh: Arc<Shared>,
    ops: DataOps,
    proxy: Arc<Proxy>,
    core: u16,
) -> std::io::Result<()> {
    let n = sh.headers.len();
    let size = (2 * n + 2).next_power_of_two() as u32;
    // A plain ring: the kernel delivers each request (task work of this thread, which
    // submitted the command) by waking the core's thread wherever it waits — in its
    // own ring, for the poll of this one.
    let mut ring: IoUring<squeue::Entry128, cqueue::Entry> = IoUring::builder().build(size)?;
    let ring_fd = ring.as_raw_fd();
    // SAFETY: the iovecs and buffers live in `sh` as long as the ring (the ring is
    // dropped first, below, and `sh` is kept by every slot besides).
    unsafe {
        for i in 0..n {
            push(&mut ring, command(dev, &sh, proto::CMD_REGISTER, i, 0))?;
        }
    }
    let mut live = vec![true; n];
    let mut alive = n;
    let mut readable = None;
    while alive > 0 && !sh.stop.load(Ordering::SeqCst) {
        let commits = std::mem::take(&mut *locked(&sh.commits));
        for (i, unique) in commits {
            if live[i as usize] {
                let e = command(dev, &sh, proto::CMD_COMMIT_AND_FETCH, i as usize, unique);
                // SAFETY: as above.
                unsafe { push(&mut ring, e)? };
            }
        }
        if !ring.submission().is_empty() {
            match ring.submit() {
                Ok(_) => {}
                Err(e) if matches!(e.raw_os_error(), Some(libc::EINTR | libc::EBUSY)) => {}
                Err(e) => return Err(e),
            }
        }
        let done: Vec<(u64, i32)> = ring
            .completion()
            .map(|c| (c.user_data(), c.result()))
            .collect();
        for &(ud, res) in &done {
            let i = ud as usize;
            if res < 0 {
                // The connection ended (-ENOTCONN at unmount, -ECANCELED), or a
                // REGISTER was refused: the entry is gone.
                if live[i] {
                    live[i] = false;
                    alive -= 1;
                }
                if res != -libc::ENOTCONN && res != -libc::ECANCELED {
                    eprintln!(
                        "sluice mount: FUSE ring queue {}: entry {i}: {}",
                        sh.qid,
                        std::io::Error::from_raw_os_error(-res)
                    );
                }
                continue;
            }
            serve_entry(&sh, i, &ops, &proxy, core);
        }
        if done.is_empty() {
            Next {
                sh: &sh,
                ring_fd,
                readable: &mut readable,
            }
            .await?;
        } else {
            // Let the workers just handed requests run before the next look.
            sluice_runtime::yield_now().await;
        }
    }
    *locked(&sh.waker) = None;
    drop(ring);
    Ok(())
}

/// SAFETY: what `e` points at stays valid until its completion.
unsafe fn push(
    ring: &mut IoUring<squeue::Entry128, cqueue::Entry>,
    e: squeue::Entry128,
) -> std::io::Result<()> {
    // SAFETY: the caller's.
    while unsafe { ring.submission().push(&e) }.is_err() {
        ring.submit()?;
    }
    Ok(())
}

/// Entry `i` holds a request: serve it (data requests on core `core`).
fn serve_entry(sh: &Arc<Shared>, i: usize, ops: &DataOps, proxy: &Proxy, core: u16) {
    // SAFETY: the kernel handed entry `i` to user space with this completion; the
    // slot made below owns it from here.
    let (h, p) = unsafe { (sh.headers[i].bytes(), sh.payloads[i].bytes()) };
    let ih = InHeader::parse(h);
    let payload_sz = (proto::u32_at(h, PAYLOAD_SZ) as usize).min(p.len());
    let slot = Slot {
        sh: sh.clone(),
        ent: i as u16,
        unique: ih.unique,
        done: false,
    };
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
