//! The fits recover known parameters from points the simulator made with them.

use super::*;
use crate::analysis::LinearFit;
use crate::model::{derive, mva_iops, Anchors, Placement};

/// A model shaped like this machine's disk: 66 / 60 µs at QD1, reads on 4 units,
/// writes on 3, the body spread of its QD1 percentiles.
fn model() -> Model {
    let (lr, lw) = (66_000.0, 60_000.0);
    let curve = |l: f64, cmd: f64, units: u32| -> Vec<(u32, f64)> {
        let x = mva_iops(64, 0.0, cmd, l - cmd, units);
        [1u32, 2, 4, 8, 16, 32, 64]
            .iter()
            .map(|&q| (q, x[q as usize - 1]))
            .collect()
    };
    let a = Anchors {
        read_lat_qd1_ns: lr,
        write_lat_qd1_ns: lw,
        read_iops: 75_000.0,
        write_iops: 55_000.0,
        knee_qd: 32,
        read_bw_bytes: 1.0e9,
        write_bw_bytes: 2.0e9,
        read_fit: Some(LinearFit {
            offset: 62_000.0,
            slope: 1.0,
            r2: 0.99,
            n: 6,
        }),
        write_fit: Some(LinearFit {
            offset: 58_000.0,
            slope: 0.5,
            r2: 0.99,
            n: 6,
        }),
        read_curve: curve(lr, 13_333.0, 4),
        write_curve: curve(lw, 4_545.0, 3),
        write_buffer_bytes: None,
        read_size_curve: Vec::new(),
        write_size_curve: Vec::new(),
        read_size_left_out: Vec::new(),
        write_size_left_out: Vec::new(),
    };
    derive(&a).with_spread((64_000.0, 97_000.0), (58_000.0, 84_000.0))
}

const IOS: u64 = 100_000;

fn setup(seed: u64, ios: u64) -> FitSetup {
    FitSetup {
        ios,
        seed,
        size_bytes: 1 << 30,
    }
}

/// Grid points of `specs` simulated on `m` (the "measurements").
fn points(m: &Model, specs: &[(PointSpec, Role)], s: &FitSetup) -> Vec<Point> {
    let profile = m.to_profile("truth", "synthetic device");
    specs
        .iter()
        .map(|&(spec, role)| {
            let w = simulate(&profile, &spec, 40_000.0, s).expect("simulates");
            Point {
                spec,
                role,
                iops: w.iops,
                bw_bytes: w.bw_bytes,
                lat_mean_ns: w.lat_mean_ns,
                lat_p50_ns: w.lat_p50_ns,
                lat_p99_ns: w.lat_p99_ns,
                lat_p99_pooled_ns: w.lat_p99_ns,
                read_lat_mean_ns: w.read_lat_mean_ns,
                write_lat_mean_ns: w.write_lat_mean_ns,
                window_iops: vec![w.iops],
                steady: true,
                spread: 0.0,
                wall_ns: 0,
            }
        })
        .collect()
}

fn sweep(read_pct: u8) -> Vec<(PointSpec, Role)> {
    [1u32, 2, 4, 8, 16, 32, 64]
        .iter()
        .map(|&qd| {
            (
                PointSpec {
                    read_pct,
                    bs: 4096,
                    qd,
                },
                Role::QdSweep,
            )
        })
        .collect()
}

/// Recovery of a tail from points simulated with another seed (the noise of a
/// measurement: the p99s of 100 000 I/Os move by up to ±15 % between seeds at QD32 and
/// beyond). p99s alone let a rarer, longer tail stand in for a more frequent, shorter
/// one, so the tolerance is on what they determine: the fitted model's p99s within 20 %
/// rms of the measured ones (and less than half the error without a tail), and p and
/// m each within a factor 2 of the truth (their lattices step by ×1.78 and ×1.41).
fn recovers_tail(write: bool, p: f64, m: u64) {
    let base = model();
    let truth = base
        .tail_candidate(write, Some((TailKind::Op, p, m)))
        .expect("fits");
    let pts = points(&truth, &sweep(if write { 0 } else { 100 }), &setup(7, IOS));
    let fit_setup = setup(11, IOS);
    let fitted = base.clone().with_tails(&pts, &fit_setup).unwrap();
    let sv = fitted.service.clone().expect("service");
    let (op, other) = if write {
        (sv.write, sv.read)
    } else {
        (sv.read, sv.write)
    };
    let rp = op.tail_prob / p;
    assert!(
        (0.5..=2.0).contains(&rp),
        "tail_prob {} vs {p}",
        op.tail_prob
    );
    let rm = op.tail_mean_ns as f64 / m as f64;
    assert!(
        (0.5..=2.0).contains(&rm),
        "tail_mean_ns {} vs {m}",
        op.tail_mean_ns
    );
    let r = fitted.sim_fits.last().unwrap();
    assert!(
        r.rms_after_pct <= 20.0 && r.rms_after_pct < r.rms_before_pct / 2.0,
        "{r:?}"
    );
    // The other direction's points were generated without a tail... and not given.
    assert_eq!(other.tail_prob, 0.0, "{other:?}");
    // The mean moved out of the body: the QD1 mean is kept.
    let nominal = if write { base.write_ns } else { base.read_ns } as f64;
    let body = if write {
        fitted.write_ns
    } else {
        fitted.read_ns
    } as f64;
    assert!(
        (nominal - body - op.tail_prob * op.tail_mean_ns as f64).abs() < 1.0,
        "{nominal} − {body}"
    );
}

#[test]
fn the_read_tail_is_recovered_from_the_read_sweep() {
    recovers_tail(false, 1e-3, 1_500_000);
}

#[test]
fn the_write_tail_is_recovered_from_the_write_sweep() {
    recovers_tail(true, 3e-3, 1_000_000);
}

/// A device whose reads stall (each read draws, with probability 3·10⁻⁴, a 2 ms stall
/// that holds every read starting in it) as one pool of units: the fit takes stalls
/// rather than slow operations — only stalls give a p99 that jumps with the depth —
/// with `p` and the length within a factor 2 of the truth, and p99s far closer than
/// the body alone.
#[test]
fn read_stalls_are_recovered_as_stalls() {
    let base = Model {
        placement: Placement::Pool,
        ..model()
    };
    let truth = base
        .tail_candidate(false, Some((TailKind::Stall, 3e-4, 2_000_000)))
        .expect("fits");
    let pts = points(&truth, &sweep(100), &setup(7, IOS));
    let fitted = base.clone().with_tails(&pts, &setup(11, IOS)).unwrap();
    let op = fitted.service.clone().expect("service").read;
    assert_eq!(op.tail_prob, 0.0, "{:?}", fitted.derivation);
    let rp = op.stall_prob / 3e-4;
    let rm = op.stall_ns as f64 / 2e6;
    assert!(
        (0.5..=2.0).contains(&rp) && (0.5..=2.0).contains(&rm),
        "{op:?}: {:?}",
        fitted.derivation
    );
    let r = &fitted.sim_fits[0];
    assert!(r.rms_after_pct < r.rms_before_pct / 2.0, "{r:?}");
    assert!(fitted
        .derivation
        .iter()
        .any(|l| l.starts_with("service.read.stall_prob = ")));
}

#[test]
fn a_device_without_a_tail_gets_none_or_a_harmless_one() {
    let base = model();
    let pts = points(&base, &sweep(100), &setup(7, 30_000));
    let fitted = base.clone().with_tails(&pts, &setup(11, 30_000)).unwrap();
    let r = &fitted.sim_fits[0];
    assert!(r.rms_after_pct <= r.rms_before_pct, "{r:?}");
    if let Some(sv) = &fitted.service {
        // Whatever it chose adds little to the mean.
        assert!(
            sv.read.tail_prob * sv.read.tail_mean_ns as f64 <= 0.05 * base.read_ns as f64,
            "{sv:?}"
        );
    }
    // Too few points: not fitted.
    let few = base
        .clone()
        .with_tails(&pts[..2], &setup(11, 30_000))
        .unwrap();
    assert_eq!(few.service, base.service);
    assert!(few.derivation.last().unwrap().contains("not fitted"));
}

fn mixes() -> Vec<(PointSpec, Role)> {
    let mut v = Vec::new();
    for read_pct in [70u8, 50] {
        for qd in [1u32, 32] {
            v.push((
                PointSpec {
                    read_pct,
                    bs: 4096,
                    qd,
                },
                Role::Mixed,
            ));
        }
    }
    v
}

#[test]
fn the_read_block_is_recovered_from_the_mixed_points() {
    let base = model();
    for t in [30_000u64, 80_000] {
        let mut truth = base.clone();
        truth.read_block_after_write_ns = Some(t);
        let pts = points(&truth, &mixes(), &setup(7, 40_000));
        let fitted = base
            .clone()
            .with_read_block(&pts, &setup(11, 40_000))
            .unwrap();
        let got = fitted.read_block_after_write_ns.expect("fitted") as f64;
        assert!((got / t as f64 - 1.0).abs() <= 0.25, "{got} vs {t}");
    }
    // Mixed points the model already matches: off.
    let pts = points(&base, &mixes(), &setup(7, 40_000));
    let fitted = base
        .clone()
        .with_read_block(&pts, &setup(11, 40_000))
        .unwrap();
    let r = fitted.sim_fits.last().unwrap();
    assert!(
        fitted.read_block_after_write_ns.is_none() || r.rms_after_pct < 2.0,
        "{:?} {r:?}",
        fitted.read_block_after_write_ns
    );
    // Only QD1 mixes: not fitted.
    let qd1: Vec<Point> = pts.into_iter().filter(|p| p.spec.qd == 1).collect();
    let fitted = base
        .clone()
        .with_read_block(&qd1, &setup(11, 40_000))
        .unwrap();
    assert_eq!(fitted.read_block_after_write_ns, None);
}

/// The placement fit tells the three structures apart from their queue-depth sweeps
/// (simulated with another seed than the fit's): a device with one pool of units is
/// fitted as a pool, a striped one as striped, one whose writes go to a write
/// pointer as that, each with the tails it then needs.
#[test]
fn the_placement_fit_recovers_the_structure() {
    let specs: Vec<(PointSpec, Role)> = sweep(100).into_iter().chain(sweep(0)).collect();
    for placement in Placement::ALL {
        let truth = Model {
            placement,
            ..model()
        };
        // The "measurements" with 50 000 I/Os a point, the fit's runs with 10 000 (as
        // `sluice calibrate --quick`): the tail fits inside run twice per structure.
        let pts = points(&truth, &specs, &setup(7, IOS / 2));
        let fitted = model().with_placement(&pts, &setup(11, IOS / 10)).unwrap();
        assert_eq!(
            fitted.placement,
            placement,
            "{:?}",
            fitted.derivation.last()
        );
        let fit = fitted.sim_fits.last().expect("a fit report");
        assert_eq!(
            (fit.what.as_str(), fit.points, fit.candidates),
            ("placement", 14, 3)
        );
        assert!(fit.rms_after_pct <= fit.rms_before_pct);
        let line = fitted.derivation.last().unwrap();
        assert!(
            line.starts_with(&format!("placement = {}: the 14 steady", placement.name())),
            "{line}"
        );
    }
    // A write buffer's destage places by write_placement: no pool.
    let mut buffered = model();
    buffered.write_buffer = Some(crate::model::BufferParams {
        capacity_bytes: 1 << 20,
        ack_ns: 10_000,
        program_bytes: 4096,
    });
    let out = buffered.with_placement(&[], &setup(1, 10)).unwrap();
    assert_eq!(out.placement, Placement::Striped);
    assert!(out
        .derivation
        .iter()
        .any(|l| l.starts_with("placement not fitted") && l.contains("write buffer")));
}

/// The load fit recovers a load-dependent device from its read queue-depth sweep
/// (simulated with another seed than the fit's): reads on 32 units with `β = 0.5`
/// (IOPS growing as about √QD) are fitted with an exponent near 0.5 and many units,
/// and their IOPS far closer than the fixed units' — while a device of fixed units
/// keeps them (no exponent).
#[test]
fn the_load_fit_recovers_a_load_dependent_device() {
    let specs = sweep(100);
    let base = model();
    let truth = base.load_candidate(false, 32, Some(0.5));
    let pts = points(&truth, &specs, &setup(7, IOS / 2));
    let fitted = base.clone().with_load(&pts, &setup(11, IOS / 10)).unwrap();
    let beta = fitted.read_load_exponent.expect("an exponent");
    assert!(
        (0.4..=0.6).contains(&beta),
        "{beta}: {:?}",
        fitted.derivation
    );
    assert!(fitted.units_of(false) >= 16, "{:?}", fitted.derivation);
    // The writes were not measured here: they keep their fixed units and no exponent.
    assert_eq!(fitted.units_of(true), base.units_of(true));
    assert_eq!(fitted.write_load_exponent, None);
    let fit = &fitted.sim_fits[0];
    assert_eq!(
        (fit.what.as_str(), fit.points),
        ("media.read_load_exponent", 7)
    );
    assert!(
        fit.rms_after_pct < fit.rms_before_pct / 3.0,
        "{fit:?}: {:?}",
        fitted.derivation
    );
    // Fixed units: nothing to gain beyond the margin.
    let pts = points(&base, &specs, &setup(7, IOS / 2));
    let kept = base.clone().with_load(&pts, &setup(11, IOS / 10)).unwrap();
    assert_eq!(kept.read_load_exponent, None, "{:?}", kept.derivation);
    assert_eq!(kept.units_of(false), base.units_of(false));
    assert!(
        kept.derivation
            .iter()
            .any(|l| l.starts_with("media.read_load_exponent not set")),
        "{:?}",
        kept.derivation
    );
}

/// The batch fit recovers a batched device (`controller.batch_ns`) from its read and
/// write queue-depth sweeps and mixes (simulated with another seed than the fit's):
/// a batch of 40 µs ahead of 8 and 6 µs commands is found within 30 %, load exponents
/// off, and its IOPS far closer than the load-dependent units' — the forms the load fit
/// tried first.
#[test]
fn the_batch_fit_recovers_a_batched_device() {
    let base = model();
    let mut truth = base.clone();
    truth.batch_ns = Some(40_000);
    truth.read_cmd_ns = 8_000;
    truth.write_cmd_ns = 6_000;
    truth.units = 16;
    truth.read_parallel_units = None;
    truth.write_parallel_units = None;
    // The media times that keep the measured QD1 latencies (the anchors the fit keeps).
    let media = |write: bool, t: &Model| {
        let own = if write { t.write_ns } else { t.read_ns } as f64;
        (base.qd1_latency_ns(write, 4096) - (t.qd1_latency_ns(write, 4096) - own)) as u64
    };
    (truth.read_ns, truth.write_ns) = (media(false, &truth), media(true, &truth));
    let specs: Vec<(PointSpec, Role)> = sweep(100)
        .into_iter()
        .chain(sweep(0))
        .chain(mixes())
        .collect();
    let pts = points(&truth, &specs, &setup(7, IOS / 2));
    let fitted = base.clone().with_load(&pts, &setup(11, IOS / 10)).unwrap();
    let b = fitted.batch_ns.expect("batches") as f64;
    assert!(
        (b / 40_000.0 - 1.0).abs() < 0.3,
        "{b}: {:?}",
        fitted.derivation
    );
    assert_eq!(
        (fitted.read_load_exponent, fitted.write_load_exponent),
        (None, None)
    );
    let fit = fitted.sim_fits.last().unwrap();
    assert_eq!(fit.what, "controller.batch_ns");
    assert!(
        fit.rms_after_pct < fit.rms_before_pct / 2.0 && fit.rms_after_pct < 8.0,
        "{fit:?}: {:?}",
        fitted.derivation
    );
    // Its QD1 latencies stay the measured ones (the batch and the command taken from
    // the media time).
    for write in [false, true] {
        let l = fitted.qd1_latency_ns(write, 4096);
        let want = base.qd1_latency_ns(write, 4096);
        assert!((l / want - 1.0).abs() < 0.01, "{write}: {l} vs {want}");
    }
}
