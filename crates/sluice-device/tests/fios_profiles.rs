//! The FIOS device profiles (`x25m`, `mtron`, `vertex`, `cf`) reproduce the device
//! characteristics FIOS (FAST '12) measured and builds on, driving the device directly:
//!
//! * Fig. 2 — a QD1 4 KB random reader beside a synchronous QD1 4 KB random writer slows
//!   down ≈ 7×, 157×, 2× and 42×, while the writer's slowdown stays near 1;
//! * Fig. 4 — parallel 4 KB reads speed up ≈ 7×, 1.3×, 4× (and 1× on the CompactFlash,
//!   which has no parallelism, §6.3); parallel 4 KB writes do not, except on the
//!   Vertex (up to 3×).
//!
//! Each figure is checked within 20 %.

use crate::common;
use common::*;
use sluice_device::{DeviceProfile, NvmeSsd, Op, QueueClass};

/// (profile, reader slowdown beside a writer, read speedup, write speedup) — the
/// paper's figures. The CompactFlash's write speedup is not in Fig. 4; it has no
/// parallelism at all, so 1×.
const FIGURES: [(&str, f64, f64, f64); 4] = [
    ("x25m", 7.0, 7.0, 1.0),
    ("mtron", 157.0, 1.3, 1.0),
    ("vertex", 2.0, 4.0, 3.0),
    ("cf", 42.0, 1.0, 1.0),
];

/// Completions to measure per run: enough for a stable mean even for 30 ms writes.
fn measure_for(p: &DeviceProfile, op: Op) -> u64 {
    let lat = match op {
        Op::Write => p.nominal.write_lat_qd1_ns,
        _ => p.nominal.read_lat_qd1_ns,
    };
    // About 20 simulated seconds' worth, between 2 000 and 100 000 completions.
    (20_000_000_000 / lat).clamp(2_000, 100_000)
}

/// Mean QD1 latency of each of two streams (reader on core 0, writer on core 1)
/// running together, and each alone.
struct Interference {
    read_alone_ns: f64,
    write_alone_ns: f64,
    read_mixed_ns: f64,
    write_mixed_ns: f64,
}

fn interference(p: &DeviceProfile) -> Interference {
    let mut ssd = NvmeSsd::new(p, 2);
    let reader = Stream {
        qid: ssd.queue_id(0, QueueClass::Medium),
        qd: 1,
        op: Op::Read,
        len: 4096,
    };
    let writer = Stream {
        qid: ssd.queue_id(1, QueueClass::Medium),
        qd: 1,
        op: Op::Write,
        len: 4096,
    };
    let read_alone_ns =
        closed_loop(&mut ssd, &[reader], 100, measure_for(p, Op::Read), 7, false).mean_lat_ns;
    let mut ssd = NvmeSsd::new(p, 2);
    let write_alone_ns =
        closed_loop(&mut ssd, &[writer], 20, measure_for(p, Op::Write), 7, false).mean_lat_ns;
    // Together: measure until the writer has done enough writes; both streams' means.
    let mut ssd = NvmeSsd::new(p, 2);
    let writes = measure_for(p, Op::Write);
    let per_write = (p.nominal.write_lat_qd1_ns / p.nominal.read_lat_qd1_ns).max(1);
    let total = writes * 2 + writes.min(20_000) * per_write.min(8);
    let r = closed_loop(&mut ssd, &[reader, writer], 0, total, 7, true);
    let skip = r.log.len() / 10;
    let mean = |qid: u16| {
        let v: Vec<f64> = r.log[skip..]
            .iter()
            .filter(|c| c.qid == qid)
            .map(|c| (c.complete_ns - c.submit_ns) as f64)
            .collect();
        assert!(
            v.len() >= 100,
            "{}: only {} completions of qid {qid}",
            p.name,
            v.len()
        );
        v.iter().sum::<f64>() / v.len() as f64
    };
    Interference {
        read_alone_ns,
        write_alone_ns,
        read_mixed_ns: mean(reader.qid),
        write_mixed_ns: mean(writer.qid),
    }
}

/// Throughput at queue depth 32 over throughput at queue depth 1 (Fig. 4).
fn speedup(p: &DeviceProfile, op: Op) -> f64 {
    let n = measure_for(p, op);
    let qd1 = run_qd(p, 1, op, 4096, 50, n).iops;
    let qd32 = run_qd(p, 32, op, 4096, 200, n).iops;
    qd32 / qd1
}

#[test]
fn reads_slow_down_beside_a_writer_as_in_fig2() {
    for (name, slowdown, _, _) in FIGURES {
        let p = DeviceProfile::builtin(name).unwrap();
        let i = interference(&p);
        let rs = i.read_mixed_ns / i.read_alone_ns;
        let ws = i.write_mixed_ns / i.write_alone_ns;
        eprintln!(
            "{name}: read {:.0} → {:.0} ns ({rs:.2}×, paper {slowdown}×), write {:.0} → {:.0} ns ({ws:.3}×)",
            i.read_alone_ns, i.read_mixed_ns, i.write_alone_ns, i.write_mixed_ns
        );
        assert!(
            within(rs, slowdown, 0.20),
            "{name}: reader slowdown {rs:.2}×, paper {slowdown}×"
        );
        assert!(
            within(ws, 1.0, 0.20),
            "{name}: writer slowdown {ws:.3}×, should stay near 1"
        );
    }
}

#[test]
fn parallel_reads_speed_up_as_in_fig4() {
    for (name, _, read_speedup, _) in FIGURES {
        let p = DeviceProfile::builtin(name).unwrap();
        let s = speedup(&p, Op::Read);
        eprintln!("{name}: 4 KB reads QD32 / QD1 throughput {s:.2}× (paper {read_speedup}×)");
        assert!(
            within(s, read_speedup, 0.20),
            "{name}: read speedup {s:.2}×, paper {read_speedup}×"
        );
    }
}

#[test]
fn parallel_writes_speed_up_only_on_the_vertex() {
    for (name, _, _, write_speedup) in FIGURES {
        let p = DeviceProfile::builtin(name).unwrap();
        let s = speedup(&p, Op::Write);
        eprintln!("{name}: 4 KB writes QD32 / QD1 throughput {s:.2}× (paper {write_speedup}×)");
        assert!(
            within(s, write_speedup, 0.20),
            "{name}: write speedup {s:.2}×, paper {write_speedup}×"
        );
    }
}

#[test]
fn write_units_hold_the_whole_group() {
    // On x25m a program holds all ten units: a read submitted during it waits for it.
    let p = DeviceProfile::builtin("x25m").unwrap();
    let mut ssd = NvmeSsd::new(&p, 1);
    let q = ssd.queue_id(0, QueueClass::Medium);
    let cmd = |tag, op, offset| sluice_device::Command {
        tag,
        op,
        offset,
        len: 4096,
        fua: false,
        placement: 0,
    };
    ssd.submit(0, q, cmd(1, Op::Write, 0)).unwrap();
    // A read on another unit (stripe 3) right after.
    ssd.submit(0, q, cmd(2, Op::Read, 3 * 4096)).unwrap();
    let mut out = Vec::new();
    while let Some(t) = ssd.next_event_ns() {
        ssd.advance(t, &mut out);
    }
    let w = out.iter().find(|c| c.tag == 1).unwrap().complete_ns;
    let r = out.iter().find(|c| c.tag == 2).unwrap().complete_ns;
    assert!(r > w, "read {r} should end after the program {w}");
    assert!(
        r - w >= p.media.read_ns,
        "read waited for the whole program"
    );
}

#[test]
fn write_units_must_divide_units_and_need_no_buffer() {
    let x25m = include_str!("../profiles/x25m.toml");
    for bad in ["write_units = 3", "write_units = 0", "write_units = 20"] {
        let text = x25m.replace("write_units = 10", bad);
        match DeviceProfile::from_toml_str(&text, "bad.toml") {
            Err(sluice_device::ProfileError::Invalid { field, .. }) => {
                assert_eq!(field, "media.write_units", "{bad}")
            }
            other => panic!("{bad}: expected an Invalid error, got {other:?}"),
        }
    }
    let nand = include_str!("../profiles/nand.toml").replace(
        "write_placement = \"round_robin\"",
        "write_placement = \"round_robin\"\nwrite_units = 2",
    );
    let err = DeviceProfile::from_toml_str(&nand, "buffered.toml").unwrap_err();
    assert!(err.to_string().contains("write buffer"), "{err}");
}
