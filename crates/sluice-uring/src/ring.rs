//! Ring set-up: the flags a single submitter wants, and the size that never overflows.

use std::io;

use io_uring::squeue::{self, EntryMarker};
use io_uring::{cqueue, types, IoUring};

use crate::{AlignedBuf, UringError};

/// Create a ring with `entries` SQEs (and twice as many CQEs). Tries the flags that
/// make a single-threaded submitter cheaper first — `SINGLE_ISSUER` (only this thread
/// submits), `COOP_TASKRUN` (no interrupt to run completion work), `DEFER_TASKRUN`
/// (that work runs when the owner enters the ring asking for events), Linux 6.1+, with
/// `TASKRUN_FLAG` (the kernel marks the ring when such work waits, so [`submit`] knows
/// to ask) — then plain set-up for older kernels.
pub fn new_ring(entries: u32) -> Result<IoUring, UringError> {
    new_ring_of(entries)
}

/// [`new_ring`] with SQEs of type `S`: 64 bytes ([`squeue::Entry`]) or 128
/// ([`squeue::Entry128`], `IORING_SETUP_SQE128`: what `IORING_OP_URING_CMD` commands
/// with a long argument need, as FUSE over io_uring's; Linux 5.19+).
pub fn new_ring_of<S: EntryMarker>(entries: u32) -> Result<IoUring<S>, UringError> {
    let lean = IoUring::<S>::builder()
        .setup_single_issuer()
        .setup_coop_taskrun()
        .setup_defer_taskrun()
        .setup_taskrun_flag()
        .build(entries);
    let refused = |source: io::Error| UringError::Ring {
        entries,
        hint: ring_hint(&source),
        source,
    };
    match lean {
        Ok(r) => Ok(r),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            IoUring::<S>::builder().build(entries).map_err(refused)
        }
        Err(source) => Err(refused(source)),
    }
}

/// Register `region` cut into `slot_len`-byte slots as `ring`'s fixed buffers (slot
/// `i` is buffer index `i`, as [`AlignedBuf::iovecs`] cuts it); the number of slots.
/// More slots than a buffer index (`u16`) can name is refused with `EINVAL`; the
/// kernel refuses more than the locked-memory limit (`ulimit -l`) allows.
///
/// # Safety
/// `region` must outlive every use of the registration: keep it until the ring is
/// dropped (or its buffers unregistered).
pub unsafe fn register_slots<S: EntryMarker>(
    ring: &IoUring<S>,
    region: &AlignedBuf,
    slot_len: usize,
) -> io::Result<usize> {
    let iov = region.iovecs(slot_len);
    if iov.len() > u16::MAX as usize + 1 {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: the caller keeps the region alive as long as the registration.
    unsafe { ring.submitter().register_buffers(&iov) }?;
    Ok(iov.len())
}

/// Ring entries for a ring that holds at most `cap` commands, plus the read of its
/// doorbell that is always pending: a power of two of at least eight.
pub fn ring_entries(cap: u32) -> u32 {
    (cap + 1).max(8).next_power_of_two()
}

/// Submit what the ring holds and wait for one completion — at most `wait_ns` when
/// given (at least 1 µs), else as long as it takes. A wait that ends without a
/// completion (`ETIME`), a signal (`EINTR`) and a full completion queue or a kernel
/// short of memory for the moment (`EBUSY`, `EAGAIN`: the caller reaps and comes
/// back) are no errors: the owner's loop looks at its completions, doorbell and
/// deadlines after every enter anyway. Any other error is the ring's failure.
pub fn submit_and_wait<S: EntryMarker>(ring: &IoUring<S>, wait_ns: Option<u64>) -> io::Result<()> {
    let r = match wait_ns {
        None => ring.submit_and_wait(1),
        Some(ns) => {
            let ns = ns.max(1_000);
            let ts = types::Timespec::new()
                .sec(ns / 1_000_000_000)
                .nsec((ns % 1_000_000_000) as u32);
            let args = types::SubmitArgs::new().timespec(&ts);
            ring.submitter().submit_with_args(1, &args)
        }
    };
    benign(r)
}

/// Submit what the ring holds without waiting, and post the completions whose work the
/// kernel deferred to this ring (`DEFER_TASKRUN`: a read finished by an interrupt or
/// a worker thread is posted only by an enter that asks for events, which the enter
/// then does, with no minimum). No system call when the ring holds nothing and no such
/// work waits — so an owner that never waits (its tasks runnable at every turn) still
/// sees its completions. `EBUSY`, `EAGAIN` and `EINTR` are no errors (the SQEs stay
/// and go with the next enter).
pub fn submit<S: EntryMarker>(ring: &mut IoUring<S>) -> io::Result<()> {
    let idle = {
        let sq = ring.submission();
        sq.is_empty() && !sq.taskrun()
    };
    if idle {
        return Ok(());
    }
    // io-uring asks for events when the ring is marked (`IORING_SQ_TASKRUN`).
    benign(ring.submit())
}

fn benign(r: io::Result<usize>) -> io::Result<()> {
    match r {
        Ok(_) => Ok(()),
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::ETIME) | Some(libc::EINTR) | Some(libc::EAGAIN) | Some(libc::EBUSY)
            ) =>
        {
            Ok(())
        }
        Err(e) => Err(e),
    }
}

/// The SQE type of a ring: 64 bytes, or 128 (`IORING_SETUP_SQE128`), which also takes
/// the commands that need it (`IORING_OP_URING_CMD` with an 80-byte argument).
pub trait RingSqe: EntryMarker {
    /// Whether the ring's SQEs are 128 bytes.
    const BIG: bool;
    /// `e` as this ring's SQE: `None` on a ring of 64-byte SQEs.
    fn command(e: squeue::Entry128) -> Option<Self>;
}

impl RingSqe for squeue::Entry {
    const BIG: bool = false;
    fn command(_: squeue::Entry128) -> Option<Self> {
        None
    }
}

impl RingSqe for squeue::Entry128 {
    const BIG: bool = true;
    fn command(e: squeue::Entry128) -> Option<Self> {
        Some(e)
    }
}

/// A ring of either SQE size, with 16-byte CQEs.
pub type Ring<S> = IoUring<S, cqueue::Entry>;

/// Why the kernel refused to create a ring, and how to fix it.
pub fn ring_hint(e: &io::Error) -> &'static str {
    match e.raw_os_error() {
        Some(libc::EPERM) | Some(libc::EACCES) => {
            "io_uring is disabled for this process: check /proc/sys/kernel/io_uring_disabled \
             (0 allows it) and the container's seccomp profile"
        }
        Some(libc::ENOSYS) => "the kernel has no io_uring (Linux 5.6 or later is needed)",
        Some(libc::ENOMEM) => {
            "not enough lockable memory: raise the memlock limit (ulimit -l) or use fewer \
             workers or a smaller iodepth"
        }
        Some(libc::EINVAL) => {
            "the kernel refused the ring's size or flags: use a smaller total iodepth per \
             worker (at most 32768 entries) or more --workers"
        }
        Some(libc::EMFILE) | Some(libc::ENFILE) => "too many open files: raise ulimit -n",
        _ => "check that io_uring is available (Linux 5.11 or later) and allowed",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ring_the_kernel_refuses_is_a_clear_set_up_error() {
        // More entries than io_uring allows (32768): the kernel says EINVAL.
        match new_ring(1 << 20) {
            Err(e @ UringError::Ring { .. }) => {
                let msg = e.to_string();
                assert!(
                    msg.contains("cannot create an io_uring with 1048576 entries"),
                    "{msg}"
                );
                assert!(msg.contains("smaller total iodepth"), "{msg}");
            }
            Err(e) => panic!("unexpected error {e}"),
            Ok(_) => panic!("the kernel accepted a ring of 2^20 entries"),
        }
    }

    #[test]
    fn ring_entries_are_a_power_of_two_of_at_least_eight() {
        assert_eq!(ring_entries(1), 8);
        assert_eq!(ring_entries(31), 32);
        assert_eq!(ring_entries(32), 64);
        assert_eq!(ring_entries(255), 256);
    }

    #[test]
    fn a_submit_with_nothing_to_submit_posts_deferred_completions() {
        let mut ring = new_ring(8).unwrap();
        let mut fds = [0; 2];
        // SAFETY: a plain system call filling `fds`.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        let mut buf = [0u8; 8];
        let read = io_uring::opcode::Read::new(types::Fd(fds[0]), buf.as_mut_ptr(), 8)
            .build()
            .user_data(7);
        // SAFETY: `buf` outlives the read (it completes below, before the end).
        unsafe { ring.submission().push(&read) }.unwrap();
        submit(&mut ring).unwrap();
        assert!(ring.completion().is_empty(), "an empty pipe's read waits");
        // The write completes the read: on a DEFER_TASKRUN ring its completion's work
        // waits for this thread's next enter that asks for events.
        // SAFETY: a plain system call on our pipe.
        assert_eq!(unsafe { libc::write(fds[1], b"x".as_ptr().cast(), 1) }, 1);
        submit(&mut ring).unwrap();
        let c = ring
            .completion()
            .next()
            .map(|c| (c.user_data(), c.result()));
        assert_eq!(
            c,
            Some((7, 1)),
            "the read's completion, with nothing submitted"
        );
        assert_eq!(buf[0], b'x');
        // SAFETY: our descriptors.
        unsafe {
            libc::close(fds[0]);
            libc::close(fds[1]);
        }
    }

    #[test]
    fn waits_end_with_a_completion_or_quietly_at_their_bound() {
        let mut ring = new_ring(8).unwrap();
        submit(&mut ring).unwrap(); // nothing to submit
        let nop = io_uring::opcode::Nop::new().build().user_data(7);
        // SAFETY: a NOP touches no memory.
        unsafe { ring.submission().push(&nop) }.unwrap();
        submit_and_wait(&ring, None).unwrap();
        assert_eq!(ring.completion().next().map(|c| c.user_data()), Some(7));
        // Nothing in flight: the shortest bound (1 µs) ends in ETIME, which is no error.
        submit_and_wait(&ring, Some(0)).unwrap();
        assert!(ring.completion().next().is_none());
    }

    /// A ring of 128-byte SQEs takes a 64-byte one's opcodes (widened) and says it is
    /// big; a 64-byte ring has no room for a 128-byte command.
    #[test]
    fn a_ring_of_128_byte_sqes_runs_the_same_opcodes() {
        let mut ring = new_ring_of::<squeue::Entry128>(8).unwrap();
        let nop = squeue::Entry128::from(io_uring::opcode::Nop::new().build().user_data(9));
        // SAFETY: a NOP touches no memory.
        unsafe { ring.submission().push(&nop) }.unwrap();
        submit_and_wait(&ring, None).unwrap();
        assert_eq!(ring.completion().next().map(|c| c.user_data()), Some(9));
        submit(&mut ring).unwrap();
        const { assert!(<squeue::Entry128 as RingSqe>::BIG) };
        const { assert!(!<squeue::Entry as RingSqe>::BIG) };
        assert!(squeue::Entry::command(nop.clone()).is_none());
        assert!(squeue::Entry128::command(nop).is_some());
    }

    #[test]
    fn ring_hints_name_the_cause() {
        let h = ring_hint(&io::Error::from_raw_os_error(libc::EPERM));
        assert!(h.contains("io_uring_disabled"));
        let h = ring_hint(&io::Error::from_raw_os_error(libc::ENOSYS));
        assert!(h.contains("5.6"));
        let h = ring_hint(&io::Error::from_raw_os_error(libc::EMFILE));
        assert!(h.contains("ulimit -n"));
    }
}
