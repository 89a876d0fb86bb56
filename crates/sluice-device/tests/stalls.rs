//! `[service] stall_prob`, `stall_ns`: stalls of the whole device. A read that draws
//! one holds every read that would start in it, on every unit, so one stall catches
//! about a queue depth's worth of reads: the share of reads delayed grows with the
//! depth (`≈ stall_prob · QD`), and the p99 jumps once that share passes 1 % — what a
//! per-operation tail of the same mean cannot do (docs/devices.md, "Stalls").

use crate::common;
use common::*;
use sluice_device::{DeviceProfile, NvmeSsd, Op, OpVariation, ServiceVariation};

/// Sixteen pooled units of 40 µs reads behind `ull`'s front end, with `read`'s
/// variation.
fn device(read: OpVariation) -> DeviceProfile {
    let mut p = DeviceProfile::builtin("ull").unwrap();
    p.media.units = 16;
    p.media.read_ns = 40_000;
    p.media.write_ns = 40_000;
    p.media.stripe_bytes = 1 << 20;
    p.media.unit_bandwidth_bytes = 1_000_000_000_000;
    p.media.pool = true;
    p.service = Some(ServiceVariation {
        read,
        write: OpVariation::default(),
    });
    p.validate().unwrap();
    p
}

/// (share of reads slower than 1 ms, p99) of random 4 KiB reads at `qd`.
fn reads(p: &DeviceProfile, qd: u32) -> (f64, f64) {
    let cores = 8;
    let mut ssd = NvmeSsd::new(p, cores);
    ssd.set_seed(3);
    let streams = spread(&ssd, cores, qd, Op::Read, 4096);
    let r = closed_loop(&mut ssd, &streams, 2_000, 200_000, 42, true);
    let mut lat: Vec<u64> = r.log[2_000..]
        .iter()
        .map(|c| c.complete_ns - c.submit_ns)
        .collect();
    lat.sort_unstable();
    let slow = lat.iter().filter(|&&l| l > 1_000_000).count() as f64 / lat.len() as f64;
    (slow, lat[lat.len() * 99 / 100] as f64)
}

#[test]
fn one_stall_catches_a_queue_depth_of_reads() {
    // p = 2·10⁻⁴, 2 ms: at QD8 about 0.16 % of reads are delayed, at QD64 about 1.3 %.
    let stalls = device(OpVariation {
        stall_prob: 2e-4,
        stall_ns: 2_000_000,
        ..Default::default()
    });
    let (s8, p99_8) = reads(&stalls, 8);
    let (s64, p99_64) = reads(&stalls, 64);
    assert!((0.0008..0.003).contains(&s8), "QD8: {s8}");
    assert!((0.008..0.025).contains(&s64), "QD64: {s64}");
    // Below 1 % the p99 is the queue's; above it, the stall's.
    assert!(p99_8 < 1_000_000.0, "QD8 p99 {p99_8}");
    assert!(p99_64 > 1_000_000.0, "QD64 p99 {p99_64}");
    // The same mean added per read as slow operations one at a time: the share of slow
    // reads does not grow with the depth (the pool spreads the rest over free units).
    let tail = device(OpVariation {
        tail_prob: 2e-4,
        tail_mean_ns: 2_000_000,
        ..Default::default()
    });
    let (t8, _) = reads(&tail, 8);
    let (t64, _) = reads(&tail, 64);
    assert!(t64 < 2.0 * t8.max(1e-4), "tail: QD8 {t8}, QD64 {t64}");
    assert!(s64 > 4.0 * t64, "stalls {s64} vs tail {t64} at QD64");
}

#[test]
fn stalls_are_seeded() {
    let p = device(OpVariation {
        stall_prob: 1e-3,
        stall_ns: 500_000,
        ..Default::default()
    });
    assert_eq!(reads(&p, 16), reads(&p, 16));
}
