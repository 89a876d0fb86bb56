//! A directory's entries (read at `opendir`) and `setattr`'s changes of mode, owner
//! and times, each on the inode's own descriptor.

use std::ffi::OsString;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::{DirEntryExt, FileTypeExt};

use fuser::{Errno, FileType, TimeOrNow};

use super::DirEntry;
use crate::attr::timespec;
use crate::node::Node;
use crate::sys::{self, check, proc_path};

/// The entries of directory `n` (inode number `ino`), `.` and `..` first.
pub fn list(n: &Node, ino: u64) -> Result<Vec<DirEntry>, Errno> {
    let dir = sys::reopen(n.raw(), libc::O_RDONLY | libc::O_DIRECTORY)?;
    let path = format!("/proc/self/fd/{}", dir.as_raw_fd());
    let mut list = vec![
        (ino, FileType::Directory, OsString::from(".")),
        (1, FileType::Directory, OsString::from("..")),
    ];
    for e in std::fs::read_dir(&path).map_err(|e| sys::errno_of(&e))? {
        let e = e.map_err(|e| sys::errno_of(&e))?;
        let t = e.file_type().map_err(|e| sys::errno_of(&e))?;
        let k = if t.is_dir() {
            FileType::Directory
        } else if t.is_symlink() {
            FileType::Symlink
        } else if t.is_fifo() {
            FileType::NamedPipe
        } else if t.is_socket() {
            FileType::Socket
        } else if t.is_char_device() {
            FileType::CharDevice
        } else if t.is_block_device() {
            FileType::BlockDevice
        } else {
            FileType::RegularFile
        };
        list.push((e.ino(), k, e.file_name()));
    }
    Ok(list)
}

/// Change `node`'s mode, owner and times as asked (`None`: unchanged).
pub fn set_attrs(
    node: &Node,
    mode: Option<u32>,
    uid: Option<u32>,
    gid: Option<u32>,
    atime: Option<TimeOrNow>,
    mtime: Option<TimeOrNow>,
) -> Result<(), Errno> {
    let is_link = node.fmt == libc::S_IFLNK;
    let p = proc_path(node.raw());
    if let Some(m) = mode {
        if is_link {
            return Err(Errno::EOPNOTSUPP);
        }
        // SAFETY: a valid C string.
        check(unsafe { libc::fchmodat(libc::AT_FDCWD, p.as_ptr(), m & 0o7777, 0) })?;
    }
    if uid.is_some() || gid.is_some() {
        // SAFETY: a valid descriptor and an empty C string.
        check(unsafe {
            libc::fchownat(
                node.raw(),
                c"".as_ptr(),
                uid.unwrap_or(u32::MAX),
                gid.unwrap_or(u32::MAX),
                libc::AT_EMPTY_PATH | libc::AT_SYMLINK_NOFOLLOW,
            )
        })?;
    }
    if atime.is_some() || mtime.is_some() {
        let ts = [timespec(atime), timespec(mtime)];
        if is_link {
            // A symlink's own times (utimensat AT_SYMLINK_NOFOLLOW): on its O_PATH
            // descriptor itself, never through the link.
            // SAFETY: a valid descriptor, an empty C string and two timespecs.
            check(unsafe {
                libc::utimensat(
                    node.raw(),
                    c"".as_ptr(),
                    ts.as_ptr(),
                    libc::AT_EMPTY_PATH | libc::AT_SYMLINK_NOFOLLOW,
                )
            })?;
        } else {
            // SAFETY: a valid C string and two timespecs.
            check(unsafe { libc::utimensat(libc::AT_FDCWD, p.as_ptr(), ts.as_ptr(), 0) })?;
        }
    }
    Ok(())
}

/// A write by a caller without CAP_FSETID (the kernel's `FUSE_WRITE_KILL_SUIDGID`)
/// clears set-user-ID, and set-group-ID when group execute is set (as the kernel's
/// `should_remove_suid` does on a local file system); the daemon's own write, as root,
/// would keep them. `fd`: the regular file's open backing descriptor (the data file's,
/// which both transports' write paths hold).
pub fn kill_setid_fd(fd: RawFd) -> Result<(), Errno> {
    let st = sys::stat_fd(fd)?;
    let mut kill = st.st_mode & libc::S_ISUID;
    if st.st_mode & (libc::S_ISGID | libc::S_IXGRP) == libc::S_ISGID | libc::S_IXGRP {
        kill |= libc::S_ISGID;
    }
    if kill == 0 {
        return Ok(());
    }
    // SAFETY: a plain system call on the caller's descriptor.
    check(unsafe { libc::fchmod(fd, st.st_mode & 0o7777 & !kill) }).map(drop)
}

/// The target of the symbolic link `n`.
pub(super) fn read_link(n: &Node) -> Result<Vec<u8>, Errno> {
    let mut buf = vec![0u8; libc::PATH_MAX as usize];
    // SAFETY: the buffer is ours and its length given.
    let len = unsafe {
        libc::readlinkat(
            n.raw(),
            c"".as_ptr(),
            buf.as_mut_ptr() as *mut libc::c_char,
            buf.len(),
        )
    };
    if len < 0 {
        return Err(sys::last());
    }
    buf.truncate(len as usize);
    Ok(buf)
}

/// `statvfs` of the backing file system under `n`.
pub(super) fn statvfs(n: &Node) -> Result<libc::statvfs, Errno> {
    // SAFETY: `s` is written by the call.
    unsafe {
        let mut s: libc::statvfs = std::mem::zeroed();
        check(libc::fstatvfs(n.raw(), &mut s))?;
        Ok(s)
    }
}
