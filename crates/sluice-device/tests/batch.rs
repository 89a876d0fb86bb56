//! `controller.batch_ns`: the front end serves the commands waiting for it in batches,
//! one batch cost for all of them. A closed loop of depth `n` then runs in batches of
//! `n`, so `1 / IOPS = b / n + s` (`s` a command's own front-end time): the depth
//! amortises the batch, and a larger request costs the same extra `1 / IOPS` at every
//! depth. At QD1 a command is a batch of its own. Bad values are refused.

use crate::common;
use common::*;
use sluice_device::{DeviceProfile, FrontEnd, Op, Transfer};

const BATCH: f64 = 40_000.0;
const CMD: f64 = 5_000.0;
/// 1 GB/s: 4096 B in 4096 ns.
const BUS: u64 = 1_000_000_000;

/// An additive FIFO front end of 5 µs + len / 1 GB/s, 1 µs of media on 256 pooled
/// units (never the bottleneck), no variation; with or without batches.
fn batched(batch: Option<u64>) -> DeviceProfile {
    let mut p = DeviceProfile::builtin("ull").unwrap();
    p.service = None;
    p.controller.transfer = Transfer::Fifo;
    p.controller.front_end = FrontEnd::Additive;
    p.controller.read_cmd_ns = CMD as u64;
    p.controller.batch_ns = batch;
    p.media.bus_bandwidth_bytes = BUS;
    p.media.units = 256;
    p.media.read_ns = 1_000;
    p.media.stripe_bytes = 4096;
    p.media.unit_bandwidth_bytes = 1_000_000_000_000;
    p.media.pool = true;
    p.validate().unwrap();
    p
}

fn front(len: u32) -> f64 {
    CMD + len as f64 * 1e9 / BUS as f64
}

#[test]
fn a_command_alone_pays_the_batch() {
    let plain = run_qd(&batched(None), 1, Op::Read, 4096, 1_000, 5_000);
    let batch = run_qd(
        &batched(Some(BATCH as u64)),
        1,
        Op::Read,
        4096,
        1_000,
        5_000,
    );
    let added = batch.mean_lat_ns - plain.mean_lat_ns;
    assert!(
        (added / BATCH - 1.0).abs() < 1e-3,
        "QD1 added {added:.0} ns"
    );
}

#[test]
fn the_depth_amortises_the_batch_and_bytes_cost_the_same_at_every_depth() {
    let p = batched(Some(BATCH as u64));
    for qd in [2u32, 4, 8, 16, 32] {
        let r4 = run_qd(&p, qd, Op::Read, 4096, 2_000, 20_000);
        let want = BATCH / qd as f64 + front(4096);
        let got = 1e9 / r4.iops;
        assert!(
            (got / want - 1.0).abs() < 0.05,
            "QD{qd}: 1/IOPS {got:.0} ns, want b/n + s = {want:.0}"
        );
        // 16 KiB: the extra 12 KiB cost their transfer time in 1 / IOPS at this depth
        // as at any other (the batch form's signature; a front end that overlaps other
        // commands' media time would charge less at middle depths).
        let r16 = run_qd(&p, qd, Op::Read, 16384, 2_000, 20_000);
        let extra = 1e9 / r16.iops - got;
        let want = front(16384) - front(4096);
        assert!(
            (extra / want - 1.0).abs() < 0.08,
            "QD{qd}: 16 KiB cost {extra:.0} ns more per I/O, want {want:.0}"
        );
    }
}

#[test]
fn bad_batches_are_refused() {
    let mut p = batched(None);
    p.controller.batch_ns = Some(0);
    let e = p.validate().unwrap_err().to_string();
    assert!(e.contains("controller.batch_ns"), "{e}");
    p.controller.batch_ns = Some(40_000);
    p.controller.transfer = Transfer::Shared;
    let e = p.validate().unwrap_err().to_string();
    assert!(
        e.contains("controller.batch_ns") && e.contains("fifo"),
        "{e}"
    );
    // It round-trips through TOML, and a profile without it writes none.
    let p = batched(Some(40_000));
    let text = toml::to_string(&p).unwrap();
    assert!(text.contains("batch_ns = 40000"), "{text}");
    assert_eq!(DeviceProfile::from_toml_str(&text, "t").unwrap(), p);
    assert!(!toml::to_string(&batched(None))
        .unwrap()
        .contains("batch_ns"));
}
