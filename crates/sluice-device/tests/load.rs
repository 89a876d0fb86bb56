//! `media.read_load_exponent` / `write_load_exponent`: a media time that grows as
//! `n^β` with the commands in the device. With units enough that commands never
//! collide and a front end far from saturation, a closed loop of depth `n` then has
//! latency ≈ `front + media · n^β` and IOPS ≈ `n / latency` — growing as `n^(1−β)`
//! instead of linearly. At QD1 nothing changes; invalid exponents are refused.

use crate::common;
use common::*;
use sluice_device::{DeviceProfile, NvmeSsd, Op};

/// 256 units of 50 µs reads and writes (data moved at 1 TB/s) behind `ull`'s front
/// end, no variation: at depths up to 16 neither the units nor the front end (550K IOPS) make a
/// command wait.
fn wide(read: Option<f64>, write: Option<f64>) -> DeviceProfile {
    let mut p = DeviceProfile::builtin("ull").unwrap();
    p.service = None;
    p.media.units = 256;
    p.media.read_ns = 50_000;
    p.media.write_ns = 50_000;
    p.media.stripe_bytes = 4096;
    p.media.unit_bandwidth_bytes = 1_000_000_000_000;
    p.media.pool = true;
    p.media.read_load_exponent = read;
    p.media.write_load_exponent = write;
    p.validate().unwrap();
    p
}

/// (IOPS, mean latency ns) of random 4 KiB `op`s at `qd`.
fn run(p: &DeviceProfile, op: Op, qd: u32) -> (f64, f64) {
    let cores = 8;
    let mut ssd = NvmeSsd::new(p, cores);
    let streams = spread(&ssd, cores, qd, op, 4096);
    let r = closed_loop(&mut ssd, &streams, 2_000, 20_000, 3, false);
    (r.iops, r.mean_lat_ns)
}

#[test]
fn latency_grows_as_the_power_of_the_depth() {
    let base = wide(None, None);
    let half = wide(Some(0.5), None);
    let (i1, l1) = run(&base, Op::Read, 1);
    // QD1: the factor is 1.
    let (h1, hl1) = run(&half, Op::Read, 1);
    assert!((hl1 / l1 - 1.0).abs() < 1e-9, "{l1} vs {hl1}");
    assert!((h1 / i1 - 1.0).abs() < 1e-9);
    let media = 50_000.0;
    let front = l1 - media;
    for qd in [4u32, 9, 16] {
        let (iops, lat) = run(&half, Op::Read, qd);
        let want = front + media * (qd as f64).sqrt();
        assert!(
            (lat / want - 1.0).abs() < 0.05,
            "QD{qd}: mean {lat:.0} ns, want ≈ {want:.0}"
        );
        // Without the exponent the same depth is (nearly) as fast as QD1.
        let (biops, blat) = run(&base, Op::Read, qd);
        assert!((blat / l1 - 1.0).abs() < 0.05, "QD{qd}: {blat} vs {l1}");
        assert!(
            (iops / biops - l1 / want).abs() < 0.05,
            "QD{qd}: IOPS {iops:.0} vs {biops:.0}"
        );
    }
    // Writes have their own exponent: reads' does not touch them, and theirs slows them.
    let (w_base, _) = run(&base, Op::Write, 16);
    let (w_half_reads, _) = run(&half, Op::Write, 16);
    assert!((w_half_reads / w_base - 1.0).abs() < 1e-9);
    let (w_own, _) = run(&wide(None, Some(0.5)), Op::Write, 16);
    assert!(w_own < 0.5 * w_base, "{w_own} vs {w_base}");
}

#[test]
fn invalid_exponents_are_refused_with_the_key() {
    for bad in [0.0, 1.0, -0.2, f64::NAN] {
        let mut p = wide(None, None);
        p.media.read_load_exponent = Some(bad);
        let e = p.validate().unwrap_err().to_string();
        assert!(
            e.contains("media.read_load_exponent") && e.contains("(0, 1)"),
            "{e}"
        );
    }
    let mut p = DeviceProfile::builtin("nand").unwrap();
    p.media.write_load_exponent = Some(0.5);
    let e = p.validate().unwrap_err().to_string();
    assert!(
        e.contains("media.write_load_exponent") && e.contains("[flash]"),
        "{e}"
    );
    // From TOML, too.
    let text = include_str!("../profiles/ull.toml")
        .replace("[media]\n", "[media]\nread_load_exponent = 1.5\n");
    let e = DeviceProfile::from_toml_str(&text, "x.toml")
        .unwrap_err()
        .to_string();
    assert!(e.contains("read_load_exponent"), "{e}");
}
