//! The data path: every read, write, fsync, truncation and fallocate of an open file
//! goes through a running sluice stack (the runtime's real backend: io_uring on every
//! core, the one block layer, the chosen policy), as a task of the caller's flow, class
//! and weight.
//! The FUSE threads hand the requests to worker tasks through [`crate::hub`]; a
//! request is served here, directly on the backing file (`O_DIRECT`), or through the
//! stack's page cache ([`crate::cached`]) when the mount has one and the caller opened
//! the file without `O_DIRECT`.
//!
//! # Alignment
//! The backing files are `O_DIRECT`: a request is widened to whole [`BLOCK`]s. A read
//! reads the widened range and replies the part asked for, cut at the file's end as
//! the daemon knows it. A write that does not cover whole blocks reads its first and
//! last blocks (read-modify-write) under a range lock (below); a write past
//! the end cuts the file back to its true end with `ftruncate` under a lock to the end
//! of the address space, so the file never stays a block too long.
//!
//! # Range locks and inheritance (RCP, FAST '17 §4.2)
//! Two writes touching the same block, or a write racing a truncation at the end, would
//! lose one another's bytes: each takes the range it reads and writes (to the end of the
//! address space when it moves the end of the file) before it starts, and overlapping
//! ranges wait their turn (an aligned write too, so a read-modify-write never puts back
//! old bytes of a block it covers). Reads take none: a block is written whole. The
//! ranges are the runtime's [`RangeLock`] (one per data file, of the stack's level):
//! each held range records its holder task, so a critical caller's write waiting behind
//! a background read-modify-write of the same block boosts that task — its reads and
//! writes already queued in the block layer are promoted to the critical class, the
//! I/O it issues while it holds the range is critical, and the boost ends when it
//! releases the range — as a critical fsync promotes the flusher's queued writeback.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use fuser::{Errno, ReplyAttr};
use sluice_runtime::{Activity, DmaBuffer, File, IoOptions, Op, RangeGuard, RangeLock, FILE_SPAN};

use crate::cached;
use crate::hub::{Job, Stamps};
use crate::sys;
use crate::trace::Trace;

/// The block the backing files' I/O is aligned to (a page: every `O_DIRECT` file
/// system takes it).
pub const BLOCK: u64 = 4096;

const READ: Activity = Activity("read");
const WRITE: Activity = Activity("write");
pub(crate) const SYNC: Activity = Activity("sync");

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
    /// The byte ranges held by its writes, truncations and fallocates ([`range_locks`]).
    pub locks: RangeLock,
    pub writable: bool,
    /// The stack has a page cache (`--cache`): callers without `O_DIRECT` go through
    /// it, and fsync, truncation, fallocate and the last close write it back first.
    pub cache: bool,
    /// Set once its close in the stack finished (dirty pages written back, the backing
    /// file cut to its length): a later open of the same inode waits for it.
    pub closed: Arc<Closed>,
    /// The backing file may have holes below its length: set at open if it has one, and
    /// by whatever may make one (a truncation up, a write past the end, a `fallocate`
    /// that punches, zeroes or shifts). While unset, a buffered write inside the file
    /// needs no reservation ([`cached::write`]); never cleared.
    pub holes: AtomicBool,
}

/// A one-way flag a thread can wait for: a data file's close in the stack finished.
#[derive(Debug, Default)]
pub struct Closed {
    done: Mutex<bool>,
    cv: std::sync::Condvar,
}

impl Closed {
    /// The close finished.
    pub fn set(&self) {
        *self.done.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.cv.notify_all();
    }

    /// Whether it finished.
    pub fn is_set(&self) -> bool {
        *self.done.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Block until it finished.
    pub fn wait(&self) {
        let mut d = self.done.lock().unwrap_or_else(|e| e.into_inner());
        while !*d {
            d = self.cv.wait(d).unwrap_or_else(|e| e.into_inner());
        }
    }
}

impl DataFile {
    /// A backing file open in the stack: `fd` duplicates the descriptor `file` holds,
    /// `size` is its length.
    pub fn new(file: File, fd: OwnedFd, size: u64, writable: bool, cache: bool) -> DataFile {
        let holes = size > 0 && sys::hole_in(fd.as_raw_fd(), 0, size);
        DataFile {
            file,
            fd,
            size: Mutex::new(size),
            locks: range_locks(),
            writable,
            cache,
            closed: Arc::default(),
            holes: AtomicBool::new(holes),
        }
    }

    /// The backing file may have a hole from now on.
    pub(crate) fn may_have_holes(&self) {
        self.holes.store(true, Relaxed);
    }

    pub(crate) fn size(&self) -> u64 {
        *self.size.lock().unwrap_or_else(|e| e.into_inner())
    }
    pub(crate) fn set_size(&self, s: u64) {
        *self.size.lock().unwrap_or_else(|e| e.into_inner()) = s;
    }
}

/// A data file's range locks: the stack's own (RCP's kernel level: a critical waiter
/// boosts the holder whenever the stack's inheritance is on), named in the report's
/// table of where critical tasks waited.
pub fn range_locks() -> RangeLock {
    RangeLock::new_stack_level().named("mount block ranges")
}

pub(crate) fn floor(x: u64) -> u64 {
    x & !(BLOCK - 1)
}
pub(crate) fn ceil(x: u64) -> u64 {
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
pub(crate) async fn read(
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

/// Hold what a write of bytes `off..end` needs: a write that moves the end (its last
/// block past the end) holds from the block of the end onward; any other its blocks (an
/// aligned write too: a read-modify-write of a block it covers must not put old bytes
/// back; a buffered write, so that a truncation never races it).
pub(crate) async fn lock_write(df: &DataFile, off: u64, end: u64) -> RangeGuard<'_> {
    let (a0, a1) = (floor(off), ceil(end));
    loop {
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
            return g;
        }
    }
}

/// The checks every write makes, direct or cached: a read-only descriptor is `EBADF`,
/// past the stack's file span `EFBIG`; the write's end, or `None` for an empty write.
pub(crate) fn write_end(df: &DataFile, off: u64, len: usize) -> Result<Option<u64>, Errno> {
    if !df.writable {
        return Err(Errno::EBADF);
    }
    if len == 0 {
        return Ok(None);
    }
    let end = off.checked_add(len as u64).ok_or(Errno::EFBIG)?;
    if end > FILE_SPAN {
        return Err(Errno::EFBIG);
    }
    Ok(Some(end))
}

/// A write's bytes as the request brought them, copied once, into the buffer of the
/// blocks they fall in: `buf` holds blocks `[floor(off), ceil(off + len))` with the
/// bytes at `off - floor(off)` and zeros around them until the read-modify-write fills
/// the partial first and last blocks. A whole-block write (a program's 128 KiB
/// `O_DIRECT` write) goes to the backing file from this buffer: the request's bytes are
/// copied once in the daemon, not into a vector and then into the blocks' buffer.
pub struct WriteData {
    buf: DmaBuffer,
    /// Where the bytes start in `buf`.
    at: usize,
    len: usize,
}

impl WriteData {
    /// `data`, written at byte `off` of the file.
    pub fn new(off: u64, data: &[u8]) -> WriteData {
        let a0 = floor(off);
        match off.checked_add(data.len() as u64) {
            // Within the stack's span: the blocks' buffer.
            Some(end) if end <= FILE_SPAN => {
                let at = (off - a0) as usize;
                WriteData {
                    buf: DmaBuffer::with_data((ceil(end) - a0) as usize, at, data),
                    at,
                    len: data.len(),
                }
            }
            // Refused before any I/O (`write_end`: EFBIG); kept as given.
            _ => WriteData {
                buf: DmaBuffer::from_slice(data),
                at: 0,
                len: data.len(),
            },
        }
    }

    /// The bytes to write.
    pub fn bytes(&self) -> &[u8] {
        &self.buf[self.at..self.at + self.len]
    }

    /// How many bytes.
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        self.len
    }
}

/// Write `data` at `off` (direct: whole blocks on the backing file).
#[cfg(test)]
async fn write(df: &DataFile, off: u64, data: &[u8], sync: bool) -> Result<usize, Errno> {
    write_blocks(df, off, WriteData::new(off, data), sync).await
}

async fn write_blocks(
    df: &DataFile,
    off: u64,
    data: WriteData,
    sync: bool,
) -> Result<usize, Errno> {
    let Some(end) = write_end(df, off, data.len())? else {
        return Ok(0);
    };
    let (a0, a1) = (floor(off), ceil(end));
    let _guard = lock_write(df, off, end).await;
    let size = df.size();
    let len = data.len();
    // The blocks' buffer, the bytes already in place (`WriteData::new`, within the span
    // as `write_end` checked).
    let mut buf = data.buf;
    debug_assert_eq!(buf.len() as u64, a1 - a0);
    // Read-modify-write of a partial first and last block: their bytes outside the
    // write's (what is past the end reads as zeros, as the buffer has them).
    let (head, tail) = ((off - a0) as usize, (end - a0) as usize);
    if off > a0 && a0 < size {
        let (b, n) = read_blocks(df, a0, BLOCK, WRITE).await?;
        let k = n.min(head);
        buf[..k].copy_from_slice(&b[..k]);
        // A write inside this one block: its bytes after the write's end too (the
        // last block's read below is this block's, and is skipped).
        if tail < n {
            buf[tail..n].copy_from_slice(&b[tail..n]);
        }
    }
    if end < a1 && (a1 - BLOCK > a0 || off == a0) && a1 - BLOCK < size {
        let (b, n) = read_blocks(df, a1 - BLOCK, BLOCK, WRITE).await?;
        let at = (a1 - BLOCK - a0) as usize;
        // The block's bytes past the write's end (the write covers this block from its
        // start, or from before it: `head ≤ at < tail`).
        if at + n > tail {
            buf[tail..at + n].copy_from_slice(&b[tail - at..n]);
        }
    }
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
        if a0 > ceil(size) {
            df.may_have_holes();
        }
        df.set_size(new);
    }
    if a1 > new {
        // SAFETY: a plain system call on our descriptor.
        sys::check(unsafe { libc::ftruncate(df.fd.as_raw_fd(), new as i64) })?;
    }
    if sync {
        fsync(df, true).await?;
    }
    Ok(len)
}

/// The file's data (and, unless `datasync`, its metadata) durable: a FLUSH through the
/// stack (`fdatasync` on the backing file, as the critical caller's request), then
/// `fsync` of the backing file for its metadata.
pub(crate) async fn fsync(df: &DataFile, datasync: bool) -> Result<(), Errno> {
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
    // Past the stack's file span a file cannot grow (as a write there): EFBIG, the
    // errno of a file system whose limit it passes (ext4 beyond 16 TiB).
    if size > FILE_SPAN {
        return Err(Errno::EFBIG);
    }
    let old = df.size();
    let _g = df.locks.lock(floor(old.min(size)), u64::MAX).await;
    if df.cache {
        // The cache's pages past the new end go, the page of the end is read again.
        cached::set_len(df, size).await?;
    } else {
        // SAFETY: a plain system call on our descriptor.
        sys::check(unsafe { libc::ftruncate(df.fd.as_raw_fd(), size as i64) })?;
    }
    if size > old {
        df.may_have_holes();
    }
    df.set_size(size);
    Ok(())
}

async fn fallocate(df: &DataFile, off: u64, len: u64, mode: i32) -> Result<(), Errno> {
    let _g = df.locks.lock(floor(off.min(df.size())), u64::MAX).await;
    if df.cache {
        // The call may change bytes (a hole punched, a range zeroed or shifted): the
        // cached pages go to the backing file first and are read again after.
        cached::quiesce(df).await?;
    }
    // SAFETY: a plain system call on our descriptor.
    sys::check(unsafe { libc::fallocate(df.fd.as_raw_fd(), mode, off as i64, len as i64) })?;
    // Mode 0 and KEEP_SIZE only allocate; the others punch, zero or shift ranges.
    if mode & !libc::FALLOC_FL_KEEP_SIZE != 0 {
        df.may_have_holes();
    }
    let st = sys::stat_fd(df.fd.as_raw_fd())?;
    df.set_size(st.st_size as u64);
    if df.cache {
        cached::set_len(df, st.st_size as u64).await?;
    }
    Ok(())
}

/// Do `job` and reply; `ts[3]` is set when its I/O is done (before the reply).
pub(crate) async fn run(job: Job, trace: &Trace, ts: &mut Stamps) {
    match job {
        Job::Read {
            df,
            off,
            size,
            cached: true,
            reply,
        } => {
            let r = cached::read(&df, off, size).await;
            ts[3] = trace.now();
            match r {
                Ok(buf) => reply.data(&buf),
                Err(e) => reply.error(e),
            }
        }
        Job::Read {
            df,
            off,
            size,
            cached: false,
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
            cached,
            reply,
        } => {
            let r = if cached {
                cached::write(&df, off, data.bytes(), sync).await
            } else {
                write_blocks(&df, off, data, sync).await
            };
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
        } => match cached::fsync(&df, datasync).await {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        },
        Job::Truncate { df, size, done } => done(truncate(&df, size).await),
        Job::Lseek {
            df,
            offset,
            whence,
            reply,
        } => match cached::seek(&df, offset, whence).await {
            Ok(r) => reply.offset(r),
            Err(e) => reply.error(e),
        },
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
pub(crate) mod tests;
