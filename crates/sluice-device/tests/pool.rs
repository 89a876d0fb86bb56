//! `media.pool`: one queue in front of interchangeable units. Random 4 KiB commands
//! striped by LBA pile up on some units while others idle, so at depth the latency
//! spreads far above its mean; as a pool every unit stays busy and the latency is the
//! queue's, nearly the same for every command. Refused where a piece has a unit of
//! its own (flash dies, a write buffer's destage, groups of units).

use crate::common;
use common::*;
use sluice_device::{DeviceProfile, NvmeSsd, Op};

/// Four units of 40 µs reads (their data moved out at 1 TB/s) behind `ull`'s front
/// end, no variation.
fn four_units(pool: bool) -> DeviceProfile {
    let mut p = DeviceProfile::builtin("ull").unwrap();
    p.service = None;
    p.media.units = 4;
    p.media.read_ns = 40_000;
    p.media.write_ns = 40_000;
    p.media.stripe_bytes = 1 << 20;
    p.media.unit_bandwidth_bytes = 1_000_000_000_000;
    p.media.pool = pool;
    p.validate().unwrap();
    p
}

/// (IOPS, mean, p99) of random 4 KiB reads at `qd`.
fn reads(p: &DeviceProfile, qd: u32) -> (f64, f64, f64) {
    let cores = 8;
    let mut ssd = NvmeSsd::new(p, cores);
    let streams = spread(&ssd, cores, qd, Op::Read, 4096);
    let r = closed_loop(&mut ssd, &streams, 2_000, 40_000, 42, true);
    let mut lat: Vec<u64> = r.log[2_000..]
        .iter()
        .map(|c| c.complete_ns - c.submit_ns)
        .collect();
    lat.sort_unstable();
    (r.iops, r.mean_lat_ns, lat[lat.len() * 99 / 100] as f64)
}

#[test]
fn a_pool_keeps_every_unit_busy_and_the_latency_even() {
    let (i_lba, m_lba, p99_lba) = reads(&four_units(false), 32);
    let (i_pool, m_pool, p99_pool) = reads(&four_units(true), 32);
    // As a pool the four units serve 4 / 40 µs = 100 K IOPS, and each of the 32
    // commands waits for the 31 ahead of it: 32 × 10 µs, p99 within a few % of it.
    assert!(within(i_pool, 100_000.0, 0.03), "pool IOPS {i_pool}");
    assert!(
        p99_pool < 1.05 * m_pool,
        "pool: mean {m_pool}, p99 {p99_pool}"
    );
    // Striped by LBA the same commands collide: units idle while others queue.
    assert!(i_lba < 0.97 * i_pool, "LBA {i_lba} vs pool {i_pool} IOPS");
    assert!(p99_lba > 1.5 * m_lba, "LBA: mean {m_lba}, p99 {p99_lba}");
    // At QD1 the two are the same device.
    let (a, b) = (reads(&four_units(false), 1), reads(&four_units(true), 1));
    assert!(within(a.1, b.1, 0.001), "{a:?} vs {b:?}");
}

#[test]
fn a_pool_is_refused_where_a_piece_has_its_own_unit() {
    for (name, why) in [("nand", "[flash]"), ("zssd", "write buffer")] {
        let mut p = DeviceProfile::builtin(name).unwrap();
        p.media.pool = true;
        let e = p.validate().unwrap_err().to_string();
        assert!(e.contains("media.pool") && e.contains(why), "{name}: {e}");
    }
    let mut p = four_units(true);
    p.media.write_units = 2;
    let e = p.validate().unwrap_err().to_string();
    assert!(e.contains("media.pool") && e.contains("write_units"), "{e}");
}
