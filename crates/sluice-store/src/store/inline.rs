//! Inline data in f-transactions ([`Store::set_inline`], `docs/store.md`, "Inline
//! data"): which buffered blocks an f-transaction logs in its record, and the pins
//! that keep recovery from writing a stale logged copy over newer data — a pinned
//! block goes home only with the commit covering the record that logged it, or with
//! a later f-transaction of its file, whose data tag revokes the logged copy
//! (`Store::load`).

use super::{State, Store, StoreError};
use crate::layout::BLOCK;

/// The inline limit `FsConfig`'s `+inline` sets ([`Store::set_inline`]): up to four
/// blocks, a 4 KiB record straddling two and a group commit of a few small records.
pub const INLINE_BLOCKS: usize = 4;

/// A block logged inline ([`State::pins`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct Pin {
    /// The transaction running when it was logged: its commit covers the record.
    pub(super) txn: u64,
    /// The generation of the buffered copy logged (`Dirty::gen`).
    pub(super) gen: u64,
}

/// A block an f-transaction logs inline: (index, home, contents, generation).
pub(super) type Logged = (u64, u64, Vec<u8>, u64);

impl Store {
    /// Log small fsyncs' data inline in their f-transactions (fjournal on a
    /// single-flush store; default off, FastResponse's format): when a file's buffered
    /// blocks dirtied in the running transaction are all it has buffered and at most
    /// `blocks` of them, its f-transaction carries them as logged blocks, and the
    /// record — header, map blocks, data, commit block — is one contiguous write before
    /// its FLUSH, rather than the data home beside the record (two writes). The blocks
    /// stay buffered and go home with the normal commit that covers the record (as ZFS's
    /// intent log logs small synchronous writes). A log appended in small fsynced
    /// records then keeps its blocks in place (no redirects) and each goes home once.
    /// 0 turns it off. See `docs/store.md`, "Inline data".
    pub fn set_inline(&self, blocks: usize) {
        self.inline_max.set(blocks);
    }

    /// Whether buffered block `k` may go home outside the commit that covers the
    /// f-transaction that logged it inline ([`State::pins`]): the flusher and writers
    /// over their limit leave a pinned block buffered (it goes home with that commit).
    pub(super) fn unpinned(&self, k: &(u32, u64)) -> bool {
        !self.st.borrow().pins.contains_key(k)
    }

    /// The blocks an f-transaction of `ino` logs inline ([`Store::set_inline`]):
    /// (index, home, contents, generation) of each buffered block of the file not
    /// logged already as it is now — when every one was dirtied in the running
    /// transaction, none is going home now and there are at most `inline_max`; else
    /// none (they go home, tagged). And the indices of the blocks logged already as
    /// they are (an earlier record of the file, durable and redone before this one,
    /// holds them: they stay buffered). Taken with the inode image (no wait between).
    pub(super) fn inline_data(&self, ino: u32) -> (Vec<Logged>, Vec<u64>) {
        let max = self.inline_max.get();
        if max == 0 || !self.single_flush() {
            return Default::default();
        }
        let st = self.st.borrow();
        let (logged, new): (Vec<_>, Vec<_>) = st
            .data
            .range((ino, 0)..=(ino, u64::MAX))
            .partition(|(k, d)| st.pins.get(k).is_some_and(|p| p.gen == d.gen));
        let ok = new.len() <= max
            && !st.busy.contains(&ino)
            && new
                .iter()
                .all(|(_, d)| d.txn == st.running.id && d.bytes.len() == BLOCK);
        let logged = logged.into_iter().map(|(k, _)| k.1).collect();
        match ok {
            true => (
                new.into_iter()
                    .map(|(k, d)| (k.1, d.phys, d.bytes.clone(), d.gen))
                    .collect(),
                logged,
            ),
            // The new blocks go home (tagged); those logged already stay.
            false => (Vec::new(), logged),
        }
    }

    /// Wait until no block of `ino` in `idx` is pinned ([`State::pins`]): the commits
    /// that cover the records logging them. For writes home that no record of the
    /// file tags (a direct write, a data-only fdatasync).
    pub(super) async fn unpin(
        &self,
        ino: u32,
        idx: std::ops::RangeInclusive<u64>,
    ) -> Result<(), StoreError> {
        let keys = (ino, *idx.start())..=(ino, *idx.end());
        loop {
            let pin = self.st.borrow().pin_txn(keys.clone());
            match pin {
                Some(t) => self.wait_commit(t).await?,
                None => return Ok(()),
            }
        }
    }
}

impl State {
    /// The last transaction whose commit covers a record logging one of the blocks
    /// `keys` names ([`State::pins`]); `None`: none of them is pinned.
    pub(super) fn pin_txn(&self, keys: impl std::ops::RangeBounds<(u32, u64)>) -> Option<u64> {
        self.pins.range(keys).map(|(_, p)| p.txn).max()
    }

    /// Whether an f-transaction of `ino` that logs or carries `blocks` blocks has room
    /// in its header for the data tags its file's pinned blocks need: a later home
    /// write of a logged block must be tagged (the tag tells recovery the copy at home
    /// is the newer). Counted at most: the tags pending now, one per buffered block
    /// (the writes this record makes) and the blocks. A file with none pinned fits.
    pub(super) fn pinned_tags_fit(&self, ino: u32, blocks: usize) -> bool {
        let file = (ino, 0)..=(ino, u64::MAX);
        if self.pin_txn(file.clone()).is_none() {
            return true;
        }
        let most =
            self.seals.tags(|x| x.ino == ino).0.len() + self.data.range(file).count() + blocks;
        most <= crate::journal::max_ftags(1)
    }

    /// The blocks `inline` of inode `ino` are logged by an f-transaction of running
    /// transaction `id`: pinned from here on (no other writeback takes them home
    /// before the commit of `id`), and registered as new blocks, so that a write home
    /// by a later f-transaction of the file is tagged.
    pub(super) fn pin(&mut self, ino: u32, inline: &[Logged], id: u64) {
        for (idx, phys, _, gen) in inline {
            self.pins.insert((ino, *idx), Pin { txn: id, gen: *gen });
            self.seals.exposed(*phys, ino, id);
        }
        self.stats.inline_blocks += inline.len() as u64;
    }
}
