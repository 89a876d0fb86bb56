//! A real `sluice mount` for a test: temporary BACKING and MOUNTPOINT, the daemon as a
//! child process, always unmounted at the end (`fusermount3 -u`, lazily if busy).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Whether mount tests can run here. Without `/dev/fuse` or `fusermount3` they are
/// skipped with the reason printed — except under `CI=true`, where that is a failure.
pub fn fuse_ready() -> bool {
    let why = if !Path::new("/dev/fuse").exists() {
        Some("/dev/fuse is absent")
    } else if !on_path("fusermount3") {
        Some("fusermount3 is not installed (apt-get install fuse3)")
    } else {
        None
    };
    match why {
        None => true,
        Some(w) if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("CI=true but the mount tests cannot run: {w}")
        }
        Some(w) => {
            eprintln!("SKIPPED: mount test: {w}");
            false
        }
    }
}

/// Whether `prog` is on the PATH (a program the test needs: fio, sqlite3). Under
/// `CI=true` a missing one is a failure.
pub fn need(prog: &str) -> bool {
    if on_path(prog) {
        return true;
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("CI=true but {prog} is not installed (.ci/run installs it)");
    }
    eprintln!("SKIPPED: {prog} is not installed");
    false
}

pub fn on_path(prog: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(prog).is_file()))
}

/// Whether `path` is a mount point now.
pub fn is_mounted(path: &Path) -> bool {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let want = path.to_string_lossy().replace(' ', "\\040");
    info.lines()
        .filter_map(|l| l.split(' ').nth(4))
        .any(|m| m == want)
}

pub fn sluice() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
}

/// A mount being served.
pub struct Mounted {
    /// Holds BACKING and MOUNTPOINT (or the report only, for [`Mounted::on`]).
    dir: Option<tempfile::TempDir>,
    pub backing: PathBuf,
    pub mnt: PathBuf,
    pub json: PathBuf,
    child: Option<Child>,
}

/// What the daemon printed after its unmount.
pub struct Ended {
    /// BACKING and MOUNTPOINT, kept until the test ends.
    pub _dir: Option<tempfile::TempDir>,
    pub ok: bool,
    pub stdout: String,
    pub stderr: String,
    pub json: Option<serde_json::Value>,
}

impl Mounted {
    /// Mount a fresh BACKING with `args` (`--policy ...`); `None` when the test must
    /// skip (see [`fuse_ready`]).
    pub fn new(args: &[&str]) -> Option<Mounted> {
        if !fuse_ready() {
            return None;
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let backing = dir.path().join("backing");
        let mnt = dir.path().join("mnt");
        std::fs::create_dir(&backing).unwrap();
        std::fs::create_dir(&mnt).unwrap();
        let json = dir.path().join("report.json");
        Some(Mounted::start(dir, backing, mnt, json, args))
    }

    /// Mount `backing` on `mnt` (directories the caller keeps).
    pub fn on(backing: PathBuf, mnt: PathBuf, args: &[&str]) -> Mounted {
        let dir = tempfile::tempdir().expect("temp dir");
        let json = dir.path().join("report.json");
        Mounted::start(dir, backing, mnt, json, args)
    }

    fn start(
        dir: tempfile::TempDir,
        backing: PathBuf,
        mnt: PathBuf,
        json: PathBuf,
        args: &[&str],
    ) -> Mounted {
        let child = sluice()
            .arg("mount")
            .arg(&backing)
            .arg(&mnt)
            .arg("--json")
            .arg(&json)
            .args(["--cores", "2"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start sluice mount");
        let mut m = Mounted {
            dir: Some(dir),
            backing,
            mnt,
            json,
            child: Some(child),
        };
        let t0 = Instant::now();
        while !is_mounted(&m.mnt) {
            if let Some(st) = m.child.as_mut().unwrap().try_wait().unwrap() {
                let mut err = String::new();
                m.child
                    .take()
                    .unwrap()
                    .stderr
                    .unwrap()
                    .read_to_string(&mut err)
                    .unwrap();
                panic!("sluice mount exited ({st}) before mounting: {err}");
            }
            // Only catches a mount that never appears (it takes milliseconds).
            assert!(
                t0.elapsed() < Duration::from_secs(300),
                "the mount did not appear"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        m
    }

    pub fn m(&self, name: &str) -> PathBuf {
        self.mnt.join(name)
    }
    pub fn b(&self, name: &str) -> PathBuf {
        self.backing.join(name)
    }

    /// Unmount with `fusermount3 -u` and collect what the daemon printed.
    ///
    /// "Device or resource busy" is retried until the mount is free: another test's
    /// thread of this process may have forked (to run a program) while this test had a
    /// file of the mount open, and the child holds that file until it execs — the
    /// kernel then refuses the unmount for a moment. Bounded only to catch a file that
    /// never closes; not a timing.
    pub fn unmount(mut self) -> Ended {
        let mut tries = 0;
        loop {
            let o = Command::new("fusermount3")
                .arg("-u")
                .arg(&self.mnt)
                .output()
                .unwrap();
            if o.status.success() {
                break;
            }
            let err = String::from_utf8_lossy(&o.stderr).into_owned();
            tries += 1;
            assert!(
                err.contains("busy") && tries < 600,
                "fusermount3 -u failed ({tries} tries): {err}"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let out = self.child.take().unwrap().wait_with_output().unwrap();
        let json = std::fs::read(&self.json)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok());
        Ended {
            _dir: self.dir.take(),
            ok: out.status.success(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            json,
        }
    }

    /// Stop the daemon with SIGTERM (it unmounts and prints its tables).
    pub fn terminate(mut self) -> Ended {
        let c = self.child.take().expect("running");
        // SAFETY: a plain system call on our child's pid.
        unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
        let out = c.wait_with_output().unwrap();
        Ended {
            _dir: self.dir.take(),
            ok: out.status.success(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            json: std::fs::read(&self.json)
                .ok()
                .and_then(|b| serde_json::from_slice(&b).ok()),
        }
    }

    /// Kill the daemon with SIGKILL (the mount stays, dead) and reap it.
    pub fn kill9(&mut self) {
        let mut c = self.child.take().expect("running");
        c.kill().unwrap();
        c.wait().unwrap();
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        if is_mounted(&self.mnt) {
            let ok = Command::new("fusermount3")
                .arg("-u")
                .arg(&self.mnt)
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if !ok {
                let _ = Command::new("fusermount3")
                    .arg("-uz")
                    .arg(&self.mnt)
                    .status();
            }
        }
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
