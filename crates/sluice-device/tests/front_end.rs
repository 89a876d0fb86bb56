//! `controller.front_end`: how the front end combines command processing and host
//! transfer. `max` (the default) gives saturated IOPS `1 / max(cmd, len / bus)`;
//! `additive` gives `1 / (cmd + len / bus)`, and at QD1 it adds the two where `max`
//! takes the larger. A profile without the key is a `max` profile, written back without
//! it; a bad value names the key and the accepted values.

use crate::common;
use common::*;
use sluice_device::{DeviceProfile, FrontEnd, Op, Transfer};

/// A front-end-bound device: `ull`'s 28 units and media without variation, the command
/// and bus of the disk `sluice calibrate` measured (`8.4 µs + 0.81 ns/B`), writes at
/// their own command time and bus.
fn device(front_end: FrontEnd) -> DeviceProfile {
    let mut p = DeviceProfile::builtin("ull").unwrap();
    p.service = None;
    p.controller.read_cmd_ns = 8_400;
    p.controller.write_cmd_ns = 11_000;
    // These forms are the FIFO front end's (tests/shared_transfer.rs has the other).
    p.controller.transfer = Transfer::Fifo;
    p.controller.front_end = front_end;
    p.media.bus_bandwidth_bytes = 1_234_567_901; // 0.81 ns/B
    p.media.write_bus_bandwidth_bytes = Some(800_000_000); // 1.25 ns/B
    p.validate().unwrap();
    p
}

/// (command, bus) of `op` on `p`: ns and bytes per second.
fn front(p: &DeviceProfile, op: Op) -> (f64, f64) {
    let c = &p.controller;
    let m = &p.media;
    match op {
        Op::Write => (
            c.write_cmd_ns as f64,
            m.write_bus_bandwidth_bytes.unwrap_or(m.bus_bandwidth_bytes) as f64,
        ),
        _ => (c.read_cmd_ns as f64, m.bus_bandwidth_bytes as f64),
    }
}

const SIZES: [u32; 6] = [4096, 8192, 16384, 32768, 65536, 131072];

#[test]
fn additive_saturated_iops_is_one_over_cmd_plus_transfer() {
    let p = device(FrontEnd::Additive);
    for op in [Op::Read, Op::Write] {
        let (cmd, bus) = front(&p, op);
        for s in SIZES {
            let want = 1e9 / (cmd + s as f64 * 1e9 / bus);
            let got = run_qd(&p, 64, op, s, 2_000, 20_000).iops;
            assert!(
                within(got, want, 0.02),
                "{op:?} {s} B: {got:.0} IOPS, want 1 / (cmd + S / bus) = {want:.0}"
            );
        }
    }
}

#[test]
fn max_saturated_iops_is_unchanged() {
    // The default: 1 / max(cmd, S / bus); 16 KiB reads at depth are then command
    // bound (13.3 µs of transfer, 8.4 µs of command: 75K IOPS), where the additive
    // front end gives 46K.
    let p = device(FrontEnd::Max);
    for op in [Op::Read, Op::Write] {
        let (cmd, bus) = front(&p, op);
        for s in SIZES {
            let want = 1e9 / cmd.max(s as f64 * 1e9 / bus);
            let got = run_qd(&p, 64, op, s, 2_000, 20_000).iops;
            assert!(
                within(got, want, 0.02),
                "{op:?} {s} B: {got:.0} IOPS, want 1 / max(cmd, S / bus) = {want:.0}"
            );
        }
    }
    let add = run_qd(
        &device(FrontEnd::Additive),
        64,
        Op::Read,
        16384,
        2_000,
        20_000,
    )
    .iops;
    let max = run_qd(&p, 64, Op::Read, 16384, 2_000, 20_000).iops;
    assert!(add < 0.7 * max, "additive {add:.0} vs max {max:.0}");
}

#[test]
fn qd1_latency_adds_command_and_transfer() {
    let add = device(FrontEnd::Additive);
    let max = device(FrontEnd::Max);
    for op in [Op::Read, Op::Write] {
        let (cmd, bus) = front(&add, op);
        // The last stripe-sized piece reaches its (idle) unit when the transfer ends,
        // so the latency is the stages' sum.
        let stages = qd1_stages_ns(&add, op);
        for s in [4096u32, 16384, 131072] {
            let xfer = s as f64 * 1e9 / bus;
            let la = run_qd(&add, 1, op, s, 100, 2_000).mean_lat_ns;
            let lm = run_qd(&max, 1, op, s, 100, 2_000).mean_lat_ns;
            assert!(
                (la - (stages + cmd + xfer)).abs() < 3.0,
                "{op:?} {s} B additive: {la:.1} ns, want {:.1}",
                stages + cmd + xfer
            );
            assert!(
                (lm - (stages + cmd.max(xfer))).abs() < 3.0,
                "{op:?} {s} B max: {lm:.1} ns, want {:.1}",
                stages + cmd.max(xfer)
            );
            // The additive front end costs exactly the smaller of the two on top.
            assert!(((la - lm) - cmd.min(xfer)).abs() < 3.0, "{op:?} {s} B");
        }
    }
}

#[test]
fn absent_means_max_and_max_is_written_without_the_key() {
    for name in DeviceProfile::BUILTIN {
        let p = DeviceProfile::builtin(name).unwrap();
        assert_eq!(p.controller.front_end, FrontEnd::Max, "{name}");
        let text = toml::to_string(&p).unwrap();
        assert!(!text.contains("front_end"), "{name}: {text}");
    }
    // Explicit "max" is the same profile, and the same completions.
    let text = include_str!("../profiles/ull.toml");
    let explicit = text.replace(
        "write_cmd_ns = 2000\n",
        "write_cmd_ns = 2000\nfront_end = \"max\"\n",
    );
    assert_ne!(explicit, text);
    let a = DeviceProfile::from_toml_str(text, "ull").unwrap();
    let b = DeviceProfile::from_toml_str(&explicit, "ull").unwrap();
    assert_eq!(a, b);
    let la = run_qd(&a, 16, Op::Read, 16384, 100, 2_000);
    let lb = run_qd(&b, 16, Op::Read, 16384, 100, 2_000);
    assert_eq!((la.end_ns, la.mean_lat_ns), (lb.end_ns, lb.mean_lat_ns));
}

#[test]
fn additive_round_trips_and_bad_values_name_the_key_and_the_values() {
    let p = device(FrontEnd::Additive);
    let text = toml::to_string(&p).unwrap();
    assert!(text.contains("front_end = \"additive\""), "{text}");
    assert_eq!(DeviceProfile::from_toml_str(&text, "t").unwrap(), p);
    let ull = include_str!("../profiles/ull.toml");
    for bad in ["\"sum\"", "\"Max\"", "1", "true"] {
        let t = ull.replace(
            "write_cmd_ns = 2000\n",
            &format!("write_cmd_ns = 2000\nfront_end = {bad}\n"),
        );
        let e = DeviceProfile::from_toml_str(&t, "bad.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("controller.front_end")
                && e.contains("\"max\"")
                && e.contains("\"additive\"")
                && e.contains("bad.toml"),
            "{bad}: {e}"
        );
    }
}
