//! The store: metadata in memory, the running transaction, commits (compound and
//! file-level), checkpoints, mount with recovery, and the file operations.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::io;

use sluice_runtime::{Activity, Condvar, DmaBuffer, File, IoHandle, IoOptions, Mutex, Op};

use crate::layout::{Geometry, Inode, BLOCK, MAX_FILE_BLOCKS, MAX_NAME};

mod commit;
mod meta;
mod mount;

/// How a commit's data and journal writes are ordered before its FLUSH.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FsyncPath {
    /// Data first, then the journal blocks (the baseline).
    #[default]
    Sync,
    /// AIOS's asynchronous path: the journal blocks go out while the data is in flight.
    Async,
}

/// How `fsync` makes a file durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommitMode {
    /// jbd2-like: the journal task commits the whole running transaction.
    Compound,
    /// FastResponse's fjournal: the fsyncing task commits an f-transaction of its file.
    FileLevel,
}

/// What went wrong.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The device's I/O failed.
    #[error("store I/O: {0}")]
    Io(#[from] io::Error),
    /// No such file.
    #[error("no file '{0}' in the store")]
    NotFound(String),
    /// The name is taken.
    #[error("file '{0}' exists in the store")]
    Exists(String),
    /// The name is empty, too long or has '/' or NUL.
    #[error("file name '{0}': give 1 to {MAX_NAME} bytes without '/' or NUL")]
    BadName(String),
    /// Out of blocks or inodes.
    #[error("the store is full ({0})")]
    NoSpace(&'static str),
    /// The write would pass the largest file.
    #[error("a file holds at most {} bytes", MAX_FILE_BLOCKS * BLOCK as u64)]
    TooBig,
    /// A commit failed: the journal stopped (remount to recover).
    #[error("the store's journal aborted after an I/O error: {0}; remount to recover")]
    Aborted(String),
    /// The on-disk format is not a store's, or is damaged.
    #[error("{0}")]
    Corrupt(String),
}

/// A file of the store (its inode number).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StoreFile {
    ino: u32,
}

/// The store's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// Normal transactions committed.
    pub commits: u64,
    /// Metadata blocks they wrote to the journal.
    pub journal_blocks: u64,
    /// f-transactions committed.
    pub ftxns: u64,
    /// Checkpoints (metadata written home, journal reclaimed).
    pub checkpoints: u64,
    /// Normal transactions redone at mount.
    pub redone: u64,
    /// f-transactions redone at mount.
    pub fredone: u64,
    /// Inodes without a name freed at mount (files whose creation did not commit).
    pub orphans: u64,
    /// Buffered blocks written home by normal commits (ordered data: every file's).
    pub data_by_commit: u64,
    /// Buffered blocks written home by fsyncs of their own file.
    pub data_by_fsync: u64,
}

/// The device: blocks of a runtime file.
#[derive(Debug)]
pub(crate) struct Dev {
    file: File,
}

impl Dev {
    pub(crate) async fn read(&self, block: u64) -> io::Result<Vec<u8>> {
        let (r, buf) = self
            .file
            .read_at(DmaBuffer::new(BLOCK), block * BLOCK as u64)
            .await;
        r?;
        Ok(buf.to_vec())
    }

    async fn write(&self, block: u64, data: &[u8], opts: IoOptions) -> io::Result<()> {
        let (r, _) = self
            .file
            .write_at_with(DmaBuffer::from_slice(data), block * BLOCK as u64, opts)
            .await;
        r.map(|_| ())
    }

    /// Write blocks (home block, contents) concurrently and wait for all.
    async fn write_all(&self, blocks: &[(u64, Vec<u8>)], opts: IoOptions) -> io::Result<()> {
        Dev::wait_all(self.submit_all(blocks, opts)).await
    }

    fn submit_all(&self, blocks: &[(u64, Vec<u8>)], opts: IoOptions) -> Vec<IoHandle> {
        blocks
            .iter()
            .map(|(b, d)| {
                self.file
                    .submit(Op::Write, DmaBuffer::from_slice(d), b * BLOCK as u64, opts)
            })
            .collect()
    }

    async fn wait_all(hs: Vec<IoHandle>) -> io::Result<()> {
        let mut first = Ok(());
        for h in hs {
            if let (Err(e), _) = h.await {
                if first.is_ok() {
                    first = Err(e);
                }
            }
        }
        first
    }

    async fn flush(&self) -> io::Result<()> {
        self.file.fsync().await
    }
}

#[derive(Debug, Default)]
struct Txn {
    id: u64,
    dirty: BTreeSet<u64>,
    freed_blocks: Vec<u32>,
    freed_inodes: Vec<u32>,
}

#[derive(Debug)]
struct State {
    g: Geometry,
    /// Every metadata block (inode table, directory, bitmap, indirect blocks).
    meta: BTreeMap<u64, Vec<u8>>,
    running: Txn,
    /// Transactions closed and committing: their frees, released at commit.
    closing: BTreeMap<u64, (Vec<u32>, Vec<u32>)>,
    /// Open write handles per transaction, and per inode.
    handles: BTreeMap<u64, u32>,
    ino_handles: BTreeMap<u32, u32>,
    committed: u64,
    requested: u64,
    /// Committed metadata not yet written home.
    checkpoint: BTreeMap<u64, Vec<u8>>,
    jhead: u64,
    fhead: u64,
    fseq: u64,
    /// Blocks in use (in memory: includes blocks freed by a transaction not committed).
    used: Vec<bool>,
    hint: u64,
    inode_used: Vec<bool>,
    names: BTreeMap<String, (u32, u32)>,
    /// The last transaction that changed each inode.
    ino_txn: BTreeMap<u32, u64>,
    /// Buffered data not yet home, by (inode, block index).
    data: BTreeMap<(u32, u64), Dirty>,
    data_bytes: u64,
    next_gen: u64,
    /// Why the journal stopped, if it did.
    aborted: Option<String>,
    stats: StoreStats,
}

/// A buffered block not yet home.
#[derive(Debug)]
struct Dirty {
    /// Its home block (allocated at write time).
    phys: u64,
    bytes: Vec<u8>,
    /// The transaction that first dirtied it: it goes home before that one commits.
    txn: u64,
    /// Bumped by every write, so a writeback removes it only if unchanged.
    gen: u64,
}

/// A copy of a buffered block taken for writeback: (inode, index), generation, home,
/// contents.
type DataCopy = ((u32, u64), u64, u64, Vec<u8>);

/// Buffered data above which a writer waits for a commit to write it home.
const DATA_LIMIT: u64 = 32 << 20;

/// A mounted store (share it with `Rc`). Its journal task runs until the stack ends.
#[derive(Debug)]
pub struct Store {
    dev: Dev,
    mode: CommitMode,
    st: RefCell<State>,
    lock: Mutex<()>,
    /// Wakes the journal task.
    work: Condvar,
    /// Signalled when a transaction commits or a write handle ends.
    done: Condvar,
    commit_lock: Mutex<()>,
    /// Held while buffered data goes home (a block never has two writebacks in flight).
    data_lock: Mutex<()>,
    fsync_path: std::cell::Cell<FsyncPath>,
    fj_lock: Mutex<()>,
}

/// How often the journal task commits a running transaction with changes (jbd2's
/// commit interval is 5 s; shorter here, as simulated runs are short).
const COMMIT_INTERVAL_NS: u64 = 50_000_000;

fn journal_io() -> IoOptions {
    IoOptions::new().activity(Activity::WAL)
}

impl Store {
    /// Choose the synchronous (default) or asynchronous (AIOS) commit path.
    pub fn set_fsync_path(&self, path: FsyncPath) {
        self.fsync_path.set(path);
    }

    /// The counters.
    pub fn stats(&self) -> StoreStats {
        self.st.borrow().stats
    }

    /// The files, by name.
    pub fn list(&self) -> Vec<(String, u64)> {
        let st = self.st.borrow();
        st.names
            .iter()
            .map(|(n, (ino, _))| (n.clone(), st.inode(*ino).size))
            .collect()
    }

    /// Create an empty file `name`.
    pub fn create(&self, name: &str) -> Result<StoreFile, StoreError> {
        if name.is_empty() || name.len() > MAX_NAME || name.contains(['/', '\0']) {
            return Err(StoreError::BadName(name.into()));
        }
        let mut st = self.st.borrow_mut();
        if st.names.contains_key(name) {
            return Err(StoreError::Exists(name.into()));
        }
        let ino = (1..=st.g.inodes)
            .find(|&i| !st.inode_used[i as usize - 1])
            .ok_or(StoreError::NoSpace("inodes"))?;
        let used_slots: BTreeSet<u32> = st.names.values().map(|v| v.1).collect();
        let slot = (0..st.g.inodes)
            .find(|s| !used_slots.contains(s))
            .ok_or(StoreError::NoSpace("directory"))?;
        st.inode_used[ino as usize - 1] = true;
        st.set_inode(
            ino,
            &Inode {
                used: true,
                ..Inode::default()
            },
        );
        st.set_dirent(slot, ino, name);
        st.names.insert(name.into(), (ino, slot));
        Ok(StoreFile { ino })
    }

    /// Open file `name`.
    pub fn open(&self, name: &str) -> Result<StoreFile, StoreError> {
        let st = self.st.borrow();
        let &(ino, _) = st
            .names
            .get(name)
            .ok_or_else(|| StoreError::NotFound(name.into()))?;
        Ok(StoreFile { ino })
    }

    /// A file's length in bytes.
    pub fn len(&self, f: StoreFile) -> u64 {
        self.st.borrow().inode(f.ino).size
    }

    /// Remove file `name` (its blocks and inode are reused once the removal commits).
    pub fn unlink(&self, name: &str) -> Result<(), StoreError> {
        let mut st = self.st.borrow_mut();
        let (ino, slot) = st
            .names
            .remove(name)
            .ok_or_else(|| StoreError::NotFound(name.into()))?;
        let inode = st.inode(ino);
        let blocks = st.blocks_of(&inode);
        for b in &blocks {
            st.set_bit(*b, false);
        }
        st.running
            .freed_blocks
            .extend(blocks.iter().map(|&b| b as u32));
        st.running.freed_inodes.push(ino);
        st.set_inode(ino, &Inode::default());
        st.set_dirent(slot, 0, "");
        Ok(())
    }

    /// Rename `from` to `to` (replacing `to` if it exists).
    pub fn rename(&self, from: &str, to: &str) -> Result<(), StoreError> {
        if to.is_empty() || to.len() > MAX_NAME || to.contains(['/', '\0']) {
            return Err(StoreError::BadName(to.into()));
        }
        if !self.st.borrow().names.contains_key(from) {
            return Err(StoreError::NotFound(from.into()));
        }
        if from == to {
            return Ok(());
        }
        if self.st.borrow().names.contains_key(to) {
            self.unlink(to)?;
        }
        let mut st = self.st.borrow_mut();
        let (ino, slot) = st.names.remove(from).expect("checked");
        st.set_dirent(slot, ino, to);
        st.names.insert(to.into(), (ino, slot));
        Ok(())
    }

    /// Read `out.len()` bytes at `offset` (short at the end of the file; holes read as
    /// zeros), with the calling task's class.
    pub async fn read(
        &self,
        f: StoreFile,
        offset: u64,
        out: &mut [u8],
    ) -> Result<usize, StoreError> {
        let (n, map) = {
            let st = self.st.borrow();
            let inode = st.inode(f.ino);
            let n = inode.size.saturating_sub(offset).min(out.len() as u64) as usize;
            let map: Vec<u64> = if n == 0 {
                Vec::new()
            } else {
                (offset / BLOCK as u64..=(offset + n as u64 - 1) / BLOCK as u64)
                    .map(|i| st.map(&inode, i))
                    .collect()
            };
            (n, map)
        };
        let mut done = 0;
        for (k, phys) in map.into_iter().enumerate() {
            let start = if k == 0 {
                (offset % BLOCK as u64) as usize
            } else {
                0
            };
            let len = (BLOCK - start).min(n - done);
            let idx = offset / BLOCK as u64 + k as u64;
            match self.block_now(f.ino, idx, phys).await? {
                None => out[done..done + len].fill(0),
                Some(b) => out[done..done + len].copy_from_slice(&b[start..start + len]),
            }
            done += len;
        }
        Ok(n)
    }

    /// A block of a file as it is now: buffered, else home (`phys`), else a hole.
    async fn block_now(&self, ino: u32, idx: u64, phys: u64) -> io::Result<Option<Vec<u8>>> {
        if let Some(d) = self.st.borrow().data.get(&(ino, idx)) {
            return Ok(Some(d.bytes.clone()));
        }
        if phys == 0 {
            return Ok(None);
        }
        self.dev.read(phys).await.map(Some)
    }

    /// The new images of the blocks `data` at `offset` covers (blocks covered in part
    /// are read first).
    async fn images(
        &self,
        f: StoreFile,
        offset: u64,
        data: &[u8],
    ) -> Result<Vec<Vec<u8>>, StoreError> {
        let end = offset + data.len() as u64;
        if end.div_ceil(BLOCK as u64) > MAX_FILE_BLOCKS {
            return Err(StoreError::TooBig);
        }
        let (first, last) = (offset / BLOCK as u64, (end - 1) / BLOCK as u64);
        let mut images = Vec::with_capacity((last - first + 1) as usize);
        for idx in first..=last {
            let (bs, be) = (idx * BLOCK as u64, (idx + 1) * BLOCK as u64);
            let whole = offset <= bs && end >= be;
            let phys = {
                let st = self.st.borrow();
                st.map(&st.inode(f.ino), idx)
            };
            let mut img = match whole {
                true => None,
                false => self.block_now(f.ino, idx, phys).await?,
            }
            .unwrap_or_else(|| vec![0u8; BLOCK]);
            let (s, e) = (offset.max(bs), end.min(be));
            img[(s - bs) as usize..(e - bs) as usize]
                .copy_from_slice(&data[(s - offset) as usize..(e - offset) as usize]);
            images.push(img);
        }
        Ok(images)
    }

    /// Write `data` at `offset` directly: blocks are allocated in the running
    /// transaction and the data written home (with the calling task's class) before the
    /// write returns; the transaction cannot commit while it is in flight (ordered
    /// mode).
    pub async fn write(&self, f: StoreFile, offset: u64, data: &[u8]) -> Result<usize, StoreError> {
        if data.is_empty() {
            return Ok(0);
        }
        let first = offset / BLOCK as u64;
        let end = offset + data.len() as u64;
        let last = (end - 1) / BLOCK as u64;
        // A block with buffered data may have a writeback in flight: writing it
        // directly now could land before that older copy. Such writes wait for the
        // writeback and keep others out until they are home.
        let buffered = {
            let st = self.st.borrow();
            st.data
                .range((f.ino, first)..=(f.ino, last))
                .next()
                .is_some()
        };
        let _d = match buffered {
            true => Some(self.data_lock.lock().await),
            false => None,
        };
        let images = self.images(f, offset, data).await?;
        // Allocation and size, in the running transaction, with a handle held.
        let (txn, writes) = {
            let mut st = self.st.borrow_mut();
            let mut inode = st.inode(f.ino);
            let mut writes = Vec::with_capacity(images.len());
            for (k, img) in images.into_iter().enumerate() {
                let idx = first + k as u64;
                let phys = st.map_alloc(&mut inode, idx)?;
                // A direct write supersedes buffered data of the block.
                if let Some(d) = st.data.remove(&(f.ino, idx)) {
                    st.data_bytes -= d.bytes.len() as u64;
                }
                writes.push((phys, img));
            }
            inode.size = inode.size.max(end);
            st.set_inode(f.ino, &inode);
            let txn = st.running.id;
            *st.handles.entry(txn).or_default() += 1;
            *st.ino_handles.entry(f.ino).or_default() += 1;
            (txn, writes)
        };
        let r = self.dev.write_all(&writes, IoOptions::new()).await;
        {
            let mut st = self.st.borrow_mut();
            dec(&mut st.handles, txn);
            dec(&mut st.ino_handles, f.ino);
        }
        self.signal_done().await;
        r?;
        Ok(data.len())
    }

    /// Write `data` at `offset` into the store's buffers: blocks are allocated and the
    /// size set in the running transaction; the data goes home before that transaction
    /// commits (ordered mode: a compound commit writes every file's buffered data —
    /// FastResponse's T_D2 — an fjournal fsync only its own file's). When more than
    /// 32 MiB are buffered, the writer writes them home first.
    pub async fn write_buffered(
        &self,
        f: StoreFile,
        offset: u64,
        data: &[u8],
    ) -> Result<usize, StoreError> {
        if data.is_empty() {
            return Ok(0);
        }
        let over = self.st.borrow().data_bytes > DATA_LIMIT;
        if over {
            // Too much buffered: the writer writes it home (early data is always safe
            // in ordered mode).
            self.write_data(|_, _| true, &[]).await?;
        }
        let images = self.images(f, offset, data).await?;
        let first = offset / BLOCK as u64;
        let mut st = self.st.borrow_mut();
        let mut inode = st.inode(f.ino);
        for (k, img) in images.into_iter().enumerate() {
            let idx = first + k as u64;
            let phys = st.map_alloc(&mut inode, idx)?;
            let (txn, gen) = (st.running.id, st.next_gen);
            st.next_gen += 1;
            match st.data.get_mut(&(f.ino, idx)) {
                Some(d) => {
                    d.bytes = img;
                    d.gen = gen;
                }
                None => {
                    st.data_bytes += img.len() as u64;
                    st.data.insert(
                        (f.ino, idx),
                        Dirty {
                            phys,
                            bytes: img,
                            txn,
                            gen,
                        },
                    );
                }
            }
        }
        let end = offset + data.len() as u64;
        if end > inode.size {
            inode.size = end;
            st.set_inode(f.ino, &inode);
        } else if st.inode(f.ino) != inode {
            st.set_inode(f.ino, &inode);
        }
        Ok(data.len())
    }

    /// Copies of the buffered blocks `keep` selects, for writeback.
    fn data_copies(&self, keep: impl Fn(&(u32, u64), &Dirty) -> bool) -> Vec<DataCopy> {
        self.st
            .borrow()
            .data
            .iter()
            .filter(|(k, d)| keep(k, d))
            .map(|(k, d)| (*k, d.gen, d.phys, d.bytes.clone()))
            .collect()
    }

    /// Write the buffered blocks `keep` selects home (one writeback at a time; the
    /// copies are taken under the lock, so no direct write of the block can be
    /// overtaken by an older copy) and drop those not written again meanwhile. Returns
    /// how many went.
    ///
    /// `journal` blocks (a commit's descriptor and metadata, an f-transaction's header
    /// and blocks) go too: after the data on the synchronous path, beside it on the
    /// asynchronous one (AIOS, ATC '19 §3.3–3.4: journal I/O overlapped with data I/O —
    /// the FLUSH before the commit record orders both).
    async fn write_data(
        &self,
        keep: impl Fn(&(u32, u64), &Dirty) -> bool,
        journal: &[(u64, Vec<u8>)],
    ) -> io::Result<u64> {
        let _d = self.data_lock.lock().await;
        let copies = self.data_copies(keep);
        let writes: Vec<(u64, Vec<u8>)> = copies.iter().map(|c| (c.2, c.3.clone())).collect();
        let jopts = IoOptions::new().activity(Activity::WAL);
        if self.fsync_path.get() == FsyncPath::Async {
            let mut hs = self.dev.submit_all(&writes, IoOptions::new());
            hs.extend(self.dev.submit_all(journal, jopts));
            Dev::wait_all(hs).await?;
        } else {
            Dev::wait_all(self.dev.submit_all(&writes, IoOptions::new())).await?;
            Dev::wait_all(self.dev.submit_all(journal, jopts)).await?;
        }
        let mut st = self.st.borrow_mut();
        for (key, gen, _, _) in &copies {
            if st.data.get(key).is_some_and(|d| d.gen == *gen) {
                let d = st.data.remove(key).expect("present");
                st.data_bytes -= d.bytes.len() as u64;
            }
        }
        Ok(copies.len() as u64)
    }

    /// Make `f` durable (its data, size and blocks): in compound mode by waiting for the
    /// journal task to commit the running transaction; in fjournal mode by committing an
    /// f-transaction of `f` alone.
    pub async fn fsync(&self, f: StoreFile) -> Result<(), StoreError> {
        let (t, committed) = {
            let st = self.st.borrow();
            (st.ino_txn.get(&f.ino).copied().unwrap_or(0), st.committed)
        };
        if t <= committed {
            // Metadata durable already: the file's buffered overwrites go home, then a
            // flush covers them and the direct writes since.
            let ino = f.ino;
            let n = self.write_data(|k, _| k.0 == ino, &[]).await?;
            self.st.borrow_mut().stats.data_by_fsync += n;
            self.dev.flush().await?;
            return Ok(());
        }
        match self.mode {
            CommitMode::Compound => self.wait_commit(t).await,
            CommitMode::FileLevel => self.fjournal(f).await,
        }
    }

    /// Commit everything changed so far (waits for the journal task).
    pub async fn sync(&self) -> Result<(), StoreError> {
        let id = self.st.borrow().last_change();
        self.wait_commit(id).await
    }

    /// Check the store's structure: every used inode's blocks in the data area, owned
    /// once and marked in the bitmap; no other data block marked; names point at used
    /// inodes. Returns the problems found (none: consistent).
    pub fn check(&self) -> Vec<String> {
        let st = self.st.borrow();
        let g = st.g;
        let mut problems = Vec::new();
        let mut owner: BTreeMap<u64, u32> = BTreeMap::new();
        for ino in 1..=g.inodes {
            let i = st.inode(ino);
            if !i.used {
                continue;
            }
            for b in st.blocks_of(&i) {
                if b < g.data_start() || b >= g.blocks {
                    problems.push(format!("inode {ino}: block {b} outside the data area"));
                } else if let Some(o) = owner.insert(b, ino) {
                    problems.push(format!("block {b} owned by inodes {o} and {ino}"));
                }
            }
        }
        for b in g.data_start()..g.blocks {
            if st.bit(b) != owner.contains_key(&b) {
                problems.push(format!("bitmap bit of block {b} is {}", st.bit(b)));
            }
        }
        for (name, (ino, _)) in &st.names {
            if !st.inode(*ino).used {
                problems.push(format!("'{name}' names unused inode {ino}"));
            }
        }
        problems
    }
}

fn dec<K: Ord>(m: &mut BTreeMap<K, u32>, k: K) {
    if let Some(v) = m.get_mut(&k) {
        *v -= 1;
        if *v == 0 {
            m.remove(&k);
        }
    }
}
