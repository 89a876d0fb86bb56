//! `sluice mount` on a real FUSE mount: POSIX behaviours, data integrity under
//! concurrent unaligned writes, real programs (fio with verify, sqlite3; PostgreSQL
//! with pgbench in tests/mount/postgres.rs), classes,
//! the tables at unmount, clear errors and the kill -9 fault. Each test mounts its own
//! temporary BACKING and always unmounts (tests/mount/support.rs). They skip, saying
//! why, only without /dev/fuse or fusermount3 — and fail then under CI=true.

#[path = "mount/support.rs"]
pub(crate) mod support;

#[path = "mount/posix.rs"]
mod posix;
#[path = "mount/postgres.rs"]
mod postgres;
#[path = "mount/programs.rs"]
mod programs;
#[path = "mount/uring.rs"]
mod uring;

use std::ffi::CString;
use std::path::Path;

pub(crate) fn cstr(p: &Path) -> CString {
    CString::new(p.as_os_str().as_encoded_bytes()).unwrap()
}

/// A deterministic byte pattern.
pub(crate) fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Run `f` in a forked child and return its exit code (the child may only make
/// async-signal-safe calls: open, fcntl, flock, setresuid, _exit).
pub(crate) fn in_child(f: impl FnOnce() -> i32) -> i32 {
    // SAFETY: the child runs `f`, which makes only async-signal-safe calls, then exits.
    unsafe {
        let pid = libc::fork();
        assert!(pid >= 0, "fork");
        if pid == 0 {
            libc::_exit(f());
        }
        let mut st = 0;
        libc::waitpid(pid, &mut st, 0);
        libc::WEXITSTATUS(st)
    }
}
