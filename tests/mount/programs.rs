//! Real programs (fio with verify, sqlite3), classes and tables, errors and faults.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::process::Command;

use crate::pattern;
use crate::support::{self, need, sluice, Mounted};

fn run_ok(cmd: &mut Command) -> String {
    let out = cmd.output().expect("run the program");
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn fio_verifies_its_data_through_the_mount() {
    fio_verify(&["--transport", "dev"]);
}

/// fio's crc32c verify through a mount made with `args`, psync and io_uring, buffered
/// and direct; returns what the daemon printed at unmount.
pub(crate) fn fio_verify(args: &[&str]) -> Option<support::Ended> {
    if !support::fuse_ready() || !need("fio") {
        return None;
    }
    let mut all = vec!["--policy", "rcp"];
    all.extend_from_slice(args);
    let m = Mounted::new(&all)?;
    for (engine, depth) in [("psync", 1), ("io_uring", 16)] {
        for direct in [0, 1] {
            let name = format!("v-{engine}-{direct}");
            let out = run_ok(
                Command::new("fio")
                    .arg(format!("--name={name}"))
                    .arg(format!("--directory={}", m.mnt.display()))
                    .args(["--size=8m", "--bs=4k", "--rw=randwrite", "--verify=crc32c"])
                    .args(["--do_verify=1", "--verify_fatal=1", "--output-format=terse"])
                    // No verify-state file left in the working directory.
                    .arg("--verify_state_save=0")
                    .arg(format!("--ioengine={engine}"))
                    .arg(format!("--iodepth={depth}"))
                    .arg(format!("--direct={direct}")),
            );
            // terse: field 5 is the error code.
            let err = out.split(';').nth(4).unwrap_or("?");
            assert_eq!(err, "0", "fio {name}: {out}");
            assert_eq!(
                fs::metadata(m.b(&format!("{name}.0.0"))).unwrap().len(),
                8 << 20
            );
        }
    }
    let end = m.unmount();
    assert!(end.ok, "{}", end.stderr);
    // The buffered jobs went through the page cache: fio's verify pass read its
    // pages back from it, and the flusher or fio's close wrote them back.
    let cache =
        &end.json.as_ref().expect("the JSON report")["runs"][0]["extra"]["runtime"]["cache"];
    assert!(
        cache["hits"].as_u64().unwrap_or(0) > 0,
        "cache hits: {cache}"
    );
    assert!(
        cache["writebacks"].as_u64().unwrap_or(0) > 0,
        "writebacks: {cache}"
    );
    Some(end)
}

#[test]
fn sqlite_keeps_an_intact_database_on_the_mount() {
    sqlite_intact(&["--transport", "dev"]);
}

/// sqlite3 builds, changes and vacuums a database on a mount made with `args`; its
/// integrity is checked there and on the backing file. Returns the daemon's output.
pub(crate) fn sqlite_intact(args: &[&str]) -> Option<support::Ended> {
    if !support::fuse_ready() || !need("sqlite3") {
        return None;
    }
    let mut all = vec!["--policy", "none"];
    all.extend_from_slice(args);
    let m = Mounted::new(&all)?;
    let db = m.m("app.db");
    let sql = "PRAGMA journal_mode=DELETE;
        CREATE TABLE t(id INTEGER PRIMARY KEY, k TEXT, v BLOB);
        CREATE INDEX tk ON t(k);
        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < 20000)
          INSERT INTO t(k, v) SELECT hex(randomblob(8)), randomblob(300) FROM n;
        DELETE FROM t WHERE id % 3 = 0;
        UPDATE t SET v = randomblob(500) WHERE id % 5 = 0;
        VACUUM;
        PRAGMA integrity_check;
        SELECT count(*) FROM t;";
    let out = run_ok(Command::new("sqlite3").arg(&db).arg(sql));
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines.contains(&"ok"), "integrity_check: {out}");
    assert_eq!(lines.last(), Some(&"13334"), "{out}");
    let backing_db = m.b("app.db");
    let end = m.unmount();
    assert!(end.ok, "{}", end.stderr);
    // The backing file is the same intact database.
    let out = run_ok(
        Command::new("sqlite3")
            .arg(&backing_db)
            .arg("PRAGMA integrity_check;"),
    );
    assert_eq!(out.trim(), "ok");
    Some(end)
}

/// A mount under `policy` with the classes file `rules` (kept in the directory returned)
/// and no page cache: the callers' own I/O reaches the device (with one, their writes
/// reach it as the flusher's). `None`: the test must skip.
fn mount_with_rules(policy: &str, rules: &str) -> Option<(tempfile::TempDir, Mounted)> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("classes.toml");
    fs::write(&path, rules).unwrap();
    let m = Mounted::new(&[
        "--policy",
        policy,
        "--cache",
        "0",
        "--classes",
        path.to_str().unwrap(),
    ])?;
    Some((dir, m))
}

#[test]
fn callers_classes_and_rules_reach_the_tables() {
    if !support::fuse_ready() || !support::on_path("ionice") {
        eprintln!("SKIPPED: ionice or FUSE missing");
        return;
    }
    let Some((_rules, m)) = mount_with_rules(
        "d2fq",
        "[[rule]]\ncomm = \"dd\"\ncmdline = \"of=/dev/null\"\nflow = \"never\"\nclass = \"idle\"\n\
         [[rule]]\ncomm = \"cat\"\nflow = \"readers\"\nweight = 7\n",
    ) else {
        return;
    };
    let dd = |class: &str, name: &str| {
        run_ok(
            Command::new("ionice")
                .args([
                    "-c",
                    class,
                    "dd",
                    "if=/dev/zero",
                    "bs=4k",
                    "count=16",
                    "status=none",
                ])
                .arg(format!("of={}", m.m(name).display())),
        )
    };
    dd("1", "crit");
    dd("3", "idle");
    dd("2", "be");
    run_ok(Command::new("cat").arg(m.m("crit")));
    let end = m.unmount();
    assert!(end.ok, "{}", end.stderr);
    assert!(
        end.stdout.contains("Classes"),
        "the tables at unmount: {}",
        end.stdout
    );
    let json = end.json.expect("--json written at unmount");
    let jobs = json["jobs"].as_array().unwrap();
    let class_of = |flow_prefix: &str, class: &str| {
        jobs.iter()
            .any(|j| j["flow"].as_str().unwrap().starts_with(flow_prefix) && j["class"] == class)
    };
    assert!(
        class_of("dd.", "critical"),
        "ionice -c1 → critical: {jobs:?}"
    );
    assert!(class_of("dd.", "idle"), "ionice -c3 → idle");
    assert!(class_of("dd.", "normal"), "ionice -c2 → normal");
    assert!(class_of("readers", "normal"), "the rule's flow for cat");
    assert!(
        !class_of("never", "idle"),
        "a rule that does not match changes nothing"
    );
    let flows = json["runs"][0]["flows"].as_array().unwrap();
    let readers = flows
        .iter()
        .find(|f| f["name"] == "readers" || f["flow"] == "readers");
    assert!(readers.is_some(), "flow 'readers' in {flows:?}");
}

#[test]
fn path_rules_class_a_files_io_whoever_issues_it() {
    if !support::fuse_ready() {
        return;
    }
    let Some((_rules, m)) = mount_with_rules(
        "rcp",
        "[[rule]]\npath = \"wal/*\"\nclass = \"critical\"\nflow = \"wal\"\n",
    ) else {
        return;
    };
    fs::create_dir(m.m("wal")).unwrap();
    // The same process (this test) writes both files, with no I/O priority set.
    fs::write(m.m("wal/000001"), vec![7u8; 64 << 10]).unwrap();
    fs::write(m.m("table"), vec![9u8; 64 << 10]).unwrap();
    let wal_backing = m.b("wal/000001");
    let end = m.unmount();
    assert!(end.ok, "{}", end.stderr);
    let json = end.json.expect("--json written at unmount");
    let jobs = json["jobs"].as_array().unwrap();
    let wal: Vec<_> = jobs.iter().filter(|j| j["flow"] == "wal").collect();
    assert!(
        !wal.is_empty() && wal.iter().all(|j| j["class"] == "critical"),
        "the log's writes in flow 'wal', critical: {jobs:?}"
    );
    assert!(
        jobs.iter()
            .any(|j| j["flow"] != "wal" && j["class"] == "normal"),
        "the table's writes keep the caller's own class: {jobs:?}"
    );
    assert_eq!(fs::read(wal_backing).unwrap(), vec![7u8; 64 << 10]);
}

#[test]
fn bad_input_gets_a_clear_error() {
    if !support::fuse_ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file");
    fs::write(&file, b"").unwrap();
    let mnt = dir.path().join("mnt");
    fs::create_dir(&mnt).unwrap();
    let fail = |args: &[&std::ffi::OsStr], want: &str| {
        let out = sluice().arg("mount").args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} succeeded");
        assert!(err.contains(want), "{args:?}: wanted '{want}' in: {err}");
    };
    let (d, f, mp) = (dir.path().as_os_str(), file.as_os_str(), mnt.as_os_str());
    let missing = dir.path().join("nope");
    fail(&[f, mp], "is not a directory");
    fail(&[missing.as_os_str(), mp], "give an existing directory");
    fail(&[d, missing.as_os_str()], "mkdir -p");
    fail(&[mp, d], "inside MOUNTPOINT");
    let inner = dir.path().join("mnt/inner");
    fs::create_dir(&inner).unwrap();
    fail(&[d, inner.as_os_str()], "inside BACKING");
    let b = dir.path().join("b");
    fs::create_dir(&b).unwrap();
    fail(
        &[b.as_os_str(), mp, "--policy".as_ref(), "nosuch".as_ref()],
        "--policy",
    );
    fail(
        &[b.as_os_str(), mp, "--cache".as_ref(), "1k".as_ref()],
        "at least 64k",
    );
    fail(
        &[b.as_os_str(), mp, "--cache".as_ref(), "lots".as_ref()],
        "--cache: cannot read 'lots' as a size",
    );
    let bad = dir.path().join("bad.toml");
    fs::write(&bad, "[[rule]]\nclass = \"idle\"\n").unwrap();
    fail(
        &[b.as_os_str(), mp, "--classes".as_ref(), bad.as_os_str()],
        "rule 1 matches everything",
    );
    // Not root and no fusermount3 (as nobody, with an empty PATH; only root can
    // switch users).
    // SAFETY: a plain system call.
    if unsafe { libc::geteuid() } == 0 {
        use std::os::unix::process::CommandExt;
        let out = sluice()
            .arg("mount")
            .arg(&b)
            .arg(&mnt)
            .env("PATH", "/nonexistent")
            .uid(65534)
            .gid(65534)
            .output();
        match out {
            // Nobody may not reach the binary (a checkout under /root): nothing to check.
            Err(e) => eprintln!("SKIPPED: the not-root check: nobody cannot run sluice: {e}"),
            Ok(out) => {
                let err = String::from_utf8_lossy(&out.stderr);
                assert!(!out.status.success());
                assert!(
                    err.contains("not root and no fusermount3") || err.contains("ermission denied"),
                    "{err}"
                );
            }
        }
    }
    // A mount point in use.
    let Some(m) = Mounted::new(&[]) else { return };
    fail(&[b.as_os_str(), m.mnt.as_os_str()], "busy");
    let end = m.unmount();
    assert!(end.ok);
}

#[test]
fn kill_9_after_fsync_loses_nothing_and_the_dead_mount_says_how_to_clean_up() {
    let Some(mut m) = Mounted::new(&["--policy", "none"]) else {
        return;
    };
    let data = pattern(42, (3 << 20) + 123);
    {
        let mut f = File::create(m.m("durable")).unwrap();
        f.write_all(&data).unwrap();
        f.sync_all().unwrap();
    }
    m.kill9();
    assert_eq!(
        fs::read(m.b("durable")).unwrap(),
        data,
        "the fsynced data is on BACKING"
    );
    // Over io_uring (`auto` picks it while a test of tests/mount/uring.rs holds the
    // kernel's switch on) the dead daemon's ring is torn down by a kernel worker after
    // the process is gone, and the kernel's attribute cache may answer until then:
    // asked again until the connection is seen dead (bounded only to catch a mount
    // that stays alive; not a timing). A request caught in that teardown is ended with
    // ECONNABORTED (the kernel aborts the connection's requests in flight; seen now
    // and then over the ring): asked again, the dead mount answers ENOTCONN.
    let t0 = std::time::Instant::now();
    let e = loop {
        let more = t0.elapsed() < std::time::Duration::from_secs(300);
        match fs::metadata(&m.mnt) {
            Err(e) if e.raw_os_error() == Some(libc::ECONNABORTED) && more => {}
            Err(e) => break e,
            Ok(_) if more => std::thread::sleep(std::time::Duration::from_millis(10)),
            Ok(_) => panic!("the mount of the killed daemon still answers"),
        }
    };
    assert_eq!(
        e.raw_os_error(),
        Some(libc::ENOTCONN),
        "the dead mount answers ENOTCONN"
    );
    let out = sluice()
        .arg("mount")
        .arg(&m.backing)
        .arg(&m.mnt)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("fusermount3 -u"),
        "says how to clean up: {err}"
    );
    // Drop unmounts the dead mount.
}

#[test]
fn enospc_from_the_backing_fs_reaches_the_caller() {
    // SAFETY: a plain system call.
    if unsafe { libc::geteuid() } != 0 || !support::fuse_ready() {
        eprintln!("SKIPPED: needs root to mount a small tmpfs as BACKING");
        return;
    }
    let Some(m) = Mounted::new(&[]) else { return };
    // Remount: stop this one, put a 1 MiB tmpfs under a fresh BACKING.
    let end = m.unmount();
    assert!(end.ok, "{}", end.stderr);
    let dir = tempfile::tempdir().unwrap();
    let small = dir.path().join("small");
    fs::create_dir(&small).unwrap();
    let st = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
        .arg(&small)
        .status()
        .unwrap();
    assert!(st.success(), "mount tmpfs");
    struct Umount<'a>(&'a Path);
    impl Drop for Umount<'_> {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg("-l").arg(self.0).status();
        }
    }
    let _u = Umount(&small);
    let mnt = dir.path().join("mnt");
    fs::create_dir(&mnt).unwrap();
    // Direct (no page cache): the write that does not fit fails. Through the page
    // cache: the writes land in the cache, and the fsync that writes them back fails.
    for cache in ["0", "16m"] {
        let m = Mounted::on(small.clone(), mnt.clone(), &["--cache", cache]);
        let mut f = File::create(m.m("big")).unwrap();
        let chunk = vec![7u8; 256 << 10];
        let mut err = None;
        for _ in 0..16 {
            if let Err(e) = f.write_all(&chunk) {
                err = Some(e);
                break;
            }
        }
        if cache != "0" && err.is_none() {
            err = f.sync_all().err();
        }
        let e = err.expect("a 4 MiB file does not fit a 1 MiB tmpfs");
        assert_eq!(e.raw_os_error(), Some(libc::ENOSPC), "--cache {cache}: {e}");
        drop(f);
        let end = m.unmount();
        assert!(end.ok, "{}", end.stderr);
        fs::remove_file(small.join("big")).unwrap();
    }
    // A sparse file longer than the file system: writes into its hole do not extend
    // it, and through the cache they too reserve their blocks, so the `write(2)`
    // itself says ENOSPC (before, the writes landed in the cache, the writeback failed
    // and the writer waited at its dirty limit for room that never came).
    fs::File::create(small.join("sparse"))
        .unwrap()
        .set_len(64 << 20)
        .unwrap();
    let m = Mounted::on(small.clone(), mnt.clone(), &["--cache", "16m"]);
    let mut f = OpenOptions::new().write(true).open(m.m("sparse")).unwrap();
    let chunk = vec![7u8; 256 << 10];
    let mut written = 0u64;
    let e = loop {
        match f.write_all(&chunk) {
            Ok(()) => written += chunk.len() as u64,
            Err(e) => break e,
        }
        assert!(
            written < 64 << 20,
            "64 MiB written into a 1 MiB file system"
        );
    };
    assert_eq!(
        e.raw_os_error(),
        Some(libc::ENOSPC),
        "the write's own error: {e}"
    );
    assert!(
        written <= 1 << 20,
        "{written} bytes acknowledged on a 1 MiB tmpfs"
    );
    // What was acknowledged is there once synced.
    f.sync_all().unwrap();
    drop(f);
    let end = m.unmount();
    assert!(end.ok, "{}", end.stderr);
    let on_backing = fs::read(small.join("sparse")).unwrap();
    assert!(on_backing[..written as usize].iter().all(|&b| b == 7));
}

#[test]
fn sigterm_unmounts_and_prints_the_tables() {
    let Some(m) = Mounted::new(&["--policy", "ld"]) else {
        return;
    };
    fs::write(m.m("f"), pattern(3, 100_000)).unwrap();
    assert_eq!(fs::read(m.m("f")).unwrap(), pattern(3, 100_000));
    let mnt = m.mnt.clone();
    let end = m.terminate();
    assert!(end.ok, "{}", end.stderr);
    assert!(!support::is_mounted(&mnt), "SIGTERM unmounted");
    assert!(
        end.stdout.contains("policy ld") && end.stdout.contains("Flows"),
        "{}",
        end.stdout
    );
    let json = end.json.expect("--json written");
    assert_eq!(json["runs"][0]["policy"], "ld");
    let bytes: u64 = json["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["write"]["io_bytes"].as_u64().unwrap_or(0))
        .sum();
    assert!(
        bytes >= 100_000,
        "the writes are in the report ({bytes} bytes)"
    );
}

/// `--stats`: after I/O of a plain (best-effort) and an idle (`ionice -c3`) caller, the
/// live view's lines name both classes with a non-zero rate (the last, partial interval
/// is printed at unmount, so the test needs no wait).
#[test]
fn stats_show_each_flow_and_class_that_did_io() {
    if !support::fuse_ready() {
        eprintln!("SKIPPED: FUSE missing");
        return;
    }
    let Some(m) = Mounted::new(&["--stats", "0.1"]) else {
        return;
    };
    let data = pattern(7, 1 << 20);
    fs::write(m.m("f"), &data).unwrap();
    assert_eq!(fs::read(m.m("f")).unwrap(), data);
    if support::on_path("ionice") {
        let st = Command::new("ionice")
            .args(["-c", "3", "cat"])
            .arg(m.m("f"))
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(st.success());
    }
    let end = m.unmount();
    assert!(end.ok, "{}", end.stderr);
    let rate = |class: &str| -> f64 {
        end.stderr
            .lines()
            .filter(|l| l.starts_with("sluice stats:") && l.contains(&format!(" {class} ")))
            .filter_map(|l| l.split_whitespace().nth(3)?.parse::<f64>().ok())
            .fold(0.0, f64::max)
    };
    assert!(rate("normal") > 0.0, "no normal line: {}", end.stderr);
    if support::on_path("ionice") {
        assert!(rate("idle") > 0.0, "no idle line: {}", end.stderr);
        // Each line names its flow: here the process, `comm.pid`.
        assert!(
            end.stderr.lines().any(|l| l.starts_with("sluice stats:")
                && l.contains(" idle ")
                && l.split_whitespace()
                    .last()
                    .is_some_and(|f| f.starts_with("cat."))),
            "the idle line names cat's flow: {}",
            end.stderr
        );
    }
    assert!(!end.stderr.contains("critical"), "{}", end.stderr);
}

#[test]
fn a_bad_stats_interval_is_refused() {
    let out = sluice()
        .args(["mount", "/nonexistent-b", "/nonexistent-m", "--stats", "0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--stats 0") && err.contains("0.1 to 3600"),
        "{err}"
    );
}

#[test]
fn a_ring_cap_outside_its_range_is_refused() {
    for bad in ["0", "256"] {
        let out = sluice()
            .args([
                "mount",
                "/nonexistent-b",
                "/nonexistent-m",
                "--ring-cap",
                bad,
            ])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("--ring-cap {bad}")) && err.contains("1..=255"),
            "{err}"
        );
    }
}

/// Cases the pjdfstest POSIX suite found (scripts/posix-suite.sh, docs/mount.md
/// "POSIX conformance"): a caller's umask 0 keeps a create's mode whole (the daemon
/// must not mask it again), a symlink's own times can be set (utimensat
/// AT_SYMLINK_NOFOLLOW), another user's write clears set-user-ID, and a truncation past what a file can hold is EFBIG, not EIO.
#[test]
fn posix_suite_umask_setid_symlink_times_and_efbig() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let Some(m) = Mounted::new(&["--policy", "none"]) else {
        return;
    };
    let (f, d) = (crate::cstr(&m.m("f")), crate::cstr(&m.m("d")));
    // The umask is the caller's: in a child (it is process-wide), umask 0.
    let code = crate::in_child(|| {
        // SAFETY: async-signal-safe calls on valid C strings.
        unsafe {
            libc::umask(0);
            let fd = libc::open(f.as_ptr(), libc::O_CREAT | libc::O_WRONLY, 0o4777);
            if fd < 0 || libc::close(fd) != 0 {
                return 1;
            }
            if libc::mkdir(d.as_ptr(), 0o777) != 0 {
                return 2;
            }
        }
        0
    });
    assert_eq!(code, 0, "create and mkdir with umask 0 on the mount");
    let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode(&m.b("f")), 0o4777, "a create's mode with umask 0");
    assert_eq!(mode(&m.b("d")), 0o777, "a mkdir's mode with umask 0");

    std::os::unix::fs::symlink("f", m.m("l")).unwrap();
    let l = crate::cstr(&m.m("l"));
    let ts = [
        libc::timespec {
            tv_sec: 1_960_000_000,
            tv_nsec: 0,
        },
        libc::timespec {
            tv_sec: 1_970_000_000,
            tv_nsec: 0,
        },
    ];
    // SAFETY: a valid C string and two timespecs.
    let r = unsafe {
        libc::utimensat(
            libc::AT_FDCWD,
            l.as_ptr(),
            ts.as_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    assert_eq!(
        r,
        0,
        "utimensat AT_SYMLINK_NOFOLLOW: {}",
        std::io::Error::last_os_error()
    );
    let lm = fs::symlink_metadata(m.b("l")).unwrap();
    assert_eq!((lm.atime(), lm.mtime()), (1_960_000_000, 1_970_000_000));
    assert_ne!(
        fs::metadata(m.b("f")).unwrap().mtime(),
        1_970_000_000,
        "not followed"
    );

    // A write by another user (no CAP_FSETID) clears set-user-ID.
    let code = crate::in_child(|| {
        // SAFETY: async-signal-safe calls on a valid C string and buffer.
        unsafe {
            if libc::setresgid(65534, 65534, 65534) != 0
                || libc::setresuid(65534, 65534, 65534) != 0
            {
                return 1;
            }
            let fd = libc::open(f.as_ptr(), libc::O_WRONLY);
            if fd < 0 || libc::write(fd, b"x".as_ptr().cast(), 1) != 1 || libc::close(fd) != 0 {
                return 2;
            }
        }
        0
    });
    assert_eq!(code, 0, "another user's write on the mount");
    assert_eq!(
        mode(&m.b("f")),
        0o777,
        "set-user-ID cleared by another user's write"
    );
    fs::OpenOptions::new()
        .write(true)
        .open(m.m("f"))
        .unwrap()
        .set_len(0)
        .unwrap();

    // Open (so through the data path and its page cache) and by name.
    let open = fs::OpenOptions::new().write(true).open(m.m("f")).unwrap();
    let e = open.set_len(999_999_999_999_999).unwrap_err();
    assert_eq!(
        e.raw_os_error(),
        Some(libc::EFBIG),
        "ftruncate past the largest file"
    );
    drop(open);
    // SAFETY: a valid C string.
    let r = unsafe { libc::truncate(f.as_ptr(), 999_999_999_999_999) };
    let e = std::io::Error::last_os_error().raw_os_error();
    assert_eq!(
        (r, e),
        (-1, Some(libc::EFBIG)),
        "truncate past the largest file"
    );
    assert_eq!(fs::metadata(m.m("f")).unwrap().len(), 0);
}
