//! The store's cache of clean file blocks: what a read of a file block finds before
//! it goes to the device, as Linux's page cache keeps the pages of an ext4 file.
//!
//! The store keeps its *dirty* blocks in its own buffer (`State::data`: ordered mode
//! needs them by transaction, with their writers' class); this cache holds *clean*
//! copies only — blocks as they are home — in sluice-cache's [`PageCache`] (CLOCK
//! eviction, lazy indexing), keyed by (inode, block index). Off until
//! [`Store::set_read_cache`] gives it a size.
//!
//! Invariant: a cached block equals its home contents for the inode's current map.
//! So every change of a block at home or of its mapping forgets it first:
//! - a buffered write leaves the cached copy (still the home contents; reads find the
//!   buffer's newer copy first), and when the writeback of the buffered copy ends that
//!   copy replaces it ([`ReadCache::written`]);
//! - a direct write forgets the blocks it covers once its data is home (a read beside
//!   it may return the old data to its reader, as any read racing a write may, but
//!   does not leave it cached);
//! - a truncation or the freeing of an inode forgets the blocks it unmaps
//!   (`State::drop_buffered`), before their numbers can be reused;
//!
//! and a read in flight across such a change is made stale
//! ([`PageCache::forget_clean`]): its data, possibly older, is returned to its reader
//! (the read began before the change) but not cached.

use sluice_cache::{CacheConfig, CacheStats, PageCache, PageKey, PageRange};

use super::Store;
use crate::layout::BLOCK;

/// The clean-block cache (none until sized).
#[derive(Debug, Default)]
pub(super) struct ReadCache {
    pc: Option<PageCache<Vec<u8>>>,
    /// Bumped by every [`Store::set_read_cache`]: a read admitted by an earlier cache
    /// completes without touching this one.
    epoch: u64,
}

fn key(ino: u32, idx: u64) -> PageKey {
    PageKey {
        file: ino,
        index: idx,
    }
}

impl ReadCache {
    /// A cache of `blocks` 4 KiB blocks (0: none), of `epoch`. The smallest cache is
    /// 16 blocks.
    fn new(blocks: usize, epoch: u64) -> Result<ReadCache, String> {
        if blocks == 0 {
            return Ok(ReadCache { pc: None, epoch });
        }
        let cfg = CacheConfig {
            pages: blocks,
            ..CacheConfig::default()
        };
        cfg.validate()
            .map_err(|e| format!("store read cache: {e}"))?;
        Ok(ReadCache {
            pc: Some(PageCache::new(cfg)),
            epoch,
        })
    }

    /// Which cache this is (see [`ReadCache::read_done`]).
    pub(super) fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Block `idx` of inode `ino`, if cached (a hit marks it referenced).
    pub(super) fn get(&mut self, ino: u32, idx: u64) -> Option<Vec<u8>> {
        let pc = self.pc.as_mut()?;
        let f = pc.lookup(key(ino, idx))?;
        let mut out = vec![0u8; BLOCK];
        pc.read(f, 0, &mut out);
        Some(out)
    }

    /// Whether the block is cached (no reference, no count).
    pub(super) fn has(&self, ino: u32, idx: u64) -> bool {
        self.pc
            .as_ref()
            .is_some_and(|pc| pc.contains(key(ino, idx)))
    }

    /// A read of the block from home is about to be issued: whether its data may be
    /// cached when it completes ([`ReadCache::read_done`]).
    pub(super) fn begin_read(&mut self, ino: u32, idx: u64) -> bool {
        self.pc
            .as_mut()
            .is_some_and(|pc| pc.begin_read(key(ino, idx)))
    }

    /// A read [`ReadCache::begin_read`] admitted, when this cache was of `epoch`,
    /// ended: its data (`None`: it failed) is cached unless a change made it stale or a
    /// copy got there first. A read admitted by a cache since replaced does nothing.
    pub(super) fn read_done(&mut self, epoch: u64, ino: u32, idx: u64, data: Option<&[u8]>) {
        if epoch != self.epoch {
            return;
        }
        let Some(pc) = self.pc.as_mut() else { return };
        match data {
            // Indexed, abandoned (a newer copy got there first) or stale: the reader
            // has its data either way.
            Some(d) => drop(pc.insert_read(key(ino, idx), d.to_vec())),
            None => pc.fail_read(key(ino, idx)),
        }
    }

    /// The writeback of a buffered copy of the block ended: that copy is now home.
    pub(super) fn written(&mut self, ino: u32, idx: u64, data: Vec<u8>) {
        if let Some(pc) = self.pc.as_mut() {
            pc.insert_clean(key(ino, idx), data);
        }
    }

    /// Forget blocks `first..=last` of inode `ino` (their home contents or mapping
    /// change).
    pub(super) fn forget(&mut self, ino: u32, first: u64, last: u64) {
        if let Some(pc) = self.pc.as_mut() {
            pc.forget_clean(PageRange {
                file: ino,
                first,
                last,
            });
        }
    }

    pub(super) fn stats(&self) -> Option<CacheStats> {
        self.pc.as_ref().map(PageCache::stats)
    }
}

impl Store {
    /// Keep up to `blocks` clean 4 KiB file blocks in memory for reads (0, the
    /// default: none — every read of a block not buffered goes to the device, as
    /// `O_DIRECT`). A program that reads its files through a page cache on ext4 gets
    /// the same from the store with a cache of the page cache's size. Setting it
    /// empties the cache (reads in flight then cache nothing). An error if `blocks` is
    /// between 1 and 15.
    pub fn set_read_cache(&self, blocks: usize) -> Result<(), String> {
        let mut st = self.st.borrow_mut();
        st.cache = ReadCache::new(blocks, st.cache.epoch + 1)?;
        Ok(())
    }

    /// The read cache's counters (sluice-cache's: hits, misses, evictions, …); `None`
    /// without a read cache.
    pub fn read_cache_stats(&self) -> Option<CacheStats> {
        self.st.borrow().cache.stats()
    }
}
