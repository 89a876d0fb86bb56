//! The FUSE file system: name operations passed through to the backing directory
//! relative to the inodes' descriptors (`crate::node`), data operations handed to the
//! stack (`crate::data`).
//!
//! Permissions are the kernel's (`default_permissions`: it checks the mode bits and
//! owners the backing inodes have, as `getattr` reports them); what a caller creates is
//! given its uid and gid (the gid of a set-group-id directory stays). Locks (`fcntl`,
//! `flock`) are the kernel's own on the mount: the daemon does not ask for them, so
//! the FUSE module keeps them among the mount's users.

use std::collections::HashMap;
use std::ffi::{CString, OsStr, OsString};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use fuser::{
    Errno, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, InitFlags,
    KernelConfig, LockOwner, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData,
    ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyLseek, ReplyOpen, ReplyStatfs, ReplyWrite,
    ReplyXattr, Request, TimeOrNow, WriteFlags,
};

mod data_ops;
mod entry;
mod names;
mod open;
mod xattr;

pub use data_ops::DataOps;

use crate::attr::attr;
use crate::class::Classifier;
use crate::data::DataFile;
use crate::hub::{Answer, Hub};
use crate::node::Nodes;
use crate::sys::{self, check, component};

/// How long the kernel keeps names and attributes (every change goes through us).
const TTL: Duration = Duration::from_secs(1);

/// The most asynchronous requests the kernel keeps outstanding at the daemon
/// (`fuse_init_out.max_background`). A program's asynchronous direct I/O on the mount
/// (io_uring, libaio: FUSE's `FUSE_ASYNC_DIO`) goes to the daemon as background
/// requests, and the kernel holds back every one past this limit in its own FIFO — so
/// at fuser's default (16, the congestion threshold 12) an io_uring QD32 reader never
/// had more than 16 reads at the daemon, and a critical caller's asynchronous request
/// could queue in the kernel behind bulk ones, unseen by the policy. 256: above the
/// stack's commands in flight ([`sluice_runtime::RING_CAP`] 255) and the ring's
/// entries (32 per queue); the kernel lets root set it (an unprivileged mount is
/// capped at `/sys/module/fuse/parameters/max_user_bgreq`). The congestion threshold
/// stays fuser's ¾ of it.
pub(crate) const MAX_BACKGROUND: u16 = 256;

struct Handle {
    df: Arc<DataFile>,
    /// Its key in `SluiceFs::files`.
    key: (u64, u64),
    sync: bool,
    /// The path rules of `--classes` its file's name satisfied at open.
    paths: u64,
}

/// What a request needs of its handle: the data file, whether the open asked for
/// `O_SYNC`/`O_DSYNC`, and its path rules ([`crate::class::Classifier::paths`]).
type Opened = (Arc<DataFile>, bool, u64);

/// An open data file and its opens.
type OpenData = (Arc<DataFile>, u32);
/// A directory entry read at `opendir`: inode, type, name.
type DirEntry = (u64, FileType, OsString);

/// The file system.
pub struct SluiceFs {
    nodes: Nodes,
    hub: Arc<Hub>,
    classes: Arc<Classifier>,
    /// Open data files by backing (device, inode), with their opens.
    files: Mutex<HashMap<(u64, u64), OpenData>>,
    /// With a page cache: the files in `files` with no open, oldest first.
    idle: Mutex<std::collections::VecDeque<(u64, u64)>>,
    /// Closes in the stack under way, by backing inode (see `fs/open.rs`).
    closing: Mutex<HashMap<(u64, u64), Arc<crate::data::Closed>>>,
    handles: Arc<Mutex<HashMap<u64, Handle>>>,
    /// The data path (shared with the ring's queues).
    ops: DataOps,
    /// Ask the kernel for FUSE over io_uring at INIT (`--transport uring`).
    uring: bool,
    /// Whether the kernel agreed (set at INIT).
    pub uring_granted: Arc<std::sync::atomic::AtomicBool>,
    dirs: Mutex<HashMap<u64, Vec<DirEntry>>>,
    next_fh: AtomicU64,
    /// The backing file system takes `O_DIRECT`.
    direct: bool,
    /// The stack has a page cache (`--cache`).
    cache: bool,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl SluiceFs {
    pub fn new(
        root: OwnedFd,
        hub: Arc<Hub>,
        classes: Classifier,
        direct: bool,
        cache: bool,
    ) -> Result<SluiceFs, Errno> {
        let classes = Arc::new(classes);
        let handles = Arc::new(Mutex::new(HashMap::new()));
        let ops = DataOps {
            hub: hub.clone(),
            classes: classes.clone(),
            handles: handles.clone(),
        };
        Ok(SluiceFs {
            nodes: Nodes::new(root)?,
            hub,
            classes,
            ops,
            uring: false,
            uring_granted: Arc::default(),
            files: Mutex::new(HashMap::new()),
            idle: Mutex::new(std::collections::VecDeque::new()),
            closing: Mutex::new(HashMap::new()),
            handles,
            dirs: Mutex::new(HashMap::new()),
            next_fh: AtomicU64::new(1),
            direct,
            cache,
        })
    }
}

impl Filesystem for SluiceFs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        for f in [
            InitFlags::FUSE_DIRECT_IO_ALLOW_MMAP,
            InitFlags::FUSE_PARALLEL_DIROPS,
            InitFlags::FUSE_ASYNC_DIO,
        ] {
            let _ = config.add_capabilities(f);
        }
        let _ = config.set_max_write(1 << 20);
        let _ = config.set_max_background(MAX_BACKGROUND);
        if self.uring {
            let granted = config
                .add_capabilities(InitFlags::FUSE_OVER_IO_URING)
                .is_ok();
            self.uring_granted.store(granted, Ordering::SeqCst);
        }
        Ok(())
    }

    fn destroy(&mut self) {
        self.hub.stop();
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let r = (|| {
            let p = self.nodes.get(parent)?;
            let c = component(name)?;
            let mut a = self.entry_of(&p, &c)?;
            if let Ok(n) = self.nodes.get(a.ino) {
                if let Some((df, _)) = lock(&self.files).get(&n.key) {
                    a.size = *lock(&df.size);
                }
            }
            Ok(a)
        })();
        match r {
            Ok(a) => reply.entry(&TTL, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        self.nodes.forget(ino.0, nlookup);
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.nodes.get(ino).and_then(|n| self.stat_node(&n, ino.0)) {
            Ok(a) => reply.attr(&TTL, &a),
            Err(e) => reply.error(e),
        }
    }

    fn setattr(
        &self,
        req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let _ = req;
        let node = match self.nodes.get(ino) {
            Ok(n) => n,
            Err(e) => return reply.error(e),
        };
        let r = names::set_attrs(&node, mode, uid, gid, atime, mtime);
        if let Err(e) = r {
            return reply.error(e);
        }
        let Some(size) = size else {
            return match self.stat_node(&node, ino.0) {
                Ok(a) => reply.attr(&TTL, &a),
                Err(e) => reply.error(e),
            };
        };
        self.set_size(req, &node, ino, fh, size, reply);
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        match self.nodes.get(ino).and_then(|n| names::read_link(&n)) {
            Ok(b) => reply.data(&b),
            Err(e) => reply.error(e),
        }
    }

    fn mknod(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        rdev: u32,
        reply: ReplyEntry,
    ) {
        self.make(req, parent, name, reply, |p, c| {
            // SAFETY: valid descriptor and C string.
            unsafe { libc::mknodat(p.raw(), c.as_ptr(), mode & !umask, rdev as libc::dev_t) }
        });
    }

    fn mkdir(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        self.make(req, parent, name, reply, |p, c| {
            // SAFETY: valid descriptor and C string.
            unsafe { libc::mkdirat(p.raw(), c.as_ptr(), mode & !umask) }
        });
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let r = (|| {
            let p = self.nodes.get(parent)?;
            let c = component(name)?;
            let key = sys::stat_at(p.raw(), &c)
                .ok()
                .map(|st| (st.st_dev, st.st_ino));
            // SAFETY: valid descriptor and C string.
            check(unsafe { libc::unlinkat(p.raw(), c.as_ptr(), 0) })?;
            if let Some(k) = key {
                self.gone(k);
            }
            Ok(())
        })();
        match r {
            Ok(_) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let r = (|| {
            let p = self.nodes.get(parent)?;
            let c = component(name)?;
            // SAFETY: valid descriptor and C string.
            check(unsafe { libc::unlinkat(p.raw(), c.as_ptr(), libc::AT_REMOVEDIR) })
        })();
        match r {
            Ok(_) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn symlink(
        &self,
        req: &Request,
        parent: INodeNo,
        link_name: &OsStr,
        target: &Path,
        reply: ReplyEntry,
    ) {
        let Ok(t) = CString::new(target.as_os_str().as_bytes()) else {
            return reply.error(Errno::EINVAL);
        };
        self.make(req, parent, link_name, reply, |p, c| {
            // SAFETY: valid descriptor and C strings. The target is stored, never
            // followed by the daemon.
            unsafe { libc::symlinkat(t.as_ptr(), p.raw(), c.as_ptr()) }
        });
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        let r = (|| {
            let p = self.nodes.get(parent)?;
            let q = self.nodes.get(newparent)?;
            let (a, b) = (component(name)?, component(newname)?);
            // The file a rename replaces loses a name (see `unlink`).
            let over = sys::stat_at(q.raw(), &b)
                .ok()
                .map(|st| (st.st_dev, st.st_ino));
            // SAFETY: valid descriptors and C strings.
            check(unsafe {
                libc::renameat2(p.raw(), a.as_ptr(), q.raw(), b.as_ptr(), flags.bits())
            })?;
            if let Some(k) = over {
                self.gone(k);
            }
            Ok(())
        })();
        match r {
            Ok(_) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn link(
        &self,
        _req: &Request,
        ino: INodeNo,
        newparent: INodeNo,
        newname: &OsStr,
        reply: ReplyEntry,
    ) {
        let r = (|| {
            let n = self.nodes.get(ino)?;
            let q = self.nodes.get(newparent)?;
            let c = component(newname)?;
            // SAFETY: valid descriptors and C strings (the inode itself, by its
            // descriptor: no name is resolved).
            check(unsafe {
                libc::linkat(
                    n.raw(),
                    c"".as_ptr(),
                    q.raw(),
                    c.as_ptr(),
                    libc::AT_EMPTY_PATH,
                )
            })?;
            self.entry_of(&q, &c)
        })();
        match r {
            Ok(a) => reply.entry(&TTL, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let r = (|| {
            let n = self.nodes.get(ino)?;
            if n.fmt != libc::S_IFREG {
                // Devices, pipes, sockets: the kernel does not route their I/O here.
                return Err(Errno::ENXIO);
            }
            let write = flags.0 & libc::O_ACCMODE != libc::O_RDONLY;
            let df = self.open_data(&n, write, None)?;
            Ok(self.new_handle(df, flags.0))
        })();
        match r {
            Ok(fh) => reply.opened(FileHandle(fh), Self::open_flags()),
            Err(e) => reply.error(e),
        }
    }

    fn create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let r = (|| {
            let p = self.nodes.get(parent)?;
            let c = component(name)?;
            let base = libc::O_RDWR | self.data_flags();
            let (fd, made) = match sys::openat(
                p.raw(),
                &c,
                base | libc::O_CREAT | libc::O_EXCL,
                mode & !umask,
            ) {
                Ok(fd) => (fd, true),
                Err(e) if e == Errno::EEXIST && flags & libc::O_EXCL == 0 => {
                    (sys::openat(p.raw(), &c, base, 0)?, false)
                }
                Err(e) => return Err(e),
            };
            if made {
                if let Err(e) = self.own(req, &p, &c) {
                    // SAFETY: valid descriptor and C string: undo what we made.
                    unsafe { libc::unlinkat(p.raw(), c.as_ptr(), 0) };
                    return Err(e);
                }
            }
            let pfd = sys::reopen(fd.as_raw_fd(), libc::O_PATH)?;
            let st = sys::stat_fd(pfd.as_raw_fd())?;
            let ino = self.nodes.remember(pfd, &st);
            let node = self.nodes.get(INodeNo(ino))?;
            let opened = self.open_data(&node, true, Some(fd))?;
            let mut a = attr(&st, ino);
            a.size = *lock(&opened.0.size);
            Ok((a, self.new_handle(opened, flags)))
        })();
        match r {
            Ok((a, fh)) => {
                reply.created(&TTL, &a, Generation(0), FileHandle(fh), Self::open_flags())
            }
            Err(e) => reply.error(e),
        }
    }

    fn read(
        &self,
        req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let r = Answer::Fuse(reply);
        self.ops
            .read(req.pid(), fh.0, offset, size, flags.0, None, r);
    }

    fn write(
        &self,
        req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        write_flags: WriteFlags,
        flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let kill = write_flags.contains(WriteFlags::FUSE_WRITE_KILL_SUIDGID);
        let (pid, r) = (req.pid(), Answer::Fuse(reply));
        self.ops
            .write(pid, fh.0, offset, data, flags.0, kill, None, r);
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        // As Linux's close(2) on a local file system: dirty pages of the page cache
        // stay for the flusher (the last close of the file writes them back).
        reply.ok();
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        let h = lock(&self.handles).remove(&fh.0);
        if let Some(h) = h {
            self.release_data(h.key);
        }
        reply.ok();
    }

    fn fsync(
        &self,
        req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        datasync: bool,
        reply: ReplyEmpty,
    ) {
        self.ops
            .fsync(req.pid(), fh.0, datasync, None, Answer::Fuse(reply));
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        let r = (|| {
            let n = self.nodes.get(ino)?;
            let list = names::list(&n, ino.0)?;
            let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
            lock(&self.dirs).insert(fh, list);
            Ok(fh)
        })();
        match r {
            Ok(fh) => reply.opened(FileHandle(fh), FopenFlags::empty()),
            Err(e) => reply.error(e),
        }
    }

    fn readdir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let dirs = lock(&self.dirs);
        let Some(list) = dirs.get(&fh.0) else {
            return reply.error(Errno::EBADF);
        };
        for (i, (ino, k, name)) in list.iter().enumerate().skip(offset as usize) {
            if reply.add(INodeNo(*ino), i as u64 + 1, *k, name) {
                break;
            }
        }
        reply.ok();
    }

    fn releasedir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        reply: ReplyEmpty,
    ) {
        lock(&self.dirs).remove(&fh.0);
        reply.ok();
    }

    fn fsyncdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        datasync: bool,
        reply: ReplyEmpty,
    ) {
        let r = (|| {
            let n = self.nodes.get(ino)?;
            let d = sys::reopen(n.raw(), libc::O_RDONLY | libc::O_DIRECTORY)?;
            // SAFETY: a plain system call on our descriptor.
            check(unsafe {
                if datasync {
                    libc::fdatasync(d.as_raw_fd())
                } else {
                    libc::fsync(d.as_raw_fd())
                }
            })
        })();
        match r {
            Ok(_) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn statfs(&self, _req: &Request, ino: INodeNo, reply: ReplyStatfs) {
        let r = self.nodes.get(ino).and_then(|n| names::statvfs(&n));
        match r {
            Ok(s) => reply.statfs(
                s.f_blocks,
                s.f_bfree,
                s.f_bavail,
                s.f_files,
                s.f_ffree,
                s.f_bsize as u32,
                s.f_namemax as u32,
                s.f_frsize as u32,
            ),
            Err(e) => reply.error(e),
        }
    }

    fn setxattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        name: &OsStr,
        value: &[u8],
        flags: i32,
        _position: u32,
        reply: ReplyEmpty,
    ) {
        match self
            .nodes
            .get(ino)
            .and_then(|n| xattr::set(&n, name, value, flags))
        {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn getxattr(&self, _req: &Request, ino: INodeNo, name: &OsStr, size: u32, reply: ReplyXattr) {
        match self.nodes.get(ino).and_then(|n| xattr::get(&n, name, size)) {
            Ok((len, _)) if size == 0 => reply.size(len),
            Ok((_, b)) => reply.data(&b),
            Err(e) => reply.error(e),
        }
    }

    fn listxattr(&self, _req: &Request, ino: INodeNo, size: u32, reply: ReplyXattr) {
        match self.nodes.get(ino).and_then(|n| xattr::list(&n, size)) {
            Ok((len, _)) if size == 0 => reply.size(len),
            Ok((_, b)) => reply.data(&b),
            Err(e) => reply.error(e),
        }
    }

    fn removexattr(&self, _req: &Request, ino: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        match self.nodes.get(ino).and_then(|n| xattr::remove(&n, name)) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn access(&self, _req: &Request, _ino: INodeNo, _mask: fuser::AccessFlags, reply: ReplyEmpty) {
        // The kernel checks permissions itself (default_permissions).
        reply.ok();
    }

    fn fallocate(
        &self,
        req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        self.ops
            .fallocate(req.pid(), fh.0, offset, length, mode, Answer::Fuse(reply));
    }

    fn lseek(
        &self,
        req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: i64,
        whence: i32,
        reply: ReplyLseek,
    ) {
        self.data_lseek(req, fh, offset, whence, reply);
    }
}
