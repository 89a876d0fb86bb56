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

/// A run of jobs `(name, threads, group, group_reporting)`: thread `t` of each job
/// completes `10 · (t + 1)` reads of 4 KiB at 1 ms spacing; a thread is done at its
/// last read, the job at its last thread's.
fn threaded(jobs: &[(&str, u32, usize, bool)]) -> RunReport {
    let mut s = setup(&[("f", 1)], &[]);
    for &(name, threads, group, gr) in jobs {
        s.jobs.push(JobInfo {
            name: name.into(),
            flow: 0,
            class: IoClass::Normal,
            threads,
            options: Vec::new(),
            group,
            group_reporting: gr,
            continue_on: Default::default(),
            latency: crate::LatencyTarget::default(),
        });
    }
    let mut c = Collector::new(s);
    for (j, &(_, threads, _, _)) in jobs.iter().enumerate() {
        let mut job_end = 0;
        for t in 0..threads {
            let n = 10 * (t as u64 + 1);
            for i in 1..=n {
                let mut s = sample(j, Op::Read, 4096, i * MS, (0, 20 * US, 0));
                s.thread = t;
                c.record(&s);
            }
            c.thread_done(j, t, n * MS);
            job_end = n * MS;
        }
        c.job_done(j, job_end);
    }
    c.finish(100 * MS, "none")
}

#[test]
fn each_thread_of_a_job_is_an_entry_of_its_own_without_group_reporting() {
    let r = threaded(&[("a", 4, 0, false)]);
    assert_eq!(r.entries.len(), 4, "fio lists each of numjobs=4's threads");
    for (t, e) in r.entries.iter().enumerate() {
        assert_eq!(e.jobname, "a");
        assert_eq!(e.group, 0);
        assert_eq!(e.threads, 1);
        let n = 10 * (t as u64 + 1);
        assert_eq!(e.read.total_ios, n);
        // Its own runtime: its window's start (0) to its last read.
        assert_eq!(e.runtime_ns, n * MS);
        assert!((e.read.iops - 1000.0).abs() < 1e-6, "{}", e.read.iops);
    }
    // The job section's report sums them, up to the job's end.
    assert_eq!(r.jobs.len(), 1);
    assert_eq!(r.jobs[0].read.total_ios, 100);
    assert_eq!(r.jobs[0].runtime_ns, 40 * MS);
    assert_eq!(r.jobs[0].threads, 4);
    // fio's json: one object per entry.
    let v = crate::to_json(std::slice::from_ref(&r));
    assert_eq!(v["jobs"].as_array().unwrap().len(), 4);
}

#[test]
fn group_reporting_sums_a_groups_jobs_into_one_entry() {
    let r = threaded(&[("a", 4, 0, true)]);
    assert_eq!(r.entries.len(), 1);
    let e = &r.entries[0];
    assert_eq!((e.jobname.as_str(), e.threads), ("a", 4));
    assert_eq!(e.read.total_ios, 100);
    // The runtime is the longest thread's, the IOPS all of theirs over it.
    assert_eq!(e.runtime_ns, 40 * MS);
    assert!((e.read.iops - 2500.0).abs() < 1e-6, "{}", e.read.iops);
    // fio's rule: every job of the group with group_reporting joins the entry, under
    // the first one's name; another group, or a job without it, opens an entry.
    let r = threaded(&[
        ("a", 2, 0, true),
        ("b", 1, 0, true),
        ("c", 2, 1, true),
        ("d", 2, 1, false),
    ]);
    let names: Vec<(&str, u32, u64)> = r
        .entries
        .iter()
        .map(|e| (e.jobname.as_str(), e.threads, e.read.total_ios))
        .collect();
    assert_eq!(
        names,
        [("a", 3, 40), ("c", 2, 30), ("d", 1, 10), ("d", 1, 20)]
    );
    assert_eq!(r.jobs.len(), 4, "one report per job section still");
}

#[test]
fn thread_entries_merge_back_into_the_job_exactly() {
    // The job section's report is the same whether its threads were counted apart or
    // together (group_reporting): histograms merge exactly.
    let apart = threaded(&[("a", 3, 0, false)]);
    let together = threaded(&[("a", 3, 0, true)]);
    let json = |r: &RunReport| serde_json::to_value(&r.jobs[0]).unwrap();
    assert_eq!(json(&apart), json(&together));
    assert_eq!(
        serde_json::to_value(&together.entries[0]).unwrap(),
        json(&together)
    );
}
