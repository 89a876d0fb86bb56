//! The in-memory metadata: inodes, directory entries and the bitmap, each change
//! marked in the running transaction (block maps: `blockmap.rs`); the f-area's room.

use super::State;
use crate::layout::{encode_dirent, Inode, BLOCK, INODE_SIZE};

impl State {
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

    /// The transaction that holds the latest change (the running one, or the last
    /// closed one when the running one is empty).
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
            self.g.metadata_csum,
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
}
