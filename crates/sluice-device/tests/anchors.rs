//! Each builtin profile reproduces its nominal figures under a closed-loop 4 KB random
//! workload, and latency rises past the knee.

use crate::common;
use common::*;
use sluice_device::{DeviceProfile, Op};

const N: u64 = 200_000;

fn profiles() -> Vec<DeviceProfile> {
    // A zoned profile's random writes fail (they are not at a write pointer) and its
    // reads of nothing written skip the media: tests/zns.rs checks its figures.
    DeviceProfile::BUILTIN
        .iter()
        .map(|n| DeviceProfile::builtin(n).unwrap())
        .filter(|p| p.zoned.is_none())
        .collect()
}

#[test]
fn qd1_read_latency_matches_nominal() {
    for p in profiles() {
        let r = run_qd(&p, 1, Op::Read, 4096, 1000, N);
        let nominal = p.nominal.read_lat_qd1_ns as f64;
        eprintln!(
            "{}: QD1 read {:.0} ns (nominal {nominal})",
            p.name, r.mean_lat_ns
        );
        assert!(
            within(r.mean_lat_ns, nominal, 0.05),
            "{}: QD1 read latency {:.0} ns, nominal {nominal}",
            p.name,
            r.mean_lat_ns
        );
    }
}

#[test]
fn saturated_read_iops_matches_nominal() {
    for p in profiles() {
        let qd = saturating_qd(&p);
        let r = run_qd(&p, qd, Op::Read, 4096, 20_000, N);
        let nominal = p.nominal.read_iops as f64;
        eprintln!(
            "{}: QD{qd} read {:.0} IOPS (nominal {nominal})",
            p.name, r.iops
        );
        assert!(
            within(r.iops, nominal, 0.05),
            "{}: saturated read IOPS {:.0}, nominal {nominal}",
            p.name,
            r.iops
        );
    }
}

#[test]
fn qd1_write_latency_matches_nominal() {
    for p in profiles() {
        let r = run_qd(&p, 1, Op::Write, 4096, 1000, N);
        let nominal = p.nominal.write_lat_qd1_ns as f64;
        eprintln!(
            "{}: QD1 write {:.0} ns (nominal {nominal})",
            p.name, r.mean_lat_ns
        );
        assert!(
            within(r.mean_lat_ns, nominal, 0.05),
            "{}: QD1 write latency {:.0} ns, nominal {nominal}",
            p.name,
            r.mean_lat_ns
        );
    }
}

#[test]
fn saturated_write_iops_matches_nominal() {
    for p in profiles() {
        let qd = saturating_qd(&p);
        let r = run_qd(&p, qd, Op::Write, 4096, write_warm(&p), N);
        let nominal = p.nominal.write_iops as f64;
        eprintln!(
            "{}: QD{qd} write {:.0} IOPS (nominal {nominal})",
            p.name, r.iops
        );
        assert!(
            within(r.iops, nominal, 0.05),
            "{}: sustained write IOPS {:.0}, nominal {nominal}",
            p.name,
            r.iops
        );
    }
}

#[test]
fn latency_rises_past_the_knee() {
    for p in profiles() {
        let knee = p.nominal.knee_qd;
        let sat = run_qd(&p, saturating_qd(&p), Op::Read, 4096, 20_000, N).iops;
        let at2 = run_qd(&p, 2 * knee, Op::Read, 4096, 20_000, N);
        eprintln!(
            "{}: QD{} read {:.0} IOPS = {:.1} % of saturated {sat:.0}",
            p.name,
            2 * knee,
            at2.iops,
            100.0 * at2.iops / sat
        );
        assert!(
            at2.iops >= 0.9 * sat,
            "{}: IOPS at QD {} is {:.0}, under 90 % of saturated {sat:.0}",
            p.name,
            2 * knee,
            at2.iops
        );
        // Far past the knee, latency ≈ QD / IOPS (the extra depth only queues).
        let deep = 8 * knee;
        let r = run_qd(&p, deep, Op::Read, 4096, 20_000, N);
        let expect = deep as f64 / p.nominal.read_iops as f64 * 1e9;
        eprintln!(
            "{}: QD{deep} read latency {:.0} ns, QD/IOPS = {expect:.0} ns",
            p.name, r.mean_lat_ns
        );
        assert!(
            within(r.mean_lat_ns, expect, 0.10),
            "{}: latency at QD {deep} is {:.0} ns, QD/nominal IOPS is {expect:.0}",
            p.name,
            r.mean_lat_ns
        );
        let qd1 = p.nominal.read_lat_qd1_ns as f64;
        assert!(
            r.mean_lat_ns > 2.0 * qd1,
            "{}: latency did not rise with depth",
            p.name
        );
    }
}

#[test]
fn large_reads_are_bandwidth_bound() {
    for p in profiles() {
        let Some(bw) = p.nominal.bandwidth_bytes else {
            continue;
        };
        let len = 128 << 10;
        let r = run_qd(&p, 64, Op::Read, len, 2_000, 20_000);
        let got = r.iops * len as f64;
        eprintln!(
            "{}: 128 KB reads {:.2} GB/s (nominal {bw})",
            p.name,
            got / 1e9
        );
        assert!(
            within(got, bw as f64, 0.05),
            "{}: 128 KB read bandwidth {got:.3e} B/s, nominal {bw}",
            p.name
        );
    }
}

/// IOPS and latency against queue depth for every builtin profile (run with
/// `--ignored --nocapture` to see the curves the profile headers quote).
#[test]
#[ignore]
fn print_qd_curves() {
    for p in profiles() {
        for qd in [1, 2, 4, 6, 8, 12, 16, 32, 64, 128, 256, 512, 1024, 2048] {
            let r = run_qd(&p, qd, Op::Read, 4096, 20_000, N);
            eprintln!(
                "{:5} read  QD{qd:5}: {:8.0} IOPS {:9.0} ns",
                p.name, r.iops, r.mean_lat_ns
            );
        }
    }
}
