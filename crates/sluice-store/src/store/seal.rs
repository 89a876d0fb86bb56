//! What single-flush commits need at run time (`journal::Claims` has the protocol):
//! the data tags a record carries, and the seals that keep a tentative record
//! checkable.
//!
//! - **New blocks** (`Seals::fresh`): a data block allocated since a normal commit last
//!   made allocations durable, or a file's old last block the file grew past (the
//!   bytes past the old end, zeros or old data at home, become readable). Each write of it issued is noted with the crc32c of what
//!   it writes, until a FLUSH issued after the write completed makes it durable
//!   (`Fresh::pending`). A record that makes the block reachable carries a data tag
//!   per pending write: a normal transaction for the blocks allocated up to it, an
//!   f-transaction for its file's blocks allocated before its inode image. Before its
//!   FLUSH, a record waits for every write of its tagged blocks still in flight: the
//!   FLUSH then covers them, and no write can tear a tagged block after it.
//! - **Seals** (`Seals::hazard`): once a record has tagged a block, the block must not
//!   change at home until some durable record claims that record durable — a crash
//!   would leave the tentative record's data tag wrong, and recovery would drop a
//!   commit whose fsync returned. A write home of such a block (data, or a checkpoint
//!   of a block reused as metadata) first waits for the record's FLUSH, then, unless a
//!   later record's claims are durable by then, writes the journal superblock with the
//!   claims (FUA): a seal. Appends need none (each block is written once); a write that
//!   grows the file over one or two such blocks moves them to new blocks instead
//!   (`redirect_vouched` in `data.rs`); other rewrites pay one seal, the second FLUSH
//!   the two-flush protocol paid on every commit.

use std::collections::BTreeMap;
use std::io;

use super::{State, Store, StoreError};
use crate::journal::{self, Claims, Tag};

/// A new data block ([`Seals::fresh`]): allocated, or the old last block of a file
/// that grows past it (bytes past the old end become readable).
#[derive(Debug)]
pub(super) struct Fresh {
    /// The first transaction that made it reachable (allocated or exposed it): the
    /// commits from that one on tag it.
    pub(super) alloc: u64,
    /// The last one: once that one commits, no record makes its contents newly
    /// reachable.
    last: u64,
    pub(super) ino: u32,
    /// An allocation counter: an f-transaction tags the blocks allocated before its
    /// inode image only.
    pub(super) order: u64,
    /// Writes not known durable: crc32c of what each wrote, and the number of FLUSHes
    /// issued when it completed (`None`: in flight).
    pub(super) pending: Vec<(u32, Option<u64>)>,
}

/// The run-time state of single-flush commits.
#[derive(Debug, Default)]
pub(super) struct Seals {
    /// Kept when the block is freed (a committing transaction may still make it
    /// reachable) until the last transaction that made it reachable commits.
    pub(super) fresh: BTreeMap<u64, Fresh>,
    /// Blocks tagged by records not yet claimed durable on the device: what must be
    /// claimed before the block is written again.
    hazard: BTreeMap<u64, Claims>,
    /// What the durable records claim.
    pub(super) on_disk: Claims,
    /// FLUSHes issued so far.
    flushes: u64,
    next_order: u64,
    /// The normal journal's first transaction, as its superblock names it.
    pub(super) jsb_first: u64,
    /// Seals written.
    pub(super) written: u64,
}

impl Seals {
    /// Data block `b` of inode `ino` was allocated in transaction `alloc`.
    pub(super) fn allocated(&mut self, b: u64, ino: u32, alloc: u64) {
        let order = self.next_order;
        self.next_order += 1;
        self.fresh.insert(
            b,
            Fresh {
                alloc,
                last: alloc,
                ino,
                order,
                pending: Vec::new(),
            },
        );
    }

    /// Block `b` of inode `ino`, allocated before, becomes readable further in
    /// transaction `txn` (the file grows past its old end inside it): its next writes
    /// are tagged as a new block's.
    pub(super) fn exposed(&mut self, b: u64, ino: u32, txn: u64) {
        match self.fresh.get_mut(&b) {
            Some(f) => f.last = f.last.max(txn),
            None => self.allocated(b, ino, txn),
        }
    }

    /// The next allocation's order number (an f-transaction's inode image is taken now).
    pub(super) fn order_now(&self) -> u64 {
        self.next_order
    }

    /// Writes of `blocks` (home, contents) are issued.
    pub(super) fn issued<'a>(&mut self, blocks: impl IntoIterator<Item = (u64, &'a [u8])>) {
        for (b, bytes) in blocks {
            if let Some(f) = self.fresh.get_mut(&b) {
                f.pending.push((journal::block_crc(bytes), None));
            }
        }
    }

    /// Writes of `blocks` (home, contents) completed (or failed: they no longer
    /// change the block).
    pub(super) fn completed<'a>(&mut self, blocks: impl IntoIterator<Item = (u64, &'a [u8])>) {
        let now = self.flushes;
        for (b, bytes) in blocks {
            if let Some(f) = self.fresh.get_mut(&b) {
                let crc = journal::block_crc(bytes);
                if let Some(p) = f.pending.iter_mut().find(|p| p.1.is_none() && p.0 == crc) {
                    p.1 = Some(now);
                }
            }
        }
    }

    /// A FLUSH is issued: its number.
    pub(super) fn flush_issued(&mut self) -> u64 {
        self.flushes += 1;
        self.flushes
    }

    /// FLUSH number `k` completed: the writes completed before it was issued are
    /// durable.
    pub(super) fn flush_done(&mut self, k: u64) {
        for f in self.fresh.values_mut() {
            f.pending.retain(|p| !matches!(p.1, Some(c) if c < k));
        }
    }

    /// The data tags of the blocks `pick` selects (one per pending write), and those
    /// blocks.
    pub(super) fn tags(&self, pick: impl Fn(&Fresh) -> bool) -> (Vec<Tag>, Vec<u64>) {
        let mut tags = Vec::new();
        let mut blocks = Vec::new();
        for (&b, f) in &self.fresh {
            if !f.pending.is_empty() && pick(f) {
                tags.extend(f.pending.iter().map(|p| (b, p.0)));
                blocks.push(b);
            }
        }
        (tags, blocks)
    }

    /// `blocks` are tagged by the record `tagger` (its id, or its sequence number):
    /// they must not change at home until it is claimed durable.
    pub(super) fn tagged(&mut self, blocks: &[u64], tagger: Claims) {
        for &b in blocks {
            let h = self.hazard.entry(b).or_default();
            *h = h.join(tagger);
        }
    }

    /// How many blocks `pick` may tag (at least a tag each: room in the journal).
    pub(super) fn count(&self, pick: impl Fn(&Fresh) -> bool) -> usize {
        self.fresh.values().filter(|f| pick(f)).count()
    }

    /// Allocations up to transaction `id` are durable: no record makes those blocks
    /// newly reachable any more.
    pub(super) fn committed(&mut self, id: u64) {
        self.fresh.retain(|_, f| f.last > id);
    }

    /// Whether a write of `blocks` is in flight.
    pub(super) fn in_flight(&self, blocks: &[u64]) -> bool {
        blocks.iter().any(|b| {
            self.fresh
                .get(b)
                .is_some_and(|f| f.pending.iter().any(|p| p.1.is_none()))
        })
    }

    /// What must be claimed durable on the device before `blocks` are written home.
    pub(super) fn needed(&self, blocks: impl IntoIterator<Item = u64>) -> Option<Claims> {
        let mut need: Option<Claims> = None;
        for b in blocks {
            if let Some(h) = self.hazard.get(&b) {
                if !self.on_disk.covers(h) {
                    need = Some(need.unwrap_or_default().join(*h));
                }
            }
        }
        need
    }

    /// A record with `claims` is durable.
    pub(super) fn durable(&mut self, claims: Claims) {
        self.on_disk = self.on_disk.join(claims);
        let on = self.on_disk;
        self.hazard.retain(|_, h| !on.covers(h));
    }
}

impl State {
    /// What this store knows durable now: the last normal transaction committed and
    /// the last f-transaction whose FLUSH completed.
    pub(super) fn claims_now(&self) -> Claims {
        Claims {
            id: self.committed,
            fseq: self.fseq.saturating_sub(1),
        }
    }
}

impl Store {
    /// A FLUSH, noted for the pending writes of new blocks.
    pub(super) async fn flush(&self) -> io::Result<()> {
        let k = self.st.borrow_mut().seals.flush_issued();
        self.dev.flush().await?;
        self.st.borrow_mut().seals.flush_done(k);
        Ok(())
    }

    /// Wait until `blocks` may be written home: every record that tagged one of them
    /// claimed durable on the device — sealed here if no later record claims it yet.
    /// The caller writes them with no wait between this and the submission (else a
    /// record could tag them meanwhile).
    pub(super) async fn seal_before(
        &self,
        blocks: impl Iterator<Item = u64> + Clone,
    ) -> io::Result<()> {
        if !self.single_flush() {
            return Ok(());
        }
        loop {
            let Some(need) = self.st.borrow().seals.needed(blocks.clone()) else {
                return Ok(());
            };
            // The records' own FLUSHes first: claims are only made of what completed.
            {
                let mut g = self.lock.lock().await;
                loop {
                    let (aborted, acked) = {
                        let st = self.st.borrow();
                        (st.aborted.clone(), st.claims_now().covers(&need))
                    };
                    if let Some(e) = aborted {
                        return Err(io::Error::other(StoreError::Aborted(e)));
                    }
                    if acked {
                        break;
                    }
                    g = self.done.wait(g).await;
                }
            }
            let _j = self.jsb_lock.lock().await;
            if self.st.borrow().seals.on_disk.covers(&need) {
                continue;
            }
            let (first, claims, g) = {
                let st = self.st.borrow();
                (st.seals.jsb_first, st.claims_now(), st.g)
            };
            let sb = journal::encode_jsuper(first, claims);
            self.dev
                .write(g.journal_start(), &sb, super::journal_io().fua(true))
                .await?;
            let mut st = self.st.borrow_mut();
            st.seals.durable(claims);
            st.seals.written += 1;
        }
    }

    /// Wait until no write of `blocks` is in flight (a record's tagged blocks, before
    /// its FLUSH).
    pub(super) async fn settle(&self, blocks: &[u64]) {
        let mut g = self.lock.lock().await;
        while self.st.borrow().seals.in_flight(blocks) {
            g = self.done.wait(g).await;
        }
    }

    pub(super) fn single_flush(&self) -> bool {
        self.st.borrow().g.single_flush
    }
}
