//! Commits: the journal task, normal transactions (compound, jbd2-like), checkpoints,
//! and f-transactions (FastResponse's fjournal).

use std::cell::RefCell;
use std::io;
use std::rc::Rc;

use sluice_runtime::{now, set_class, IoOptions};

use super::writeback::JournalBatch;
use super::{journal_io, Phases, State, Store, StoreError, StoreFile, Txn};
use crate::journal::{self, Claims, FHeader, MAX_TAGS};

/// What a commit's journal blocks came to ([`JournalBatch`]): its commit record —
/// area, id and sequence number, the body's crc32c, the claims, its place — whether
/// the record went with them (single-flush) or goes after a FLUSH, and the blocks its
/// data tags name.
#[derive(Debug, Default)]
struct Made {
    f_area: bool,
    id: u64,
    seq: u64,
    crc: u32,
    claims: Claims,
    commit_at: u64,
    inside: bool,
    tagged: Vec<u64>,
}

impl Made {
    /// Close a record's journal writes (`writes`: its body; `tagged`: its data tags'
    /// blocks, none on the two-FLUSH path): the body's crc32c and the claims now, and
    /// — single-flush (`inside`) — the commit record at `commit_at` among them.
    fn close(
        st: &State,
        (f_area, id, seq): (bool, u64, u64),
        mut writes: Vec<(u64, Vec<u8>)>,
        commit_at: u64,
        inside: bool,
        tagged: Vec<u64>,
    ) -> (JournalBatch, Made) {
        let m = Made {
            f_area,
            id,
            seq,
            crc: journal::body_crc(writes.iter().map(|(_, b)| &b[..])),
            claims: st.claims_now(),
            commit_at,
            inside,
            tagged,
        };
        if inside {
            writes.push((commit_at, m.commit_block()));
        }
        let batch = JournalBatch {
            blocks: writes,
            commit_inside: inside,
        };
        (batch, m)
    }

    fn commit_block(&self) -> Vec<u8> {
        journal::encode_commit(self.f_area, self.id, self.seq, self.crc, self.claims)
    }
}

/// Commit timelines kept for waiting fsyncs ([`Phases`]).
const KEEP_PHASES: u64 = 256;

impl Store {
    pub(super) fn request(&self, id: u64) {
        let mut st = self.st.borrow_mut();
        if id > st.requested {
            st.requested = id;
            drop(st);
            self.work.notify_one();
        }
    }

    pub(super) async fn wait_commit(&self, id: u64) -> Result<(), StoreError> {
        self.request(id);
        let mut g = self.lock.lock().await;
        loop {
            let (committed, aborted) = {
                let st = self.st.borrow();
                (st.committed, st.aborted.clone())
            };
            if let Some(e) = aborted {
                return Err(StoreError::Aborted(e));
            }
            if committed >= id {
                return Ok(());
            }
            g = self.done.wait(g).await;
        }
    }

    pub(super) async fn signal_done(&self) {
        let _g = self.lock.lock().await;
        self.done.notify_all();
    }

    pub(super) async fn journal_task(self: Rc<Self>) {
        self.done.register_helper();
        loop {
            set_class(self.journal_class.get());
            {
                let mut g = self.lock.lock().await;
                loop {
                    set_class(self.journal_class.get());
                    let pending = {
                        let st = self.st.borrow();
                        st.requested > st.committed
                    };
                    if pending {
                        break;
                    }
                    g = self.work.wait(g).await;
                }
            }
            let mut r = self.commit().await;
            if r.is_ok() && !self.st.borrow().flive.is_empty() {
                // The commit covered f-transactions: the f-area's tail moves past them
                // (after the commit's waiters are woken, off their path).
                self.signal_done().await;
                r = self.release_f().await;
            }
            if let Err(e) = &r {
                // The device failed: the journal aborts (as jbd2's), and every waiting
                // and later fsync gets the error.
                self.st.borrow_mut().aborted = Some(e.to_string());
            }
            self.signal_done().await;
            if r.is_err() {
                return;
            }
        }
    }

    /// Commit the running transaction (one at a time).
    pub(super) async fn commit(&self) -> io::Result<()> {
        let _c = self.commit_lock.lock().await;
        // Close: the blocks' images now (frozen), a new running transaction. An empty
        // transaction is not closed: ids in the journal stay consecutive, as recovery
        // requires.
        let (id, snapshot) = {
            let mut st = self.st.borrow_mut();
            if st.running.dirty.is_empty() {
                st.requested = st.committed;
                return Ok(());
            }
            let next = Txn {
                id: st.running.id + 1,
                ..Txn::default()
            };
            let t = std::mem::replace(&mut st.running, next);
            let snap: Vec<(u64, Vec<u8>)> =
                t.dirty.iter().map(|b| (*b, st.meta[b].clone())).collect();
            st.closing.insert(t.id, t.frees);
            (t.id, snap)
        };
        // Ordered mode: the transaction's direct data writes complete first, and its
        // buffered data goes home.
        {
            let mut g = self.lock.lock().await;
            while self.st.borrow().handles.get(&id).copied().unwrap_or(0) > 0 {
                g = self.done.wait(g).await;
            }
        }
        let chunks: Vec<&[(u64, Vec<u8>)]> = snapshot.chunks(MAX_TAGS).collect();
        let need = snapshot.len() as u64 + chunks.len() as u64 + 1;
        let g = self.st.borrow().g;
        if need + 1 >= g.journal {
            return Err(io::Error::other(format!(
                "a transaction of {} blocks does not fit the {}-block journal",
                snapshot.len(),
                g.journal
            )));
        }
        // Single-flush: room for the descriptors of its data tags too (a tag per new
        // block at least; a commit whose tags do not fit goes out with two FLUSHes).
        let single = self.single_flush();
        let data_room = match single {
            true => {
                (self.st.borrow().seals.count(|f| f.alloc <= id) as u64).div_ceil(MAX_TAGS as u64)
            }
            false => 0,
        };
        if self.st.borrow().jhead + need + data_room.min(g.journal / 2) >= g.journal {
            self.checkpoint().await?;
        }
        let jhead = self.st.borrow().jhead;
        let made = RefCell::new(Made::default());
        // The transaction's journal blocks, made once its data is out: data tags (a
        // descriptor's worth at a time), descriptors with the metadata blocks, and —
        // single-flush — the commit record.
        let build = || {
            let mut st = self.st.borrow_mut();
            let (dtags, blocks) = match single {
                true => st.seals.tags(|f| f.alloc <= id),
                false => Default::default(),
            };
            let ddesc = dtags.len().div_ceil(MAX_TAGS) as u64;
            let inside = single && jhead + need + ddesc < g.journal;
            st.stats.two_flush += u64::from(single && !inside);
            let mut at = g.journal_start() + jhead;
            let mut writes = Vec::with_capacity((need + ddesc) as usize);
            let blocks = match inside {
                true => {
                    for c in dtags.chunks(MAX_TAGS) {
                        writes.push((at, journal::encode_descriptor(id, &[], c)));
                        at += 1;
                    }
                    st.seals.tagged(&blocks, Claims { id, fseq: 0 });
                    blocks
                }
                false => Vec::new(),
            };
            for c in &chunks {
                let tags: Vec<journal::Tag> =
                    c.iter().map(|(b, v)| (*b, journal::block_crc(v))).collect();
                writes.push((at, journal::encode_descriptor(id, &tags, &[])));
                at += 1;
                for (_, blk) in c.iter() {
                    writes.push((at, blk.clone()));
                    at += 1;
                }
            }
            let (batch, m) = Made::close(&st, (false, id, 0), writes, at, inside, blocks);
            *made.borrow_mut() = m;
            batch
        };
        // Ordered data: every buffered block dirtied up to this transaction goes home
        // (FastResponse's T_D2 — other files' data included), before the journal
        // blocks or beside them (AIOS's asynchronous path).
        let start = now();
        let (n, data) = self.write_data(|_, d| d.txn <= id, build).await?;
        self.st.borrow_mut().stats.data_by_commit += n;
        let journal = now();
        let m = made.take();
        self.seal_record(&m).await?;
        let mut st = self.st.borrow_mut();
        let p = Phases {
            start,
            data,
            journal,
            done: now(),
        };
        st.phases.insert(id, p);
        // Kept for the fsyncs still waiting on recent commits.
        st.phases = st.phases.split_off(&id.saturating_sub(KEEP_PHASES));
        st.committed = id;
        st.seals.durable(m.claims);
        st.seals.committed(id);
        // Map blocks last changed up to `id` are in this commit: the files'
        // f-transactions need not carry them any more.
        st.map_dirty.retain(|_, (t, _)| *t > id);
        // Blocks logged inline by f-transactions of transactions up to `id`: this
        // commit wrote them home and covers those records.
        st.pins.retain(|_, p| p.txn > id);
        st.jhead = m.commit_at + 1 - g.journal_start();
        st.stats.commits += 1;
        st.stats.journal_blocks += snapshot.len() as u64;
        for (b, v) in snapshot {
            st.checkpoint.insert(b, v);
        }
        let frees = st.closing.remove(&id).unwrap_or_default();
        for b in frees.blocks {
            st.used[b as usize] = false;
        }
        for i in frees.inodes {
            st.inode_used[i as usize - 1] = false;
        }
        // Freed metadata blocks may have images in the journal: reused after the next
        // checkpoint, when no replay can write them again.
        st.held.extend(frees.meta);
        Ok(())
    }

    /// Make a record durable once its data and journal blocks are home (`m`: what
    /// they came to). Single-flush: one FLUSH makes the data, the journal blocks and
    /// the commit record durable — once every write of a tagged block has completed.
    /// Otherwise the data and the journal blocks are durable before the commit record
    /// (FLUSH, then the record with FUA).
    async fn seal_record(&self, m: &Made) -> io::Result<()> {
        if m.inside {
            self.settle(&m.tagged).await;
            return self.flush().await;
        }
        self.flush().await?;
        self.dev
            .write(m.commit_at, &m.commit_block(), journal_io().fua(true))
            .await
    }

    /// Write the committed metadata home and reclaim the journal (commit lock held).
    pub(super) async fn checkpoint(&self) -> io::Result<()> {
        let (blocks, g, next) = {
            let mut st = self.st.borrow_mut();
            let b: Vec<(u64, Vec<u8>)> = std::mem::take(&mut st.checkpoint).into_iter().collect();
            (b, st.g, st.committed + 1)
        };
        // A freed data block may be a map block now: sealed first if a tentative
        // record vouches for its old contents (`seal.rs`).
        self.seal_before(blocks.iter().map(|b| b.0)).await?;
        self.dev.write_all(&blocks, IoOptions::new()).await?;
        self.flush().await?;
        let _j = self.jsb_lock.lock().await;
        let claims = self.st.borrow().claims_now();
        let js = journal::encode_jsuper(next, claims);
        self.dev
            .write(g.journal_start(), &js, journal_io().fua(true))
            .await?;
        let mut st = self.st.borrow_mut();
        st.seals.jsb_first = next;
        st.seals.durable(claims);
        st.jhead = 1;
        st.stats.checkpoints += 1;
        // No transaction before `next` is replayed any more: freed metadata blocks of
        // committed transactions can have new owners.
        for b in std::mem::take(&mut st.held) {
            st.used[b as usize] = false;
            st.meta.remove(&(b as u64));
        }
        Ok(())
    }

    /// Move the f-area's tail past the f-transactions normal commits have covered (an
    /// f-transaction of transaction `id` is covered once `id` committed, and all are
    /// once every change is committed): the area's superblock names the new tail (FUA)
    /// before the space behind it is written again. It runs beside f-transactions
    /// (under `ftail_lock`, not `fj_lock`): one being written lies at or after the new
    /// tail (or at block 1, where recovery also looks, if it wrapped), and the space
    /// freed counts only once the superblock naming the new tail is on the device.
    pub(super) async fn release_f(&self) -> io::Result<()> {
        let _t = self.ftail_lock.lock().await;
        let (seq, tail, g) = {
            let mut st = self.st.borrow_mut();
            let (all, committed) = (st.last_change() <= st.committed, st.committed);
            while st.flive.front().is_some_and(|r| all || r.id <= committed) {
                st.flive.pop_front();
            }
            let (seq, tail) = match st.flive.front() {
                Some(r) => (r.seq, r.start),
                // An f-transaction being written is there, or at block 1 if it wrapped
                // (recovery looks there too).
                None => (st.fseq, st.fhead),
            };
            if tail == st.ftail {
                return Ok(());
            }
            (seq, tail, st.g)
        };
        let sb = journal::encode_fsuper(seq, tail);
        self.dev
            .write(g.fjournal_start(), &sb, journal_io().fua(true))
            .await?;
        self.st.borrow_mut().ftail = tail;
        Ok(())
    }

    /// Commit an f-transaction of `f` (FastResponse's fjournal), as the calling task;
    /// returns its timeline (or that of the normal commit that covered the file, when
    /// the f-area was full).
    pub(super) async fn fjournal(&self, f: StoreFile) -> Result<Phases, StoreError> {
        let _fj = self.fj_lock.lock().await;
        // The file's own writes in flight complete first (ordered mode for this file;
        // other files' data is not waited for).
        {
            let mut g = self.lock.lock().await;
            while self
                .st
                .borrow()
                .ino_handles
                .get(&f.ino)
                .copied()
                .unwrap_or(0)
                > 0
            {
                g = self.done.wait(g).await;
            }
        }
        let g = self.st.borrow().g;
        // The inode image, and the allocations it covers (its data tags' blocks).
        let (inode, order) = {
            let st = self.st.borrow();
            (st.inode(f.ino), st.seals.order_now())
        };
        // The file's minimum metadata: its inode, and its map blocks (indirect,
        // double-indirect, indirect blocks under it) changed since a commit — normal or
        // an f-transaction of the file — last carried them; not the whole tree.
        let dirty: Vec<(u64, u64)> = self
            .st
            .borrow()
            .map_dirty
            .range((f.ino, 0)..=(f.ino, u64::MAX))
            .map(|(k, v)| (k.1, v.1))
            .collect();
        let ntags = dirty.len() as u64;
        // Data logged inline (`Store::set_inline`): the file's buffered blocks, when
        // all of them were dirtied in the running transaction (whose commit, covering
        // this record, is the only commit that writes them home) and they are few.
        let (inline, logged) = self.inline_data(f.ino);
        let ninline = inline.len() as u64;
        let need = ntags + ninline + 2;
        // Room in the circular f-area (a normal commit is requested once the area is
        // half full, so a full one — and this fsync waiting for that commit's T_D2 —
        // is rare). A file whose changed map blocks do not fit one header's tags
        // (`journal::max_ftags`: hundreds of indirect blocks changed since the last
        // commit) takes the same way: a normal commit makes it durable.
        // A file with pinned blocks whose data tags might not fit the header: a normal
        // commit covers it instead (`State::pinned_tags_fit`).
        let tags_fit = self
            .st
            .borrow()
            .pinned_tags_fit(f.ino, dirty.len() + inline.len());
        let room = match dirty.len() <= journal::max_ftags(1) && tags_fit {
            true => self.st.borrow().f_room(need),
            false => None,
        };
        let Some(fhead) = room else {
            // No room: a normal commit covers every f-transaction in the area — and
            // makes this file durable too — then the tail moves past them.
            let id = self.st.borrow().last_change();
            self.wait_commit(id).await?;
            self.release_f().await?;
            return Ok(self.commit_phases(id));
        };
        let (id, seq) = {
            let st = self.st.borrow();
            (st.running.id, st.fseq)
        };
        // The logged blocks: the map blocks, then the inline data.
        let blocks: Vec<Vec<u8>> = {
            let st = self.st.borrow();
            dirty
                .iter()
                .map(|(b, _)| st.meta[b].clone())
                .chain(inline.iter().map(|d| d.2.clone()))
                .collect()
        };
        let homes = dirty
            .iter()
            .map(|(h, _)| *h)
            .chain(inline.iter().map(|d| d.1));
        let tags: Vec<journal::Tag> = homes
            .zip(&blocks)
            .map(|(h, b)| (h, journal::block_crc(b)))
            .collect();
        self.st.borrow_mut().pin(f.ino, &inline, id);
        // Not written home by this record: what it logs, and what an earlier one
        // logged as it still is.
        let inline_idx: Vec<u64> = inline.iter().map(|d| d.0).chain(logged).collect();
        let fs = g.fjournal_start();
        let ino = f.ino;
        let single = self.single_flush();
        let made = RefCell::new(Made::default());
        // The header (with the data tags of the file's new blocks allocated before the
        // inode image — single-flush, if they fit beside the map blocks' tags), the
        // blocks, and the commit record with them when single-flush.
        let build = || {
            let mut st = self.st.borrow_mut();
            let (dtags, tb) = match single {
                true => st.seals.tags(|x| x.ino == ino && x.order < order),
                false => Default::default(),
            };
            let inside = single && tags.len() + dtags.len() <= journal::max_ftags(1);
            st.stats.two_flush += u64::from(single && !inside);
            let h = FHeader {
                id,
                seq,
                entries: vec![(ino, inode)],
                tags: tags.clone(),
                data: if inside { dtags } else { Vec::new() },
            };
            let tb = match inside {
                true => {
                    st.seals.tagged(&tb, Claims { id: 0, fseq: seq });
                    tb
                }
                false => Vec::new(),
            };
            let hb = h.encode();
            let mut writes = vec![(fs + fhead, hb)];
            for (i, b) in blocks.iter().enumerate() {
                writes.push((fs + fhead + 1 + i as u64, b.clone()));
            }
            let at = fs + fhead + 1 + ntags + ninline;
            let (batch, m) = Made::close(&st, (true, id, seq), writes, at, inside, tb);
            *made.borrow_mut() = m;
            batch
        };
        // The file's buffered data, as of the inode image above (its own only: the
        // point of fjournal), then the f-transaction's blocks — or both at once.
        let start = now();
        let (n, data) = self
            .write_data(|k, _| k.0 == ino && !inline_idx.contains(&k.1), build)
            .await?;
        self.st.borrow_mut().stats.data_by_fsync += n;
        let journal = now();
        let m = made.take();
        self.seal_record(&m).await?;
        let (half, id) = self.f_committed(fhead, need, seq, id, m.claims, ntags, f.ino, &dirty);
        if half {
            self.request(id);
        }
        if single {
            // Writers waiting to seal this f-transaction's blocks (`seal.rs`).
            self.signal_done().await;
        }
        Ok(Phases {
            start,
            data,
            journal,
            done: now(),
        })
    }

    /// The books after f-transaction `seq` (at `fhead`, `need` blocks) of inode `ino`
    /// committed; returns whether the f-area is half full, and the last change (for
    /// the normal commit asked for then).
    #[allow(clippy::too_many_arguments)]
    fn f_committed(
        &self,
        fhead: u64,
        need: u64,
        seq: u64,
        id: u64,
        claims: Claims,
        ntags: u64,
        ino: u32,
        dirty: &[(u64, u64)],
    ) -> (bool, u64) {
        let mut st = self.st.borrow_mut();
        let g = st.g;
        st.flive.push_back(super::FRecord {
            start: fhead,
            seq,
            id,
        });
        st.fhead = fhead + need;
        st.fseq += 1;
        st.seals.durable(claims);
        st.stats.ftxns += 1;
        st.stats.fjournal_blocks += ntags;
        // The map blocks it carried are durable as they were then; a later change
        // (a new generation) stays for the next one.
        for (b, gen) in dirty {
            if st.map_dirty.get(&(ino, *b)).is_some_and(|v| v.1 == *gen) {
                st.map_dirty.remove(&(ino, *b));
            }
        }
        // Half the area in use: ask the journal task for a normal commit, which covers
        // these f-transactions, so the area has room again before it fills.
        (2 * st.f_used() >= g.fjournal - 1, st.last_change())
    }
}
