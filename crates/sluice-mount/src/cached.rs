//! Buffered I/O through the stack's page cache (`sluice mount --cache SIZE`).
//!
//! A caller that opened a file without `O_DIRECT` is served by the runtime's page cache
//! (`sluice_runtime::File::read_buffered` / `write_buffered`: `sluice-cache`'s state
//! machine, RCP's class-aware dirty limits, the stack's non-critical flusher); the
//! kernel still opens the file with FUSE `direct_io`, so the data is cached once, here.
//! A caller with `O_DIRECT` keeps the direct path of [`crate::data`], whose reads and
//! writes go through the runtime's `read_at` / `write_at`, which write back and wait
//! for the range's dirty pages first and drop its clean pages after a write (as Linux's
//! direct I/O does), so the two kinds of opener see each other's data.
//!
//! # The file's length
//! The cache writes whole 4 KiB pages, so a writeback of the page holding the end of
//! the file leaves the backing file up to a page longer than the file. The length the
//! callers see is the daemon's ([`DataFile::size`], answered by `getattr`); the backing
//! file is cut back to it ([`fix_len`], under the range lock from the end onward, which
//! every write that moves the end holds) before an `fsync`'s device flush, at the last
//! close, and before the stack stops.
//!
//! # fsync (RCP, FAST '17 §4.2.2: inheritance through outstanding I/O)
//! The file's dirty pages are written back by the caller's own task, with its class,
//! and every writeback of the file's pages still in flight (the flusher's, issued as
//! non-critical) is awaited through its I/O waiter: a critical caller promotes them in
//! the block layer. Then the length is fixed, a FLUSH goes through the stack
//! (`fdatasync` of the backing file, of the caller's class) and, for `fsync`, `fsync`
//! of the backing file for its metadata; the reply comes after all of it.

use std::os::fd::AsRawFd;
use std::sync::Arc;

use fuser::Errno;

use crate::data::{self, floor, lock_write, DataFile};
use crate::sys;

/// The errno of a failed buffered or writeback I/O: the runtime's error carries none,
/// so a failed writeback is judged by the backing file system: `ENOSPC` when it has no
/// room left for an unprivileged user, else `EIO`.
fn errno(df: &DataFile, e: &std::io::Error) -> Errno {
    if let Some(n) = e.raw_os_error() {
        return Errno::from_i32(n);
    }
    // SAFETY: `s` is written by the call; our descriptor.
    let full = unsafe {
        let mut s: libc::statvfs = std::mem::zeroed();
        libc::fstatvfs(df.fd.as_raw_fd(), &mut s) == 0 && s.f_bavail == 0
    };
    if full {
        Errno::ENOSPC
    } else {
        Errno::EIO
    }
}

/// The bytes of `[off, off + size)` up to the end of the file, through the cache.
pub async fn read(df: &DataFile, off: u64, size: u32) -> Result<Vec<u8>, Errno> {
    let end = (off + size as u64).min(df.size());
    if off >= end {
        return Ok(Vec::new());
    }
    let mut out = vec![0u8; (end - off) as usize];
    // A read fails with EIO (never ENOSPC: a reader that found no clean page to read
    // into while the writeback keeps failing gets the writeback's failure as an I/O
    // error, whatever room the backing file system has).
    let n = df
        .file
        .read_buffered(off, &mut out)
        .await
        .map_err(|e| Errno::from_i32(e.raw_os_error().unwrap_or(libc::EIO)))?;
    out.truncate(n);
    Ok(out)
}

/// Write `data` at `off` into the cache (the writer waits at its class's dirty limit);
/// `sync` (`O_SYNC`/`O_DSYNC`): its pages written back and flushed before the reply.
pub async fn write(df: &DataFile, off: u64, data: &[u8], sync: bool) -> Result<usize, Errno> {
    let Some(end) = crate::data::write_end(df, off, data.len())? else {
        return Ok(0);
    };
    let len = data.len() as u64;
    {
        let _guard = lock_write(df, off, end).await;
        let size = df.size();
        if end > size {
            if floor(off) > data::ceil(size) {
                // The bytes between the old end and the write stay a hole.
                df.may_have_holes();
            }
            reserve(df, off, end)?;
        } else if df.holes.load(std::sync::atomic::Ordering::Relaxed)
            && sys::hole_in(df.fd.as_raw_fd(), floor(off), data::ceil(end))
        {
            reserve(df, off, end)?;
        }
        df.file
            .write_buffered(off, data)
            .await
            .map_err(|e| errno(df, &e))?;
        if end > df.size() {
            df.set_size(end);
        }
    }
    if sync {
        df.file
            .write_back_cached(Some((off, len)))
            .await
            .map_err(|e| errno(df, &e))?;
        fix_len(df).await?;
        data::fsync(df, true).await?;
    }
    Ok(data.len())
}

/// Space for a write that extends the file or falls on a hole of it, taken on the
/// backing file system before the write enters the cache (`fallocate` with
/// `KEEP_SIZE`): a full file system says `ENOSPC` to the `write(2)`, as ext4's delayed
/// allocation does, not later to a writeback (which would leave the page dirty and the
/// writer without room). A file system without `fallocate` reserves nothing.
fn reserve(df: &DataFile, off: u64, end: u64) -> Result<(), Errno> {
    let (a0, a1) = (floor(off), data::ceil(end));
    // SAFETY: a plain system call on our descriptor.
    let r = unsafe {
        libc::fallocate(
            df.fd.as_raw_fd(),
            libc::FALLOC_FL_KEEP_SIZE,
            a0 as i64,
            (a1 - a0) as i64,
        )
    };
    match sys::check(r) {
        Ok(_) => Ok(()),
        Err(e) if e == Errno::EOPNOTSUPP => Ok(()),
        Err(e) => Err(e),
    }
}

/// `fsync`/`fdatasync` (see the module documentation).
pub async fn fsync(df: &DataFile, datasync: bool) -> Result<(), Errno> {
    if df.cache && df.writable {
        df.file
            .write_back_cached(None)
            .await
            .map_err(|e| errno(df, &e))?;
        fix_len(df).await?;
    }
    data::fsync(df, datasync).await
}

/// `SEEK_DATA`/`SEEK_HOLE` (what `cp` uses to copy a sparse file): the backing file's
/// extents answer, once the file's dirty pages are on it and it is cut to length — a
/// page still dirty in the cache would otherwise read as a hole.
pub async fn seek(df: &DataFile, offset: i64, whence: i32) -> Result<i64, Errno> {
    if df.writable {
        df.file
            .write_back_cached(None)
            .await
            .map_err(|e| errno(df, &e))?;
        fix_len(df).await?;
    }
    // SAFETY: a plain system call on our descriptor (its position is not used).
    let r = unsafe { libc::lseek(df.fd.as_raw_fd(), offset, whence) };
    if r < 0 {
        Err(sys::last())
    } else {
        Ok(r)
    }
}

/// Cut the backing file back to the file's length if a writeback of its last page
/// made it longer. Holds the range from the end's block onward (no write moving the
/// end runs meanwhile).
pub async fn fix_len(df: &DataFile) -> Result<(), Errno> {
    let _g = loop {
        let size = df.size();
        let g = df.locks.lock(floor(size), u64::MAX).await;
        if floor(df.size()) >= floor(size) {
            break g;
        }
    };
    cut_back(df)
}

/// [`fix_len`] for a caller that holds the range from the end's block onward.
fn cut_back(df: &DataFile) -> Result<(), Errno> {
    let size = df.size();
    let fd = df.fd.as_raw_fd();
    if sys::stat_fd(fd)?.st_size as u64 > size {
        // SAFETY: a plain system call on our descriptor.
        sys::check(unsafe { libc::ftruncate(fd, size as i64) })?;
    }
    Ok(())
}

/// Truncate to `size` through the stack (its cached pages past the end go); the
/// caller holds the range from the new end onward.
pub async fn set_len(df: &DataFile, size: u64) -> Result<(), Errno> {
    df.file.set_len(size).await.map_err(|e| errno(df, &e))
}

/// Every cached page of the file written back and dropped, the backing file at the
/// file's length: the backing file is then the file (before a `fallocate`, which may
/// change its bytes). The caller holds the range from the end's block onward.
pub async fn quiesce(df: &DataFile) -> Result<(), Errno> {
    df.file
        .write_back_cached(None)
        .await
        .map_err(|e| errno(df, &e))?;
    cut_back(df)?;
    df.file.forget_cached(None);
    Ok(())
}

/// The last open of the file ended: its dirty pages written back (as non-critical: the
/// closing task is the daemon's), the backing file cut to its length, the file closed
/// in the stack. Errors are said on stderr (the caller's close returned long ago).
pub async fn close(df: Arc<DataFile>) {
    if df.cache && df.writable {
        let r = match df.file.write_back_cached(None).await {
            Ok(()) => fix_len(&df).await,
            Err(e) => Err(errno(&df, &e)),
        };
        if let Err(e) = r {
            eprintln!(
                "sluice mount: writing back a closed file: {}",
                std::io::Error::from_raw_os_error(i32::from(e))
            );
        }
    }
    // Its pages are of no use to a later open (which gets a new file of the stack).
    df.file.forget_cached(None);
    let _ = df.file.close().await;
}

#[cfg(test)]
#[path = "cached_tests.rs"]
mod tests;
