//! D2FQ: the sloppy gvt (sequential rules and under four threads), work conservation,
//! virtual-time monotonicity, Eq. 1 queue classes, the H/L adjustment, parameters.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use proptest::prelude::*;
use sluice_core::policy::{
    self, d2fq_wrr_weights, Completion, D2fq, D2fqConfig, D2fqMode, D2fqThresholds, DeviceView,
    Params, Policy, PolicySpec, SloppyGvt,
};
use sluice_core::{Flow, FlowId, IoClass, Op, QueueClass, ReqId, Request};

fn req(id: u64, flow: u32, len: u32) -> Request {
    Request {
        id: ReqId(id),
        flow: FlowId(flow),
        op: Op::Read,
        offset: id * 4096,
        len,
        class: IoClass::Normal,
        submit_ns: 0,
        hwq: (id % 4) as u16,
        parts: 1,
        fua: false,
        placement: 0,
        atomic: false,
    }
}

fn done(r: Request, queue: QueueClass, now: u64) -> Completion {
    Completion {
        req: r,
        queue,
        dispatch_ns: 0,
        complete_ns: now,
        ok: true,
    }
}

fn d2fq(spec: &str, weights: &[u32]) -> D2fq {
    let spec: PolicySpec = spec.parse().unwrap();
    let mut p = spec.params.clone();
    let mut d = D2fq::from_params(&mut p).unwrap();
    p.finish().unwrap();
    for (i, &w) in weights.iter().enumerate() {
        d.add_flow(&Flow {
            id: FlowId(i as u32),
            name: format!("f{i}"),
            weight: w,
        });
    }
    d
}

#[test]
fn gvt_rules_of_fig9() {
    let g = SloppyGvt::new();
    assert_eq!(g.load(), (None, 0));
    assert!(g.update(3, 100), "no holder: anyone takes it");
    assert_eq!(g.load(), (Some(3), 100));
    assert!(!g.update(4, 150), "a non-holder may not raise");
    assert!(g.update(3, 150), "the holder raises");
    assert!(!g.update(3, 120), "the holder does not lower itself");
    assert!(g.update(4, 120), "another flow lowers it and takes it");
    assert_eq!(g.load(), (Some(4), 120));
    assert!(!g.release(3), "only the holder releases");
    assert!(g.release(4));
    assert_eq!(g.load(), (None, 120), "release keeps the value");
    assert!(
        g.update(5, 500),
        "after release anyone takes it, even upward"
    );
    g.update(5, u64::MAX);
    assert_eq!(g.value(), SloppyGvt::VALUE_MAX, "48-bit value saturates");
}

/// Four threads, each a flow with a rising vt, hammer update/release while a fifth
/// reads. Invariants: every word read names a real holder (or none) and a value some
/// flow has published; after the threads stop, two sequential update passes bring the
/// value to the exact minimum (the sloppiness is bounded to in-flight races).
#[test]
fn gvt_under_four_threads() {
    const THREADS: usize = 4;
    const OPS: u64 = 200_000;
    let gvt = Arc::new(SloppyGvt::new());
    let published: Arc<Vec<AtomicU64>> =
        Arc::new((0..THREADS).map(|_| AtomicU64::new(0)).collect());
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let (gvt, published, stop) = (gvt.clone(), published.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut reads = 0u64;
            while !stop.load(Ordering::Acquire) {
                let (holder, value) = gvt.load();
                let max_pub = published
                    .iter()
                    .map(|p| p.load(Ordering::Acquire))
                    .max()
                    .unwrap();
                assert!(
                    holder.is_none_or(|h| (h as usize) < THREADS),
                    "bad holder {holder:?}"
                );
                assert!(
                    value <= max_pub,
                    "gvt {value} above every published vt {max_pub}"
                );
                reads += 1;
            }
            reads
        })
    };
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let (gvt, published) = (gvt.clone(), published.clone());
            std::thread::spawn(move || {
                let mut vt = 0u64;
                // Different strides so the minimum moves between threads.
                let stride = 3 + 2 * t as u64;
                for i in 0..OPS {
                    vt += stride;
                    published[t].store(vt, Ordering::Release);
                    gvt.update(t as u16, vt);
                    if i % 997 == (t as u64) * 101 {
                        gvt.release(t as u16);
                    }
                }
                vt
            })
        })
        .collect();
    let finals: Vec<u64> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    stop.store(true, Ordering::Release);
    assert!(reader.join().unwrap() > 0);
    for _ in 0..2 {
        for (t, &vt) in finals.iter().enumerate() {
            gvt.update(t as u16, vt);
        }
    }
    let min = *finals.iter().min().unwrap();
    assert_eq!(gvt.value(), min, "two quiet passes reach the true minimum");
    let holder = gvt.load().0.unwrap() as usize;
    assert_eq!(finals[holder], min);
}

#[test]
fn wrr_weights_follow_the_authors_formula() {
    assert_eq!(d2fq_wrr_weights(256), [256, 16, 1]);
    assert_eq!(d2fq_wrr_weights(6), [252, 126, 42]); // the zssd profile's defaults
    assert_eq!(d2fq_wrr_weights(22), [242, 55, 11]);
    assert_eq!(d2fq_wrr_weights(3), [255, 170, 85]);
    for r in 1..=256 {
        let [h, m, l] = d2fq_wrr_weights(r);
        assert!((1..=256).contains(&l) && l <= m && m <= h && h <= 256);
        assert_eq!(h / l, r.min(256), "H/L is the ratio");
    }
}

#[test]
fn parameter_errors_are_clear() {
    for (spec, want) in [
        ("d2fq:thresholds=fast", "thresholds"),
        ("d2fq:mode=adaptive", "mode"),
        ("d2fq:mode=static,hl=0", "hl"),
        ("d2fq:hl=2", "hl"), // dynamic needs at least 3
        ("d2fq:hl=257", "hl"),
        ("d2fq:tau_l=100", "tau_l"),
        ("d2fq:period_ms=0", "period_ms"),
        ("d2fq:speed=1", "speed"),
    ] {
        let spec: PolicySpec = spec.parse().unwrap();
        let err = policy::build(&spec).err().expect("must fail").to_string();
        assert!(err.contains(want), "{spec}: {err}");
    }
    // An unknown key's error lists the ones the policy takes.
    let spec: PolicySpec = "d2fq:foo=1".parse().unwrap();
    let err = policy::build(&spec).err().expect("must fail").to_string();
    assert!(err.contains("'foo'") && err.contains("it takes"), "{err}");
    assert!(err.contains("tau_l") && err.contains("mode"), "{err}");
    let spec: PolicySpec = "none:foo=1".parse().unwrap();
    let err = policy::build(&spec).err().expect("must fail").to_string();
    assert!(err.contains("no parameters"), "{err}");
    let mut p = Params::parse("thresholds=code,mode=static").unwrap();
    let c = D2fqConfig::from_params(&mut p).unwrap();
    assert_eq!(c.thresholds, D2fqThresholds::Code);
    assert_eq!(c.mode, D2fqMode::Static);
    assert_eq!((c.tau_l, c.tau_m, c.tau_w, c.hl), (8192, 2457, 16384, 6));
    let c = D2fqConfig::defaults(D2fqThresholds::Paper, D2fqMode::Dynamic);
    assert_eq!(c.tau_l, (1u64 << 20) * 840 / 1024);
    assert_eq!((c.tau_m * 2, c.tau_w, c.hl), (c.tau_l, 2 * c.tau_l, 256));
    assert_eq!(c.period_ns, 1_000_000_000);
}

#[test]
fn new_flow_starts_at_gvt_and_idles_after_grace() {
    let mut d = d2fq("d2fq:grace_ms=10", &[1, 1]);
    let v = DeviceView::default();
    // Flow 0 alone runs ahead.
    for i in 0..100 {
        d.enqueue(0, req(i, 0, 4096));
        let x = d.dispatch(0, &v).unwrap();
        d.complete(1000, &done(x.req, x.queue, 1000));
    }
    let vt0 = d.flow_vt(FlowId(0));
    assert_eq!(vt0, 100 * 4096 * 840 / 1024);
    assert_eq!(d.gvt().value(), vt0);
    // Flow 1 arrives: it starts at gvt, not at 0.
    d.enqueue(2000, req(1000, 1, 4096));
    let x = d.dispatch(2000, &v).unwrap();
    assert_eq!(d.flow_vt(FlowId(1)), vt0);
    assert!(d.flow_active(FlowId(1)));
    d.complete(3000, &done(x.req, x.queue, 3000));
    // Nothing in flight: still active during the grace period, idle after it.
    // Flow 0's grace (from t = 1000) ends first, then flow 1's (from t = 3000).
    assert_eq!(d.next_timer_ns(), Some(1000 + 10_000_000));
    let t1 = 3000 + 10_000_000;
    d.timer(t1 - 1);
    assert!(!d.flow_active(FlowId(0)) && d.flow_active(FlowId(1)));
    assert_eq!(d.next_timer_ns(), Some(t1));
    d.timer(t1);
    assert!(!d.flow_active(FlowId(1)));
    // The pending H/L period ends once more, then no timer while all is idle.
    assert_eq!(d.next_timer_ns(), Some(1_000_000_000));
    d.timer(1_000_000_000);
    assert_eq!(d.next_timer_ns(), None, "no timer while everything is idle");
}

#[test]
fn static_ratio_never_changes_and_reaches_the_device() {
    let mut d = d2fq("d2fq:mode=static,hl=4,period_ms=1", &[1, 3]);
    assert_eq!(d.wrr_weights(), Some(d2fq_wrr_weights(4)));
    let v = DeviceView::default();
    let mut now = 0;
    for i in 0..20_000u64 {
        now += 1000;
        d.enqueue(now, req(i, (i % 2) as u32, 4096));
        let x = d.dispatch(now, &v).unwrap();
        d.complete(now, &done(x.req, x.queue, now));
        if d.next_timer_ns().is_some_and(|t| t <= now) {
            d.timer(now);
        }
    }
    assert_eq!(d.hl_ratio(), 4);
}

/// Eq. 3: a flow that spent the period half on high and half on low has virtual
/// slowdown (1 + H/L)/2; the ratio drops to it (rounded up) at the period's end.
#[test]
fn ratio_decreases_to_the_largest_virtual_slowdown() {
    let mut d = d2fq("d2fq:hl=64,period_ms=1000,grace_ms=5000", &[8, 8]);
    let v = DeviceView::default();
    let mut id = 0;
    // Both flows dispatch once (period timer armed at t = 0).
    for f in 0..2 {
        d.enqueue(0, req(id, f, 4096));
        let x = d.dispatch(0, &v).unwrap();
        d.complete(10, &done(x.req, QueueClass::High, 10));
        id += 1;
    }
    // Flow 1: equal bytes completed on high and low; flow 0 on high only.
    for (f, q) in [
        (1, QueueClass::High),
        (1, QueueClass::Low),
        (0, QueueClass::High),
    ] {
        for _ in 0..10 {
            d.enqueue(20, req(id, f, 4096));
            let x = d.dispatch(20, &v).unwrap();
            d.complete(30, &done(x.req, q, 30));
            id += 1;
        }
    }
    let t = d.next_timer_ns().unwrap();
    assert_eq!(t, 1_000_000_000);
    d.timer(t);
    // Flow 1 completed 11 on high (incl. the first) and 10 on low: (11 + 10·64)/21.
    let want = ((11.0 + 10.0 * 64.0) / 21.0f64).ceil() as u32;
    assert_eq!(d.hl_ratio(), want);
}

#[derive(Clone, Debug)]
enum Op2 {
    Arrive { flow: u32, len_k: u32 },
    Dispatch,
    Complete(usize),
    Tick(u64),
}

fn ops() -> impl Strategy<Value = Vec<Op2>> {
    prop::collection::vec(
        prop_oneof![
            3 => (0u32..4, 1u32..33).prop_map(|(flow, len_k)| Op2::Arrive { flow, len_k }),
            3 => Just(Op2::Dispatch),
            3 => (0usize..64).prop_map(Op2::Complete),
            1 => (1u64..400_000_000).prop_map(Op2::Tick),
        ],
        1..400,
    )
}

proptest! {
    /// Work conservation, Eq. 1 and vt monotonicity over random event sequences.
    #[test]
    fn d2fq_invariants(ops in ops(), code in any::<bool>(), dynamic in any::<bool>()) {
        let spec = format!(
            "d2fq:thresholds={},mode={},period_ms=50,grace_ms=20",
            if code { "code" } else { "paper" },
            if dynamic { "dynamic" } else { "static" }
        );
        let mut d = d2fq(&spec, &[1, 2, 3, 8]);
        let cfg = {
            let s: PolicySpec = spec.parse().unwrap();
            D2fqConfig::from_params(&mut s.params.clone()).unwrap()
        };
        let v = DeviceView::default();
        let mut now = 0u64;
        let mut id = 0u64;
        let mut inflight: Vec<(Request, QueueClass)> = Vec::new();
        let mut last_vt = [0u64; 4];
        let mut was_active = [false; 4];
        for op in ops {
            match op {
                Op2::Arrive { flow, len_k } => {
                    d.enqueue(now, req(id, flow, len_k * 4096));
                    id += 1;
                }
                Op2::Dispatch => {
                    let queued = d.queued();
                    let active_before = (0..4).filter(|&f| d.flow_active(FlowId(f))).count();
                    let gvt = d.gvt().value();
                    match d.dispatch(now, &v) {
                        None => prop_assert_eq!(queued, 0, "held a request with room"),
                        Some(x) => {
                            let f = x.req.flow;
                            let vt = d.flow_vt(f);
                            let lone = cfg.lone_flow_medium
                                && active_before + usize::from(active_before == 0) <= 1
                                && (0..4).filter(|&g| d.flow_active(FlowId(g))).count() == 1;
                            let gap = vt.saturating_sub(gvt);
                            let want = if lone {
                                QueueClass::Medium
                            } else if gap < cfg.tau_m {
                                QueueClass::High
                            } else if gap < cfg.tau_l {
                                QueueClass::Medium
                            } else {
                                QueueClass::Low
                            };
                            prop_assert_eq!(x.queue, want, "Eq. 1 (gap {})", gap);
                            inflight.push((x.req, x.queue));
                        }
                    }
                }
                Op2::Complete(i) => {
                    if !inflight.is_empty() {
                        let (r, q) = inflight.swap_remove(i % inflight.len());
                        now += 1000;
                        d.complete(now, &done(r, q, now));
                    }
                }
                Op2::Tick(dt) => {
                    now += dt;
                    if d.next_timer_ns().is_some_and(|t| t <= now) {
                        d.timer(now);
                    }
                }
            }
            for f in 0..4u32 {
                let vt = d.flow_vt(FlowId(f));
                let active = d.flow_active(FlowId(f));
                // While a flow stays active its vt never goes back (reactivation
                // restarts it at gvt, Fig. 10 line 11).
                if active && was_active[f as usize] {
                    prop_assert!(vt >= last_vt[f as usize],
                        "flow {} vt went back {} -> {}", f, last_vt[f as usize], vt);
                }
                last_vt[f as usize] = vt;
                was_active[f as usize] = active;
            }
            let hl = d.hl_ratio();
            prop_assert!((1..=256).contains(&hl));
            if !dynamic {
                prop_assert_eq!(hl, cfg.hl);
            }
        }
    }
}
