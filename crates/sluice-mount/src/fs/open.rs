//! The open data files: one per backing inode, opened in the stack at its first open
//! and closed there at its last release; a handle per open.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use fuser::{Errno, FileHandle, FopenFlags};

use super::{lock, Handle, SluiceFs};
use crate::data::DataFile;
use crate::node::Node;
use crate::sys;

/// Most files kept open in the stack with no open of the caller's (their pages cached).
pub(super) const MAX_IDLE: usize = 128;

impl SluiceFs {
    pub(super) fn data_flags(&self) -> i32 {
        if self.direct {
            libc::O_DIRECT
        } else {
            0
        }
    }

    /// The data file of `node` (opened in the stack at its first open), counted.
    pub(super) fn open_data(
        &self,
        node: &Node,
        write: bool,
        made: Option<OwnedFd>,
    ) -> Result<(Arc<DataFile>, (u64, u64)), Errno> {
        // A close of the inode's last data file may still be writing back its dirty
        // pages (an idle file pushed out, say): the backing file is not yet what the
        // caller must see (PostgreSQL reopening an index initdb wrote read it as
        // empty). Wait for it without holding the table; no close of this inode can
        // start while we hold it afterwards.
        let mut files = loop {
            let files = lock(&self.files);
            if files.contains_key(&node.key) {
                break files;
            }
            match self.pending_close(node.key) {
                Some(c) => {
                    drop(files);
                    c.wait();
                }
                None => break files,
            }
        };
        if let Some((df, n)) = files.get_mut(&node.key) {
            if df.writable || !write {
                *n += 1;
                return Ok((df.clone(), node.key));
            }
        }
        // First open (or the first for writing: a writable descriptor replaces a
        // read-only one for later opens; the earlier opens keep theirs).
        let (fd, writable) = match made {
            Some(fd) => (fd, true),
            None => match sys::reopen(node.raw(), libc::O_RDWR | self.data_flags()) {
                Ok(fd) => (fd, true),
                Err(e) if write => return Err(e),
                Err(_) => (
                    sys::reopen(node.raw(), libc::O_RDONLY | self.data_flags())?,
                    false,
                ),
            },
        };
        let dup = fd.try_clone().map_err(|e| sys::errno_of(&e))?;
        let size = sys::stat_fd(fd.as_raw_fd())?.st_size as u64;
        let name = format!(
            "ino{}.{}",
            node.key.1,
            self.next_fh.fetch_add(1, Ordering::Relaxed)
        );
        let file = self.hub.adopt(name, std::fs::File::from(fd)).map_err(|e| {
            eprintln!("sluice mount: the stack refused a file: {e}");
            sys::errno_of(&e)
        })?;
        let df = Arc::new(DataFile::new(file, dup, size, writable, self.cache));
        self.hub.register(&df);
        let old = files.insert(node.key, (df.clone(), 1));
        if let Some((old, 0)) = old {
            // Idle (kept for its cached pages): written back and closed.
            lock(&self.idle).retain(|k| *k != node.key);
            self.close_data(node.key, old);
        } else if let Some((old, n)) = old {
            // Its opens keep their handles (moved to their own key); it closes with
            // the last of them.
            let moved = (u64::MAX, Arc::as_ptr(&old) as u64);
            files.insert(moved, (old.clone(), n));
            for h in lock(&self.handles).values_mut() {
                if Arc::ptr_eq(&h.df, &old) {
                    h.key = moved;
                }
            }
        }
        Ok((df, node.key))
    }

    /// One open of the data file at `key` ended. Without a page cache the last one
    /// closes it in the stack. With one, the file stays open there, idle (up to
    /// [`MAX_IDLE`] files, the oldest closed first): its pages stay in the cache and
    /// are the file's contents until written back, so the next open of the inode must
    /// find them — `cp` then `cat`, or fio closing after its write phase and opening
    /// again to verify. A file whose last name is gone closes at once (its space goes
    /// back to the backing file system).
    pub(super) fn release_data(&self, key: (u64, u64)) {
        let mut files = lock(&self.files);
        let Some(e) = files.get_mut(&key) else {
            return;
        };
        e.1 -= 1;
        if e.1 > 0 {
            return;
        }
        let unlinked = sys::stat_fd(e.0.fd.as_raw_fd()).map_or(true, |st| st.st_nlink == 0);
        if !self.cache || unlinked || key.0 == u64::MAX {
            let (df, _) = files.remove(&key).expect("present");
            self.close_data(key, df);
            return;
        }
        let mut idle = lock(&self.idle);
        idle.retain(|k| *k != key);
        idle.push_back(key);
        while idle.len() > MAX_IDLE {
            let old = idle.pop_front().expect("non-empty");
            if files.get(&old).is_some_and(|e| e.1 == 0) {
                let (df, _) = files.remove(&old).expect("present");
                self.close_data(old, df);
            }
        }
    }

    /// A name of the backing inode `key` was removed: if that was its last and the
    /// file is only kept idle, close it (its space goes back).
    pub(super) fn gone(&self, key: (u64, u64)) {
        let mut files = lock(&self.files);
        let Some(e) = files.get(&key) else { return };
        let unlinked = sys::stat_fd(e.0.fd.as_raw_fd()).map_or(true, |st| st.st_nlink == 0);
        if e.1 == 0 && unlinked {
            let (df, _) = files.remove(&key).expect("present");
            lock(&self.idle).retain(|k| *k != key);
            self.close_data(key, df);
        }
    }

    /// Close `df`, the data file of `key`, in the stack; until that finished, a new
    /// open or a look at the inode's length waits ([`Self::wait_closed`]).
    fn close_data(&self, key: (u64, u64), df: Arc<DataFile>) {
        let mut closing = lock(&self.closing);
        closing.retain(|_, c| !c.is_set());
        closing.insert(key, df.closed.clone());
        drop(closing);
        self.hub.close(df);
    }

    /// A close of `key`'s data file under way, if any.
    fn pending_close(&self, key: (u64, u64)) -> Option<Arc<crate::data::Closed>> {
        lock(&self.closing)
            .get(&key)
            .filter(|c| !c.is_set())
            .cloned()
    }

    /// Wait for a close of `key`'s data file under way, if any.
    pub(super) fn wait_closed(&self, key: (u64, u64)) {
        if let Some(c) = self.pending_close(key) {
            c.wait();
        }
    }

    pub(super) fn handle(&self, fh: FileHandle) -> Result<super::Opened, Errno> {
        self.ops.handle(fh.0)
    }

    /// Whether a read or write with the open's `flags` (as the kernel sends them with
    /// each request: an `fcntl(F_SETFL, O_DIRECT)` counts) goes through the page cache:
    /// the mount has one, the caller did not ask for `O_DIRECT`, and the file is open
    /// for writing in the stack (a read-only descriptor, kept only when the backing
    /// file refuses writing, reads directly).
    pub(super) fn cached(df: &DataFile, flags: i32) -> bool {
        df.cache && df.writable && flags & libc::O_DIRECT == 0
    }

    /// A new open of `df` (backing inode `key`); the path rules its file's name
    /// satisfies now are read once, here.
    pub(super) fn new_handle(&self, (df, key): (Arc<DataFile>, (u64, u64)), flags: i32) -> u64 {
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        let sync = flags & (libc::O_SYNC | libc::O_DSYNC) != 0;
        let paths = self.classes.paths(df.fd.as_raw_fd());
        lock(&self.handles).insert(
            fh,
            Handle {
                df,
                key,
                sync,
                paths,
            },
        );
        fh
    }

    pub(super) fn open_flags() -> FopenFlags {
        FopenFlags::FOPEN_DIRECT_IO | FopenFlags::FOPEN_PARALLEL_DIRECT_WRITES
    }
}
