use sluice_core::IoClass;

use super::control::{pos_ratio, Thresholds};
use super::*;
use crate::CacheConfig;

fn linux(pages: usize) -> CacheConfig {
    CacheConfig {
        pages,
        class_limits: false,
        ..CacheConfig::default()
    }
}

#[test]
fn the_pause_is_an_eighth_of_the_drain_time_plus_a_jiffy_at_most_200_ms() {
    let r = WritebackRate::default();
    // 25 600 pages/s: 2 048 dirty pages drain in 80 ms; an eighth is 10 ms.
    assert_eq!(r.max_pause_ns(2048), 10 * MS + JIFFY_NS);
    assert_eq!(r.max_pause_ns(0), JIFFY_NS);
    assert_eq!(r.max_pause_ns(10_000_000), MAX_PAUSE_NS);
}

#[test]
fn the_estimate_moves_toward_the_measured_rate_and_ignores_idle_gaps() {
    let mut r = WritebackRate::default();
    // 1 000 pages/s for 60 s, one page per ms.
    for i in 1..=60_000u64 {
        r.written(1, i * MS);
    }
    let bw = r.pages_per_sec();
    assert!((bw - 1000.0).abs() < 10.0, "estimate {bw} pages/s");
    assert!(
        r.avg_pages_per_sec() < 1100.0,
        "avg {}",
        r.avg_pages_per_sec()
    );
    // Ten idle seconds, then one page: no update from the gap.
    r.written(1, 70_000 * MS);
    assert_eq!(r.pages_per_sec(), bw);
    // A slower device makes longer pauses.
    assert!(r.max_pause_ns(800) > WritebackRate::default().max_pause_ns(800));
}

#[test]
fn pos_ratio_is_one_at_the_setpoint_zero_at_the_limit_and_above_one_below() {
    let t = Thresholds::new(10_000, 0.5);
    assert_eq!((t.background, t.freerun, t.setpoint), (5000, 7500, 8750));
    let bw = INIT_BW_PAGES;
    let at = pos_ratio(&t, t.setpoint, bw);
    assert!((at - 1.0).abs() < 1e-3, "{at}");
    assert_eq!(pos_ratio(&t, t.limit, bw), 0.0);
    assert_eq!(pos_ratio(&t, t.limit + 5, bw), 0.0);
    let free = pos_ratio(&t, t.freerun, bw);
    assert!((free - 2.0).abs() < 0.05, "{free}");
    // Falls all the way: above 1 below the setpoint, below 1 above it.
    let mut last = f64::MAX;
    for d in (t.freerun..t.limit).step_by(50) {
        let p = pos_ratio(&t, d, bw);
        assert!(p < last, "not falling at {d}");
        assert_eq!(p > 1.0, d < t.setpoint, "{d}: {p}");
        last = p;
    }
}

#[test]
fn below_freerun_no_pause_at_the_limit_the_max_pause_and_pauses_stay_in_bounds() {
    let cfg = linux(65536);
    let t = Thresholds::of(&cfg, IoClass::Normal);
    let mut th = Throttle::default();
    let mut w = Dirtier::default();
    th.dirtied(&mut w, 1000);
    assert_eq!(
        th.balance(&mut w, &cfg, IoClass::Normal, t.freerun as usize, 0),
        Verdict::Go
    );
    assert_eq!(w.nr_dirtied, 0);
    // 2^⌊log2(13107 − 9830) / 2⌋ = 2^5.
    assert_eq!(w.nr_dirtied_pause, 32);
    let max = th.rate().max_pause_ns(t.limit as usize);
    assert_eq!(
        th.balance(&mut w, &cfg, IoClass::Normal, t.limit as usize, MS),
        Verdict::Pause {
            ns: max,
            at_limit: true
        }
    );
    // Far more pages than the rate allows: cut at the max pause.
    let mut w = Dirtier {
        paused_when: Some(10 * MS),
        ..Dirtier::default()
    };
    th.dirtied(&mut w, 1_000_000);
    let d = t.setpoint as usize + 100;
    match th.balance(&mut w, &cfg, IoClass::Normal, d, 10 * MS) {
        Verdict::Pause { ns, at_limit } => {
            assert!(!at_limit);
            assert_eq!(ns, th.rate().max_pause_ns(d));
        }
        v => panic!("{v:?}"),
    }
    // Two pages right after that pause ended: under the min pause, no sleep.
    let after = w.paused_when.unwrap();
    th.dirtied(&mut w, 2);
    assert_eq!(
        th.balance(&mut w, &cfg, IoClass::Normal, d, after),
        Verdict::Go
    );
}

#[test]
fn a_critical_writer_is_not_throttled_by_background_dirty_data() {
    let cfg = CacheConfig {
        pages: 65536,
        ..CacheConfig::default()
    };
    let normal = cfg.dirty_limit(IoClass::Normal);
    let mut th = Throttle::default();
    let (mut bg, mut crit) = (Dirtier::default(), Dirtier::default());
    th.dirtied(&mut bg, 100);
    th.dirtied(&mut crit, 100);
    assert!(matches!(
        th.balance(&mut bg, &cfg, IoClass::Normal, normal, 0),
        Verdict::Pause { at_limit: true, .. }
    ));
    assert_eq!(
        th.balance(&mut crit, &cfg, IoClass::Critical, normal, 0),
        Verdict::Go
    );
}

#[test]
fn the_rate_control_is_the_devices_shared_by_the_classes() {
    // Linux 3.13 keeps one dirty_ratelimit per device whatever the thresholds of the
    // task that updates it: a non-critical writer that dirties far faster than the
    // device cleans, near its limit, brings the rate down, and a critical writer paced
    // past its own freerun is then paced at the lowered rate.
    let cfg = CacheConfig {
        pages: 65536,
        ..CacheConfig::default()
    };
    let mut th = Throttle::default();
    let fresh = th.clone();
    let normal = Thresholds::of(&cfg, IoClass::Normal);
    let mut bg = Dirtier::default();
    for i in 0..=12u64 {
        // 100 000 pages in each 200 ms (500 000 pages/s against 100 MB/s).
        th.dirtied(&mut bg, 100_000);
        let _ = th.balance(
            &mut bg,
            &cfg,
            IoClass::Normal,
            normal.limit as usize - 5,
            i * 200 * MS,
        );
    }
    let rl = th.ratelimit().dirty_ratelimit;
    assert!(
        (rl as f64) < 0.5 * INIT_BW_PAGES,
        "dirty_ratelimit {rl} pages/s"
    );
    // The critical writer at its setpoint, 512 pages dirtied since its last pause.
    let crit = Thresholds::of(&cfg, IoClass::Critical);
    let now = 13 * 200 * MS;
    let pause = |th: &mut Throttle| {
        let mut w = Dirtier {
            nr_dirtied: 512,
            nr_dirtied_pause: 32,
            paused_when: Some(now),
        };
        match th.balance(&mut w, &cfg, IoClass::Critical, crit.setpoint as usize, now) {
            Verdict::Pause { ns, at_limit } => {
                assert!(!at_limit);
                ns
            }
            v => panic!("{v:?}"),
        }
    };
    let (shared, own) = (pause(&mut th), pause(&mut fresh.clone()));
    assert!(
        shared > 2 * own,
        "critical pause {shared} ns after the non-critical updates, {own} ns fresh"
    );
}

/// N equal writers at CPU speed against a device cleaning `bw` pages a second: pages
/// dirtied per writer over the second half of `secs`, and the final rate.
fn run_writers(n: usize, bw: f64, secs: u64) -> (Vec<u64>, Throttle, u64) {
    let cfg = linux(65536);
    let limit = cfg.dirty_limit(IoClass::Normal) as u64;
    let mut th = Throttle::default();
    let mut ws = vec![Dirtier::default(); n];
    let mut next = vec![0; n];
    let mut counted = vec![0u64; n];
    let (mut dirty, mut drained, mut last) = (0u64, 0.0f64, 0);
    let end = secs * 1000 * MS;
    let cpu = 2_000; // 2 µs a page: 500 000 pages/s each
    loop {
        let (i, &now) = next.iter().enumerate().min_by_key(|p| *p.1).unwrap();
        if now >= end {
            break;
        }
        // The device cleans at `bw`, reported each millisecond or more.
        if now - last >= MS {
            drained += bw * (now - last) as f64 / 1e9;
            let pages = (drained as u64).min(dirty);
            drained -= drained.floor();
            dirty -= pages;
            th.written(pages, now);
            last = now;
        }
        let w = &mut ws[i];
        if dirty >= limit || w.must_balance() {
            let v = th.balance(w, &cfg, IoClass::Normal, dirty as usize, now);
            if let Verdict::Pause { ns, .. } = v {
                next[i] = now + ns;
                continue;
            }
        }
        th.dirtied(w, 1);
        dirty += 1;
        if now >= end / 2 {
            counted[i] += 1;
        }
        next[i] = now + cpu;
    }
    (counted, th, dirty)
}

#[test]
fn the_rate_converges_to_write_bw_over_n_and_equal_writers_get_equal_shares() {
    let bw = INIT_BW_PAGES / 4.0; // 6 400 pages/s
    for n in [1usize, 4] {
        let (counted, th, dirty) = run_writers(n, bw, 40);
        let cfg = linux(65536);
        let rl = th.ratelimit().dirty_ratelimit as f64;
        let want = bw / n as f64;
        assert!(
            (rl - want).abs() < 0.15 * want,
            "{n} writers: dirty_ratelimit {rl}, want {want}"
        );
        let (lo, hi) = (counted.iter().min().unwrap(), counted.iter().max().unwrap());
        assert!(
            (*hi as f64) < 1.05 * *lo as f64,
            "{n} writers: shares {counted:?}"
        );
        // Together they dirty what the device cleans, and dirty stays in the control
        // band (above freerun, below the limit).
        let total: u64 = counted.iter().sum();
        assert!(
            (total as f64 - bw * 20.0).abs() < 0.1 * bw * 20.0,
            "{total}"
        );
        let t = Thresholds::of(&cfg, IoClass::Normal);
        assert!(dirty > t.freerun && dirty < t.limit, "dirty {dirty}, {t:?}");
    }
}
