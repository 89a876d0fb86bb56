//! # sluice-cache — the page cache
//!
//! A bounded cache of 4 KiB pages of files, as a state machine: it holds the pages,
//! their states and the accounting, and tells its client what to do (read a page,
//! write one back, wait); the client (the runtime, in simulation and on real files)
//! issues the I/O and the waits. It never reads a clock, sleeps or spawns.
//!
//! ## Pages and states
//! A page is *clean* (same as the device), *dirty* (written in the cache only) or
//! *under writeback* (its write to the device is in flight; its contents are stable:
//! a writer waits for the writeback to end before changing it, as Linux's stable
//! pages, so a page has at most one writeback in flight).
//!
//! ## Eviction: CLOCK
//! When the cache is full, a new page takes the frame of a clean page chosen by CLOCK
//! (second chance): a hand sweeps the frames; a referenced page loses its reference
//! bit and is passed over, an unreferenced clean page is evicted. Dirty pages and
//! pages under writeback are never evicted (writeback makes them clean first).
//!
//! ## Class-aware dirty limits (RCP, FAST '17 §4.3)
//! Linux throttles every writer once the dirty (and writeback) pages pass one system
//! ratio (`dirty_ratio`, 20 %), so a burst of background writes makes a foreground
//! writer wait. RCP applies separate ratios: a task issuing **non-critical** writes
//! may dirty a new page only while `dirty + writeback < 1 %` of the cache; a
//! **critical** one while it is below `20 %` (both tunable). A background writer
//! cannot fill the cache, and a critical writer is not throttled by background dirty
//! data. With `class_limits` off, every writer gets the critical (single) ratio: the
//! Linux baseline. Writers are paced by [`throttle`], Linux's dirty-ratelimit control
//! (`balance_dirty_pages`: above a class's freerun point every writer pauses for the
//! pages it dirtied at one shared rate; at the limit it sleeps the max pause — it does
//! not wait for room — and asks again); a task
//! whose class is raised while it pauses (RCP §4.4: inheritance reaching a task
//! blocked at the cache's admission) is woken by the runtime and judged by its new
//! class.
//!
//! ## Lazy indexing (AIOS, ATC '19 §3.2.3)
//! The vanilla read path inserts a locked page into the index *before* issuing the
//! read, so that no second read of the block is issued. AIOS moves the insertion after
//! the submission, overlapping it with the device I/O. A miss therefore only
//! [`reserves`](PageCache::reserve) room; the page enters the index when its read
//! completes ([`PageCache::insert_read`]). Another task that misses on the same block
//! in between issues a **duplicate read**: both complete, the first to complete is
//! indexed, and the later one is **abandoned** (its buffer is handed back to be freed,
//! and its reader is given the indexed page) — so a read never installs data older than
//! what the index holds (a write that reached the cache meanwhile wins). A read whose
//! page was written *and* left the cache again while it was in flight is dropped as
//! stale ([`ReadDone::Stale`]) and its reader reads again.

#![warn(missing_docs, missing_debug_implementations)]

use std::collections::{BTreeSet, HashMap};

use sluice_core::IoClass;

/// Bytes in a page.
pub const PAGE: u64 = 4096;

/// A page of a file: (file, page index = offset / 4096).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PageKey {
    /// The client's file number.
    pub file: u32,
    /// Offset / [`PAGE`].
    pub index: u64,
}

/// A frame of the cache.
pub type FrameId = u32;

/// A page buffer: its bytes, or none where data is not modelled (the simulator's
/// fio jobs carry no data: [`NoData`]). Every `AsRef<[u8]> + AsMut<[u8]>` buffer is
/// one.
pub trait PageData {
    /// The bytes, if data is modelled.
    fn bytes(&self) -> Option<&[u8]>;
    /// The bytes to change, if data is modelled.
    fn bytes_mut(&mut self) -> Option<&mut [u8]>;
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> PageData for T {
    fn bytes(&self) -> Option<&[u8]> {
        Some(self.as_ref())
    }
    fn bytes_mut(&mut self) -> Option<&mut [u8]> {
        Some(self.as_mut())
    }
}

/// A page without data: the cache keeps states and accounting only (copies are
/// skipped).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NoData;

impl PageData for NoData {
    fn bytes(&self) -> Option<&[u8]> {
        None
    }
    fn bytes_mut(&mut self) -> Option<&mut [u8]> {
        None
    }
}

/// Pages `first..=last` of a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageRange {
    /// The file.
    pub file: u32,
    /// First page index.
    pub first: u64,
    /// Last page index (inclusive).
    pub last: u64,
}

impl PageRange {
    /// Every page of `file`.
    pub fn file(file: u32) -> PageRange {
        PageRange {
            file,
            first: 0,
            last: u64::MAX,
        }
    }

    /// The pages bytes `offset..offset + len` touch (`len` ≥ 1).
    pub fn bytes(file: u32, offset: u64, len: u64) -> PageRange {
        PageRange {
            file,
            first: offset / PAGE,
            last: (offset + len.max(1) - 1) / PAGE,
        }
    }

    fn keys(self) -> std::ops::RangeInclusive<PageKey> {
        PageKey {
            file: self.file,
            index: self.first,
        }..=PageKey {
            file: self.file,
            index: self.last,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Clean,
    Dirty,
    Writeback,
}

#[derive(Debug)]
struct Frame<B> {
    key: PageKey,
    data: B,
    state: State,
    referenced: bool,
    /// The client's token for the writeback in flight (to wait on it).
    token: u64,
}

/// How a read's completion was taken ([`PageCache::insert_read`]).
#[derive(Debug)]
pub enum ReadDone<B> {
    /// Its page was indexed in this frame.
    Indexed(FrameId),
    /// The page had been indexed meanwhile (a duplicate read, or a write that created
    /// it): read it from this frame; the buffer is given back to be freed.
    Abandoned(FrameId, B),
    /// A write reached the page while the read was in flight and the page has left the
    /// cache since: the data may be older than the device's — read again.
    Stale(B),
}

/// What a write to a page found.
#[derive(Debug, PartialEq, Eq)]
pub enum WriteCheck {
    /// Go ahead ([`PageCache::write`]); `new_dirty`: the page becomes dirty now (the
    /// writer must be within its dirty limit).
    Ready {
        /// The write dirties a page that was not dirty.
        new_dirty: bool,
    },
    /// The page is under writeback: wait for the write with this token, then retry.
    WaitWriteback(u64),
    /// The page is not cached and the write covers only part of it: read it first.
    NeedRead,
}

/// The cache's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CacheStats {
    /// Page lookups that found the page.
    pub hits: u64,
    /// Page lookups that did not.
    pub misses: u64,
    /// Reads that completed after another read of the same page had been indexed
    /// (AIOS lazy indexing): abandoned.
    pub duplicate_reads: u64,
    /// Reads that completed after a write reached their page and the page left the
    /// cache again: their data is older than the device's; dropped, the reader reads
    /// again.
    pub stale_reads: u64,
    /// Clean pages evicted by CLOCK.
    pub evictions: u64,
    /// Pages that became dirty.
    pub dirtied: u64,
    /// Writebacks started.
    pub writebacks: u64,
    /// Writebacks that failed (the page stays dirty).
    pub writeback_errors: u64,
    /// Times a writer had to wait for its dirty limit.
    pub throttled: u64,
    /// Times a writer waited for a page under writeback.
    pub writeback_waits: u64,
    /// Most pages held at once (frames + reserved).
    pub peak_pages: u64,
    /// Most dirty + writeback pages at once.
    pub peak_dirty: u64,
}

/// The page cache (see the crate docs). `B` is the client's page buffer (4 KiB).
#[derive(Debug)]
pub struct PageCache<B> {
    cfg: CacheConfig,
    index: HashMap<PageKey, FrameId>,
    frames: Vec<Option<Frame<B>>>,
    free: Vec<FrameId>,
    hand: usize,
    /// Reads in flight and new pages of writes that will need a frame (lazy
    /// indexing: not in the index).
    reserved: usize,
    /// Reads in flight by page: how many, and whether a write reached the page since.
    reading: HashMap<PageKey, (u32, bool)>,
    /// Dirty pages in (file, index) order: writeback goes in file order.
    dirty: BTreeSet<PageKey>,
    writeback: usize,
    stats: CacheStats,
}

impl<B: PageData> PageCache<B> {
    /// An empty cache.
    ///
    /// # Panics
    /// If `cfg` does not [`validate`](CacheConfig::validate).
    pub fn new(cfg: CacheConfig) -> PageCache<B> {
        if let Err(e) = cfg.validate() {
            panic!("{e}");
        }
        PageCache {
            cfg,
            index: HashMap::new(),
            frames: Vec::new(),
            free: Vec::new(),
            hand: 0,
            reserved: 0,
            reading: HashMap::new(),
            dirty: BTreeSet::new(),
            writeback: 0,
            stats: CacheStats::default(),
        }
    }

    /// The settings.
    pub fn config(&self) -> &CacheConfig {
        &self.cfg
    }

    /// The counters.
    pub fn stats(&self) -> CacheStats {
        self.stats
    }

    /// Pages held (indexed) plus reserved for reads in flight.
    pub fn pages(&self) -> usize {
        self.index.len() + self.reserved
    }

    /// Dirty pages (not counting those under writeback).
    pub fn dirty_pages(&self) -> usize {
        self.dirty.len()
    }

    /// Pages under writeback.
    pub fn writeback_pages(&self) -> usize {
        self.writeback
    }

    /// Look a page up (a hit marks it referenced).
    pub fn lookup(&mut self, key: PageKey) -> Option<FrameId> {
        match self.index.get(&key) {
            Some(&f) => {
                self.stats.hits += 1;
                self.frame_mut(f).referenced = true;
                Some(f)
            }
            None => {
                self.stats.misses += 1;
                None
            }
        }
    }

    /// Whether the page is cached (no reference, no counting).
    pub fn contains(&self, key: PageKey) -> bool {
        self.index.contains_key(&key)
    }

    /// Copy bytes `off..off + out.len()` of frame `f` into `out`.
    pub fn read(&self, f: FrameId, off: usize, out: &mut [u8]) {
        if let Some(b) = self.frame(f).data.bytes() {
            out.copy_from_slice(&b[off..off + out.len()]);
        }
    }

    /// Clean pages (cached, neither dirty nor under writeback): the ones eviction
    /// may take.
    pub fn clean_pages(&self) -> usize {
        self.index.len() - self.dirty.len() - self.writeback
    }

    /// Whether [`PageCache::reserve`] would succeed now: below the size, or a clean
    /// page to evict.
    pub fn has_room(&self) -> bool {
        self.pages() < self.cfg.pages || self.clean_pages() > 0
    }

    /// Room for one more page (a read about to be issued, or a new page a write
    /// creates): `true` when there is room, after evicting a clean page if needed;
    /// `false` when every page is dirty or under writeback (wait for writeback).
    pub fn reserve(&mut self) -> bool {
        if self.pages() >= self.cfg.pages && !self.evict_one() {
            return false;
        }
        self.reserved += 1;
        self.note_peak();
        true
    }

    /// Give back a reservation (a read failed, or was not issued).
    pub fn unreserve(&mut self) {
        self.reserved -= 1;
    }

    /// A read of `key` is about to be issued, not indexed (lazy indexing): reserve
    /// room for it ([`PageCache::reserve`]; `false`: no room, wait for writeback) and
    /// note it, so a write to the page meanwhile makes its data stale.
    pub fn begin_read(&mut self, key: PageKey) -> bool {
        if !self.reserve() {
            return false;
        }
        self.reading.entry(key).or_insert((0, false)).0 += 1;
        true
    }

    /// The read of `key` into `data` failed: forget it.
    pub fn fail_read(&mut self, key: PageKey) {
        self.unreserve();
        self.end_read(key);
    }

    /// The read of `key` into `data` completed (see the crate docs on lazy indexing).
    pub fn insert_read(&mut self, key: PageKey, data: B) -> ReadDone<B> {
        self.reserved -= 1;
        let stale = self.end_read(key);
        if let Some(&f) = self.index.get(&key) {
            self.stats.duplicate_reads += 1;
            return ReadDone::Abandoned(f, data);
        }
        if stale {
            self.stats.stale_reads += 1;
            return ReadDone::Stale(data);
        }
        ReadDone::Indexed(self.install(key, data, State::Clean))
    }

    /// Index `data` as the clean contents of `key`, written to the device by the client
    /// (its writeback of data it kept elsewhere ended): the page replaces a clean copy
    /// held, or takes room as a read would (evicting a clean page). Returns `false`,
    /// changing nothing, when the page is held dirty or under writeback, or there is no
    /// room. A read of the page in flight finds it indexed when it completes
    /// ([`ReadDone::Abandoned`]).
    pub fn insert_clean(&mut self, key: PageKey, data: B) -> bool {
        if let Some(&f) = self.index.get(&key) {
            let fr = self.frame_mut(f);
            if fr.state != State::Clean {
                return false;
            }
            fr.data = data;
            fr.referenced = true;
            return true;
        }
        if !self.reserve() {
            return false;
        }
        self.reserved -= 1;
        self.install(key, data, State::Clean);
        true
    }

    /// One read of `key` ended: whether a write reached the page while it was in flight.
    fn end_read(&mut self, key: PageKey) -> bool {
        let e = self.reading.get_mut(&key).expect("a read in flight");
        e.0 -= 1;
        let stale = e.1;
        if e.0 == 0 {
            self.reading.remove(&key);
        }
        stale
    }

    /// What a write to `key` (bytes `off..off + len` of the page) must do first.
    pub fn check_write(&mut self, key: PageKey, off: usize, len: usize) -> WriteCheck {
        match self.index.get(&key) {
            Some(&f) => {
                let (state, token) = (self.frame(f).state, self.frame(f).token);
                match state {
                    State::Writeback => {
                        self.stats.writeback_waits += 1;
                        WriteCheck::WaitWriteback(token)
                    }
                    State::Dirty => WriteCheck::Ready { new_dirty: false },
                    State::Clean => WriteCheck::Ready { new_dirty: true },
                }
            }
            None if off == 0 && len as u64 == PAGE => WriteCheck::Ready { new_dirty: true },
            None => WriteCheck::NeedRead,
        }
    }

    /// Whether a writer of `class` may dirty one more page now.
    pub fn may_dirty(&self, class: IoClass) -> bool {
        self.dirty.len() + self.writeback < self.cfg.dirty_limit(class)
    }

    /// Count a writer that has to wait for its dirty limit.
    pub fn note_throttled(&mut self) {
        self.stats.throttled += 1;
    }

    /// Write `data` at byte `off` of page `key`, after [`PageCache::check_write`] said
    /// `Ready` (a page not cached needs room: `fresh` is a zeroed page buffer taken
    /// when the write creates it, after [`PageCache::reserve`]).
    ///
    /// # Panics
    /// If the page is under writeback, or it is not cached and no `fresh` buffer is
    /// given.
    pub fn write(&mut self, key: PageKey, off: usize, data: &[u8], fresh: Option<B>) {
        let f = match self.index.get(&key) {
            Some(&f) => f,
            None => {
                self.reserved -= 1;
                let buf = fresh.expect("a new page needs a buffer");
                self.install(key, buf, State::Clean)
            }
        };
        if let Some(r) = self.reading.get_mut(&key) {
            r.1 = true;
        }
        let fr = self.frame_mut(f);
        assert!(
            fr.state != State::Writeback,
            "write to a page under writeback"
        );
        if let Some(b) = fr.data.bytes_mut() {
            b[off..off + data.len()].copy_from_slice(data);
        }
        fr.referenced = true;
        if fr.state == State::Clean {
            fr.state = State::Dirty;
            self.dirty.insert(key);
            self.stats.dirtied += 1;
            self.note_peak();
        }
    }

    /// The next dirty page to write back (of `range` only, if given), in (file, index)
    /// order; it becomes under writeback (tag it with [`PageCache::set_token`]).
    /// Returns its key and frame; copy its data with [`PageCache::read`].
    pub fn start_writeback(&mut self, range: Option<PageRange>) -> Option<(PageKey, FrameId)> {
        let key = match range {
            None => *self.dirty.iter().next()?,
            Some(r) => *self.dirty.range(r.keys()).next()?,
        };
        self.dirty.remove(&key);
        self.writeback += 1;
        self.stats.writebacks += 1;
        let f = self.index[&key];
        self.frame_mut(f).state = State::Writeback;
        Some((key, f))
    }

    /// Tag frame `f`'s writeback with the client's token (to wait on it).
    pub fn set_token(&mut self, f: FrameId, token: u64) {
        self.frame_mut(f).token = token;
    }

    /// The writeback of `key` tagged `token` ended: the page is clean if `ok`, dirty
    /// again if not. Whoever sees the completion first calls it (the task that issued
    /// the writeback, or a task that waited on it); later calls, or calls for a
    /// writeback that is no longer the page's, do nothing. Returns whether it ended it.
    pub fn end_writeback(&mut self, key: PageKey, token: u64, ok: bool) -> bool {
        let Some(&f) = self.index.get(&key) else {
            return false;
        };
        let fr = self.frame_mut(f);
        if fr.state != State::Writeback || fr.token != token {
            return false;
        }
        fr.state = if ok { State::Clean } else { State::Dirty };
        self.writeback -= 1;
        if !ok {
            self.stats.writeback_errors += 1;
            self.dirty.insert(key);
        }
        true
    }

    /// The writebacks in flight of the pages in `range` (what an fsync or a direct
    /// read waits on), in page order: (page, token).
    pub fn writebacks_in(&self, range: PageRange) -> Vec<(PageKey, u64)> {
        let keys = range.keys();
        let mut v: Vec<(PageKey, u64)> = self
            .index
            .iter()
            .filter(|(k, _)| keys.contains(k))
            .filter_map(|(k, &f)| {
                let fr = self.frame(f);
                (fr.state == State::Writeback).then_some((*k, fr.token))
            })
            .collect();
        v.sort_unstable();
        v
    }

    /// Every writeback in flight, in page order: (page, token).
    pub fn writebacks(&self) -> Vec<(PageKey, u64)> {
        let mut v: Vec<(PageKey, u64)> = self
            .index
            .iter()
            .filter_map(|(k, &f)| {
                let fr = self.frame(f);
                (fr.state == State::Writeback).then_some((*k, fr.token))
            })
            .collect();
        v.sort_unstable();
        v
    }

    /// Whether pages in `range` are dirty.
    pub fn dirty_in(&self, range: PageRange) -> bool {
        self.dirty.range(range.keys()).next().is_some()
    }

    /// Drop the clean pages in `range` (a direct write went around the cache, or the
    /// file went away). Dirty pages and pages under writeback stay. A read of a page in
    /// `range` still in flight may carry the old data: it is made stale, so its
    /// completion does not index it ([`ReadDone::Stale`]).
    pub fn forget_clean(&mut self, range: PageRange) {
        self.forget(range, false);
    }

    /// Drop the clean *and dirty* pages in `range` (a trim — a punched hole — made
    /// their bytes zeros on the device: a dirty page's data is no longer wanted, as
    /// Linux's `truncate_pagecache_range` drops it). Pages under writeback stay (wait
    /// for them first); reads in flight are made stale, as in
    /// [`PageCache::forget_clean`].
    pub fn discard(&mut self, range: PageRange) {
        self.forget(range, true);
    }

    fn forget(&mut self, range: PageRange, dirty_too: bool) {
        let r = range.keys();
        for (k, e) in self.reading.iter_mut() {
            if r.contains(k) {
                e.1 = true;
            }
        }
        let clean = |k: &PageKey, f: FrameId| {
            let st = self.frame(f).state;
            r.contains(k) && (st == State::Clean || (dirty_too && st == State::Dirty))
        };
        // A few pages: look each up; a large range: one pass over the index.
        let keys: Vec<PageKey> = if range.last.saturating_sub(range.first) < 64 {
            (range.first..=range.last)
                .map(|index| PageKey {
                    file: range.file,
                    index,
                })
                .filter(|k| self.index.get(k).is_some_and(|&f| clean(k, f)))
                .collect()
        } else {
            self.index
                .iter()
                .filter(|(k, &f)| clean(k, f))
                .map(|(k, _)| *k)
                .collect()
        };
        for k in keys {
            let f = self.index.remove(&k).expect("indexed");
            self.dirty.remove(&k);
            self.frames[f as usize] = None;
            self.free.push(f);
        }
    }

    fn install(&mut self, key: PageKey, data: B, state: State) -> FrameId {
        if let Some(b) = data.bytes() {
            assert_eq!(b.len() as u64, PAGE, "a page buffer is 4 KiB");
        }
        let frame = Frame {
            key,
            data,
            state,
            referenced: true,
            token: 0,
        };
        let f = match self.free.pop() {
            Some(f) => {
                self.frames[f as usize] = Some(frame);
                f
            }
            None => {
                self.frames.push(Some(frame));
                (self.frames.len() - 1) as FrameId
            }
        };
        self.index.insert(key, f);
        f
    }

    /// CLOCK: evict one clean page; `false` if none can be (all dirty / writeback).
    fn evict_one(&mut self) -> bool {
        // No clean page: the sweep below would find none (and change nothing).
        if self.clean_pages() == 0 {
            return false;
        }
        let n = self.frames.len();
        // Two sweeps: the first may only clear reference bits.
        for _ in 0..2 * n {
            let i = self.hand;
            self.hand = if i + 1 >= n { 0 } else { i + 1 };
            let Some(fr) = self.frames[i].as_mut() else {
                continue;
            };
            if fr.state != State::Clean {
                continue;
            }
            if fr.referenced {
                fr.referenced = false;
                continue;
            }
            let key = fr.key;
            self.frames[i] = None;
            self.index.remove(&key);
            self.free.push(i as FrameId);
            self.stats.evictions += 1;
            return true;
        }
        false
    }

    fn note_peak(&mut self) {
        let s = &mut self.stats;
        s.peak_pages = s.peak_pages.max((self.index.len() + self.reserved) as u64);
        s.peak_dirty = s.peak_dirty.max((self.dirty.len() + self.writeback) as u64);
    }

    fn frame(&self, f: FrameId) -> &Frame<B> {
        self.frames[f as usize].as_ref().expect("live frame")
    }

    fn frame_mut(&mut self, f: FrameId) -> &mut Frame<B> {
        self.frames[f as usize].as_mut().expect("live frame")
    }
}

mod config;
pub mod failing;
mod front_stats;
pub use config::{CacheConfig, ConfigError};
pub use failing::Failing;
pub use front_stats::FrontStats;
pub mod throttle;

#[cfg(test)]
mod tests;
