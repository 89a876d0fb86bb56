//! [`RingPort`]: the block layer's port onto a set of io_uring rings — the engine's
//! workers, the runtime's cores — one ring per owner, behind one device-wide cap and
//! the NVMe arbiter.
//!
//! A dispatched piece belongs to the owner whose thread issued its request (its
//! buffer is that owner's, registered with that ring): its tag goes to that owner's
//! outbox, and the owner writes the SQE ([`crate::sqe()`]) when it next takes its turn.
//! The thread that dispatched it — any owner, since the block layer is device-wide —
//! wakes the owner through its [`Doorbell`](crate::Doorbell) when its outbox turned
//! non-empty.
//!
//! # The arbiter in front of the rings
//! At most `cap` commands are in the rings at once (device-wide: the stand-in for the
//! controller's command slots). Files and most devices offer no NVMe arbitration, so
//! the port does the controller's part: every piece lands in the submission queue of
//! (its owner, its queue class) — as an NVMe driver gives each core a queue per class —
//! and while the rings have room the device's own arbiter ([`sluice_device::Arbiter`],
//! the one the simulated controller fetches with) picks the queue the next command
//! leaves: urgent first, then high, medium and low by their weights (commands per
//! round), the owners of one class taking turns of up to [`BURST`] commands. A policy's
//! queue classes thus mean the same on a file as on the simulated device.
//!
//! The weights are the given ones until the policy asks for its own
//! (`Policy::wrr_weights`: D2FQ's dynamic H/L ratio), applied as the simulated device
//! applies Set Features "Arbitration": the round in progress goes on, a class's credits
//! capped by its new weight.

use sluice_block::DevicePort;
use sluice_core::policy::Dispatch;
use sluice_core::Nanos;
#[cfg(test)]
use sluice_core::QueueClass;
use sluice_device::{sq_id, Arbiter, Arbitration, Burst};

/// The D2FQ authors' default weights (high, medium, low) for base b = 6:
/// L = 256/b, M = L·⌈√b⌉, H = L·b ([`Arbitration::d2fq`]).
pub const D2FQ_WEIGHTS: [u32; 3] = [252, 126, 42];

/// The arbitration burst of the port's arbiter: 8, as the simulator's `--arbitration
/// wrr` and the `zssd` profile.
pub const BURST: Burst = Burst::Limited(8);

/// No tag (the end of a queue).
const NIL: u32 = u32::MAX;

/// The port between the block layer and the owners' rings.
#[derive(Debug)]
pub struct RingPort {
    arb: Arbiter,
    owners: u16,
    /// Per submission queue (`owner·4 + class`): its first and last staged tag.
    head: Vec<u32>,
    tail: Vec<u32>,
    /// By tag: the next staged tag of its queue.
    next: Vec<u32>,
    /// Tags staged, in all queues.
    staged: u32,
    /// Most commands in all rings together.
    cap: u32,
    /// Commands in the rings now (handed to an outbox and not yet completed).
    in_rings: u32,
    max_inflight: u32,
    /// Per owner: piece tags to write as SQEs.
    outbox: Vec<Vec<u32>>,
    /// Per owner: its doorbell was rung since it last drained its outbox.
    notified: Vec<bool>,
    /// Per owner: it has left ([`RingPort::leave`]); what reaches its outbox is taken
    /// by the next owner that takes its own.
    left: Vec<bool>,
    /// Commands sent to the rings per queue class (urgent, high, medium, low).
    pub fetched: [u64; 4],
    /// Commands that went out as soon as they came (nothing staged, room under the cap).
    pub fast_path: u64,
    /// The weights the arbiter uses now.
    pub weights: [u32; 3],
}

/// The arbiter's settings for `weights` (each at least 1: a class is never starved
/// forever by a weight of 0).
fn settings(weights: [u32; 3]) -> Arbitration {
    let [h, m, l] = weights.map(|w| w.max(1));
    Arbitration::wrr(h, m, l, BURST)
}

impl RingPort {
    /// A port for `owners` rings holding at most `cap` commands together; the block
    /// layer may have `max_inflight` pieces dispatched; `weights` are the arbiter's
    /// high/medium/low weights until the policy sets its own.
    pub fn new(owners: usize, cap: u32, max_inflight: u32, weights: [u32; 3]) -> Self {
        let owners = u16::try_from(owners.max(1)).expect("at most 16383 rings");
        let queues = owners as usize * 4;
        RingPort {
            arb: Arbiter::new(&settings(weights), owners),
            owners,
            head: vec![NIL; queues],
            tail: vec![NIL; queues],
            next: vec![NIL; max_inflight as usize],
            staged: 0,
            cap,
            in_rings: 0,
            max_inflight,
            outbox: (0..owners)
                .map(|_| Vec::with_capacity(max_inflight as usize))
                .collect(),
            notified: vec![false; owners as usize],
            left: vec![false; owners as usize],
            fetched: [0; 4],
            fast_path: 0,
            weights,
        }
    }

    /// Most commands in all rings together.
    pub fn cap(&self) -> u32 {
        self.cap
    }

    /// Commands staged (waiting for room in the rings).
    pub fn staged(&self) -> u32 {
        self.staged
    }

    /// A command left a ring (its CQE was reaped): feed the rings from the arbiter.
    pub fn command_done(&mut self) {
        self.in_rings -= 1;
        self.feed();
    }

    /// Hand owner `me`'s outbox to `f` (piece tags, in the order they left the
    /// arbiter) and empty it, then the outboxes of the owners that left (their pieces
    /// can go out on any ring: see [`RingPort::leave`]); push to `wake` the other
    /// owners whose outbox turned non-empty since they last looked (their doorbells
    /// are to be rung, outside the lock).
    pub fn take_outbox(&mut self, me: usize, mut f: impl FnMut(u32), wake: &mut Vec<usize>) {
        for w in 0..self.outbox.len() {
            if w == me || self.left[w] {
                for &tag in &self.outbox[w] {
                    f(tag);
                }
                self.outbox[w].clear();
                self.notified[w] = false;
            }
        }
        for w in 0..self.outbox.len() {
            if w != me && !self.outbox[w].is_empty() && !self.notified[w] {
                self.notified[w] = true;
                wake.push(w);
            }
        }
    }

    /// Owner `me` stops taking its outbox (an engine worker whose jobs all ended:
    /// its ring has nothing in flight). Pieces of its queue may still come — a page
    /// cache's writeback the block layer queued while `me` ran — and are handed to
    /// whichever owner takes its outbox next; so they must be pieces every owner can
    /// issue. Refused (`false`, nothing changed) when `me` is the last owner and its
    /// outbox holds pieces: it must take them first. Otherwise `true`, and `wake`
    /// names an owner to take what its outbox still holds, if anything.
    pub fn leave(&mut self, me: usize, wake: &mut Vec<usize>) -> bool {
        debug_assert!(!self.left[me], "owner {me} left twice");
        let other = (0..self.outbox.len()).find(|&w| w != me && !self.left[w]);
        let pending = !self.outbox[me].is_empty();
        match (pending, other) {
            (true, None) => false,
            (true, Some(w)) => {
                self.left[me] = true;
                if !wake.contains(&w) {
                    wake.push(w);
                }
                true
            }
            (false, _) => {
                self.left[me] = true;
                true
            }
        }
    }

    /// Whether an owner other than `me` has not left.
    pub fn others_live(&self, me: usize) -> bool {
        (0..self.outbox.len()).any(|w| w != me && !self.left[w])
    }

    /// Owner `me` takes its outbox again (an engine worker starting its next stonewall
    /// group).
    pub fn rejoin(&mut self, me: usize) {
        self.left[me] = false;
    }

    /// Stage `tag` in the submission queue `sq`.
    fn stage(&mut self, sq: u16, tag: u32) {
        let t = tag as usize;
        if t >= self.next.len() {
            self.next.resize(t + 1, NIL);
        }
        self.next[t] = NIL;
        let q = sq as usize;
        if self.tail[q] == NIL {
            self.head[q] = tag;
            self.arb.mark_nonempty(sq);
        } else {
            self.next[self.tail[q] as usize] = tag;
        }
        self.tail[q] = tag;
        self.staged += 1;
    }

    /// While the rings have room, the arbiter's next command goes to its owner's outbox.
    fn feed(&mut self) {
        while self.in_rings < self.cap {
            let Some(sq) = self.arb.pick() else {
                break;
            };
            let q = sq as usize;
            let tag = self.head[q];
            debug_assert_ne!(tag, NIL, "the arbiter picked an empty queue");
            self.head[q] = self.next[tag as usize];
            if self.head[q] == NIL {
                self.tail[q] = NIL;
                self.arb.mark_empty(sq);
            }
            self.staged -= 1;
            self.in_rings += 1;
            self.fetched[q & 3] += 1;
            self.outbox[q >> 2].push(tag);
        }
    }
}

impl DevicePort for RingPort {
    fn max_inflight(&self) -> u32 {
        self.max_inflight
    }

    /// Never refuses: the arbiter stages whatever the rings cannot take yet.
    fn try_submit(&mut self, _now_ns: Nanos, tag: u32, d: &Dispatch) -> bool {
        let owner = d.req.hwq;
        debug_assert!(owner < self.owners, "hwq {owner} names no ring");
        if self.staged == 0 && self.in_rings < self.cap {
            self.fast_path += 1;
        }
        self.stage(sq_id(owner % self.owners, d.queue), tag);
        self.feed();
        true
    }

    fn set_wrr_weights(&mut self, weights: [u32; 3]) {
        self.weights = weights;
        self.arb.reconfigure(&settings(weights), self.owners);
    }
}

/// The queue class of submission queue `sq`.
#[cfg(test)]
fn class_of(sq: usize) -> QueueClass {
    QueueClass::ALL[sq & 3]
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_core::{FlowId, IoClass, Op, ReqId, Request};

    fn dispatch(hwq: u16, queue: QueueClass) -> Dispatch {
        let req = Request {
            id: ReqId(0),
            flow: FlowId(0),
            op: Op::Read,
            offset: 0,
            len: 4096,
            class: IoClass::Normal,
            submit_ns: 0,
            hwq,
            parts: 1,
            fua: false,
            placement: 0,
            atomic: false,
        };
        Dispatch { req, queue }
    }

    /// Drain every outbox in owner order, as (owner, tag).
    fn drain(p: &mut RingPort) -> Vec<(usize, u32)> {
        let mut out = Vec::new();
        let mut wake = Vec::new();
        for me in 0..p.outbox.len() {
            p.take_outbox(me, |t| out.push((me, t)), &mut wake);
        }
        out
    }

    #[test]
    fn the_default_weights_are_d2fqs_base_six() {
        let a = Arbitration::d2fq(6, BURST);
        assert_eq!([a.hpw, a.mpw, a.lpw], D2FQ_WEIGHTS);
    }

    #[test]
    fn under_the_cap_a_piece_goes_straight_to_its_owner() {
        let mut p = RingPort::new(2, 4, 64, D2FQ_WEIGHTS);
        assert!(p.try_submit(0, 7, &dispatch(1, QueueClass::Low)));
        assert!(p.try_submit(0, 8, &dispatch(0, QueueClass::Urgent)));
        assert_eq!(p.fast_path, 2);
        assert_eq!(p.staged(), 0);
        assert_eq!(drain(&mut p), vec![(0, 8), (1, 7)]);
        assert_eq!(p.fetched, [1, 0, 0, 1]);
    }

    #[test]
    fn urgent_is_strictly_first() {
        let mut p = RingPort::new(1, 1, 64, D2FQ_WEIGHTS);
        p.try_submit(0, 0, &dispatch(0, QueueClass::Low)); // fills the cap
        p.try_submit(0, 1, &dispatch(0, QueueClass::High));
        p.try_submit(0, 2, &dispatch(0, QueueClass::Urgent));
        p.try_submit(0, 3, &dispatch(0, QueueClass::Low));
        p.try_submit(0, 4, &dispatch(0, QueueClass::Urgent));
        assert_eq!(p.staged(), 4);
        let mut order = vec![];
        while p.staged() > 0 || !p.outbox[0].is_empty() {
            let got = drain(&mut p);
            order.extend(got.iter().map(|x| x.1));
            p.command_done();
        }
        // Urgent before all; then the round goes on where the first low command left
        // it (in the low class, which still has credit), as on the simulated device.
        assert_eq!(order, vec![0, 2, 4, 3, 1]);
    }

    #[test]
    fn backlogged_classes_share_by_weight() {
        let mut p = RingPort::new(1, 1, 4096, [6, 3, 1]);
        p.try_submit(0, 4000, &dispatch(0, QueueClass::Medium)); // fills the cap
        let mut tag = 0;
        for c in [QueueClass::High, QueueClass::Medium, QueueClass::Low] {
            for _ in 0..1000 {
                p.try_submit(0, tag, &dispatch(0, c));
                tag += 1;
            }
        }
        drain(&mut p);
        let before = p.fetched;
        for _ in 0..1000 {
            p.command_done();
            drain(&mut p);
        }
        let got: Vec<u64> = (0..4).map(|c| p.fetched[c] - before[c]).collect();
        assert_eq!(got, vec![0, 600, 300, 100]);
    }

    #[test]
    fn owners_of_a_class_take_turns_of_a_burst() {
        // Two owners' high queues backlogged: eight from one, eight from the other.
        let mut p = RingPort::new(2, 1, 64, D2FQ_WEIGHTS);
        p.try_submit(0, 63, &dispatch(0, QueueClass::High)); // fills the cap
        for t in 0..20 {
            p.try_submit(0, t, &dispatch(0, QueueClass::High));
            p.try_submit(0, 20 + t, &dispatch(1, QueueClass::High));
        }
        drain(&mut p);
        let mut owners = vec![];
        for _ in 0..32 {
            p.command_done();
            owners.extend(drain(&mut p).iter().map(|x| x.0));
        }
        // Owner 0's turn began with the command that filled the cap (one of its eight).
        let want: Vec<usize> = [(0, 7), (1, 8), (0, 8), (1, 8), (0, 1)]
            .iter()
            .flat_map(|&(o, n)| std::iter::repeat_n(o, n))
            .collect();
        assert_eq!(owners, want);
        assert_eq!(
            class_of(sq_id(1, QueueClass::High) as usize),
            QueueClass::High
        );
    }

    #[test]
    fn new_weights_apply_to_the_round_in_progress() {
        let mut p = RingPort::new(1, 1, 4096, [100, 100, 1]);
        p.try_submit(0, 4000, &dispatch(0, QueueClass::Medium)); // fills the cap
        let mut tag = 0;
        for c in [QueueClass::High, QueueClass::Low] {
            for _ in 0..100 {
                p.try_submit(0, tag, &dispatch(0, c));
                tag += 1;
            }
        }
        drain(&mut p);
        p.set_wrr_weights([2, 1, 2]);
        assert_eq!(p.weights, [2, 1, 2]);
        let mut classes = vec![];
        for _ in 0..8 {
            p.command_done();
            let d = drain(&mut p);
            classes.extend(d.iter().map(|&(_, t)| if t < 100 { 'H' } else { 'L' }));
        }
        // The round in progress (at medium, no command) goes on to low with its credit
        // capped at 1, then rounds of the new weights: H H (M empty) L L.
        assert_eq!(classes.iter().collect::<String>(), "LHHLLHHL");
    }

    #[test]
    fn a_weight_of_zero_is_taken_as_one() {
        let mut p = RingPort::new(1, 1, 64, [0, 0, 0]);
        p.try_submit(0, 9, &dispatch(0, QueueClass::Medium));
        p.try_submit(0, 1, &dispatch(0, QueueClass::Low));
        p.try_submit(0, 2, &dispatch(0, QueueClass::High));
        let mut order = vec![];
        for _ in 0..3 {
            order.extend(drain(&mut p).iter().map(|x| x.1));
            p.command_done();
        }
        // Every class is served (none starves behind a weight of 0), in round order
        // from medium, where the first command left the round.
        assert_eq!(order, vec![9, 1, 2]);
    }

    /// A piece of a queue whose owner left goes out with the next owner that takes its
    /// outbox (the engine's page cache queued writeback for a worker that then ended:
    /// it once stayed in the left worker's outbox for ever, and a writer waiting for
    /// room in the cache waited with it).
    #[test]
    fn a_left_owners_pieces_go_to_the_next_taker() {
        let mut p = RingPort::new(2, 1, 64, D2FQ_WEIGHTS);
        p.try_submit(0, 5, &dispatch(0, QueueClass::Medium)); // fills the cap
        p.try_submit(0, 6, &dispatch(1, QueueClass::Medium)); // staged for owner 1
        let mut wake = Vec::new();
        assert!(p.leave(1, &mut wake));
        assert!(wake.is_empty(), "nothing was in its outbox");
        let mut got = Vec::new();
        p.take_outbox(0, |t| got.push(t), &mut wake);
        assert_eq!(got, vec![5]);
        p.command_done(); // tag 6 reaches owner 1's outbox
        got.clear();
        p.take_outbox(0, |t| got.push(t), &mut wake);
        assert_eq!(got, vec![6], "owner 0 takes what reached the left owner");
        assert!(wake.is_empty(), "the left owner is never woken");
    }

    /// The last owner does not leave while its outbox holds pieces; one that leaves
    /// with pieces in its outbox names another owner to wake.
    #[test]
    fn leaving_with_pieces_waits_or_wakes_another() {
        let mut p = RingPort::new(2, 4, 64, D2FQ_WEIGHTS);
        p.try_submit(0, 1, &dispatch(1, QueueClass::Medium));
        let mut wake = Vec::new();
        assert!(p.leave(1, &mut wake));
        assert_eq!(wake, vec![0]);
        let mut q = RingPort::new(2, 4, 64, D2FQ_WEIGHTS);
        assert!(q.leave(0, &mut wake));
        q.try_submit(0, 2, &dispatch(1, QueueClass::Medium));
        assert!(
            !q.leave(1, &mut Vec::new()),
            "the last owner takes its pieces first"
        );
    }
}
