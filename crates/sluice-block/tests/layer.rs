//! The block layer against a fake device port: admission order, retries, held
//! dispatches, splitting and parent completion, failed pieces, promotion, WRR pushes,
//! and a property test of its bookkeeping under random events.

use std::collections::VecDeque;

use proptest::prelude::*;
use sluice_block::{BlockLayer, DevicePort, Finished, NewRequest};
use sluice_core::policy::{self, Admission, Counter, DeviceView, Dispatch, Policy, PolicySpec};
use sluice_core::{Flow, FlowId, IoClass, Nanos, Op, QueueClass, ReqId, Request};

/// A port with `room` places; remembers what it was given.
#[derive(Default)]
struct FakePort {
    room: usize,
    sent: VecDeque<(u32, Dispatch)>,
    wrr: Vec<[u32; 3]>,
}

impl DevicePort for FakePort {
    fn max_inflight(&self) -> u32 {
        1024
    }
    fn try_submit(&mut self, _now: Nanos, tag: u32, d: &Dispatch) -> bool {
        if self.sent.len() >= self.room {
            return false;
        }
        self.sent.push_back((tag, *d));
        true
    }
    fn set_wrr_weights(&mut self, w: [u32; 3]) {
        self.wrr.push(w);
    }
}

fn port(room: usize) -> FakePort {
    FakePort {
        room,
        ..FakePort::default()
    }
}

fn flows() -> Vec<Flow> {
    vec![Flow {
        id: FlowId(0),
        name: "f".into(),
        weight: 1,
    }]
}

fn req(class: IoClass, len: u32) -> NewRequest {
    NewRequest {
        flow: FlowId(0),
        op: Op::Read,
        offset: 0,
        len,
        class,
        hwq: 0,
        fua: false,
        placement: 0,
        atomic: false,
    }
}

fn build(spec: &str) -> BlockLayer {
    let p = policy::build(&spec.parse::<PolicySpec>().unwrap()).unwrap();
    BlockLayer::new(p, &flows())
}

/// Complete the oldest piece at the port.
fn complete_one(b: &mut BlockLayer, p: &mut FakePort, now: Nanos, ok: bool) -> Option<Finished> {
    let (tag, _) = p.sent.pop_front().expect("a piece at the port");
    b.piece_done(now, tag, ok)
}

#[test]
fn a_critical_request_is_admitted_while_noncritical_ones_wait() {
    // RCP with two non-critical slots: the third normal request waits; a critical one
    // arriving after it is asked at once (FIFO within a class, not across classes).
    let mut b = build("rcp:nc_slots=2,starve_ms=0");
    let mut p = port(64);
    for _ in 0..3 {
        b.submit(0, req(IoClass::Normal, 4096), 0);
    }
    assert_eq!(b.waiting(), 1);
    let c = b.submit(0, req(IoClass::Critical, 4096), 9);
    assert_eq!(b.waiting(), 1);
    b.pump(0, &mut p);
    assert!(p.sent.iter().any(|(_, d)| d.req.id == c));
    assert_eq!(b.request(c).admit_ns, 0);
}

#[test]
fn waiting_requests_are_asked_again_after_a_completion() {
    let mut b = build("rcp:slots=2,nc_slots=2,starve_ms=0");
    let mut p = port(64);
    for i in 0..8 {
        b.submit(0, req(IoClass::Normal, 4096), i);
    }
    b.pump(0, &mut p);
    assert_eq!(b.waiting(), 6);
    let mut done = 0;
    let mut now = 0;
    while done < 8 {
        now += 10;
        assert!(complete_one(&mut b, &mut p, now, true).is_some());
        done += 1;
        b.pump(now, &mut p);
        assert!(b.stall().is_none(), "stalled after {done} completions");
    }
    assert_eq!(b.waiting(), 0);
    assert_eq!(b.stats().completed, 8);
    assert_eq!(b.stats().admission_waits, 6);
}

#[test]
fn a_full_port_holds_the_dispatch_and_offers_it_first() {
    let mut b = build("none");
    let mut p = port(1);
    let a = b.submit(0, req(IoClass::Normal, 4096), 0);
    let c = b.submit(0, req(IoClass::Normal, 4096), 1);
    b.pump(0, &mut p);
    assert_eq!(p.sent.len(), 1);
    assert_eq!(b.stats().held, 1);
    let f = complete_one(&mut b, &mut p, 5, true).unwrap();
    assert_eq!(f.id, a);
    b.pump(5, &mut p);
    assert_eq!(p.sent[0].1.req.id, c);
    assert_eq!(b.inflight(), 1);
}

#[test]
fn a_split_request_finishes_with_its_last_piece_and_a_failed_piece_fails_it() {
    // LD splits non-critical 128 KB into four 32 KB pieces.
    let mut b = build("ld:tokens=8");
    let mut p = port(64);
    let id = b.submit(0, req(IoClass::Normal, 128 << 10), 42);
    b.pump(0, &mut p);
    assert_eq!(p.sent.len(), 4);
    assert!(complete_one(&mut b, &mut p, 10, true).is_none());
    assert!(complete_one(&mut b, &mut p, 11, false).is_none());
    assert!(complete_one(&mut b, &mut p, 12, true).is_none());
    let f = complete_one(&mut b, &mut p, 13, true).expect("the last piece");
    assert_eq!((f.id, f.token, f.ok), (id, 42, false));
    assert_eq!((f.dispatch_ns, f.device_done_ns), (0, 13));
    assert_eq!(b.stats().failed_pieces, 1);
    assert_eq!(b.stats().failed, 1);
    // LD got its token back on the error completion: all 8 free.
    let free = b
        .policy()
        .counters()
        .into_iter()
        .find(|(n, _)| *n == Counter::FreeTokens)
        .unwrap()
        .1;
    assert_eq!(free, 8.0);
    assert_eq!(b.inflight(), 0);
}

#[test]
fn promotion_raises_waiting_and_queued_requests() {
    // rcp: one non-critical slot, one outstanding non-critical I/O at the device.
    let mut b = build("rcp:nc_slots=1,starve_ms=0");
    let mut p = port(64);
    let first = b.submit(0, req(IoClass::Normal, 4096), 0);
    let waiting = b.submit(0, req(IoClass::Normal, 4096), 1);
    b.pump(0, &mut p);
    assert_eq!(p.sent.len(), 1);
    assert_eq!(b.waiting(), 1);
    // Waiting for admission: raised to critical, admitted from the critical pool at the
    // next pump and dispatched ahead of the non-critical limit.
    assert!(b.promote(1, waiting));
    assert_eq!(b.request(waiting).class, IoClass::Critical);
    b.pump(1, &mut p);
    assert_eq!(b.waiting(), 0);
    assert_eq!(p.sent.len(), 2);
    assert_eq!(b.stats().promoted_waiting, 1);
    // Already dispatched or already critical: nothing to raise.
    assert!(!b.promote(2, first));
    assert!(!b.promote(2, waiting));

    // Queued in the policy (admitted, held behind the one non-critical I/O in flight):
    // Policy::promote moves it to the critical queue, and it goes at once.
    let mut b = build("rcp:nc_slots=8,starve_ms=0");
    let mut p = port(64);
    b.submit(0, req(IoClass::Normal, 4096), 0);
    let queued = b.submit(0, req(IoClass::Normal, 4096), 1);
    b.pump(0, &mut p);
    assert_eq!(p.sent.len(), 1);
    assert_eq!(b.policy().queued(), 1);
    assert!(b.promote(1, queued));
    b.pump(1, &mut p);
    assert_eq!(p.sent.len(), 2);
    assert_eq!(p.sent[1].1.req.id, queued);
    assert_eq!(b.stats().promoted_queued, 1);
    assert!(!b.promote(2, ReqId(999)));
}

/// Asks for WRR weights that change with the number of completions.
#[derive(Default)]
struct Wrr {
    q: VecDeque<Request>,
    done: u32,
}

impl Policy for Wrr {
    fn name(&self) -> &'static str {
        "wrr-test"
    }
    fn enqueue(&mut self, _: Nanos, r: Request) {
        self.q.push_back(r);
    }
    fn dispatch(&mut self, _: Nanos, _: &DeviceView) -> Option<Dispatch> {
        self.q.pop_front().map(Dispatch::medium)
    }
    fn complete(&mut self, _: Nanos, _: &sluice_core::policy::Completion) {
        self.done += 1;
    }
    fn queued(&self) -> usize {
        self.q.len()
    }
    fn wrr_weights(&self) -> Option<[u32; 3]> {
        Some([4 + self.done / 2, 2, 1])
    }
}

#[test]
fn wrr_weights_reach_the_port_when_they_change() {
    let mut b = BlockLayer::new(Box::<Wrr>::default(), &flows());
    let mut p = port(64);
    for i in 0..4 {
        b.submit(0, req(IoClass::Normal, 4096), i);
    }
    b.pump(0, &mut p);
    for t in 1..=4 {
        complete_one(&mut b, &mut p, t, true);
        b.pump(t, &mut p);
    }
    assert_eq!(p.wrr, vec![[4, 2, 1], [5, 2, 1], [6, 2, 1]]);
    assert_eq!(b.wrr_applied(), Some([6, 2, 1]));
}

/// Admits at random (from a seed in the request's offset), so requests wait and retry.
#[derive(Default)]
struct Moody {
    q: VecDeque<Request>,
    calls: u64,
}

impl Policy for Moody {
    fn name(&self) -> &'static str {
        "moody"
    }
    fn admit(&mut self, _: Nanos, r: &Request) -> Admission {
        self.calls += 1;
        if (r.offset ^ self.calls).count_ones().is_multiple_of(3) {
            Admission::Wait
        } else {
            Admission::Admit
        }
    }
    fn enqueue(&mut self, _: Nanos, r: Request) {
        self.q.extend(r.split(8192));
    }
    fn dispatch(&mut self, _: Nanos, _: &DeviceView) -> Option<Dispatch> {
        self.q.pop_front().map(|req| Dispatch {
            req,
            queue: QueueClass::Low,
        })
    }
    fn promote(&mut self, _: Nanos, id: ReqId) -> bool {
        self.q.iter().any(|r| r.id == id)
    }
    fn queued(&self) -> usize {
        self.q.len()
    }
    fn next_timer_ns(&self) -> Option<Nanos> {
        // Keeps asking, so refused requests are retried even with nothing in flight.
        Some(0)
    }
}

#[derive(Clone, Debug)]
enum Ev {
    Submit(u64, u32, bool),
    Complete(bool),
    Promote(u8),
    Timer,
}

fn ev() -> impl Strategy<Value = Ev> {
    prop_oneof![
        (any::<u64>(), 1u32..40_000, any::<bool>()).prop_map(|(o, l, c)| Ev::Submit(o, l, c)),
        any::<bool>().prop_map(Ev::Complete),
        any::<u8>().prop_map(Ev::Promote),
        Just(Ev::Timer),
    ]
}

proptest! {
    /// Whatever the order of submissions, completions (some failed), promotions and
    /// timers: every request finishes exactly once, with the token it was given and
    /// `ok` false exactly when one of its pieces failed; the port never has two pieces
    /// under one tag; everything drains.
    #[test]
    fn every_request_finishes_once(evs in prop::collection::vec(ev(), 1..300), room in 1usize..8) {
        let mut b = BlockLayer::new(Box::<Moody>::default(), &flows());
        let mut p = port(room);
        let mut live: std::collections::HashMap<u64, (ReqId, bool)> = Default::default();
        let mut failed_pieces: std::collections::HashMap<u64, bool> = Default::default();
        let mut next_token = 0u64;
        let mut now = 0;
        let check = |f: Finished, live: &mut std::collections::HashMap<u64, (ReqId, bool)>,
                         failed: &mut std::collections::HashMap<u64, bool>| {
            let (id, _) = live.remove(&f.token).expect("finished once, with its token");
            prop_assert_eq!(id, f.id);
            prop_assert_eq!(f.ok, !failed.remove(&f.token).unwrap_or(false));
            Ok(())
        };
        for e in evs {
            now += 1;
            match e {
                Ev::Submit(off, len, crit) => {
                    let class = if crit { IoClass::Critical } else { IoClass::Normal };
                    let id = b.submit(now, NewRequest { offset: off >> 8, ..req(class, len) }, next_token);
                    live.insert(next_token, (id, false));
                    next_token += 1;
                }
                Ev::Complete(ok) => {
                    if let Some((tag, d)) = p.sent.pop_front() {
                        let token = b.request(d.req.id).token;
                        if !ok { failed_pieces.insert(token, true); }
                        if let Some(f) = b.piece_done(now, tag, ok) {
                            check(f, &mut live, &mut failed_pieces)?;
                        }
                    }
                }
                Ev::Promote(k) => {
                    if let Some((_, (id, _))) = live.iter().nth(k as usize % live.len().max(1)) {
                        b.promote(now, *id);
                    }
                }
                Ev::Timer => { b.fire_timer(now); }
            }
            b.pump(now, &mut p);
            let mut tags: Vec<u32> = p.sent.iter().map(|(t, _)| *t).collect();
            tags.sort_unstable();
            tags.dedup();
            prop_assert_eq!(tags.len(), p.sent.len());
        }
        // Drain.
        let mut guard = 0;
        while !live.is_empty() {
            now += 1;
            guard += 1;
            prop_assert!(guard < 100_000, "did not drain: {} live", live.len());
            b.fire_timer(now);
            if let Some((tag, _)) = p.sent.pop_front() {
                if let Some(f) = b.piece_done(now, tag, true) {
                    check(f, &mut live, &mut failed_pieces)?;
                }
            }
            b.pump(now, &mut p);
        }
        prop_assert_eq!(b.inflight(), 0);
        prop_assert_eq!(b.waiting(), 0);
        prop_assert_eq!(b.stats().completed, next_token);
    }
}

/// Admits while fewer than `slots` are held; counts its admit calls.
#[derive(Default)]
struct Slots {
    q: VecDeque<Request>,
    held: u32,
    slots: u32,
    admits: u64,
}

impl Policy for Slots {
    fn name(&self) -> &'static str {
        "slots"
    }
    fn admit(&mut self, _: Nanos, _: &Request) -> Admission {
        self.admits += 1;
        if self.held < self.slots {
            self.held += 1;
            Admission::Admit
        } else {
            Admission::Wait
        }
    }
    fn enqueue(&mut self, _: Nanos, r: Request) {
        self.q.push_back(r);
    }
    fn dispatch(&mut self, _: Nanos, _: &DeviceView) -> Option<Dispatch> {
        self.q.pop_front().map(Dispatch::medium)
    }
    fn complete(&mut self, _: Nanos, _: &sluice_core::policy::Completion) {
        self.held -= 1;
    }
    fn queued(&self) -> usize {
        self.q.len()
    }
    fn counters(&self) -> Vec<(Counter, f64)> {
        vec![(Counter::Custom("admits"), self.admits as f64)]
    }
}

#[test]
fn a_retry_asks_once_per_class_past_the_admitted_ones() {
    // Issue 17: with thousands of requests waiting for admission, every completion
    // asked the policy about every one of them (quadratic: rcp at QD 65535 took 75 s).
    // Now a retry stops at a class's first refusal.
    let n = 4000u64;
    let mut b = BlockLayer::new(
        Box::new(Slots {
            slots: 2,
            ..Slots::default()
        }),
        &flows(),
    );
    let mut p = port(1 << 20);
    for i in 0..n {
        b.submit(0, req(IoClass::Normal, 4096), i);
    }
    b.pump(0, &mut p);
    let mut done = 0;
    let mut now = 0;
    while done < n {
        now += 1;
        complete_one(&mut b, &mut p, now, true).expect("whole requests");
        done += 1;
        b.pump(now, &mut p);
    }
    let admits = b.policy().counters()[0].1 as u64;
    assert!(admits <= 3 * n, "{admits} admit calls for {n} requests");
}

/// A write of `len` bytes at `offset`.
fn write_at(class: IoClass, offset: u64, len: u32) -> NewRequest {
    NewRequest {
        op: Op::Write,
        offset,
        ..req(class, len)
    }
}

/// RCP serves a critical request before an earlier normal one; on a zoned device the
/// two writes of one zone still leave in submission order, one at a time, while a
/// write to another zone and a read are not held.
fn zone_order(zoned: bool) -> (Vec<ReqId>, [ReqId; 4], u64) {
    let mut b = build("rcp:starve_ms=0");
    if zoned {
        b.set_zoned(1 << 20);
    }
    let mut p = port(64);
    let a = b.submit(0, write_at(IoClass::Normal, 0, 4096), 0);
    let c = b.submit(0, write_at(IoClass::Critical, 4096, 4096), 1);
    let other = b.submit(0, write_at(IoClass::Critical, 1 << 20, 4096), 2);
    let r = b.submit(0, req(IoClass::Critical, 4096), 3);
    let mut order = Vec::new();
    let mut now = 0;
    b.pump(now, &mut p);
    while let Some((tag, d)) = p.sent.pop_front() {
        order.push(d.req.id);
        now += 10;
        b.piece_done(now, tag, true);
        b.pump(now, &mut p);
    }
    assert_eq!(b.stats().completed, 4);
    assert!(b.stall().is_none());
    (order, [a, c, other, r], b.zone_parked())
}

#[test]
fn zone_write_locking_keeps_a_zones_writes_in_order() {
    let (order, [a, c, _, _], parked) = zone_order(false);
    let pos = |id| order.iter().position(|x| *x == id).unwrap();
    assert!(
        pos(c) < pos(a),
        "without zones RCP serves the critical write first"
    );
    assert_eq!(parked, 0);
    let (order, [a, c, other, r], parked) = zone_order(true);
    let pos = |id| order.iter().position(|x| *x == id).unwrap();
    assert!(pos(a) < pos(c), "zone order: {order:?}");
    assert!(pos(other) < pos(a) && pos(r) < pos(a), "{order:?}");
    assert_eq!(parked, 1);
}

#[test]
fn one_write_piece_in_flight_per_zone() {
    let mut b = build("none");
    b.set_zoned(1 << 20);
    let mut p = port(64);
    for i in 0..4u64 {
        b.submit(0, write_at(IoClass::Normal, i * 4096, 4096), i);
    }
    b.submit(0, write_at(IoClass::Normal, 1 << 20, 4096), 9);
    b.pump(0, &mut p);
    // The first write of zone 0 and the write of zone 1.
    assert_eq!(p.sent.len(), 2);
    let mut offsets = Vec::new();
    let mut now = 0;
    while let Some((tag, d)) = p.sent.pop_front() {
        offsets.push(d.req.offset);
        now += 1;
        b.piece_done(now, tag, true);
        b.pump(now, &mut p);
        assert!(p.sent.len() <= 2);
    }
    assert_eq!(offsets, vec![0, 1 << 20, 4096, 8192, 12288]);
}
