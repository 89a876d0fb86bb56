//! Zone write locking for a zoned device, after Linux's mq-deadline (`blk_req_zone_write_trylock`,
//! `deadline_fifo_request` skipping writes to locked zones): a sequential-write-required
//! zone takes its writes at the write pointer only, so at most one write piece is in
//! flight per zone, and a zone's writes leave in the order they were submitted (the
//! order the issuer assigned their write-pointer offsets in).
//!
//! It sits between every policy and the port: a write piece the policy dispatches is
//! sent on when its zone is unlocked and it is the zone's next piece in submission
//! order; otherwise it is parked, and sent (ahead of the policy's next dispatch) when
//! the piece before it completes. Reads, flushes and trims pass. The policy sees a
//! parked piece as dispatched; only the device sees it later.

use sluice_core::policy::Dispatch;
use sluice_core::{Op, ReqId, Request};
use std::collections::{HashMap, VecDeque};

/// One zone's writes.
#[derive(Debug, Default)]
struct ZoneQ {
    /// Writes submitted and not yet wholly dispatched, in submission order:
    /// (request, offset, length).
    order: VecDeque<(ReqId, u64, u32)>,
    /// Bytes of the first of `order` sent to the device.
    sent: u64,
    /// A write piece of the zone is in flight (the zone's write lock).
    locked: bool,
    /// Pieces the policy dispatched out of turn.
    parked: Vec<Dispatch>,
}

/// The zone write locks of a zoned device's block layer.
#[derive(Debug)]
pub(crate) struct ZoneLock {
    zone_size: u64,
    zones: HashMap<u64, ZoneQ>,
    /// Parked pieces whose turn came, sent before the policy is asked again.
    pub(crate) ready: VecDeque<Dispatch>,
    /// Pieces parked so far (a counter for tests and stats).
    pub(crate) parked: u64,
}

impl ZoneLock {
    pub(crate) fn new(zone_size: u64) -> ZoneLock {
        ZoneLock {
            zone_size: zone_size.max(1),
            zones: HashMap::new(),
            ready: VecDeque::new(),
            parked: 0,
        }
    }

    fn zone(&self, offset: u64) -> u64 {
        offset / self.zone_size
    }

    /// A request was submitted: a write takes its place in its zone's order.
    pub(crate) fn submitted(&mut self, r: &Request) {
        if r.op != Op::Write {
            return;
        }
        let z = self.zone(r.offset);
        self.zones
            .entry(z)
            .or_default()
            .order
            .push_back((r.id, r.offset, r.len));
    }

    /// Whether piece `d` may go to the device now (it then holds its zone's lock);
    /// if not, it is parked.
    pub(crate) fn admit(&mut self, d: Dispatch) -> Option<Dispatch> {
        if d.req.op != Op::Write {
            return Some(d);
        }
        let z = self.zone(d.req.offset);
        let q = self.zones.entry(z).or_default();
        if Self::turn(q, &d) {
            Self::take(q, &d);
            Some(d)
        } else {
            q.parked.push(d);
            self.parked += 1;
            None
        }
    }

    /// Whether `d` is the zone's next piece and the zone is unlocked.
    fn turn(q: &ZoneQ, d: &Dispatch) -> bool {
        !q.locked
            && q.order
                .front()
                .is_some_and(|&(id, off, _)| id == d.req.id && off + q.sent == d.req.offset)
    }

    /// `d` goes to the device: lock the zone, move on in its order.
    fn take(q: &mut ZoneQ, d: &Dispatch) {
        q.locked = true;
        q.sent += d.req.len as u64;
        let (_, _, len) = *q.order.front().expect("turn checked the front");
        if q.sent >= len as u64 {
            q.order.pop_front();
            q.sent = 0;
        }
    }

    /// A piece completed: a write unlocks its zone, and the zone's next piece, if
    /// parked, becomes ready.
    pub(crate) fn done(&mut self, r: &Request) {
        if r.op != Op::Write {
            return;
        }
        let z = self.zone(r.offset);
        let Some(q) = self.zones.get_mut(&z) else {
            return;
        };
        q.locked = false;
        if let Some(i) = q.parked.iter().position(|d| Self::turn(q, d)) {
            let d = q.parked.swap_remove(i);
            Self::take(q, &d);
            self.ready.push_back(d);
        } else if q.order.is_empty() && q.parked.is_empty() {
            self.zones.remove(&z);
        }
    }
}
