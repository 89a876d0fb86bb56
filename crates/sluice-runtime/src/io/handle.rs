//! The I/O futures: [`IoHandle`] (an I/O in flight, with its buffer) and [`IoWait`]
//! (another task waiting for its end).
//!
//! On real files a handle is collected without the runtime's lock (`io/batch.rs`): the
//! result comes from the table of the core that issued it (a handle is not `Send`: it
//! stays on that core), the sample and the slot's release go into the core's batch. In
//! simulation, and for a poll before the completion, it takes the lock.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use sluice_metrics::Sample;

use super::{batch, Port};
use crate::buffer::DmaBuffer;
use crate::deps::Dep;
use crate::exec::{self, with};

/// An I/O in flight. Await it for `(result, buffer)`; dropping it unawaited lets the
/// I/O finish and discards its buffer.
#[derive(Debug)]
#[must_use = "an I/O handle does nothing unless awaited"]
pub struct IoHandle {
    slot: u32,
    /// The slot's generation when the I/O was issued.
    gen: u32,
    early: Option<(io::Result<usize>, DmaBuffer)>,
    collected: bool,
    /// The task was made a waiter at submission: the first poll is pending at once.
    waiting: bool,
    /// Real files: the buffer, kept here while the kernel uses it (its memory does not
    /// move); the slot keeps it in simulation (the device's data is copied into it at
    /// completion) and when the handle is dropped before the I/O ends.
    buf: Option<DmaBuffer>,
    /// Real files: the core that issued it (its table gets the result).
    core: u16,
    /// Not `Send`: a handle stays on the core that issued it (where its I/O waits in the
    /// core's batch until the next flush, and where its result is written); another
    /// core's task waits with an [`IoWait`].
    _here: std::marker::PhantomData<*const ()>,
}

impl IoHandle {
    /// A handle that has its result already (the I/O was refused).
    pub(super) fn early(r: io::Result<usize>, buf: DmaBuffer) -> IoHandle {
        IoHandle {
            slot: u32::MAX,
            gen: 0,
            early: Some((r, buf)),
            collected: true,
            waiting: false,
            buf: None,
            core: exec::ALL_CORES,
            _here: std::marker::PhantomData,
        }
    }

    /// Simulation: an I/O submitted under the lock (its buffer in the slot).
    pub(super) fn started(slot: u32, gen: u32, awaited: bool) -> IoHandle {
        IoHandle {
            slot,
            gen,
            early: None,
            collected: false,
            waiting: awaited,
            buf: None,
            core: exec::ALL_CORES,
            _here: std::marker::PhantomData,
        }
    }

    /// Real files: an I/O in this core's batch, in reserved slot `slot`.
    pub(super) fn batched(slot: u32, gen: u32, buf: DmaBuffer, awaited: bool) -> IoHandle {
        IoHandle {
            slot,
            gen,
            early: None,
            collected: false,
            waiting: awaited,
            buf: Some(buf),
            core: exec::my_core(),
            _here: std::marker::PhantomData,
        }
    }

    /// A waiter another task can await for the end of this I/O (without its buffer).
    pub fn waiter(&self) -> IoWait {
        let gen = if self.slot == u32::MAX {
            0
        } else {
            with(|inner, _| inner.io.slots[self.slot as usize].gen)
        };
        IoWait {
            slot: self.slot,
            gen,
        }
    }

    /// Real files: the result from the issuing core's table, without the lock. `None`
    /// (take the lock): not completed — a poll before the completion, which is rare (a
    /// task awaiting its I/O is polled again when the completion wakes it), goes
    /// through the lock to register the task as its waiter again, as before — or
    /// refused at the flush (its error is in the slot).
    fn collect_here(&mut self) -> Option<(io::Result<usize>, DmaBuffer)> {
        if self.buf.is_none() || exec::my_core() != self.core {
            return None;
        }
        let t = exec::current_task();
        let r = batch::take_ready(self.slot, self.gen)?;
        let f = r.done?;
        batch::collected(
            t,
            self.slot,
            Sample {
                job: r.job,
                thread: 0,
                op: r.op,
                class: f.class,
                bytes: r.len,
                submit_ns: f.submit_ns,
                admit_ns: f.admit_ns,
                dispatch_ns: f.dispatch_ns,
                device_done_ns: f.device_done_ns,
                // The clock, as the lock's path reads it.
                reaped_ns: exec::real_clock(),
                ok: f.ok,
            },
        );
        let res = if f.ok {
            Ok(r.n)
        } else {
            Err(kernel_error(r.op, r.len, r.n))
        };
        self.collected = true;
        Some((res, self.buf.take().expect("checked")))
    }
}

/// The error of a failed I/O on real files: the errno the kernel returned (`errno`, 0
/// when unknown) with its kind, and what the I/O was.
fn kernel_error(op: sluice_core::Op, len: u32, errno: usize) -> io::Error {
    if errno == 0 || errno > i32::MAX as usize {
        return io::Error::other(format!(
            "{op} of {len} bytes failed: the kernel returned an error for it"
        ));
    }
    let e = io::Error::from_raw_os_error(errno as i32);
    io::Error::new(e.kind(), format!("{op} of {len} bytes failed: {e}"))
}

/// Waits for the end of another task's I/O ([`IoHandle::waiter`]); a critical task
/// waiting promotes the request (RCP's inheritance through outstanding I/O).
#[derive(Clone, Copy, Debug)]
pub struct IoWait {
    slot: u32,
    gen: u32,
}

impl IoWait {
    pub(crate) fn parts(self) -> (u32, u32) {
        (self.slot, self.gen)
    }

    pub(crate) fn from_parts(slot: u32, gen: u32) -> IoWait {
        IoWait { slot, gen }
    }

    /// Whether the I/O succeeded, once it has completed and while its result has not
    /// been collected (`None` otherwise).
    pub(crate) fn outcome(self) -> Option<bool> {
        with(|inner, _| {
            let s = inner.io.slots.get(self.slot as usize)?;
            (s.live && s.gen == self.gen).then_some(s.done?.ok)
        })
    }
}

/// Register task `t` as a waiter of slot `s` and record the dependency; `true` when
/// the I/O has ended already.
pub(super) fn wait_on(inner: &mut exec::Inner, t: u32, s: u32, gen: u32) -> bool {
    let slot = &mut inner.io.slots[s as usize];
    if !slot.live || slot.gen != gen || slot.done.is_some() {
        inner.unblock(t);
        return true;
    }
    if !slot.waiters.contains(&t) {
        slot.waiters.push(t);
    }
    inner.block_on(t, Dep::Io(s));
    false
}

impl Future for IoWait {
    type Output = ();
    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<()> {
        if self.slot == u32::MAX {
            return Poll::Ready(());
        }
        with(|inner, t| {
            if wait_on(inner, t, self.slot, self.gen) {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
    }
}

impl Future for IoHandle {
    type Output = (io::Result<usize>, DmaBuffer);
    fn poll(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Self::Output> {
        if let Some(r) = self.early.take() {
            return Poll::Ready(r);
        }
        if std::mem::take(&mut self.waiting) {
            return Poll::Pending;
        }
        if let Some(r) = self.collect_here() {
            return Poll::Ready(r);
        }
        let (s, gen) = (self.slot, self.gen);
        let mut held = self.buf.take();
        let out = with(|inner, t| {
            if !wait_on(inner, t, s, gen) {
                return Err(());
            }
            let io = &mut inner.io;
            let slot = &mut io.slots[s as usize];
            let buf = slot
                .buf
                .take()
                .or_else(|| held.take())
                .expect("buffer kept until collected");
            if let Some(e) = slot.refused.take() {
                io.release(s);
                return Ok((Err(e), buf));
            }
            // Done: the sample is taken now, when a waiting task runs again (on real
            // files the clock is read: the turn's time is that of the completion's
            // handling, and the wait after it is the "after device" part).
            let now = match &io.port {
                Port::Real(p) => p.clock().max(inner.now),
                Port::Sim(_) => inner.now,
            };
            let slot = &mut io.slots[s as usize];
            let f = slot.done.expect("ended");
            let (op, len, job, n) = (slot.op, slot.len, slot.job, slot.n);
            io.release(s);
            io.collector.record(&Sample {
                job,
                thread: 0,
                op,
                class: f.class,
                bytes: len,
                submit_ns: f.submit_ns,
                admit_ns: f.admit_ns,
                dispatch_ns: f.dispatch_ns,
                device_done_ns: f.device_done_ns,
                reaped_ns: now,
                ok: f.ok,
            });
            let r = if f.ok {
                Ok(n)
            } else if io.is_real() {
                Err(kernel_error(op, len, n))
            } else {
                Err(io::Error::other(format!(
                    "{op} of {len} bytes failed on the simulated device (media error or timeout)"
                )))
            };
            Ok((r, buf))
        });
        match out {
            Ok(r) => {
                self.collected = true;
                Poll::Ready(r)
            }
            Err(()) => {
                self.buf = held;
                Poll::Pending
            }
        }
    }
}

impl Drop for IoHandle {
    fn drop(&mut self) {
        if self.collected || self.slot == u32::MAX {
            return;
        }
        let (s, gen) = (self.slot, self.gen);
        let mut buf = self.buf.take();
        let ran = exec::try_with(|inner, _| {
            let slot = &mut inner.io.slots[s as usize];
            if !slot.live || slot.gen != gen {
                return;
            }
            if slot.done.is_some() {
                inner.io.release(s);
            } else {
                // The buffer stays with the slot until the I/O ends.
                slot.orphan = true;
                if slot.buf.is_none() {
                    slot.buf = buf.take();
                }
            }
        });
        if ran.is_none() {
            if let Some(b) = buf {
                // No runtime to hand it to, and the kernel may still use it: leaked
                // rather than freed under a read in flight.
                std::mem::forget(b);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_io_names_the_kernels_errno() {
        let e = kernel_error(sluice_core::Op::Write, 4096, libc::ENOSPC as usize);
        assert_eq!(e.kind(), io::ErrorKind::StorageFull);
        assert!(e.to_string().contains("write of 4096 bytes failed"), "{e}");
        assert!(e.to_string().contains("No space left on device"), "{e}");
        let e = kernel_error(sluice_core::Op::Read, 512, 0);
        assert!(
            e.to_string().contains("the kernel returned an error"),
            "{e}"
        );
    }
}
