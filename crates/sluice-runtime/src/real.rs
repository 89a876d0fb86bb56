//! The real backend's device port: the block layer's dispatches become io_uring SQEs
//! on files of the stack's directory (`O_DIRECT`, registered with the ring), and CQEs
//! come back as piece completions. One ring, one thread (the runtime's core).

use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use io_uring::{opcode, types, IoUring};
use sluice_block::DevicePort;
use sluice_core::policy::Dispatch;
use sluice_core::{Nanos, Op};

use crate::io::FILE_SPAN;

/// Most files a stack can have open (the ring's sparse file table).
pub const MAX_FILES: u32 = 1024;

pub(crate) struct RealPort {
    ring: IoUring,
    pub dir: PathBuf,
    /// Open files with `O_DIRECT` (the default); off: through the host's page cache.
    direct: bool,
    files: Vec<std::fs::File>,
    /// By block-layer request id: the buffer's address and the request's offset.
    bufs: Vec<(usize, u64)>,
    /// By block-layer request id: bytes transferred so far (its pieces' results).
    pub bytes: Vec<i64>,
    inflight: u32,
    entries: u32,
    origin: Instant,
    /// Completions reaped and not yet handled (handled a few at a time, so the device
    /// gets new work before a whole burst of completions has been handled).
    pub cqes: std::collections::VecDeque<(u32, i32)>,
}

/// Completions handled between two submissions (as the engine's `--submit-batch`: holding
/// every new I/O until a whole burst of completions was handled cost 16–20 % of the IOPS
/// at QD32 on this machine's disk).
pub const HANDLE_BATCH: usize = 4;

impl std::fmt::Debug for RealPort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RealPort").field("dir", &self.dir).finish()
    }
}

impl RealPort {
    pub(crate) fn new(dir: &Path, entries: u32, direct: bool) -> Result<RealPort, String> {
        let meta =
            std::fs::metadata(dir).map_err(|e| format!("directory {}: {e}", dir.display()))?;
        if !meta.is_dir() {
            return Err(format!("{} is not a directory", dir.display()));
        }
        // One thread submits and reaps: the flags that make that cheaper where the kernel
        // has them (6.1+), plain set-up otherwise.
        let ring = IoUring::builder()
            .setup_single_issuer()
            .setup_coop_taskrun()
            .setup_defer_taskrun()
            .build(entries)
            .or_else(|_| IoUring::new(entries))
            .map_err(|e| format!("cannot create an io_uring with {entries} entries: {e}"))?;
        ring.submitter()
            .register_files_sparse(MAX_FILES)
            .map_err(|e| format!("cannot register a file table with the ring: {e}"))?;
        Ok(RealPort {
            ring,
            dir: dir.to_path_buf(),
            direct,
            files: Vec::new(),
            bufs: Vec::new(),
            bytes: Vec::new(),
            inflight: 0,
            entries,
            origin: Instant::now(),
            cqes: std::collections::VecDeque::with_capacity(entries as usize),
        })
    }

    /// Nanoseconds since the stack started.
    pub(crate) fn clock(&self) -> Nanos {
        self.origin.elapsed().as_nanos() as Nanos
    }

    /// Create file number `id` (`O_DIRECT`, new: an existing file is never touched).
    pub(crate) fn create(&mut self, id: u32, name: &str) -> std::io::Result<()> {
        if id >= MAX_FILES {
            return Err(std::io::Error::other(format!(
                "more than {MAX_FILES} files in one stack"
            )));
        }
        let path = self.dir.join(name);
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .custom_flags(if self.direct { libc::O_DIRECT } else { 0 })
            .open(&path)
            .map_err(|e| {
                let refused_direct = e.raw_os_error() == Some(libc::EINVAL) && self.direct;
                let why = if refused_direct {
                    // Some kernels create the file before refusing O_DIRECT: it is ours
                    // (create_new), so it goes. Any other error leaves the path alone —
                    // above all EEXIST, a file the stack did not create.
                    let _ = std::fs::remove_file(&path);
                    "this file system refuses O_DIRECT: use a disk-backed directory, or \
                     StackBuilder::direct(false) for I/O through the page cache"
                } else {
                    "the runtime creates its files and never writes one it did not create"
                };
                std::io::Error::new(e.kind(), format!("{}: {e} ({why})", path.display()))
            })?;
        self.ring
            .submitter()
            .register_files_update(id, &[f.as_raw_fd()])
            .map_err(|e| std::io::Error::other(format!("registering {}: {e}", path.display())))?;
        debug_assert_eq!(self.files.len(), id as usize);
        self.files.push(f);
        Ok(())
    }

    /// Open the existing file `name` read-only as file number `id` (the runtime never
    /// writes a file it did not create). Returns its length.
    pub(crate) fn open_existing(&mut self, id: u32, name: &str) -> std::io::Result<u64> {
        if id >= MAX_FILES {
            return Err(std::io::Error::other(format!(
                "more than {MAX_FILES} files in one stack"
            )));
        }
        let path = self.dir.join(name);
        let f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(if self.direct { libc::O_DIRECT } else { 0 })
            .open(&path)
            .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        let len = f.metadata()?.len();
        self.ring
            .submitter()
            .register_files_update(id, &[f.as_raw_fd()])
            .map_err(|e| std::io::Error::other(format!("registering {}: {e}", path.display())))?;
        self.files.push(f);
        Ok(len)
    }

    /// The buffer of block-layer request `req`.
    pub(crate) fn set_buffer(&mut self, req: u64, ptr: usize, offset: u64) {
        let i = req as usize;
        if self.bufs.len() <= i {
            self.bufs.resize(i + 1, (0, 0));
            self.bytes.resize(i + 1, 0);
        }
        self.bufs[i] = (ptr, offset);
        self.bytes[i] = 0;
    }

    pub(crate) fn inflight(&self) -> u32 {
        self.inflight
    }

    /// Submit what was queued and, when no reaped completion is left to handle, wait for
    /// one or until `deadline` (ns since the start; `None`: no deadline); then collect
    /// the CQEs into `cqes`.
    pub(crate) fn wait(&mut self, deadline: Option<Nanos>) -> std::io::Result<()> {
        if !self.cqes.is_empty() {
            self.ring.submit()?;
            return Ok(());
        }
        let now = self.clock();
        let r = match deadline {
            None if self.inflight > 0 => self.ring.submit_and_wait(1).map(|_| ()),
            None => self.ring.submit().map(|_| ()),
            Some(d) => {
                let wait = d.saturating_sub(now).max(1_000);
                let ts = types::Timespec::new()
                    .sec(wait / 1_000_000_000)
                    .nsec((wait % 1_000_000_000) as u32);
                let args = types::SubmitArgs::new().timespec(&ts);
                self.ring.submitter().submit_with_args(1, &args).map(|_| ())
            }
        };
        match r {
            Err(e)
                if !matches!(
                    e.raw_os_error(),
                    Some(libc::ETIME) | Some(libc::EINTR) | Some(libc::EBUSY)
                ) =>
            {
                return Err(e)
            }
            _ => {}
        }
        let before = self.cqes.len();
        for c in self.ring.completion() {
            self.cqes.push_back((c.user_data() as u32, c.result()));
        }
        self.inflight -= (self.cqes.len() - before) as u32;
        Ok(())
    }
}

impl DevicePort for RealPort {
    fn max_inflight(&self) -> u32 {
        self.entries
    }

    fn try_submit(&mut self, _now_ns: Nanos, tag: u32, d: &Dispatch) -> bool {
        if self.inflight >= self.entries {
            return false;
        }
        let file = (d.req.offset / FILE_SPAN) as u32;
        let off = d.req.offset % FILE_SPAN;
        let (ptr, req_off) = self.bufs[d.req.id.0 as usize];
        let buf = (ptr + (d.req.offset - req_off) as usize) as *mut u8;
        let fd = types::Fixed(file);
        let e = match d.req.op {
            Op::Read => opcode::Read::new(fd, buf, d.req.len).offset(off).build(),
            // FUA: RWF_DSYNC makes this one write durable when it completes.
            Op::Write => opcode::Write::new(fd, buf, d.req.len)
                .offset(off)
                .rw_flags(if d.req.fua { libc::RWF_DSYNC } else { 0 })
                .build(),
            // A flush covers the writes completed before it was submitted (the runtime
            // submits it after the task's writes completed). The ring does not order
            // an fsync after writes still in flight, and this ring is not polled
            // (IOPOLL rings refuse fsync).
            Op::Flush => opcode::Fsync::new(fd)
                .flags(types::FsyncFlags::DATASYNC)
                .build(),
        }
        .user_data(tag as u64);
        // SAFETY: the buffer is owned by the I/O slot until its completion is handled;
        // the file is registered; the ring has room (inflight < entries).
        unsafe { self.ring.submission().push(&e) }.expect("ring has room: inflight < entries");
        self.inflight += 1;
        true
    }

    fn set_wrr_weights(&mut self, _weights: [u32; 3]) {
        // A file has no NVMe arbitration to program.
    }
}
