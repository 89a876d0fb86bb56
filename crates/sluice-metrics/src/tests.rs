use super::*;
use output::small_run;

pub(crate) const MS: u64 = 1_000_000;
pub(crate) const US: u64 = 1_000;

pub(crate) fn setup(flows: &[(&str, u32)], jobs: &[(&str, usize, IoClass)]) -> RunSetup {
    RunSetup {
        jobs: jobs
            .iter()
            .map(|&(name, flow, class)| JobInfo {
                name: name.into(),
                flow,
                class,
                threads: 1,
                options: Vec::new(),
                group: 0,
                group_reporting: false,
                continue_on: Default::default(),
                latency: crate::LatencyTarget::default(),
            })
            .collect(),
        flows: flows
            .iter()
            .map(|&(name, weight)| FlowInfo {
                name: name.into(),
                weight,
                latency_only: false,
            })
            .collect(),
        interval_ns: 100 * MS,
        global_options: Vec::new(),
    }
}

/// A sample of job `job` reaped at `reaped` with parts (sched, device, post).
pub(crate) fn sample(
    job: usize,
    op: Op,
    bytes: u32,
    reaped: u64,
    parts: (u64, u64, u64),
) -> Sample {
    let (sched, device, post) = parts;
    let submit = reaped - sched - device - post;
    Sample {
        job,
        thread: 0,
        op,
        class: IoClass::Normal,
        bytes,
        submit_ns: submit,
        admit_ns: submit,
        dispatch_ns: submit + sched,
        device_done_ns: submit + sched + device,
        reaped_ns: reaped,
        ok: true,
    }
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs().max(1e-12)
}

#[test]
fn jain_exact_cases() {
    assert_eq!(jain_index(&[1.0, 1.0, 1.0]), 1.0);
    assert_eq!(jain_index(&[1.0, 0.0]), 0.5);
    assert_eq!(jain_index(&[5.0, 0.0, 0.0, 0.0]), 0.25);
    assert_eq!(jain_index(&[]), 1.0);
    assert_eq!(jain_index(&[0.0, 0.0]), 1.0);
    // (1+2)^2 / (2 * (1+4)) = 9/10
    assert!(close(jain_index(&[1.0, 2.0]), 0.9, 1e-12));
    // Weighted: bandwidths 200 and 100 with weights 2 and 1 are perfectly fair.
    let bw = [200.0, 100.0];
    let w = [2.0, 1.0];
    let x: Vec<f64> = bw.iter().zip(&w).map(|(b, w)| b / w).collect();
    assert_eq!(jain_index(&x), 1.0);
    // Equal bandwidths with weights 2 and 1: x = (50, 100) → 150²/(2·12500) = 0.9.
    assert!(close(jain_index(&[100.0 / 2.0, 100.0]), 0.9, 1e-12));
}

#[test]
fn percentiles_of_uniform_distribution() {
    let mut c = Collector::new(setup(&[("f", 1)], &[("j", 0, IoClass::Normal)]));
    for us in 1..=100_000u64 {
        let lat = us * US;
        c.record(&sample(0, Op::Read, 4096, 200_000 * US + us, (0, lat, 0)));
    }
    let r = c.finish(400_000 * US, "none");
    let clat = &r.jobs[0].read.lat_ns;
    assert_eq!(clat.n, 100_000);
    assert_eq!(clat.min, US);
    assert_eq!(clat.max, 100_000 * US);
    assert!(close(clat.mean, 50_000.5 * US as f64, 1e-12));
    // Population stddev of 1..=n is sqrt((n²-1)/12); sample stddev slightly larger.
    let n = 100_000f64;
    let sd = ((n * n - 1.0) / 12.0 * n / (n - 1.0)).sqrt() * US as f64;
    assert!(close(clat.stddev, sd, 1e-6), "{} vs {sd}", clat.stddev);
    for &(p, expect_us) in &[
        (50.0, 50_000.0),
        (90.0, 90_000.0),
        (99.0, 99_000.0),
        (99.9, 99_900.0),
        (99.99, 99_990.0),
        (1.0, 1_000.0),
    ] {
        let got = clat.percentile.get(p).unwrap() as f64;
        assert!(
            close(got, expect_us * US as f64, 1e-3),
            "p{p}: {got} vs {expect_us} us"
        );
    }
    assert_eq!(clat.percentile.0.len(), FIO_PERCENTILES.len());
    // Device part carries the whole latency here.
    assert_eq!(
        r.jobs[0].read.device_ns.percentile.get(99.0),
        clat.percentile.get(99.0)
    );
    assert_eq!(r.jobs[0].read.sched_ns.max, 0);
}

#[test]
fn no_percentile_passes_the_largest_sample() {
    // Every latency in one histogram bucket just below its top: the bucket's highest
    // equivalent value is above the largest sample, the percentiles are not.
    let mut c = Collector::new(setup(&[("f", 1)], &[("j", 0, IoClass::Normal)]));
    for k in 0..100u64 {
        let lat = 6_990_000 + k;
        c.record(&sample(0, Op::Read, 4096, 10 * MS + k, (0, lat, 0)));
    }
    let r = c.finish(20 * MS, "none");
    let clat = &r.jobs[0].read.lat_ns;
    for (p, v) in &clat.percentile.0 {
        assert!(
            *v <= clat.max && *v >= clat.min,
            "p{p} = {v}, max {}",
            clat.max
        );
    }
}

#[test]
fn breakdown_sums_to_clat() {
    let mut c = Collector::new(setup(&[("f", 1)], &[("j", 0, IoClass::Critical)]));
    let mut x = 12345u64;
    for i in 0..10_000u64 {
        // A cheap LCG for varied parts.
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let parts = (
            (x >> 20) % 50_000,
            (x >> 40) % 200_000 + 1_000,
            (x >> 8) % 7_000,
        );
        c.record(&sample(0, Op::Write, 8192, MS + i * US * 10, parts));
    }
    let r = c.finish(200 * MS, "p");
    let w = &r.jobs[0].write;
    assert_eq!(w.total_ios, 10_000);
    let sum = w.sched_ns.mean + w.device_ns.mean + w.post_ns.mean;
    assert!(
        close(sum, w.lat_ns.mean, 1e-12),
        "{sum} vs {}",
        w.lat_ns.mean
    );
    assert!(w.lat_ns.max <= w.sched_ns.max + w.device_ns.max + w.post_ns.max);
    assert!(w.device_ns.min >= 1_000);
    // The class view agrees with the job view.
    let crit = r
        .classes
        .iter()
        .find(|k| k.class == IoClass::Normal)
        .unwrap();
    assert_eq!(crit.ios, 10_000); // samples carry class Normal
    assert!(close(crit.lat_ns.mean, w.lat_ns.mean, 1e-12));
    let sum = crit.sched_ns.mean + crit.device_ns.mean + crit.post_ns.mean;
    assert!(close(sum, crit.lat_ns.mean, 1e-12));
    // The job's own class is listed even without I/O; idle is not.
    assert!(r
        .classes
        .iter()
        .any(|k| k.class == IoClass::Critical && k.ios == 0));
    assert!(!r.classes.iter().any(|k| k.class == IoClass::Idle));
}

#[test]
fn classes_are_kept_apart() {
    let mut c = Collector::new(setup(
        &[("f", 1)],
        &[("fg", 0, IoClass::Critical), ("bg", 0, IoClass::Idle)],
    ));
    for i in 0..100 {
        let mut s = sample(0, Op::Read, 4096, MS + i, (0, 10 * US, 0));
        s.class = IoClass::Critical;
        c.record(&s);
        let mut s = sample(1, Op::Read, 4096, MS + i, (0, 1000 * US, 0));
        s.class = IoClass::Idle;
        c.record(&s);
    }
    let r = c.finish(10 * MS, "p");
    let get = |cl| r.classes.iter().find(|k| k.class == cl).unwrap();
    assert_eq!(get(IoClass::Critical).lat_ns.max, 10 * US);
    assert_eq!(get(IoClass::Idle).lat_ns.min, 1000 * US);
    assert_eq!(r.classes.len(), 2);
}

#[test]
fn shares_exclude_inactive_flows() {
    let mut c = Collector::new(setup(
        &[("a", 1), ("b", 3), ("idle", 4)],
        &[
            ("ja", 0, IoClass::Normal),
            ("jb", 1, IoClass::Normal),
            ("jidle", 2, IoClass::Normal),
        ],
    ));
    // a gets 1/2 of the bytes, b 1/2; weights 1:3 among active flows.
    for i in 0..100 {
        c.record(&sample(0, Op::Read, 4096, MS + i * US, (0, 50 * US, 0)));
        c.record(&sample(1, Op::Read, 4096, MS + i * US, (0, 50 * US, 0)));
    }
    let r = c.finish(1000 * MS, "p");
    let (a, b, idle) = (&r.flows[0], &r.flows[1], &r.flows[2]);
    assert!(a.active && b.active && !idle.active);
    assert_eq!(a.share, 0.5);
    assert_eq!(b.share, 0.5);
    assert_eq!(idle.share, 0.0);
    assert_eq!(a.weight_share, 0.25);
    assert_eq!(b.weight_share, 0.75);
    assert_eq!(idle.weight_share, 0.0);
    assert_eq!(a.share_error, 1.0);
    assert!(close(b.share_error, -1.0 / 3.0, 1e-12));
    assert_eq!(idle.share_error, 0.0);
    assert_eq!(r.fairness.active_flows, 2);
    // x = (bw, bw/3): (4/3)² / (2 · 10/9) = 0.8
    assert!(close(r.fairness.jain_index, 0.8, 1e-12));
    assert_eq!(r.fairness.max_abs_share_error, 1.0);
    assert_eq!(a.ios, 100);
    assert_eq!(a.io_bytes, 409_600);
    assert_eq!(a.bw_bytes, 409_600);
    assert!(close(a.iops, 100.0, 1e-12));
}

#[test]
fn ramp_window_excludes_early_samples() {
    let mut c = Collector::new(setup(&[("f", 1)], &[("j", 0, IoClass::Normal)]));
    c.set_window(100 * MS);
    // Early, slow samples that must not count.
    for i in 0..50 {
        c.record(&sample(0, Op::Read, 4096, 10 * MS + i * MS, (0, 5 * MS, 0)));
    }
    // Reaped exactly at the window start counts.
    c.record(&sample(0, Op::Read, 4096, 100 * MS, (0, 100 * US, 0)));
    for i in 1..100 {
        c.record(&sample(
            0,
            Op::Read,
            4096,
            100 * MS + i * MS,
            (0, 100 * US, 0),
        ));
    }
    // Errors during the ramp are not counted either.
    let mut bad = sample(0, Op::Read, 4096, 50 * MS, (0, US, 0));
    bad.ok = false;
    c.record(&bad);
    bad.reaped_ns = 150 * MS;
    c.record(&bad);
    c.record_error(0, Op::Write, crate::errors::EIO);
    let r = c.finish(300 * MS, "p");
    let j = &r.jobs[0];
    assert_eq!(j.read.total_ios, 100);
    assert_eq!(j.read.lat_ns.max, 100 * US);
    assert_eq!((j.failed_ios, j.error), (2, crate::errors::EIO));
    assert_eq!(r.duration_ns, 200 * MS);
    assert_eq!(j.runtime_ns, 200 * MS);
    assert_eq!(j.read.runtime, 200);
    assert!(close(j.read.iops, 500.0, 1e-12));
    assert_eq!(j.read.bw_bytes, 500 * 4096);
    assert_eq!(j.read.bw, 500 * 4);
    assert_eq!(r.flows[0].ios, 100);
    // Bandwidth series starts at the window: two bins of 100 ms, all 100 I/Os in the
    // first (the ramp's 50 are not there).
    let s = &r.bw_series;
    assert_eq!(s.start_ns, 100 * MS);
    assert_eq!(s.flows[0].bw_bytes, vec![100 * 4096 * 10, 0]);
}

#[test]
fn per_job_window_and_done() {
    let mut c = Collector::new(setup(
        &[("f", 1)],
        &[("a", 0, IoClass::Normal), ("b", 0, IoClass::Normal)],
    ));
    c.set_job_window(1, 50 * MS);
    c.record(&sample(0, Op::Read, 4096, 10 * MS, (0, US, 0)));
    c.record(&sample(1, Op::Read, 4096, 10 * MS, (0, US, 0)));
    c.record(&sample(1, Op::Read, 4096, 60 * MS, (0, US, 0)));
    c.job_done(1, 80 * MS);
    c.job_done(1, 90 * MS); // first call wins
    let r = c.finish(200 * MS, "p");
    assert_eq!(r.jobs[0].read.total_ios, 1);
    assert_eq!(r.jobs[0].runtime_ns, 200 * MS);
    assert_eq!(r.jobs[1].read.total_ios, 1);
    assert_eq!(r.jobs[1].runtime_ns, 30 * MS);
    assert!(close(r.jobs[1].read.iops, 1.0 / 0.03, 1e-9));
}

#[test]
fn flushes_go_to_sync() {
    let mut c = Collector::new(setup(&[("f", 1)], &[("j", 0, IoClass::Normal)]));
    c.record(&sample(0, Op::Flush, 0, MS, (0, 300 * US, 0)));
    c.record(&sample(0, Op::Write, 4096, MS, (0, 20 * US, 0)));
    let r = c.finish(10 * MS, "p");
    assert_eq!(r.jobs[0].sync.total_ios, 1);
    assert_eq!(r.jobs[0].sync.lat_ns.max, 300 * US);
    assert_eq!(r.jobs[0].write.total_ios, 1);
    assert_eq!(r.jobs[0].write.lat_ns.max, 20 * US);
}

/// A critical reader (a latency flow) beside one or two writers' flows.
fn latency_beside(writers: usize) -> RunReport {
    let flows = [("crit", 1), ("w1", 1), ("w2", 1)];
    let jobs = [
        ("reader", 0, IoClass::Critical),
        ("w1", 1, IoClass::Normal),
        ("w2", 2, IoClass::Normal),
    ];
    let mut s = setup(&flows[..1 + writers], &jobs[..1 + writers]);
    s.flows[0].latency_only = true;
    let mut c = Collector::new(s);
    for i in 0..100u64 {
        let mut r = sample(0, Op::Read, 4096, MS + i * 100 * US, (US, 10 * US, 0));
        r.class = IoClass::Critical;
        c.record(&r);
        for w in 0..writers {
            c.record(&sample(
                1 + w,
                Op::Write,
                65536,
                MS + i * 100 * US,
                (US, 50 * US, 0),
            ));
        }
    }
    c.finish(20 * MS, "none")
}

#[test]
fn shares_of_sharing_flows_add_to_one_latency_flows_apart() {
    let r = latency_beside(2);
    let sum: f64 = r.flows.iter().map(|f| f.share).sum();
    assert!(close(sum, 1.0, 1e-12), "{sum}");
    assert_eq!(r.flows[0].share, 0.0);
    let all: f64 = r.flows.iter().map(|f| f.bytes_fraction).sum();
    assert!(close(all, 1.0, 1e-12));
    assert!(close(
        r.flows[0].bytes_fraction,
        4096.0 / (4096.0 + 2.0 * 65536.0),
        1e-12
    ));
    let mut out = Vec::new();
    print_table(&[r], &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let flows = &text[text.find("Flows").unwrap()..];
    // The latency flow comes after the sharing ones, without a share.
    assert!(
        flows.find("w2").unwrap() < flows.find("crit").unwrap(),
        "{text}"
    );
    assert!(flows.contains("latency (3.0% of all)"), "{text}");
    assert!(text.contains("Jain"), "two sharing flows: {text}");
    // Two jobs in the normal class: the Classes table sums them.
    assert!(text.contains("Classes"), "{text}");
}

#[test]
fn no_fairness_index_over_one_flow() {
    let r = latency_beside(1);
    assert_eq!(r.fairness.active_flows, 1);
    let mut out = Vec::new();
    print_table(&[r], &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(!text.contains("Jain"), "{text}");
    assert!(text.contains("w1"));
    // One job per class: the Classes table would repeat the Jobs table.
    assert!(!text.contains("Classes"), "{text}");
}

#[test]
fn classes_table_when_a_class_holds_several_jobs() {
    let mut c = Collector::new(setup(
        &[("a", 1), ("b", 1)],
        &[("x", 0, IoClass::Normal), ("y", 1, IoClass::Normal)],
    ));
    c.record(&sample(0, Op::Read, 4096, MS, (US, 10 * US, 0)));
    c.record(&sample(1, Op::Read, 4096, MS, (US, 10 * US, 0)));
    let mut out = Vec::new();
    print_table(&[c.finish(10 * MS, "none")], &mut out).unwrap();
    assert!(String::from_utf8(out).unwrap().contains("Classes"));
}

#[test]
fn failed_ios_show_as_err_on_the_job_line() {
    let mut c = Collector::new(setup(&[("a", 1)], &[("x", 0, IoClass::Normal)]));
    c.record(&sample(0, Op::Read, 4096, MS, (US, 10 * US, 0)));
    let mut out = Vec::new();
    print_table(&[c.clone().finish(10 * MS, "none")], &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let header = text.lines().find(|l| l.starts_with("job ")).unwrap();
    assert!(!header.contains("err"), "{text}");
    let mut bad = sample(0, Op::Read, 4096, 2 * MS, (US, 10 * US, 0));
    bad.ok = false;
    c.record(&bad);
    c.record_error(0, Op::Read, crate::errors::EIO);
    let mut out = Vec::new();
    print_table(&[c.finish(10 * MS, "none")], &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let header = text.lines().find(|l| l.starts_with("job ")).unwrap();
    assert!(header.trim_end().ends_with("err"), "{text}");
    let row = text.lines().find(|l| l.starts_with("x ")).unwrap();
    assert!(row.trim_end().ends_with(" 2"), "{text}");
}

#[test]
fn terse_v3_has_fios_fields_in_fios_order() {
    let runs = [small_run("none", 80 * US), small_run("d2fq", 40 * US)];
    let text = crate::terse(&runs);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "a line per job per run");
    let f: Vec<&str> = lines[0].split(';').collect();
    // fio 3.33 writes 130 fields with one disk (its last 9): 5 + 2 × 41 + 5 + 7 + 10 + 12.
    assert_eq!(f.len(), 5 + 2 * 41 + 5 + 7 + 10 + 12, "{}", lines[0]);
    assert_eq!(&f[..5], &["3", crate::report::VERSION, "reader", "0", "0"]);
    let r = &runs[0].jobs[0].read;
    assert_eq!(f[5], r.io_kbytes.to_string());
    assert_eq!(f[6], r.bw.to_string());
    assert_eq!(f[8], r.runtime.to_string());
    // slat (µs) then clat then its percentiles.
    assert_eq!(f[9], (r.slat_ns.min / 1000).to_string());
    assert_eq!(f[13], (r.clat_ns.min / 1000).to_string());
    assert!(f[17].starts_with("1.000000%="), "{}", f[17]);
    assert_eq!(f[34], "0%=0", "slots past fio's 17 percentiles");
    assert_eq!(f[37], (r.lat_ns.min / 1000).to_string());
    assert!(f[43].ends_with('%'), "bw_agg: {}", f[43]);
    assert_eq!(
        lines[2].split(';').nth(3),
        Some("1"),
        "the second run's group"
    );
}

mod output;
