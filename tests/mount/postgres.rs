//! PostgreSQL on the mount (issue 39's smoke test): the server starts with its data
//! directory on `sluice mount --classes experiments/real/postgres-classes.toml`,
//! `pgbench -i` and a 10-second `pgbench` run succeed, a forced CHECKPOINT makes the
//! checkpointer write, and the report at unmount shows the backends' I/O as critical
//! and the checkpointer's as idle (background).
//!
//! Needs root (PostgreSQL runs as the `postgres` user, started with `runuser`) and
//! Debian's PostgreSQL (`/usr/lib/postgresql/N/bin`; `.ci/run` installs it). Skipped,
//! saying why, without them — a failure under `CI=true`.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::{self, Mounted};

fn skip_or_fail(why: &str) {
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("CI=true but the PostgreSQL smoke test cannot run: {why}");
    }
    eprintln!("SKIPPED: PostgreSQL on the mount: {why}");
}

/// The newest `/usr/lib/postgresql/N/bin` with `pg_ctl` in it.
fn pg_bin() -> Option<PathBuf> {
    let mut v: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| {
            let e = e.ok()?;
            let n = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("pg_ctl").is_file().then_some((n, bin))
        })
        .collect();
    v.sort();
    v.pop().map(|(_, b)| b)
}

fn id_of(user: &str) -> Option<(u32, u32)> {
    let q = |flag: &str| -> Option<u32> {
        let o = Command::new("id").args([flag, user]).output().ok()?;
        String::from_utf8(o.stdout).ok()?.trim().parse().ok()
    };
    Some((q("-u")?, q("-g")?))
}

fn ok(out: Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what} failed ({}): {}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A running server; stopped (immediately) if the test fails before it does.
struct Server {
    bin: PathBuf,
    data: PathBuf,
    running: bool,
}

impl Server {
    fn ctl(&self, args: &[&str]) -> Output {
        Command::new("runuser")
            .args(["-u", "postgres", "--"])
            .arg(self.bin.join("pg_ctl"))
            .arg("-D")
            .arg(&self.data)
            .args(args)
            .current_dir("/")
            .output()
            .expect("run pg_ctl")
    }
    fn stop(&mut self) {
        ok(
            self.ctl(&["-m", "fast", "-w", "-t", "60", "stop"]),
            "pg_ctl stop",
        );
        self.running = false;
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.running {
            let _ = self.ctl(&["-m", "immediate", "-w", "-t", "30", "stop"]);
        }
    }
}

#[test]
fn postgres_runs_pgbench_on_the_mount_with_its_processes_classed() {
    if !support::fuse_ready() {
        return;
    }
    // SAFETY: a plain system call.
    if unsafe { libc::geteuid() } != 0 {
        return skip_or_fail("not root (runuser -u postgres needs it)");
    }
    let Some(bin) = pg_bin() else {
        return skip_or_fail(
            "PostgreSQL is not installed (apt-get install postgresql; .ci/run does it)",
        );
    };
    let Some((uid, gid)) = id_of("postgres") else {
        return skip_or_fail("no postgres user (the postgresql package makes it)");
    };
    let rules =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments/real/postgres-classes.toml");
    let Some(m) = Mounted::new(&["--policy", "rcp", "--classes", rules.to_str().unwrap()]) else {
        return;
    };
    // The temporary directory holding BACKING and MOUNTPOINT: traversable by postgres.
    let top = m.backing.parent().unwrap().to_path_buf();
    std::fs::set_permissions(&top, std::fs::Permissions::from_mode(0o755)).unwrap();
    let sock = top.join("sock");
    std::fs::create_dir(&sock).unwrap();
    let data = m.m("pgdata");
    std::fs::create_dir(&data).unwrap();
    for d in [&sock, &data] {
        std::os::unix::fs::chown(d, Some(uid), Some(gid)).unwrap();
    }
    let as_pg = |prog: &str| {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"])
            .arg(bin.join(prog))
            .current_dir("/");
        c
    };
    ok(
        as_pg("initdb")
            .args(["-A", "trust", "-U", "postgres", "-D"])
            .arg(&data)
            .output()
            .unwrap(),
        "initdb on the mount",
    );
    assert!(
        m.b("pgdata/PG_VERSION").is_file(),
        "initdb's files are on BACKING"
    );
    let log = sock.join("server.log");
    let mut server = Server {
        bin: bin.clone(),
        data: data.clone(),
        running: true,
    };
    // `pg_ctl -w` polls the server's readiness itself, bounded by -t.
    let opts = format!(
        "-k {} -p 5432 -c listen_addresses='' -c log_checkpoints=on",
        sock.display()
    );
    let started = server.ctl(&[
        "-w",
        "-t",
        "60",
        "-l",
        log.to_str().unwrap(),
        "-o",
        &opts,
        "start",
    ]);
    if !started.status.success() {
        server.running = false;
        panic!(
            "pg_ctl start on the mount failed: {}\nserver log: {}",
            String::from_utf8_lossy(&started.stderr),
            std::fs::read_to_string(&log).unwrap_or_default()
        );
    }
    let client = |prog: &str| {
        let mut c = as_pg(prog);
        c.arg("-h")
            .arg(&sock)
            .args(["-p", "5432", "-U", "postgres"]);
        c
    };
    ok(
        client("pgbench")
            .args(["-i", "-s", "1", "-q", "postgres"])
            .output()
            .unwrap(),
        "pgbench -i",
    );
    let run = ok(
        client("pgbench")
            .args(["-n", "-c", "4", "-j", "2", "-T", "10", "postgres"])
            .output()
            .unwrap(),
        "pgbench -T 10",
    );
    assert!(
        run.contains("number of failed transactions: 0"),
        "pgbench: {run}"
    );
    let tps: f64 = run
        .lines()
        .find_map(|l| l.strip_prefix("tps = "))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no tps in pgbench's output: {run}"));
    assert!(tps > 0.0, "pgbench: {run}");
    ok(
        client("psql")
            .args(["-XAtq", "-d", "postgres", "-c", "CHECKPOINT"])
            .output()
            .unwrap(),
        "CHECKPOINT",
    );
    server.stop();
    let end = m.unmount();
    assert!(end.ok, "sluice mount: {}", end.stderr);
    let json = end.json.expect("--json written at unmount");
    let jobs = json["jobs"].as_array().unwrap();
    // I/Os of a flow and class (read, write and sync jobs alike).
    let ios = |flow: &str, class: &str, op: &str| -> u64 {
        jobs.iter()
            .filter(|j| j["flow"] == flow && j["class"] == class)
            .filter(|j| j["jobname"].as_str().unwrap().ends_with(&format!("/{op}")))
            .map(|j| j[op]["total_ios"].as_u64().unwrap_or(0))
            .sum()
    };
    // Written data: a write job's writes (direct opens), or the cache's writeback
    // charged to the flow that made it go out (fsync, the dirty limits).
    let writes = |flow: &str, class: &str| -> u64 {
        ["write", "writeback"]
            .iter()
            .map(|kind| {
                jobs.iter()
                    .filter(|j| j["flow"] == flow && j["class"] == class)
                    .filter(|j| {
                        j["jobname"]
                            .as_str()
                            .unwrap()
                            .ends_with(&format!("/{kind}"))
                    })
                    .map(|j| j["write"]["total_ios"].as_u64().unwrap_or(0))
                    .sum::<u64>()
            })
            .sum()
    };
    let names: Vec<_> = jobs
        .iter()
        .map(|j| format!("{} {}", j["jobname"], j["class"]))
        .collect();
    assert!(
        writes("pg-backends", "critical") > 0 && ios("pg-backends", "critical", "sync") > 0,
        "the backends' writes and WAL flushes are critical: {names:?}"
    );
    assert!(
        writes("pg-checkpointer", "idle") > 0,
        "the checkpointer's writes are idle (background): {names:?}"
    );
    for j in jobs {
        let f = j["flow"].as_str().unwrap();
        assert!(
            !f.starts_with("postgres."),
            "every postgres process matched a rule: {f} ({})",
            j["class"]
        );
        if f != "pg-backends" && f.starts_with("pg-") {
            assert_eq!(j["class"], "idle", "{f} is background");
        }
    }
}
