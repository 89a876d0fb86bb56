//! FIOS (FAST '12 §4) and its baselines (quanta, cfq), driven by hand: epoch accounting,
//! write blocking, anticipation bounds, starvation freedom, Eq. 1, parameters.

use sluice_core::policy::{
    self, Completion, CostModel, DeviceView, Fios, FiosConfig, Policy, PolicySpec, Quanta,
};
use sluice_core::{Flow, FlowId, IoClass, Nanos, Op, QueueClass, ReqId, Request};

const US: Nanos = 1_000;
const MS: Nanos = 1_000_000;

fn req(id: u64, flow: u32, op: Op) -> Request {
    Request {
        id: ReqId(id),
        flow: FlowId(flow),
        op,
        offset: id * 4096,
        len: 4096,
        class: IoClass::Normal,
        submit_ns: 0,
        hwq: 0,
        parts: 1,
        fua: false,
        placement: 0,
        atomic: false,
    }
}

fn view(inflight: u32) -> DeviceView {
    DeviceView {
        inflight,
        inflight_per_class: [0, 0, inflight, 0],
        max_inflight: 1024,
    }
}

fn done(r: Request, dispatch_ns: Nanos, complete_ns: Nanos) -> Completion {
    Completion {
        req: r,
        queue: QueueClass::Medium,
        dispatch_ns,
        complete_ns,
        ok: true,
    }
}

/// Calibrated FIOS: reads cost 100 µs, writes 1 ms.
fn calibrated(write_blocking: bool) -> Fios {
    let mut p = Fios::new(FiosConfig {
        timeslice_ns: 10 * MS,
        write_blocking,
        cost: CostModel::Linear {
            read_ns: 100_000.0,
            read_ns_per_byte: 0.0,
            write_ns: 1_000_000.0,
            write_ns_per_byte: 0.0,
        },
        ..FiosConfig::default()
    });
    for i in 0..2 {
        p.add_flow(&Flow {
            id: FlowId(i),
            name: format!("t{i}"),
            weight: 4,
        });
    }
    p
}

/// A closed-loop drive of `p`: flow `f` keeps `depth[f]` requests of `ops[f]`
/// outstanding; the device serves every dispatched request in `svc(op)` (unlimited
/// parallelism); each flow thinks `think[f]` after a completion. Calls `check` after
/// every completion. Returns per-flow completions and the dispatch log (time, flow).
#[allow(clippy::too_many_arguments)]
fn drive<P: Policy>(
    p: &mut P,
    ops: &[Op],
    depth: &[u32],
    think: &[Nanos],
    svc: impl Fn(Op) -> Nanos,
    until: Nanos,
    mut check: impl FnMut(&P, Nanos, &Completion),
) -> (Vec<u64>, Vec<(Nanos, u32)>) {
    let n = ops.len();
    let mut id = 0u64;
    let mut inflight: Vec<(Nanos, Nanos, Request)> = Vec::new(); // (done, dispatched, req)
    let mut arrivals: Vec<(Nanos, u32)> = Vec::new();
    for (f, &d) in depth.iter().enumerate() {
        for _ in 0..d {
            arrivals.push((0, f as u32));
        }
    }
    let mut completed = vec![0u64; n];
    let mut log = Vec::new();
    let mut now = 0;
    while now <= until {
        // Arrivals due now.
        arrivals.sort();
        while arrivals.first().is_some_and(|a| a.0 <= now) {
            let (_, f) = arrivals.remove(0);
            id += 1;
            p.enqueue(now, req(id, f, ops[f as usize]));
        }
        if p.next_timer_ns().is_some_and(|t| t <= now) {
            p.timer(now);
        }
        while let Some(d) = p.dispatch(now, &view(inflight.len() as u32)) {
            log.push((now, d.req.flow.0));
            inflight.push((now + svc(d.req.op), now, d.req));
        }
        // Next event.
        let next = [
            inflight.iter().map(|x| x.0).min(),
            arrivals.iter().map(|a| a.0).min(),
            p.next_timer_ns(),
        ]
        .into_iter()
        .flatten()
        .min();
        let Some(t) = next else { break };
        now = t.max(now);
        inflight.sort_by_key(|x| (x.0, x.2.id));
        while inflight.first().is_some_and(|x| x.0 <= now) {
            let (_, at, r) = inflight.remove(0);
            let c = done(r, at, now);
            p.complete(now, &c);
            check(p, now, &c);
            let f = r.flow.0;
            completed[f as usize] += 1;
            arrivals.push((now + think[f as usize], f));
        }
    }
    (completed, log)
}

#[test]
fn slices_dip_below_zero_by_at_most_one_request_and_epochs_reset_all() {
    let mut p = calibrated(true);
    let slice = 10 * MS as i64;
    let mut epoch = p.epoch();
    let mut epochs = 0;
    let (done, _) = drive(
        &mut p,
        &[Op::Read, Op::Write],
        &[4, 2],
        &[0, 0],
        |op| if op == Op::Read { 150 * US } else { 900 * US },
        200 * MS,
        |f, _, c| {
            // Several requests of a flow may be in flight, each reserved at issue:
            // the overdraft is at most one request's cost.
            let cost = if c.req.op == Op::Read {
                100_000
            } else {
                1_000_000
            };
            let left = f.slice_left_ns(c.req.flow);
            assert!(left >= -cost, "{:?} slice {left} after {c:?}", c.req.flow);
            for t in 0..2 {
                assert!(f.slice_left_ns(FlowId(t)) <= slice);
            }
            if f.epoch() != epoch {
                epoch = f.epoch();
                epochs += 1;
            }
        },
    );
    assert!(done[0] > 0 && done[1] > 0);
    assert!(
        epochs >= 5,
        "only {epochs} epochs in 200 ms of 10 ms slices"
    );
}

#[test]
fn epoch_reset_gives_every_task_a_full_slice() {
    let mut p = calibrated(true);
    // Flow 0 spends its slice: 100 reads of 100 µs.
    let mut t = 0;
    for k in 0..100 {
        let r = req(k, 0, Op::Read);
        p.enqueue(t, r);
        let d = p.dispatch(t, &view(0)).expect("slice left");
        t += 150 * US;
        p.complete(t, &done(d.req, t - 150 * US, t));
    }
    assert_eq!(p.slice_left_ns(FlowId(0)), 0);
    let e = p.epoch();
    // Flow 0 asks again: no slice; flow 1 has slice but nothing to do, so the epoch
    // ends (after flow 0's read anticipation, which needs slice, is not started).
    p.enqueue(t, req(1000, 0, Op::Read));
    let d = p.dispatch(t, &view(0)).expect("a new epoch lets flow 0 go");
    assert_eq!(d.req.id, ReqId(1000));
    assert_eq!(p.epoch(), e + 1);
    assert_eq!(p.slice_left_ns(FlowId(0)), 10 * MS as i64);
    assert_eq!(p.slice_left_ns(FlowId(1)), 10 * MS as i64);
}

#[test]
fn write_blocking_holds_writes_behind_reads() {
    let mut p = calibrated(true);
    let r = req(1, 0, Op::Read);
    let w = req(2, 1, Op::Write);
    p.enqueue(0, w);
    p.enqueue(0, r);
    // Read preference: the read goes first even though the write came first.
    assert_eq!(p.dispatch(0, &view(0)).unwrap().req.id, ReqId(1));
    // Write blocking: not while the read is in flight.
    assert!(p.dispatch(0, &view(1)).is_none());
    p.complete(100 * US, &done(r, 0, 100 * US));
    // After a read, flow 0 (slice left, nothing queued) anticipates another read and
    // the write still waits ...
    assert!(p.anticipating_until(FlowId(0)).is_some());
    assert!(p.dispatch(100 * US, &view(0)).is_none());
    // ... until the anticipation runs out.
    let t = p.next_timer_ns().unwrap();
    p.timer(t);
    assert_eq!(p.dispatch(t, &view(0)).unwrap().req.id, ReqId(2));

    // Switched off, the write goes beside the read.
    let mut p = calibrated(false);
    p.enqueue(0, r);
    p.enqueue(0, w);
    assert_eq!(p.dispatch(0, &view(0)).unwrap().req.id, ReqId(1));
    assert_eq!(p.dispatch(0, &view(1)).unwrap().req.id, ReqId(2));
}

#[test]
fn anticipation_is_bounded_by_alpha_and_charged_to_the_anticipator() {
    for alpha in [0.5, 0.75] {
        let mut p = Fios::new(FiosConfig {
            alpha,
            ..*calibrated(true).config()
        });
        let r = req(1, 0, Op::Read);
        p.enqueue(0, r);
        p.enqueue(0, req(2, 1, Op::Write));
        p.dispatch(0, &view(0)).unwrap();
        // T_service = 200 µs (first sample).
        p.complete(200 * US, &done(r, 0, 200 * US));
        assert_eq!(p.service_ns(FlowId(0)), 200_000.0);
        let bound = (200_000.0 * alpha / (1.0 - alpha)) as Nanos;
        assert_eq!(p.anticipating_until(FlowId(0)), Some(200 * US + bound));
        assert_eq!(p.next_timer_ns(), Some(200 * US + bound));
        let before = p.slice_left_ns(FlowId(0));
        assert!(
            p.dispatch(200 * US, &view(0)).is_none(),
            "the write is held"
        );
        p.timer(200 * US + bound);
        assert!(p.anticipating_until(FlowId(0)).is_none());
        // The idle time (the whole bound: the device stood idle with a write held)
        // is charged to the anticipating reader, not to the writer.
        assert_eq!(before - p.slice_left_ns(FlowId(0)), bound as i64);
        assert_eq!(p.slice_left_ns(FlowId(1)), 10 * MS as i64);
    }
}

#[test]
fn anticipation_ends_when_the_task_issues_again() {
    let mut p = calibrated(true);
    let r = req(1, 0, Op::Read);
    p.enqueue(0, r);
    p.enqueue(0, req(2, 1, Op::Write));
    p.dispatch(0, &view(0)).unwrap();
    p.complete(100 * US, &done(r, 0, 100 * US));
    assert!(p.dispatch(100 * US, &view(0)).is_none());
    p.enqueue(130 * US, req(3, 0, Op::Read));
    assert!(p.anticipating_until(FlowId(0)).is_none());
    assert_eq!(p.dispatch(130 * US, &view(0)).unwrap().req.id, ReqId(3));
    // 30 µs of idle charged on top of the read's cost.
    assert_eq!(
        p.slice_left_ns(FlowId(0)),
        10 * MS as i64 - 100_000 - 30_000
    );
}

#[test]
fn writers_are_not_starved_by_a_continuous_reader() {
    // Flow 0 keeps 4 reads outstanding, always; flow 1 writes. Within each epoch of
    // two 10 ms slices the writer must get the device.
    let mut p = calibrated(true);
    let (done, log) = drive(
        &mut p,
        &[Op::Read, Op::Write],
        &[4, 1],
        &[0, 0],
        |op| if op == Op::Read { 100 * US } else { 1000 * US },
        500 * MS,
        |_, _, _| {},
    );
    assert!(done[1] > 100, "writer completed only {} writes", done[1]);
    let writes: Vec<Nanos> = log.iter().filter(|x| x.1 == 1).map(|x| x.0).collect();
    let gap = writes.windows(2).map(|w| w[1] - w[0]).max().unwrap();
    assert!(gap <= 25 * MS, "the writer waited {gap} ns between writes");
    // Fair: equal device time (reads 100 µs, writes 1 ms each) within 10 %.
    let ratio = (done[0] as f64 * 0.1) / (done[1] as f64 * 1.0);
    assert!((ratio - 1.0).abs() < 0.1, "device-time ratio {ratio}");
}

#[test]
fn eq1_charges_elapsed_time_over_parallelism() {
    let mut p = Fios::new(FiosConfig::default()); // no calibration: Eq. 1
    let a = req(1, 0, Op::Read);
    let b = req(2, 1, Op::Read);
    p.enqueue(0, a);
    p.enqueue(0, b);
    p.dispatch(0, &view(0)).unwrap(); // P_issuance = 1
    p.dispatch(0, &view(1)).unwrap(); // P_issuance = 2
    p.complete(400 * US, &done(a, 0, 400 * US));
    p.complete(400 * US, &done(b, 0, 400 * US));
    let full = FiosConfig::default().timeslice_ns as i64;
    assert_eq!(full - p.slice_left_ns(FlowId(0)), 400_000);
    assert_eq!(full - p.slice_left_ns(FlowId(1)), 200_000);
}

#[test]
fn proximity_variant_holds_everyone_else() {
    let mut p = Fios::new(FiosConfig {
        anticipation: sluice_core::policy::Anticipation::Proximity,
        ..*calibrated(true).config()
    });
    let a = req(1, 0, Op::Read);
    p.enqueue(0, a);
    p.dispatch(0, &view(0)).unwrap();
    p.complete(100 * US, &done(a, 0, 100 * US));
    assert_eq!(p.anticipating_until(FlowId(0)), Some(100 * US + 6 * MS));
    p.enqueue(100 * US, req(2, 1, Op::Read));
    assert!(
        p.dispatch(100 * US, &view(0)).is_none(),
        "flow 1's read is held"
    );
    p.timer(100 * US + 6 * MS);
    assert_eq!(
        p.dispatch(100 * US + 6 * MS, &view(0)).unwrap().req.id,
        ReqId(2)
    );
}

#[test]
fn quanta_are_exclusive_and_last_their_whole_length() {
    let mut q = Quanta::new(5 * MS);
    for i in 0..2 {
        q.add_flow(&Flow {
            id: FlowId(i),
            name: format!("t{i}"),
            weight: 4,
        });
    }
    let (done, log) = drive(
        &mut q,
        &[Op::Read, Op::Write],
        &[1, 1],
        &[300 * US, 0],
        |op| if op == Op::Read { 100 * US } else { 1000 * US },
        100 * MS,
        |_, _, _| {},
    );
    // Never both flows dispatched within one quantum: the log alternates in runs.
    let switches = log.windows(2).filter(|w| w[0].1 != w[1].1).count();
    assert!(
        switches <= 21,
        "{switches} switches in 100 ms of 5 ms quanta"
    );
    // The reader thinks 300 µs per 100 µs read, so in its quanta the device idles
    // three quarters of the time: about 5 ms / 400 µs = 12 reads per quantum.
    assert!(done[0] > 0 && done[1] > 0);
    let per_quantum = done[0] as f64 / 10.0;
    assert!((10.0..=14.0).contains(&per_quantum), "{per_quantum}");
}

#[test]
fn cfq_slices_follow_priority_and_serve_one_task_at_a_time() {
    let c = sluice_core::policy::Cfq::new(100 * MS, 8);
    assert_eq!(c.slice_for(4), 100 * MS);
    assert_eq!(c.slice_for(0), 180 * MS);
    assert_eq!(c.slice_for(7), 40 * MS);
    let mut c = sluice_core::policy::Cfq::new(100 * MS, 8);
    for i in 0..2 {
        c.add_flow(&Flow {
            id: FlowId(i),
            name: format!("t{i}"),
            weight: 4,
        });
    }
    let a = req(1, 0, Op::Read);
    let b = req(2, 0, Op::Read);
    let w = req(3, 1, Op::Write);
    c.enqueue(0, a);
    c.enqueue(0, b);
    c.enqueue(0, w);
    assert_eq!(c.dispatch(0, &view(0)).unwrap().req.id, ReqId(1));
    assert_eq!(c.dispatch(0, &view(1)).unwrap().req.id, ReqId(2));
    // Flow 0 has nothing queued but two in flight: flow 1 waits (one task at a time).
    assert!(c.dispatch(0, &view(2)).is_none());
    c.complete(10 * US, &done(a, 0, 10 * US));
    assert!(c.dispatch(10 * US, &view(1)).is_none());
    c.complete(20 * US, &done(b, 0, 20 * US));
    // Empty at completion: expired at once (no idling), flow 1 goes.
    c.enqueue(20 * US, req(4, 0, Op::Read));
    assert_eq!(c.dispatch(20 * US, &view(0)).unwrap().req.id, ReqId(3));
}

#[test]
fn parameters_are_checked() {
    let build = |s: &str| policy::build(&s.parse::<PolicySpec>().unwrap()).map(|p| p.name());
    assert_eq!(build("fios").unwrap(), "fios");
    assert_eq!(
        build("fios:write_blocking=0,anticipation=proximity").unwrap(),
        "fios"
    );
    assert_eq!(
        build("fios:read_cost_ns=100000,read_ns_per_kb=50,write_cost_ns=1e6,write_ns_per_kb=10")
            .unwrap(),
        "fios"
    );
    for bad in [
        "fios:alpha=1",
        "fios:alpha=0",
        "fios:write_blocking=2",
        "fios:anticipation=sometimes",
        "fios:read_cost_ns=100",
        "fios:read_cost_ns=-5,write_cost_ns=1",
        "fios:timeslice_ms=0",
        "fios:slice=3",
        "quanta:quantum_ms=0",
        "cfq:quantum=0",
    ] {
        let e = build(bad).unwrap_err().to_string();
        assert!(e.contains("policy '"), "{bad}: {e}");
    }
    assert_eq!(build("quanta:quantum_ms=50").unwrap(), "quanta");
    assert_eq!(build("cfq:slice_ms=40,quantum=4").unwrap(), "cfq");
}
