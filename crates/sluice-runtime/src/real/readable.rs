//! A task's wait for a descriptor of the outside to become readable, on its own core's
//! ring (`IORING_OP_POLL_ADD`, one shot): what lets a core serve another source of
//! work beside its I/O — another io_uring whose completion queue it reaps (a FUSE
//! ring's queue), a socket — without a thread of its own that would wake the core
//! through its doorbell. The real world only: in simulation there is no ring.
//!
//! The wait is registered in the core thread's list when the future is first polled;
//! the core writes its SQE with the turn's others ([`super::CoreRing::push`]) and
//! wakes the task with the completion ([`super::CoreRing::enter`]).

use std::cell::RefCell;
use std::future::Future;
use std::os::fd::RawFd;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

/// One wait: its result (revents, or a negative errno) once the ring answered, and
/// the waker of the task.
#[derive(Default)]
pub(crate) struct PollState {
    st: Mutex<(Option<i32>, Option<Waker>)>,
}

impl PollState {
    /// The ring answered `res`.
    pub(crate) fn done(&self, res: i32) {
        let w = {
            let mut s = self.st.lock().unwrap_or_else(|e| e.into_inner());
            s.0 = Some(res);
            s.1.take()
        };
        if let Some(w) = w {
            w.wake();
        }
    }
}

/// Waits not yet written to a ring: the descriptor and the wait.
pub(crate) type Waits = Vec<(RawFd, Arc<PollState>)>;

thread_local! {
    /// This thread's core: the waits not yet written to its ring; `None` on a thread
    /// that is no core of a real stack.
    pub(crate) static WAITS: RefCell<Option<Waits>> = const { RefCell::new(None) };
}

/// Wait until `fd` is readable (`POLLIN`), polled by the ring of the core the task
/// runs on. It resolves to the `revents` the kernel gave, or an error: the kernel
/// refused the poll, or the task is not on a core of a real stack (simulation:
/// `Unsupported`). `fd` must stay open until the future resolves; a future dropped
/// before leaves its poll in the ring, whose answer then wakes nobody.
pub fn readable(fd: RawFd) -> Readable {
    Readable { fd, state: None }
}

/// The future of [`readable`].
pub struct Readable {
    fd: RawFd,
    state: Option<Arc<PollState>>,
}

impl std::fmt::Debug for Readable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Readable")
            .field("fd", &self.fd)
            .field("asked", &self.state.is_some())
            .finish()
    }
}

impl Future for Readable {
    type Output = std::io::Result<u32>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let fd = self.fd;
        let state = match &self.state {
            Some(s) => s.clone(),
            None => {
                let s = Arc::new(PollState::default());
                s.st.lock().unwrap_or_else(|e| e.into_inner()).1 = Some(cx.waker().clone());
                let queued = WAITS.with(|w| match &mut *w.borrow_mut() {
                    Some(v) => {
                        v.push((fd, s.clone()));
                        true
                    }
                    None => false,
                });
                if !queued {
                    return Poll::Ready(Err(std::io::Error::new(
                        std::io::ErrorKind::Unsupported,
                        "readable: not on a core of a real stack",
                    )));
                }
                self.state = Some(s);
                return Poll::Pending;
            }
        };
        let mut s = state.st.lock().unwrap_or_else(|e| e.into_inner());
        match s.0 {
            Some(r) if r < 0 => Poll::Ready(Err(std::io::Error::from_raw_os_error(-r))),
            Some(r) => Poll::Ready(Ok(r as u32)),
            None => {
                s.1 = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}
