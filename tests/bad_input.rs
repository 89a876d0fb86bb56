//! Issue 17's findings, each as a test that failed before: an abort on huge sizes,
//! unbounded report size, silent wrong results, hangs, late errors and accepted nonsense.

use crate::common;

use common::{refused, sluice, stderr, write};

use std::process::{Command, Output, Stdio};
use std::time::Duration;

#[test]
fn huge_sizes_are_refused_before_anything_is_allocated() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(
        dir.path(),
        "huge.fio",
        "[w]\nrw=randread\nsize=1m\nnumjobs=65535\niodepth=65535\n",
    );
    refused(
        &sluice(&["sim", &job, "-q"]),
        &["4294836225 requests in flight", "1048576", "lower iodepth"],
    );
    let job = write(
        dir.path(),
        "threads.fio",
        "[a]\nrw=read\nsize=1m\nnumjobs=40000\n[b]\nrw=read\nsize=1m\nnumjobs=40000\n",
    );
    refused(&sluice(&["sim", &job, "-q"]), &["80000 threads", "65535"]);
}

#[test]
fn the_report_does_not_grow_with_the_run() {
    // A size-based job far longer than planned (deep queue on a slow device) used to
    // write one bandwidth bin per 5 ms of a 36-minute simulated run: a 40 MB report.
    let dir = tempfile::tempdir().unwrap();
    let job = write(
        dir.path(),
        "cf.fio",
        "[w]\nrw=randwrite\nbs=4k\niodepth=65535\nsize=256m\n",
    );
    let json = dir.path().join("out.json");
    let o = sluice(&[
        "sim",
        &job,
        "-q",
        "--device",
        "cf",
        "--policy",
        "ld",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let len = std::fs::metadata(&json).unwrap().len();
    assert!(len < 2 << 20, "report is {len} bytes");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let bins = v["runs"][0]["bw_series"]["flows"][0]["bw_bytes"]
        .as_array()
        .unwrap()
        .len();
    assert!(bins <= 4096, "{bins} bins");
    let rows = v["runs"][0]["extra"]["policy_series"]["t_ns"]
        .as_array()
        .unwrap()
        .len();
    assert!(rows <= 4096, "{rows} counter rows");
}

#[test]
fn a_time_based_job_without_runtime_runs_once_with_a_warning() {
    // fio 3.33: "time_based requires a runtime/timeout setting", and the job runs once
    // over its size (it was refused here before issue 41; before issue 17 it ran for
    // ever).
    let dir = tempfile::tempdir().unwrap();
    let job = write(
        dir.path(),
        "tb.fio",
        "[w]\nrw=randread\ntime_based\nsize=1m\ndirect=1\n",
    );
    let o = sluice(&[
        "sim",
        &job,
        "--json",
        &dir.path().join("o.json").to_string_lossy(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("tb.fio:1: job 'w' is time_based but has no runtime"),
        "{}",
        stderr(&o)
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("o.json")).unwrap()).unwrap();
    assert_eq!(
        v["jobs"][0]["read"]["total_ios"], 256,
        "once over 1 MiB of 4 KiB reads"
    );
}

#[test]
fn ctrl_c_during_a_simulation_prints_what_was_measured() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(
        dir.path(),
        "long.fio",
        "[w]\nrw=randread\nsize=1m\ntime_based\nruntime=100000s\n",
    );
    // A day-long job: past the hour a run may take without asking (--allow-long).
    let o = common::interrupt_when_ready(&["sim", &job, "-q", "--allow-long"]);
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    assert!(stderr(&o).contains("interrupted"), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("Jobs") && out.contains("read"), "{out}");
}

#[test]
fn output_paths_are_checked_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(dir.path(), "j.fio", "[w]\nrw=randread\nsize=1m\n");
    refused(
        &sluice(&["sim", &job, "--json", "/nonexistent-dir/x.json"]),
        &["--json", "does not exist"],
    );
    let file = write(dir.path(), "afile", "x");
    refused(
        &sluice(&["sim", &job, "--plot", &file]),
        &["--plot", "not a directory"],
    );
    refused(
        &sluice(&[
            "run",
            &job,
            "-D",
            dir.path().to_str().unwrap(),
            "--json",
            dir.path().to_str().unwrap(),
        ]),
        &["--json", "is a directory"],
    );
    refused(
        &sluice(&["repro", "rcp-block", "--plot", &file]),
        &["--plot"],
    );
}

#[test]
fn nonsense_is_refused_with_what_where_and_the_range() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(dir.path(), "j.fio", "[w]\nrw=randread\nsize=1m\n");
    refused(
        &sluice(&["sim", &job, "--policy", "none,,d2fq"]),
        &["--policy", "empty entry"],
    );
    refused(
        &sluice(&["sim", &job, "--policy", "none,"]),
        &["--policy", "empty entry"],
    );
    refused(
        &sluice(&["sim", &job, "--policy", "d2fq:tau_l=0"]),
        &["tau_l", "512"],
    );
    // A byte-order mark is not text.
    let bom = write(dir.path(), "bom.fio", "\u{feff}[w]\nrw=randread\nsize=1m\n");
    let o = sluice(&["sim", &bom, "-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // calibrate on something that is neither a directory, a file nor a block device.
    refused(
        &sluice(&["calibrate", "/dev/null"]),
        &["/dev/null", "give a directory"],
    );
    // A filename in a subdirectory that does not exist names the subdirectory's absence.
    let sub = write(
        dir.path(),
        "sub.fio",
        "[w]\nrw=randread\nsize=1m\nfilename=nosuchdir/x\n",
    );
    let o = sluice(&["run", &sub, "-D", dir.path().to_str().unwrap()]);
    refused(&o, &["nosuchdir", "does not exist", "subdirectory"]);
}

/// Run `sluice ARGS` under a virtual-memory limit of `kib` KiB (`ulimit -v`); returns
/// its output and the CPU time (user + system) it used, from `wait4` — unlike the wall
/// time, the CPU time does not grow with the load of the machine.
// The child is waited for with `wait4` (for its CPU time), not `Child::wait`.
#[allow(clippy::zombie_processes)]
fn sluice_limited(kib: u64, args: &[&str]) -> (Output, Duration) {
    let mut cmd = format!("ulimit -v {kib}; exec '{}'", env!("CARGO_BIN_EXE_sluice"));
    for a in args {
        cmd.push_str(&format!(" '{a}'"));
    }
    let out = tempfile::tempfile().unwrap();
    let err = tempfile::tempfile().unwrap();
    let child = Command::new("sh")
        .args(["-c", &cmd])
        .stdout(out.try_clone().unwrap())
        .stderr(err.try_clone().unwrap())
        .spawn()
        .expect("sh runs");
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid; wait4 fills it and the status.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as libc::pid_t;
    // SAFETY: `pid` is our child, not yet waited for (`child` is never waited on).
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
    assert_eq!(r, pid, "wait4: {}", std::io::Error::last_os_error());
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    let read = |mut f: std::fs::File| {
        use std::io::{Read, Seek};
        let mut v = Vec::new();
        f.seek(std::io::SeekFrom::Start(0)).unwrap();
        f.read_to_end(&mut v).unwrap();
        v
    };
    let output = Output {
        status: std::os::unix::process::ExitStatusExt::from_raw(status),
        stdout: read(out),
        stderr: read(err),
    };
    (output, tv(ru.ru_utime) + tv(ru.ru_stime))
}

#[test]
fn a_job_at_each_limit_runs_in_bounded_memory_and_time() {
    // docs/limits.md: 65 535 threads; 1 048 576 requests in flight. Each runs under a
    // 1.5 GiB address-space limit (the binary and its allocator take a few hundred MiB of
    // address space before any job) and in seconds.
    let dir = tempfile::tempdir().unwrap();
    let threads = write(
        dir.path(),
        "threads.fio",
        "[w]\nrw=randread\nbs=4k\nsize=64k\nnumjobs=65535\n",
    );
    let deep = write(
        dir.path(),
        "deep.fio",
        "[w]\nrw=randread\nbs=4k\nsize=1g\nnumjobs=16\niodepth=65535\ntime_based\nruntime=20ms\n",
    );
    for (job, policy) in [
        (&threads, "none"),
        (&deep, "none"),
        (&deep, "rcp"),
        (&deep, "ld"),
    ] {
        let (o, cpu) = sluice_limited(1_500_000, &["sim", job, "-q", "--policy", policy]);
        assert!(o.status.success(), "{job} {policy}: {}", stderr(&o));
        assert!(
            cpu < Duration::from_secs(60),
            "{job} {policy}: {cpu:?} of CPU"
        );
    }
}

#[test]
fn zero_intervals_and_batches_are_refused_not_raised() {
    // `--interval-ms 0` used to become 1 and `--submit-batch 0` 1, silently.
    let dir = tempfile::tempdir().unwrap();
    let job = write(dir.path(), "j.fio", "[w]\nrw=randread\nsize=1m\n");
    refused(
        &sluice(&["sim", &job, "--interval-ms", "0"]),
        &["--interval-ms", "0"],
    );
    let d = dir.path().to_str().unwrap();
    refused(
        &sluice(&["run", &job, "-D", d, "--interval-ms", "0"]),
        &["--interval-ms"],
    );
    refused(
        &sluice(&["run", &job, "-D", d, "--submit-batch", "0"]),
        &["--submit-batch", "0"],
    );
}

#[test]
fn verify_pattern_without_a_pattern_is_refused_not_a_false_corruption_report() {
    // Every block used to "fail" (read 0xb7, expected 0x00) and the run exited 1.
    let dir = tempfile::tempdir().unwrap();
    let job = write(
        dir.path(),
        "v.fio",
        "[w]\nrw=randwrite\nbs=4k\nsize=1m\niodepth=4\nverify=pattern\n",
    );
    let d = dir.path().to_str().unwrap();
    refused(
        &sluice(&["run", &job, "-D", d, "-q"]),
        &["v.fio:6", "verify_pattern"],
    );
    assert!(!dir.path().join("w.0.0").exists(), "a file was laid out");
}

#[test]
fn panics_and_huge_allocations_are_refused_up_front() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(dir.path(), "j.fio", "[w]\nrw=randread\nsize=1m\n");
    // 16384 cores once panicked in the device (16-bit queue ids).
    for cmd in ["sim", "sweep"] {
        refused(
            &sluice(&[cmd, &job, "--cores", "16384", "-q"]),
            &["16384", "1..=16383"],
        );
    }
    // ss_dur=2^32-1 allocated 34 GB; `run` then left its laid-out file.
    let ss = write(
        dir.path(),
        "ss.fio",
        "[w]\nrw=randread\nsize=1m\nss_dur=4294967295\n",
    );
    refused(&sluice(&["sim", &ss, "-q"]), &["ss.fio:4", "1048576"]);
    let d = dir.path().to_str().unwrap();
    refused(&sluice(&["run", &ss, "-D", d, "-q"]), &["1048576"]);
    assert!(!dir.path().join("w.0.0").exists(), "a file was laid out");
    // An include of an endless file grew until the OOM killer came.
    let z = write(
        dir.path(),
        "z.fio",
        "include /dev/zero\n[w]\nrw=read\nsize=1m\n",
    );
    // (It ends: a read without end would never return. No time bound is needed.)
    refused(&sluice(&["sim", &z, "-q"]), &["/dev/zero", "16 MiB"]);
    let zero = dir.path().join("zero.toml");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    refused(
        &sluice(&["sim", &job, "--device", zero.to_str().unwrap(), "-q"]),
        &["zero.toml", "1 MiB"],
    );
    // sim --fs keeps the image's data in memory: bounded before the run.
    let big = write(
        dir.path(),
        "big.fio",
        "[w]\nrw=randwrite\nsize=6g\nnrfiles=4\n",
    );
    refused(
        &sluice(&["sim", &big, "--fs", "compound", "-q"]),
        &["8192 MiB", "at most 4096 MiB"],
    );
}

#[test]
fn a_report_never_overwrites_an_input_nor_a_previous_report_with_less() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(dir.path(), "a.fio", "[w]\nrw=randread\nsize=1m\n");
    let before = std::fs::read(&job).unwrap();
    refused(
        &sluice(&["sim", &job, "--json", &job, "-q"]),
        &["--json", "overwrite"],
    );
    let d = dir.path().to_str().unwrap();
    refused(
        &sluice(&["run", &job, "-D", d, "--json", &job, "-q"]),
        &["--json", "overwrite"],
    );
    assert_eq!(std::fs::read(&job).unwrap(), before, "the job file changed");
    // A file system that takes no more (a file-size limit of 1 KiB stands in for a full
    // one: writes past it fail with EFBIG): the previous report is left whole.
    let json = dir.path().join("out.json");
    std::fs::write(&json, b"{\"previous\": true}\n").unwrap();
    let cmd = format!(
        "ulimit -f 1; trap '' XFSZ; exec '{}' sim '{job}' -q --json '{}'",
        env!("CARGO_BIN_EXE_sluice"),
        json.display()
    );
    let o = Command::new("bash").args(["-c", &cmd]).output().unwrap();
    assert!(!o.status.success(), "the report could not be written");
    assert_eq!(
        std::fs::read_to_string(&json).unwrap(),
        "{\"previous\": true}\n",
        "{}",
        stderr(&o)
    );
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");
}

/// An example program beside the `sluice` binary: `cargo test` builds them; a test run
/// alone (`--test integration bad_input::`) builds it with the test profile (its libraries are built).
fn example(name: &str) -> std::path::PathBuf {
    let p = std::path::Path::new(env!("CARGO_BIN_EXE_sluice"))
        .parent()
        .unwrap()
        .join("examples")
        .join(name);
    if !p.exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let profile = if cfg!(debug_assertions) {
            "test"
        } else {
            "release"
        };
        let o = Command::new(cargo)
            .args(["build", "--profile", profile, "--example", name])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
    }
    assert!(p.exists(), "{} not built", p.display());
    p
}

#[test]
fn examples_clean_up_on_sigterm_and_create_no_directory_tree() {
    let dir = tempfile::tempdir().unwrap();
    // A missing --real directory is an error, not a new tree.
    let missing = dir.path().join("no").join("such");
    let o = Command::new(example("write_fsync"))
        .args(["--real", missing.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("no such directory"), "{}", stderr(&o));
    assert!(
        !dir.path().join("no").exists(),
        "created {}",
        missing.display()
    );
    // SIGTERM mid-run: the run's directory (hundreds of MB) is removed.
    let child = Command::new(example("store_fsync"))
        .args(["--real", dir.path().to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    let entries = || std::fs::read_dir(dir.path()).unwrap().count();
    while entries() == 0 {
        // A bound that only catches a run that never starts, not a timing.
        assert!(t0.elapsed() < Duration::from_secs(600), "no run directory");
        std::thread::sleep(Duration::from_millis(20));
    }
    let kill = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(143), "{}", stderr(&o));
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn out_of_range_options_are_refused_with_the_range_not_clamped() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(
        dir.path(),
        "j.fio",
        "[a]\nrw=randread\nsize=1m\n[b]\nrw=randread\nsize=1m\n",
    );
    let d = dir.path().to_str().unwrap();
    // --ring-cap 0 became 1 and 100000 became 32767; --workers 65536 became 2.
    for cap in ["0", "100000"] {
        refused(
            &sluice(&["run", &job, "-D", d, "--ring-cap", cap]),
            &["--ring-cap", "1..=32767"],
        );
    }
    refused(
        &sluice(&["run", &job, "-D", d, "--workers", "3"]),
        &["--workers 3", "2 thread(s)", "1..=2"],
    );
    refused(
        &sluice(&["run", &job, "-D", d, "--workers", "65536"]),
        &["--workers", "65535"],
    );
    // --wrr took weights --arbitration wrr: refuses.
    refused(
        &sluice(&["run", &job, "-D", d, "--wrr", "257,1,1"]),
        &["--wrr", "1..=256"],
    );
    assert!(!dir.path().join("a.0.0").exists(), "a file was laid out");
    // crashtest -j 200000 started 200000 threads.
    refused(&sluice(&["crashtest", "-j", "200000"]), &["-j", "1..=4096"]);
    // repro --only with a typo ran nothing and passed.
    refused(
        &sluice(&["repro", "--only", "no-such-experiment"]),
        &["--only", "no experiment", "repro --list"],
    );
    // fsck of a directory or a device said "no such file".
    refused(&sluice(&["fsck", d]), &["is a directory"]);
    refused(&sluice(&["fsck", "/dev/null"]), &["not a regular file"]);
    // An unknown policy parameter's error lists the valid ones.
    refused(
        &sluice(&["sim", &job, "-p", "d2fq:foo=1", "-q"]),
        &["'foo'", "it takes", "tau_l"],
    );
}

/// Issue 42, item 9: a job that would simulate for hours is refused before it starts,
/// with the estimate and how to bound it; `--allow-long` is the way past (checked here
/// only in that it is accepted: the run itself would take hours).
#[test]
fn a_simulation_of_hours_is_refused_with_its_estimate() {
    let dir = tempfile::tempdir().unwrap();
    let endless = write(
        dir.path(),
        "loops.fio",
        "[r]\nrw=randread\nbs=4k\nsize=1m\nloops=4294967295\n",
    );
    refused(
        &sluice(&["sim", &endless, "-q"]),
        &["hours of wall time", "one-day", "runtime=", "--allow-long"],
    );
    // The same job bounded by its runtime runs (and says nothing of an estimate).
    let out = sluice(&["sim", &endless, "-q", "--set", "runtime=10ms"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("wall time"), "{}", stderr(&out));
}

/// Issue 42, item 10: the largest seed is a seed (`--start u64::MAX --seeds 1` was
/// refused, off by one); one past it is refused with how many seeds fit.
#[test]
fn crashtest_runs_the_largest_seed_and_refuses_one_past_it() {
    let max = u64::MAX.to_string();
    let o = sluice(&[
        "crashtest",
        "--start",
        &max,
        "--seeds",
        "1",
        "--mode",
        "compound",
        "--fsync",
        "sync",
        "-j",
        "1",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("1 recovered and checked") && out.contains("0 failed"),
        "{out}"
    );
    refused(
        &sluice(&["crashtest", "--start", &max, "--seeds", "2"]),
        &["passes the largest seed", "give at most 1 seeds"],
    );
}

#[test]
fn an_unknown_fs_suggests_what_fs_takes_and_a_bare_include_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(dir.path(), "j.fio", "[w]\nrw=randread\nsize=1m\n");
    let o = sluice(&["sim", &job, "--fs", "bogus"]);
    refused(&o, &["'bogus'", "give raw", "compound or fjournal"]);
    assert!(!stderr(&o).contains("give host"), "{}", stderr(&o));
    let bare = write(dir.path(), "b.fio", "include\n[w]\nrw=read\nsize=1m\n");
    refused(
        &sluice(&["sim", &bare]),
        &["b.fio:1", "'include' needs a file name"],
    );
}
