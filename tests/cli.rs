//! End-to-end tests of the `sluice` command: output formats and bad input.

use crate::common;

use common::{sluice, stderr, write};

use std::process::Output;

const SHORT: &str = "[global]\ndirect=1\nsize=64m\ntime_based\nruntime=20ms\n\
[crit]\nrw=randread\nbs=4k\nsluice_critical=1\n\
[bulk]\nrw=randwrite\nbs=64k\niodepth=16\nprio=2\n";

/// Bad input: exit status 2, a message naming what and where, no panic.
fn assert_bad_input(o: &Output, needles: &[&str]) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "exit status; stderr: {err}");
    assert!(!err.contains("panicked"), "panic: {err}");
    for n in needles {
        assert!(err.contains(n), "stderr lacks {n:?}: {err}");
    }
}

#[test]
fn default_job_runs() {
    let o = sluice(&["sim", "--quiet"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("critical-reader") && out.contains("writers"),
        "{out}"
    );
}

#[test]
fn json_has_fio_fields_flows_and_fairness() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(dir.path(), "j.fio", SHORT);
    let json = dir.path().join("out.json");
    let o = sluice(&["sim", &job, "-q", "--json", json.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let jobs = v["jobs"].as_array().unwrap();
    assert_eq!(jobs[0]["jobname"], "crit");
    assert!(jobs[0]["read"]["iops"].as_f64().unwrap() > 0.0);
    assert!(
        jobs[0]["read"]["lat_ns"]["percentile"]["99.900000"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert!(jobs[1]["write"]["bw_bytes"].as_f64().unwrap() > 0.0);
    let flows = v["runs"][0]["flows"].as_array().unwrap();
    assert_eq!(flows.len(), 2);
    assert_eq!(flows[1]["weight"], 6);
    // The critical job's flow is served for latency: left out of the shares, which are
    // fractions of the bytes of the flows that share by weight.
    assert_eq!(flows[0]["latency_only"], true);
    assert_eq!(flows[0]["share_error"], 0.0);
    let total: f64 = flows
        .iter()
        .filter(|f| f["latency_only"] == false)
        .map(|f| f["share"].as_f64().unwrap())
        .sum();
    assert!((total - 1.0).abs() < 1e-9);
    assert!(v["runs"][0]["fairness"]["jain_index"].as_f64().unwrap() > 0.0);
    assert_eq!(v["runs"][0]["fairness"]["active_flows"], 1);
}

#[test]
fn several_policies_give_runs_side_by_side() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(dir.path(), "j.fio", SHORT);
    let json = dir.path().join("out.json");
    let o = sluice(&[
        "sim",
        &job,
        "-q",
        "--policy",
        "none,none",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["policy"], "none");
    // The same job, seed and policy: identical results (fio's jobs, one group per run).
    let jobs = v["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 4);
    assert_eq!(jobs[0]["groupid"], 0);
    assert_eq!(jobs[2]["groupid"], 1);
    assert_eq!(jobs[0]["read"], jobs[2]["read"]);
    assert_eq!(jobs[1]["write"], jobs[3]["write"]);
}

#[test]
fn plots_are_written() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(dir.path(), "j.fio", SHORT);
    let plots = dir.path().join("plots");
    let o = sluice(&["sim", &job, "-q", "--plot", plots.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let svgs: Vec<_> = std::fs::read_dir(&plots)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "svg"))
        .collect();
    assert!(
        svgs.len() >= 3,
        "one CCDF per job and a bandwidth plot: {svgs:?}"
    );
    for s in svgs {
        let text = std::fs::read_to_string(&s).unwrap();
        assert!(text.contains("<svg"), "{}", s.display());
    }
}

#[test]
fn output_is_deterministic() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(dir.path(), "j.fio", SHORT);
    let a = sluice(&["sim", &job, "-q", "--seed", "9"]);
    let b = sluice(&["sim", &job, "-q", "--seed", "9"]);
    assert!(a.status.success());
    assert_eq!(a.stdout, b.stdout);
}

#[test]
fn malformed_job_file() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(
        dir.path(),
        "bad.fio",
        "[a]\nrw=read\nthis line is not an option\n",
    );
    assert_bad_input(&sluice(&["sim", &job]), &["bad.fio", ":3"]);
}

#[test]
fn unknown_option_names_file_line_option() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(dir.path(), "u.fio", "[a]\nrw=read\nsize=1m\nfrobnicate=3\n");
    assert_bad_input(&sluice(&["sim", &job]), &["u.fio", ":4", "frobnicate"]);
    let o = sluice(&["sim", &job, "--ignore-unknown"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("frobnicate"), "warning expected");
    // -q silences warnings too.
    let o = sluice(&["sim", &job, "-q", "--ignore-unknown"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
}

#[test]
fn zero_size() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(dir.path(), "z.fio", "[a]\nrw=read\nsize=0\n");
    assert_bad_input(&sluice(&["sim", &job]), &["z.fio", "size"]);
}

#[test]
fn negative_size() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(dir.path(), "n.fio", "[a]\nrw=read\nsize=-4k\n");
    assert_bad_input(&sluice(&["sim", &job]), &["n.fio", "size"]);
}

#[test]
fn bs_larger_than_size() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(dir.path(), "b.fio", "[a]\nrw=read\nsize=64k\nbs=128k\n");
    assert_bad_input(&sluice(&["sim", &job]), &["b.fio", "bs"]);
}

#[test]
fn unknown_device() {
    assert_bad_input(&sluice(&["sim", "--device", "floppy"]), &["floppy", "ull"]);
}

#[test]
fn bad_device_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "dev.toml", "name = \n");
    assert_bad_input(&sluice(&["sim", "--device", &p]), &["dev.toml"]);
}

#[test]
fn unknown_policy() {
    assert_bad_input(
        &sluice(&["sim", "--policy", "fastest"]),
        &["fastest", "none"],
    );
}

#[test]
fn unknown_policy_parameter() {
    assert_bad_input(&sluice(&["sim", "--policy", "none:depth=3"]), &["depth"]);
}

#[test]
fn unreadable_job_file() {
    assert_bad_input(
        &sluice(&["sim", "/nonexistent/dir/job.fio"]),
        &["/nonexistent/dir/job.fio"],
    );
}

#[test]
fn arbitration_override() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(dir.path(), "j.fio", SHORT);
    let json = dir.path().join("out.json");
    let o = sluice(&[
        "sim",
        &job,
        "-q",
        "--device",
        "zssd",
        "--arbitration",
        "rr",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_bad_input(
        &sluice(&["sim", &job, "--arbitration", "wrr:0,1,1"]),
        &["wrr:0,1,1"],
    );
}

/// `--transfer` overrides the profile's: on `ull` (shared) the critical reader moves
/// its data beside the 64 KiB writes; FIFO makes it wait for them. A bad value is
/// refused with the accepted ones.
#[test]
fn transfer_override() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(dir.path(), "j.fio", SHORT);
    let crit_mean = |extra: &[&str]| -> f64 {
        let json = dir.path().join("out.json");
        let mut args = vec!["sim", &job, "-q", "--json", json.to_str().unwrap()];
        args.extend_from_slice(extra);
        let o = sluice(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        assert_eq!(v["jobs"][0]["jobname"], "crit");
        v["jobs"][0]["read"]["lat_ns"]["mean"].as_f64().unwrap()
    };
    let shared = crit_mean(&[]);
    assert_eq!(crit_mean(&["--transfer", "shared"]), shared);
    let fifo = crit_mean(&["--transfer", "fifo"]);
    assert!(fifo > 2.0 * shared, "fifo {fifo} ns, shared {shared} ns");
    assert_bad_input(
        &sluice(&["sim", &job, "--transfer", "ps"]),
        &["ps", "fifo", "shared"],
    );
}

#[test]
fn alone_reports_fios_figures() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(dir.path(), "j.fio", SHORT);
    let json = dir.path().join("out.json");
    let o = sluice(&[
        "sim",
        &job,
        "-q",
        "--alone",
        "--device",
        "ull",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("FIOS figures"));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let f = &v["runs"][0]["extra"]["fios"];
    assert_eq!(f["proportional_slowdown"], 2.0);
    let tasks = f["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 2);
    // Sharing the device cannot make the critical reader faster than alone.
    assert!(tasks[0]["slowdown"].as_f64().unwrap() >= 1.0, "{f}");
    assert!(f["concurrent_efficiency"].as_f64().unwrap() > 0.0);
}

#[test]
fn output_takes_the_alone_figures_too() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(dir.path(), "j.fio", SHORT);
    let out = dir.path().join("report.txt");
    let o = sluice(&[
        "sim",
        &job,
        "-q",
        "--alone",
        "--output",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        o.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.contains("Jobs ("), "{text}");
    assert!(text.contains("FIOS figures"), "{text}");
}

#[test]
fn repro_writes_its_figures_and_table() {
    let dir = tempfile::tempdir().unwrap();
    let figs = dir.path().join("figs");
    let o = sluice(&[
        "repro",
        "rcp-block",
        "--only",
        "fig11",
        "--seeds",
        "2",
        "-q",
        "--plot",
        figs.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("fig11") && out.contains("PASS"), "{out}");
    assert!(
        !out.contains("admission"),
        "--only fig11 ran another experiment: {out}"
    );
    let svg = std::fs::read_to_string(figs.join("rcp-fig11.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("throughput"));
}

#[test]
fn unknown_repro_suite() {
    assert_bad_input(&sluice(&["repro", "nope"]), &["nope", "d2fq"]);
}

#[test]
fn sim_faults_count_errors_and_bad_specs_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(dir.path(), "j.fio", SHORT);
    let json = dir.path().join("out.json");
    let o = sluice(&[
        "sim",
        &job,
        "--quiet",
        "--faults",
        "media=0.05,timeout=0.01,timeout_us=200",
        "--json",
        json.to_str().unwrap(),
    ]);
    // The jobs have fio's default continue_on_error=none: a failed I/O ends its thread
    // and, as fio's, the run exits 1 after writing its report.
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("had a thread end on an error") && stderr(&o).contains("EIO"),
        "{}",
        stderr(&o)
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let errors: u64 = v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["failed_ios"].as_u64().unwrap())
        .sum();
    assert!(errors > 0);
    // The block layer also counts failures after the jobs' time-based end, which the
    // report leaves out (as fio does with late completions).
    assert!(v["runs"][0]["extra"]["block"]["failed"].as_u64().unwrap() >= errors);
    assert!(
        v["runs"][0]["extra"]["device_faults"]["media_errors"]
            .as_u64()
            .unwrap()
            > 0
    );
    // With continue_on_error=io every error is one the jobs go on after: exit 0, and
    // fio's total_err counts them.
    let going_on = write(
        dir.path(),
        "k.fio",
        &format!("[global]\ncontinue_on_error=io\n{SHORT}"),
    );
    let o = sluice(&[
        "sim",
        &going_on,
        "--quiet",
        "--faults",
        "media=0.05",
        "--output-format",
        "json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let total_err: u64 = v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["total_err"].as_u64().unwrap())
        .sum();
    assert!(total_err > 0, "{v}");
    let o = sluice(&["sim", &job, "--faults", "media=1.5"]);
    assert_bad_input(&o, &["--faults", "media=1.5", "[0, 1]"]);
    let o = sluice(&["sim", &job, "--faults", "latency=1"]);
    assert_bad_input(&o, &["unknown key 'latency'", "media, timeout"]);
}

#[test]
fn output_format_json_plus_gives_fios_latency_bins() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(
        dir.path(),
        "r.fio",
        "[r]\nrw=randread\nbs=4k\nsize=64m\niodepth=4\nnumber_ios=3000\n[w]\nrw=randwrite\nbs=64k\nsize=64m\nnumber_ios=500\n",
    );
    let o = sluice(&["sim", &job, "--output-format", "json+", "--quiet"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    for (j, dir) in [(0, "read"), (1, "write")] {
        let d = &v["jobs"][j][dir];
        let bins = d["clat_ns"]["bins"].as_object().expect("bins");
        let total: u64 = bins.values().map(|c| c.as_u64().unwrap()).sum();
        assert_eq!(total, d["total_ios"].as_u64().unwrap());
        for k in bins.keys() {
            // Every key is the value fio names its bucket by.
            let ns: u64 = k.parse().unwrap();
            let i = sluice_metrics::plat_index(ns);
            assert_eq!(sluice_metrics::plat_value(i), ns, "{k}");
        }
        // min and max fall in the first and last bucket.
        let first: u64 = bins
            .keys()
            .map(|k| k.parse::<u64>().unwrap())
            .min()
            .unwrap();
        let min = d["clat_ns"]["min"].as_u64().unwrap();
        assert_eq!(
            sluice_metrics::plat_index(min),
            sluice_metrics::plat_index(first)
        );
        assert!(
            v["jobs"][j]["trim"].is_object(),
            "fio's tools read trim too"
        );
    }
    // Plain json and the table have no bins.
    let o = sluice(&["sim", &job, "--output-format", "json", "--quiet"]);
    assert!(!String::from_utf8_lossy(&o.stdout).contains("\"bins\""));
    let o = sluice(&["sim", &job, "--output-format", "xml", "--quiet"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn fio_log_files_in_fios_format_from_virtual_time() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let job = write(
        dir.path(),
        "l.fio",
        &format!(
            "[global]\nsize=64m\nnumber_ios=400\n[r]\nrw=randread\niodepth=4\nwrite_lat_log={d}/r\nwrite_iops_log={d}/r\n\
             [w]\nrw=write\nbs=64k\nwrite_bw_log={d}/w\nlog_avg_msec=1\n"
        ),
    );
    let run = || {
        let o = sluice(&["sim", &job, "--quiet"]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        [
            "r_clat.1.log",
            "r_slat.1.log",
            "r_lat.1.log",
            "r_iops.1.log",
            "w_bw.2.log",
        ]
        .map(|f| std::fs::read_to_string(dir.path().join(f)).unwrap())
    };
    let a = run();
    // An entry per I/O: 400 lines of five numeric columns, time in ms, reads (0).
    for text in &a[..4] {
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 400);
        for l in lines {
            let cols: Vec<u64> = l.split(", ").map(|c| c.parse().unwrap()).collect();
            assert_eq!(cols.len(), 5, "{l}");
            assert_eq!((cols[2], cols[3], cols[4]), (0, 4096, 0), "{l}");
        }
    }
    // slat + clat = lat, line by line.
    for ((c, s), l) in a[0].lines().zip(a[1].lines()).zip(a[2].lines()) {
        let v = |x: &str| x.split(", ").nth(1).unwrap().parse::<u64>().unwrap();
        assert_eq!(v(c) + v(s), v(l));
    }
    // Averaged bandwidth: one entry per ms window of writes (direction 1).
    let bw: Vec<&str> = a[4].lines().collect();
    assert!(
        !bw.is_empty() && bw.iter().all(|l| l.contains(", 1, 65536, 0")),
        "{bw:?}"
    );
    // The same inputs give the same files.
    assert_eq!(run(), a);
    // A prefix in a missing directory is refused before the run.
    let bad = write(
        dir.path(),
        "b.fio",
        "[r]\nsize=1m\nwrite_bw_log=/nonexistent-dir/x\n",
    );
    assert_bad_input(
        &sluice(&["sim", &bad]),
        &["write_bw_log=/nonexistent-dir/x", "not a directory"],
    );
}
