//! `controller.front_end = "additive_capped"`: the front end is occupied
//! `max(cmd + len / link, len / bus)` — additive over `media.link_bandwidth_bytes`,
//! under the bandwidth ceiling `media.bus_bandwidth_bytes`. Saturated IOPS is
//! `1 / max(cmd + len / link, len / bus)`, QD1 latency the stages plus that; the link
//! is required with this form and rejected with the others.

use crate::common;
use common::*;
use sluice_device::{DeviceProfile, FrontEnd, Op, Transfer};

/// A front-end-bound device (`ull`'s units, media without variation): reads
/// `8.4 µs + len / 2.5 GB/s` under a 1.25 GB/s ceiling (break at 21 KB), writes
/// `11 µs + len / 2 GB/s` under 0.8 GB/s (break at 14.7 KB).
fn device() -> DeviceProfile {
    let mut p = DeviceProfile::builtin("ull").unwrap();
    p.service = None;
    p.controller.read_cmd_ns = 8_400;
    p.controller.write_cmd_ns = 11_000;
    p.controller.transfer = Transfer::Fifo;
    p.controller.front_end = FrontEnd::AdditiveCapped;
    p.media.bus_bandwidth_bytes = 1_250_000_000;
    p.media.write_bus_bandwidth_bytes = Some(800_000_000);
    p.media.link_bandwidth_bytes = Some(2_500_000_000);
    p.media.write_link_bandwidth_bytes = Some(2_000_000_000);
    p.validate().unwrap();
    p
}

/// (command ns, ns per byte over the link, ns per byte over the bus) of `op` on `p`.
fn front(p: &DeviceProfile, op: Op) -> (f64, f64, f64) {
    let c = &p.controller;
    let m = &p.media;
    let link = m.link_bandwidth_bytes.unwrap() as f64;
    match op {
        Op::Write => (
            c.write_cmd_ns as f64,
            1e9 / m.write_link_bandwidth_bytes.unwrap() as f64,
            1e9 / m.write_bus_bandwidth_bytes.unwrap() as f64,
        ),
        _ => (
            c.read_cmd_ns as f64,
            1e9 / link,
            1e9 / m.bus_bandwidth_bytes as f64,
        ),
    }
}

const SIZES: [u32; 7] = [4096, 8192, 16384, 32768, 65536, 131072, 262144];

fn occupancy(p: &DeviceProfile, op: Op, s: u32) -> f64 {
    let (cmd, link, bus) = front(p, op);
    (cmd + s as f64 * link).max(s as f64 * bus)
}

#[test]
fn saturated_iops_is_one_over_the_capped_sum() {
    let p = device();
    for op in [Op::Read, Op::Write] {
        for s in SIZES {
            let want = 1e9 / occupancy(&p, op, s);
            let got = run_qd(&p, 64, op, s, 2_000, 20_000).iops;
            assert!(
                within(got, want, 0.02),
                "{op:?} {s} B: {got:.0} IOPS, want 1 / max(cmd + S / link, S / bus) = {want:.0}"
            );
        }
    }
    // Both parts matter: 4 KiB reads follow the line (above the ceiling's rate),
    // 256 KiB reads the ceiling (below the line's rate).
    let (cmd, link, bus) = front(&p, Op::Read);
    assert!(cmd + 4096.0 * link > 4096.0 * bus);
    assert!(cmd + 262144.0 * link < 262144.0 * bus);
}

#[test]
fn qd1_latency_is_the_stages_plus_the_capped_sum() {
    let p = device();
    for op in [Op::Read, Op::Write] {
        for s in [4096u32, 16384, 131072] {
            let want = qd1_stages_ns(&p, op) + occupancy(&p, op, s);
            let got = run_qd(&p, 1, op, s, 100, 2_000).mean_lat_ns;
            assert!(
                (got - want).abs() < 3.0,
                "{op:?} {s} B: {got:.1} ns, want {want:.1}"
            );
        }
    }
}

#[test]
fn round_trips_and_the_link_is_required_here_and_only_here() {
    let p = device();
    let text = toml::to_string(&p).unwrap();
    assert!(text.contains("front_end = \"additive_capped\""), "{text}");
    assert!(text.contains("link_bandwidth_bytes = 2500000000"), "{text}");
    assert_eq!(DeviceProfile::from_toml_str(&text, "t").unwrap(), p);

    let mut missing = p.clone();
    missing.media.link_bandwidth_bytes = None;
    let e = missing.validate().unwrap_err().to_string();
    assert!(
        e.contains("media.link_bandwidth_bytes") && e.contains("missing"),
        "{e}"
    );
    // A write link alone is not enough.
    assert!(missing.media.write_link_bandwidth_bytes.is_some());

    for other in [FrontEnd::Max, FrontEnd::Additive] {
        let mut q = p.clone();
        q.controller.front_end = other;
        q.media.write_link_bandwidth_bytes = None;
        let e = q.validate().unwrap_err().to_string();
        assert!(
            e.contains("media.link_bandwidth_bytes")
                && e.contains(other.name())
                && e.contains("additive_capped"),
            "{e}"
        );
        q.media.link_bandwidth_bytes = None;
        q.media.write_link_bandwidth_bytes = Some(1_000_000_000);
        let e = q.validate().unwrap_err().to_string();
        assert!(e.contains("media.write_link_bandwidth_bytes"), "{e}");
        q.media.write_link_bandwidth_bytes = None;
        q.validate().unwrap();
    }

    let mut zero = p.clone();
    zero.media.link_bandwidth_bytes = Some(0);
    let e = zero.validate().unwrap_err().to_string();
    assert!(e.contains("media.link_bandwidth_bytes"), "{e}");

    // A bad name lists the third form too.
    let ull = include_str!("../profiles/ull.toml").replace(
        "write_cmd_ns = 2000\n",
        "write_cmd_ns = 2000\nfront_end = \"capped\"\n",
    );
    let e = DeviceProfile::from_toml_str(&ull, "bad.toml")
        .unwrap_err()
        .to_string();
    assert!(e.contains("\"additive_capped\""), "{e}");
}
