//! # sluice-mount — unmodified programs' file I/O scheduled by sluice
//!
//! `sluice mount BACKING MOUNTPOINT`: a FUSE file system over the directory BACKING.
//! Every name operation is passed through to BACKING relative to the inodes'
//! descriptors (`openat` of one component, no-follow: nothing outside BACKING is ever
//! reached, `node`, `fs`); every data read, write, fsync, truncation and fallocate of
//! an open file goes through a running sluice stack — the runtime's real backend on
//! io_uring on every core, `O_DIRECT` backing files, the one block layer, the chosen
//! policy (`data`) — as a task of the calling thread's class, weight and flow
//! (`class`: ionice, cgroup v2, a rules file). The kernel does not cache the data
//! (FUSE `direct_io`); with `--cache` the stack's own page cache serves the callers
//! that open without `O_DIRECT` (`cached`: RCP's class-aware dirty limits, fsync
//! promoting the file's writeback), shared by every core of the stack. The FUSE
//! threads hand requests to worker tasks through `hub`. When the file system is
//! unmounted the cache is written back and the stack's report (per flow and class:
//! IOPS, bandwidth, latency percentiles and breakdown) is returned.

mod attr;
mod cached;
mod class;
mod data;
mod fs;
mod hub;
mod node;
mod placement;
mod stats;
mod sys;
mod trace;
mod uring;

pub use uring::Transport;

use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

pub use class::{load_rules, parse_rules, Rule, Who};
use sluice_metrics::RunReport;

/// What to mount, and how.
#[derive(Clone, Debug)]
pub struct MountOptions {
    pub backing: PathBuf,
    pub mountpoint: PathBuf,
    /// The policy, `NAME[:key=value,...]`.
    pub policy: String,
    /// The rules file (`--classes`).
    pub classes: Option<PathBuf>,
    /// The stack's cores (threads, each with its own io_uring).
    pub cores: u16,
    /// The nice value of the daemon's threads (set before they start: each inherits
    /// it), or `None` to keep the caller's.
    pub nice: Option<i32>,
    /// The live view's interval (`--stats`): per class, IOPS, MiB/s, p50/p99 to stderr.
    pub stats: Option<Duration>,
    /// The page cache's size in bytes (`--cache`; 0: none, every data I/O direct).
    pub cache: u64,
    /// Most commands in the stack's rings at once (`--ring-cap`; `None`: the runtime's
    /// default), past which the port's WRR arbiter orders them by queue class.
    pub ring_cap: Option<u32>,
    /// How the kernel's requests come (`--transport`).
    pub transport: Transport,
}

/// `--cache`'s default: 256 MiB of 4 KiB pages.
pub const DEFAULT_CACHE: u64 = 256 << 20;
/// The smallest page cache (16 pages, the runtime's minimum).
pub const MIN_CACHE: u64 = 64 << 10;

/// Why the mount could not be made or served: what, where, how to fix it.
#[derive(Debug, thiserror::Error)]
pub enum MountError {
    #[error("{0}")]
    Usage(String),
    #[error("{0}")]
    Failed(String),
}

fn usage(s: impl Into<String>) -> MountError {
    MountError::Usage(s.into())
}

/// Whether `fusermount3` is on the PATH.
pub fn has_fusermount() -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("fusermount3").is_file()))
}

/// Whether `path` is a mount point now (in `/proc/self/mountinfo`).
pub fn is_mounted(path: &Path) -> bool {
    let Ok(canon) = std::fs::canonicalize(path) else {
        return false;
    };
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return false;
    };
    let want = canon.to_string_lossy().replace(' ', "\\040");
    info.lines()
        .filter_map(|l| l.split(' ').nth(4))
        .any(|m| m == want)
}

/// The checks before mounting, each error saying how to fix it.
pub fn preflight(o: &MountOptions) -> Result<(), MountError> {
    if !Path::new("/dev/fuse").exists() {
        return Err(usage(
            "/dev/fuse is absent: load the FUSE module (`modprobe fuse`) or, in a container, \
             pass the device in (`--device /dev/fuse`)",
        ));
    }
    // SAFETY: a plain system call.
    let root = unsafe { libc::geteuid() } == 0;
    if !root && !has_fusermount() {
        return Err(usage(
            "not root and no fusermount3 on the PATH: install the fuse3 package \
             (`apt-get install fuse3`) or run sluice mount as root",
        ));
    }
    match std::fs::metadata(&o.backing) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(usage(format!(
                "BACKING {} is not a directory: give the directory whose files the mount shows",
                o.backing.display()
            )))
        }
        Err(e) => {
            return Err(usage(format!(
                "BACKING {}: {e} (give an existing directory)",
                o.backing.display()
            )))
        }
    }
    match std::fs::metadata(&o.mountpoint) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(usage(format!(
                "MOUNTPOINT {} is not a directory: mount on an empty directory",
                o.mountpoint.display()
            )))
        }
        Err(e) if e.raw_os_error() == Some(libc::ENOTCONN) => {
            return Err(usage(format!(
                "MOUNTPOINT {} is a dead FUSE mount (its daemon was killed; the transport \
                 endpoint is not connected): clean it up with `fusermount3 -u {0}` (or \
                 `umount -l {0}`), then mount again",
                o.mountpoint.display()
            )))
        }
        Err(e) => {
            return Err(usage(format!(
                "MOUNTPOINT {}: {e} (create the directory first: mkdir -p {0})",
                o.mountpoint.display()
            )))
        }
    }
    if is_mounted(&o.mountpoint) {
        return Err(usage(format!(
            "MOUNTPOINT {} is busy: something is mounted there; unmount it first \
             (`fusermount3 -u {0}` or `umount {0}`)",
            o.mountpoint.display()
        )));
    }
    let (b, m) = (
        std::fs::canonicalize(&o.backing).map_err(|e| usage(e.to_string()))?,
        std::fs::canonicalize(&o.mountpoint).map_err(|e| usage(e.to_string()))?,
    );
    if b.starts_with(&m) {
        return Err(usage(format!(
            "BACKING {} is inside MOUNTPOINT {}: the mount would hide it; put it elsewhere",
            o.backing.display(),
            o.mountpoint.display()
        )));
    }
    if m.starts_with(&b) {
        return Err(usage(format!(
            "MOUNTPOINT {} is inside BACKING {}: the mount would show itself; put it elsewhere",
            o.mountpoint.display(),
            o.backing.display()
        )));
    }
    if o.cores == 0 {
        return Err(usage("--cores 0: give at least 1"));
    }
    if o.cache != 0 && o.cache < MIN_CACHE {
        return Err(usage(format!(
            "--cache {}: give 0 (no page cache: all data I/O direct) or at least 64k",
            o.cache
        )));
    }
    Ok(())
}

fn errno_text(e: fuser::Errno) -> String {
    std::io::Error::from_raw_os_error(i32::from(e)).to_string()
}

/// Whether the file system of directory `root` takes `O_DIRECT` (an unnamed
/// `O_TMPFILE` is made and dropped: nothing is left behind).
fn takes_direct(root: &std::os::fd::OwnedFd) -> bool {
    let fd = sys::openat(
        root.as_raw_fd(),
        &std::ffi::CString::new(".").expect("no NUL"),
        libc::O_TMPFILE | libc::O_RDWR | libc::O_DIRECT,
        0o600,
    );
    fd.is_ok()
}

/// Set this thread's nice value to `n`; the threads it starts afterwards (the stack's
/// cores, the FUSE threads) inherit it. Linux's nice is per thread. Refused (not root,
/// no CAP_SYS_NICE): said on stderr, and the mount runs at the inherited priority.
fn set_nice(n: i32) {
    // SAFETY: plain system calls on the calling thread (`who` 0 is the caller, and for
    // PRIO_PROCESS on Linux that is this thread).
    let r = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, n) };
    if r != 0 {
        eprintln!(
            "sluice mount: cannot set nice {n} ({}); the daemon's threads keep their              priority (run as root, or give --nice 0)",
            std::io::Error::last_os_error()
        );
    }
}

/// What a finished mount returns.
#[derive(Debug)]
pub struct Served {
    /// The stack's report: one flow per caller flow, jobs per (flow, read/write/sync).
    pub report: RunReport,
    /// Whether the backing files were `O_DIRECT`.
    pub direct: bool,
    /// The transport that served (`io_uring` or `/dev/fuse`).
    pub transport: &'static str,
    /// With io_uring: the requests served per transport, as a line for stderr.
    pub transport_line: Option<String>,
}

/// How to unmount: fuser's mount, or ours (`--transport uring`).
enum Unmounter {
    Fuser(fuser::SessionUnmounter),
    Own(std::ffi::CString),
}

impl Unmounter {
    fn unmount(&mut self) -> std::io::Result<()> {
        match self {
            Unmounter::Fuser(u) => u.unmount(),
            Unmounter::Own(t) => uring::unmount(t, false),
        }
    }
}

/// Mount, serve until unmounted (`fusermount3 -u`, or `stop` set — Ctrl-C, SIGTERM),
/// and return the stack's report. `ready` is called once the mount answers, with
/// whether the backing files are `O_DIRECT` and the transport that serves.
pub fn serve(
    o: &MountOptions,
    stop: Arc<AtomicBool>,
    ready: impl FnOnce(bool, &str),
) -> Result<Served, MountError> {
    preflight(o)?;
    let transport = uring::resolve(o.transport)?;
    // The kernel sends each create's mode with the caller's umask already applied (and
    // the umask beside it); the daemon's own umask must not mask it again, or a file
    // made 0777 by a caller with umask 0 comes out 0755 (pjdfstest chmod/12, open/02).
    // SAFETY: umask only sets the process's mask; the process is this mount's daemon.
    unsafe { libc::umask(0) };
    let rules = match &o.classes {
        Some(p) => class::load_rules(p).map_err(usage)?,
        None => Vec::new(),
    };
    let root = sys::openat(
        libc::AT_FDCWD,
        &std::ffi::CString::new(o.backing.as_os_str().as_encoded_bytes())
            .map_err(|_| usage("BACKING has a NUL byte"))?,
        libc::O_PATH | libc::O_DIRECTORY,
        0,
    )
    .map_err(|e| {
        usage(format!(
            "BACKING {}: {}",
            o.backing.display(),
            errno_text(e)
        ))
    })?;
    let direct = takes_direct(&root);

    if let Some(n) = o.nice {
        set_nice(n);
    }
    // The stack, on its own thread (its cores are threads of their own).
    let hub = Arc::new(hub::Hub::new(o.stats));
    let (built_tx, built_rx) = mpsc::channel::<Result<(), String>>();
    let stack_thread = {
        let hub = hub.clone();
        let (backing, policy, cores) = (o.backing.clone(), o.policy.clone(), o.cores);
        let ring_cap = o.ring_cap;
        // FUSE over io_uring's commands go on the cores' own rings (128-byte SQEs).
        let uring = transport == Transport::Uring;
        let flusher = placement::flusher_core(hub.placement, o.cores);
        let cpus = hub.cpus.clone();
        // Pages of 4 KiB (the cache's page; `IO_ALIGN` is the 512-byte sector).
        let pages = (o.cache / data::BLOCK) as usize;
        std::thread::Builder::new()
            .name("sluice-stack".into())
            .spawn(move || -> Result<RunReport, String> {
                let mut b = sluice_runtime::Stack::builder()
                    .directory(&backing)
                    .policy(&policy)
                    .cores(cores)
                    .flusher_core(flusher)
                    .pin_cores(cpus)
                    .uring_commands(uring);
                if let Some(cap) = ring_cap {
                    b = b.ring_cap(cap);
                }
                if pages > 0 {
                    // RCP's class-aware dirty limits (1 % of the pages for non-critical
                    // writers, 20 % for critical ones), the flusher as non-critical.
                    b = b.cache(sluice_runtime::CacheConfig {
                        pages,
                        ..Default::default()
                    });
                }
                let stack = b.build().map_err(|e| e.to_string());
                let stack = match stack {
                    Ok(s) => {
                        let _ = built_tx.send(Ok(()));
                        s
                    }
                    Err(e) => {
                        let _ = built_tx.send(Err(e.clone()));
                        return Err(e);
                    }
                };
                let out = stack
                    .run(move || hub::dispatcher(hub, cores))
                    .map_err(|e| e.to_string())?;
                Ok(out.report)
            })
            .map_err(|e| MountError::Failed(format!("cannot start the stack's thread: {e}")))?
    };
    if !matches!(built_rx.recv(), Ok(Ok(()))) {
        let why = stack_thread
            .join()
            .ok()
            .and_then(|r| r.err())
            .unwrap_or_else(|| "the stack could not start".into());
        return Err(usage(format!("--policy {}: {why}", o.policy)));
    }

    let cache = o.cache > 0;
    // BACKING as the kernel names it: path rules match file paths relative to it.
    let root_path = std::fs::read_link(format!("/proc/self/fd/{}", root.as_raw_fd()))
        .unwrap_or_else(|_| o.backing.clone());
    let fs = fs::SluiceFs::new(
        root,
        hub.clone(),
        class::Classifier::new(rules, root_path),
        direct,
        cache,
    )
    .map_err(|e| {
        MountError::Failed(format!(
            "BACKING {}: {}",
            o.backing.display(),
            errno_text(e)
        ))
    })?;
    let (done_tx, done_rx) = mpsc::channel::<std::io::Result<()>>();
    let started = if transport == Transport::Uring {
        uring::start(fs, o, hub.clone(), done_tx).map(|s| {
            (
                s.thread,
                Unmounter::Own(s.target),
                Some(s.counts),
                s.proxy_threads,
            )
        })
    } else {
        fuser_session(fs, o, done_tx)
    };
    let (fuse_thread, mut unmounter, counts, proxy_threads) = match started {
        Ok(s) => s,
        Err(e) => {
            hub.stop();
            let _ = stack_thread.join();
            return Err(e);
        }
    };
    let transport_name = if counts.is_some() {
        "io_uring"
    } else {
        "/dev/fuse"
    };
    ready(direct, transport_name);
    let ended = loop {
        match done_rx.recv_timeout(Duration::from_millis(100)) {
            Ok(r) => break r,
            Err(mpsc::RecvTimeoutError::Disconnected) => break Ok(()),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                for l in hub.stats.lines(false) {
                    eprintln!("{l}");
                }
                // The stack ended on its own (a failed core, a ring error): nothing
                // would serve the data path any more — unmount, and report why below.
                if stack_thread.is_finished() && is_mounted(&o.mountpoint) {
                    eprintln!("sluice mount: the stack stopped; unmounting");
                    let _ = unmounter.unmount();
                }
                if stop.load(Ordering::Relaxed) {
                    if let Err(e) = unmounter.unmount() {
                        eprintln!(
                            "sluice mount: unmounting {}: {e} (busy? it ends when the last \
                             user leaves; or `fusermount3 -uz {0}`)",
                            o.mountpoint.display()
                        );
                        stop.store(false, Ordering::Relaxed);
                    }
                }
            }
        }
    };
    let _ = fuse_thread.join();
    if let (Unmounter::Own(t), true) = (&unmounter, is_mounted(&o.mountpoint)) {
        // The session ended on its own (a failed INIT): the mount is ours to remove.
        let _ = uring::unmount(t, true);
    }
    for t in proxy_threads {
        let _ = t.join();
    }
    for l in hub.stats.lines(true) {
        eprintln!("{l}");
    }
    hub.stop();
    let report = stack_thread
        .join()
        .map_err(|_| MountError::Failed("the stack's thread panicked".into()))?
        .map_err(|e| MountError::Failed(format!("the stack: {e}")))?;
    hub.trace.print();
    // Every thread of the mount has ended: the stack's (its cores, and with them the
    // ring queues' tasks), the session's, the proxy's.
    let left = threads_left();
    if !left.is_empty() {
        eprintln!(
            "sluice mount: threads still running after unmount: {}",
            left.join(", ")
        );
    }
    if let Err(e) = ended {
        eprintln!("sluice mount: the FUSE session ended with: {e}");
    }
    Ok(Served {
        report,
        direct,
        transport: transport_name,
        transport_line: counts.map(|c| c.line()),
    })
}

/// The names of this process's threads, but the caller, that are the mount's own
/// (named `sluice-…`) or fuser's (`fuse…`), as `/proc/self/task` shows them.
pub fn threads_left() -> Vec<String> {
    // SAFETY: a plain system call.
    let me = unsafe { libc::gettid() }.to_string();
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    let mut v: Vec<String> = dir
        .flatten()
        .filter(|e| e.file_name() != me.as_str())
        .filter_map(|e| std::fs::read_to_string(e.path().join("comm")).ok())
        .map(|c| c.trim().to_string())
        .filter(|c| c.starts_with("sluice-") || c.starts_with("fuse"))
        .collect();
    v.sort();
    v
}

/// A running session: its thread, how to unmount, the ring's counts and the proxy's
/// threads (io_uring only).
type SessionRun = (
    std::thread::JoinHandle<()>,
    Unmounter,
    Option<Arc<uring::Counts>>,
    Vec<std::thread::JoinHandle<()>>,
);

/// Mount with fuser (`/dev/fuse` reads and writes) and run its session on a thread.
fn fuser_session(
    fs: fs::SluiceFs,
    o: &MountOptions,
    done: mpsc::Sender<std::io::Result<()>>,
) -> Result<SessionRun, MountError> {
    let mut cfg = fuser::Config::default();
    cfg.mount_options = vec![
        fuser::MountOption::FSName(format!("sluice:{}", o.backing.display())),
        fuser::MountOption::Subtype("sluice".into()),
        fuser::MountOption::DefaultPermissions,
    ];
    // SAFETY: a plain system call.
    if unsafe { libc::geteuid() } == 0 {
        cfg.acl = fuser::SessionACL::All;
    }
    cfg.n_threads = Some(2);
    cfg.clone_fd = true;
    let mut session = fuser::Session::new(fs, &o.mountpoint, &cfg).map_err(|e| {
        MountError::Failed(format!(
            "mounting {} failed: {e} (is MOUNTPOINT free, /dev/fuse usable, fusermount3 \
             installed?)",
            o.mountpoint.display()
        ))
    })?;
    let unmounter = session.unmount_callable();
    let thread = std::thread::Builder::new()
        .name("sluice-fuse".into())
        .spawn(move || {
            let _ = done.send(session.run());
        })
        .map_err(|e| MountError::Failed(format!("cannot start the FUSE thread: {e}")))?;
    Ok((thread, Unmounter::Fuser(unmounter), None, Vec::new()))
}

#[cfg(test)]
mod tests {
    /// `threads_left` sees a running thread of the mount's by its name, and not once
    /// it has been joined (what `serve` checks after unmount).
    #[test]
    fn threads_left_lists_the_mounts_running_threads() {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let (up_tx, up_rx) = std::sync::mpsc::channel::<()>();
        let t = std::thread::Builder::new()
            .name("sluice-tl-test".into())
            .spawn(move || {
                up_tx.send(()).unwrap();
                let _ = rx.recv();
            })
            .unwrap();
        up_rx.recv().unwrap();
        assert!(
            super::threads_left().iter().any(|n| n == "sluice-tl-test"),
            "{:?}",
            super::threads_left()
        );
        drop(tx);
        t.join().unwrap();
        assert!(!super::threads_left().iter().any(|n| n == "sluice-tl-test"));
    }
}
