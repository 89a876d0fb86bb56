//! End-to-end tests of `sluice run`: a short real-I/O run on temporary files (the CI
//! test), output, clean-up, Ctrl-C, I/O errors, and every bad input this machine can
//! provoke. Where io_uring cannot be set up at all, the real-I/O tests say why and
//! return.

use crate::common;

use common::{sluice, stderr, write};

use std::path::Path;
use std::process::{Command, Output, Stdio};

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// True (after saying why) when the run failed only because io_uring is unusable here.
fn no_io_uring(o: &Output) -> bool {
    if o.status.code() == Some(2) && stderr(o).contains("cannot create an io_uring") {
        eprintln!("io_uring unavailable, test skipped: {}", stderr(o));
        return true;
    }
    false
}

/// Bad input: exit status 2, a message naming what and where, no panic.
fn assert_bad_input(o: &Output, needles: &[&str]) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "exit status; stderr: {err}");
    assert!(!err.contains("panicked"), "panic: {err}");
    for n in needles {
        assert!(err.contains(n), "stderr lacks {n:?}: {err}");
    }
}

const SHORT: &str = "[global]\nsize=8m\ntime_based\nruntime=300ms\n\
[crit]\nrw=randread\nbs=4k\nsluice_critical=1\n\
[bulk]\nrw=randwrite\nbs=64k\niodepth=8\nprio=2\n";

#[test]
fn short_real_run_reports_fio_fields_and_removes_its_files() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let job = write(dir.path(), "j.fio", SHORT);
    let json = dir.path().join("out.json");
    let plots = dir.path().join("plots");
    let o = sluice(&[
        "run",
        &job,
        "-q",
        "--directory",
        data.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
        "--plot",
        plots.to_str().unwrap(),
    ]);
    if no_io_uring(&o) {
        return;
    }
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("crit") && out.contains("bulk"), "{out}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let jobs = v["jobs"].as_array().unwrap();
    assert_eq!(jobs[0]["jobname"], "crit");
    assert!(jobs[0]["read"]["iops"].as_f64().unwrap() > 0.0);
    assert!(jobs[0]["read"]["total_ios"].as_u64().unwrap() > 0);
    assert!(
        jobs[0]["read"]["lat_ns"]["percentile"]["99.900000"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert!(jobs[1]["write"]["bw_bytes"].as_f64().unwrap() > 0.0);
    assert_eq!(jobs[0]["error"], 0);
    assert_eq!(jobs[1]["error"], 0);
    assert_eq!(v["runs"][0]["flows"].as_array().unwrap().len(), 2);
    assert!(v["runs"][0]["fairness"]["jain_index"].as_f64().unwrap() > 0.0);
    assert_eq!(v["runs"][0]["extra"]["engine"], "io_uring");
    // Nothing left behind in the data directory; the figures were written.
    assert!(names(&data).is_empty(), "{:?}", names(&data));
    assert!(!names(&plots).is_empty());
}

#[test]
fn several_policies_run_side_by_side_on_the_same_files() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(
        dir.path(),
        "j.fio",
        "[r]\nrw=randread\nsize=4m\ntime_based\nruntime=100ms\n",
    );
    let json = dir.path().join("out.json");
    let o = sluice(&[
        "run",
        &job,
        "-q",
        "-D",
        dir.path().to_str().unwrap(),
        "--policy",
        "none,none",
        "--json",
        json.to_str().unwrap(),
    ]);
    if no_io_uring(&o) {
        return;
    }
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(v["runs"].as_array().unwrap().len(), 2);
    assert_eq!(names(dir.path()), vec!["j.fio", "out.json"]);
}

#[test]
fn kept_files_are_reused_as_fio_reuses_its_layout_files() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(
        dir.path(),
        "w.fio",
        "[w]\nrw=randwrite\nsize=1m\nruntime=50ms\ntime_based\n",
    );
    let d = dir.path().to_str().unwrap();
    let o = sluice(&["run", &job, "-q", "-D", d, "--keep-files"]);
    if no_io_uring(&o) {
        return;
    }
    assert!(o.status.success(), "{}", stderr(&o));
    let file = dir.path().join("w.0.0");
    assert_eq!(std::fs::metadata(&file).unwrap().len(), 1 << 20);
    // The file under fio's name is the job's own layout: reused (said so), written,
    // and not removed (this run did not create it).
    let o = sluice(&["run", &job, "-D", d]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("reusing"), "{}", stderr(&o));
    assert!(file.exists());
    // Any other existing file is written only when told to.
    let named = write(
        dir.path(),
        "n.fio",
        "[w]\nrw=randwrite\nsize=1m\nruntime=50ms\ntime_based\nfilename=data\n",
    );
    std::fs::write(dir.path().join("data"), vec![7u8; 1 << 20]).unwrap();
    let o = sluice(&["run", &named, "-q", "-D", d]);
    assert_bad_input(&o, &["data", "exists", "--allow-write-existing"]);
    assert_eq!(
        std::fs::read(dir.path().join("data")).unwrap(),
        vec![7u8; 1 << 20]
    );
    let o = sluice(&["run", &named, "-q", "-D", d, "--allow-write-existing"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(dir.path().join("data").exists());
}

#[test]
fn ctrl_c_stops_cleanly_with_the_results_so_far() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(
        dir.path(),
        "j.fio",
        "[r]\nrw=randread\nsize=4m\ntime_based\nruntime=60s\n",
    );
    let o = common::interrupt_when_ready(&["run", &job, "-q", "-D", dir.path().to_str().unwrap()]);
    if no_io_uring(&o) {
        return;
    }
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    assert!(stderr(&o).contains("interrupted"), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("Jobs") && out.contains("read"), "{out}");
    assert_eq!(names(dir.path()), vec!["j.fio"]);
}

#[test]
fn an_io_error_is_counted_and_reported_per_job() {
    // A file sluice did not create is read while the test truncates it to half its
    // size: the reads past the new end come back short and must be counted as errors,
    // not dropped; the reads of the first half still succeed. The truncation comes once
    // the run is under way (its readiness file), not after a guessed time.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("victim");
    std::fs::write(&file, vec![7u8; 4 << 20]).unwrap();
    let job = write(
        dir.path(),
        "j.fio",
        &format!(
            "[r]\ndirect=1\nrw=randread\nfilename={}\nsize=4m\ntime_based\nruntime=3s\n",
            file.display()
        ),
    );
    let json = dir.path().join("out.json");
    let ready = dir.path().join("ready");
    let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["run", &job, "-q", "-D", dir.path().to_str().unwrap()])
        .args(["--json", json.to_str().unwrap()])
        .env("SLUICE_READY_FILE", &ready)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The run lasts 3 s from its start, which comes before the readiness file: the
    // truncation below falls inside it unless this thread stalls for seconds.
    if !common::wait_for_file(&mut child, &ready) {
        let o = child.wait_with_output().unwrap();
        assert!(
            no_io_uring(&o),
            "the run ended without starting: {}",
            stderr(&o)
        );
        return;
    }
    std::fs::File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_len(2 << 20)
        .unwrap();
    let o = child.wait_with_output().unwrap();
    if no_io_uring(&o) {
        return;
    }
    // The run reports, then exits 1 (as fio exits non-zero when a job had errors).
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("I/O error(s)"), "{}", stderr(&o));
    assert!(stderr(&o).contains("job 'r'"), "{}", stderr(&o));
    assert!(stderr(&o).contains("short transfer"), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert!(v["jobs"][0]["error"].as_u64().unwrap() > 0);
    assert!(v["jobs"][0]["read"]["total_ios"].as_u64().unwrap() > 0);
    assert_eq!(v["runs"][0]["extra"]["io_errors"][0]["job"], "r");
}

#[test]
fn missing_directory_is_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(dir.path(), "j.fio", "[r]\nrw=randread\nsize=1m\n");
    let missing = dir.path().join("nope");
    let o = sluice(&["run", &job, "-D", missing.to_str().unwrap()]);
    assert_bad_input(&o, &["nope", "no such directory", "--directory"]);
    let o = sluice(&["run", &job, "-D", &job]);
    assert_bad_input(&o, &["not a directory"]);
}

#[test]
fn unwritable_directory_is_bad_input() {
    // /proc refuses new files even to root.
    let dir = tempfile::tempdir().unwrap();
    let job = write(dir.path(), "j.fio", "[r]\nrw=randread\nsize=1m\n");
    let o = sluice(&["run", &job, "-D", "/proc"]);
    assert_bad_input(&o, &["/proc", "job 'r'"]);
}

/// A ramfs mounted on a temporary directory (root only), unmounted on drop.
struct RamFs(tempfile::TempDir);

impl Drop for RamFs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0.path()).status();
    }
}

#[test]
fn a_file_system_without_o_direct_is_bad_input() {
    // ramfs refuses O_DIRECT (tmpfs accepts it since Linux 6.6). Mounting one needs
    // root; elsewhere the check is unit-tested in sluice-engine.
    let dir = tempfile::tempdir().unwrap();
    let job = write(dir.path(), "j.fio", "[r]\nrw=randread\nsize=1m\n");
    let mnt = tempfile::tempdir().unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "ramfs", "ramfs"])
        .arg(mnt.path())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        eprintln!("cannot mount a ramfs here (not root?); skipping");
        return;
    }
    let fs = RamFs(mnt);
    let o = sluice(&["run", &job, "-D", fs.0.path().to_str().unwrap()]);
    assert_bad_input(&o, &["direct I/O", "ramfs", "--directory"]);
    assert!(names(fs.0.path()).is_empty(), "{:?}", names(fs.0.path()));
}

#[test]
fn too_little_free_space_is_bad_input_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(dir.path(), "j.fio", "[big]\nrw=randwrite\nsize=64t\n");
    let o = sluice(&["run", &job, "-D", dir.path().to_str().unwrap()]);
    assert_bad_input(&o, &["need", "free", "size="]);
    assert_eq!(names(dir.path()), vec!["j.fio"]);
}

#[test]
fn misaligned_sizes_are_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let job = write(
        dir.path(),
        "a.fio",
        "[odd]\nrw=randread\nbs=1000\nsize=1m\n",
    );
    let o = sluice(&["run", &job, "-D", d]);
    assert_bad_input(&o, &["job 'odd'", "bs=1000", "logical block size"]);
    let job = write(dir.path(), "b.fio", "[off]\nrw=read\noffset=100\nsize=1m\n");
    let o = sluice(&["run", &job, "-D", d]);
    assert_bad_input(&o, &["job 'off'", "offset=100"]);
    assert_eq!(names(dir.path()), vec!["a.fio", "b.fio"]);
}

#[test]
fn a_block_device_needs_allow_device() {
    let Some(dev) = std::fs::read_dir("/sys/block").ok().and_then(|d| {
        d.filter_map(|e| e.ok())
            .map(|e| Path::new("/dev").join(e.file_name()))
            .find(|p| p.exists())
    }) else {
        eprintln!("no block device here");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let job = write(
        dir.path(),
        "j.fio",
        &format!("[dev]\nrw=randread\nfilename={}\nsize=1m\n", dev.display()),
    );
    let o = sluice(&["run", &job, "-D", dir.path().to_str().unwrap()]);
    assert_bad_input(&o, &["block device", "--allow-device"]);
}

#[test]
fn a_device_this_machine_lacks_is_refused_and_nothing_is_created_in_dev() {
    let dir = tempfile::tempdir().unwrap();
    let path = "/dev/sluice-no-such-nvme0n1";
    let job = write(
        dir.path(),
        "j.fio",
        &format!("[dev]\nrw=randread\nfilename={path}\nsize=1m\n"),
    );
    let o = sluice(&["run", &job, "-D", dir.path().to_str().unwrap()]);
    assert_bad_input(
        &o,
        &[
            path,
            "names a device that does not exist",
            "creates no files in /dev",
        ],
    );
    assert!(!Path::new(path).exists());
}

#[test]
fn bad_command_line_values_are_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(dir.path(), "j.fio", "[r]\nrw=randread\nsize=1m\n");
    let d = dir.path().to_str().unwrap();
    assert_bad_input(&sluice(&["run", &job, "-D", d, "--wrr", "1,2"]), &["--wrr"]);
    assert_bad_input(
        &sluice(&["run", &job, "-D", d, "--workers", "0"]),
        &["--workers"],
    );
    assert_bad_input(
        &sluice(&["run", &job, "-D", d, "--policy", "nosuch"]),
        &["unknown policy"],
    );
    assert_bad_input(
        &sluice(&["run", "/nonexistent/j.fio", "-D", d]),
        &["/nonexistent/j.fio"],
    );
    assert_eq!(names(dir.path()), vec!["j.fio"]);
}

#[test]
fn verify_checks_on_real_files_and_the_simulator_says_it_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let job = write(
        dir.path(),
        "v.fio",
        "[w]\nrw=write\nbs=4k\nsize=1m\niodepth=4\nverify=crc32c\n",
    );
    let o = sluice(&["run", &job, "-D", data.to_str().unwrap(), "--quiet"]);
    if no_io_uring(&o) {
        return;
    }
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{e}");
    assert!(
        e.contains("job 'w': verify=crc32c: 256 block(s) checked, 0 failed"),
        "{e}"
    );
    // The simulator: one line saying data is not modelled, and the run goes on.
    let o = sluice(&["sim", &job]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{e}");
    let lines: Vec<&str> = e.lines().filter(|l| l.contains("verify")).collect();
    assert_eq!(lines.len(), 1, "{e}");
    assert!(lines[0].contains("does not model data"), "{e}");
}

#[test]
fn a_corrupted_block_fails_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let w = write(
        dir.path(),
        "w.fio",
        "[w]\nfilename=data\nrw=write\nbs=4k\nsize=256k\nverify=md5\ndo_verify=0\n",
    );
    let o = sluice(&["run", &w, "-D", d, "--keep-files", "--quiet"]);
    if no_io_uring(&o) {
        return;
    }
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let path = dir.path().join("data");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[5 * 4096 + 7] ^= 1;
    std::fs::write(&path, bytes).unwrap();
    let r = write(
        dir.path(),
        "r.fio",
        "[r]\nfilename=data\nrw=read\nbs=4k\nsize=256k\nverify=md5\nverify_fatal=1\n",
    );
    let o = sluice(&["run", &r, "-D", d, "--quiet"]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(e.contains("6 block(s) checked, 1 failed; first: md5 verify failed on the block of 4096 bytes at file offset 20480"), "{e}");
    assert!(e.contains("1 block(s) failed verification"), "{e}");
}

#[test]
fn fio_logs_on_real_files() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let d = dir.path().display().to_string();
    let job = write(
        dir.path(),
        "l.fio",
        &format!("[r]\nrw=randread\nsize=4m\nnumber_ios=300\nwrite_lat_log={d}/r\n"),
    );
    let o = sluice(&["run", &job, "-D", data.to_str().unwrap(), "--quiet"]);
    if no_io_uring(&o) {
        return;
    }
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = std::fs::read_to_string(dir.path().join("r_lat.1.log")).unwrap();
    assert_eq!(text.lines().count(), 300);
    let mut last = 0;
    for l in text.lines() {
        let cols: Vec<u64> = l.split(", ").map(|c| c.parse().unwrap()).collect();
        assert_eq!(cols.len(), 5);
        assert!(cols[0] >= last && cols[1] > 0, "{l}");
        last = cols[0];
    }
}

/// Item 10 of the bad-input review: paths that cannot be used say why — a directory
/// that refuses new files (/proc), a symbolic link to nothing where a job file goes,
/// a log prefix whose file names are too long (before the run, not after it).
#[test]
fn unusable_paths_say_why_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(dir.path(), "a.fio", "[w]\nrw=randwrite\nbs=4k\nsize=1m\n");
    let o = sluice(&["run", &job, "-D", "/proc"]);
    assert_bad_input(&o, &["/proc", "refuses new files", "pseudo file system"]);
    assert!(!stderr(&o).contains("subdirectory"), "{}", stderr(&o));

    let d = dir.path().join("links");
    std::fs::create_dir(&d).unwrap();
    std::os::unix::fs::symlink("/nonexistent-sluice-target", d.join("w.0.0")).unwrap();
    let o = sluice(&["run", &job, "-D", d.to_str().unwrap()]);
    assert_bad_input(&o, &["w.0.0", "symbolic link to a missing file"]);
    assert!(
        std::fs::symlink_metadata(d.join("w.0.0")).is_ok(),
        "the link stays"
    );

    let long = format!("{}/{}", dir.path().display(), "x".repeat(300));
    let job = write(
        dir.path(),
        "b.fio",
        &format!("[w]\nrw=randwrite\nbs=4k\nsize=1m\nwrite_bw_log={long}\n"),
    );
    let d = dir.path().to_str().unwrap();
    for args in [vec!["sim", &job], vec!["run", &job, "-D", d]] {
        let o = sluice(&args);
        assert_bad_input(&o, &["write_bw_log", "limit of 255", "shorter prefix"]);
        assert!(!stderr(&o).contains("I/Os in"), "refused before the run");
    }
}

/// Ctrl-C while the files are laid out: exit 130 as any interrupted run, the files
/// removed, and the JSON report written (with no runs). The signal goes once sluice
/// says it is laying out; if the layout finished first, the run itself is interrupted
/// (also 130), so the test holds either way.
#[test]
fn ctrl_c_during_layout_exits_130_with_a_report() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let job = write(
        dir.path(),
        "big.fio",
        "[w]\nrw=randread\nbs=4k\nsize=1g\ntime_based\nruntime=60\n",
    );
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let json = dir.path().join("out.json");
    let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["run", &job, "-D", data.to_str().unwrap(), "--json"])
        .arg(&json)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    let mut line = String::new();
    while err.read_line(&mut line).unwrap() > 0 {
        seen.push_str(&line);
        if line.contains("laying out") {
            break;
        }
        line.clear();
    }
    if !seen.contains("laying out") {
        let o = child.wait_with_output().unwrap();
        if no_io_uring(&o) || seen.contains("cannot create an io_uring") {
            return;
        }
        panic!("no layout line: {seen}");
    }
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    let status = child.wait().unwrap();
    seen.push_str(&rest);
    assert_eq!(status.code(), Some(130), "{seen}");
    assert!(!seen.contains("panicked"), "{seen}");
    assert!(json.exists(), "the JSON report is written: {seen}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    if seen.contains("while laying out") {
        assert!(seen.contains("interrupted before anything ran"), "{seen}");
        assert!(seen.contains("nothing was measured"), "{seen}");
        assert!(v.is_object(), "{v}");
    }
    assert!(names(&data).is_empty(), "files removed: {:?}", names(&data));
}
