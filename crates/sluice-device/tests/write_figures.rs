//! Reads and writes apart: a profile's write bus, write unit bandwidth and write
//! parallelism (`media.write_*`) change writes only, and a profile without them serves
//! writes with the read figures (the meaning before they existed).

use crate::common;
use common::*;
use sluice_device::{DeviceProfile, Op};

/// `ull` without variation, so rates are exact.
fn ull() -> DeviceProfile {
    let mut p = DeviceProfile::builtin("ull").unwrap();
    p.service = None;
    p
}

#[test]
fn the_write_bus_bounds_large_writes_only() {
    let base = ull();
    let mut slow = base.clone();
    slow.media.write_bus_bandwidth_bytes = Some(base.media.bus_bandwidth_bytes / 2);
    slow.validate().unwrap();
    let big = 131072;
    let w0 = run_qd(&base, 64, Op::Write, big, 2_000, 20_000).iops;
    let w1 = run_qd(&slow, 64, Op::Write, big, 2_000, 20_000).iops;
    let bus = base.media.bus_bandwidth_bytes as f64 / big as f64;
    assert!(within(w0, bus, 0.02), "{w0} vs {bus}");
    assert!(within(w1, bus / 2.0, 0.02), "{w1} vs {}", bus / 2.0);
    let r0 = run_qd(&base, 64, Op::Read, big, 2_000, 20_000).iops;
    let r1 = run_qd(&slow, 64, Op::Read, big, 2_000, 20_000).iops;
    assert_eq!(r0, r1, "reads keep the read bus");
}

#[test]
fn write_parallelism_and_unit_bandwidth_bound_writes_on_the_units() {
    // Writes on 2 of 28 units, 4 KiB moved into a unit at 100 MB/s: the units, not the
    // front end, bound writes at 2 / (write_ns + 40.96 µs).
    let base = ull();
    let mut p = base.clone();
    p.media.write_parallel_units = Some(2);
    p.media.write_unit_bandwidth_bytes = Some(100_000_000);
    p.validate().unwrap();
    let unit_ns = p.media.write_ns as f64 + 4096.0 * 1e9 / 1e8;
    let want = 2.0 * 1e9 / unit_ns;
    let w = run_qd(&p, 64, Op::Write, 4096, 2_000, 20_000).iops;
    assert!(within(w, want, 0.03), "{w} vs {want}");
    // Reads still use every unit at the read rate: the front end bounds them.
    let r = run_qd(&p, 64, Op::Read, 4096, 2_000, 20_000).iops;
    assert!(
        within(r, 1e9 / p.controller.read_cmd_ns as f64, 0.02),
        "{r}"
    );
}

#[test]
fn read_parallelism_bounds_reads_only() {
    // Reads on 1 of 28 units: 1 / (read_ns + 4 KiB unit transfer); writes keep all.
    let base = ull();
    let mut p = base.clone();
    p.media.read_parallel_units = Some(1);
    p.validate().unwrap();
    let unit_ns = p.media.read_ns as f64 + 4096.0 * 1e9 / p.media.unit_bandwidth_bytes as f64;
    let r = run_qd(&p, 64, Op::Read, 4096, 2_000, 20_000).iops;
    assert!(within(r, 1e9 / unit_ns, 0.02), "{r} vs {}", 1e9 / unit_ns);
    let w0 = run_qd(&base, 64, Op::Write, 4096, 2_000, 20_000).iops;
    let w1 = run_qd(&p, 64, Op::Write, 4096, 2_000, 20_000).iops;
    assert_eq!(w0, w1, "writes keep every unit");
}

#[test]
fn old_profiles_load_with_writes_at_the_read_figures_and_bad_values_are_named() {
    let text = include_str!("../profiles/ull.toml");
    let p = DeviceProfile::from_toml_str(text, "ull").unwrap();
    assert_eq!(p.media.write_bus_bandwidth_bytes, None);
    assert_eq!(p.media.write_parallel_units, None);
    // The fields round-trip through serde.
    let mut q = p.clone();
    q.media.write_parallel_units = Some(4);
    q.media.write_bus_bandwidth_bytes = Some(2_000_000_000);
    let back = DeviceProfile::from_toml_str(&toml::to_string(&q).unwrap(), "q").unwrap();
    assert_eq!(back, q);
    // Out of range: the field and the fix are named.
    q.media.write_parallel_units = Some(29);
    let e = q.validate().unwrap_err().to_string();
    assert!(
        e.contains("media.write_parallel_units") && e.contains("1..=28"),
        "{e}"
    );
    q.media.write_parallel_units = None;
    q.media.write_bus_bandwidth_bytes = Some(0);
    let e = q.validate().unwrap_err().to_string();
    assert!(e.contains("media.write_bus_bandwidth_bytes"), "{e}");
    let mut nand = DeviceProfile::builtin("nand").unwrap();
    nand.media.write_parallel_units = Some(8);
    let e = nand.validate().unwrap_err().to_string();
    assert!(e.contains("[flash]"), "{e}");
}
