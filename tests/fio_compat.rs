//! Where sluice speaks fio: its JSON fields and their meaning, its warnings, its
//! command-line conventions (issue 43, item 3).

use crate::common;

use common::{sluice, stderr, write};

const JOB: &str = "[global]\nsize=64m\nruntime=20ms\ntime_based\n\
[r]\nrw=randread\nbs=4k\niodepth=8\nioengine=io_uring\n\
[w]\nrw=randwrite\nbs=64k\nioengine=psync\n";

fn json_of(args: &[&str]) -> serde_json::Value {
    let o = sluice(args);
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_slice(&o.stdout).expect("JSON on stdout")
}

#[test]
fn json_has_fios_top_level_and_latencies_as_fio_defines_them() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(dir.path(), "j.fio", JOB);
    let v = json_of(&["sim", &job, "-q", "--output-format", "json"]);
    assert!(v["fio version"].as_str().unwrap().starts_with("sluice-"));
    assert_eq!(v["timestamp"], 0);
    assert!(v["time"].is_string());
    assert_eq!(v["global options"]["size"], "64m");
    assert_eq!(v["global options"]["time_based"], "");
    let r = &v["jobs"][0];
    assert_eq!(r["jobname"], "r");
    assert_eq!(r["groupid"], 0);
    assert_eq!(r["policy"], "none");
    assert_eq!(r["job options"]["rw"], "randread");
    assert_eq!(r["job options"]["ioengine"], "io_uring");
    assert!(
        r["job options"].get("size").is_none(),
        "global, not the job's"
    );
    let d = &r["read"];
    let mean = |k: &str| d[k]["mean"].as_f64().unwrap();
    // slat: submit → dispatch (sluice's scheduler); clat: dispatch → reaped; lat: the
    // whole; the breakdown beside them under sluice's names.
    assert!(mean("lat_ns") > 0.0 && mean("clat_ns") > 0.0);
    assert!((mean("slat_ns") + mean("clat_ns") - mean("lat_ns")).abs() < 1.0);
    assert_eq!(mean("slat_ns"), mean("sched_ns"));
    assert!((mean("device_ns") + mean("post_ns") - mean("clat_ns")).abs() < 1.0);
    assert!(d["clat_ns"]["percentile"]["99.000000"].as_u64().unwrap() > 0);
    assert!(d["slat_ns"].get("percentile").is_none());
    for k in [
        "bw_min", "bw_max", "bw_agg", "bw_mean", "iops_min", "iops_max",
    ] {
        assert!(d[k].is_number(), "read.{k}: {d}");
    }
    assert!(d["bw_samples"].as_u64().unwrap() > 0);
    assert!(d["bw_min"].as_u64().unwrap() <= d["bw_max"].as_u64().unwrap());
    for k in ["usr_cpu", "sys_cpu", "ctx", "majf", "minf", "job_runtime"] {
        assert!(r[k].is_number(), "{k}");
    }
    let buckets: f64 = ["latency_ns", "latency_us", "latency_ms"]
        .iter()
        .flat_map(|k| r[k].as_object().unwrap().values())
        .map(|p| p.as_f64().unwrap())
        .sum();
    assert!((buckets - 100.0).abs() < 1e-6, "{buckets}");
    assert!(r["latency_ms"].get(">=2000").is_some());
}

#[test]
fn one_json_shape_for_one_policy_or_several() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(dir.path(), "j.fio", JOB);
    let one = json_of(&["sim", &job, "-q", "--output-format", "json"]);
    let two = json_of(&[
        "sim",
        &job,
        "-q",
        "--output-format",
        "json",
        "--policy",
        "none,ld",
    ]);
    let keys = |v: &serde_json::Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(&one), keys(&two));
    assert_eq!(one["runs"].as_array().unwrap().len(), 1);
    assert_eq!(two["runs"].as_array().unwrap().len(), 2);
    assert_eq!(two["jobs"].as_array().unwrap().len(), 4);
    assert_eq!(two["jobs"][3]["policy"], "ld");
    assert_eq!(two["jobs"][3]["groupid"], 1);
    assert_eq!(one["jobs"][0]["read"], two["jobs"][0]["read"]);
}

#[test]
fn local_ioengines_are_silent_and_quiet_silences_warnings() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(dir.path(), "j.fio", JOB);
    let o = sluice(&["sim", &job, "--output-format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // The one note is fio's default direct=0 (sluice's was direct=1); nothing on the
    // engines.
    let e = stderr(&o);
    assert_eq!(e.matches("warning").count(), 1, "{e}");
    assert!(
        e.contains("jobs 'r', 'w' give no direct=: buffered I/O"),
        "{e}"
    );
    assert!(!e.contains("ioengine"), "{e}");
    // A warning that stays without -q (an option with no effect) goes with -q.
    let job = write(
        dir.path(),
        "k.fio",
        "[r]\nrw=randread\nsize=1m\ngroup_reporting\n",
    );
    let o = sluice(&["sim", &job]);
    assert!(stderr(&o).contains("warning"), "{}", stderr(&o));
    let o = sluice(&["sim", &job, "-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
}

#[test]
fn a_closed_pipe_ends_quietly() {
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().unwrap();
    let job = write(dir.path(), "j.fio", JOB);
    let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["sim", &job, "-q"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The reader goes away before sluice writes anything (`sluice sim … | head -0`).
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
}

#[test]
fn fios_command_line_job_form_output_file_and_terse() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(
        dir.path(),
        "j.fio",
        "[r]\nrw=randread\nbs=4k\nsize=16m\nnumber_ios=2000\n",
    );
    let from_file = sluice(&["sim", &job, "-q", "--output-format", "terse"]);
    assert!(from_file.status.success(), "{}", stderr(&from_file));
    // The same job as fio's command-line options: the same figures, under `none`.
    let from_args = sluice(&[
        "sim",
        "-q",
        "--name=r",
        "--rw=randread",
        "--bs=4k",
        "--size=16m",
        "--number_ios=2000",
        "--output-format=terse",
    ]);
    assert!(from_args.status.success(), "{}", stderr(&from_args));
    assert_eq!(from_file.stdout, from_args.stdout);
    let line = String::from_utf8(from_args.stdout).unwrap();
    let f: Vec<&str> = line.trim_end().split(';').collect();
    assert_eq!((f[0], f[2], f[3]), ("3", "r", "0"));
    assert_eq!(f.len(), 121, "{line}");
    // --output: the results in the file, nothing on stdout.
    let out = dir.path().join("res.json");
    let o = sluice(&[
        "sim",
        &job,
        "-q",
        "--output-format=json",
        "--output",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(o.stdout.is_empty());
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(v["jobs"][0]["jobname"], "r");
    // A job file and command-line options together are refused; a bad option names
    // the command line.
    let o = sluice(&["sim", &job, "--name=x", "--rw=read"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("one or the other"), "{}", stderr(&o));
    let o = sluice(&["sim", "--name=x", "--rw=sideways"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("<command line>"), "{}", stderr(&o));
}

#[test]
fn run_takes_fios_command_line_job_form_too() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let o = sluice(&[
        "run",
        "-D",
        d,
        "-q",
        "--name=r",
        "--rw=randread",
        "--bs=4k",
        "--size=4m",
        "--number_ios=500",
        "--output-format=json",
    ]);
    if o.status.code() == Some(2) && stderr(&o).contains("cannot create an io_uring") {
        eprintln!("io_uring unavailable, test skipped: {}", stderr(&o));
        return;
    }
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["jobs"][0]["jobname"], "r");
    assert_eq!(v["jobs"][0]["read"]["total_ios"], 500);
    // Neither a job file nor options: told how to give one.
    let o = sluice(&["run", "-D", d]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("no job"), "{}", stderr(&o));
    let job = write(dir.path(), "j.fio", "[r]\nrw=read\nsize=1m\n");
    let o = sluice(&["run", &job, "-D", d, "--name=x", "--rw=read"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("one or the other"), "{}", stderr(&o));
}
