//! The `zns` profile: the zone state machine as the host sees it through the device
//! (write pointers, failed out-of-order writes, resets, reads beyond the write
//! pointer) and its nominal figures on the written zones.

use sluice_device::{Command, DeviceProfile, NvmeSsd, Op, QueueClass, ZoneCond};

/// Submit one command at `now` and run the device until it completes: (ok, latency).
fn one(ssd: &mut NvmeSsd, now: u64, op: Op, offset: u64, len: u32) -> (bool, u64) {
    let qid = ssd.queue_id(0, QueueClass::Medium);
    ssd.advance(now, &mut Vec::new());
    let cmd = Command {
        tag: 7,
        op,
        offset,
        len,
        fua: false,
        placement: 0,
    };
    ssd.submit(now, qid, cmd).unwrap();
    let mut out = Vec::new();
    while out.is_empty() {
        let t = ssd
            .next_event_ns()
            .expect("a command in flight has an event");
        ssd.advance(t, &mut out);
    }
    let c = out[0];
    (c.ok, c.complete_ns - now)
}

fn zns() -> DeviceProfile {
    let mut p = DeviceProfile::builtin("zns").unwrap();
    p.service = None;
    p
}

#[test]
fn writes_follow_the_write_pointer_and_a_reset_frees_the_zone() {
    let p = zns();
    let zs = p.zoned.as_ref().unwrap().zone_size_bytes;
    let mut ssd = NvmeSsd::new(&p, 1);
    let mut now = 0;
    let mut step = |ssd: &mut NvmeSsd, op, off, len| {
        now += 1_000_000;
        one(ssd, now, op, off, len).0
    };
    assert!(step(&mut ssd, Op::Write, 0, 4096));
    assert!(step(&mut ssd, Op::Write, 4096, 8192));
    let z = ssd.zones().unwrap();
    assert_eq!(z.write_pointer(0), 12288);
    assert_eq!(z.cond(0), ZoneCond::ImplicitOpen);
    // Not at the write pointer: refused, the pointer stays.
    assert!(!step(&mut ssd, Op::Write, 0, 4096));
    assert!(!step(&mut ssd, Op::Write, 65536, 4096));
    assert_eq!(ssd.zones().unwrap().write_pointer(0), 12288);
    assert_eq!(ssd.zones().unwrap().errors, 2);
    // A trim of part of a zone is refused; of the whole zone, it resets it.
    assert!(!step(&mut ssd, Op::Trim, 0, 4096));
    assert!(step(&mut ssd, Op::Trim, 0, zs as u32));
    let z = ssd.zones().unwrap();
    assert_eq!((z.write_pointer(0), z.cond(0)), (0, ZoneCond::Empty));
    assert_eq!(z.open_active(), (0, 0));
    assert!(step(&mut ssd, Op::Write, 0, 4096));
    assert_eq!(ssd.stats().completed_writes, 3);
}

#[test]
fn the_open_zone_limit_closes_zones_and_the_active_limit_refuses() {
    let mut p = zns();
    let cfg = p.zoned.as_mut().unwrap();
    cfg.max_open = 2;
    cfg.max_active = 3;
    let zs = cfg.zone_size_bytes;
    let mut ssd = NvmeSsd::new(&p, 1);
    for z in 0..3 {
        assert!(one(&mut ssd, (z + 1) * 1_000_000, Op::Write, z * zs, 4096).0);
    }
    assert_eq!(ssd.zones().unwrap().open_active(), (2, 3));
    assert_eq!(ssd.zones().unwrap().cond(0), ZoneCond::Closed);
    assert!(!one(&mut ssd, 9_000_000, Op::Write, 3 * zs, 4096).0);
}

#[test]
fn nominal_figures_on_written_zones_and_reads_beyond_the_write_pointer() {
    let p = zns();
    let mut ssd = NvmeSsd::new(&p, 1);
    let n = 2000u64;
    let mut now = 0;
    let mut wsum = 0;
    for i in 0..n {
        now += 1_000_000;
        let (ok, lat) = one(&mut ssd, now, Op::Write, i * 4096, 4096);
        assert!(ok);
        wsum += lat;
    }
    let w = wsum as f64 / n as f64;
    let nw = p.nominal.write_lat_qd1_ns as f64;
    assert!((w - nw).abs() / nw < 0.05, "QD1 write {w} vs nominal {nw}");
    let mut rsum = 0;
    for i in 0..n {
        now += 1_000_000;
        let (ok, lat) = one(&mut ssd, now, Op::Read, i * 4096, 4096);
        assert!(ok);
        rsum += lat;
    }
    let r = rsum as f64 / n as f64;
    let nr = p.nominal.read_lat_qd1_ns as f64;
    assert!((r - nr).abs() / nr < 0.05, "QD1 read {r} vs nominal {nr}");
    // Beyond the write pointer: the controller answers without the media.
    now += 1_000_000;
    let (ok, beyond) = one(&mut ssd, now, Op::Read, n * 4096, 4096);
    assert!(ok);
    assert!(
        beyond < 10_000,
        "a read of nothing written took {beyond} ns"
    );
}
