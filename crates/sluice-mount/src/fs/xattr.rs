//! Extended attributes, on the inode itself (`/proc/self/fd/N` of its descriptor).

use std::ffi::{CString, OsStr};
use std::os::unix::ffi::OsStrExt;

use fuser::Errno;

use crate::node::Node;
use crate::sys::{self, check, proc_path};

fn key(name: &OsStr) -> Result<CString, Errno> {
    CString::new(name.as_bytes()).map_err(|_| Errno::EINVAL)
}

pub fn set(n: &Node, name: &OsStr, value: &[u8], flags: i32) -> Result<(), Errno> {
    let (p, k) = (proc_path(n.raw()), key(name)?);
    // SAFETY: valid C strings and a buffer with its length.
    check(unsafe {
        libc::setxattr(
            p.as_ptr(),
            k.as_ptr(),
            value.as_ptr() as *const libc::c_void,
            value.len(),
            flags,
        )
    })
    .map(drop)
}

/// The value's length and (when `size` > 0) its bytes.
pub fn get(n: &Node, name: &OsStr, size: u32) -> Result<(u32, Vec<u8>), Errno> {
    let (p, k) = (proc_path(n.raw()), key(name)?);
    let mut buf = vec![0u8; size as usize];
    // SAFETY: valid C strings and a buffer with its length.
    let len = unsafe {
        libc::getxattr(
            p.as_ptr(),
            k.as_ptr(),
            buf.as_mut_ptr() as *mut libc::c_void,
            buf.len(),
        )
    };
    if len < 0 {
        return Err(sys::last());
    }
    buf.truncate(len as usize);
    Ok((len as u32, buf))
}

/// The names' list length and (when `size` > 0) its bytes.
pub fn list(n: &Node, size: u32) -> Result<(u32, Vec<u8>), Errno> {
    let p = proc_path(n.raw());
    let mut buf = vec![0u8; size as usize];
    // SAFETY: a valid C string and a buffer with its length.
    let len =
        unsafe { libc::listxattr(p.as_ptr(), buf.as_mut_ptr() as *mut libc::c_char, buf.len()) };
    if len < 0 {
        return Err(sys::last());
    }
    buf.truncate(len as usize);
    Ok((len as u32, buf))
}

pub fn remove(n: &Node, name: &OsStr) -> Result<(), Errno> {
    let (p, k) = (proc_path(n.raw()), key(name)?);
    // SAFETY: valid C strings.
    check(unsafe { libc::removexattr(p.as_ptr(), k.as_ptr()) }).map(drop)
}
