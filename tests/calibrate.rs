//! `sluice calibrate`: the derived profile round-trips through the profile loader and
//! the simulator reproduces its anchors; a short real calibration (`--quick`) on a
//! temporary directory produces a profile that `sluice sim --device` accepts; bad input
//! exits with 2 and leaves files alone.

use std::process::{Command, Output};

use sluice::calibrate::analysis::LinearFit;
use sluice::calibrate::model::{self, mva_iops, Anchors};
use sluice::calibrate::{PointSpec, Window};
use sluice::core::policy;
use sluice::device::DeviceProfile;
use sluice::sim::{self, SimConfig};

fn sluice(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(args)
        .output()
        .expect("sluice runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A device whose 4 KiB curve bends early: 6 units of 120 µs, 20 µs in flight, an
/// 8 µs front end (QD1 148 µs); 1 GB/s; 1.5 ns/B at QD1.
fn soft_anchors() -> Anchors {
    let truth = mva_iops(64, 20_000.0, 8_000.0, 120_000.0, 6);
    let curve: Vec<(u32, f64)> = [1u32, 2, 4, 8, 16, 32, 64]
        .iter()
        .map(|&q| (q, truth[q as usize - 1]))
        .collect();
    Anchors {
        read_lat_qd1_ns: 148_000.0,
        write_lat_qd1_ns: 148_000.0,
        read_iops: truth[63],
        write_iops: truth[63],
        knee_qd: 16,
        read_bw_bytes: 1e9,
        write_bw_bytes: 1e9,
        read_fit: Some(LinearFit {
            offset: 142_000.0,
            slope: 1.5,
            r2: 0.99,
            n: 6,
        }),
        write_fit: Some(LinearFit {
            offset: 142_000.0,
            slope: 1.5,
            r2: 0.99,
            n: 6,
        }),
        read_curve: curve.clone(),
        write_curve: curve,
        write_buffer_bytes: None,
        read_size_curve: Vec::new(),
        write_size_curve: Vec::new(),
        read_size_left_out: Vec::new(),
        write_size_left_out: Vec::new(),
    }
}

fn simulate(profile: &DeviceProfile, spec: PointSpec) -> Window {
    simulate_for(profile, spec, 200_000_000, 20_000_000)
}

/// The simulated figures of `spec` over `runtime_ns` after a warm-up of `ramp_ns`.
fn simulate_for(profile: &DeviceProfile, spec: PointSpec, runtime_ns: u64, ramp_ns: u64) -> Window {
    let job = spec
        .job("calib.dat", 1 << 30, runtime_ns, ramp_ns, 3)
        .unwrap();
    let cfg = SimConfig {
        seed: 1,
        cores: 1,
        ..SimConfig::default()
    };
    let pol = policy::build(&"none".parse().unwrap()).unwrap();
    let out = sim::run(&[job], profile, pol, &cfg, &mut |_| {}).unwrap();
    Window::from_report(&out.report)
}

fn within(got: f64, want: f64, tol: f64) -> bool {
    (got - want).abs() <= tol * want
}

#[test]
fn derived_profile_round_trips_and_the_simulator_follows_the_anchors() {
    let a = soft_anchors();
    let m = model::derive(&a);
    let value = m.to_profile("soft", "a synthetic soft-knee device");
    let text = model::profile_text(&value, &m, &["header line".to_string(), String::new()])
        .expect("serde writes the profile");
    let p = DeviceProfile::from_toml_str(&text, "soft.toml").expect("the profile validates");
    assert_eq!(p, value, "what serde writes loads back as the same profile");
    assert!(text.starts_with("# header line\n#\n"), "{text}");
    assert_eq!(p.name, "soft");
    assert_eq!(p.media.units, m.units);
    assert_eq!(p.media.read_ns, m.read_ns);
    assert_eq!(p.controller.read_cmd_ns, m.read_cmd_ns);
    assert_eq!(p.nominal.read_iops, a.read_iops.round() as u64);
    assert_eq!(p.nominal.knee_qd, 16);
    assert_eq!(p.write_buffer, None);

    // The simulator on the profile: QD1 latency, the bent curve and the saturated IOPS.
    for (read_pct, lat) in [(100u8, a.read_lat_qd1_ns), (0, a.write_lat_qd1_ns)] {
        let w = simulate(
            &p,
            PointSpec {
                read_pct,
                bs: 4096,
                qd: 1,
            },
        );
        assert!(
            within(w.lat_mean_ns, lat, 0.05),
            "QD1 {read_pct}: {} vs {lat}",
            w.lat_mean_ns
        );
    }
    for &(qd, want) in &a.read_curve {
        if qd == 1 {
            continue;
        }
        let w = simulate(
            &p,
            PointSpec {
                read_pct: 100,
                bs: 4096,
                qd,
            },
        );
        assert!(
            within(w.iops, want, 0.15),
            "read QD{qd}: sim {} vs measured {want}",
            w.iops
        );
    }
    // Large requests are bus bound at the measured bandwidth.
    let w = simulate(
        &p,
        PointSpec {
            read_pct: 100,
            bs: 131072,
            qd: 32,
        },
    );
    assert!(
        within(w.bw_bytes, 1e9, 0.1),
        "128 KiB bandwidth {}",
        w.bw_bytes
    );
}

#[test]
fn buffered_writes_round_trip() {
    let mut a = soft_anchors();
    // Consistent steady-state anchors: QD1 alone (1 / 30 µs = 33K/s) stays below the
    // sustained rate, or the buffer would fill at QD1 too.
    a.write_lat_qd1_ns = 30_000.0;
    a.write_iops = 60_000.0;
    let m = model::derive(&a);
    assert!(m.write_buffer.is_some(), "{m:?}");
    let p = m.to_profile("buf", "buffered");
    p.validate().unwrap();
    let w = simulate(
        &p,
        PointSpec {
            read_pct: 0,
            bs: 4096,
            qd: 1,
        },
    );
    assert!(within(w.lat_mean_ns, 30_000.0, 0.05), "{}", w.lat_mean_ns);
    // Sustained (once the buffer is full, as calibrate measures after its warm-up) at
    // the measured rate.
    let w = simulate_for(
        &p,
        PointSpec {
            read_pct: 0,
            bs: 4096,
            qd: 32,
        },
        2_000_000_000,
        500_000_000,
    );
    assert!(within(w.iops, 60_000.0, 0.15), "{}", w.iops);
}

#[test]
fn quick_calibration_writes_a_profile_the_simulator_loads() {
    let dir = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("dev.toml");
    let json = work.path().join("dev.json");
    let o = sluice(&[
        "calibrate",
        dir.path().to_str().unwrap(),
        "--quick",
        "--size",
        "32m",
        "--out",
        out.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    if o.status.code() == Some(2) && stderr(&o).contains("cannot create an io_uring") {
        eprintln!("io_uring unavailable, test skipped: {}", stderr(&o));
        return;
    }
    assert!(o.status.success(), "stderr: {}", stderr(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    for needle in [
        "Measured points",
        "knee QD",
        "cost model",
        "Validation",
        "randrw 70/30 16k qd4",
    ] {
        assert!(stdout.contains(needle), "stdout lacks {needle:?}: {stdout}");
    }
    // The temporary file is gone.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(
        text.contains("MACHINE-SPECIFIC") && text.contains("When:"),
        "{text}"
    );
    let p = DeviceProfile::load(&out).expect("the profile validates");
    assert_eq!(p.name, "dev");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(v["points"].as_array().unwrap().len() >= 10);
    // The five validation jobs (sluice_calibrate::validate::JOBS).
    let names: Vec<&str> = v["validation"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["job"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "randread 4k qd1",
            "randread 4k qd32",
            "randwrite 4k qd32",
            "randrw 70/30 16k qd4",
            "read 128k qd8"
        ]
    );
    // `--quick` runs one device round of each job, after the grid's last point.
    let grid = v["points"].as_array().unwrap().len() as u64;
    assert_eq!(v["validation_at"], serde_json::json!([grid]));
    assert!(
        stdout.contains(&format!(
            "the device's rounds ran after the last of the grid's {grid}"
        )),
        "{stdout}"
    );
    // `sluice sim --device` accepts it.
    let job = work.path().join("j.fio");
    std::fs::write(
        &job,
        "[r]\nrw=randread\nbs=4k\niodepth=4\nsize=64m\nruntime=20ms\ntime_based\n",
    )
    .unwrap();
    let s = sluice(&[
        "sim",
        job.to_str().unwrap(),
        "--device",
        out.to_str().unwrap(),
        "-q",
    ]);
    assert!(s.status.success(), "sim: {}", stderr(&s));
    // `--refit`: the saved points fitted again by this build, nothing measured — the
    // same profile, and the same validation (its device side from the file).
    let again = work.path().join("again.toml");
    let r = sluice(&[
        "calibrate",
        "--refit",
        json.to_str().unwrap(),
        "--out",
        again.to_str().unwrap(),
        "--name",
        "dev",
    ]);
    assert!(r.status.success(), "refit: {}", stderr(&r));
    assert!(stderr(&r).contains("nothing is measured"), "{}", stderr(&r));
    let body = |t: &str| -> String {
        t.lines()
            .filter(|l| !l.starts_with('#'))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let text2 = std::fs::read_to_string(&again).unwrap();
    assert_eq!(body(&text2), body(&text), "the refit profile differs");
    assert!(text2.contains("refitted"), "{text2}");
    let table = |o: &[u8]| -> String {
        let s = String::from_utf8_lossy(o).into_owned();
        let at = s.find("Validation: simulator").expect("a validation table");
        s[at..].lines().take(8).collect::<Vec<_>>().join("\n")
    };
    assert_eq!(table(&r.stdout), table(&o.stdout));
}

#[test]
fn bad_input_exits_2_and_touches_nothing() {
    let dir = tempfile::tempdir().unwrap();
    // A missing directory.
    let missing = dir.path().join("nope").join("deeper");
    let o = sluice(&["calibrate", missing.to_str().unwrap(), "--quick"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(!stderr(&o).contains("panicked"));
    // A missing path in an existing directory: refused, not created and measured.
    let missing = dir.path().join("typo");
    let o = sluice(&["calibrate", missing.to_str().unwrap(), "--quick"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("does not exist"), "{}", stderr(&o));
    assert!(!missing.exists(), "calibrate created {}", missing.display());
    // An existing file is not written without --allow-write-existing.
    let f = dir.path().join("data.bin");
    let content: Vec<u8> = (0..(32u32 << 20)).map(|i| (i % 251) as u8).collect();
    std::fs::write(&f, &content).unwrap();
    let o = sluice(&["calibrate", f.to_str().unwrap(), "--quick"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("allow-write-existing"),
        "{}",
        stderr(&o)
    );
    assert!(
        std::fs::read(&f).unwrap() == content,
        "the file was modified"
    );
    // A file too small to measure, and a bad size.
    let small = dir.path().join("small.bin");
    std::fs::write(&small, vec![0u8; 1 << 20]).unwrap();
    let o = sluice(&[
        "calibrate",
        small.to_str().unwrap(),
        "--quick",
        "--allow-write-existing",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("16 MiB"), "{}", stderr(&o));
    let o = sluice(&["calibrate", dir.path().to_str().unwrap(), "--size", "1m"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--size"), "{}", stderr(&o));
    // --out in a missing directory fails before measuring.
    let o = sluice(&[
        "calibrate",
        dir.path().to_str().unwrap(),
        "--quick",
        "--out",
        "/nonexistent-dir/x.toml",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    // --refit: a missing file, a file that is not a calibration, options it ignores.
    let o = sluice(&["calibrate", "--refit", "/nonexistent-dir/cal.json"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("cannot read it"), "{}", stderr(&o));
    let o = sluice(&["calibrate", "--refit", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("not JSON"), "{}", stderr(&o));
    let o = sluice(&["calibrate", "--refit", "x.json", "--quick"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--quick"), "{}", stderr(&o));
    let o = sluice(&[
        "calibrate",
        dir.path().to_str().unwrap(),
        "--refit",
        "x.json",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
}
