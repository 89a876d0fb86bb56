//! MQFQ and SFQ(D): depth bounds, MQFQ's throttle (S ≤ V + T), monotone virtual
//! time, no starvation, weighted shares, SFQ(D)'s service-time cost, parameters.

use proptest::prelude::*;
use sluice_core::policy::{self, Completion, DeviceView, Mqfq, Policy, PolicySpec, Sfqd};
use sluice_core::{Flow, FlowId, IoClass, Op, QueueClass, ReqId, Request};

fn req(id: u64, flow: u32, len: u32, hwq: u16, op: Op) -> Request {
    Request {
        id: ReqId(id),
        flow: FlowId(flow),
        op,
        offset: id * 4096,
        len,
        class: IoClass::Normal,
        submit_ns: 0,
        hwq,
        parts: 1,
        fua: false,
        placement: 0,
        atomic: false,
    }
}

fn done(r: Request, dispatch_ns: u64, complete_ns: u64) -> Completion {
    Completion {
        req: r,
        queue: QueueClass::Medium,
        dispatch_ns,
        complete_ns,
        ok: true,
    }
}

fn with_flows<P: Policy>(mut p: P, weights: &[u32]) -> P {
    for (i, &w) in weights.iter().enumerate() {
        p.add_flow(&Flow {
            id: FlowId(i as u32),
            name: format!("f{i}"),
            weight: w,
        });
    }
    p
}

#[test]
fn parameter_errors_are_clear() {
    for (spec, want) in [
        ("mqfq:depth=0", "depth"),
        ("mqfq:t=abc", "t"),
        ("mqfq:d=4", "'d'"),
        ("sfqd:depth=0", "depth"),
        ("sfqd:cost=time", "cost"),
        ("sfqd:weight=2", "weight"),
    ] {
        let spec: PolicySpec = spec.parse().unwrap();
        let err = policy::build(&spec).err().expect("must fail").to_string();
        assert!(err.contains(want), "{spec}: {err}");
    }
    for ok in [
        "mqfq",
        "mqfq:depth=8,t=0",
        "sfqd",
        "sfqd:cost=service,depth=32",
    ] {
        policy::build(&ok.parse().unwrap()).unwrap();
    }
}

/// Two backlogged flows with weights 3 and 1 and equal sizes: in every prefix of the
/// dispatch order, the bytes served stay within one request (plus T for MQFQ) of 3:1.
#[test]
fn weighted_backlogged_flows_get_their_shares() {
    let v = DeviceView::default();
    let mut m = with_flows(Mqfq::new(1_000_000, 0), &[3, 1]);
    let mut s = with_flows(Sfqd::new(1_000_000, policy::SfqCost::Size), &[3, 1]);
    let mut id = 0;
    for _ in 0..400 {
        for f in 0..2 {
            m.enqueue(0, req(id, f, 4096, 0, Op::Read));
            s.enqueue(0, req(id, f, 4096, 0, Op::Read));
            id += 1;
        }
    }
    for p in [&mut m as &mut dyn Policy, &mut s as &mut dyn Policy] {
        let mut n = [0i64; 2];
        for _ in 0..400 {
            let x = p.dispatch(0, &v).unwrap();
            n[x.req.flow.index()] += 1;
            assert!((n[0] - 3 * n[1]).abs() <= 3, "{}: {n:?}", p.name());
        }
    }
}

/// SFQ(D) with `cost=service`: a flow of writes that take 10× as long on the device
/// as the other flow's reads gets a tenth of the dispatches.
#[test]
fn sfqd_service_cost_prices_by_device_time() {
    let spec: PolicySpec = "sfqd:cost=service,depth=1".parse().unwrap();
    let mut p = policy::build(&spec).unwrap();
    for f in 0..2 {
        p.add_flow(&Flow {
            id: FlowId(f),
            name: format!("f{f}"),
            weight: 1,
        });
    }
    let v = DeviceView::default();
    let mut now = 0;
    let mut id = 0;
    let mut n = [0u64; 2];
    // Keep both flows backlogged; serve one at a time (depth 1).
    for f in 0..2u32 {
        for _ in 0..4 {
            let op = if f == 0 { Op::Read } else { Op::Write };
            p.enqueue(now, req(id, f, 4096, 0, op));
            id += 1;
        }
    }
    for _ in 0..2200 {
        let x = p.dispatch(now, &v).expect("backlogged");
        assert!(p.dispatch(now, &v).is_none(), "depth 1");
        let t = if x.req.op == Op::Write {
            100_000
        } else {
            10_000
        };
        p.complete(now + t, &done(x.req, now, now + t));
        now += t;
        n[x.req.flow.index()] += 1;
        p.enqueue(now, req(id, x.req.flow.0, 4096, 0, x.req.op));
        id += 1;
    }
    let ratio = n[0] as f64 / n[1] as f64;
    assert!((9.0..=11.0).contains(&ratio), "reads/writes {n:?}");
}

#[derive(Clone, Debug)]
enum Ev {
    Arrive { flow: u32, len_k: u32, hwq: u16 },
    Dispatch,
    Complete(usize),
}

fn events() -> impl Strategy<Value = Vec<Ev>> {
    prop::collection::vec(
        prop_oneof![
            4 => (0u32..4, 1u32..65, 0u16..4)
                .prop_map(|(flow, len_k, hwq)| Ev::Arrive { flow, len_k, hwq }),
            4 => Just(Ev::Dispatch),
            3 => (0usize..128).prop_map(Ev::Complete),
        ],
        1..500,
    )
}

proptest! {
    /// MQFQ: never more than D in flight; never dispatches S > V + T; dispatches
    /// whenever it holds requests and has fewer than D in flight; V never decreases.
    #[test]
    fn mqfq_invariants(evs in events(), depth in 1u32..16, t_k in 0u64..64) {
        let mut m = with_flows(Mqfq::new(depth, t_k * 1024), &[1, 2, 4, 8]);
        let v = DeviceView::default();
        let mut inflight = Vec::new();
        let mut id = 0;
        let mut last_v = 0;
        for ev in evs {
            match ev {
                Ev::Arrive { flow, len_k, hwq } => {
                    m.enqueue(0, req(id, flow, len_k * 1024, hwq, Op::Read));
                    id += 1;
                }
                Ev::Dispatch => {
                    let queued = m.queued();
                    match m.dispatch(0, &v) {
                        Some(x) => {
                            let (s, vt) = m.last_dispatch().unwrap();
                            prop_assert!(s <= vt + m.throttle(), "S {} > V {} + T", s, vt);
                            prop_assert!(vt >= last_v, "V went back");
                            last_v = vt;
                            inflight.push(x.req);
                            prop_assert!(m.inflight() <= depth);
                        }
                        None => prop_assert!(queued == 0 || m.inflight() == depth,
                            "held {} requests with {} < D in flight", queued, m.inflight()),
                    }
                }
                Ev::Complete(i) => {
                    if !inflight.is_empty() {
                        let r = inflight.swap_remove(i % inflight.len());
                        m.complete(0, &done(r, 0, 1));
                    }
                }
            }
        }
        // No starvation: draining completes everything that was queued.
        let mut guard = 0;
        while m.queued() > 0 {
            match m.dispatch(0, &v) {
                Some(x) => m.complete(0, &done(x.req, 0, 1)),
                None => {
                    let r = inflight.pop().expect("full only while something is in flight");
                    m.complete(0, &done(r, 0, 1));
                }
            }
            guard += 1;
            prop_assert!(guard < 10_000);
        }
    }

    /// SFQ(D): at most D in flight; v never decreases; a flow's requests leave in
    /// arrival order; dispatches whenever it holds requests below depth.
    #[test]
    fn sfqd_invariants(evs in events(), depth in 1u32..16, service in any::<bool>()) {
        let cost = if service { policy::SfqCost::Service } else { policy::SfqCost::Size };
        let mut s = with_flows(Sfqd::new(depth, cost), &[1, 2, 4, 8]);
        let v = DeviceView::default();
        let mut inflight = Vec::new();
        let mut id = 0;
        let mut last_v = 0;
        let mut last_id_of_flow = [None::<u64>; 4];
        let mut now = 0;
        for ev in evs {
            match ev {
                Ev::Arrive { flow, len_k, hwq } => {
                    let op = if len_k % 3 == 0 { Op::Write } else { Op::Read };
                    s.enqueue(now, req(id, flow, len_k * 1024, hwq, op));
                    id += 1;
                }
                Ev::Dispatch => {
                    let queued = s.queued();
                    match s.dispatch(now, &v) {
                        Some(x) => {
                            prop_assert!(s.virtual_time() >= last_v, "v went back");
                            last_v = s.virtual_time();
                            let f = x.req.flow.index();
                            prop_assert!(last_id_of_flow[f].is_none_or(|p| p < x.req.id.0),
                                "flow {} out of order", f);
                            last_id_of_flow[f] = Some(x.req.id.0);
                            inflight.push((x.req, now));
                            prop_assert!(s.inflight() <= depth);
                        }
                        None => prop_assert!(queued == 0 || s.inflight() == depth),
                    }
                }
                Ev::Complete(i) => {
                    if !inflight.is_empty() {
                        let (r, at) = inflight.swap_remove(i % inflight.len());
                        now += 1000 + (r.len as u64);
                        s.complete(now, &done(r, at, now));
                    }
                }
            }
        }
    }
}
