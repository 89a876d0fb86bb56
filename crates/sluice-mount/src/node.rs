//! The inode table: each FUSE inode number holds an `O_PATH` descriptor of a backing
//! inode, reached by `openat` of one component with `O_NOFOLLOW` from its parent's
//! descriptor. Every name operation starts from such a descriptor, so nothing outside
//! the backing directory is reachable: there is no path to walk, and a symbolic link
//! is never followed (it is an inode of its own, read with `readlinkat`).

use std::collections::HashMap;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::{Arc, Mutex};

use fuser::{Errno, INodeNo};

use crate::sys;

/// One backing inode the kernel knows.
#[derive(Debug)]
pub struct Node {
    /// `O_PATH | O_NOFOLLOW` descriptor of the inode.
    pub fd: OwnedFd,
    /// (device, inode) on the backing file system.
    pub key: (u64, u64),
    /// The file type bits (`S_IFMT`) of the inode.
    pub fmt: u32,
}

impl Node {
    pub fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

#[derive(Debug, Default)]
struct Table {
    by_ino: HashMap<u64, (Arc<Node>, u64)>,
    by_key: HashMap<(u64, u64), u64>,
    next: u64,
}

/// The inodes the kernel holds, each with its lookup count.
#[derive(Debug)]
pub struct Nodes {
    t: Mutex<Table>,
}

impl Nodes {
    /// The table with the root: `root` is the backing directory's `O_PATH` descriptor.
    pub fn new(root: OwnedFd) -> Result<Nodes, Errno> {
        let st = sys::stat_fd(root.as_raw_fd())?;
        let node = Arc::new(Node {
            fd: root,
            key: (st.st_dev, st.st_ino),
            fmt: st.st_mode & libc::S_IFMT,
        });
        let mut t = Table {
            next: 2,
            ..Table::default()
        };
        t.by_key.insert(node.key, 1);
        t.by_ino.insert(1, (node, 1));
        Ok(Nodes { t: Mutex::new(t) })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.t.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The node of inode number `ino`.
    pub fn get(&self, ino: INodeNo) -> Result<Arc<Node>, Errno> {
        self.lock()
            .by_ino
            .get(&ino.0)
            .map(|(n, _)| n.clone())
            .ok_or(Errno::ESTALE)
    }

    /// A looked-up inode (`fd`: its new `O_PATH` descriptor, `st` its stat): its
    /// number, counted once more; the same number for the same backing inode.
    pub fn remember(&self, fd: OwnedFd, st: &libc::stat) -> u64 {
        let key = (st.st_dev, st.st_ino);
        let mut t = self.lock();
        if let Some(&ino) = t.by_key.get(&key) {
            if let Some(e) = t.by_ino.get_mut(&ino) {
                e.1 += 1;
                return ino;
            }
        }
        let ino = t.next;
        t.next += 1;
        let node = Arc::new(Node {
            fd,
            key,
            fmt: st.st_mode & libc::S_IFMT,
        });
        t.by_key.insert(key, ino);
        t.by_ino.insert(ino, (node, 1));
        ino
    }

    /// The kernel forgets `n` lookups of `ino`; at none the descriptor closes.
    pub fn forget(&self, ino: u64, n: u64) {
        if ino == 1 {
            return;
        }
        let mut t = self.lock();
        let gone = match t.by_ino.get_mut(&ino) {
            Some(e) => {
                e.1 = e.1.saturating_sub(n);
                (e.1 == 0).then(|| e.0.key)
            }
            None => None,
        };
        if let Some(key) = gone {
            t.by_ino.remove(&ino);
            if t.by_key.get(&key) == Some(&ino) {
                t.by_key.remove(&key);
            }
        }
    }
}
