//! Flash management on `nand` (`[flash]`, crates/sluice-device/src/ftl.rs): sustained
//! random writes on the preconditioned drive fall off the write cliff to a
//! garbage-collection steady state with write amplification above 1; reads of data
//! still in the write buffer are served from DRAM.

use crate::common;

use common::Rng;
use sluice_device::{Command, DeviceProfile, NvmeSsd, Op, QueueClass};

/// One window of a sustained run: IOPS, and the write amplification of the window
/// (GC-copied units over host units programmed in it).
#[derive(Debug)]
struct Window {
    iops: f64,
    wa: f64,
}

/// 4 KiB random writes over the whole logical slice at `qd`, in windows of `per`
/// completions.
fn sustained_writes(p: &DeviceProfile, qd: u32, windows: usize, per: u64) -> Vec<Window> {
    let mut ssd = NvmeSsd::new(p, 1);
    ssd.set_seed(5);
    let span = p.flash.as_ref().unwrap().logical_bytes / 4096;
    let mut rng = Rng::new(11);
    let qid = ssd.queue_id(0, QueueClass::Medium);
    let mut tag = 0;
    let mut cmd = |rng: &mut Rng| {
        tag += 1;
        Command {
            tag,
            op: Op::Write,
            offset: rng.below(span) * 4096,
            len: 4096,
            fua: false,
            placement: 0,
        }
    };
    for _ in 0..qd {
        ssd.submit(0, qid, cmd(&mut rng)).unwrap();
    }
    let mut out = Vec::new();
    let mut res = Vec::new();
    let (mut t0, mut done) = (0, 0u64);
    let mut last = ssd.flash_stats().unwrap();
    while res.len() < windows {
        let now = ssd.next_event_ns().expect("closed loop");
        ssd.advance(now, &mut out);
        for _ in out.drain(..) {
            done += 1;
            ssd.submit(now, qid, cmd(&mut rng)).unwrap();
        }
        if done >= per {
            let f = ssd.flash_stats().unwrap();
            let host = f.host_units - last.host_units;
            let copied = f.gc_copied_units - last.gc_copied_units;
            res.push(Window {
                iops: done as f64 * 1e9 / (now - t0) as f64,
                wa: (host + copied) as f64 / host.max(1) as f64,
            });
            last = f;
            t0 = now;
            done = 0;
        }
    }
    res
}

#[test]
fn sustained_random_writes_fall_to_a_steady_state_with_wa_above_1() {
    let p = DeviceProfile::builtin("nand").unwrap();
    // 8 GiB logical = 2 Mi units: ≈ 0.45 Mi writes fill the spare blocks, then GC.
    let w = sustained_writes(&p, 64, 30, 100_000);
    for (i, x) in w.iter().enumerate() {
        eprintln!("window {i:2}: {:8.0} IOPS, WA {:.2}", x.iops, x.wa);
    }
    let fresh = w[0].iops;
    // Fresh: the buffer-full destage rate, no GC.
    assert!(
        (fresh / p.nominal.write_iops as f64 - 1.0).abs() < 0.1,
        "fresh {fresh}"
    );
    assert!(w[0].wa < 1.001, "no GC while fresh: WA {}", w[0].wa);
    // The cliff: the last windows run far below the fresh rate …
    let tail = &w[w.len() - 5..];
    let steady: f64 = tail.iter().map(|x| x.iops).sum::<f64>() / tail.len() as f64;
    assert!(steady < 0.6 * fresh, "steady {steady} vs fresh {fresh}");
    // … and are steady (within 10 % of their mean) …
    for x in tail {
        assert!(
            (x.iops / steady - 1.0).abs() < 0.1,
            "{x:?} vs steady {steady}"
        );
    }
    // … with write amplification above 1.
    let wa: f64 = tail.iter().map(|x| x.wa).sum::<f64>() / tail.len() as f64;
    assert!(wa > 1.3, "steady-state WA {wa}");
}

#[test]
fn reads_of_buffered_data_come_from_dram() {
    let p = DeviceProfile::builtin("nand").unwrap();
    let mut ssd = NvmeSsd::new(&p, 1);
    let qid = ssd.queue_id(0, QueueClass::Medium);
    let mut out = Vec::new();
    let mut run = |ssd: &mut NvmeSsd, op, tag, at| {
        let c = Command {
            tag,
            op,
            offset: 1 << 20,
            len: 4096,
            fua: false,
            placement: 0,
        };
        ssd.advance(at, &mut out);
        ssd.submit(at, qid, c).unwrap();
        loop {
            let t = ssd.next_event_ns().unwrap();
            ssd.advance(t, &mut out);
            if let Some(c) = out.iter().find(|c| c.tag == tag) {
                return c.complete_ns - c.submit_ns;
            }
        }
    };
    run(&mut ssd, Op::Write, 1, 0);
    // Right after the write, the data is still in the buffer (its program takes 188 µs).
    let hit = run(&mut ssd, Op::Read, 2, 10_000);
    assert!(hit < 15_000, "buffered read took {hit} ns");
    assert_eq!(ssd.flash_stats().unwrap().buffer_reads, 1);
    // Long after, it is on flash: a media read (≈ 94 µs).
    let miss = run(&mut ssd, Op::Read, 3, 10_000_000);
    assert!(miss > 80_000, "flash read took {miss} ns");
    assert_eq!(ssd.flash_stats().unwrap().buffer_reads, 1);
}
