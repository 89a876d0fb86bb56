//! Randomized protocol tests of the critical-path policies (ld, rcp, mq-deadline,
//! kyber): a small engine drives each policy with random arrivals (classes, ops, sizes,
//! hardware queues), random completion order and random device errors, and checks the
//! policy's invariants after every step and at the end (nothing lost, nothing
//! duplicated, every token and slot returned).

use std::collections::BTreeMap;

use proptest::prelude::*;
use sluice_core::policy::{build, Admission, Completion, Counter, DeviceView, Policy, PolicySpec};
use sluice_core::{FlowId, IoClass, Nanos, Op, QueueClass, ReqId, Request};

#[derive(Clone, Debug)]
enum Step {
    /// A new request: class (0 critical, 1 normal, 2 idle), op (0 read, 1 write,
    /// 2 flush, 3 trim), length in 4 KB units, hardware queue.
    Arrive(u8, u8, u32, u16),
    /// Complete the in-flight piece at this index (mod the count), ok or failed.
    Complete(usize, bool),
    /// Let time pass (µs), firing a due timer.
    Tick(u32),
    /// Promote the waiting or queued request at this index (mod the count).
    Promote(usize),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0u8..3, 0u8..4, 1u32..64, 0u16..4).prop_map(|(c, o, l, h)| Step::Arrive(c, o, l, h)),
        4 => (any::<usize>(), prop::bool::weighted(0.8)).prop_map(|(i, ok)| Step::Complete(i, ok)),
        1 => (1u32..20_000).prop_map(Step::Tick),
        1 => any::<usize>().prop_map(Step::Promote),
    ]
}

struct Engine {
    policy: Box<dyn Policy>,
    now: Nanos,
    next_id: u64,
    waiting: Vec<Request>,
    /// Requests admitted and not finished: id → (parent, pieces completed).
    live: BTreeMap<u64, (Request, u32)>,
    /// Bytes of each live request dispatched so far, to check the pieces tile it.
    dispatched_bytes: BTreeMap<u64, u64>,
    inflight: Vec<(Request, Nanos)>,
    max_inflight: u32,
}

impl Engine {
    fn new(spec: &str) -> Self {
        Engine {
            policy: build(&spec.parse::<PolicySpec>().unwrap()).unwrap(),
            now: 0,
            next_id: 0,
            waiting: Vec::new(),
            live: BTreeMap::new(),
            dispatched_bytes: BTreeMap::new(),
            inflight: Vec::new(),
            max_inflight: 1 << 20,
        }
    }

    fn view(&self) -> DeviceView {
        DeviceView {
            inflight: self.inflight.len() as u32,
            inflight_per_class: [0, 0, self.inflight.len() as u32, 0],
            max_inflight: self.max_inflight,
        }
    }

    fn admit_waiting(&mut self) {
        let waiting = std::mem::take(&mut self.waiting);
        for r in waiting {
            self.submit(r);
        }
    }

    fn submit(&mut self, r: Request) {
        if self.policy.admit(self.now, &r) == Admission::Admit {
            self.live.insert(r.id.0, (r, 0));
            self.policy.enqueue(self.now, r);
        } else {
            self.waiting.push(r);
        }
    }

    fn pump(&mut self) {
        while let Some(d) = self.policy.dispatch(self.now, &self.view()) {
            let (parent, _) = self
                .live
                .get(&d.req.id.0)
                .expect("dispatch of a live request");
            assert!(d.req.offset >= parent.offset);
            assert!(d.req.offset + d.req.len as u64 <= parent.offset + parent.len as u64);
            *self.dispatched_bytes.entry(d.req.id.0).or_default() += d.req.len as u64;
            self.inflight.push((d.req, self.now));
        }
    }

    fn run(&mut self, step: &Step) {
        match *step {
            Step::Arrive(c, o, len4k, hwq) => {
                let op = [Op::Read, Op::Write, Op::Flush, Op::Trim][o as usize];
                let r = Request {
                    id: ReqId(self.next_id),
                    flow: FlowId(0),
                    op,
                    offset: self.next_id << 30,
                    len: if op == Op::Flush { 0 } else { len4k * 4096 },
                    class: IoClass::ALL[c as usize],
                    submit_ns: self.now,
                    hwq,
                    parts: 1,
                    fua: false,
                    placement: 0,
                    atomic: false,
                };
                self.next_id += 1;
                self.submit(r);
            }
            Step::Complete(i, ok) => {
                if self.inflight.is_empty() {
                    return;
                }
                let (piece, at) = self.inflight.remove(i % self.inflight.len());
                self.now += 1000;
                self.policy.complete(
                    self.now,
                    &Completion {
                        req: piece,
                        queue: QueueClass::Medium,
                        dispatch_ns: at,
                        complete_ns: self.now,
                        ok,
                    },
                );
                let entry = self.live.get_mut(&piece.id.0).expect("live");
                entry.1 += 1;
                if entry.1 == piece.parts.max(1) as u32 {
                    let (parent, _) = self.live.remove(&piece.id.0).unwrap();
                    let bytes = self.dispatched_bytes.remove(&piece.id.0).unwrap();
                    assert_eq!(bytes, parent.len as u64, "pieces tile the parent");
                }
                self.admit_waiting();
            }
            Step::Tick(us) => {
                self.now += us as Nanos * 1000;
                if let Some(t) = self.policy.next_timer_ns() {
                    if t <= self.now {
                        self.policy.timer(self.now);
                    }
                }
                self.admit_waiting();
            }
            Step::Promote(i) => {
                let ids: Vec<u64> = self.live.keys().copied().collect();
                if !self.waiting.is_empty() && i % 2 == 0 {
                    // The engine promotes a request waiting for admission itself.
                    let k = i % self.waiting.len();
                    self.waiting[k].class = IoClass::Critical;
                    self.admit_waiting();
                } else if !ids.is_empty() {
                    let id = ids[i % ids.len()];
                    if self.policy.promote(self.now, ReqId(id)) {
                        self.live.get_mut(&id).unwrap().0.class = IoClass::Critical;
                    }
                }
            }
        }
        self.pump();
    }

    /// Complete everything, firing timers, until nothing is left.
    fn drain(&mut self) {
        for _ in 0..1_000_000 {
            if self.inflight.is_empty() && self.waiting.is_empty() && self.policy.queued() == 0 {
                return;
            }
            if self.inflight.is_empty() {
                self.run(&Step::Tick(20_000));
            } else {
                self.run(&Step::Complete(0, true));
            }
        }
        panic!("the policy never drained");
    }
}

fn counter(p: &dyn Policy, c: Counter) -> f64 {
    p.counters()
        .into_iter()
        .find(|(n, _)| *n == c)
        .unwrap_or_else(|| panic!("counter {c:?}"))
        .1
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// LD: non-critical pieces in flight never exceed the pool, free tokens stay in
    /// [0, T], critical requests are never split, and every token comes back (errors
    /// included).
    #[test]
    fn ld_tokens_never_negative_never_leaked(steps in prop::collection::vec(step(), 1..300), tokens in 1u32..10) {
        let mut e = Engine::new(&format!("ld:tokens={tokens}"));
        for s in &steps {
            e.run(s);
            let nc = e.inflight.iter().filter(|(r, _)| r.class != IoClass::Critical).count();
            prop_assert!(nc as u32 <= tokens, "{nc} non-critical in flight > {tokens}");
            let free = counter(e.policy.as_ref(), Counter::FreeTokens);
            prop_assert!((0.0..=tokens as f64).contains(&free));
            prop_assert!(free as usize + nc <= tokens as usize, "tokens unaccounted");
            for (r, _) in &e.inflight {
                if r.class == IoClass::Critical {
                    prop_assert_eq!(r.parts, 1, "critical requests are not split");
                } else if r.op != Op::Trim {
                    // A trim moves no data and is not split.
                    prop_assert!(r.len <= 32 << 10);
                }
            }
        }
        e.drain();
        prop_assert!(e.live.is_empty(), "every request completed");
        prop_assert_eq!(counter(e.policy.as_ref(), Counter::FreeTokens), tokens as f64);
    }

    /// RCP: non-critical pieces in flight ≤ limit, slots within their pools, all slots
    /// back (whole requests, or cut into pieces with `split`).
    #[test]
    fn rcp_limits_and_slots(
        steps in prop::collection::vec(step(), 1..300),
        limit in 1u32..4,
        split in prop::sample::select(vec!["0", "8k", "64k"]),
    ) {
        let mut e = Engine::new(&format!("rcp:slots=6,nc_slots=5,limit={limit},split={split}"));
        for s in &steps {
            e.run(s);
            let nc = e.inflight.iter().filter(|(r, _)| r.class != IoClass::Critical).count();
            prop_assert!(nc as u32 <= limit);
            let held_c = counter(e.policy.as_ref(), Counter::CriticalSlotsHeld);
            let held_n = counter(e.policy.as_ref(), Counter::NoncriticalSlotsHeld);
            prop_assert!(held_c <= 6.0 && held_n <= 5.0);
            prop_assert_eq!((held_c + held_n) as usize, e.live.len());
        }
        e.drain();
        prop_assert_eq!(counter(e.policy.as_ref(), Counter::CriticalSlotsHeld), 0.0);
        prop_assert_eq!(counter(e.policy.as_ref(), Counter::NoncriticalSlotsHeld), 0.0);
    }

    /// mq-deadline and kyber hand out every request exactly once and drain.
    #[test]
    fn baselines_dispatch_everything_once(steps in prop::collection::vec(step(), 1..300)) {
        for spec in ["mq-deadline", "kyber"] {
            let mut e = Engine::new(spec);
            for s in &steps {
                e.run(s);
            }
            e.drain();
            prop_assert!(e.live.is_empty(), "{spec}: lost requests");
            prop_assert_eq!(e.policy.queued(), 0);
        }
    }
}

#[test]
fn kyber_throttles_fast_writes_when_reads_are_congested() {
    // Every round: 300 reads and 300 writes; the writes complete at once, the reads only
    // after 10 ms on the device (5 × the 2 ms read target). Once the timer has 500
    // samples per domain, congestion (read p90 I/O latency above target) throttles the
    // write domain, which meets its own target, below its maximum depth of 128. (With
    // fewer than 500 samples per second the kernel's shared per-domain timeout lets
    // only the I/O-latency percentile be computed, so nothing would adapt.)
    let mut e = Engine::new("kyber");
    for round in 0..6 {
        for i in 0..600 {
            e.run(&Step::Arrive(1, (i % 2) as u8, 1, (i % 4) as u16));
        }
        while let Some(pos) = e.inflight.iter().position(|(r, _)| r.op == Op::Write) {
            e.run(&Step::Complete(pos, true));
        }
        e.now += 10_000_000;
        while !e.inflight.is_empty() {
            e.run(&Step::Complete(0, true));
        }
        e.run(&Step::Tick(100_000));
        let depth = counter(e.policy.as_ref(), Counter::WriteDepth);
        if round >= 2 {
            assert!(depth < 128.0, "write depth {depth} in round {round}");
        }
    }
    assert_eq!(
        counter(e.policy.as_ref(), Counter::ReadDepth),
        256.0,
        "reads keep their depth"
    );
}
