//! The open data files: one per backing inode, opened in the stack at its first open
//! and closed there at its last release; a handle per open.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use fuser::{Errno, FileHandle, FopenFlags};

use super::{lock, Handle, SluiceFs};
use crate::data::DataFile;
use crate::node::Node;
use crate::sys;

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
        let mut files = lock(&self.files);
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
        let df = Arc::new(DataFile {
            file,
            fd: dup,
            size: Mutex::new(size),
            locks: Arc::default(),
            writable,
            cache: self.cache,
        });
        self.hub.register(&df);
        let old = files.insert(node.key, (df.clone(), 1));
        if let Some((old, n)) = old {
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

    /// One open of the data file at `key` ended.
    pub(super) fn release_data(&self, key: (u64, u64)) {
        let mut files = lock(&self.files);
        if let Some(e) = files.get_mut(&key) {
            e.1 -= 1;
            if e.1 == 0 {
                let (df, _) = files.remove(&key).expect("present");
                self.hub.close(df);
            }
        }
    }

    pub(super) fn handle(&self, fh: FileHandle) -> Result<(Arc<DataFile>, bool), Errno> {
        lock(&self.handles)
            .get(&fh.0)
            .map(|h| (h.df.clone(), h.sync))
            .ok_or(Errno::EBADF)
    }

    /// Whether a read or write with the open's `flags` (as the kernel sends them with
    /// each request: an `fcntl(F_SETFL, O_DIRECT)` counts) goes through the page cache:
    /// the mount has one, the caller did not ask for `O_DIRECT`, and the file is open
    /// for writing in the stack (a read-only descriptor, kept only when the backing
    /// file refuses writing, reads directly).
    pub(super) fn cached(&self, df: &DataFile, flags: i32) -> bool {
        df.cache && df.writable && flags & libc::O_DIRECT == 0
    }

    pub(super) fn new_handle(&self, (df, key): (Arc<DataFile>, (u64, u64)), flags: i32) -> u64 {
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        let sync = flags & (libc::O_SYNC | libc::O_DSYNC) != 0;
        lock(&self.handles).insert(fh, Handle { df, key, sync });
        fh
    }

    pub(super) fn open_flags() -> FopenFlags {
        FopenFlags::FOPEN_DIRECT_IO | FopenFlags::FOPEN_PARALLEL_DIRECT_WRITES
    }
}
