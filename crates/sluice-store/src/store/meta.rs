//! The in-memory metadata: inodes, directory entries, the bitmap, block maps and
//! allocation, each change marked in the running transaction.

use super::{State, StoreError};
use crate::layout::{encode_dirent, Inode, BLOCK, DIRECT, INODE_SIZE, PER_INDIRECT};

impl State {
    /// The transaction that holds the latest change (the running one, or the last
    /// closed one when the running one is empty).
    /// Blocks of the f-area from its tail to its head (the circular log in use).
    pub(super) fn f_used(&self) -> u64 {
        let len = self.g.fjournal;
        if self.fhead >= self.ftail {
            self.fhead - self.ftail
        } else {
            (len - self.ftail) + (self.fhead - 1)
        }
    }

    /// Where an f-transaction of `need` blocks goes: at the head, or at block 1 when it
    /// does not fit before the area's end (the blocks skipped count as used until the
    /// tail passes them) — `None` when that would reach the tail (blocks 1.. of the
    /// area hold the log; block 0 is its superblock).
    pub(super) fn f_room(&self, need: u64) -> Option<u64> {
        let len = self.g.fjournal;
        let (at, skip) = if self.fhead + need <= len {
            (self.fhead, 0)
        } else {
            (1, len - self.fhead)
        };
        (self.f_used() + skip + need < len - 1).then_some(at)
    }

    pub(super) fn last_change(&self) -> u64 {
        if self.running.dirty.is_empty() {
            self.running.id - 1
        } else {
            self.running.id
        }
    }

    pub(super) fn dirty(&mut self, b: u64) {
        self.running.dirty.insert(b);
    }

    pub(super) fn inode(&self, ino: u32) -> Inode {
        let (b, off) = self.g.inode_pos(ino);
        Inode::decode(&self.meta[&b][off..off + INODE_SIZE])
    }

    /// Change inode `ino` in the running transaction. A change of anything but the
    /// change counter (used, size, block map) is essential: `fdatasync` must commit it.
    pub(super) fn set_inode(&mut self, ino: u32, inode: &Inode) {
        let (b, off) = self.g.inode_pos(ino);
        let id = self.running.id;
        if !self.inode(ino).same_data_as(inode) {
            self.ino_dtxn.insert(ino, id);
        }
        inode.encode(&mut self.meta.get_mut(&b).expect("inode table")[off..off + INODE_SIZE]);
        self.dirty(b);
        self.ino_txn.insert(ino, id);
    }

    pub(super) fn set_dirent(&mut self, slot: u32, ino: u32, name: &str) {
        let (b, off) = self.g.dirent_pos(slot);
        encode_dirent(
            &mut self.meta.get_mut(&b).expect("directory")[off..],
            ino,
            name,
        );
        self.dirty(b);
    }

    pub(super) fn bit(&self, b: u64) -> bool {
        let per = BLOCK as u64 * 8;
        let blk = &self.meta[&(self.g.bitmap_start() + b / per)];
        blk[(b % per / 8) as usize] & (1 << (b % 8)) != 0
    }

    pub(super) fn set_bit(&mut self, b: u64, on: bool) {
        let per = BLOCK as u64 * 8;
        let home = self.g.bitmap_start() + b / per;
        let byte = &mut self.meta.get_mut(&home).expect("bitmap")[(b % per / 8) as usize];
        if on {
            *byte |= 1 << (b % 8);
        } else {
            *byte &= !(1 << (b % 8));
        }
        self.dirty(home);
    }

    /// Block `idx` of a file (0: a hole).
    pub(super) fn map(&self, inode: &Inode, idx: u64) -> u64 {
        let i = idx as usize;
        if i < DIRECT {
            return inode.direct[i] as u64;
        }
        if inode.indirect == 0 {
            return 0;
        }
        let ind = &self.meta[&(inode.indirect as u64)];
        crate::layout::le32(ind, (i - DIRECT) * 4) as u64
    }

    /// Every block a file uses (data and its indirect block).
    pub(super) fn blocks_of(&self, inode: &Inode) -> Vec<u64> {
        let mut v: Vec<u64> = inode
            .direct
            .iter()
            .filter(|&&b| b != 0)
            .map(|&b| b as u64)
            .collect();
        if inode.indirect != 0 {
            v.push(inode.indirect as u64);
            if let Some(ind) = self.meta.get(&(inode.indirect as u64)) {
                for k in 0..PER_INDIRECT {
                    let b = crate::layout::le32(ind, k * 4);
                    if b != 0 {
                        v.push(b as u64);
                    }
                }
            }
        }
        v
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

    /// Block `idx` of inode `ino` (whose new image is `inode`), allocated if a hole
    /// (the indirect block too): an essential change.
    pub(super) fn map_alloc(
        &mut self,
        ino: u32,
        inode: &mut Inode,
        idx: u64,
    ) -> Result<u64, StoreError> {
        let cur = self.map(inode, idx);
        if cur != 0 {
            return Ok(cur);
        }
        let id = self.running.id;
        self.ino_dtxn.insert(ino, id);
        let i = idx as usize;
        if i >= DIRECT && inode.indirect == 0 {
            let ind = self.alloc()?;
            self.meta.insert(ind, vec![0u8; BLOCK]);
            self.dirty(ind);
            inode.indirect = ind as u32;
        }
        let b = self.alloc()?;
        if i < DIRECT {
            inode.direct[i] = b as u32;
        } else {
            let home = inode.indirect as u64;
            let ind = self.meta.get_mut(&home).expect("indirect block in memory");
            ind[(i - DIRECT) * 4..(i - DIRECT) * 4 + 4].copy_from_slice(&(b as u32).to_le_bytes());
            self.dirty(home);
        }
        Ok(b)
    }
}

impl State {
    /// Blocks `idxs` of inode `ino` (new image `inode`), allocated where holes; all or
    /// none: when the store is full, what this call allocated is given back.
    pub(super) fn map_alloc_all(
        &mut self,
        ino: u32,
        inode: &mut Inode,
        idxs: std::ops::Range<u64>,
    ) -> Result<Vec<u64>, StoreError> {
        let before = *inode;
        let mut new = Vec::new();
        let mut phys = Vec::with_capacity(idxs.clone().count());
        for idx in idxs {
            let had = self.map(inode, idx);
            match self.map_alloc(ino, inode, idx) {
                Ok(b) => {
                    if had == 0 {
                        new.push((idx, b));
                    }
                    phys.push(b);
                }
                Err(e) => {
                    for (idx, b) in new {
                        let i = idx as usize;
                        if i >= DIRECT {
                            let home = inode.indirect as u64;
                            let ind = self.meta.get_mut(&home).expect("indirect block");
                            ind[(i - DIRECT) * 4..(i - DIRECT) * 4 + 4].fill(0);
                        }
                        self.used[b as usize] = false;
                        self.set_bit(b, false);
                    }
                    if before.indirect == 0 && inode.indirect != 0 {
                        let ind = inode.indirect as u64;
                        self.used[ind as usize] = false;
                        self.set_bit(ind, false);
                        self.meta.remove(&ind);
                        self.running.dirty.remove(&ind);
                    }
                    *inode = before;
                    return Err(e);
                }
            }
        }
        Ok(phys)
    }

    /// Unmap blocks `keep..` of `inode` (new image, to be set by the caller) and free
    /// them in the running transaction, with its indirect block when no entry is left.
    /// Freed data blocks are reused once the transaction commits; a freed indirect
    /// block only after the checkpoint that follows (it may be in the journal: a replay
    /// must never write its old image over a new owner's data — what jbd2's revoke
    /// records prevent).
    pub(super) fn unmap_from(&mut self, inode: &mut Inode, keep: u64) {
        for i in (keep as usize).min(DIRECT)..DIRECT {
            let b = std::mem::take(&mut inode.direct[i]);
            if b != 0 {
                self.free_block(b, false);
            }
        }
        if inode.indirect == 0 {
            return;
        }
        let home = inode.indirect as u64;
        let first = (keep as usize).saturating_sub(DIRECT);
        let freed: Vec<u32> = {
            let ind = self.meta.get_mut(&home).expect("indirect block in memory");
            (first..PER_INDIRECT)
                .filter_map(|k| {
                    let b = crate::layout::le32(ind, k * 4);
                    ind[k * 4..k * 4 + 4].fill(0);
                    (b != 0).then_some(b)
                })
                .collect()
        };
        self.dirty(home);
        for b in freed {
            self.free_block(b, false);
        }
        if first == 0 {
            inode.indirect = 0;
            self.free_block(home as u32, true);
        }
    }

    fn free_block(&mut self, b: u32, meta: bool) {
        self.set_bit(b as u64, false);
        if meta {
            self.running.frees.meta.push(b);
        } else {
            self.running.frees.blocks.push(b);
        }
    }
}
