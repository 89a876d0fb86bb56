use super::*;
use crate::buffer::{self, Burst};
use crate::validate::{Check, JOBS};
use crate::Role;
use crate::{aggregate, PointSpec};

/// A device of closed form: a QD1 latency of `base + bs · per_byte`, flat until the
/// knee (QD 4), then latency grows with depth; IOPS = QD / latency.
fn window(spec: PointSpec) -> Window {
    let (base, per_byte) = match spec.read_pct {
        100 => (80_000.0, 0.5),
        0 => (20_000.0, 1.0),
        _ => (60_000.0, 0.7),
    };
    let lat = (base + spec.bs as f64 * per_byte) * (spec.qd as f64 / 4.0).max(1.0);
    let iops = spec.qd as f64 / lat * 1e9;
    Window {
        iops,
        bw_bytes: iops * spec.bs as f64,
        lat_mean_ns: lat,
        lat_p50_ns: lat * 0.95,
        lat_p99_ns: lat * 1.6,
        read_lat_mean_ns: if spec.read_pct > 0 { lat } else { 0.0 },
        write_lat_mean_ns: if spec.read_pct < 100 { lat } else { 0.0 },
        reads: 100,
        writes: 100,
    }
}

/// The points of `plan`'s grid on that device, in the order [`crate::measure`] takes
/// them (knee QD 4), the last one not steady.
fn points(plan: &Plan) -> Vec<Point> {
    let mut specs: Vec<(PointSpec, Role)> = Vec::new();
    let spec = |read_pct, bs, qd| PointSpec { read_pct, bs, qd };
    for r in [100u8, 0] {
        specs.extend(plan.qds.iter().map(|&q| (spec(r, 4096, q), Role::QdSweep)));
    }
    for r in [100u8, 0] {
        specs.extend(
            plan.small_sizes
                .iter()
                .map(|&b| (spec(r, b, 4), Role::SmallSize)),
        );
        let big = plan.sizes.iter().filter(|&&b| b != 4096);
        specs.extend(big.map(|&b| (spec(r, b, 4), Role::SizeSweep)));
    }
    for r in [100u8, 0] {
        let big = plan.sizes.iter().filter(|&&b| b != 4096);
        specs.extend(big.map(|&b| (spec(r, b, 1), Role::Qd1Size)));
    }
    for r in [100u8, 0] {
        specs.extend(
            plan.mid_sizes
                .iter()
                .map(|&b| (spec(r, b, 2), Role::MidSize)),
        );
    }
    for &r in &plan.mixes {
        specs.extend([1, 4].map(|q| (spec(r, 4096, q), Role::Mixed)));
    }
    let n = specs.len();
    specs
        .into_iter()
        .enumerate()
        .map(|(i, (s, role))| {
            let w = window(s);
            let mut last = w;
            if i == n - 1 {
                last.iops *= 1.5; // the last point's windows disagree
            }
            aggregate(
                s,
                role,
                &[w, w, last],
                plan.agree,
                plan.tolerance,
                1_000_000,
            )
        })
        .collect()
}

fn probe() -> BufferProbe {
    let bursts: Vec<Burst> = [20.0, 21.0, 23.0, 90.0, 150.0]
        .iter()
        .enumerate()
        .map(|(i, &us)| Burst {
            bytes: buffer::FIRST_BURST_BYTES << i,
            iops: 32.0 / us * 1e6,
            lat_mean_ns: us * 1e3,
            lat_p99_ns: 2.0 * us * 1e3,
        })
        .collect();
    let (size_bytes, verdict) = buffer::analyse(&bursts);
    BufferProbe {
        bursts,
        size_bytes,
        verdict,
    }
}

fn calibration() -> Calibration {
    let plan = Plan::quick();
    let target = TargetFacts {
        path: "/work/calibrate/sluice-calibrate.0.0".into(),
        size_bytes: 64 << 20,
        align: 512,
    };
    let mut c = Calibration::derive(plan.clone(), points(&plan), probe(), "dev", target, 1)
        .expect("the grid derives a profile");
    // The simulator within 10 % on all but the last job, whose p99 is 50 % off.
    c.checks = JOBS
        .iter()
        .enumerate()
        .map(|(i, job)| {
            let real = window(job.spec);
            let mut sim = real;
            sim.iops *= 1.1;
            if i == JOBS.len() - 1 {
                sim.lat_p99_ns *= 1.5;
            }
            Check {
                job: *job,
                real,
                real_rounds: vec![real],
                sim,
            }
        })
        .collect();
    c
}

fn provenance() -> Provenance {
    Provenance {
        when: "2026-11-23T12:22:43Z".into(),
        host: "box".into(),
        kernel: "6.1.0".into(),
        path: "/work/calibrate".into(),
        in_directory: true,
        device: "vda (253:0)".into(),
        command: "sluice calibrate /work/calibrate --quick".into(),
    }
}

#[test]
fn derive_gives_a_valid_profile_with_the_measured_buffer_and_spread() {
    let c = calibration();
    assert_eq!(c.profile.name, "dev");
    assert!(c.profile.validate().is_ok());
    assert!(c
        .profile
        .description
        .starts_with("calibrated on /work/calibrate/sluice-calibrate.0.0: 82 us 4K read"));
    // Writes at QD1 are 4× faster than reads: a write buffer of the probe's size.
    assert_eq!(c.probe.size_bytes, Some(4 << 20));
    assert_eq!(
        c.model.write_buffer.as_ref().unwrap().capacity_bytes,
        4 << 20
    );
    // The QD1 spread (p99 = 1.6 / 0.95 × the median) gives a `[service]` section.
    let service = c.profile.service.as_ref().expect("a spread");
    assert!(service.read.sigma > 0.0 && service.write.sigma > 0.0);
    assert_eq!(c.summary.read.knee_qd, 4);
    assert_eq!(c.summary.unsteady, 1);
    assert!(c.checks.len() == JOBS.len());
}

#[test]
fn the_profile_text_has_the_header_and_loads_back() {
    let c = calibration();
    let header = c.header(&provenance());
    let text = c.profile_toml(&header).unwrap();
    assert!(text.starts_with("# dev — a device profile measured by `sluice calibrate`.\n"));
    assert!(text.contains("# When:  2026-11-23T12:22:43Z\n"), "{text}");
    assert!(text.contains(
        "# Where: host box, Linux 6.1.0, a temporary file in /work/calibrate on block device \
         vda (253:0), 64 MiB measured, O_DIRECT alignment 512 B\n"
    ));
    assert!(text.contains("# Derivation (sluice-calibrate model):\n"));
    assert_eq!(
        DeviceProfile::from_toml_str(&text, "dev").unwrap(),
        c.profile
    );
}

#[test]
fn the_header_counts_the_goals_and_ends_with_the_buffer() {
    let c = calibration();
    let h = c.header(&provenance());
    let n = c.points.len();
    assert!(
        h.iter()
            .any(|l| l.ends_with(&format!("; {n} points, 1 not steady"))),
        "{h:#?}"
    );
    assert!(h.contains(
        &"  goals: IOPS and mean within 15 %, p99 within 25 %; met by 4 of 5 jobs".into()
    ));
    assert!(h
        .iter()
        .any(|l| l == "  IOPS and mean within 15 % (p99 aside): 5 of 5 jobs; p99 within 25 % (IOPS and mean aside): 4 of 5"));
    assert!(h
        .iter()
        .any(|l| l.starts_with("  reads cost model (FIOS §4.3")));
    let last = h.last().unwrap();
    assert!(
        last.starts_with(
            "Write buffer (bursts of 4 KiB random writes at QD32, each after a 50 ms pause): "
        ) && last.ends_with(&c.probe.verdict),
        "{last}"
    );
}

#[test]
fn the_tables_have_a_row_per_point_and_per_job() {
    let c = calibration();
    let mut out = Vec::new();
    c.print_tables(&mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let rows = |prefix: &str| text.lines().filter(|l| l.starts_with(prefix)).count();
    assert_eq!(rows("qd-sweep "), 2 * c.plan.qds.len(), "{text}");
    assert_eq!(text.lines().filter(|l| l.ends_with(" unsteady")).count(), 1);
    for job in &JOBS {
        assert_eq!(rows(&format!("{} ", job.label())), 1, "{text}");
    }
    for title in [
        "Measured points",
        "Derived figures",
        "FIOS policy with this cost model:",
        "Write bursts",
        "Validation: simulator on the new profile",
    ] {
        assert!(text.contains(title), "{title}: {text}");
    }
    assert!(
        text.contains("1 point(s) did not reach a steady state within the time cap (see 'spread')")
    );
    assert!(
        text.lines().any(|l| l.trim_start().starts_with("4 MiB ")),
        "a burst row: {text}"
    );
}

#[test]
fn the_json_holds_every_part() {
    let c = calibration();
    let v = c.to_json(None);
    assert_eq!(v["points"].as_array().unwrap().len(), c.points.len());
    assert_eq!(v["target"]["align"], 512);
    assert_eq!(v["plan"]["qds"], serde_json::json!([1, 4, 16]));
    assert_eq!(v["summary"]["read"]["knee_qd"], 4);
    assert_eq!(v["model"]["write_buffer_bytes"], 4 << 20);
    assert_eq!(v["write_buffer"]["size_bytes"], 4 << 20);
    assert_eq!(v["write_buffer"]["bursts"].as_array().unwrap().len(), 5);
    let jobs: Vec<&str> = v["validation"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["job"].as_str().unwrap())
        .collect();
    assert_eq!(jobs, JOBS.map(|j| j.label()));
    let e = v["validation"][0]["iops_error_pct"].as_f64().unwrap();
    assert!((e - 10.0).abs() < 1e-9, "{e}");
    assert_eq!(v["validation"][0]["device_spread_pct"]["iops"], 0.0);
}

#[test]
fn the_device_s_own_spread_is_its_rounds_range_over_the_median() {
    let job = JOBS[0];
    let base = window(job.spec);
    let round = |iops: f64, p99: f64| Window {
        iops,
        lat_p99_ns: p99,
        ..base
    };
    // Three rounds: 90, 100 and 120 K IOPS; the median round (100 K) is the one kept.
    let rounds = vec![round(90e3, 300e3), round(120e3, 200e3), round(100e3, 250e3)];
    let c = Check {
        job,
        real: crate::validate::median_window(&rounds),
        real_rounds: rounds,
        sim: base,
    };
    let (i, m, p) = c.device_spread();
    assert!((i - 30.0).abs() < 1e-9, "IOPS (120 − 90) / 100: {i}");
    assert_eq!(m, 0.0, "every round's mean is the same");
    assert!((p - 40.0).abs() < 1e-9, "p99 (300 − 200) / 250: {p}");
    let mut out = Vec::new();
    let mut cal = calibration();
    cal.checks = vec![c];
    cal.print_tables(&mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("30/0/40%"), "{text}");
}

/// The device's validation rounds are spread evenly over the grid, from before its
/// first point to after its last, and the tables say where they ran.
#[test]
fn validation_rounds_are_spread_over_the_grid() {
    use crate::validate::{describe_positions, round_positions};
    assert_eq!(round_positions(48, 3), vec![0, 24, 48]);
    assert_eq!(round_positions(47, 3), vec![0, 24, 47]);
    assert_eq!(round_positions(48, 5), vec![0, 12, 24, 36, 48]);
    assert_eq!(
        round_positions(14, 1),
        vec![14],
        "one round: after the grid"
    );
    assert_eq!(
        round_positions(14, 0),
        vec![14],
        "no rounds asked: still one"
    );
    assert_eq!(
        round_positions(2, 4),
        vec![0, 1, 1, 2],
        "more rounds than points"
    );
    assert_eq!(
        describe_positions(&[0, 24, 48], 48),
        "before point 1 of the grid's 48, before point 25 and after the last"
    );
    assert_eq!(
        describe_positions(&[14], 14),
        "after the last of the grid's 14"
    );
    assert_eq!(describe_positions(&[], 48), "after the grid and the fits");
    let mut cal = calibration();
    cal.validate_at = round_positions(cal.points.len(), 3);
    let mut out = Vec::new();
    cal.print_tables(&mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.contains("the device's rounds ran before point 1 of the grid's"),
        "{text}"
    );
    assert!(cal
        .header(&provenance())
        .iter()
        .any(|l| l.contains("the device's rounds ran before point 1")));
}

#[test]
fn latencies_print_in_their_unit() {
    assert_eq!(fmt_ns(850.0), "850ns");
    assert_eq!(fmt_ns(12_345.0), "12.3µs");
    assert_eq!(fmt_ns(1_250_000.0), "1.25ms");
    assert_eq!(table::fmt_size(Some(16384)), "16 KiB");
    assert_eq!(table::fmt_size(Some(512)), "512 B");
    assert_eq!(table::fmt_size(None), "-");
}

/// A saved calibration reads back as what was saved, and fitting it again with the
/// same build gives the same profile; the validation's device side is the saved
/// rounds, its simulated side is run on the new profile.
#[test]
fn a_saved_calibration_is_fitted_again_to_the_same_profile() {
    let mut c = calibration();
    c.validate_at = crate::validate::round_positions(c.points.len(), 3);
    let prov = provenance();
    let text = serde_json::to_string(&c.to_json(Some(&prov))).unwrap();
    let saved = saved::read(&text, "cal.json").unwrap();
    assert_eq!(saved.points, c.points);
    assert_eq!(saved.plan, c.plan);
    assert_eq!(saved.probe, c.probe);
    assert_eq!(saved.target, c.target);
    assert_eq!(saved.provenance.as_ref(), Some(&prov));
    assert_eq!(saved.rounds.len(), JOBS.len());
    assert_eq!(saved.rounds[0][0].iops, c.checks[0].real.iops);
    assert_eq!(saved.validate_at, c.validate_at);
    let again = Calibration::refit(saved, "dev", 1).unwrap();
    assert_eq!(again.validate_at, c.validate_at);
    assert_eq!(again.profile, c.profile);
    assert_eq!(again.model.derivation, c.model.derivation);
    assert_eq!(again.checks.len(), JOBS.len());
    for (a, b) in again.checks.iter().zip(&c.checks) {
        assert_eq!((a.job, a.real.iops), (b.job, b.real.iops));
        // Simulated on the profile, not the test's made-up figures.
        let sim = crate::validate::simulate_job(
            JOBS.iter().position(|j| *j == a.job).unwrap(),
            &again.plan,
            again.target.size_bytes,
            &again.profile,
            1,
        )
        .unwrap();
        assert_eq!(a.sim, sim);
    }
    // A file without validation rounds refits with no checks.
    let mut v = c.to_json(None);
    v["validation"] = serde_json::json!([]);
    v.as_object_mut().unwrap().remove("validation_at");
    let bare = saved::read(&v.to_string(), "bare.json").unwrap();
    assert!(bare.provenance.is_none() && bare.rounds.is_empty());
    assert!(
        bare.validate_at.is_empty(),
        "files saved before: after the grid"
    );
    assert!(Calibration::refit(bare, "dev", 1)
        .unwrap()
        .checks
        .is_empty());
}

#[test]
fn a_damaged_saved_calibration_is_refused_naming_the_value() {
    let c = calibration();
    let v = c.to_json(None);
    let err = |v: &serde_json::Value| {
        saved::read(&v.to_string(), "cal.json")
            .unwrap_err()
            .to_string()
    };
    let mut no_iops = v.clone();
    no_iops["points"][3].as_object_mut().unwrap().remove("iops");
    let e = err(&no_iops);
    assert!(e.contains("cal.json: points[3].iops: missing"), "{e}");
    let mut role = v.clone();
    role["points"][0]["role"] = "sideways".into();
    assert!(err(&role).contains("points[0].role: unknown role 'sideways'"));
    let mut job = v.clone();
    job["validation"][1]["job"] = "randread 4k qd2".into();
    assert!(err(&job).contains("validation[1].job"));
    let mut at = v.clone();
    at["validation_at"] = serde_json::json!([0, "middle"]);
    assert!(err(&at).contains("validation_at: not an array of grid positions"));
    let mut repeat = v.clone();
    repeat["plan"]["repeat_sweeps"] = "yes".into();
    assert!(err(&repeat).contains("plan.repeat_sweeps: not true or false"));
    let e = saved::read("{not json", "cal.json")
        .unwrap_err()
        .to_string();
    assert!(e.contains("cal.json: not JSON"), "{e}");
}

/// A validation job the grid also measured shows how far the device moved between
/// the two, and the table says when that is more than the goal.
#[test]
fn the_device_s_drift_from_the_grid_is_shown() {
    let mut c = calibration();
    // randread 4k qd1 is a grid point (drift 0 here); QD32 is not in the quick grid,
    // and the sequential job never is.
    assert_eq!(c.checks[0].grid_drift(&c.points), Some(0.0));
    assert_eq!(c.checks[1].grid_drift(&c.points), None);
    assert_eq!(c.checks[4].grid_drift(&c.points), None);
    let quiet = |c: &Calibration| {
        let mut out = Vec::new();
        c.print_tables(&mut out).unwrap();
        String::from_utf8(out).unwrap()
    };
    assert!(!quiet(&c).contains("the device moved"));
    c.checks[0].real.iops *= 1.3;
    let d = c.checks[0].grid_drift(&c.points).unwrap();
    assert!((d - 30.0).abs() < 1e-9, "{d}");
    let text = quiet(&c);
    assert!(text.contains("+30.0%"), "{text}");
    assert!(text.contains("the device moved by more than the 15 % goal between the grid and the validation on 1 job(s)"), "{text}");
    assert_eq!(
        c.to_json(None)["validation"][0]["grid_drift_pct"].as_f64(),
        Some(d)
    );
    let h = c.header(&provenance()).join("\n");
    assert!(
        h.contains("the device +30.0 % from the grid's IOPS at that point"),
        "{h}"
    );
}

/// A second pass of the 4 KiB sweeps that measured what the first did changes nothing
/// in the profile; the header counts both the measured and the fitted points and says
/// how far the passes were apart.
#[test]
fn repeats_that_agree_with_the_first_pass_leave_the_profile_as_it_was() {
    let c = calibration();
    let mut points = c.points.clone();
    let repeats: Vec<Point> = c
        .points
        .iter()
        .filter(|p| p.role == Role::QdSweep)
        .map(|p| Point {
            role: Role::QdRepeat,
            ..p.clone()
        })
        .collect();
    let n = repeats.len();
    points.extend(repeats);
    let mut plan = c.plan.clone();
    plan.repeat_sweeps = true;
    let again = Calibration::derive(plan, points, c.probe.clone(), "dev", c.target.clone(), 1)
        .expect("the grid derives a profile");
    assert_eq!(again.profile, c.profile);
    assert_eq!(again.fitted_points().len(), c.points.len());
    let header = again.header(&provenance()).join("\n");
    let total = c.points.len() + n;
    assert!(
        header.contains(&format!(
            "{total} points, 1 not steady ({} fitted",
            c.points.len()
        )),
        "{header}"
    );
    assert!(
        header.contains("the 4 KiB sweeps measured twice")
            && header.contains("apart by at most 0.0 %"),
        "{header}"
    );
}
