//! What a run's report looks like outside: fio's JSON fields and shape, the tables,
//! fio's latency buckets and bandwidth samples, plots, `ctime` (the collector's own
//! figures are tested in the parent module).

use super::*;

pub(super) fn small_run(policy: &str, lat: u64) -> RunReport {
    let mut c = Collector::new(setup(
        &[("tenant-a", 2), ("tenant-b", 1)],
        &[
            ("reader", 0, IoClass::Critical),
            ("writer", 1, IoClass::Normal),
        ],
    ));
    for i in 0..1000u64 {
        let mut s = sample(
            0,
            Op::Read,
            4096,
            MS + i * 100 * US,
            (US, lat + i * 10, 2 * US),
        );
        s.class = IoClass::Critical;
        c.record(&s);
        c.record(&sample(
            1,
            Op::Write,
            65536,
            MS + i * 100 * US,
            (5 * US, 3 * lat, US),
        ));
    }
    c.finish(101 * MS, policy)
}

#[test]
fn json_field_names() {
    let v = to_json(&[small_run("mqfq", 80 * US)]);
    assert_eq!(v["fio version"], crate::report::VERSION);
    assert_eq!(v["timestamp"], 0, "a simulated run has no wall time");
    assert_eq!(v["time"], "Thu Jan  1 00:00:00 1970");
    assert!(v["global options"].is_object());
    assert_eq!(v["runs"][0]["policy"], "mqfq");
    let job = &v["jobs"][0];
    assert_eq!(job["jobname"], "reader");
    assert_eq!(job["policy"], "mqfq");
    assert_eq!(job["groupid"], 0);
    assert!(job["job options"].is_object());
    // fio's other per-job fields: eta, elapsed, the depth maps and the latency target's.
    assert_eq!(job["eta"], 0);
    assert_eq!(job["elapsed"], 1, "a 0.1 s window, rounded up");
    assert!(job.get("desc").is_none(), "no description");
    for (key, first) in [
        ("iodepth_level", "1"),
        ("iodepth_submit", "0"),
        ("iodepth_complete", "0"),
    ] {
        let m = job[key].as_object().unwrap();
        assert_eq!(m.len(), 7, "{key}");
        assert!(m.contains_key(first) && m.contains_key(">=64"), "{key}");
    }
    assert_eq!(job["latency_target"], 0);
    assert_eq!(job["latency_percentile"], 100.0);
    assert_eq!(job["latency_window"], 0);
    assert_eq!(job["flow"], "tenant-a");
    assert_eq!(job["class"], "critical");
    assert_eq!(job["error"], 0);
    let read = &job["read"];
    for key in [
        "io_bytes",
        "io_kbytes",
        "bw_bytes",
        "bw",
        "iops",
        "runtime",
        "total_ios",
        "slat_ns",
        "clat_ns",
        "lat_ns",
        "bw_min",
        "bw_max",
        "bw_agg",
        "bw_mean",
        "iops_min",
        "iops_max",
        "sched_ns",
        "device_ns",
        "post_ns",
    ] {
        assert!(read.get(key).is_some(), "missing read.{key}");
    }
    assert_eq!(read["total_ios"], 1000);
    assert_eq!(read["io_bytes"], 4096 * 1000);
    assert_eq!(read["io_kbytes"], 4000);
    assert_eq!(read["runtime"], 101);
    let clat = &read["lat_ns"];
    for key in ["min", "max", "mean", "stddev", "N", "percentile"] {
        assert!(clat.get(key).is_some(), "missing clat_ns.{key}");
    }
    let pct = clat["percentile"].as_object().unwrap();
    let keys: Vec<&str> = pct.keys().map(String::as_str).collect();
    for k in [
        "1.000000",
        "5.000000",
        "10.000000",
        "50.000000",
        "99.000000",
        "99.500000",
        "99.900000",
        "99.950000",
        "99.990000",
    ] {
        assert!(keys.contains(&k), "missing percentile {k}: {keys:?}");
    }
    assert_eq!(pct.len(), 17);
    // Empty sections carry no percentiles, as in fio.
    assert!(job["write"]["lat_ns"].get("percentile").is_none());
    assert_eq!(job["write"]["lat_ns"]["N"], 0);
    let v = &v["runs"][0];
    let flow = &v["flows"][0];
    for key in [
        "name",
        "weight",
        "ios",
        "iops",
        "bw_bytes",
        "share",
        "weight_share",
        "share_error",
    ] {
        assert!(flow.get(key).is_some(), "missing flow.{key}");
    }
    assert!(v["fairness"]["jain_index"].as_f64().unwrap() > 0.0);
    assert_eq!(v["bw_series"]["interval_ns"], 100 * MS);
    assert_eq!(v["bw_series"]["flows"][1]["name"], "tenant-b");
    assert!(
        v["bw_series"]["flows"][0]["bw_bytes"]
            .as_array()
            .unwrap()
            .len()
            >= 2
    );
    // The collector leaves `extra` at its default: no engine facts, zero block figures.
    let extra = v["extra"].as_object().unwrap();
    assert!(extra.get("engine").is_none() && extra.get("policy").is_none());
    assert_eq!(v["extra"]["block"]["submitted"], 0);
    assert!(v["classes"][0]["lat_ns"]["percentile"]["99.900000"].is_u64());
    // The percentile serialiser keeps fio's numeric order (to_json's Value sorts keys).
    let text = serde_json::to_string(&small_run("x", US).jobs[0].read.lat_ns).unwrap();
    let i5 = text.find("\"5.000000\"").unwrap();
    let i10 = text.find("\"10.000000\"").unwrap();
    assert!(i5 < i10);
}

#[test]
fn one_shape_whatever_the_number_of_runs() {
    let runs = [small_run("none", 80 * US), small_run("d2fq", 40 * US)];
    let v = to_json(&runs);
    let arr = v["runs"].as_array().unwrap();
    assert_eq!(arr.len(), 2);
    assert_eq!(arr[0]["policy"], "none");
    assert_eq!(arr[1]["policy"], "d2fq");
    assert!(arr[1].get("jobs").is_none(), "jobs are fio's, at the top");
    // fio's jobs: each run's, in run order, with its policy and its group.
    let jobs = v["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 4);
    assert_eq!(jobs[3]["jobname"], "writer");
    assert_eq!(jobs[3]["policy"], "d2fq");
    assert_eq!(jobs[3]["groupid"], 1);
    assert!(v.get("policy").is_none());
    // A job's stonewall group is its groupid; a later run numbers after the groups of
    // the runs before it.
    let mut grouped = [small_run("none", 80 * US), small_run("d2fq", 40 * US)];
    grouped[0].entries[1].group = 1;
    let jobs = to_json(&grouped)["jobs"].clone();
    let ids: Vec<_> = jobs
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["groupid"].clone())
        .collect();
    assert_eq!(ids, [0, 1, 2, 2]);
    // One run has the same keys as two.
    let one = to_json(&runs[..1]);
    let keys = |v: &serde_json::Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(&one), keys(&v));
    assert_eq!(one["runs"].as_array().unwrap().len(), 1);

    let dir = temp_dir("json");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("out.json");
    write_json(&runs, &path).unwrap();
    let back: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    // Floats may differ in the last bit after a text round trip; compare the rest.
    assert_eq!(back["runs"][1]["policy"], "d2fq");
    assert_eq!(back["jobs"][0]["jobname"], v["jobs"][0]["jobname"].clone());
    assert_eq!(
        back["jobs"][2]["read"]["lat_ns"]["percentile"],
        v["jobs"][2]["read"]["lat_ns"]["percentile"]
    );
    let err = write_json(&runs, &dir.join("no/such/dir/out.json")).unwrap_err();
    assert!(err.to_string().contains("no/such/dir/out.json"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn table_shows_jobs_and_policies() {
    let runs = [small_run("none", 80 * US), small_run("d2fq", 40 * US)];
    let mut out = Vec::new();
    print_table(&runs, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    for needle in [
        "reader", "writer", "none", "d2fq", "tenant-a", "tenant-b", "critical", "Jain", "µs",
    ] {
        assert!(text.contains(needle), "missing {needle} in\n{text}");
    }
    // Rows of one table have the same width of their label columns: the header line and
    // each job row start aligned; check that every "reader" row has the policy in the same
    // column.
    let cols: Vec<usize> = text
        .lines()
        .filter(|l| l.starts_with("reader"))
        .map(|l| l.find("read ").unwrap())
        .collect();
    assert_eq!(cols.len(), 2);
    assert_eq!(cols[0], cols[1]);
    // Single run: no policy column, the policy named in the heading.
    let mut out = Vec::new();
    print_table(&runs[..1], &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.starts_with("policy none:"));
    assert!(text.contains("reader") && text.contains("writer"));
}

#[test]
fn latency_units() {
    assert_eq!(table::fmt_ns(850.0), "850ns");
    assert_eq!(table::fmt_ns(97_300.0), "97.3µs");
    assert_eq!(table::fmt_ns(1_250_000.0), "1.25ms");
    assert_eq!(table::fmt_ns(2e9), "2.00s");
}

fn temp_dir(tag: &str) -> std::path::PathBuf {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let d = std::env::temp_dir().join(format!(
        "sluice-metrics-{tag}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&d);
    d
}

#[test]
fn plots_are_svg_files() {
    let runs = [small_run("none", 80 * US), small_run("d2fq", 40 * US)];
    let dir = temp_dir("plot").join("nested");
    let files = plot(&runs, &dir).unwrap();
    // Two jobs' CCDFs and one bandwidth plot per run.
    assert_eq!(files.len(), 4, "{files:?}");
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        assert!(text.trim_start().starts_with("<svg"), "{}", f.display());
        assert!(text.trim_end().ends_with("</svg>"));
        assert!(text.contains("<polyline") || text.contains("<path"));
    }
    let names: Vec<String> = files
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(names.contains(&"lat_ccdf_reader.svg".to_string()));
    assert!(names.contains(&"bw_none.svg".to_string()));
    assert!(names.contains(&"bw_d2fq.svg".to_string()));
    let ccdf = std::fs::read_to_string(dir.join("lat_ccdf_reader.svg")).unwrap();
    assert!(ccdf.contains("none") && ccdf.contains("d2fq"));

    // A path under a regular file cannot be a directory: the error names it.
    let blocker = dir.join("file");
    std::fs::write(&blocker, "x").unwrap();
    let err = plot(&runs, &blocker.join("sub")).unwrap_err();
    assert!(matches!(err, MetricsError::CreateDir { .. }));
    assert!(err.to_string().contains("file/sub"), "{err}");
    std::fs::remove_dir_all(dir.parent().unwrap()).unwrap();
}

#[test]
fn ccdf_is_monotone() {
    let r = small_run("p", 80 * US);
    let c = &r.jobs[0].read.lat_ccdf;
    assert_eq!(c[0].1, 1.0);
    assert!(c.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 >= w[1].1));
    assert_eq!(c.last().unwrap().1, 0.0);
}

#[test]
fn interval_default_and_choice() {
    let c = Collector::new(RunSetup::default());
    assert_eq!(c.interval_ns(), DEFAULT_INTERVAL_NS);
    assert_eq!(RunSetup::interval_for(60_000 * MS), 300 * MS);
    assert_eq!(RunSetup::interval_for(10 * MS), MS);
    assert_eq!(RunSetup::interval_for(3_600_000 * MS), 1000 * MS);
    let r = c.finish(0, "empty");
    assert_eq!(r.fairness.jain_index, 1.0);
    let mut out = Vec::new();
    print_table(&[r], &mut out).unwrap();
}

#[test]
fn xy_plot_draws_every_series() {
    let dir = temp_dir("xy").join("sub");
    let path = dir.join("sweep.svg");
    let series = vec![
        crate::XySeries {
            name: "p99.9".into(),
            points: vec![(1.0, 24.0), (2.0, 32.0), (4.0, 61.0), (8.0, 113.0)],
        },
        crate::XySeries {
            name: "mean".into(),
            points: vec![(1.0, 12.0), (8.0, 35.0)],
        },
    ];
    crate::plot_xy(&path, "latency vs tokens", "tokens", "µs", &series, true).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.starts_with("<svg"), "{}", &text[..40.min(text.len())]);
    for needle in ["latency vs tokens", "p99.9", "mean", "tokens"] {
        assert!(text.contains(needle), "missing {needle}");
    }
    // Four markers of the first series and two of the second.
    assert_eq!(text.matches("<circle").count(), 6);
    std::fs::remove_dir_all(dir.parent().unwrap()).ok();
}

#[test]
fn fio_latencies_slat_clat_lat_and_the_breakdown_beside_them() {
    let r = small_run("none", 80 * US);
    let d = &r.jobs[0].read;
    // slat = dispatch − submit = sched; clat = reaped − dispatch = device + post;
    // lat = reaped − submit = slat + clat, exactly for the means.
    assert_eq!(d.slat_ns.mean, d.sched_ns.mean);
    assert!(
        d.slat_ns.percentile.is_empty(),
        "fio gives slat no percentiles"
    );
    assert!((d.clat_ns.mean - (d.device_ns.mean + d.post_ns.mean)).abs() < 1e-6);
    assert!((d.lat_ns.mean - (d.slat_ns.mean + d.clat_ns.mean)).abs() < 1e-6);
    assert!(
        d.clat_ns.mean < d.lat_ns.mean,
        "{} vs {}",
        d.clat_ns.mean,
        d.lat_ns.mean
    );
    assert!(!d.clat_ns.percentile.is_empty() && !d.lat_ns.percentile.is_empty());
    assert_eq!(d.clat_ns.n, d.lat_ns.n);
}

#[test]
fn fio_latency_buckets_and_bandwidth_samples() {
    use crate::collector::lat_bucket;
    // fio's io_u_mark_latency: < 2 ns is "2", 750 ns is "1000", 1 µs is µs "2".
    assert_eq!(lat_bucket(0), 0);
    assert_eq!(lat_bucket(1), 0);
    assert_eq!(lat_bucket(2), 1);
    assert_eq!(lat_bucket(999), 9);
    assert_eq!(lat_bucket(1_000), 10);
    assert_eq!(lat_bucket(60_000), 15, "60 µs is in (50, 100]: key 100");
    assert_eq!(lat_bucket(999_999), 19);
    assert_eq!(lat_bucket(1_000_000), 20);
    assert_eq!(lat_bucket(1_999_999_999), 30);
    assert_eq!(lat_bucket(2_000_000_000), 31);
    let r = small_run("none", 80 * US);
    let j = &r.jobs[0];
    let sum: f64 = [&j.latency_ns, &j.latency_us, &j.latency_ms]
        .iter()
        .flat_map(|b| b.0.iter().map(|(_, p)| *p))
        .sum();
    assert!((sum - 100.0).abs() < 1e-9, "{sum}");
    assert_eq!(j.latency_ms.0.last().unwrap().0, ">=2000");
    assert_eq!(j.latency_us.0.len(), 10);
    // Bandwidth samples: one per whole 100 ms bin of the job's window.
    let d = &j.read;
    assert!(d.bw_samples >= 1, "{d:?}");
    assert!(d.bw_min <= d.bw_max && d.bw_min > 0);
    assert!(d.bw_mean >= d.bw_min as f64 && d.bw_mean <= d.bw_max as f64);
    assert_eq!(d.iops_samples, d.bw_samples);
    // bw_agg: the jobs' parts of a direction add up to 100 %.
    let agg: f64 = r.jobs.iter().map(|j| j.write.bw_agg).sum();
    assert!((agg - 100.0).abs() < 1e-9 || agg == 0.0, "{agg}");
}

#[test]
fn ctime_is_written_as_c_writes_it() {
    assert_eq!(crate::report::ctime_utc(0), "Thu Jan  1 00:00:00 1970");
    assert_eq!(
        crate::report::ctime_utc(1_795_836_603),
        "Sat Nov 28 03:30:03 2026"
    );
    assert_eq!(
        crate::report::ctime_utc(951_782_400),
        "Tue Feb 29 00:00:00 2000"
    );
}
