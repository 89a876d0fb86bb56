//! fio's random map: which blocks of a file a random job has already done, so that a
//! random I/O never repeats a block until every block of the file has been done.
//!
//! fio (`io_u.c`, `lib/axmap.c`) keeps one map per file, one bit per block of the
//! job's smallest block size (`rw_min_bs`):
//!
//! * a drawn block that is already done is replaced by the next free block after it,
//!   wrapping to the file's start (`axmap_next_free`);
//! * an I/O sets the bits of its blocks from its first one up to the first block
//!   already done (`axmap_set_nr`), and an I/O of several blocks is shortened to the
//!   blocks it set (`mark_random_map`: "mark entry before potentially trimming io_u");
//! * when no block is free the map starts afresh (`fio_file_reset`, which fio does
//!   when a time-based job's map is full and at every loop).
//!
//! The map here is, like fio's axmap, a bitmap of bitmaps: level 0 has one bit per
//! block (set: done), each higher level one bit per word of the level below (set: that
//! word is full). Finding the next free block climbs until a level has a clear bit
//! after the position and descends along first clear bits: O(log₆₄ blocks) per draw,
//! and the map takes about one bit per block. No crate offers a bitset with this
//! "next clear bit at or after i" in logarithmic time, hence this small one.

use crate::job::{Distribution, JobSpec};

/// Bits per word.
const W: u64 = 64;

/// A bitmap of `blocks` bits with summary levels (see the module's documentation).
#[derive(Clone, Debug)]
pub(crate) struct RandomMap {
    blocks: u64,
    /// `levels[0]`: one bit per block; `levels[k]`: one bit per word of `levels[k-1]`,
    /// set when that word is full. Bits past the end of a level are set (never free).
    /// The last level has one word.
    levels: Vec<Vec<u64>>,
}

/// The word with bits `[lo, hi)` set (`lo < hi ≤ 64`).
#[inline]
fn span(lo: u64, hi: u64) -> u64 {
    let top = if hi >= W { u64::MAX } else { (1u64 << hi) - 1 };
    top & !((1u64 << lo) - 1)
}

impl RandomMap {
    /// A map of `blocks` blocks (at least 1), none done.
    pub(crate) fn new(blocks: u64) -> RandomMap {
        let blocks = blocks.max(1);
        let mut levels = Vec::new();
        let mut bits = blocks;
        loop {
            let words = bits.div_ceil(W);
            levels.push(vec![0u64; words as usize]);
            if words == 1 {
                break;
            }
            bits = words;
        }
        let mut m = RandomMap { blocks, levels };
        m.pad();
        m
    }

    /// Set the bits past each level's end, so that they never look free.
    fn pad(&mut self) {
        let mut bits = self.blocks;
        for level in &mut self.levels {
            let used = bits % W;
            if used != 0 {
                if let Some(last) = level.last_mut() {
                    *last |= span(used, W);
                }
            }
            bits = bits.div_ceil(W);
        }
    }

    /// Every block free again (fio's `axmap_reset`).
    pub(crate) fn reset(&mut self) {
        for level in &mut self.levels {
            level.fill(0);
        }
        self.pad();
    }

    /// Whether block `b` is done (a block past the end counts as done).
    #[inline]
    pub(crate) fn is_done(&self, b: u64) -> bool {
        b >= self.blocks || self.levels[0][(b / W) as usize] & (1 << (b % W)) != 0
    }

    /// Whether every block is done.
    #[inline]
    pub(crate) fn is_full(&self) -> bool {
        self.levels[self.levels.len() - 1][0] == u64::MAX
    }

    /// Set `mask` in word `w` of level `k` and, when the word becomes full, its bit in
    /// the level above (and so on up).
    fn set_word(&mut self, mut k: usize, mut w: u64, mut mask: u64) {
        loop {
            let word = &mut self.levels[k][w as usize];
            *word |= mask;
            if *word != u64::MAX || k + 1 == self.levels.len() {
                return;
            }
            mask = 1 << (w % W);
            w /= W;
            k += 1;
        }
    }

    /// fio's `axmap_set_nr`: mark up to `n` blocks from `b` as done, stopping at the
    /// first block already done (or at the map's end). Returns how many were marked
    /// (0 when `b` itself was done).
    pub(crate) fn mark_run(&mut self, b: u64, n: u64) -> u64 {
        let end = b.saturating_add(n).min(self.blocks);
        let mut at = b;
        while at < end {
            let w = at / W;
            let lo = at % W;
            let hi = (end - w * W).min(W);
            let want = span(lo, hi);
            let done = self.levels[0][w as usize] & want;
            // The run stops below the lowest done bit of the span, if any.
            let stop = if done != 0 {
                done.trailing_zeros() as u64
            } else {
                hi
            };
            if stop > lo {
                self.set_word(0, w, span(lo, stop));
            }
            at = w * W + stop;
            if stop < hi {
                break;
            }
        }
        at - b.min(at)
    }

    /// The first free block at or after `b` on level `k` (in that level's bits), or
    /// `None`.
    fn first_free_from(&self, k: usize, b: u64) -> Option<u64> {
        let level = &self.levels[k];
        let w = b / W;
        if w as usize >= level.len() {
            return None;
        }
        let free = !level[w as usize] & span(b % W, W);
        if free != 0 {
            return Some(w * W + free.trailing_zeros() as u64);
        }
        // The word is done from `b` on: the next word of this level that is not full
        // is the next clear bit of the level above, after this word's bit.
        if k + 1 == self.levels.len() {
            return None;
        }
        let up = self.first_free_from(k + 1, w + 1)?;
        // Descend: the first clear bit of word `up` of this level.
        let free = !level[up as usize];
        Some(up * W + free.trailing_zeros() as u64)
    }

    /// fio's `axmap_next_free`: the first free block after `b`, wrapping to the map's
    /// start; `None` when the map is full.
    pub(crate) fn next_free_after(&self, b: u64) -> Option<u64> {
        if self.is_full() {
            return None;
        }
        let next = if b + 1 >= self.blocks { 0 } else { b + 1 };
        self.first_free_from(0, next)
            .or_else(|| self.first_free_from(0, 0))
    }
}

/// The random maps of one thread's files, and the block they count in.
#[derive(Clone, Debug)]
pub(crate) struct FileMaps {
    /// Bytes per block: the smallest block size of the directions the job does (fio's
    /// `rw_min_bs`).
    unit: u64,
    maps: Vec<RandomMap>,
}

impl FileMaps {
    /// The maps of a thread of `job` whose `nfiles` files are `file_size` bytes each and
    /// which does the directions `dirs` (read, write, trim); `None` when fio would keep
    /// none: a sequential job, `norandommap`, a `random_distribution` other than
    /// `random` (fio's init.c: "Using a non-uniform random distribution excludes usage
    /// of a random map"), a `blockalign` other than the smallest block size ("Any use
    /// of blockalign= turns off randommap"), and, in sluice, `zonemode=strided` (whose
    /// random offsets are drawn with replacement in the zone window).
    pub(crate) fn for_job(
        job: &JobSpec,
        dirs: [bool; 3],
        file_size: u64,
        nfiles: u32,
    ) -> Option<FileMaps> {
        if !job.rw.is_random() || job.norandommap {
            return None;
        }
        if job.distribution.iter().any(|d| *d != Distribution::Uniform) {
            return None;
        }
        let bs = [&job.bs.read, &job.bs.write, &job.bs.trim];
        let odd_align = (0..2).any(|d| {
            let a = job.blockalign[d];
            dirs[d] && a != 0 && a != bs[d].min_len()
        });
        if odd_align || crate::zones::Strided::new(&job.zone).is_some() {
            return None;
        }
        let unit = (0..3)
            .filter(|&d| dirs[d])
            .map(|d| bs[d].min_len() as u64)
            .min()?
            .max(1);
        let blocks = file_size / unit;
        if blocks == 0 {
            return None;
        }
        Some(FileMaps {
            unit,
            maps: vec![RandomMap::new(blocks); nfiles.max(1) as usize],
        })
    }

    /// Place a random I/O drawn at `rel` (bytes from file `f`'s start) of `len` bytes,
    /// as fio: a file whose map is full starts afresh; a drawn block already done
    /// gives way to the next free block (`axmap_next_free`), the I/O then cut to fit
    /// in the file; the I/O's blocks are marked up to the first done one and the I/O
    /// is cut to the blocks marked (`mark_random_map`). Returns the offset (from the
    /// file's start) and length.
    #[inline]
    pub(crate) fn place(&mut self, f: u32, rel: u64, len: u32, file_size: u64) -> (u64, u32) {
        let u = self.unit;
        let map = &mut self.maps[f as usize];
        if map.is_full() {
            map.reset();
        }
        let mut rel = rel;
        let mut len = len as u64;
        let mut b = rel / u;
        if map.is_done(b) {
            // Not full, so there is a free block.
            b = map.next_free_after(b).unwrap_or(0);
            rel = b * u;
            let room = file_size - rel;
            if len > room {
                len = room / u * u;
            }
        }
        let marked = map.mark_run(b, len.div_ceil(u));
        if marked * u < len {
            len = marked * u;
        }
        (rel, len as u32)
    }

    /// Every file's map afresh (a new loop: fio's `fio_file_reset`).
    pub(crate) fn reset(&mut self) {
        for m in &mut self.maps {
            m.reset();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_stop_at_done_blocks_and_the_end() {
        let mut m = RandomMap::new(200);
        assert_eq!(m.mark_run(70, 5), 5);
        assert_eq!(m.mark_run(60, 20), 10);
        assert_eq!(m.mark_run(70, 3), 0);
        assert_eq!(m.mark_run(195, 10), 5);
        assert!(m.is_done(60) && m.is_done(74) && !m.is_done(75) && !m.is_done(59));
    }

    #[test]
    fn next_free_wraps_and_skips_full_words() {
        let mut m = RandomMap::new(5000);
        assert_eq!(m.mark_run(0, 4000), 4000);
        assert_eq!(m.next_free_after(10), Some(4000));
        assert_eq!(m.mark_run(4000, 1000), 1000);
        assert!(m.is_full());
        assert_eq!(m.next_free_after(10), None);
        m.reset();
        assert!(!m.is_full());
        assert_eq!(m.mark_run(4095, 905), 905);
        // After 4100, nothing is free to the end: wrap to block 0.
        assert_eq!(m.next_free_after(4100), Some(0));
        assert_eq!(m.next_free_after(4094), Some(0));
        assert_eq!(m.next_free_after(4093), Some(4094));
    }

    #[test]
    fn every_block_once_by_next_free() {
        // 3 levels: 300 000 blocks.
        let n = 300_000;
        let mut m = RandomMap::new(n);
        let mut b = 12_345;
        for i in 0..n {
            if m.is_done(b) {
                b = m.next_free_after(b).expect("a free block remains");
            }
            assert_eq!(m.mark_run(b, 1), 1, "block {b} at step {i}");
            b = (b * 7 + 13) % n;
        }
        assert!(m.is_full());
    }
}
