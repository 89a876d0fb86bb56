use super::*;

/// A device's anchors without size sweeps (the front end's tests add theirs).
pub(super) fn anchors() -> Anchors {
    Anchors {
        read_lat_qd1_ns: 100_000.0,
        write_lat_qd1_ns: 80_000.0,
        read_iops: 60_000.0,
        write_iops: 45_000.0,
        knee_qd: 8,
        read_bw_bytes: 1.0e9,
        write_bw_bytes: 0.9e9,
        read_fit: Some(LinearFit {
            offset: 96_000.0,
            slope: 1.5,
            r2: 0.99,
            n: 6,
        }),
        write_fit: Some(LinearFit {
            offset: 76_000.0,
            slope: 1.6,
            r2: 0.98,
            n: 6,
        }),
        read_curve: Vec::new(),
        write_curve: Vec::new(),
        write_buffer_bytes: None,
        read_size_curve: Vec::new(),
        write_size_curve: Vec::new(),
        read_size_left_out: Vec::new(),
        write_size_left_out: Vec::new(),
    }
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * b.abs()
}

#[test]
fn the_model_reproduces_its_anchors() {
    let a = anchors();
    let m = derive(&a);
    assert!(m.write_buffer.is_none(), "80 µs is not < 50 % of 100 µs");
    assert!(
        close(m.qd1_latency_ns(false, 4096), 100_000.0, 0.01),
        "{m:?}"
    );
    assert!(close(m.qd1_latency_ns(true, 4096), 80_000.0, 0.01), "{m:?}");
    assert!(close(m.saturated_iops(false, 4096), 60_000.0, 0.01));
    assert!(close(m.saturated_iops(true, 4096), 45_000.0, 0.01));
    assert_eq!(m.bus_bandwidth_bytes, 1_000_000_000);
    // The QD1 slope at large sizes is the read cost slope.
    let slope = (m.qd1_latency_ns(false, 131072) - m.qd1_latency_ns(false, 65536)) / 65536.0;
    assert!(close(slope, 1.5, 0.01), "{slope}");
    // Units: 3 × the busiest load; at least one unit per command in flight at the
    // knee would be busy otherwise.
    let busy = 60_000.0 * (m.read_ns as f64 + 4096.0 * 1e9 / m.unit_bandwidth_bytes as f64) / 1e9;
    assert!(m.units as f64 >= 3.0 * busy - 1.0, "{} vs {busy}", m.units);
    assert_eq!(m.fetch_ns, 8_000);
    assert!(m.caveats.is_empty(), "{:?}", m.caveats);
}

#[test]
fn fast_writes_get_a_buffer() {
    let mut a = anchors();
    a.write_lat_qd1_ns = 20_000.0;
    a.write_iops = 30_000.0;
    let m = derive(&a);
    let w = m.write_buffer.as_ref().expect("buffered");
    assert!(close(m.qd1_latency_ns(true, 4096), 20_000.0, 0.01), "{m:?}");
    assert!(w.ack_ns > 0);
    // Sustained = units programs of 4 KiB at write_ns + transfer each.
    let per = m.write_ns as f64 + 4096.0 * 1e9 / m.unit_bandwidth_bytes as f64;
    let sustained = m.units as f64 * 1e9 / per;
    assert!(close(sustained, 30_000.0, 0.01), "{sustained} {m:?}");
    assert!(m.saturated_iops(true, 4096) > 30_000.0 * 1.9);
}

#[test]
fn degenerate_measurements_are_clamped_with_a_caveat() {
    // QD1 latency × IOPS < 1 cannot be (IOPS at QD1 ≥ 1 / latency); the clamps keep
    // every stage positive and say what was changed.
    let mut a = anchors();
    a.read_iops = 5_000.0; // 200 µs per command, more than the 100 µs latency
    a.read_fit = None;
    a.write_fit = None;
    let m = derive(&a);
    assert!(m.read_ns >= 100 && m.read_cmd_ns < 100_000, "{m:?}");
    assert!(!m.caveats.is_empty());
    let p = m.to_profile("x", "y \"quoted\"");
    let toml = profile_text(&p, &m, &["line one".into(), String::new()]).unwrap();
    assert!(toml.starts_with("# line one\n#\n"), "{toml}");
    assert!(toml.contains("[nominal]") && toml.contains("[media]"));
    // serde quotes the description; the text loads back as the same profile.
    let back = DeviceProfile::from_toml_str(&toml, "x").unwrap();
    assert_eq!(back, p);
    assert_eq!(back.description, "y \"quoted\"");
}

#[test]
fn the_spread_fit_inverts_the_log_normal_body() {
    for sigma in [0.05, 0.2, 0.6, 1.2] {
        let media = 50_000.0;
        let spread = media * (-sigma * sigma / 2.0f64).exp() * ((2.326 * sigma).exp() - 1.0);
        let got = fit_sigma(spread, media);
        assert!((got - sigma).abs() < 1e-6, "{got} vs {sigma}");
    }
    assert_eq!(fit_sigma(0.0, 1000.0), 0.0);
    assert_eq!(
        fit_sigma(1e12, 1000.0),
        2.0,
        "clamped to the profile's range"
    );
    // A model with spread writes it into [service], and the profile validates.
    let m = derive(&anchors()).with_spread((100_000.0, 130_000.0), (60_000.0, 60_000.0));
    let p = m.to_profile("x", "y");
    p.validate().unwrap();
    let v = p.service.expect("read spread");
    assert!(v.read.sigma > 0.0);
}

#[test]
fn mva_has_the_right_limits() {
    // One delay-only job: X = 1 / L.
    let x = mva_iops(64, 50_000.0, 10_000.0, 40_000.0, 8);
    assert!(close(x[0], 1e9 / 100_000.0, 1e-9));
    // Increasing, and bounded by the bottleneck: min(1 / cmd, units / unit).
    assert!(x.windows(2).all(|w| w[1] >= w[0] - 1e-9));
    // Front end 100K/s, units 8 / 40 µs = 200K/s: the front end binds.
    assert!(x[63] <= 1e9 / 10_000.0 * 1.0001);
    assert!(x[63] > 0.9 * 100_000.0, "{}", x[63]);
    // A sharp front-end cap: many units, cmd = 1 / 60K.
    let y = mva_iops(64, 0.0, 16_667.0, 83_333.0, 256);
    assert!(close(y[3], 4.0 * 1e9 / 100_000.0, 0.1), "{}", y[3]);
    assert!(close(y[63], 60_000.0, 0.01), "{}", y[63]);
}

#[test]
fn the_fit_recovers_a_soft_knee() {
    // A device with 6 units of 120 µs, 20 µs in flight and an 8 µs front end: its
    // curve bends early (units collide), not at min(QD / L, I).
    let qds = [1u32, 2, 4, 8, 16, 32, 64];
    let truth = mva_iops(64, 2.0 * 10_000.0, 8_000.0, 120_000.0, 6);
    let curve: Vec<(u32, f64)> = qds.iter().map(|&q| (q, truth[q as usize - 1])).collect();
    let mut a = anchors();
    a.read_lat_qd1_ns = 148_000.0;
    a.read_iops = truth[63];
    a.read_curve = curve.clone();
    a.write_lat_qd1_ns = 148_000.0;
    a.write_iops = truth[63];
    a.write_curve = curve.clone();
    let sh = fit_shape(&a, false, 1_000.0, 1_000.0).expect("curves given");
    assert!(sh.rms_pct < 3.0, "{sh:?}");
    assert!((4..=9).contains(&sh.units), "{sh:?}");
    let m = derive(&a);
    assert_eq!(m.units, sh.units);
    // The derived model's own curve follows the measured one.
    let unit = m.read_ns as f64 + 4096.0 * 1e9 / m.unit_bandwidth_bytes as f64;
    let x = mva_iops(
        64,
        (m.fetch_ns + m.complete_ns) as f64,
        m.read_cmd_ns as f64,
        unit,
        m.units,
    );
    for &(q, want) in &curve {
        assert!(
            close(x[q as usize - 1], want, 0.06),
            "qd {q}: {} vs {want}",
            x[q as usize - 1]
        );
    }
    // The sharp-knee model (front end at the best IOPS) is far off at QD4 here.
    let sharp = (4.0f64 * 1e9 / 148_000.0).min(truth[63]);
    assert!(!close(sharp, curve[2].1, 0.1), "{sharp} vs {}", curve[2].1);
}

#[test]
fn reads_and_writes_are_fitted_apart() {
    // Reads on 16 units, writes on 4 (same stage times), a 2 GB/s read bus and a
    // 0.5 GB/s write bus, and a write cost slope twice the read one.
    let qds = [1u32, 2, 4, 8, 16, 32, 64];
    let r = mva_iops(64, 20_000.0, 8_000.0, 120_000.0, 16);
    let w = mva_iops(64, 20_000.0, 8_000.0, 120_000.0, 4);
    let mut a = anchors();
    a.read_lat_qd1_ns = 148_000.0;
    a.read_iops = r[63];
    a.read_curve = qds.iter().map(|&q| (q, r[q as usize - 1])).collect();
    a.write_lat_qd1_ns = 148_000.0;
    a.write_iops = w[63];
    a.write_curve = qds.iter().map(|&q| (q, w[q as usize - 1])).collect();
    a.read_bw_bytes = 2.0e9;
    a.write_bw_bytes = 0.5e9;
    a.write_fit = Some(LinearFit {
        offset: 140_000.0,
        slope: 3.0,
        r2: 0.99,
        n: 6,
    });
    let m = derive(&a);
    assert!((12..=20).contains(&m.units), "{m:?}");
    let wu = m.write_parallel_units.expect("fewer write units");
    assert!((3..=5).contains(&wu), "{m:?}");
    assert_eq!(m.bus_bandwidth_bytes, 2_000_000_000);
    assert_eq!(m.write_bus_bandwidth_bytes, Some(500_000_000));
    // Each direction's QD1 latency and large-request slope are its own.
    assert!(
        close(m.qd1_latency_ns(false, 4096), 148_000.0, 0.01),
        "{m:?}"
    );
    assert!(
        close(m.qd1_latency_ns(true, 4096), 148_000.0, 0.01),
        "{m:?}"
    );
    let slope =
        |write| (m.qd1_latency_ns(write, 131072) - m.qd1_latency_ns(write, 65536)) / 65536.0;
    assert!(close(slope(false), 1.5, 0.01), "{}", slope(false));
    assert!(close(slope(true), 3.0, 0.01), "{}", slope(true));
    assert!(close(
        m.saturated_iops(true, 131072),
        0.5e9 / 131072.0,
        0.01
    ));
    let p = m.to_profile("x", "y");
    p.validate().unwrap();
    assert_eq!(p.media.write_parallel_units, Some(wu));
}

#[test]
fn writes_wider_than_reads_give_reads_their_own_units() {
    let qds = [1u32, 2, 4, 8, 16, 32, 64];
    let r = mva_iops(64, 20_000.0, 8_000.0, 120_000.0, 4);
    let w = mva_iops(64, 20_000.0, 8_000.0, 120_000.0, 16);
    let mut a = anchors();
    a.read_lat_qd1_ns = 148_000.0;
    a.read_iops = r[63];
    a.read_curve = qds.iter().map(|&q| (q, r[q as usize - 1])).collect();
    a.write_lat_qd1_ns = 148_000.0;
    a.write_iops = w[63];
    a.write_curve = qds.iter().map(|&q| (q, w[q as usize - 1])).collect();
    let m = derive(&a);
    assert!((12..=20).contains(&m.units), "{m:?}");
    assert!(
        (3..=5).contains(&m.read_parallel_units.expect("reads narrower")),
        "{m:?}"
    );
    assert_eq!(m.write_parallel_units, None);
    m.to_profile("x", "y").validate().unwrap();
}
