//! Trims (`Op::Trim`) through every policy: each one hands every trim out once, and
//! the policies that split the directions put trims on the write side (Linux's
//! `rq_data_dir`: a discard is a write-direction request).

use sluice_core::policy::{
    build, Admission, Completion, DeviceView, Policy, PolicySpec, POLICY_NAMES,
};
use sluice_core::{Flow, FlowId, IoClass, Op, ReqId, Request};

fn policy(name: &str) -> Box<dyn Policy> {
    let mut p = build(&name.parse::<PolicySpec>().unwrap()).unwrap();
    p.add_flow(&Flow {
        id: FlowId(0),
        name: "f".into(),
        weight: 1,
    });
    p
}

fn req(id: u64, op: Op, class: IoClass) -> Request {
    Request {
        id: ReqId(id),
        flow: FlowId(0),
        op,
        offset: id << 20,
        len: 1 << 20,
        class,
        submit_ns: 0,
        hwq: 0,
        parts: 1,
        fua: false,
        placement: 0,
        atomic: false,
    }
}

const VIEW: DeviceView = DeviceView {
    inflight: 0,
    inflight_per_class: [0; 4],
    max_inflight: 1 << 20,
};

#[test]
fn every_policy_dispatches_and_completes_trims() {
    for name in POLICY_NAMES {
        let mut p = policy(name);
        let ops = [Op::Trim, Op::Read, Op::Trim, Op::Write, Op::Trim];
        let mut now = 0;
        let mut waiting: Vec<Request> = ops
            .iter()
            .enumerate()
            .map(|(i, &op)| req(i as u64, op, IoClass::Normal))
            .collect();
        let mut seen = Vec::new();
        for _ in 0..10_000 {
            waiting.retain(|r| {
                if p.admit(now, r) == Admission::Admit {
                    p.enqueue(now, *r);
                    false
                } else {
                    true
                }
            });
            now += 1_000;
            if let Some(t) = p.next_timer_ns() {
                if t <= now {
                    p.timer(now);
                }
            }
            while let Some(d) = p.dispatch(now, &VIEW) {
                seen.push(d.req.id.0);
                if d.req.op == Op::Trim {
                    assert_eq!(d.req.len, 1 << 20, "{name}: a trim is not split");
                }
                p.complete(
                    now + 500,
                    &Completion {
                        req: d.req,
                        queue: d.queue,
                        dispatch_ns: now,
                        complete_ns: now + 500,
                        ok: true,
                    },
                );
            }
            if waiting.is_empty() && p.queued() == 0 {
                break;
            }
        }
        // Pieces of a split read or write share their parent's id.
        seen.sort();
        seen.dedup();
        assert_eq!(seen, vec![0, 1, 2, 3, 4], "{name}: every request once");
        assert_eq!(p.queued(), 0, "{name}");
    }
}

/// The order `name` hands out requests of ops `ops` (ids in arrival order), all
/// enqueued at once and dispatched one at a time, each completing before the next.
fn order(name: &str, ops: &[Op]) -> Vec<u64> {
    let mut p = policy(name);
    for (i, &op) in ops.iter().enumerate() {
        let mut r = req(i as u64, op, IoClass::Normal);
        // Offsets against arrival order, so a sorted batch and a FIFO differ.
        r.offset = ((ops.len() - i) as u64) << 20;
        r.len = 4096;
        assert_eq!(p.admit(0, &r), Admission::Admit);
        p.enqueue(0, r);
    }
    let mut out = Vec::new();
    let mut now = 0;
    while let Some(d) = p.dispatch(now, &VIEW) {
        out.push(d.req.id.0);
        now += 1_000;
        p.complete(
            now,
            &Completion {
                req: d.req,
                queue: d.queue,
                dispatch_ns: now - 1_000,
                complete_ns: now,
                ok: true,
            },
        );
    }
    out
}

#[test]
fn trims_go_in_the_write_direction() {
    assert!(Op::Trim.is_write_dir() && Op::Write.is_write_dir());
    assert!(!Op::Read.is_write_dir() && !Op::Flush.is_write_dir());
    assert!(!Op::Trim.is_read());
    assert_eq!(Op::Trim.to_string(), "trim");
    // A trim is whole: split() leaves it as one piece.
    assert_eq!(req(9, Op::Trim, IoClass::Normal).split(4096).count(), 1);
    // mq-deadline, ld and sfqd schedule a trim as a write; kyber as a flush (its
    // OTHER domain).
    let mix = |x: Op| vec![Op::Read, x, Op::Read, x, Op::Read, Op::Read, x, Op::Read];
    for (name, like) in [
        ("mq-deadline", Op::Write),
        ("ld", Op::Write),
        ("sfqd", Op::Write),
        ("kyber", Op::Flush),
    ] {
        let trims = order(name, &mix(Op::Trim));
        assert_eq!(trims, order(name, &mix(like)), "{name}: trims as {like}");
        assert_eq!(trims.len(), 8);
    }
    // And mq-deadline does separate the directions here: as reads they would go in
    // another order.
    assert_ne!(
        order("mq-deadline", &mix(Op::Trim)),
        order("mq-deadline", &mix(Op::Read))
    );
}
