//! `controller.transfer = "shared"`: command processing stays one FIFO stage, and the
//! data transfers past it share the bandwidth (processor sharing), as PCIe interleaves
//! the packets of the commands in flight. One command alone takes what the FIFO front
//! end gives it, small commands at depth are bounded by processing in both, the link
//! moves no more than its bandwidth, and a small transfer among large ones waits about
//! `n` times its own transfer instead of the sum of theirs. `ull` ships with it.

use crate::common;
use common::*;
use sluice_device::{
    Command, DeviceCompletion, DeviceProfile, FrontEnd, NvmeSsd, Op, QueueClass, Transfer,
};

/// `ull` without service variation, with `transfer`.
fn ull(transfer: Transfer) -> DeviceProfile {
    let mut p = DeviceProfile::builtin("ull").unwrap();
    p.service = None;
    p.controller.transfer = transfer;
    p.validate().unwrap();
    p
}

const SIZES: [u32; 6] = [4096, 8192, 16384, 32768, 65536, 131072];

#[test]
fn ull_ships_with_the_shared_link() {
    let p = DeviceProfile::builtin("ull").unwrap();
    assert_eq!(p.controller.transfer, Transfer::Shared);
    let text = toml::to_string(&p).unwrap();
    assert!(text.contains("transfer = \"shared\""), "{text}");
    assert_eq!(DeviceProfile::from_toml_str(&text, "ull").unwrap(), p);
    // The others keep the FIFO front end, written without the key.
    for name in DeviceProfile::BUILTIN.iter().filter(|n| **n != "ull") {
        let p = DeviceProfile::builtin(name).unwrap();
        assert_eq!(p.controller.transfer, Transfer::Fifo, "{name}");
        assert!(!toml::to_string(&p).unwrap().contains("transfer"), "{name}");
    }
}

#[test]
fn one_command_alone_takes_what_the_fifo_front_end_gives_it() {
    let (fifo, shared) = (ull(Transfer::Fifo), ull(Transfer::Shared));
    for s in SIZES {
        // A write's transfer starts with its processing on both, its pieces reach their
        // units as it moves: the same times to the nanosecond.
        let a = run_qd(&fifo, 1, Op::Write, s, 10, 200).mean_lat_ns;
        let b = run_qd(&shared, 1, Op::Write, s, 10, 200).mean_lat_ns;
        assert_eq!(a, b, "write {s} B");
        // A read's data leaves the array before it moves to the host, streaming as it
        // leaves (the FIFO front end folds processing and transfer into one stage
        // ahead of the media): within 3 % (an 8 KiB read is 2 % faster: its two pieces
        // are read at once, then streamed).
        let a = run_qd(&fifo, 1, Op::Read, s, 10, 200).mean_lat_ns;
        let b = run_qd(&shared, 1, Op::Read, s, 10, 200).mean_lat_ns;
        assert!(
            within(b, a, 0.03),
            "read {s} B: shared {b:.0} ns, fifo {a:.0} ns"
        );
    }
    // The datasheet's 4 KiB QD1 read (≈ 10 µs) holds.
    let r = run_qd(&shared, 1, Op::Read, 4096, 10, 200).mean_lat_ns;
    assert!(within(r, 9_966.0, 0.001), "{r}");
}

#[test]
fn saturated_iops_keeps_its_bounds() {
    // Small commands are bounded by processing (1 / cmd_ns), large ones by the
    // bandwidth: the link is work conserving and processing pipelines with it.
    let (fifo, shared) = (ull(Transfer::Fifo), ull(Transfer::Shared));
    for op in [Op::Read, Op::Write] {
        for s in [4096, 131072] {
            let a = run_qd(&fifo, 64, op, s, 2_000, 20_000).iops;
            let b = run_qd(&shared, 64, op, s, 2_000, 20_000).iops;
            assert!(
                within(b, a, 0.02),
                "{op:?} {s} B: shared {b:.0}, fifo {a:.0} IOPS"
            );
        }
    }
}

/// Eight 32 KiB writes and then one 4 KiB write, submitted together to an idle device:
/// the 4 KiB write's completion.
fn small_behind_large(p: &DeviceProfile) -> DeviceCompletion {
    let mut ssd = NvmeSsd::new(p, 2);
    let big = ssd.queue_id(0, QueueClass::Medium);
    let small = ssd.queue_id(1, QueueClass::Medium);
    for i in 0..8u32 {
        let c = Command {
            tag: i,
            op: Op::Write,
            offset: u64::from(i) << 20,
            len: 32768,
            fua: false,
            placement: 0,
        };
        ssd.submit(0, big, c).unwrap();
    }
    let c = Command {
        tag: 99,
        op: Op::Write,
        offset: 64 << 20,
        len: 4096,
        fua: false,
        placement: 0,
    };
    ssd.submit(0, small, c).unwrap();
    let mut out = Vec::new();
    while let Some(t) = ssd.next_event_ns() {
        ssd.advance(t, &mut out);
    }
    assert_eq!(out.len(), 9);
    *out.iter().find(|c| c.tag == 99).unwrap()
}

#[test]
fn a_small_transfer_among_large_ones_waits_for_its_share_not_their_sum() {
    let p = ull(Transfer::Shared);
    let (c, m) = (&p.controller, &p.media);
    let xfer = |len: u64| (len as f64 * 1e9 / m.bus_bandwidth_bytes as f64) as u64;
    let fifo = small_behind_large(&ull(Transfer::Fifo));
    let shared = small_behind_large(&p);
    let lat = |c: DeviceCompletion| c.complete_ns - c.submit_ns;
    // FIFO: the eight transfers first, one after another.
    let stages = c.fetch_ns + c.complete_ns + m.write_ns;
    assert!(lat(fifo) >= stages + 8 * xfer(32768), "fifo {}", lat(fifo));
    // Shared: processed after the eight (FIFO processing), then moving with at most
    // eight others, so at most 9 × its own transfer, and its unit.
    let bound = stages + 9 * c.write_cmd_ns + 9 * xfer(4096) + 2 * xfer(4096);
    assert!(lat(shared) <= bound, "shared {} > {bound}", lat(shared));
    assert!(
        (lat(shared) as f64) < 0.4 * lat(fifo) as f64,
        "shared {} fifo {}",
        lat(shared),
        lat(fifo)
    );
}

#[test]
fn the_same_seed_gives_the_same_completions() {
    let p = DeviceProfile::builtin("ull").unwrap();
    let run = || {
        let mut ssd = NvmeSsd::new(&p, 4);
        ssd.set_seed(7);
        let mut streams = spread(&ssd, 2, 8, Op::Read, 131072);
        streams.extend(spread(&ssd, 4, 12, Op::Write, 4096).into_iter().skip(2));
        closed_loop(&mut ssd, &streams, 100, 3_000, 9, true).log
    };
    let (a, b) = (run(), run());
    assert_eq!(a.len(), 3_100);
    assert_eq!(a, b);
}

#[test]
fn bad_values_and_the_capped_form_are_refused_with_the_key_named() {
    let ull = include_str!("../profiles/ull.toml");
    for bad in ["\"ps\"", "\"Shared\"", "1", "true"] {
        let t = ull.replace("transfer = \"shared\"", &format!("transfer = {bad}"));
        let e = DeviceProfile::from_toml_str(&t, "bad.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("controller.transfer")
                && e.contains("\"fifo\"")
                && e.contains("\"shared\"")
                && e.contains("bad.toml"),
            "{bad}: {e}"
        );
    }
    let mut p = DeviceProfile::builtin("ull").unwrap();
    p.controller.front_end = FrontEnd::AdditiveCapped;
    p.media.link_bandwidth_bytes = Some(4_000_000_000);
    let e = p.validate().unwrap_err().to_string();
    assert!(
        e.contains("controller.transfer") && e.contains("additive_capped"),
        "{e}"
    );
    p.controller.transfer = Transfer::Fifo;
    p.validate().unwrap();
}
