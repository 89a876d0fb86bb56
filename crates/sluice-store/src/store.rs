//! The store: metadata in memory, the running transaction, commits (compound and
//! file-level), checkpoints, mount with recovery, and the file operations.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::io;

use sluice_runtime::{
    current_class, now, Activity, Condvar, DmaBuffer, File, IoClass, IoHandle, IoOptions, Mutex, Op,
};

use crate::layout::{Geometry, BLOCK, MAX_FILE_BLOCKS, MAX_NAME};
use breakdown::Phases;
pub use breakdown::{FsyncBreakdown, SLOWEST_KEPT};
pub use inspect::Inspection;
use writeback::JournalBatch;

mod blockmap;
mod breakdown;
mod cache;
mod commit;
mod data;
mod inline;
pub use inline::INLINE_BLOCKS;
mod inspect;
mod limits;
mod meta;
mod mount;
mod names;
mod seal;
mod writeback;

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
    #[error(
        "a store file holds at most {} bytes (4 GiB + 4 MiB + 96 KiB: 24 direct blocks, an \
         indirect and a double-indirect block); write or truncate below that",
        MAX_FILE_BLOCKS * BLOCK as u64
    )]
    TooBig,
    /// One operation would change more metadata blocks than one transaction holds.
    #[error("{0}")]
    TxnTooBig(String),
    /// A commit failed: the journal stopped (remount to recover).
    #[error("the store's journal aborted after an I/O error: {0}; remount to recover")]
    Aborted(String),
    /// The on-disk format is not a store's, or is damaged.
    #[error("{0}")]
    Corrupt(String),
    /// A journal block fails its checksum (found at mount; nothing was replayed).
    #[error("the store's journal is damaged: {0}")]
    JournalCorrupt(String),
    /// The handle was closed ([`Store::close`]).
    #[error(
        "a store file handle was used after it was closed (its file may be gone and its \
         inode reused): open the file again"
    )]
    Closed,
}

/// An open file of the store: its inode number and the open it came from (as a file
/// descriptor: [`Store::create`] and [`Store::open`] make one, [`Store::close`] ends
/// it). A file removed while open keeps its inode and blocks until its last open is
/// closed, as POSIX's; a handle used after its close is refused with
/// [`StoreError::Closed`], never taken for another file that reused the inode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StoreFile {
    ino: u32,
    open: u64,
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
    /// Map blocks they carried (each file's changed since last committed).
    pub fjournal_blocks: u64,
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
    /// fsyncs and fdatasyncs that needed no commit (data and one FLUSH).
    pub data_syncs: u64,
    /// Buffered blocks written home by writers over the limit of buffered data (all
    /// of them without class limits; a critical writer over its own limit with them).
    pub data_by_limit: u64,
    /// Buffered blocks written home by the flusher, for writers paused at their limit.
    pub data_by_flusher: u64,
    /// Times a non-critical writer paused at its class's limit (class limits on).
    pub throttled: u64,
    /// Most bytes buffered at once.
    pub buffered_peak: u64,
    /// Seals written: the journal superblock's claims made durable before a block a
    /// tentative record vouches for was written again (single-flush commits).
    pub seals: u64,
    /// Commits that went out with two FLUSHes on a single-flush store (their data
    /// tags did not fit the room left in the journal or the f-transaction's header).
    pub two_flush: u64,
    /// Tentative records recovery dropped at mount (their fsyncs never returned).
    pub discarded: u64,
    /// Blocks a write moved to new blocks rather than seal (a tentative record
    /// vouched for their contents).
    pub redirected: u64,
    /// Data blocks f-transactions logged inline ([`Store::set_inline`]).
    pub inline_blocks: u64,
}

/// What [`Store::stat`] tells of a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileStat {
    /// Bytes.
    pub size: u64,
    /// Blocks it holds (data and map blocks).
    pub blocks: u64,
    /// Its change counter (bumped by every write and size change).
    pub change: u64,
    /// Runs of consecutive blocks it lies in, walked as e2fsck walks a file (its data
    /// in order, each map block where the map first needs it): 1 for a file laid out
    /// in one piece (0 if empty); a hole ends a run. Appends that each fsync a partial
    /// last block move that block (`StoreStats::redirected`), so a log written that
    /// way lies in about one run per block.
    pub extents: u64,
}

/// Most blocks one merged request carries (128 KiB).
const MERGE_BLOCKS: usize = 32;

/// The runs of consecutive homes in `blocks` (sorted by home), each at most
/// [`MERGE_BLOCKS`] long, as index ranges into `blocks`: one request each.
pub(crate) fn runs<T>(blocks: &[(u64, T)]) -> impl Iterator<Item = std::ops::Range<usize>> + '_ {
    let mut i = 0;
    std::iter::from_fn(move || {
        if i == blocks.len() {
            return None;
        }
        let first = blocks[i].0;
        let mut n = 1;
        while i + n < blocks.len() && n < MERGE_BLOCKS && blocks[i + n].0 == first + n as u64 {
            n += 1;
        }
        i += n;
        Some(i - n..i)
    })
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

    /// A file's blocks `first..first + n`, home, in one read of the read path (its
    /// page work charged as the page cache's misses are: [`File::read_pages`]).
    pub(crate) async fn read_data(&self, first: u64, n: u64) -> io::Result<Vec<u8>> {
        let (r, buf) = self
            .file
            .read_pages(first * BLOCK as u64, n as usize * BLOCK)
            .await;
        r?;
        Ok(buf.to_vec())
    }

    /// Blocks `first..first + n` in one read.
    pub(crate) async fn read_blocks(&self, first: u64, n: u64) -> io::Result<Vec<u8>> {
        let (r, buf) = self
            .file
            .read_at(DmaBuffer::new(n as usize * BLOCK), first * BLOCK as u64)
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

    /// Submit writes of blocks (home block, contents), consecutive blocks merged into
    /// one request of up to [`MERGE_BLOCKS`] blocks, as the Linux block layer merges
    /// the bios of a writeback (and ext4 builds them large): a 128 KiB buffered write
    /// goes home as one request, not 32 — one submission's CPU, one device command.
    fn submit_all(&self, blocks: &[(u64, Vec<u8>)], opts: IoOptions) -> Vec<IoHandle> {
        runs(blocks)
            .map(|r| {
                let run: Vec<&[u8]> = blocks[r.clone()].iter().map(|(_, d)| &d[..]).collect();
                let buf = DmaBuffer::from_slice(&run.concat());
                let at = blocks[r.start].0 * BLOCK as u64;
                self.file.submit(Op::Write, buf, at, opts)
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
    /// What the transaction frees, released when it commits.
    frees: Frees,
}

/// Blocks and inode numbers a transaction frees: data blocks and inodes are reused once
/// it commits, metadata (indirect) blocks once a checkpoint has reclaimed the journal
/// after that.
#[derive(Debug, Default)]
struct Frees {
    blocks: Vec<u32>,
    meta: Vec<u32>,
    inodes: Vec<u32>,
}

/// An f-transaction in the f-area: its first block, sequence number and the normal
/// transaction it belongs to (covered once that one commits).
#[derive(Clone, Copy, Debug)]
struct FRecord {
    start: u64,
    seq: u64,
    id: u64,
}

#[derive(Debug)]
struct State {
    g: Geometry,
    /// Every metadata block (inode table, directory, bitmap, the used files' map
    /// blocks: indirect, double-indirect and the indirect blocks under it).
    meta: BTreeMap<u64, Vec<u8>>,
    running: Txn,
    /// Transactions closed and committing: their frees, released at commit.
    closing: BTreeMap<u64, Frees>,
    /// Metadata blocks freed by committed transactions, reused after the next
    /// checkpoint (their old images may be in the journal).
    held: Vec<u32>,
    /// Open write handles per transaction, and per inode.
    handles: BTreeMap<u64, u32>,
    ino_handles: BTreeMap<u32, u32>,
    committed: u64,
    requested: u64,
    /// Committed metadata not yet written home.
    checkpoint: BTreeMap<u64, Vec<u8>>,
    jhead: u64,
    /// The f-area, a circular log: where the next f-transaction goes and its sequence
    /// number; the tail the area's superblock names (recovery starts there); and the
    /// f-transactions from that tail on, oldest first, until a normal commit covers
    /// them and the tail moves past them.
    fhead: u64,
    fseq: u64,
    ftail: u64,
    flive: std::collections::VecDeque<FRecord>,
    /// Blocks in use (in memory: includes blocks freed by a transaction not committed).
    used: Vec<bool>,
    hint: u64,
    inode_used: Vec<bool>,
    names: BTreeMap<String, (u32, u32)>,
    /// Open handles (open number → inode), the opens per inode, the next open number,
    /// and the inodes removed while open (freed at their last close; at the next mount
    /// after a crash, as any used inode without a name).
    opens: BTreeMap<u64, u32>,
    ino_opens: BTreeMap<u32, u32>,
    next_open: u64,
    unlinked: BTreeSet<u32>,
    /// The last transaction that changed each inode.
    ino_txn: BTreeMap<u32, u64>,
    /// The last transaction that changed each inode's essential metadata (used, size,
    /// block map: all but the change counter).
    ino_dtxn: BTreeMap<u32, u64>,
    /// Map blocks changed since a commit last covered them, by (inode, block): the
    /// transaction of the last change and a generation bumped by every change. A
    /// normal commit of that transaction, or an f-transaction of the file that carried
    /// this generation, clears the entry; the file's next f-transaction carries the
    /// rest (its minimum metadata).
    map_dirty: BTreeMap<(u32, u64), (u64, u64)>,
    /// Blocks an f-transaction logged inline (their data in its record), by (inode,
    /// block index): the running transaction then, whose commit covers that record,
    /// and the buffered copy's generation logged ([`Store::set_inline`]). Until that
    /// commit recovery may write the logged copy home, so only it and the file's own
    /// f-transactions — whose data tags tell recovery the copy at home is newer — write
    /// the block home; a later f-transaction of the file need not log it again while
    /// the buffered copy is the one logged.
    pins: BTreeMap<(u32, u64), inline::Pin>,
    /// Buffered data not yet home, by (inode, block index).
    data: BTreeMap<(u32, u64), Dirty>,
    data_bytes: u64,
    /// Inodes whose buffered data is going home ([`Store::writeback_lock`]).
    busy: BTreeSet<u32>,
    next_gen: u64,
    /// Why the journal stopped, if it did.
    aborted: Option<String>,
    stats: StoreStats,
    /// The timelines of the last commits, by transaction id.
    phases: BTreeMap<u64, Phases>,
    /// Critical fsyncs' time by phase.
    breakdown: FsyncBreakdown,
    /// Clean copies of file blocks for reads ([`Store::set_read_cache`]).
    cache: cache::ReadCache,
    /// Single-flush commits' data tags and seals.
    seals: seal::Seals,
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
    /// Written by a critical task (by class or inheritance) since it was last home: it
    /// goes home as critical I/O whoever writes it back. FastResponse §3.2 marks the
    /// file's `address_space` with the writer's attribute for the same purpose: the
    /// ordered data of other files a compound commit writes (T_D2) stays non-critical
    /// even when the journal thread is critical (§4.4, Fig. 15(b)).
    critical: bool,
}

/// A copy of a buffered block taken for writeback: (inode, index), generation, home,
/// contents, critical.
type DataCopy = ((u32, u64), u64, u64, Vec<u8>, bool);

/// A mounted store (share it with `Rc`). Its journal task runs until the stack ends.
#[derive(Debug)]
pub struct Store {
    /// The store itself, for the tasks it starts when first needed (the flusher).
    me: std::rc::Weak<Store>,
    dev: Dev,
    mode: CommitMode,
    st: RefCell<State>,
    lock: Mutex<()>,
    /// Wakes the journal task.
    work: Condvar,
    /// Signalled when a transaction commits or a write handle ends.
    done: Condvar,
    commit_lock: Mutex<()>,
    fsync_path: std::cell::Cell<FsyncPath>,
    /// Most data blocks an f-transaction logs inline (0: none; [`Store::set_inline`]).
    inline_max: std::cell::Cell<usize>,
    /// The journal task's own class ([`Store::set_journal_class`]).
    journal_class: std::cell::Cell<IoClass>,
    /// One f-transaction at a time takes the f-area's head.
    fj_lock: Mutex<()>,
    /// Serializes writes of the f-area's superblock (the tail moving). Not `fj_lock`:
    /// the journal task moves the tail with a non-critical FUA write, and a critical
    /// f-transaction must not wait behind it (a lock-held I/O that inheritance can only
    /// speed up at the block layer, not at the device).
    ftail_lock: Mutex<()>,
    /// Serializes writes of the normal journal's superblock (checkpoints, seals).
    jsb_lock: Mutex<()>,
    /// The limits of buffered data, the writers paused at them and the flusher.
    limits: limits::Limits,
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

    /// The journal task's class (default normal). FastResponse's evaluation configures
    /// JBD2 as a critical process in its B-Opt and BS-Opt schemes (ICS '22 §4.4), so
    /// the journal blocks and commit records bypass the Limited-Depth throttle and the
    /// task's wake-ups are critical ones; the ordered data it writes keeps its writers'
    /// class (see `Dirty::critical`). Set it before the first commit: the task takes
    /// the class when it next wakes.
    pub fn set_journal_class(&self, class: IoClass) {
        self.journal_class.set(class);
        self.work.notify_one();
    }

    /// The counters.
    pub fn stats(&self) -> StoreStats {
        let st = self.st.borrow();
        StoreStats {
            seals: st.seals.written,
            ..st.stats
        }
    }

    /// Where the critical fsyncs' time went so far (FastResponse's breakdown, ICS '22
    /// Fig. 15(b)): see [`FsyncBreakdown`].
    pub fn fsync_breakdown(&self) -> FsyncBreakdown {
        self.st.borrow().breakdown.clone()
    }

    /// A file's size, blocks and change counter.
    pub fn stat(&self, f: StoreFile) -> Result<FileStat, StoreError> {
        let st = self.st.borrow();
        st.live(f)?;
        let i = st.inode(f.ino);
        Ok(FileStat {
            size: i.size,
            blocks: st.blocks_of(&i).len() as u64,
            change: i.change,
            extents: st.extents(&i),
        })
    }

    /// Free blocks of the data area (blocks freed by a transaction not yet committed
    /// count as used: they are reused after the commit).
    pub fn free_blocks(&self) -> u64 {
        self.st.borrow().free_blocks()
    }

    /// A crc32c of the metadata as it stands (inode table, directory, bitmap, the used
    /// inodes' map blocks): two recoveries of the same store agree on it.
    pub fn fingerprint(&self) -> u32 {
        let st = self.st.borrow();
        let fixed = (st.g.itable_start()..st.g.data_start()).map(|b| &st.meta[&b][..]);
        let maps: Vec<u64> = (1..=st.g.inodes)
            .map(|i| st.inode(i))
            .filter(|i| i.used)
            .flat_map(|i| st.map_blocks(&i))
            .collect();
        let maps = maps.iter().filter_map(|b| st.meta.get(b)).map(|m| &m[..]);
        fixed.chain(maps).fold(0, crc32c::crc32c_append)
    }

    /// The files, by name.
    pub fn list(&self) -> Vec<(String, u64)> {
        self.st.borrow().files()
    }

    /// Make `f` durable — its data and all its metadata (size, block map, change
    /// counter): in compound mode by waiting for the journal task to commit the
    /// transaction that holds its last change; in fjournal mode by committing an
    /// f-transaction of `f` alone. Its name is made durable by a normal commit
    /// ([`Store::sync`], or any compound commit).
    pub async fn fsync(&self, f: StoreFile) -> Result<(), StoreError> {
        self.sync_file(f, true).await
    }

    /// Make `f`'s data durable, with the metadata needed to read it back — its size and
    /// block map (what this store treats as essential) — but not a change that touched
    /// only the change counter: an overwrite inside the file's allocated blocks (no new
    /// block, same size) costs the data writes and one FLUSH, no journal commit, as
    /// Linux's `fdatasync` skips the timestamps.
    pub async fn fdatasync(&self, f: StoreFile) -> Result<(), StoreError> {
        self.sync_file(f, false).await
    }

    async fn sync_file(&self, f: StoreFile, all: bool) -> Result<(), StoreError> {
        self.st.borrow().live(f)?;
        let (t0, critical) = (now(), current_class() == IoClass::Critical);
        let phases = self.sync_phases(f, all, critical).await?;
        if critical {
            self.st.borrow_mut().breakdown.add(t0, now(), &phases);
        }
        Ok(())
    }

    /// [`Store::sync_file`]'s work for a caller that is `critical` or not; returns the
    /// timeline of what made the file durable.
    async fn sync_phases(
        &self,
        f: StoreFile,
        all: bool,
        critical: bool,
    ) -> Result<Phases, StoreError> {
        let (t_all, t_data, committed) = {
            let st = self.st.borrow();
            let at = |m: &BTreeMap<u32, u64>| m.get(&f.ino).copied().unwrap_or(0);
            (at(&st.ino_txn), at(&st.ino_dtxn), st.committed)
        };
        let t = if all { t_all } else { t_data };
        if t > committed {
            match self.mode {
                // The f-transaction writes the file's buffered data and FLUSHes after
                // its writes in flight: everything of the file is covered.
                CommitMode::FileLevel if critical => return self.fjournal(f).await,
                CommitMode::FileLevel | CommitMode::Compound => {
                    self.wait_commit(t).await?;
                    if t >= t_all {
                        // Every write of the file bumped its change counter, so each is
                        // in a transaction up to `t`: its commit covered them.
                        return Ok(self.commit_phases(t));
                    }
                }
            }
        }
        // The metadata needed is durable: the file's buffered blocks go home (those
        // dirtied after the commit too), then a flush covers them and the direct writes
        // completed so far.
        let ino = f.ino;
        // Blocks an f-transaction logged inline go home only with the commit covering
        // it (a write home acknowledged here, tagged by no record, could be undone by
        // recovery writing the logged copy).
        self.unpin(ino, 0..=u64::MAX).await?;
        let start = now();
        let (n, data) = self
            .write_data(|k, _| k.0 == ino, JournalBatch::default)
            .await?;
        self.st.borrow_mut().stats.data_by_fsync += n;
        self.st.borrow_mut().stats.data_syncs += 1;
        self.flush().await?;
        Ok(Phases {
            start,
            data,
            journal: data,
            done: now(),
        })
    }

    /// The timeline of the commit of transaction `id` (all at `now` if it is no longer
    /// kept).
    fn commit_phases(&self, id: u64) -> Phases {
        self.st
            .borrow()
            .phases
            .get(&id)
            .copied()
            .unwrap_or_else(|| {
                let t = now();
                Phases {
                    start: t,
                    data: t,
                    journal: t,
                    done: t,
                }
            })
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
        self.st.borrow().problems()
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
