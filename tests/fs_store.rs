//! `--fs` on `sluice sim` and `sluice run`: fio job files on the journaled store, end
//! to end through the command, and stopped with Ctrl-C.

use crate::common;

use common::{refused, sluice, stderr, write};

const JOB: &str = "[w]\nrw=randwrite\nbs=4k\nsize=256k\nfsync=4\nnrfiles=2\nend_fsync=1\n";

#[test]
fn sim_on_the_store_reports_fio_sections_and_is_deterministic() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(dir.path(), "w.fio", JOB);
    let json = |fs: &str| {
        let o = sluice(&["sim", &job, "-q", "--fs", fs, "--output-format", "json"]);
        assert!(o.status.success(), "{}", stderr(&o));
        o.stdout
    };
    let a = json("fjournal");
    assert_eq!(a, json("fjournal"), "same seed, same bytes");
    let v: serde_json::Value = serde_json::from_slice(&a).unwrap();
    let w = &v["jobs"][0];
    assert_eq!(w["write"]["total_ios"], 64);
    // A sync after every 4 writes, and one per file at the end.
    assert_eq!(w["sync"]["total_ios"], 16 + 2);
    // Raw files run the same job through the simulator as before.
    let raw = json("raw");
    let v: serde_json::Value = serde_json::from_slice(&raw).unwrap();
    assert_eq!(v["jobs"][0]["write"]["total_ios"], 64);
}

#[test]
fn what_the_store_path_cannot_honour_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(dir.path(), "w.fio", JOB);
    refused(
        &sluice(&["sim", &job, "--fs", "host"]),
        &["without --fs", "fjournal"],
    );
    refused(
        &sluice(&["sim", &job, "--fs", "ext4"]),
        &["ext4", "compound"],
    );
    refused(
        &sluice(&["sim", &job, "--fs", "compound", "--alone"]),
        &["--alone"],
    );
    refused(
        &sluice(&["sim", &job, "--fs", "compound", "--faults", "media=0.1"]),
        &["--faults"],
    );
    let named = write(
        dir.path(),
        "f.fio",
        "[w]\nrw=write\nsize=64k\nfilename=data\n",
    );
    refused(
        &sluice(&["sim", &named, "--fs", "compound"]),
        &["job 'w'", "filename=data", "remove filename="],
    );
    refused(
        &sluice(&[
            "run",
            &job,
            "--fs",
            "compound",
            "-D",
            dir.path().to_str().unwrap(),
            "--workers",
            "2",
        ]),
        &["--workers"],
    );
    // A store file sluice did not create is never written.
    let image = dir.path().join("sluice-fio-store.img");
    std::fs::write(&image, b"not ours").unwrap();
    refused(
        &sluice(&[
            "run",
            &job,
            "--fs",
            "compound",
            "-D",
            dir.path().to_str().unwrap(),
        ]),
        &["sluice-fio-store.img", "exists"],
    );
    assert_eq!(std::fs::read(&image).unwrap(), b"not ours");
}

#[test]
fn buffered_reads_on_the_store_go_through_a_read_cache_of_the_page_cache_s_size() {
    let dir = tempfile::tempdir().unwrap();
    // 8 passes of random 4 KiB buffered reads over a 256 KiB file (64 blocks).
    let job = write(
        dir.path(),
        "r.fio",
        "[r]\nrw=randread\nbs=4k\nsize=256k\nloops=8\ndirect=0\n",
    );
    let mean = |cache: &str| {
        let o = sluice(&[
            "sim",
            &job,
            "-q",
            "--fs",
            "compound",
            "--page-cache",
            cache,
            "--output-format",
            "json",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["jobs"][0]["read"]["total_ios"], 512);
        v["jobs"][0]["read"]["lat_ns"]["mean"].as_f64().unwrap()
    };
    // The file fits a 64 MiB cache: after the first pass every read is a copy. A
    // 64 KiB cache (16 blocks) holds a quarter of it: nearly every read goes to the
    // device (QD1 on ull: ~10 µs).
    let (fits, thrashes) = (mean("64m"), mean("64k"));
    assert!(fits * 4.0 < thrashes, "{fits} ns vs {thrashes} ns");
    refused(
        &sluice(&["sim", &job, "--fs", "compound", "--single-dirty-limit"]),
        &["--single-dirty-limit", "+rcp"],
    );
}

#[test]
fn create_on_open_on_raw_files_says_it_is_not_acted_on() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(
        dir.path(),
        "c.fio",
        "[w]\nrw=write\nsize=64k\ncreate_on_open=1\n",
    );
    let o = sluice(&["sim", &job]);
    assert!(o.status.success());
    assert!(stderr(&o).contains("create_on_open=1 is acted on only on the journaled store"));
    // -q silences warnings.
    let o = sluice(&["sim", &job, "-q"]);
    assert!(!stderr(&o).contains("create_on_open"), "{}", stderr(&o));
    let o = sluice(&["sim", &job, "-q", "--fs", "compound"]);
    assert!(o.status.success());
    assert!(!stderr(&o).contains("create_on_open"), "{}", stderr(&o));
}

/// `sluice run JOB --fs fjournal -D DIR EXTRA…`; `None` (and the reason printed) where
/// io_uring or direct I/O is unavailable.
fn run_on_store(dir: &std::path::Path, job: &str, extra: &[&str]) -> Option<std::process::Output> {
    let mut args = vec!["run", job, "--fs", "fjournal", "-D", dir.to_str().unwrap()];
    args.extend_from_slice(extra);
    let o = sluice(&args);
    let e = stderr(&o);
    if !o.status.success() && (e.contains("io_uring") || e.contains("O_DIRECT")) {
        eprintln!("skipped: {e}");
        return None;
    }
    assert!(o.status.success(), "{e}");
    Some(o)
}

#[test]
fn run_on_the_store_in_a_temporary_directory() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(dir.path(), "w.fio", JOB);
    let Some(o) = run_on_store(dir.path(), &job, &["--output-format", "json"]) else {
        return;
    };
    let e = stderr(&o);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["jobs"][0]["sync"]["total_ios"], 18);
    assert_eq!(v["runs"][0]["extra"]["engine"], "io_uring");
    assert!(e.contains("removed the store"), "{e}");
    assert!(!dir.path().join("sluice-fio-store.img").exists());
}

/// Buffered reads on a real store go through its read cache as they do in simulation:
/// 8 passes over a 256 KiB file, all but the first pass from memory.
#[test]
fn buffered_reads_on_a_real_store_hit_its_read_cache() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(
        dir.path(),
        "r.fio",
        "[r]\nrw=randread\nbs=4k\nsize=256k\nloops=8\ndirect=0\n",
    );
    let Some(o) = run_on_store(dir.path(), &job, &["--output-format", "json"]) else {
        return;
    };
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["jobs"][0]["read"]["total_ios"], 512);
    let cache = &v["runs"][0]["extra"]["runtime"]["cache"];
    let (hits, misses) = (
        cache["hits"].as_u64().unwrap(),
        cache["misses"].as_u64().unwrap(),
    );
    // The 64 blocks miss at most once each (a read run counts one miss for its first
    // block); every other read is a hit.
    assert!(misses <= 64 && hits >= 512 - 64, "{cache}");
}

/// `sluice fsck` on the store a real run kept: consistent (exit 0), the image not
/// changed; a file that is no store is refused (exit 1); a missing one is bad input.
#[test]
fn fsck_checks_a_kept_store_without_changing_it() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(dir.path(), "w.fio", JOB);
    let d = dir.path().to_str().unwrap();
    if run_on_store(dir.path(), &job, &["--keep-files", "-q"]).is_none() {
        return;
    }
    let image = dir.path().join("sluice-fio-store.img");
    let before = std::fs::read(&image).unwrap();
    let o = sluice(&["fsck", image.to_str().unwrap()]);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{out}{}", stderr(&o));
    assert!(
        out.contains("metadata checksums")
            && out.contains("2 file(s) (")
            && out.contains("% non-contiguous)")
            && out.contains("consistent"),
        "{out}"
    );
    assert!(
        std::fs::read(&image).unwrap() == before,
        "fsck changed the image"
    );
    let not_a_store = write(dir.path(), "zeros.img", &"\0".repeat(1 << 20));
    let o = sluice(&["fsck", &not_a_store]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("no sluice store here"),
        "{}",
        stderr(&o)
    );
    refused(
        &sluice(&["fsck", &format!("{d}/missing.img")]),
        &["missing.img", "no such file"],
    );
}

/// A job that would run for days: only Ctrl-C ends it.
const LONG: &str = "[w]\nrw=randwrite\nbs=4k\nsize=1m\nfsync=8\nsluice_critical=1\n\
                    time_based\nruntime=100000s\n";

#[test]
fn ctrl_c_during_a_simulation_on_the_store_prints_what_was_measured() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(dir.path(), "long.fio", LONG);
    let o = common::interrupt_when_ready(&[
        "sim",
        &job,
        "-q",
        "--fs",
        "fjournal",
        "--output-format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("interrupted") && !e.contains("panicked"), "{e}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let w = &v["jobs"][0];
    assert!(w["write"]["total_ios"].as_u64().unwrap() > 0, "{w}");
    assert!(w["sync"]["total_ios"].as_u64().unwrap() > 0, "{w}");
    assert_eq!(v["runs"][0]["extra"]["runtime"]["interrupted"], true);
    // Without the stop, the same job's report has no such mark.
    let short = write(dir.path(), "short.fio", JOB);
    let o = sluice(&[
        "sim",
        &short,
        "-q",
        "--fs",
        "fjournal",
        "--output-format",
        "json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["runs"][0]["extra"]["runtime"]
        .get("interrupted")
        .is_none());
}

#[test]
fn ctrl_c_during_a_real_run_on_the_store_reports_and_removes_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(dir.path(), "long.fio", LONG);
    let d = dir.path().to_str().unwrap();
    let o = common::interrupt_when_ready(&["run", &job, "-q", "--fs", "fjournal", "-D", d]);
    let e = stderr(&o);
    if o.status.code() != Some(130) && (e.contains("io_uring") || e.contains("O_DIRECT")) {
        eprintln!("skipped: {e}");
        return;
    }
    assert_eq!(o.status.code(), Some(130), "{e}");
    assert!(e.contains("interrupted") && !e.contains("panicked"), "{e}");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("Jobs") && out.contains("write"), "{out}");
    // The store it made is gone; the job file is all that is left.
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["long.fio"]);
}
