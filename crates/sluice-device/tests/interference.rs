//! `media.read_block_after_write_ns`: reads on a unit wait that long after its last
//! write ended, writes do not. Off (absent or 0) it is the model before it existed;
//! on, pure reads and pure writes keep their figures and only a mix slows.

use crate::common;
use common::*;
use sluice_device::{Command, DeviceProfile, NvmeSsd, Op, QueueClass};

/// A read stream (QD 8) and a write stream (QD 4) on two cores, recorded.
fn mixed_log(p: &DeviceProfile) -> (RunResult, sluice_device::DeviceStats) {
    let mut ssd = NvmeSsd::new(p, 2);
    ssd.set_seed(5);
    let streams = [
        Stream {
            qid: ssd.queue_id(0, QueueClass::Medium),
            qd: 8,
            op: Op::Read,
            len: 4096,
        },
        Stream {
            qid: ssd.queue_id(1, QueueClass::Medium),
            qd: 4,
            op: Op::Write,
            len: 16384,
        },
    ];
    let r = closed_loop(&mut ssd, &streams, 1_000, 20_000, 9, true);
    (r, ssd.stats().clone())
}

#[test]
fn off_gives_the_same_completions_as_a_profile_without_it() {
    for name in DeviceProfile::BUILTIN {
        let base = DeviceProfile::builtin(name).unwrap();
        assert_eq!(base.media.read_block_after_write_ns, None, "{name}");
        let mut zero = base.clone();
        zero.media.read_block_after_write_ns = Some(0);
        zero.validate().unwrap();
        let (a, sa) = mixed_log(&base);
        let (b, sb) = mixed_log(&zero);
        assert_eq!(a.log, b.log, "{name}: completions");
        assert_eq!(a.end_ns, b.end_ns, "{name}");
        assert_eq!(sa, sb, "{name}: device counters");
    }
}

/// `ull` without variation, so times are exact.
fn ull() -> DeviceProfile {
    let mut p = DeviceProfile::builtin("ull").unwrap();
    p.service = None;
    p
}

#[test]
fn pure_reads_and_pure_writes_do_not_feel_it() {
    let base = ull();
    let mut on = base.clone();
    on.media.read_block_after_write_ns = Some(50_000);
    on.validate().unwrap();
    for op in [Op::Read, Op::Write] {
        let a = run_qd(&base, 32, op, 4096, 1_000, 10_000);
        let b = run_qd(&on, 32, op, 4096, 1_000, 10_000);
        assert_eq!((a.iops, a.mean_lat_ns), (b.iops, b.mean_lat_ns), "{op:?}");
    }
    // A mix slows: reads wait for the block after writes on their units.
    let read_mean = |r: &RunResult| {
        let v: Vec<u64> = r
            .log
            .iter()
            .filter(|c| c.qid == QueueClass::Medium.index() as u16) // core 0
            .map(|c| c.complete_ns - c.submit_ns)
            .collect();
        v.iter().sum::<u64>() as f64 / v.len() as f64
    };
    let (a, _) = mixed_log(&base);
    let (b, _) = mixed_log(&on);
    let (ra, rb) = (read_mean(&a), read_mean(&b));
    assert!(rb > ra + 5_000.0, "reads: {rb} vs {ra} ns");
    assert!(b.iops < a.iops, "{} vs {}", b.iops, a.iops);
}

/// Latency of one command submitted at `at` on an idle queue of `ssd`, ns.
fn one(ssd: &mut NvmeSsd, at: u64, op: Op, tag: u32) -> (u64, u64) {
    let qid = ssd.queue_id(0, QueueClass::Medium);
    let cmd = Command {
        tag,
        op,
        offset: 0,
        len: 4096,
        fua: false,
        placement: 0,
    };
    ssd.submit(at, qid, cmd).unwrap();
    let mut out = Vec::new();
    // Internal events (the shared link's) may come before the completion.
    while out.is_empty() {
        let t = ssd.next_event_ns().unwrap();
        ssd.advance(t, &mut out);
    }
    let c = out.pop().unwrap();
    (c.complete_ns - c.submit_ns, c.complete_ns)
}

#[test]
fn a_read_after_a_write_on_its_unit_waits_for_the_rest_of_the_block() {
    let block = 100_000;
    let mut on = ull();
    on.media.read_block_after_write_ns = Some(block);
    let base = ull();
    let c = &base.controller;
    // Write then read at the write's completion, on the same unit (offset 0).
    let (mut d0, mut d1) = (NvmeSsd::new(&base, 1), NvmeSsd::new(&on, 1));
    let (_, t0) = one(&mut d0, 0, Op::Write, 1);
    let (_, t1) = one(&mut d1, 0, Op::Write, 1);
    assert_eq!(t0, t1, "the write itself is unchanged");
    let (r0, _) = one(&mut d0, t0, Op::Read, 2);
    let (r1, _) = one(&mut d1, t1, Op::Read, 2);
    // The write left its unit at t − complete_ns; the read reaches the unit fetch_ns +
    // read_cmd_ns after t and waits for the rest of the block.
    let wait = block - c.complete_ns - c.fetch_ns - c.read_cmd_ns;
    assert_eq!(r1, r0 + wait, "read latency {r1} vs {r0} + {wait}");
    // A write after a write does not wait.
    let (mut d0, mut d1) = (NvmeSsd::new(&base, 1), NvmeSsd::new(&on, 1));
    let (_, t0) = one(&mut d0, 0, Op::Write, 1);
    let (_, t1) = one(&mut d1, 0, Op::Write, 1);
    assert_eq!(
        one(&mut d0, t0, Op::Write, 2),
        one(&mut d1, t1, Op::Write, 2)
    );
}

#[test]
fn the_key_loads_round_trips_and_bad_values_name_it_and_the_range() {
    let text = include_str!("../profiles/ull.toml");
    let with = text.replace(
        "write_placement = \"lba\"",
        "write_placement = \"lba\"\nread_block_after_write_ns = 25000",
    );
    assert_ne!(with, text);
    let p = DeviceProfile::from_toml_str(&with, "ull+block").unwrap();
    assert_eq!(p.media.read_block_after_write_ns, Some(25_000));
    let back = DeviceProfile::from_toml_str(&toml::to_string(&p).unwrap(), "back").unwrap();
    assert_eq!(back, p);
    // Absent: not written back (profiles without it serialise as before).
    let plain = DeviceProfile::from_toml_str(text, "ull").unwrap();
    assert!(!toml::to_string(&plain)
        .unwrap()
        .contains("read_block_after_write_ns"));
    for bad in ["-5", "nan", "1.5", "\"10us\"", "20000000000", "inf"] {
        let t = text.replace(
            "write_placement = \"lba\"",
            &format!("write_placement = \"lba\"\nread_block_after_write_ns = {bad}"),
        );
        let e = DeviceProfile::from_toml_str(&t, "bad")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("media.read_block_after_write_ns") && e.contains("0..=10000000000"),
            "{bad}: {e}"
        );
    }
    // Built in code: validate() bounds it too.
    let mut q = p.clone();
    q.media.read_block_after_write_ns = Some(10_000_000_001);
    let e = q.validate().unwrap_err().to_string();
    assert!(
        e.contains("media.read_block_after_write_ns") && e.contains("0..=10000000000"),
        "{e}"
    );
    // The tail's mean gets the same treatment.
    let t = text.replace("tail_mean_ns = 6700", "tail_mean_ns = -1");
    assert_ne!(t, text, "ull's read tail mean");
    let e = DeviceProfile::from_toml_str(&t, "bad")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("tail_mean_ns") && e.contains("0..=10000000000"),
        "{e}"
    );
}
