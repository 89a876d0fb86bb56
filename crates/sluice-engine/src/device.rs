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
//! # The port: rings behind a device-wide arbiter
//! The port is the one io_uring layer's [`RingPort`] (`sluice-uring`): a dispatched
//! piece goes to the outbox of the worker whose job thread issued its request (its
//! buffer is registered with that worker's ring), at most `cap` commands are in the
//! rings at once, and beyond it the pieces wait in per-(worker, class) queues that the
//! simulated device's own NVMe arbiter serves (urgent first, then weighted round robin
//! with its burst). The worker writes the SQEs when it next takes the lock; the worker
//! that dispatched a piece rings the owner's [`Doorbell`] when its outbox was empty.
//! The arbiter's weights are the `--wrr` ones until the policy asks for its own
//! (`Policy::wrr_weights`: D2FQ's dynamic H/L ratio).

use sluice_block::BlockLayer;
use sluice_core::Nanos;
use sluice_fio::Owner;
pub(crate) use sluice_uring::{Doorbell, RingPort};

use crate::ptime::PolicyTime;

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
    /// Whose buffer the piece moves.
    pub buf: OutBuf,
    pub op: sluice_core::Op,
    /// A write with force unit access (durable when it completes).
    pub fua: bool,
    /// An atomic write (`RWF_ATOMIC`, fio's `atomic=1`).
    pub atomic: bool,
    /// Device address space offset of the piece.
    pub offset: u64,
    pub len: u32,
}

/// The buffer of an outgoing piece, by the owner of its request ([`Owner`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OutBuf {
    /// A job's request: the worker's request slot (its registered buffer).
    Slot(u32),
    /// The buffered front's own I/O: its buffer's address (0 for a flush) and its
    /// file's base in the address space.
    Front { addr: usize, base: u64 },
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
        self.port.command_done();
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
                let buf = match Owner::of(token) {
                    Owner::Job(slot) => OutBuf::Slot(slot),
                    Owner::Front(seq) => {
                        let f = &mut front
                            .as_mut()
                            .expect("front requests come from the cache")
                            .front;
                        let base = f.device_file(seq).expect("a front request in flight").base;
                        let addr = f
                            .device_buf(seq, p.req.offset)
                            .map_or(0, |b| b.as_mut_ptr() as usize);
                        OutBuf::Front { addr, base }
                    }
                };
                out.push(Outgoing {
                    tag,
                    buf,
                    op: p.req.op,
                    fua: p.req.fua,
                    atomic: p.req.is_atomic_write(),
                    offset: p.req.offset,
                    len: p.req.len,
                });
            },
            wake,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_block::NewRequest;
    use sluice_core::policy::{self, PolicySpec};
    use sluice_core::{Flow, FlowId, IoClass, Op};

    /// A job's write with FUA keeps it on the way to its worker's SQE (the engine once
    /// dropped it), as a flush and a plain write keep theirs.
    #[test]
    fn fua_reaches_the_outgoing_piece() {
        let flows = [Flow {
            id: FlowId(0),
            name: "f".into(),
            weight: 1,
        }];
        let policy = policy::build(&"none".parse::<PolicySpec>().unwrap()).unwrap();
        let mut dev = DevState {
            block: BlockLayer::with_meter(policy, &flows, PolicyTime::new(), 8),
            port: RingPort::new(1, 8, 32, sluice_uring::D2FQ_WEIGHTS),
            front: None,
        };
        let reqs = [(Op::Write, true), (Op::Write, false), (Op::Flush, false)];
        for (i, &(op, fua)) in reqs.iter().enumerate() {
            let r = NewRequest {
                flow: FlowId(0),
                op,
                offset: if op == Op::Flush { 0 } else { 4096 * i as u64 },
                len: if op == Op::Flush { 0 } else { 4096 },
                class: IoClass::Normal,
                hwq: 0,
                fua,
                placement: 0,
                atomic: false,
            };
            dev.block.submit(0, r, i as u64);
        }
        let (mut out, mut wake) = (Vec::new(), Vec::new());
        dev.pump_and_take(0, 0, &mut out, &mut wake);
        let got: Vec<(Op, bool, OutBuf)> = out.iter().map(|o| (o.op, o.fua, o.buf)).collect();
        assert_eq!(
            got,
            vec![
                (Op::Write, true, OutBuf::Slot(0)),
                (Op::Write, false, OutBuf::Slot(1)),
                (Op::Flush, false, OutBuf::Slot(2))
            ]
        );
    }
}
