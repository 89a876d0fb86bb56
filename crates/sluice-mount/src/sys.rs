//! Thin wrappers over the system calls the pass-through uses: every path is one name
//! relative to a directory descriptor, or `/proc/self/fd/N` of a descriptor we hold
//! (the inode itself, never a path walked again).

use std::ffi::{CString, OsStr};
use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;

use fuser::Errno;

/// The errno of the last failed call.
pub fn last() -> Errno {
    Errno::from_i32(
        io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO),
    )
}

/// An `io::Error`'s errno (EIO when it has none).
pub fn errno_of(e: &io::Error) -> Errno {
    Errno::from_i32(e.raw_os_error().unwrap_or(libc::EIO))
}

/// `r` as a result: −1 → the errno.
pub fn check(r: libc::c_int) -> Result<libc::c_int, Errno> {
    if r < 0 {
        Err(last())
    } else {
        Ok(r)
    }
}

/// A single path component: not empty, no `/`, not `.` or `..`, no NUL. The kernel
/// sends only such names; anything else is refused, so no name can climb out.
pub fn component(name: &OsStr) -> Result<CString, Errno> {
    let b = name.as_bytes();
    if b.is_empty() || b == b"." || b == b".." || b.contains(&b'/') {
        return Err(Errno::EINVAL);
    }
    CString::new(b).map_err(|_| Errno::EINVAL)
}

/// `/proc/self/fd/N` of descriptor `fd` (the inode it holds, whatever its names now).
pub fn proc_path(fd: RawFd) -> CString {
    CString::new(format!("/proc/self/fd/{fd}")).expect("no NUL")
}

/// `openat(dir, name, flags | O_NOFOLLOW | O_CLOEXEC, mode)`.
pub fn openat(dir: RawFd, name: &CString, flags: i32, mode: u32) -> Result<OwnedFd, Errno> {
    // SAFETY: a valid C string; the result is a new descriptor we own.
    let fd = unsafe {
        libc::openat(
            dir,
            name.as_ptr(),
            flags | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            mode as libc::c_uint,
        )
    };
    check(fd).map(|fd| unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Open the inode held by `fd` (an `O_PATH` descriptor) again with `flags`.
pub fn reopen(fd: RawFd, flags: i32) -> Result<OwnedFd, Errno> {
    let p = proc_path(fd);
    // SAFETY: a valid C string; the result is a new descriptor we own. The magic link
    // is the inode itself (no name is resolved).
    let fd = unsafe { libc::open(p.as_ptr(), (flags & !libc::O_NOFOLLOW) | libc::O_CLOEXEC) };
    check(fd).map(|fd| unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `fstatat(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW)`.
pub fn stat_fd(fd: RawFd) -> Result<libc::stat, Errno> {
    // SAFETY: `st` is written by the call; the path is an empty C string.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        check(libc::fstatat(
            fd,
            c"".as_ptr(),
            &mut st,
            libc::AT_EMPTY_PATH | libc::AT_SYMLINK_NOFOLLOW,
        ))?;
        Ok(st)
    }
}

/// `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)`: one component, not followed.
pub fn stat_at(dir: RawFd, name: &std::ffi::CStr) -> Result<libc::stat, Errno> {
    // SAFETY: `st` is written by the call; `name` is a C string.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        check(libc::fstatat(
            dir,
            name.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        ))?;
        Ok(st)
    }
}

/// Whether bytes `from..to` of the file hold a hole (`SEEK_HOLE`; an unwritten extent
/// of `fallocate` counts as one on some file systems — harmless for the caller, which
/// reserves). An error of the call (a file system without `SEEK_HOLE` answers the end)
/// says yes: the caller then reserves, which is always safe.
pub fn hole_in(fd: RawFd, from: u64, to: u64) -> bool {
    // SAFETY: a plain system call on the caller's descriptor (its position is not used).
    let r = unsafe { libc::lseek(fd, from as i64, libc::SEEK_HOLE) };
    r < 0 || (r as u64) < to
}
