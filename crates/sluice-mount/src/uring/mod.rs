//! FUSE over io_uring (Linux 6.14+, `Documentation/filesystems/fuse-io-uring.rst`):
//! the kernel hands requests to the daemon in buffers registered through an io_uring
//! on the `/dev/fuse` descriptor, one queue per possible CPU, and takes each reply
//! with the command that fetches the next request — no `read`/`write` per request.
//!
//! `--transport uring`: sluice mounts itself (root: the `mount` system call with its
//! own `/dev/fuse` descriptor) and runs fuser's session on one end of a
//! `SOCK_SEQPACKET` socket pair; the [`Proxy`] forwards to it what comes through
//! `/dev/fuse` (INIT, FORGET, INTERRUPT, and everything before the ring is ready)
//! and what comes through the ring but is neither READ, WRITE, FSYNC nor FLUSH, and
//! routes its replies by `unique` back to `/dev/fuse` or to the ring entry. The ring's
//! queues (`queue`), each a task on one of the stack's cores, serve READ, WRITE and
//! FSYNC themselves through the data path the file system's handlers use
//! ([`crate::fs::DataOps`]), with workers on the same core, and answer FLUSH.

mod proto;
mod queue;

use std::collections::HashMap;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;

pub use queue::Slot;

use crate::fs::SluiceFs;
use crate::hub::{Hub, RingTask};
use crate::{MountError, MountOptions};

/// The kernel's switch (a module parameter, system-wide).
pub const ENABLE: &str = "/sys/module/fuse/parameters/enable_uring";
/// Entries per queue (requests in flight per CPU), dealt over the cores that own
/// entries of it ([`crate::placement::ring_entry_cores`]).
const ENTRIES: usize = 32;
/// The fewest entries a core owns of a queue.
const MIN_ENTRIES: usize = 8;
/// fuser's session threads (as with `/dev/fuse`).
const SESSION_THREADS: usize = 2;
/// The largest request or reply through the socket pair (1 MiB writes, and headers).
const MSG_MAX: usize = (1 << 20) + 4096;

/// How the kernel's requests reach the daemon (`--transport`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// io_uring when the kernel offers it and sluice runs as root, else `/dev/fuse`.
    Auto,
    Uring,
    Dev,
}

impl std::str::FromStr for Transport {
    type Err = String;
    fn from_str(s: &str) -> Result<Transport, String> {
        match s {
            "auto" => Ok(Transport::Auto),
            "uring" => Ok(Transport::Uring),
            "dev" => Ok(Transport::Dev),
            _ => Err(format!("--transport {s}: give auto, uring or dev")),
        }
    }
}

/// Why FUSE over io_uring cannot serve here, or `None` when it can.
pub fn unavailable() -> Option<String> {
    // SAFETY: a plain system call.
    let root = unsafe { libc::geteuid() } == 0;
    why_not(root, std::fs::read_to_string(ENABLE).ok().as_deref())
}

/// [`unavailable`] for a caller who is `root` or not, with the switch reading
/// `switch` (`None`: absent).
fn why_not(root: bool, switch: Option<&str>) -> Option<String> {
    if !root {
        return Some(
            "FUSE over io_uring needs root here (sluice mounts with its own /dev/fuse \
             descriptor): run sluice mount as root, or give --transport dev"
                .into(),
        );
    }
    match switch {
        Some(v) if v.trim() == "Y" => None,
        Some(_) => Some(format!(
            "the kernel's FUSE over io_uring is off ({ENABLE} is N): as root, \
             `echo Y > {ENABLE}` (a system-wide setting), or give --transport dev"
        )),
        None => Some(format!(
            "this kernel has no FUSE over io_uring ({ENABLE} is absent; Linux 6.14+ built \
             with CONFIG_FUSE_IO_URING): give --transport dev"
        )),
    }
}

/// The transport that serves: `Uring` or `Dev`, or why `Uring` cannot.
pub fn resolve(t: Transport) -> Result<Transport, MountError> {
    match (t, unavailable()) {
        (Transport::Dev, _) | (Transport::Auto, Some(_)) => Ok(Transport::Dev),
        (Transport::Uring | Transport::Auto, None) => Ok(Transport::Uring),
        (Transport::Uring, Some(why)) => {
            Err(MountError::Usage(format!("--transport uring: {why}")))
        }
    }
}

/// Requests served, by the way they came.
#[derive(Debug, Default)]
pub struct Counts {
    /// Read from `/dev/fuse`.
    pub dev: AtomicU64,
    /// Through the ring, served by the queues themselves (READ, WRITE, FSYNC, FLUSH).
    pub ring_data: AtomicU64,
    /// Through the ring, answered by the file system's session.
    pub ring_session: AtomicU64,
}

impl Counts {
    fn note_ring(&self, data: bool) {
        let c = if data {
            &self.ring_data
        } else {
            &self.ring_session
        };
        c.fetch_add(1, Ordering::Relaxed);
    }

    /// "requests by transport: ..." for the end of the mount.
    pub fn line(&self) -> String {
        let (d, r, s) = (
            self.dev.load(Ordering::Relaxed),
            self.ring_data.load(Ordering::Relaxed),
            self.ring_session.load(Ordering::Relaxed),
        );
        format!(
            "sluice mount: requests by transport: io_uring {} ({r} data, {s} others), /dev/fuse {d}",
            r + s
        )
    }
}

fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn last() -> io::Error {
    io::Error::last_os_error()
}

/// Between the kernel (`/dev/fuse` and the ring) and fuser's session (a socket).
pub struct Proxy {
    dev: OwnedFd,
    sock: OwnedFd,
    /// Ring requests with the session, by `unique`.
    pending: Mutex<HashMap<u64, Slot>>,
    pub counts: Arc<Counts>,
}

impl Proxy {
    /// Give the session a request that came through the ring (`parts` in order).
    fn forward(&self, slot: Slot, parts: &[&[u8]]) {
        let unique = slot.unique();
        locked(&self.pending).insert(unique, slot);
        let iov: Vec<libc::iovec> = parts
            .iter()
            .map(|p| libc::iovec {
                iov_base: p.as_ptr() as *mut _,
                iov_len: p.len(),
            })
            .collect();
        // SAFETY: `iov` points into `parts`, alive for the call.
        let r = unsafe { libc::writev(self.sock.as_raw_fd(), iov.as_ptr(), iov.len() as i32) };
        if r < 0 {
            eprintln!("sluice mount: handing a request to the session: {}", last());
            if let Some(s) = locked(&self.pending).remove(&unique) {
                s.error(fuser::Errno::EIO);
            }
        }
    }

    /// `/dev/fuse` → the session, until the connection ends; then the session is told
    /// to end (one `DESTROY` per thread).
    fn dev_loop(&self) {
        let mut buf = vec![0u8; MSG_MAX];
        loop {
            // SAFETY: a read into our buffer.
            let n = unsafe { libc::read(self.dev.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n < 0 {
                match io::Error::last_os_error().raw_os_error() {
                    Some(libc::EINTR | libc::ENOENT | libc::EAGAIN) => continue,
                    Some(libc::ENODEV) => {}
                    _ => eprintln!("sluice mount: reading /dev/fuse: {}", last()),
                }
                break;
            }
            self.counts.dev.fetch_add(1, Ordering::Relaxed);
            // SAFETY: a write of the bytes read.
            if unsafe { libc::write(self.sock.as_raw_fd(), buf.as_ptr().cast(), n as usize) } < 0 {
                eprintln!("sluice mount: handing a request to the session: {}", last());
            }
        }
        for k in 0..SESSION_THREADS {
            let h = proto::in_header(proto::FUSE_DESTROY, u64::MAX - k as u64);
            // SAFETY: a write of our header.
            unsafe { libc::write(self.sock.as_raw_fd(), h.as_ptr().cast(), h.len()) };
        }
    }

    /// The session's replies → the ring entry of their request, or `/dev/fuse`. The
    /// first one (INIT's) is announced on `init`.
    fn reply_loop(&self, init: mpsc::Sender<()>) {
        let mut buf = vec![0u8; MSG_MAX];
        let mut first = Some(init);
        loop {
            // SAFETY: a read into our buffer.
            let n =
                unsafe { libc::read(self.sock.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n < 0 && last().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            if n < proto::OUT_HEADER as isize {
                break;
            }
            let m = &buf[..n as usize];
            let unique = proto::u64_at(m, 8);
            let slot = locked(&self.pending).remove(&unique);
            match slot {
                Some(s) => s.reply(proto::u32_at(m, 4) as i32, &m[proto::OUT_HEADER..]),
                None => {
                    // SAFETY: a write of the reply. An error (the request was
                    // interrupted, the connection is gone) leaves nothing to do.
                    unsafe { libc::write(self.dev.as_raw_fd(), m.as_ptr().cast(), m.len()) };
                }
            }
            if let Some(tx) = first.take() {
                let _ = tx.send(());
            }
        }
        // The session ended: what it still had from the ring gets EIO (`Slot`'s drop).
        locked(&self.pending).clear();
    }
}

fn cstr(s: &str) -> Result<CString, MountError> {
    CString::new(s).map_err(|_| MountError::Usage(format!("{s:?} has a NUL byte")))
}

/// Mount `o.mountpoint` with a new `/dev/fuse` descriptor (as root).
fn mount(o: &MountOptions) -> Result<(OwnedFd, CString), MountError> {
    // SAFETY: a plain system call.
    let fd = unsafe { libc::open(c"/dev/fuse".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(MountError::Failed(format!("opening /dev/fuse: {}", last())));
    }
    // SAFETY: a new descriptor of ours.
    let dev = unsafe { OwnedFd::from_raw_fd(fd) };
    let target = cstr(&o.mountpoint.to_string_lossy())?;
    let source = cstr(&format!("sluice:{}", o.backing.display()))?;
    // SAFETY: plain system calls.
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    let data = cstr(&format!(
        "fd={fd},rootmode=40000,user_id={uid},group_id={gid},default_permissions,allow_other"
    ))?;
    // SAFETY: NUL-terminated strings alive for the call.
    let r = unsafe {
        libc::mount(
            source.as_ptr(),
            target.as_ptr(),
            c"fuse.sluice".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV,
            data.as_ptr().cast(),
        )
    };
    if r != 0 {
        return Err(MountError::Failed(format!(
            "mounting {}: {} (is MOUNTPOINT free and /dev/fuse usable?)",
            o.mountpoint.display(),
            last()
        )));
    }
    Ok((dev, target))
}

/// A `SOCK_SEQPACKET` pair whose messages may be as long as [`MSG_MAX`].
fn socket_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: a plain system call filling `fds`.
    if unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    } != 0
    {
        return Err(last());
    }
    // SAFETY: two new descriptors of ours.
    let (a, b) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    let size: libc::c_int = 4 * MSG_MAX as libc::c_int;
    for fd in [&a, &b] {
        for opt in [libc::SO_SNDBUFFORCE, libc::SO_RCVBUFFORCE] {
            // SAFETY: an int option on our socket.
            let r = unsafe {
                libc::setsockopt(
                    fd.as_raw_fd(),
                    libc::SOL_SOCKET,
                    opt,
                    (&size as *const libc::c_int).cast(),
                    std::mem::size_of::<libc::c_int>() as u32,
                )
            };
            if r != 0 {
                return Err(last());
            }
        }
    }
    Ok((a, b))
}

/// What a mount over the ring leaves to [`crate::serve`].
pub struct Started {
    /// Runs the session; sends its end on the `done` channel given to [`start`].
    pub thread: JoinHandle<()>,
    /// The proxy's two threads (`/dev/fuse` → session, session → replies): they end
    /// once the connection is gone and the session with it.
    pub proxy_threads: Vec<JoinHandle<()>>,
    pub target: CString,
    pub counts: Arc<Counts>,
}

/// Mount and serve `fs` over the ring, its queues' entries owned by tasks of `hub`'s
/// stack (queue `q`'s on the cores [`crate::placement::ring_entry_cores`]); the
/// session's end goes to `done`.
pub fn start(
    fs: SluiceFs,
    o: &MountOptions,
    hub: Arc<Hub>,
    done: mpsc::Sender<io::Result<()>>,
) -> Result<Started, MountError> {
    let cores = o.cores.max(1);
    let fs = fs.with_uring();
    let ops = fs.ops();
    let granted = fs.uring_granted.clone();
    let queues = std::fs::read_to_string("/sys/devices/system/cpu/possible")
        .ok()
        .and_then(|t| proto::possible_cpus(&t))
        .ok_or_else(|| MountError::Failed("cannot read /sys/devices/system/cpu/possible".into()))?;
    let (ours, theirs) =
        socket_pair().map_err(|e| MountError::Failed(format!("a socket pair: {e}")))?;
    let (dev, target) = mount(o)?;
    let dev_fd = dev.as_raw_fd();
    let counts = Arc::new(Counts::default());
    let proxy = Arc::new(Proxy {
        dev,
        sock: ours,
        pending: Mutex::new(HashMap::new()),
        counts: counts.clone(),
    });
    let spawn = |name: String, f: Box<dyn FnOnce() + Send>| {
        std::thread::Builder::new()
            .name(name)
            .spawn(f)
            .map_err(|e| MountError::Failed(format!("cannot start a thread: {e}")))
    };
    let (init_tx, init_rx) = mpsc::channel();
    let p = proxy.clone();
    let dev_thread = spawn("sluice-fuse-dev".into(), Box::new(move || p.dev_loop()))?;
    let p = proxy.clone();
    let reply_thread = spawn(
        "sluice-fuse-reply".into(),
        Box::new(move || p.reply_loop(init_tx)),
    )?;
    let mut cfg = fuser::Config::default();
    cfg.n_threads = Some(SESSION_THREADS);
    let thread = spawn(
        "sluice-fuse".into(),
        Box::new(move || {
            let session = match fuser::Session::from_fd(fs, theirs, fuser::SessionACL::All, cfg) {
                Ok(s) => s,
                Err(e) => {
                    let _ = done.send(Err(e));
                    return;
                }
            };
            // The kernel takes REGISTER only once it has INIT's reply.
            if init_rx.recv().is_ok() && granted.load(Ordering::SeqCst) {
                let payload = 1 << 20;
                for q in 0..queues {
                    let owners =
                        crate::placement::ring_entry_cores(hub.placement, q, cores, &hub.cpus);
                    // The queue's entries dealt over its cores (at least MIN_ENTRIES each).
                    let entries = (ENTRIES / owners.len()).max(MIN_ENTRIES);
                    for core in owners {
                        let (ops, proxy) = (ops.clone(), proxy.clone());
                        let sh = queue::Shared::new(
                            q as u16, entries, payload, dev_fd, core, ops, proxy,
                        );
                        let sh2 = sh.clone();
                        hub.ring(RingTask {
                            core,
                            name: format!("fuse-ring-{q}"),
                            make: Box::new(move || {
                                Box::pin(async move {
                                    if let Err(e) = queue::run(sh).await {
                                        eprintln!("sluice mount: FUSE ring queue {q}: {e}");
                                    }
                                })
                            }),
                            stop: Box::new(move || sh2.stop()),
                        });
                    }
                }
            } else {
                eprintln!(
                    "sluice mount: the kernel did not agree to FUSE over io_uring at INIT; \
                     serving through /dev/fuse"
                );
            }
            let _ = done.send(session.run());
        }),
    )?;
    Ok(Started {
        thread,
        proxy_threads: vec![dev_thread, reply_thread],
        target,
        counts,
    })
}

/// Unmount `target` (`umount2`; `MNT_DETACH` when `lazy`).
pub fn unmount(target: &CString, lazy: bool) -> io::Result<()> {
    let flags = if lazy { libc::MNT_DETACH } else { 0 };
    // SAFETY: a NUL-terminated path alive for the call.
    if unsafe { libc::umount2(target.as_ptr(), flags) } != 0 {
        return Err(last());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_refusals_say_how_to_enable() {
        assert_eq!(why_not(true, Some("Y\n")), None);
        let off = why_not(true, Some("N\n")).unwrap();
        assert!(
            off.contains("echo Y > /sys/module/fuse/parameters/enable_uring"),
            "{off}"
        );
        assert!(why_not(true, None).unwrap().contains("Linux 6.14+"));
        assert!(why_not(false, Some("Y")).unwrap().contains("root"));
        assert_eq!("uring".parse::<Transport>(), Ok(Transport::Uring));
        assert!("x"
            .parse::<Transport>()
            .unwrap_err()
            .contains("auto, uring or dev"));
    }
}
