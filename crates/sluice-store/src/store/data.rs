//! File data: reads, direct and buffered writes (ordered mode, in steps that fit a
//! transaction), truncation (writeback: `writeback.rs`).

use std::collections::BTreeSet;
use std::io;

use sluice_runtime::{current_class, IoClass, IoOptions};

use super::{dec, Dirty, State, Store, StoreError, StoreFile};
use crate::layout::{Inode, BLOCK, MAX_FILE_BLOCKS};

/// Most blocks one read request carries (128 KiB, as the page cache's read runs).
const READ_RUN_BLOCKS: usize = 32;

/// The largest step of one write (16 MiB): its metadata must fit one transaction.
const WRITE_STEP: u64 = 16 << 20;

/// Most blocks of one write step moved to new blocks rather than sealed
/// ([`State::redirect_vouched`]); each may dirty one more bitmap block.
const REDIRECT_MAX: usize = 2;

/// A write of `len` bytes at `offset` must end inside the largest file.
fn check_end(offset: u64, len: usize) -> Result<(), StoreError> {
    match offset.checked_add(len as u64) {
        Some(end) if end.div_ceil(BLOCK as u64) <= MAX_FILE_BLOCKS => Ok(()),
        _ => Err(StoreError::TooBig),
    }
}

/// `data` at `offset` in steps that end on [`WRITE_STEP`] boundaries of the file.
fn steps(offset: u64, data: &[u8]) -> impl Iterator<Item = (u64, &[u8])> {
    let mut at = 0usize;
    std::iter::from_fn(move || {
        if at >= data.len() {
            return None;
        }
        let off = offset + at as u64;
        let n = ((WRITE_STEP - off % WRITE_STEP) as usize).min(data.len() - at);
        let part = (off, &data[at..at + n]);
        at += n;
        Some(part)
    })
}

impl Store {
    /// Read `out.len()` bytes at `offset` (short at the end of the file; holes read as
    /// zeros), with the calling task's class. Buffered blocks are copied, then blocks
    /// the read cache holds ([`Store::set_read_cache`]); blocks home and consecutive on
    /// the device are read in one request of up to 128 KiB through the runtime's read
    /// path ([`sluice_runtime::File::read_pages`]: the stack's
    /// [`ReadPath`](sluice_runtime::ReadPath) places the pages' work, as for the page
    /// cache's misses — AIOS's read path reaches the store's files too) and fill the
    /// cache.
    pub async fn read(
        &self,
        f: StoreFile,
        offset: u64,
        out: &mut [u8],
    ) -> Result<usize, StoreError> {
        self.read_with(f, offset, out, true).await
    }

    /// [`Store::read`] around the read cache, as `O_DIRECT`: buffered blocks are copied
    /// (they are the newest data; Linux writes them back before a direct read, with the
    /// same result), every other block is read home and not cached.
    pub async fn read_direct(
        &self,
        f: StoreFile,
        offset: u64,
        out: &mut [u8],
    ) -> Result<usize, StoreError> {
        self.read_with(f, offset, out, false).await
    }

    async fn read_with(
        &self,
        f: StoreFile,
        offset: u64,
        out: &mut [u8],
        cached: bool,
    ) -> Result<usize, StoreError> {
        let (n, map) = {
            let st = self.st.borrow();
            st.live(f)?;
            let inode = st.inode(f.ino);
            let n = inode.size.saturating_sub(offset).min(out.len() as u64) as usize;
            let map: Vec<u64> = if n == 0 {
                Vec::new()
            } else {
                (offset / BLOCK as u64..=(offset + n as u64 - 1) / BLOCK as u64)
                    .map(|i| st.map(&inode, i))
                    .collect()
            };
            (n, map)
        };
        // Block k of the read: its bytes in `out` and in the block.
        let first = offset / BLOCK as u64;
        let part = |k: usize| {
            let start = if k == 0 {
                (offset % BLOCK as u64) as usize
            } else {
                0
            };
            let at = if k == 0 {
                0
            } else {
                BLOCK * k - (offset % BLOCK as u64) as usize
            };
            (at, start, (BLOCK - start).min(n - at))
        };
        let mut k = 0;
        while k < map.len() {
            let buffered = |j: usize| {
                self.st
                    .borrow()
                    .data
                    .get(&(f.ino, first + j as u64))
                    .map(|d| d.bytes.clone())
            };
            let (at, start, len) = part(k);
            if let Some(b) = buffered(k) {
                out[at..at + len].copy_from_slice(&b[start..start + len]);
                k += 1;
                continue;
            }
            if map[k] == 0 {
                out[at..at + len].fill(0);
                k += 1;
                continue;
            }
            let hit = match cached {
                true => self.st.borrow_mut().cache.get(f.ino, first + k as u64),
                false => None,
            };
            if let Some(b) = hit {
                out[at..at + len].copy_from_slice(&b[start..start + len]);
                k += 1;
                continue;
            }
            // A run of blocks home and consecutive on the device, neither buffered nor
            // cached: one request, as Linux reads the missing range of a `read` in one
            // bio.
            let mut run = 1;
            while k + run < map.len()
                && run < READ_RUN_BLOCKS
                && map[k + run] == map[k] + run as u64
            {
                let idx = first + (k + run) as u64;
                let st = self.st.borrow();
                if st.data.contains_key(&(f.ino, idx)) || (cached && st.cache.has(f.ino, idx)) {
                    break;
                }
                run += 1;
            }
            // The blocks the cache takes when the read completes (lazy indexing: a
            // change meanwhile makes them stale).
            let idxs = first + k as u64..first + (k + run) as u64;
            let (epoch, admitted): (u64, Vec<bool>) = {
                let mut st = self.st.borrow_mut();
                let admitted = idxs
                    .clone()
                    .map(|i| cached && st.cache.begin_read(f.ino, i))
                    .collect();
                (st.cache.epoch(), admitted)
            };
            let r = self.dev.read_data(map[k], run as u64).await;
            {
                let mut st = self.st.borrow_mut();
                for (j, i) in idxs.enumerate().filter(|&(j, _)| admitted[j]) {
                    let b = r.as_ref().ok().map(|b| &b[j * BLOCK..(j + 1) * BLOCK]);
                    st.cache.read_done(epoch, f.ino, i, b);
                }
            }
            let bytes = r?;
            for j in 0..run {
                let (at, start, len) = part(k + j);
                let b = &bytes[j * BLOCK..(j + 1) * BLOCK];
                out[at..at + len].copy_from_slice(&b[start..start + len]);
            }
            k += run;
        }
        Ok(n)
    }

    /// A block of a file as it is now: buffered, else home (`phys`), else a hole.
    pub(super) async fn block_now(
        &self,
        ino: u32,
        idx: u64,
        phys: u64,
    ) -> io::Result<Option<Vec<u8>>> {
        if let Some(d) = self.st.borrow().data.get(&(ino, idx)) {
            return Ok(Some(d.bytes.clone()));
        }
        if phys == 0 {
            return Ok(None);
        }
        if let Some(b) = self.st.borrow_mut().cache.get(ino, idx) {
            return Ok(Some(b));
        }
        self.dev.read(phys).await.map(Some)
    }

    /// The new images of the blocks `data` at `offset` covers (blocks covered in part
    /// are read first). Bytes past the end of the file in a block read are zeroed: a
    /// block may hold bytes beyond the size (a truncation, a write the crash left
    /// without its size), which must never show once the file grows over them.
    pub(super) async fn images(
        &self,
        f: StoreFile,
        offset: u64,
        data: &[u8],
    ) -> Result<Vec<Vec<u8>>, StoreError> {
        check_end(offset, data.len())?;
        let end = offset + data.len() as u64;
        let (first, last) = (offset / BLOCK as u64, (end - 1) / BLOCK as u64);
        let mut images = Vec::with_capacity((last - first + 1) as usize);
        for idx in first..=last {
            let (bs, be) = (idx * BLOCK as u64, (idx + 1) * BLOCK as u64);
            let whole = offset <= bs && end >= be;
            let phys = {
                let st = self.st.borrow();
                st.map(&st.inode(f.ino), idx)
            };
            let mut img = match whole {
                true => None,
                false => self.block_now(f.ino, idx, phys).await?,
            }
            .unwrap_or_else(|| vec![0u8; BLOCK]);
            let size = self.st.borrow().inode(f.ino).size;
            if size < be {
                img[size.saturating_sub(bs) as usize..].fill(0);
            }
            let (s, e) = (offset.max(bs), end.min(be));
            img[(s - bs) as usize..(e - bs) as usize]
                .copy_from_slice(&data[(s - offset) as usize..(e - offset) as usize]);
            images.push(img);
        }
        Ok(images)
    }

    /// Write `data` at `offset` directly: blocks are allocated in the running
    /// transaction and the data written home (with the calling task's class) before the
    /// write returns; the transaction cannot commit while it is in flight (ordered
    /// mode). A write above 16 MiB goes in steps of 16 MiB, each in the transaction
    /// running then (a transaction must fit the journal).
    pub async fn write(&self, f: StoreFile, offset: u64, data: &[u8]) -> Result<usize, StoreError> {
        if data.is_empty() {
            return Ok(0);
        }
        check_end(offset, data.len())?;
        for (at, part) in steps(offset, data) {
            self.write_step(f, at, part).await?;
        }
        Ok(data.len())
    }

    async fn write_step(&self, f: StoreFile, offset: u64, data: &[u8]) -> Result<(), StoreError> {
        self.st.borrow().live(f)?;
        let first = offset / BLOCK as u64;
        let end = offset + data.len() as u64;
        let last = (end - 1) / BLOCK as u64;
        let bound = State::alloc_bound(last - first + 1) + REDIRECT_MAX as u64;
        loop {
            // A block an f-transaction logged inline is written directly only once the
            // commit covering that record is durable (recovery would write the logged
            // copy over this write).
            self.unpin(f.ino, first..=last).await?;
            self.txn_room(bound).await?;
            // A block with buffered data may have a writeback in flight: writing it
            // directly now could land before that older copy. Such writes wait for the
            // writeback and keep others out until they are home.
            let buffered = {
                let st = self.st.borrow();
                st.data
                    .range((f.ino, first)..=(f.ino, last))
                    .next()
                    .is_some()
            };
            let _d = match buffered {
                true => Some(self.writeback_lock(|_| BTreeSet::from([f.ino])).await),
                false => None,
            };
            let tail = self.grown_tail(f, offset, true).await?;
            let images = self.images(f, offset, data).await?;
            // Allocation and size, in the running transaction, with a handle held.
            let (txn, writes) = {
                let mut st = self.st.borrow_mut();
                if !st.txn_fits(bound) {
                    // Others filled the transaction meanwhile: wait for its commit.
                    continue;
                }
                let mut inode = st.inode(f.ino);
                st.keep_tail(f.ino, &inode, tail);
                let phys = st.map_alloc_all(f.ino, &mut inode, first..last + 1)?;
                let phys = st.redirect_vouched(f.ino, &mut inode, first, end, phys);
                st.expose_tail(f.ino, &inode, end, first, &phys);
                let mut writes = Vec::with_capacity(images.len());
                for (k, (img, phys)) in images.into_iter().zip(phys).enumerate() {
                    // A direct write supersedes buffered data of the block.
                    if let Some(d) = st.data.remove(&(f.ino, first + k as u64)) {
                        st.data_bytes -= d.bytes.len() as u64;
                    }
                    writes.push((phys, img));
                }
                inode.size = inode.size.max(end);
                inode.change += 1;
                st.set_inode(f.ino, &inode);
                let txn = st.running.id;
                *st.handles.entry(txn).or_default() += 1;
                *st.ino_handles.entry(f.ino).or_default() += 1;
                (txn, writes)
            };
            // A block a tentative commit vouches for is sealed before it changes
            // (single-flush commits: `seal.rs`); then nothing waits before the writes
            // go, so no record tags the blocks in between.
            let r = match self.seal_before(writes.iter().map(|w| w.0)).await {
                Ok(()) => {
                    let blocks = writes.iter().map(|(b, v)| (*b, &v[..]));
                    self.st.borrow_mut().seals.issued(blocks);
                    let r = self.dev.write_all(&writes, IoOptions::new()).await;
                    let blocks = writes.iter().map(|(b, v)| (*b, &v[..]));
                    self.st.borrow_mut().seals.completed(blocks);
                    r
                }
                Err(e) => Err(e),
            };
            {
                let mut st = self.st.borrow_mut();
                dec(&mut st.handles, txn);
                dec(&mut st.ino_handles, f.ino);
                // The blocks changed at home: no clean copy of them stays, and a read
                // still in flight is made stale (as Linux invalidates the page cache
                // after a direct write: a read that ran beside the write may have read,
                // and would cache, the old data).
                st.cache.forget(f.ino, first, last);
            }
            self.signal_done().await;
            r?;
            return Ok(());
        }
    }

    /// Write `data` at `offset` into the store's buffers: blocks are allocated and the
    /// size set in the running transaction; the data goes home before that transaction
    /// commits (ordered mode: a compound commit writes every file's buffered data —
    /// FastResponse's T_D2 — an fjournal fsync only its own file's). When more than
    /// 32 MiB are buffered, the writer writes them home first. Above 16 MiB, in steps
    /// of 16 MiB (as [`Store::write`]).
    pub async fn write_buffered(
        &self,
        f: StoreFile,
        offset: u64,
        data: &[u8],
    ) -> Result<usize, StoreError> {
        if data.is_empty() {
            return Ok(0);
        }
        check_end(offset, data.len())?;
        for (at, part) in steps(offset, data) {
            self.write_buffered_step(f, at, part).await?;
        }
        Ok(data.len())
    }

    async fn write_buffered_step(
        &self,
        f: StoreFile,
        offset: u64,
        data: &[u8],
    ) -> Result<(), StoreError> {
        self.st.borrow().live(f)?;
        self.make_room().await?;
        let first = offset / BLOCK as u64;
        let n = (offset + data.len() as u64 - 1) / BLOCK as u64 + 1 - first;
        let bound = State::alloc_bound(n) + REDIRECT_MAX as u64;
        loop {
            self.txn_room(bound).await?;
            let tail = self.grown_tail(f, offset, true).await?;
            let images = self.images(f, offset, data).await?;
            let mut st = self.st.borrow_mut();
            if !st.txn_fits(bound) {
                continue;
            }
            let mut inode = st.inode(f.ino);
            st.keep_tail(f.ino, &inode, tail);
            let phys = st.map_alloc_all(f.ino, &mut inode, first..first + n)?;
            let end = offset + data.len() as u64;
            let phys = st.redirect_vouched(f.ino, &mut inode, first, end, phys);
            st.expose_tail(f.ino, &inode, end, first, &phys);
            for (k, (img, phys)) in images.into_iter().zip(phys).enumerate() {
                st.buffer_block(f.ino, first + k as u64, phys, img);
            }
            inode.size = inode.size.max(offset + data.len() as u64);
            inode.change += 1;
            st.set_inode(f.ino, &inode);
            return Ok(());
        }
    }

    /// Wait until the running transaction has room for a change of up to `more`
    /// blocks, asking for its commit if it has not (jbd2 makes a new handle wait for
    /// the commit of a full transaction the same way): a transaction's commit must fit
    /// the journal. The caller checks again when it changes the metadata.
    async fn txn_room(&self, more: u64) -> Result<(), StoreError> {
        loop {
            let id = {
                let st = self.st.borrow();
                if st.txn_fits(more) {
                    return Ok(());
                }
                st.running.id
            };
            self.wait_commit(id).await?;
        }
    }

    /// Set `f`'s size to `len`. Shrinking unmaps and frees the blocks past the new end
    /// (reused once the transaction commits — a map block once a checkpoint follows)
    /// and drops their buffered data; growing leaves a hole, after zeroing the bytes of
    /// the old last block that become part of the file (in the store's buffer: ordered
    /// mode writes them home before the new size commits). The size change is one step
    /// of the running transaction, as a write's. A shrink whose frees would not fit one
    /// transaction even alone (a file spread over more bitmap blocks than the journal
    /// holds) is refused with [`StoreError::TxnTooBig`], nothing changed.
    pub async fn truncate(&self, f: StoreFile, len: u64) -> Result<(), StoreError> {
        if len.div_ceil(BLOCK as u64) > MAX_FILE_BLOCKS {
            return Err(StoreError::TooBig);
        }
        loop {
            self.st.borrow().live(f)?;
            let change = self.st.borrow().inode(f.ino).change;
            let tail = self.grown_tail(f, len, false).await?;
            let wait = {
                let mut st = self.st.borrow_mut();
                let mut inode = st.inode(f.ino);
                if inode.change != change {
                    // The file changed while its last block was read: again.
                    continue;
                }
                if len == inode.size {
                    return Ok(());
                }
                let keep = len.div_ceil(BLOCK as u64);
                let bound = match len < inode.size {
                    true => st.free_bound(&inode, keep),
                    false => 1,
                };
                if bound > st.txn_capacity() {
                    return Err(StoreError::TxnTooBig(format!(
                        "truncating a file to {len} bytes changes up to {bound} metadata \
                         blocks (most of them bitmap blocks of the blocks it frees), more \
                         than one transaction of the store's {}-block journal holds ({}): \
                         truncate it in steps, or make the store with a larger journal",
                        st.g.journal,
                        st.txn_capacity()
                    )));
                }
                if st.txn_fits(bound) {
                    if len < inode.size {
                        st.unmap_from(f.ino, &mut inode, keep);
                        st.drop_buffered(f.ino, keep);
                    }
                    st.keep_tail(f.ino, &inode, tail);
                    inode.size = len;
                    inode.change += 1;
                    st.set_inode(f.ino, &inode);
                    return Ok(());
                }
                st.running.id
            };
            self.wait_commit(wait).await?;
        }
    }

    /// When `f` grows from its size to `upto` past its partly used last block without
    /// writing over it (a truncation up, a write beyond the end): that block's image
    /// with the bytes from the old end zeroed. A block may hold bytes past the end (a
    /// truncation down, a write the crash left without its size); they must never show.
    /// `None` when the size ends on a block boundary or in a hole, or when the `write`
    /// at `upto` covers the block (its image is zeroed past the end then).
    async fn grown_tail(
        &self,
        f: StoreFile,
        upto: u64,
        write: bool,
    ) -> Result<Option<Tail>, StoreError> {
        let (size, phys) = {
            let st = self.st.borrow();
            let i = st.inode(f.ino);
            let idx = i.size / BLOCK as u64;
            let partly = !i.size.is_multiple_of(BLOCK as u64) && upto > i.size;
            (i.size, if partly { st.map(&i, idx) } else { 0 })
        };
        let idx = size / BLOCK as u64;
        let bend = (idx + 1) * BLOCK as u64;
        if phys == 0 || (write && upto / BLOCK as u64 == idx) {
            return Ok(None);
        }
        let zeros = vec![0u8; (upto.min(bend) - size) as usize];
        let img = self
            .images(f, size, &zeros)
            .await?
            .pop()
            .expect("one block");
        Ok(Some(Tail {
            idx,
            phys,
            size,
            img,
        }))
    }
}

/// The zeroed image of a file's old last block ([`Store::grown_tail`]).
#[derive(Debug)]
struct Tail {
    idx: u64,
    phys: u64,
    /// The size it was read at.
    size: u64,
    img: Vec<u8>,
}

impl State {
    /// Buffer the zeroed old last block if the file is still as it was read (`inode`:
    /// its image now); it goes home before the growth commits (ordered mode).
    fn keep_tail(&mut self, ino: u32, inode: &Inode, tail: Option<Tail>) {
        if let Some(t) = tail {
            if inode.size == t.size && self.map(inode, t.idx) == t.phys {
                let txn = self.running.id;
                self.seals.exposed(t.phys, ino, txn);
                self.buffer_block(ino, t.idx, t.phys, t.img);
            }
        }
    }

    /// Blocks `first..` of a write ending at `end` (home `phys`) that a tentative
    /// record vouches for — written in place, each would wait for a seal (`seal.rs`):
    /// a log appended in records smaller than a block, fsynced after each, rewrites its
    /// last block right after the commit that tagged it — move to new blocks when the
    /// write grows the file (`inode`: its image, size not yet set), the old ones freed
    /// with this transaction (as a copy-on-write file system writes a block
    /// elsewhere). A growth needs a commit anyway; an overwrite inside the file keeps
    /// its blocks and the data-only `fdatasync`, and is sealed. At most
    /// [`REDIRECT_MAX`] per write: a larger rewrite is sealed once instead. Returns the
    /// blocks' homes now.
    fn redirect_vouched(
        &mut self,
        ino: u32,
        inode: &mut Inode,
        first: u64,
        end: u64,
        mut phys: Vec<u64>,
    ) -> Vec<u64> {
        if !self.g.single_flush || end <= inode.size {
            return phys;
        }
        let vouched: Vec<usize> = (0..phys.len())
            .filter(|&k| self.seals.needed([phys[k]]).is_some())
            .collect();
        if vouched.is_empty() || vouched.len() > REDIRECT_MAX {
            return phys;
        }
        for k in vouched {
            let idx = first + k as u64;
            if let Some(b) = self.remap(ino, inode, idx) {
                // Its buffered copy, if any, goes to the new home.
                if let Some(d) = self.data.get_mut(&(ino, idx)) {
                    d.phys = b;
                }
                self.stats.redirected += 1;
                phys[k] = b;
            }
        }
        phys
    }

    /// A write of blocks `first..` (home `phys`) that ends at `end` past the file's end
    /// (`inode`: its image, size not yet set) inside its partly used last block: that
    /// block's bytes past the old end become readable — a new block for single-flush
    /// commits' data tags (`seal.rs`).
    fn expose_tail(&mut self, ino: u32, inode: &Inode, end: u64, first: u64, phys: &[u64]) {
        let old = inode.size;
        if old.is_multiple_of(BLOCK as u64) || end <= old {
            return;
        }
        let idx = old / BLOCK as u64;
        if let Some(&b) = idx.checked_sub(first).and_then(|k| phys.get(k as usize)) {
            let txn = self.running.id;
            self.seals.exposed(b, ino, txn);
        }
    }

    /// Keep `img` as the buffered contents of block `idx` of inode `ino` (home `phys`),
    /// to go home before the running transaction commits (or the one that first
    /// dirtied it, if it is buffered already).
    pub(super) fn buffer_block(&mut self, ino: u32, idx: u64, phys: u64, img: Vec<u8>) {
        let (txn, gen) = (self.running.id, self.next_gen);
        self.next_gen += 1;
        let critical = current_class() == IoClass::Critical;
        match self.data.get_mut(&(ino, idx)) {
            Some(d) => {
                d.bytes = img;
                d.gen = gen;
                d.critical |= critical;
            }
            None => {
                self.data_bytes += img.len() as u64;
                self.stats.buffered_peak = self.stats.buffered_peak.max(self.data_bytes);
                self.data.insert(
                    (ino, idx),
                    Dirty {
                        phys,
                        bytes: img,
                        txn,
                        gen,
                        critical,
                    },
                );
            }
        }
    }

    /// Drop the buffered and cached blocks of inode `ino` from block `from` on (their
    /// blocks are freed). A writeback of them in flight still lands before the freeing
    /// commits, and so do blocks a closed transaction still needs home.
    pub(super) fn drop_buffered(&mut self, ino: u32, from: u64) {
        self.cache.forget(ino, from, u64::MAX);
        let gone: Vec<(u32, u64)> = self
            .data
            .range((ino, from)..=(ino, u64::MAX))
            .map(|(k, _)| *k)
            .collect();
        for k in gone {
            let d = self.data.remove(&k).expect("present");
            if d.txn < self.running.id {
                // A closed transaction made these contents reachable (a growth, the
                // zeroed tail of one): they still go home before it commits, as jbd2's
                // ordered truncate writes the committing transaction's data first. The
                // running transaction frees the block, so nothing else writes it
                // before then; inode 0 (no file has it) keeps them apart from the
                // file's blocks.
                let key = (0, self.next_gen);
                self.next_gen += 1;
                self.data.insert(key, d);
            } else {
                self.data_bytes -= d.bytes.len() as u64;
            }
        }
    }
}
