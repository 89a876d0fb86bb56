//! Controller fetch arbitration: WRR weights, urgent priority, round robin.

use crate::common;
use common::*;
use sluice_device::{Arbitration, Burst, DeviceProfile, NvmeSsd, Op, QueueClass};

/// Streams keeping every (core, class) queue in `classes` saturated.
fn saturate(ssd: &NvmeSsd, cores: u16, classes: &[QueueClass], qd: u32) -> Vec<Stream> {
    let mut v = Vec::new();
    for c in 0..cores {
        for &class in classes {
            v.push(Stream {
                qid: ssd.queue_id(c, class),
                qd,
                op: Op::Read,
                len: 4096,
            });
        }
    }
    v
}

fn wrr_ratio_check(arb: Arbitration) {
    let p = DeviceProfile::builtin("zssd")
        .unwrap()
        .with_arbitration(arb);
    let mut ssd = NvmeSsd::new(&p, 4);
    let streams = saturate(
        &ssd,
        4,
        &[QueueClass::High, QueueClass::Medium, QueueClass::Low],
        100,
    );
    assert!(4 * 3 * 100 > p.controller.max_outstanding);
    let r = closed_loop(&mut ssd, &streams, 20_000, 200_000, 1, false);
    let before = r.fetched_at_warm;
    let after = ssd.stats().fetched_per_class;
    let f: Vec<f64> = (0..4).map(|i| (after[i] - before[i]) as f64).collect();
    assert_eq!(f[0], 0.0, "no urgent commands were submitted");
    let w = [arb.hpw as f64, arb.mpw as f64, arb.lpw as f64];
    let total: f64 = f[1..].iter().sum();
    let wsum: f64 = w.iter().sum();
    for i in 0..3 {
        let share = f[i + 1] / total;
        let want = w[i] / wsum;
        eprintln!(
            "WRR {}/{}/{} burst {}: class {} fetched {} = {:.4} of fetches, weight share {:.4}",
            arb.hpw,
            arb.mpw,
            arb.lpw,
            arb.burst,
            i + 1,
            f[i + 1],
            share,
            want
        );
        assert!(
            within(share, want, 0.02),
            "class {} got {share:.4} of fetches, weight share {want:.4}",
            i + 1
        );
    }
}

#[test]
fn wrr_fetches_match_weights() {
    // zssd's default: D2FQ base 6 → 252:126:42, burst 8.
    wrr_ratio_check(DeviceProfile::builtin("zssd").unwrap().arbitration);
    wrr_ratio_check(Arbitration::wrr(16, 4, 1, Burst::Limited(2)));
    wrr_ratio_check(Arbitration::wrr(3, 2, 1, Burst::Unlimited));
}

#[test]
fn urgent_is_fetched_before_weighted() {
    let p = DeviceProfile::builtin("zssd").unwrap();
    let cores = 4;
    let mut ssd = NvmeSsd::new(&p, cores);
    let max = p.controller.max_outstanding;
    let mut tag = 0;
    let mut submit = |ssd: &mut NvmeSsd, qid: u16, now: u64| {
        tag += 1;
        ssd.submit(
            now,
            qid,
            sluice_device::Command {
                tag,
                op: Op::Read,
                offset: tag as u64 * 4096,
                len: 4096,
                fua: false,
                placement: 0,
            },
        )
        .unwrap();
    };
    // Fill the controller and build a weighted backlog.
    for i in 0..(max + 300) {
        let class = [QueueClass::High, QueueClass::Medium, QueueClass::Low][i as usize % 3];
        let qid = ssd.queue_id((i % cores as u32) as u16, class);
        submit(&mut ssd, qid, 0);
    }
    assert_eq!(ssd.outstanding(), max);
    // Then urgent commands on every core.
    let urgent = 200u32;
    for i in 0..urgent {
        let qid = ssd.queue_id((i % cores as u32) as u16, QueueClass::Urgent);
        submit(&mut ssd, qid, 1);
    }
    let weighted = |ssd: &NvmeSsd| ssd.stats().fetched_per_class[1..].iter().sum::<u64>();
    let w0 = weighted(&ssd);
    let mut out = Vec::new();
    let mut steps = 0;
    while ssd.stats().fetched_per_class[0] < urgent as u64 {
        let t = ssd.next_event_ns().unwrap();
        ssd.advance(t, &mut out);
        steps += 1;
        assert_eq!(
            weighted(&ssd),
            w0,
            "a weighted command was fetched while urgent ones waited"
        );
    }
    assert!(steps >= urgent as usize / 2);
    // Once urgent is drained the weighted backlog moves again.
    for _ in 0..10 {
        let t = ssd.next_event_ns().unwrap();
        ssd.advance(t, &mut out);
    }
    assert!(weighted(&ssd) > w0);
    // Every urgent command's fetch preceded every later weighted fetch: check by times.
    let last_urgent_fetch = out
        .iter()
        .filter(|c| c.qid % 4 == 0)
        .map(|c| c.fetch_ns)
        .max()
        .unwrap();
    assert!(out
        .iter()
        .filter(|c| c.qid % 4 != 0 && c.fetch_ns > 1)
        .all(|c| c.fetch_ns >= last_urgent_fetch));
}

#[test]
fn round_robin_is_equal_across_saturated_queues() {
    for (name, burst) in [("ull", Burst::Limited(8)), ("nand", Burst::Limited(1))] {
        let p = DeviceProfile::builtin(name)
            .unwrap()
            .with_arbitration(Arbitration::rr(burst));
        let cores = 3;
        let mut ssd = NvmeSsd::new(&p, cores);
        // All four classes on every core: round robin ignores the class.
        let streams = saturate(&ssd, cores, &QueueClass::ALL, 200);
        assert!(streams.len() as u32 * 200 > p.controller.max_outstanding);
        let r = closed_loop(&mut ssd, &streams, 20_000, 200_000, 3, true);
        let mut per_q = vec![0u64; cores as usize * 4];
        for c in r.log.iter().skip(20_000) {
            per_q[c.qid as usize] += 1;
        }
        let mean = per_q.iter().sum::<u64>() as f64 / per_q.len() as f64;
        eprintln!("{name} rr: completions per queue {per_q:?}");
        for (q, &n) in per_q.iter().enumerate() {
            assert!(
                within(n as f64, mean, 0.02),
                "{name}: queue {q} got {n}, mean {mean:.0}"
            );
        }
        let f = ssd.stats().fetched_per_class;
        let fm = f.iter().sum::<u64>() as f64 / 4.0;
        assert!(f.iter().all(|&x| within(x as f64, fm, 0.02)), "{f:?}");
    }
}

#[test]
fn wrr_shares_device_bandwidth_by_weight() {
    // With the device saturated, completions follow fetches: a high-class flow gets
    // HPW/LPW times the IOPS of a low-class flow.
    let p = DeviceProfile::builtin("zssd").unwrap();
    let mut ssd = NvmeSsd::new(&p, 2);
    let streams = saturate(&ssd, 2, &[QueueClass::High, QueueClass::Low], 128);
    let r = closed_loop(&mut ssd, &streams, 10_000, 100_000, 4, true);
    let (mut hi, mut lo) = (0u64, 0u64);
    for c in r.log.iter().skip(10_000) {
        match c.qid % 4 {
            1 => hi += 1,
            3 => lo += 1,
            _ => unreachable!(),
        }
    }
    let ratio = hi as f64 / lo as f64;
    eprintln!("zssd high/low completions {hi}/{lo} = {ratio:.2}");
    assert!(within(ratio, 252.0 / 42.0, 0.02), "ratio {ratio}");

    // The same load under round robin shares equally.
    let p = p.with_arbitration("rr".parse().unwrap());
    let mut ssd = NvmeSsd::new(&p, 2);
    let r = closed_loop(&mut ssd, &streams, 10_000, 100_000, 4, true);
    let hi = r.log[10_000..].iter().filter(|c| c.qid % 4 == 1).count() as f64;
    let lo = r.log[10_000..].iter().filter(|c| c.qid % 4 == 3).count() as f64;
    assert!(within(hi / lo, 1.0, 0.02), "rr high/low {}", hi / lo);
}
