//! The front end's form is recognised from size sweeps: exact closed forms, then
//! devices the simulator ran with each form (the derivation must name the form it was
//! simulated with and reproduce its saturated IOPS at every size).

use super::*;
use crate::analysis::linear_fit;
use crate::simfit::{simulate, FitSetup};
use crate::PointSpec;
use sluice_device::DeviceProfile;

const SIZES: [u32; 6] = [4096, 8192, 16384, 32768, 65536, 131072];

fn sweep(f: impl Fn(f64) -> f64) -> Vec<(u32, f64)> {
    SIZES.iter().map(|&s| (s, 1e9 / f(s as f64))).collect()
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * b.abs()
}

#[test]
fn closed_forms_are_recovered_and_told_apart() {
    // This machine's finding: 8.4 µs + 0.81 ns/B.
    let add = sweep(|s| 8_400.0 + 0.81 * s);
    let a = fit_additive(&add).unwrap();
    assert!(close(a.cmd_ns, 8_400.0, 1e-6) && close(a.ns_per_byte, 0.81, 1e-6));
    assert!(a.rms_pct() < 1e-6, "{a:?}");
    let m = fit_max(&add).unwrap();
    assert!(m.rms_pct() > 10.0, "max cannot follow a line: {m:?}");
    // A max device: 11 µs per command up to 17 KiB, then 1.58 GB/s.
    let mx = sweep(|s| (11_000.0f64).max(s / 1.58));
    let m = fit_max(&mx).unwrap();
    assert!(close(m.cmd_ns, 11_000.0, 1e-6) && close(m.ns_per_byte, 1.0 / 1.58, 1e-6));
    assert!(m.rms_pct() < 1e-6, "{m:?}");
    assert!(fit_additive(&mx).unwrap().rms_pct() > 5.0);
    // Sizes below 4 KiB do not count; fewer than three sizes fit nothing.
    let mut small = add.clone();
    small.push((512, 1.0));
    assert_eq!(fit_additive(&small), fit_additive(&add));
    assert!(fit_dir(&add[..2]).is_none());
}

#[test]
fn the_line_weighs_every_size_alike() {
    // On the line 6 µs + 1 ns/B up to 64 KiB, the 128 KiB point 14 % above it (a bus
    // starting to bind). Ordinary least squares follow the 128 KiB point's
    // microseconds and miss 4 KiB by more than 10 %; the relative line misses no size
    // by more than the 128 KiB point's own share.
    let mut bent = sweep(|s| 6_000.0 + s);
    bent[5].1 = 1e9 / ((6_000.0 + 131_072.0) * 1.14);
    let a = fit_additive(&bent).unwrap();
    let err = |s: f64, iops: f64| (a.ns(FrontEnd::Additive, s) * iops / 1e9 - 1.0).abs();
    assert!(err(4096.0, bent[0].1) < 0.05, "{a:?}");
    assert!(bent.iter().all(|&(s, i)| err(s as f64, i) < 0.12), "{a:?}");
    let ols = linear_fit(
        &bent
            .iter()
            .map(|&(s, i)| (s as f64, 1e9 / i))
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let ols_4k = (ols.offset + ols.slope * 4096.0) * bent[0].1 / 1e9 - 1.0;
    assert!(ols_4k.abs() > 0.10, "{ols:?}");
}

/// The model tests' anchors with these size sweeps.
fn anchors_with(read: Vec<(u32, f64)>, write: Vec<(u32, f64)>) -> Anchors {
    Anchors {
        read_size_curve: read,
        write_size_curve: write,
        ..crate::model::tests::anchors()
    }
}

/// `m`'s saturated IOPS at every size are `1e9 / read(len)` and `1e9 / write(len)`,
/// and its QD1 4 KiB latencies are the anchors' (100 and 80 µs): the units' times are
/// what is left of the measured latencies beside the front end.
fn assert_follows(m: &Model, read: impl Fn(f64) -> f64, write: impl Fn(f64) -> f64) {
    for s in SIZES {
        let r = 1e9 / read(s as f64);
        assert!(close(m.saturated_iops(false, s), r, 1e-3), "{s}");
        let w = 1e9 / write(s as f64);
        assert!(close(m.saturated_iops(true, s), w, 1e-3), "{s}");
    }
    assert!(
        close(m.qd1_latency_ns(false, 4096), 100_000.0, 0.01),
        "{m:?}"
    );
    assert!(close(m.qd1_latency_ns(true, 4096), 80_000.0, 0.01), "{m:?}");
}

#[test]
fn an_additive_sweep_gives_cmd_and_bus_from_the_line_and_keeps_the_qd1_latencies() {
    let (read, write) = (|s: f64| 12_000.0 + 1.0 * s, |s: f64| 15_000.0 + 1.2 * s);
    let a = anchors_with(sweep(read), sweep(write));
    let m = derive(&a);
    assert_eq!(m.front_end, FrontEnd::Additive, "{:?}", m.derivation);
    assert_eq!(m.read_cmd_ns, 12_000);
    assert_eq!(m.bus_bandwidth_bytes, 1_000_000_000);
    assert_eq!(m.write_cmd_ns, 15_000);
    assert_eq!(m.write_bus_bandwidth_bytes, Some(833_333_333));
    // The model's QD1 latencies are the measured ones beside the additive front end,
    // and its QD1 slope is the cost slope.
    assert_follows(&m, read, write);
    let slope = (m.qd1_latency_ns(false, 131072) - m.qd1_latency_ns(false, 65536)) / 65536.0;
    assert!(close(slope, 1.5, 0.01), "{slope}");
    // The profile says so, and both fits' errors are in the derivation.
    let p = m.to_profile("x", "y");
    assert_eq!(p.controller.front_end, FrontEnd::Additive);
    let text = profile_text(&p, &m, &[]).unwrap();
    assert!(text.contains("front_end = \"additive\""), "{text}");
    assert!(text.contains("controller.front_end = additive"), "{text}");
    assert!(
        text.contains("rms error 0.0 %; max(cmd, len / bus)"),
        "{text}"
    );
    assert_eq!(DeviceProfile::from_toml_str(&text, "x").unwrap(), p);
}

#[test]
fn a_max_sweep_or_no_sweep_keeps_the_max_front_end() {
    let mx = anchors_with(
        sweep(|s| (16_667.0f64).max(s)),
        sweep(|s| (22_222.0f64).max(s / 0.9)),
    );
    let none = anchors_with(Vec::new(), Vec::new());
    for a in [&mx, &none] {
        let m = derive(a);
        assert_eq!(m.front_end, FrontEnd::Max, "{:?}", m.derivation);
        assert_eq!(m.read_cmd_ns, 16_667);
        assert_eq!(m.bus_bandwidth_bytes, 1_000_000_000);
        let text = profile_text(&m.to_profile("x", "y"), &m, &[]).unwrap();
        assert!(
            !text.contains("\nfront_end = "),
            "max is the default: {text}"
        );
        assert!(text.contains("controller.front_end = max"), "{text}");
    }
    // A line that is not a front end (a negative intercept) is not chosen.
    let neg = anchors_with(sweep(|s| 2.0 * s - 4_000.0), Vec::new());
    let c = choose_front_end(&neg, false);
    assert_eq!(c.front_end, FrontEnd::Max);
    assert!(c.lines().iter().any(|l| l.contains("not a front end")));
}

/// A front-end-bound device: `ull`'s units and media (with its spread and tails), the
/// given command times and buses.
fn device(front_end: FrontEnd, cmd: (u64, u64), bus: (u64, u64)) -> DeviceProfile {
    let mut p = DeviceProfile::builtin("ull").unwrap();
    // The calibration's closed forms are those of one command at a time.
    p.controller.transfer = sluice_device::Transfer::Fifo;
    p.controller.front_end = front_end;
    (p.controller.read_cmd_ns, p.controller.write_cmd_ns) = cmd;
    p.media.bus_bandwidth_bytes = bus.0;
    p.media.write_bus_bandwidth_bytes = Some(bus.1);
    p.validate().unwrap();
    p
}

/// What the calibration measures of `p`, simulated: QD1 4 KiB and 128 KiB latencies
/// (the cost model), the QD32 size sweeps (IOPS, bandwidth).
fn measure(p: &DeviceProfile) -> Anchors {
    let setup = FitSetup {
        ios: 20_000,
        seed: 11,
        size_bytes: 1 << 30,
    };
    let run = |read_pct: u8, bs: u32, qd: u32| {
        let spec = PointSpec { read_pct, bs, qd };
        simulate(p, &spec, 50_000.0, &setup).expect("simulates")
    };
    let dir = |read_pct: u8| {
        let l4 = run(read_pct, 4096, 1).lat_mean_ns;
        let l128 = run(read_pct, 131072, 1).lat_mean_ns;
        let sizes: Vec<(u32, f64, f64)> = SIZES
            .iter()
            .map(|&s| {
                let w = run(read_pct, s, 32);
                (s, w.iops, w.bw_bytes)
            })
            .collect();
        (l4, linear_fit(&[(4096.0, l4), (131072.0, l128)]), sizes)
    };
    let (lr, fr, sr) = dir(100);
    let (lw, fw, sw) = dir(0);
    let best_bw = |v: &[(u32, f64, f64)]| v.iter().map(|p| p.2).fold(0.0, f64::max);
    Anchors {
        read_lat_qd1_ns: lr,
        write_lat_qd1_ns: lw,
        read_iops: sr[0].1,
        write_iops: sw[0].1,
        knee_qd: 32,
        read_bw_bytes: best_bw(&sr),
        write_bw_bytes: best_bw(&sw),
        read_fit: fr,
        write_fit: fw,
        read_curve: Vec::new(),
        write_curve: Vec::new(),
        read_size_curve: sr.iter().map(|p| (p.0, p.1)).collect(),
        write_size_curve: sw.iter().map(|p| (p.0, p.1)).collect(),
        read_size_left_out: Vec::new(),
        write_size_left_out: Vec::new(),
        write_buffer_bytes: None,
    }
}

/// The derived model's saturated IOPS against the simulated sweep: the worst error.
fn worst_iops_error(m: &Model, a: &Anchors) -> f64 {
    let err = |write: bool, curve: &[(u32, f64)]| {
        curve
            .iter()
            .map(|&(s, iops)| (m.saturated_iops(write, s) / iops - 1.0).abs())
            .fold(0.0, f64::max)
    };
    err(false, &a.read_size_curve).max(err(true, &a.write_size_curve))
}

#[test]
fn a_device_simulated_with_an_additive_front_end_is_recognised() {
    let p = device(
        FrontEnd::Additive,
        (8_400, 9_000),
        (1_234_567_901, 2_000_000_000),
    );
    let a = measure(&p);
    let c = choose_front_end(&a, false);
    assert_eq!(c.front_end, FrontEnd::Additive, "{:?}", c.lines());
    let r = c.read.unwrap();
    assert!(r.additive.rms_pct() < 2.0 && r.max.rms_pct() > 2.0 * r.additive.rms_pct());
    assert!(close(r.additive.cmd_ns, 8_400.0, 0.10), "{r:?}");
    assert!(close(r.additive.ns_per_byte, 0.81, 0.05), "{r:?}");
    let m = derive(&a);
    assert_eq!(m.front_end, FrontEnd::Additive);
    let e = worst_iops_error(&m, &a);
    assert!(e < 0.05, "saturated IOPS off by {:.1} %", e * 100.0);
    assert!(close(
        m.qd1_latency_ns(false, 4096),
        a.read_lat_qd1_ns,
        0.02
    ));
    // Without the sweeps (the derivation before the front end's form was fitted), the
    // max front end misses the additive device's mid sizes by far more.
    let mut old = a.clone();
    old.read_size_curve.clear();
    old.write_size_curve.clear();
    let m_old = derive(&old);
    assert_eq!(m_old.front_end, FrontEnd::Max);
    assert!(worst_iops_error(&m_old, &a) > 0.2);
}

#[test]
fn a_device_simulated_with_a_max_front_end_is_recognised() {
    let p = device(
        FrontEnd::Max,
        (11_000, 9_400),
        (1_580_000_000, 3_700_000_000),
    );
    let a = measure(&p);
    let c = choose_front_end(&a, false);
    assert_eq!(c.front_end, FrontEnd::Max, "{:?}", c.lines());
    let r = c.read.unwrap();
    assert!(close(r.max.cmd_ns, 11_000.0, 0.05), "{r:?}");
    assert!(close(r.max.ns_per_byte, 1e9 / 1.58e9, 0.05), "{r:?}");
    let m = derive(&a);
    assert_eq!(m.front_end, FrontEnd::Max);
    let e = worst_iops_error(&m, &a);
    assert!(e < 0.05, "saturated IOPS off by {:.1} %", e * 100.0);
}

#[test]
fn a_capped_sweep_is_recovered_and_told_apart() {
    // A line 8.4 µs + 0.5 ns/B (link 2 GB/s) under a 0.8 ns/B ceiling (1.25 GB/s):
    // the break at 28 KB, three sizes on each side.
    let capped = sweep(|s| (8_400.0 + 0.5 * s).max(0.8 * s));
    let c = fit_capped(&capped).unwrap();
    assert!(close(c.cmd_ns, 8_400.0, 1e-6), "{c:?}");
    assert!(close(c.link_ns_per_byte, 0.5, 1e-6), "{c:?}");
    assert!(close(c.ns_per_byte, 0.8, 1e-6), "{c:?}");
    assert!(c.rms_pct() < 1e-6, "{c:?}");
    assert!(close(c.break_bytes(), 28_000.0, 1e-6));
    assert!(fit_additive(&capped).unwrap().rms_pct() > 3.0);
    assert!(fit_max(&capped).unwrap().rms_pct() > 3.0);
    // Lines and flat-then-bandwidth sweeps: the capped fit is no better than theirs.
    let add = sweep(|s| 8_400.0 + 0.81 * s);
    assert!(fit_capped(&add)
        .is_none_or(|c| c.rms_pct() >= fit_additive(&add).unwrap().rms_pct() - 1e-9));
    let mx = sweep(|s| (11_000.0f64).max(s / 1.58));
    assert!(fit_capped(&mx).is_none_or(|c| c.rms_pct() >= fit_max(&mx).unwrap().rms_pct() - 1e-9));
    // Four sizes at least; a ceiling below the line's slope is not a front end.
    assert!(fit_capped(&capped[..3]).is_none());
    let rising = sweep(|s| (8_400.0 + 0.9 * s).max(0.5 * s));
    assert!(fit_capped(&rising).is_none_or(|c| c.link_ns_per_byte < c.ns_per_byte));
}

#[test]
fn a_capped_sweep_gives_cmd_link_and_bus_and_keeps_the_qd1_latencies() {
    let read = |s: f64| (12_000.0 + 0.4 * s).max(1.0 * s);
    let write = |s: f64| (15_000.0 + 0.6 * s).max(1.2 * s);
    let a = anchors_with(sweep(read), sweep(write));
    let c = choose_front_end(&a, false);
    assert_eq!(c.front_end, FrontEnd::AdditiveCapped, "{:?}", c.lines());
    let m = derive(&a);
    assert_eq!(m.front_end, FrontEnd::AdditiveCapped, "{:?}", m.derivation);
    assert_eq!(m.read_cmd_ns, 12_000);
    assert_eq!(m.bus_bandwidth_bytes, 1_000_000_000);
    assert_eq!(m.link_bandwidth_bytes, Some(2_500_000_000));
    assert_eq!(m.write_cmd_ns, 15_000);
    assert_eq!(m.write_bus_bandwidth_bytes, Some(833_333_333));
    assert_eq!(m.write_link_bandwidth_bytes, Some(1_666_666_667));
    // The QD1 latencies are the measured ones beside the capped front end's 4 KiB
    // time (12 µs + 4096 B over the link).
    assert_follows(&m, read, write);
    // From 4 to 128 KiB its QD1 slope is the measured cost slope (the front end's
    // chord, the link's slope then the ceiling's, and the unit's).
    let slope = (m.qd1_latency_ns(false, 131072) - m.qd1_latency_ns(false, 4096)) / 126976.0;
    assert!(close(slope, 1.5, 0.01), "{slope}");
    let slope = (m.qd1_latency_ns(true, 131072) - m.qd1_latency_ns(true, 4096)) / 126976.0;
    assert!(close(slope, 1.6, 0.01), "{slope}");
    // The profile says so, validates, round-trips; the three fits' errors are in its
    // header.
    let p = m.to_profile("x", "y");
    p.validate().unwrap();
    assert_eq!(p.controller.front_end, FrontEnd::AdditiveCapped);
    let text = profile_text(&p, &m, &[]).unwrap();
    assert!(text.contains("front_end = \"additive_capped\""), "{text}");
    assert!(text.contains("link_bandwidth_bytes = 2500000000"), "{text}");
    assert!(
        text.contains("controller.front_end = additive_capped"),
        "{text}"
    );
    assert!(
        text.contains("additive_capped max(a + b·len, c·len)"),
        "{text}"
    );
    assert!(
        text.contains("ceiling 1000 MB/s, break at 19.5 KiB), rms error 0.0 %"),
        "{text}"
    );
    assert!(
        text.contains("rms error 11.6 %; max(cmd, len / bus)"),
        "{text}"
    );
    assert_eq!(DeviceProfile::from_toml_str(&text, "x").unwrap(), p);
}

/// A device with the capped front end: `ull`'s units and media (with its spread and
/// tails), the given command times, links and buses (ceilings).
fn capped_device(cmd: (u64, u64), link: (u64, u64), bus: (u64, u64)) -> DeviceProfile {
    let mut p = DeviceProfile::builtin("ull").unwrap();
    p.controller.transfer = sluice_device::Transfer::Fifo;
    p.controller.front_end = FrontEnd::AdditiveCapped;
    (p.controller.read_cmd_ns, p.controller.write_cmd_ns) = cmd;
    p.media.link_bandwidth_bytes = Some(link.0);
    p.media.write_link_bandwidth_bytes = Some(link.1);
    p.media.bus_bandwidth_bytes = bus.0;
    p.media.write_bus_bandwidth_bytes = Some(bus.1);
    p.validate().unwrap();
    p
}

#[test]
fn a_device_simulated_with_a_capped_front_end_is_recognised() {
    // Reads 8.4 µs + len / 2 GB/s under 1.25 GB/s (break 28 KB), writes 9 µs + len /
    // 2.5 GB/s under 1.4 GB/s (break 28.6 KB).
    let p = capped_device(
        (8_400, 9_000),
        (2_000_000_000, 2_500_000_000),
        (1_250_000_000, 1_400_000_000),
    );
    let a = measure(&p);
    let c = choose_front_end(&a, false);
    assert_eq!(c.front_end, FrontEnd::AdditiveCapped, "{:?}", c.lines());
    let r = c.read.unwrap();
    let rc = r.capped.unwrap();
    assert!(rc.rms_pct() < 2.0, "{r:?}");
    assert!(
        r.additive.rms_pct() > rc.rms_pct() + CAPPED_MARGIN_PCT,
        "{r:?}"
    );
    assert!(r.max.rms_pct() > rc.rms_pct() + CAPPED_MARGIN_PCT, "{r:?}");
    assert!(close(rc.cmd_ns, 8_400.0, 0.10), "{rc:?}");
    assert!(close(rc.link_ns_per_byte, 0.5, 0.10), "{rc:?}");
    assert!(close(rc.ns_per_byte, 0.8, 0.05), "{rc:?}");
    let m = derive(&a);
    assert_eq!(m.front_end, FrontEnd::AdditiveCapped);
    let e = worst_iops_error(&m, &a);
    assert!(e < 0.05, "saturated IOPS off by {:.1} %", e * 100.0);
    assert!(close(
        m.qd1_latency_ns(false, 4096),
        a.read_lat_qd1_ns,
        0.02
    ));
    assert!(close(
        m.qd1_latency_ns(true, 4096),
        a.write_lat_qd1_ns,
        0.02
    ));
    // Neither other form reproduces it within 5 % at every size.
    for fe in [FrontEnd::Additive, FrontEnd::Max] {
        let mut other = a.clone();
        let mut fits = c.clone();
        fits.front_end = fe;
        let fit = |d: &DirFits| {
            if fe == FrontEnd::Max {
                d.max
            } else {
                d.additive
            }
        };
        let worst = |write: bool, curve: &[(u32, f64)]| {
            let f = fit(fits.of(write).unwrap());
            curve
                .iter()
                .map(|&(s, iops)| (1e9 / f.ns(fe, s as f64) / iops - 1.0).abs())
                .fold(0.0, f64::max)
        };
        other.knee_qd = 32;
        let e = worst(false, &other.read_size_curve).max(worst(true, &other.write_size_curve));
        assert!(e > 0.05, "{fe:?} off by only {:.1} %", e * 100.0);
    }
}
