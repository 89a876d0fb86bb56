//! The data operations of the file system: each resolves the caller's handle and class
//! and hands the work to the stack (`crate::hub`); a truncation goes through the data
//! path when the file is open there.
//!
//! The reads, writes, fsyncs and fallocates are [`DataOps`]'s: one function each, for
//! a request of either transport (fuser's reply, or the ring entry that brought it:
//! `crate::uring`).

use std::os::fd::AsRawFd;
use std::sync::Arc;

use std::collections::HashMap;
use std::sync::Mutex;

use fuser::{
    Errno, FileHandle, INodeNo, ReplyAttr, ReplyData, ReplyEmpty, ReplyLseek, ReplyWrite, Request,
};

use super::{lock, Handle, SluiceFs, TTL};
use crate::attr::attr;
use crate::class::{Classifier, Who};
use crate::data::attr_after;
use crate::data::WriteData;
use crate::hub::Job;
use crate::hub::{Answer, Hub};
use crate::node::Node;
use crate::sys::{self, check};

impl SluiceFs {
    /// Ask for FUSE over io_uring at INIT.
    pub fn with_uring(mut self) -> SluiceFs {
        self.uring = true;
        self
    }

    /// The data path, for the ring's queues.
    pub fn ops(&self) -> DataOps {
        self.ops.clone()
    }

    /// `setattr` with a size: through the data path when the file is open there (it
    /// waits for the writes at the end), else on the backing file at once.
    pub(super) fn set_size(
        &self,
        req: &Request,
        node: &Arc<Node>,
        ino: INodeNo,
        fh: Option<FileHandle>,
        size: u64,
        reply: ReplyAttr,
    ) {
        let opened = fh.and_then(|fh| self.handle(fh).ok());
        let paths = match &opened {
            Some(h) => h.2,
            None => self.classes.paths(node.raw()),
        };
        let df = opened
            .map(|h| h.0)
            .or_else(|| lock(&self.files).get(&node.key).map(|e| e.0.clone()));
        match df {
            Some(df) if df.writable => {
                let who = self.classes.who(req.pid(), paths);
                let n2 = node.clone();
                let df2 = df.clone();
                let done = attr_after(reply, move || {
                    let st = sys::stat_fd(n2.raw())?;
                    let mut a = attr(&st, ino.0);
                    a.size = *lock(&df2.size);
                    Ok((a, TTL))
                });
                self.hub
                    .submit(&who, None, Job::Truncate { df, size, done });
            }
            _ => {
                let r = sys::reopen(node.raw(), libc::O_WRONLY).and_then(|fd| {
                    // SAFETY: a plain system call on our descriptor.
                    check(unsafe { libc::ftruncate(fd.as_raw_fd(), size as i64) }).map(drop)
                });
                if let (Ok(()), Some(df)) = (&r, &df) {
                    *lock(&df.size) = size;
                }
                match r.and_then(|()| self.stat_node(node, ino.0)) {
                    Ok(a) => reply.attr(&TTL, &a),
                    Err(e) => reply.error(e),
                }
            }
        }
    }

    pub(super) fn data_lseek(
        &self,
        req: &Request,
        fh: FileHandle,
        offset: i64,
        whence: i32,
        reply: ReplyLseek,
    ) {
        match self.handle(fh) {
            Ok((df, _, paths)) if df.cache => {
                let who = self.classes.who(req.pid(), paths);
                self.hub.submit(
                    &who,
                    None,
                    Job::Lseek {
                        df,
                        offset,
                        whence,
                        reply,
                    },
                );
            }
            Ok((df, _, _)) => {
                // SAFETY: a plain system call on our descriptor (SEEK_DATA / SEEK_HOLE
                // of the backing file; its own position is not used by the data path).
                let r = unsafe { libc::lseek(df.fd.as_raw_fd(), offset, whence) };
                if r < 0 {
                    reply.error(sys::last())
                } else {
                    reply.offset(r)
                }
            }
            Err(e) => reply.error(e),
        }
    }
}

/// The data path of open files, shared by the file system and the ring's queues.
#[derive(Clone)]
pub struct DataOps {
    pub(super) hub: Arc<Hub>,
    pub(super) classes: Arc<Classifier>,
    pub(super) handles: Arc<Mutex<HashMap<u64, Handle>>>,
}

impl DataOps {
    pub(super) fn handle(&self, fh: u64) -> Result<super::Opened, Errno> {
        lock(&self.handles)
            .get(&fh)
            .map(|h| (h.df.clone(), h.sync, h.paths))
            .ok_or(Errno::EBADF)
    }

    /// The core whose worker serves a request of `who` that came through the ring queue
    /// of core `at` (`None`: from `/dev/fuse`): [`crate::placement`]'s rule.
    fn core(&self, who: &Who, at: Option<u16>) -> Option<u16> {
        at.and_then(|c| crate::placement::ring_request_core(self.hub.placement, who.class, c))
    }

    /// A read of `size` bytes at `offset` by thread `pid` through handle `fh`; `flags`
    /// are the open's flags as the kernel sends them with the request. `at`: the core
    /// of the ring queue it came through, or `None` (`/dev/fuse`).
    #[allow(clippy::too_many_arguments)]
    pub fn read(
        &self,
        pid: u32,
        fh: u64,
        offset: u64,
        size: u32,
        flags: i32,
        at: Option<u16>,
        reply: Answer<ReplyData>,
    ) {
        let t0 = self.hub.trace.now();
        match self.handle(fh) {
            Ok((df, _, paths)) => {
                let who = self.classes.who(pid, paths);
                let cached = SluiceFs::cached(&df, flags);
                self.hub.submit_at(
                    &who,
                    self.core(&who, at),
                    Job::Read {
                        df,
                        off: offset,
                        size,
                        cached,
                        reply,
                    },
                    t0,
                );
            }
            Err(e) => reply.error(e),
        }
    }

    /// A write; `kill_setid`: the kernel's `FUSE_WRITE_KILL_SUIDGID` (the caller has no
    /// CAP_FSETID), whose set-ID bits are cleared first (`kill_setid`).
    #[allow(clippy::too_many_arguments)]
    pub fn write(
        &self,
        pid: u32,
        fh: u64,
        offset: u64,
        data: &[u8],
        flags: i32,
        kill_setid: bool,
        at: Option<u16>,
        reply: Answer<ReplyWrite>,
    ) {
        match self.handle(fh) {
            Ok((df, sync, paths)) => {
                if kill_setid {
                    if let Err(e) = super::names::kill_setid_fd(df.fd.as_raw_fd()) {
                        return reply.error(e);
                    }
                }
                let who = self.classes.who(pid, paths);
                let sync = sync || flags & (libc::O_SYNC | libc::O_DSYNC) != 0;
                let cached = SluiceFs::cached(&df, flags);
                self.hub.submit(
                    &who,
                    self.core(&who, at),
                    Job::Write {
                        df,
                        off: offset,
                        // Copied once, into the buffer of its blocks.
                        data: WriteData::new(offset, data),
                        sync,
                        cached,
                        reply,
                    },
                );
            }
            Err(e) => reply.error(e),
        }
    }

    pub fn fsync(
        &self,
        pid: u32,
        fh: u64,
        datasync: bool,
        at: Option<u16>,
        reply: Answer<ReplyEmpty>,
    ) {
        match self.handle(fh) {
            Ok((df, _, paths)) => {
                let who = self.classes.who(pid, paths);
                self.hub.submit(
                    &who,
                    self.core(&who, at),
                    Job::Fsync {
                        df,
                        datasync,
                        reply,
                    },
                );
            }
            Err(e) => reply.error(e),
        }
    }

    pub fn fallocate(
        &self,
        pid: u32,
        fh: u64,
        offset: u64,
        length: u64,
        mode: i32,
        reply: Answer<ReplyEmpty>,
    ) {
        match self.handle(fh) {
            Ok((df, _, paths)) => {
                let who = self.classes.who(pid, paths);
                self.hub.submit(
                    &who,
                    None,
                    Job::Fallocate {
                        df,
                        off: offset,
                        len: length,
                        mode,
                        reply,
                    },
                );
            }
            Err(e) => reply.error(e),
        }
    }
}
