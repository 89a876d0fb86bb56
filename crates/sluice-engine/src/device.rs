//! The real device as the workers share it: the one block layer (sluice-block) and the
//! port that feeds the workers' rings, under one lock.
//!
//! # Why one block layer per device, under a lock
//! A policy's device-wide state — D2FQ's global virtual time and the flows' virtual
//! times, LD's one token pool, MQFQ's V and its depth D, RCP's admission slots and its
//! one outstanding non-critical I/O, the in-service queue of the timeslice schedulers
//! (BFQ, CFQ, FIOS, Quanta) — must be one state whatever the number of workers. The
//! engine therefore keeps **one** [`BlockLayer`] per device (the same component the
//! simulator drives) and the workers take turns at it under one mutex, as the kernel's
//! schedulers take their per-device lock (mq-deadline's `dd->lock`, BFQ's
//! `bfqd->lock`). A worker takes the lock about twice per loop turn (once for the
//! completions it reaped, once for the requests its job threads issued), never per
//! I/O, and never around a system call.
//!
//! # The port: rings behind a device-wide WRR arbiter
//! A dispatched piece belongs to the worker whose job thread issued its request (its
//! buffer is registered with that worker's ring): [`RingPort`] puts its tag in that
//! worker's outbox, and the worker writes the SQE when it next takes the lock. The
//! worker that dispatched it — any worker, since the policy is device-wide — wakes
//! the owner through its eventfd when its outbox was empty.
//!
//! At most `cap` commands are in the rings at once (device-wide: the stand-in for the
//! controller's command slots); beyond it, pieces wait in the software WRR arbiter
//! ([`Arbiter`]: urgent first, then high/medium/low by weight) and go out as
//! completions free room. The arbiter's weights are the `--wrr` ones until the policy
//! asks for its own (`Policy::wrr_weights`: D2FQ's dynamic H/L ratio), which the port
//! applies from then on.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use sluice_block::{BlockLayer, DevicePort};
use sluice_core::policy::Dispatch;
use sluice_core::{Nanos, QueueClass};

use crate::arbiter::Arbiter;
use crate::error::EngineError;
use crate::ptime::PolicyTime;

/// The port between the block layer and the workers' rings (shared with the
/// application runtime's thread-per-core backend, whose cores are its workers).
#[derive(Debug)]
pub struct RingPort {
    arb: Arbiter,
    /// Most commands in all rings together.
    cap: u32,
    /// Commands in the rings now (handed to an outbox and not yet completed).
    in_rings: u32,
    max_inflight: u32,
    /// Per worker: piece tags to write as SQEs.
    outbox: Vec<Vec<u32>>,
    /// Per worker: its eventfd was written since it last drained its outbox.
    notified: Vec<bool>,
    /// Commands sent to the rings per queue class (urgent, high, medium, low).
    pub fetched: [u64; 4],
    /// Commands that went straight to an outbox (nothing staged, room under the cap).
    pub fast_path: u64,
    /// The weights the arbiter uses now.
    pub weights: [u32; 3],
}

impl RingPort {
    /// A port for `workers` rings holding at most `cap` commands together; the block
    /// layer may have `max_inflight` pieces dispatched; `weights` are the arbiter's
    /// high/medium/low weights until the policy sets its own.
    pub fn new(workers: usize, cap: u32, max_inflight: u32, weights: [u32; 3]) -> Self {
        RingPort {
            arb: Arbiter::new(max_inflight as usize, weights),
            cap,
            in_rings: 0,
            max_inflight,
            outbox: (0..workers)
                .map(|_| Vec::with_capacity(max_inflight as usize))
                .collect(),
            notified: vec![false; workers],
            fetched: [0; 4],
            fast_path: 0,
            weights,
        }
    }

    /// Most commands in all rings together.
    pub fn cap(&self) -> u32 {
        self.cap
    }

    /// A command left a ring (its CQE was reaped): feed the rings from the arbiter.
    pub fn command_done<M: sluice_block::Meter>(&mut self, block: &BlockLayer<M>) {
        self.in_rings -= 1;
        while self.in_rings < self.cap {
            let Some((tag, class)) = self.arb.pop() else {
                break;
            };
            let owner = block.piece(tag).req.hwq as usize;
            self.send(owner, tag, class);
        }
    }

    /// Hand worker `me`'s outbox to `f` (piece tags, in dispatch order) and empty it;
    /// push to `wake` the other workers whose outbox turned non-empty since they last
    /// looked (their doorbells are to be rung, outside the lock).
    pub fn take_outbox(&mut self, me: usize, mut f: impl FnMut(u32), wake: &mut Vec<usize>) {
        for &tag in &self.outbox[me] {
            f(tag);
        }
        self.outbox[me].clear();
        self.notified[me] = false;
        for w in 0..self.outbox.len() {
            if w != me && !self.outbox[w].is_empty() && !self.notified[w] {
                self.notified[w] = true;
                wake.push(w);
            }
        }
    }

    #[inline]
    fn send(&mut self, owner: usize, tag: u32, class: QueueClass) {
        self.in_rings += 1;
        self.fetched[class.index()] += 1;
        self.outbox[owner].push(tag);
    }
}

impl DevicePort for RingPort {
    fn max_inflight(&self) -> u32 {
        self.max_inflight
    }

    /// Never refuses: the arbiter stages whatever the rings cannot take yet.
    fn try_submit(&mut self, _now_ns: Nanos, tag: u32, d: &Dispatch) -> bool {
        if self.arb.staged() == 0 && self.in_rings < self.cap {
            self.fast_path += 1;
            self.send(d.req.hwq as usize, tag, d.queue);
        } else {
            self.arb.push(tag, d.queue);
        }
        true
    }

    fn set_wrr_weights(&mut self, weights: [u32; 3]) {
        self.weights = weights;
        self.arb.set_weights(weights);
    }
}

/// The device state the workers share under one lock.
#[derive(Debug)]
pub(crate) struct DevState {
    pub block: BlockLayer<PolicyTime>,
    pub port: RingPort,
    /// The page cache of buffered jobs, if any job is.
    pub front: Option<crate::buffered::EngineFront>,
}

/// The SQE a worker writes for one piece, copied out of the shared state.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Outgoing {
    pub tag: u32,
    /// The worker's request slot (its buffer).
    pub slot: u32,
    pub op: sluice_core::Op,
    /// Device address space offset of the piece.
    pub offset: u64,
    pub len: u32,
    /// A piece of the page cache's own I/O: its buffer's address (0 for a flush) and
    /// its file's base; `None` for a job's request (its slot's buffer).
    pub front: Option<(usize, u64)>,
}

impl DevState {
    /// Piece `tag` completed in its owner's ring: the block layer is told, the port
    /// feeds the rings. Returns the finished parent, if this was its last piece.
    pub(crate) fn complete(
        &mut self,
        now_ns: Nanos,
        tag: u32,
        ok: bool,
    ) -> Option<sluice_block::Finished> {
        let f = self.block.piece_done(now_ns, tag, ok);
        self.port.command_done(&self.block);
        f
    }

    /// Pump the block layer and move worker `me`'s outbox into `out`; returns the other
    /// workers to wake (their outbox turned non-empty since they last looked).
    pub(crate) fn pump_and_take(
        &mut self,
        now_ns: Nanos,
        me: usize,
        out: &mut Vec<Outgoing>,
        wake: &mut Vec<usize>,
    ) {
        self.block.pump(now_ns, &mut self.port);
        let block = &self.block;
        let front = &mut self.front;
        self.port.take_outbox(
            me,
            |tag| {
                let p = block.piece(tag);
                let token = block.request(p.req.id).token;
                let front = (token & sluice_cache::front::FRONT_TOKEN != 0).then(|| {
                    let f = &mut front
                        .as_mut()
                        .expect("front requests come from the cache")
                        .front;
                    let base = f
                        .device_file(token)
                        .expect("a front request in flight")
                        .base;
                    let buf = f
                        .device_buf(token, p.req.offset)
                        .map_or(0, |b| b.as_mut_ptr() as usize);
                    (buf, base)
                });
                out.push(Outgoing {
                    tag,
                    slot: token as u32,
                    op: p.req.op,
                    offset: p.req.offset,
                    len: p.req.len,
                    front,
                });
            },
            wake,
        );
    }
}

/// A worker's wake-up line: an eventfd that other workers write to when they put
/// pieces in its outbox; the worker keeps a read of it pending in its ring.
#[derive(Debug)]
pub struct Doorbell {
    fd: OwnedFd,
}

impl Doorbell {
    /// A new eventfd.
    pub fn new() -> Result<Doorbell, EngineError> {
        // SAFETY: plain system call; the result is checked.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(EngineError::Doorbell(std::io::Error::last_os_error()));
        }
        // SAFETY: a fresh descriptor we own.
        Ok(Doorbell {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    /// Its descriptor (for the pending read in the owner's ring).
    pub fn raw(&self) -> i32 {
        self.fd.as_raw_fd()
    }

    /// Wake the worker that owns this doorbell.
    pub fn ring(&self) {
        let one: u64 = 1;
        // SAFETY: 8 bytes from a valid u64. An eventfd write fails only on counter
        // overflow (EAGAIN), which still leaves the reader woken.
        unsafe { libc::write(self.raw(), &one as *const u64 as *const libc::c_void, 8) };
    }
}
