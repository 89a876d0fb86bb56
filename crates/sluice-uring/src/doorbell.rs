//! The doorbell: a ring owner's wake-up line. Another thread that hands it work writes
//! the owner's eventfd; the owner keeps a read of that eventfd pending in its own ring,
//! so the wake-up arrives as a completion like any other and a waiting
//! `io_uring_enter` returns. No wake-up is lost: an eventfd keeps its count until read.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use io_uring::{opcode, squeue, types};

use crate::UringError;

/// `user_data` of a doorbell's pending read (piece tags are below it).
pub const BELL: u64 = u64::MAX;

/// A ring owner's wake-up line: an eventfd that others write to when they give it work.
#[derive(Debug)]
pub struct Doorbell {
    fd: OwnedFd,
}

impl Doorbell {
    /// A new eventfd (non-blocking, closed on exec).
    pub fn new() -> Result<Doorbell, UringError> {
        // SAFETY: plain system call; the result is checked.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(UringError::Doorbell(std::io::Error::last_os_error()));
        }
        // SAFETY: a fresh descriptor we own.
        Ok(Doorbell {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    /// Its descriptor (for the pending read in the owner's ring).
    pub fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Wake the owner of this doorbell.
    pub fn ring(&self) {
        let one: u64 = 1;
        // SAFETY: 8 bytes from a valid u64. An eventfd write fails only on counter
        // overflow (EAGAIN), which still leaves the reader woken.
        unsafe { libc::write(self.raw(), &one as *const u64 as *const libc::c_void, 8) };
    }
}

/// The SQE of a doorbell's pending read: 8 bytes of eventfd `fd` into `*buf`,
/// `user_data` [`BELL`]. The caller keeps `buf` alive (and unmoved) until the read
/// completes or the ring is gone, and re-arms the read after each [`BELL`] completion.
pub fn doorbell_read(fd: RawFd, buf: &mut u64) -> squeue::Entry {
    opcode::Read::new(types::Fd(fd), buf as *mut u64 as *mut u8, 8)
        .build()
        .user_data(BELL)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::new_ring;

    #[test]
    fn a_rung_doorbell_completes_its_pending_read() {
        let bell = Doorbell::new().unwrap();
        let mut ring = new_ring(8).unwrap();
        let mut buf = Box::new(0u64);
        let e = doorbell_read(bell.raw(), &mut buf);
        // SAFETY: `buf` outlives the read (waited for below).
        unsafe { ring.submission().push(&e) }.unwrap();
        ring.submit().unwrap();
        bell.ring();
        bell.ring();
        ring.submit_and_wait(1).unwrap();
        let c = ring.completion().next().expect("the bell's read completed");
        assert_eq!(c.user_data(), BELL);
        assert_eq!(c.result(), 8);
        // The eventfd's count: both rings, read at once.
        assert_eq!(*buf, 2);
    }
}
