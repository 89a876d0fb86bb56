use super::*;

fn win(iops: f64, lat: f64, p99: f64) -> Window {
    Window {
        iops,
        bw_bytes: iops * 4096.0,
        lat_mean_ns: lat,
        lat_p50_ns: lat,
        lat_p99_ns: p99,
        read_lat_mean_ns: lat,
        write_lat_mean_ns: 0.0,
        reads: iops as u64,
        writes: 0,
    }
}

#[test]
fn aggregate_uses_the_agreeing_tail() {
    let spec = PointSpec {
        read_pct: 100,
        bs: 4096,
        qd: 8,
    };
    // A first burst, then three windows within 5 %.
    let w = [
        win(90_000.0, 50.0, 70.0),
        win(40_000.0, 200.0, 300.0),
        win(41_000.0, 195.0, 900.0),
        win(40_500.0, 198.0, 310.0),
    ];
    let p = aggregate(spec, Role::QdSweep, &w, 3, 0.05, 1);
    assert!(p.steady);
    assert!((p.iops - 40_500.0).abs() < 1e-9, "{}", p.iops);
    assert_eq!(p.lat_p99_ns, 310.0, "median of the tail's p99s");
    // Weighted by I/O count.
    let want = (200.0 * 40_000.0 + 195.0 * 41_000.0 + 198.0 * 40_500.0) / 121_500.0;
    assert!((p.lat_mean_ns - want).abs() < 1e-9);
    assert_eq!(p.window_iops.len(), 4);
    // Not steady: the tail disagrees.
    let q = aggregate(spec, Role::QdSweep, &w[..3], 3, 0.05, 1);
    assert!(!q.steady);
    assert!(q.spread > 0.5);
}

fn point(read_pct: u8, bs: u32, qd: u32, role: Role, iops: f64, lat: f64) -> Point {
    aggregate(
        PointSpec { read_pct, bs, qd },
        role,
        &[Window {
            bw_bytes: iops * bs as f64,
            ..win(iops, lat, lat)
        }],
        1,
        0.05,
        0,
    )
}

#[test]
fn summary_of_a_synthetic_grid() {
    // Reads: 100 µs + 1 ns/B at QD1, capped at 50K IOPS and 1 GB/s.
    let mut pts = Vec::new();
    for (read_pct, l0, cap) in [(100u8, 100_000.0, 50_000.0), (0, 60_000.0, 40_000.0)] {
        let lat = |bs: u32| l0 - 4096.0 + bs as f64;
        for qd in [1u32, 2, 4, 8, 16, 32, 64] {
            let iops = (qd as f64 * 1e9 / lat(4096)).min(cap);
            pts.push(point(
                read_pct,
                4096,
                qd,
                Role::QdSweep,
                iops,
                qd as f64 * 1e9 / iops,
            ));
        }
        let knee = if read_pct == 100 { 8 } else { 4 };
        for bs in [8192u32, 16384, 32768, 65536, 131072] {
            let iops = (cap).min(1e9 / bs as f64);
            pts.push(point(read_pct, bs, knee, Role::SizeSweep, iops, 0.0));
            pts.push(point(
                read_pct,
                bs,
                1,
                Role::Qd1Size,
                1e9 / lat(bs),
                lat(bs),
            ));
        }
        // Small sizes: 2 KiB no faster than 4 KiB (half the bytes, same IOPS × 0.5).
        pts.push(point(read_pct, 2048, knee, Role::SmallSize, cap * 0.5, 0.0));
    }
    let s = Summary::of(&pts).unwrap();
    // 50K cap, 100 µs: QD4 = 40K (80 %), QD8 = 50K.
    assert_eq!(s.read.knee_qd, 8);
    assert_eq!(s.read.max_iops, 50_000.0);
    // 40K cap, 60 µs: QD2 = 33K (83 %), QD4 = 40K.
    assert_eq!(s.write.knee_qd, 4);
    // Bandwidth: 4K 205 MB/s, 8K 410, 16K 819, 32K+ 1 GB/s: knee 32K.
    assert_eq!(s.read.knee_size, Some(32768));
    assert!((s.read.max_bw_bytes - 1e9).abs() < 1.0);
    assert_eq!(s.read.min_efficient_size, Some(4096));
    let c = s.read.cost.unwrap();
    assert!(
        (c.slope - 1.0).abs() < 1e-9 && (c.offset - 95_904.0).abs() < 1e-6,
        "{c:?}"
    );
    assert_eq!(s.unsteady, 0);
    let a = s.anchors();
    assert_eq!(a.knee_qd, 8);
    assert!((a.write_lat_qd1_ns - 60_000.0).abs() < 1e-6);
}

#[test]
fn jobs_and_plans() {
    let spec = PointSpec {
        read_pct: 70,
        bs: 16384,
        qd: 4,
    };
    let j = spec
        .job("/x/y z.dat", 1 << 30, 250_000_000, 500_000_000, 7)
        .unwrap();
    assert_eq!(j.filename.as_deref(), Some("/x/y z.dat"));
    assert_eq!(j.iodepth, 4);
    assert_eq!(j.rwmixread, 70);
    assert_eq!(j.runtime_ns, Some(250_000_000));
    assert_eq!(j.ramp_ns, 500_000_000);
    assert!(j.time_based);
    assert_eq!(spec.label(), "randrw 70/30 16k qd4");
    let full = Plan::full();
    full.check().unwrap();
    // 14 QD points, 3 small + 5 sizes at the knee, 5 at QD1 and 2 at the middle depth
    // per direction, 4 mixed, the 14 QD points again.
    assert_eq!(full.point_count(512), 14 + 6 + 10 + 10 + 4 + 4 + 14);
    assert_eq!(full.point_count(4096), 14 + 10 + 10 + 4 + 4 + 14);
    Plan::quick().check().unwrap();
    let mut bad = Plan::quick();
    bad.size_bytes = 1 << 20;
    assert!(matches!(bad.check(), Err(CalibrateError::BadInput(_))));
}

#[test]
fn pooled_p99_counts_a_window_with_slow_ios() {
    use crate::analysis::pooled_quantile;
    // Window a: 1000 I/Os, all at 100 µs; b: 1000 I/Os, 4 % at 5 ms; c like a.
    let a: Vec<(u64, f64)> = vec![(100_000, 1.0), (100_000, 0.0)];
    let b: Vec<(u64, f64)> = vec![(100_000, 1.0), (100_000, 0.04), (5_000_000, 0.0)];
    // Each window's own p99: 100 µs, 5 ms, 100 µs → their median is 100 µs; pooled,
    // 1.3 % of the 3000 I/Os are slow: p99 = 5 ms.
    let w = [
        (1000, a.as_slice()),
        (1000, b.as_slice()),
        (1000, a.as_slice()),
    ];
    assert_eq!(pooled_quantile(&w, 0.99), Some(5_000_000.0));
    // With 1 % slow in one window of three (0.33 % of all), p99 is the body.
    let b1: Vec<(u64, f64)> = vec![(100_000, 1.0), (100_000, 0.01), (5_000_000, 0.0)];
    let w = [
        (1000, a.as_slice()),
        (1000, b1.as_slice()),
        (1000, a.as_slice()),
    ];
    assert_eq!(pooled_quantile(&w, 0.99), Some(100_000.0));
    assert_eq!(pooled_quantile(&[], 0.99), None);
    assert_eq!(pooled_quantile(&[(0, &[][..])], 0.99), None);
}

#[test]
fn unsteady_sizes_stay_out_of_the_front_ends_sweep_when_enough_settled() {
    let mut pts = Vec::new();
    for read_pct in [100u8, 0] {
        for qd in [1u32, 2, 4] {
            pts.push(point(
                read_pct,
                4096,
                qd,
                Role::QdSweep,
                10_000.0 * qd as f64,
                100_000.0,
            ));
        }
        for bs in [8192u32, 16384, 32768, 65536] {
            pts.push(point(
                read_pct,
                bs,
                4,
                Role::SizeSweep,
                1e9 / bs as f64,
                0.0,
            ));
        }
    }
    // The reads' 32 KiB point did not settle: left out, and named.
    let i = pts
        .iter()
        .position(|p| p.spec.read_pct == 100 && p.spec.bs == 32768)
        .unwrap();
    pts[i].steady = false;
    let s = Summary::of(&pts).unwrap();
    let sizes = |c: &[(u32, f64)]| c.iter().map(|p| p.0).collect::<Vec<_>>();
    assert_eq!(sizes(&s.read.size_curve), [4096, 8192, 16384, 65536]);
    assert_eq!(s.read.size_left_out, [32768]);
    assert_eq!(
        sizes(&s.write.size_curve),
        [4096, 8192, 16384, 32768, 65536]
    );
    assert!(s.write.size_left_out.is_empty());
    let text = crate::model::derive(&s.anchors()).derivation.join("\n");
    assert!(
        text.contains("4 sizes; left out, not steady: 32 KiB)"),
        "{text}"
    );
    // With fewer than three steady sizes every size stays (an unsteady figure beats
    // no fit).
    for p in pts
        .iter_mut()
        .filter(|p| p.spec.read_pct == 100 && p.spec.bs > 8192)
    {
        p.steady = false;
    }
    let s = Summary::of(&pts).unwrap();
    assert_eq!(s.read.size_curve.len(), 5);
    assert!(s.read.size_left_out.is_empty());
}

/// The fits take each 4 KiB sweep point with its repeat from the grid's end: the mean
/// of their IOPS, the latency means by IOPS (Little's `QD / IOPS` of the mean), the
/// windows of both; an unsteady pass is left out when the other settled; the repeats
/// themselves and every other point are as measured.
#[test]
fn repeated_sweep_points_are_fitted_as_both_passes_together() {
    use crate::measure::{merge_repeats, repeat_apart_pct};
    let qd = 32;
    // Closed loop: mean latency = QD / IOPS.
    let at = |iops: f64, role| {
        let mut p = point(0, 4096, qd, role, iops, qd as f64 / iops * 1e9);
        p.window_iops = vec![iops; 3];
        p.lat_p99_pooled_ns = 2.0 * p.lat_mean_ns;
        p
    };
    let first = at(90e3, Role::QdSweep);
    let again = at(120e3, Role::QdRepeat);
    let size = point(100, 65536, 8, Role::SizeSweep, 20e3, 400e3);
    let points = vec![first.clone(), size.clone(), again.clone()];
    let m = merge_repeats(&points);
    assert_eq!(m.len(), 2, "the repeat is folded into its point");
    assert_eq!(m[1], size, "other roles as measured");
    let p = &m[0];
    assert_eq!((p.role, p.spec), (Role::QdSweep, first.spec));
    assert!((p.iops - 105e3).abs() < 1e-6, "{}", p.iops);
    let little = qd as f64 / 105e3 * 1e9;
    assert!(
        (p.lat_mean_ns - little).abs() < 1e-3,
        "{} against {little}",
        p.lat_mean_ns
    );
    let pooled = (first.lat_p99_pooled_ns + again.lat_p99_pooled_ns) / 2.0;
    assert!((p.lat_p99_pooled_ns - pooled).abs() < 1e-6);
    assert_eq!(p.window_iops.len(), 6);
    assert!(p.steady);
    assert!((repeat_apart_pct(&points, 0).unwrap() - 100.0 / 3.0).abs() < 1e-9);
    assert_eq!(repeat_apart_pct(&points, 100), None, "no read repeats");
    // An unsteady pass is left out when the other settled, either way round.
    let mut shaky = again.clone();
    shaky.steady = false;
    let m = merge_repeats(&[first.clone(), shaky.clone()]);
    assert_eq!(m, vec![first.clone()]);
    let mut shaky_first = first.clone();
    shaky_first.steady = false;
    let m = merge_repeats(&[shaky_first.clone(), again.clone()]);
    assert_eq!((m[0].role, m[0].iops), (Role::QdSweep, again.iops));
    // Neither settled: both together, unsteady.
    let m = merge_repeats(&[shaky_first, shaky]);
    assert!(!m[0].steady && (m[0].iops - 105e3).abs() < 1e-6);
    // Without repeats the points are as measured.
    assert_eq!(
        merge_repeats(&[first.clone(), size.clone()]),
        vec![first, size]
    );
}
