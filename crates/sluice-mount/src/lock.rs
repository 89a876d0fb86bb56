//! Byte-range locks of one backing file, held across awaits by the runtime's tasks.
//!
//! The backing files are opened with `O_DIRECT`, so a write that does not cover whole
//! blocks is a read-modify-write of its first and last blocks, and a write past the end
//! of the file leaves the file a block longer until it is cut back. Two such writes
//! touching the same block, or a write racing a truncation at the end, would lose one
//! another's bytes: each takes the range it reads and writes (to the end of the
//! address space when it moves the end of the file) before it starts, and overlapping
//! ranges wait their turn (an aligned write too, so a read-modify-write never puts back
//! old bytes of a block it covers). Reads take none: a block is written whole.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

#[derive(Debug, Default)]
struct State {
    held: Vec<(u64, u64, u64)>,
    waiting: Vec<Waker>,
    next: u64,
}

/// The ranges held on one file.
#[derive(Debug, Default)]
pub struct RangeLocks {
    st: Mutex<State>,
}

impl RangeLocks {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.st.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Wait for `[start, end)` and hold it until the guard is dropped.
    pub fn lock(self: &Arc<Self>, start: u64, end: u64) -> Acquire {
        Acquire {
            locks: self.clone(),
            start,
            end,
        }
    }
}

/// The future of [`RangeLocks::lock`].
#[derive(Debug)]
pub struct Acquire {
    locks: Arc<RangeLocks>,
    start: u64,
    end: u64,
}

impl Future for Acquire {
    type Output = RangeGuard;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<RangeGuard> {
        let mut st = self.locks.state();
        if st
            .held
            .iter()
            .any(|&(s, e, _)| s < self.end && self.start < e)
        {
            st.waiting.push(cx.waker().clone());
            return Poll::Pending;
        }
        let id = st.next;
        st.next += 1;
        st.held.push((self.start, self.end, id));
        Poll::Ready(RangeGuard {
            locks: self.locks.clone(),
            id,
        })
    }
}

/// A held range; dropping it lets the waiters look again.
#[derive(Debug)]
pub struct RangeGuard {
    locks: Arc<RangeLocks>,
    id: u64,
}

impl Drop for RangeGuard {
    fn drop(&mut self) {
        let waiting = {
            let mut st = self.locks.state();
            st.held.retain(|h| h.2 != self.id);
            std::mem::take(&mut st.waiting)
        };
        for w in waiting {
            w.wake();
        }
    }
}
