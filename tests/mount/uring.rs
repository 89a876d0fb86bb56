//! `--transport uring`: FUSE over io_uring. The data-path tests of programs.rs again
//! through the ring, a count of the requests the ring served, and the refusals.
//!
//! They need root and a kernel with FUSE over io_uring (Linux 6.14+: the switch
//! /sys/module/fuse/parameters/enable_uring exists). The switch is system-wide: the
//! tests turn it on while one of them runs ([`Switch`]) and put back what it was.

use std::fs;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Mutex;

use super::programs::{fio_verify, sqlite_intact};
use crate::pattern;
use crate::support::{self, sluice, Mounted};

const ENABLE: &str = "/sys/module/fuse/parameters/enable_uring";

/// Tests holding the switch on, and its value before the first of them.
static HOLDERS: Mutex<(usize, Option<String>)> = Mutex::new((0, None));

/// The kernel's switch held on; the last holder's drop restores the earlier value.
struct Switch;

impl Switch {
    /// `None` (the test skips, saying why) without root or without the switch; under
    /// `CI=true` a missing switch on a 6.14+ kernel is not excused, but CI's kernel may
    /// be older, so only the reason is printed.
    fn on() -> Option<Switch> {
        // SAFETY: a plain system call.
        if unsafe { libc::geteuid() } != 0 || !Path::new(ENABLE).exists() {
            eprintln!("SKIPPED: FUSE over io_uring needs root and {ENABLE} (Linux 6.14+)");
            return None;
        }
        let mut h = HOLDERS.lock().unwrap_or_else(|e| e.into_inner());
        if h.0 == 0 {
            h.1 = Some(fs::read_to_string(ENABLE).expect("read the switch"));
            fs::write(ENABLE, "Y").expect("turn the switch on");
        }
        h.0 += 1;
        Some(Switch)
    }
}

impl Drop for Switch {
    fn drop(&mut self) {
        let mut h = HOLDERS.lock().unwrap_or_else(|e| e.into_inner());
        h.0 -= 1;
        if h.0 == 0 {
            if let Some(v) = h.1.take() {
                let _ = fs::write(ENABLE, v.trim());
            }
        }
    }
}

/// (data requests, other requests) the ring served, from the daemon's last lines.
fn ring_counts(stderr: &str) -> (u64, u64) {
    let line = stderr
        .lines()
        .find(|l| l.contains("requests by transport: io_uring"))
        .unwrap_or_else(|| panic!("no transport line in: {stderr}"));
    let num = |key: &str| -> u64 {
        let before = line.split(key).next().unwrap();
        before
            .rsplit(|c: char| !c.is_ascii_digit())
            .find(|s| !s.is_empty())
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no count before {key:?} in: {line}"))
    };
    (num(" data"), num(" others"))
}

#[test]
fn uring_fio_verifies_its_data() {
    let Some(_s) = Switch::on() else { return };
    let Some(end) = fio_verify(&["--transport", "uring"]) else {
        return;
    };
    let (data, _) = ring_counts(&end.stderr);
    assert!(
        data > 1000,
        "fio's I/O did not come through the ring: {}",
        end.stderr
    );
}

#[test]
fn uring_sqlite_keeps_an_intact_database() {
    let Some(_s) = Switch::on() else { return };
    let Some(end) = sqlite_intact(&["--transport", "uring"]) else {
        return;
    };
    let (data, others) = ring_counts(&end.stderr);
    assert!(data > 0 && others > 0, "{}", end.stderr);
}

/// Reads, writes and fsyncs of known data through the ring, checked on the mount and
/// on the backing file; the transport line counts them.
#[test]
fn uring_serves_reads_writes_and_fsyncs_through_the_ring() {
    let Some(_s) = Switch::on() else { return };
    let Some(m) = Mounted::new(&["--transport", "uring", "--cache", "0"]) else {
        return;
    };
    let data = pattern(38, 1 << 20);
    let f = fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .read(true)
        .write(true)
        .open(m.m("f"))
        .unwrap();
    for (i, c) in data.chunks(64 << 10).enumerate() {
        f.write_all_at(c, (i * (64 << 10)) as u64).unwrap();
    }
    f.sync_all().unwrap();
    let mut back = vec![0u8; data.len()];
    f.read_exact_at(&mut back, 0).unwrap();
    assert!(back == data, "the mount read back other bytes");
    // An unaligned write across a block boundary, read back.
    f.write_all_at(b"unaligned", 4091).unwrap();
    let mut b9 = [0u8; 9];
    f.read_exact_at(&mut b9, 4091).unwrap();
    assert_eq!(&b9, b"unaligned");
    f.sync_data().unwrap();
    drop(f);
    let on_backing = fs::read(m.b("f")).unwrap();
    assert_eq!(on_backing.len(), data.len());
    assert_eq!(&on_backing[4091..4100], b"unaligned");
    assert!(on_backing[..4091] == data[..4091] && on_backing[4100..] == data[4100..]);
    let end = m.unmount();
    assert!(end.ok, "{}", end.stderr);
    assert!(
        end.stderr.contains("transport io_uring"),
        "the startup line names the transport: {}",
        end.stderr
    );
    let (served, others) = ring_counts(&end.stderr);
    // 16 writes, 1 read or more, 2 fsyncs, 1 write, 1 read, the close's flush.
    assert!(served >= 22, "ring data requests {served}: {}", end.stderr);
    assert!(others > 0, "lookups/opens through the ring: {}", end.stderr);
    assert!(
        !end.stderr.contains("threads still running"),
        "every thread of the mount ended at unmount: {}",
        end.stderr
    );
}

/// Over the ring, a write by another user (no CAP_FSETID: the kernel marks it
/// `FUSE_WRITE_KILL_SUIDGID`) clears set-user-ID and set-group-ID (group execute set)
/// before it is served, and the close's FLUSH is answered by the ring (no request of
/// the data path goes to the session).
#[test]
fn uring_clears_setid_bits_on_another_users_write() {
    use std::os::unix::fs::PermissionsExt;
    let Some(_s) = Switch::on() else { return };
    let Some(m) = Mounted::new(&["--transport", "uring", "--cache", "0"]) else {
        return;
    };
    fs::write(m.m("f"), b"0123").unwrap();
    fs::set_permissions(m.m("f"), fs::Permissions::from_mode(0o6777)).unwrap();
    let f = crate::cstr(&m.m("f"));
    let code = crate::in_child(|| {
        // SAFETY: async-signal-safe calls on a valid C string and buffer.
        unsafe {
            if libc::setresgid(65534, 65534, 65534) != 0
                || libc::setresuid(65534, 65534, 65534) != 0
            {
                return 1;
            }
            let fd = libc::open(f.as_ptr(), libc::O_WRONLY);
            if fd < 0 || libc::pwrite(fd, b"x".as_ptr().cast(), 1, 2) != 1 {
                return 2;
            }
            if libc::close(fd) != 0 {
                return 3;
            }
        }
        0
    });
    assert_eq!(code, 0, "another user's write on the mount");
    let mode = fs::metadata(m.b("f")).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o777, "set-user-ID and set-group-ID cleared");
    assert_eq!(fs::read(m.b("f")).unwrap(), b"01x3");
    let end = m.unmount();
    assert!(end.ok, "{}", end.stderr);
    let (served, _) = ring_counts(&end.stderr);
    // The first write, its close's flush; the other user's write and its flush.
    assert!(served >= 4, "ring data requests {served}: {}", end.stderr);
    assert!(
        !end.stderr.contains("threads still running"),
        "{}",
        end.stderr
    );
}

#[test]
fn an_unknown_transport_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = sluice()
        .arg("mount")
        .arg(dir.path())
        .arg("/nonexistent-mnt")
        .args(["--transport", "carrier-pigeon"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("give auto, uring or dev"), "{err}");
    let _ = support::is_mounted(dir.path());
}
