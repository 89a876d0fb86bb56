//! The collector's bookkeeping: class figures summed from the jobs', the bandwidth bins.

use super::*;
use crate::tests::{sample, setup, MS, US};
use crate::RunReport;

#[test]
fn a_class_counts_its_jobs_samples_and_other_jobs_promoted_ones() {
    // Job 0 (normal) has samples promoted to critical after its first 50; job 1 is
    // critical.
    let mut mixed = Collector::new(setup(
        &[("f", 1)],
        &[("n", 0, IoClass::Normal), ("c", 0, IoClass::Critical)],
    ));
    // The same samples of each class, from one job of that class.
    let mut crit = Collector::new(setup(&[("f", 1)], &[("c", 0, IoClass::Critical)]));
    let mut norm = Collector::new(setup(&[("f", 1)], &[("n", 0, IoClass::Normal)]));
    for i in 0..300u64 {
        let parts = (i % 7 * US, (50 + i * 13 % 400) * US, i % 3);
        let op = if i % 4 == 0 { Op::Write } else { Op::Read };
        let mut s = sample((i % 2) as usize, op, 4096, 2 * MS + i * 10 * US, parts);
        s.admit_ns = s.submit_ns + i % 5 * US;
        if s.job == 1 || (i > 100 && i % 3 == 0) {
            s.class = IoClass::Critical;
            crit.record(&Sample { job: 0, ..s });
        } else {
            norm.record(&Sample { job: 0, ..s });
        }
        mixed.record(&s);
    }
    let mixed = mixed.finish(10 * MS, "p");
    let get = |r: &RunReport, cl| {
        let k = r.classes.iter().find(|k| k.class == cl).unwrap();
        serde_json::to_value(k).unwrap()
    };
    let (c, n) = (crit.finish(10 * MS, "p"), norm.finish(10 * MS, "p"));
    assert_eq!(get(&mixed, IoClass::Critical), get(&c, IoClass::Critical));
    assert_eq!(get(&mixed, IoClass::Normal), get(&n, IoClass::Normal));
    assert_eq!(c.classes[0].ios + n.classes[0].ios, 300);
    assert!(c.classes[0].ios > 150 && n.classes[0].ios > 100);
}

#[test]
fn bandwidth_bins_are_the_direct_binning_at_the_final_width() {
    // Samples out of order, back and forth across bins, and far enough to coarsen.
    let mut c = Collector::new(setup(&[("f", 1)], &[("a", 0, IoClass::Normal)]));
    let times: Vec<u64> = (0..3000u64)
        .map(|i| (i * 7919 % 3001) * 150 * MS + i % 13 * MS)
        .chain([0, 99 * MS, 100 * MS, 100 * MS - 1])
        .collect();
    let end = times.iter().max().unwrap() + 1;
    for (i, &t) in times.iter().enumerate() {
        c.record(&sample(0, Op::Read, 512 * (1 + i as u32 % 5), t, (0, 0, 0)));
    }
    let r = c.finish(end, "p");
    let width = r.bw_series.interval_ns;
    assert!(width > 100 * MS, "coarsened");
    let mut bytes = vec![0u64; end.div_ceil(width) as usize];
    for (i, &t) in times.iter().enumerate() {
        bytes[(t / width) as usize] += 512 * (1 + i as u64 % 5);
    }
    let bw = &r.bw_series.flows[0].bw_bytes;
    assert_eq!(bw.len(), bytes.len());
    for (b, (&got, &want)) in bw.iter().zip(&bytes).enumerate().take(bytes.len() - 1) {
        assert_eq!(
            got,
            (want as f64 * 1e9 / width as f64).round() as u64,
            "bin {b}"
        );
    }
}
