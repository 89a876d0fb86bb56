//! Block maps: a file's blocks through its 24 direct pointers, its indirect block and
//! its double-indirect block (1 024 indirect blocks under it). Lookup, allocation (all
//! or none), unmapping, and the room a change needs in the running transaction.
//!
//! Every change is marked in the running transaction; a change of a map block (the
//! indirect block, the double-indirect block, an indirect block under it) is also kept
//! in the file's set of map blocks changed since they were last committed
//! (`State::map_dirty`): what the file's next f-transaction carries, and nothing more
//! (FastResponse's minimum metadata).

use std::collections::BTreeSet;

use super::{State, StoreError};
use crate::journal::MAX_TAGS;
use crate::layout::{le32, Inode, Slot, BLOCK, DIRECT, DOUBLE_START, PER_INDIRECT};

/// Blocks a file's new run of blocks is given before the next one opens past it
/// ([`State::alloc_after`]).
const WINDOW: u64 = 32;

/// Entry `k` of a map block.
fn entry(b: &[u8], k: usize) -> u32 {
    le32(b, k * 4)
}

fn set_entry(b: &mut [u8], k: usize, v: u32) {
    b[k * 4..k * 4 + 4].copy_from_slice(&v.to_le_bytes());
}

/// Blocks the sync operations (create, rename, unlink), which do not wait for room,
/// may add to the running transaction after a write or truncation found room: at most
/// this many, or a quarter of what a transaction holds.
const SYNC_SLACK: u64 = 64;

/// What an allocation did, undone when the store fills (all or none).
#[derive(Debug, Default)]
pub(super) struct Undo {
    /// Entries set in map blocks (block, entry): holes before.
    entries: Vec<(u64, usize)>,
    /// Data blocks allocated.
    data: Vec<u64>,
    /// Map blocks allocated.
    maps: Vec<u64>,
}

impl State {
    /// Entry `k` of map block `block` (0: no such block, or a hole).
    fn entry_of(&self, block: u32, k: usize) -> u32 {
        match block {
            0 => 0,
            b => self.meta.get(&(b as u64)).map_or(0, |m| entry(m, k)),
        }
    }

    /// Block `idx` of a file (0: a hole).
    pub(super) fn map(&self, inode: &Inode, idx: u64) -> u64 {
        match Slot::of(idx) {
            Some(Slot::Direct(i)) => inode.direct[i] as u64,
            Some(Slot::Indirect(e)) => self.entry_of(inode.indirect, e) as u64,
            Some(Slot::Double(k, e)) => self.entry_of(self.entry_of(inode.double, k), e) as u64,
            None => 0,
        }
    }

    /// Runs of consecutive blocks a file lies in (`FileStat::extents`), walking it as
    /// e2fsck does: its data blocks in order, each map block where the map first needs
    /// it (the indirect block before data block 24, …). A hole ends a run.
    pub(super) fn extents(&self, inode: &Inode) -> u64 {
        let mut runs = 0;
        let mut prev = 0;
        let mut step = |b: u64| {
            if b != 0 && (prev == 0 || b != prev + 1) {
                runs += 1;
            }
            prev = b;
        };
        for idx in 0..inode.size.div_ceil(BLOCK as u64) {
            match Slot::of(idx) {
                Some(Slot::Indirect(0)) => step(inode.indirect as u64),
                Some(Slot::Double(k, 0)) => {
                    if k == 0 {
                        step(inode.double as u64);
                    }
                    step(self.entry_of(inode.double, k) as u64);
                }
                _ => {}
            }
            step(self.map(inode, idx));
        }
        runs
    }

    /// A file's map blocks: its indirect block, its double-indirect block and the
    /// indirect blocks under that one.
    pub(super) fn map_blocks(&self, inode: &Inode) -> Vec<u64> {
        let mut v = Vec::new();
        if inode.indirect != 0 {
            v.push(inode.indirect as u64);
        }
        if inode.double != 0 {
            v.push(inode.double as u64);
            if let Some(d) = self.meta.get(&(inode.double as u64)) {
                v.extend(
                    (0..PER_INDIRECT)
                        .map(|k| entry(d, k))
                        .filter(|&b| b != 0)
                        .map(u64::from),
                );
            }
        }
        v
    }

    /// Every block a file uses: data and map blocks.
    pub(super) fn blocks_of(&self, inode: &Inode) -> Vec<u64> {
        let mut v: Vec<u64> = inode
            .direct
            .iter()
            .filter(|&&b| b != 0)
            .map(|&b| b as u64)
            .collect();
        let maps = self.map_blocks(inode);
        for &m in &maps {
            // The double-indirect block names indirect blocks (in `maps`), not data.
            if m == inode.double as u64 {
                continue;
            }
            if let Some(ind) = self.meta.get(&m) {
                v.extend(
                    (0..PER_INDIRECT)
                        .map(|k| entry(ind, k))
                        .filter(|&b| b != 0)
                        .map(u64::from),
                );
            }
        }
        v.extend(maps);
        v
    }

    /// A block for a file whose block before it is `after` (0: none, or a hole): the
    /// block right after that one if it is free, so the file stays in one run. A first
    /// block (or one after a hole) takes the rotor's next free block, so small files
    /// written whole lie packed one after the other. A block whose place is taken (the
    /// file grew while another was allocated after it) opens a new window: the first
    /// free block from the rotor, which then moves [`WINDOW`] blocks on, so the next
    /// file to open a window opens it past this one. Two files grown side by side fill
    /// a window each instead of taking turns block by block (ext4's goal-directed
    /// allocation: small files packed, a growing file given a window of its own; the
    /// window is not reserved, only left to the file until the rotor comes round).
    pub(super) fn alloc_after(&mut self, after: u64) -> Result<u64, StoreError> {
        let (start, end) = (self.g.data_start(), self.g.blocks);
        if after == 0 {
            return self.alloc();
        }
        let goal = after + 1;
        if (start..end).contains(&goal) && !self.used[goal as usize] {
            self.used[goal as usize] = true;
            self.set_bit(goal, true);
            // A file that runs past the rotor takes it along: the next run opens after it.
            self.hint = self.hint.max(goal + 1);
            return Ok(goal);
        }
        let b = self.alloc()?;
        self.hint = start + (b + WINDOW - start) % (end - start);
        Ok(b)
    }

    pub(super) fn alloc(&mut self) -> Result<u64, StoreError> {
        let (start, end) = (self.g.data_start(), self.g.blocks);
        let n = end - start;
        for k in 0..n {
            let b = start + (self.hint - start + k) % n;
            if !self.used[b as usize] {
                self.used[b as usize] = true;
                self.hint = b + 1;
                if self.hint >= end {
                    self.hint = start;
                }
                self.set_bit(b, true);
                return Ok(b);
            }
        }
        Err(StoreError::NoSpace("blocks"))
    }

    /// Map block `block` of inode `ino` changed in the running transaction: its next
    /// f-transaction carries it (until a commit covers the change).
    fn dirty_map(&mut self, ino: u32, block: u64) {
        self.dirty(block);
        let gen = self.next_gen;
        self.next_gen += 1;
        self.map_dirty.insert((ino, block), (self.running.id, gen));
    }

    /// A new, empty map block of inode `ino`.
    fn new_map(&mut self, ino: u32, undo: &mut Undo, after: u64) -> Result<u64, StoreError> {
        let b = self.alloc_after(after)?;
        self.meta.insert(b, vec![0u8; BLOCK]);
        self.dirty_map(ino, b);
        undo.maps.push(b);
        Ok(b)
    }

    /// Set entry `k` of map block `block` of inode `ino` (a hole) to `v`.
    fn fill_entry(&mut self, ino: u32, block: u64, k: usize, v: u64, undo: &mut Undo) {
        let m = self.meta.get_mut(&block).expect("map block in memory");
        set_entry(m, k, v as u32);
        self.dirty_map(ino, block);
        undo.entries.push((block, k));
    }

    /// Block `idx` of inode `ino` (whose new image is `inode`), allocated if a hole —
    /// with the map blocks on its way: an essential change.
    fn map_alloc(
        &mut self,
        ino: u32,
        inode: &mut Inode,
        idx: u64,
        undo: &mut Undo,
    ) -> Result<u64, StoreError> {
        let cur = self.map(inode, idx);
        if cur != 0 {
            return Ok(cur);
        }
        let slot = Slot::of(idx).ok_or(StoreError::TooBig)?;
        let id = self.running.id;
        self.ino_dtxn.insert(ino, id);
        // The map blocks on the way first, then the data block, each after the block
        // before it in a walk of the file (`State::extents`).
        let mut after = match idx {
            0 => 0,
            _ => self.map(inode, idx - 1),
        };
        let (block, k) = match slot {
            Slot::Direct(i) => {
                let b = self.alloc_after(after)?;
                undo.data.push(b);
                inode.direct[i] = b as u32;
                return Ok(b);
            }
            Slot::Indirect(e) => {
                if inode.indirect == 0 {
                    inode.indirect = self.new_map(ino, undo, after)? as u32;
                    after = inode.indirect as u64;
                }
                (inode.indirect as u64, e)
            }
            Slot::Double(k, e) => {
                if inode.double == 0 {
                    inode.double = self.new_map(ino, undo, after)? as u32;
                    after = inode.double as u64;
                }
                let d = inode.double as u64;
                let mut ind = self.entry_of(inode.double, k) as u64;
                if ind == 0 {
                    ind = self.new_map(ino, undo, after)?;
                    after = ind;
                    self.fill_entry(ino, d, k, ind, undo);
                }
                (ind, e)
            }
        };
        let b = self.alloc_after(after)?;
        undo.data.push(b);
        self.fill_entry(ino, block, k, b, undo);
        Ok(b)
    }

    /// Blocks `idxs` of inode `ino` (new image `inode`), allocated where holes; all or
    /// none: when the store is full, what this call allocated is given back.
    pub(super) fn map_alloc_all(
        &mut self,
        ino: u32,
        inode: &mut Inode,
        idxs: std::ops::Range<u64>,
    ) -> Result<Vec<u64>, StoreError> {
        let before = *inode;
        let mut undo = Undo::default();
        let mut phys = Vec::with_capacity(idxs.clone().count());
        for idx in idxs {
            match self.map_alloc(ino, inode, idx, &mut undo) {
                Ok(b) => phys.push(b),
                Err(e) => {
                    self.undo(ino, undo);
                    *inode = before;
                    return Err(e);
                }
            }
        }
        let txn = self.running.id;
        for &b in &undo.data {
            self.seals.allocated(b, ino, txn);
        }
        Ok(phys)
    }

    /// Move mapped block `idx` of inode `ino` (new image `inode`) to a newly
    /// allocated block and free the old one in the running transaction (reused once
    /// it commits): an essential change. Returns the new block; `None` (nothing
    /// changed) when the store is full.
    pub(super) fn remap(&mut self, ino: u32, inode: &mut Inode, idx: u64) -> Option<u64> {
        let old = self.map(inode, idx);
        let slot = Slot::of(idx)?;
        if old == 0 {
            return None;
        }
        let b = self.alloc().ok()?;
        match slot {
            Slot::Direct(i) => inode.direct[i] = b as u32,
            Slot::Indirect(e) => self.set_map_entry(ino, inode.indirect as u64, e, b),
            Slot::Double(k, e) => {
                let ind = self.entry_of(inode.double, k) as u64;
                self.set_map_entry(ino, ind, e, b);
            }
        }
        let txn = self.running.id;
        self.ino_dtxn.insert(ino, txn);
        self.seals.allocated(b, ino, txn);
        self.free_block(old as u32, false);
        Some(b)
    }

    /// Set entry `k` of map block `block` of inode `ino` to `v`.
    fn set_map_entry(&mut self, ino: u32, block: u64, k: usize, v: u64) {
        let m = self.meta.get_mut(&block).expect("map block in memory");
        set_entry(m, k, v as u32);
        self.dirty_map(ino, block);
    }

    fn undo(&mut self, ino: u32, u: Undo) {
        for (block, k) in u.entries {
            if let Some(m) = self.meta.get_mut(&block) {
                set_entry(m, k, 0);
            }
        }
        for b in u.data {
            self.used[b as usize] = false;
            self.set_bit(b, false);
        }
        for b in u.maps {
            self.used[b as usize] = false;
            self.set_bit(b, false);
            self.meta.remove(&b);
            self.running.dirty.remove(&b);
            self.map_dirty.remove(&(ino, b));
        }
    }

    /// Unmap blocks `keep..` of inode `ino` (`inode`: its new image, set by the caller)
    /// and free them in the running transaction, with every map block left without an
    /// entry (an indirect block, the double-indirect block). Freed data blocks are
    /// reused once the transaction commits; a freed map block only after the
    /// checkpoint that follows (it may be in the journal: a replay must never write its
    /// old image over a new owner's data — what jbd2's revoke records prevent). A
    /// freed map block is not marked dirty: nothing reaches it any more.
    pub(super) fn unmap_from(&mut self, ino: u32, inode: &mut Inode, keep: u64) {
        for i in (keep as usize).min(DIRECT)..DIRECT {
            let b = std::mem::take(&mut inode.direct[i]);
            if b != 0 {
                self.free_block(b, false);
            }
        }
        if inode.indirect != 0 {
            let first = keep.saturating_sub(DIRECT as u64).min(PER_INDIRECT as u64) as usize;
            if self.unmap_entries(ino, inode.indirect as u64, first) {
                self.free_map(ino, std::mem::take(&mut inode.indirect));
            }
        }
        if inode.double != 0 {
            let d = inode.double as u64;
            let from = keep.saturating_sub(DOUBLE_START) as usize;
            let (k0, e0) = (from / PER_INDIRECT, from % PER_INDIRECT);
            let mut changed = false;
            for k in k0..PER_INDIRECT {
                let ind = self.entry_of(inode.double, k);
                if ind == 0 {
                    continue;
                }
                let first = if k == k0 { e0 } else { 0 };
                if self.unmap_entries(ino, ind as u64, first) {
                    self.free_map(ino, ind);
                    set_entry(self.meta.get_mut(&d).expect("map block"), k, 0);
                    changed = true;
                }
            }
            let empty = (0..PER_INDIRECT).all(|k| self.entry_of(inode.double, k) == 0);
            if empty {
                self.free_map(ino, std::mem::take(&mut inode.double));
            } else if changed {
                self.dirty_map(ino, d);
            }
        }
    }

    /// Clear entries `first..` of indirect block `block` of inode `ino`, freeing the
    /// data blocks they named; returns whether the block is left without an entry (the
    /// caller frees it; otherwise it is marked changed if an entry went).
    fn unmap_entries(&mut self, ino: u32, block: u64, first: usize) -> bool {
        let (freed, empty) = {
            let Some(m) = self.meta.get_mut(&block) else {
                return true;
            };
            let freed: Vec<u32> = (first..PER_INDIRECT)
                .filter_map(|k| {
                    let b = entry(m, k);
                    set_entry(m, k, 0);
                    (b != 0).then_some(b)
                })
                .collect();
            (freed, (0..first).all(|k| entry(m, k) == 0))
        };
        for &b in &freed {
            self.free_block(b, false);
        }
        if !empty && !freed.is_empty() {
            self.dirty_map(ino, block);
        }
        empty
    }

    fn free_map(&mut self, ino: u32, b: u32) {
        self.map_dirty.remove(&(ino, b as u64));
        self.free_block(b, true);
    }

    fn free_block(&mut self, b: u32, meta: bool) {
        self.set_bit(b as u64, false);
        if meta {
            self.running.frees.meta.push(b);
        } else {
            self.running.frees.blocks.push(b);
        }
    }

    /// Most blocks one transaction may hold: its commit (descriptors, the blocks and
    /// the commit block) must fit the journal.
    pub(super) fn txn_capacity(&self) -> u64 {
        let j = self.g.journal;
        (j - 3).saturating_sub(j.div_ceil(MAX_TAGS as u64))
    }

    /// Whether a change that may add `more` blocks to the running transaction fits it
    /// now (with room left for the sync operations, [`SYNC_SLACK`]); an empty
    /// transaction takes anything.
    pub(super) fn txn_fits(&self, more: u64) -> bool {
        let cap = self.txn_capacity();
        let slack = SYNC_SLACK.min(cap / 4);
        let have = self.running.dirty.len() as u64;
        have == 0 || have + more + slack <= cap
    }

    /// An upper bound on the blocks allocating `n` blocks of a file adds to a
    /// transaction: the inode's table block, the indirect and double-indirect blocks,
    /// the indirect blocks under it and the bitmap blocks.
    pub(super) fn alloc_bound(n: u64) -> u64 {
        8 + n.div_ceil(PER_INDIRECT as u64) + n.div_ceil(BLOCK as u64 * 8)
    }

    /// An upper bound on the blocks unmapping `inode`'s blocks from `keep` on adds to
    /// a transaction: the inode's table block, the map blocks kept in part, and the
    /// bitmap blocks of the blocks it frees (freed map blocks are not written).
    pub(super) fn free_bound(&self, inode: &Inode, keep: u64) -> u64 {
        if keep >= self.last_mapped(inode) {
            return 1;
        }
        let per = BLOCK as u64 * 8;
        let bitmap: BTreeSet<u64> = self
            .blocks_from(inode, keep)
            .iter()
            .map(|b| b / per)
            .collect();
        // Map blocks that keep entries and lose others: the indirect block, or the
        // double-indirect block and the indirect block under it that `keep` falls in.
        let partly = match keep {
            k if k <= DIRECT as u64 => 0,
            k if k < DOUBLE_START => u64::from(inode.indirect != 0),
            k => {
                let within = !(k - DOUBLE_START).is_multiple_of(PER_INDIRECT as u64);
                u64::from(inode.double != 0) * (1 + u64::from(within))
            }
        };
        1 + partly + bitmap.len() as u64
    }

    /// The blocks unmapping `inode` from block `keep` on could free: data blocks at or
    /// past `keep` and the map blocks that reach them (without walking what stays).
    fn blocks_from(&self, inode: &Inode, keep: u64) -> Vec<u64> {
        let mut v: Vec<u64> = inode.direct[(keep as usize).min(DIRECT)..]
            .iter()
            .filter(|&&b| b != 0)
            .map(|&b| b as u64)
            .collect();
        let tail = |v: &mut Vec<u64>, block: u32, first: usize| {
            if block == 0 {
                return;
            }
            v.push(block as u64);
            if let Some(m) = self.meta.get(&(block as u64)) {
                v.extend(
                    (first..PER_INDIRECT)
                        .map(|k| entry(m, k))
                        .filter(|&b| b != 0)
                        .map(u64::from),
                );
            }
        };
        let first = keep.saturating_sub(DIRECT as u64).min(PER_INDIRECT as u64) as usize;
        tail(&mut v, inode.indirect, first);
        if inode.double != 0 {
            let from = keep.saturating_sub(DOUBLE_START) as usize;
            let (k0, e0) = (from / PER_INDIRECT, from % PER_INDIRECT);
            v.push(inode.double as u64);
            for k in k0..PER_INDIRECT {
                let first = if k == k0 { e0 } else { 0 };
                tail(&mut v, self.entry_of(inode.double, k), first);
            }
        }
        v
    }

    /// One past the last block index `inode` could map (a bound: its highest map level).
    fn last_mapped(&self, inode: &Inode) -> u64 {
        if inode.double != 0 {
            crate::layout::MAX_FILE_BLOCKS
        } else if inode.indirect != 0 {
            DOUBLE_START
        } else {
            DIRECT as u64
        }
    }
}
