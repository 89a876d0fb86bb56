//! The writeback of buffered blocks: one writeback per file at a time (all or
//! nothing, so two never deadlock), copies taken under the hold, consecutive blocks in
//! one request, and a commit's journal blocks beside the data on AIOS's path.

use std::collections::BTreeSet;
use std::io;

use sluice_core::Nanos;
use sluice_runtime::{
    charge, current_base_class, current_class, now, Activity, IoClass, IoHandle, IoOptions,
};

use super::{DataCopy, Dev, Dirty, FsyncPath, State, Store};

impl Store {
    /// Copies of the buffered blocks `keep` selects, for writeback.
    pub(super) fn data_copies(&self, keep: impl Fn(&(u32, u64), &Dirty) -> bool) -> Vec<DataCopy> {
        self.st
            .borrow()
            .data
            .iter()
            .filter(|(k, d)| keep(k, d))
            .map(|(k, d)| (*k, d.gen, d.phys, d.bytes.clone(), d.critical))
            .collect()
    }

    /// Hold the writeback of the inodes `want` names (computed under the store's lock,
    /// again after every wait), once none of them is held by another writeback: a block
    /// never has two writebacks in flight, and a direct write of a buffered block never
    /// overtakes an older copy. Per file, so a critical fsync's f-transaction does not
    /// wait for a compound commit writing other files' data (FastResponse §3.4:
    /// fjournal eliminates T_D2). All or nothing, so two writebacks never deadlock.
    pub(super) async fn writeback_lock(
        &self,
        want: impl Fn(&State) -> BTreeSet<u32>,
    ) -> Writeback<'_> {
        let mut g = self.lock.lock().await;
        loop {
            let inodes = want(&self.st.borrow());
            if self.st.borrow().busy.is_disjoint(&inodes) {
                self.st.borrow_mut().busy.extend(inodes.iter().copied());
                return Writeback { s: self, inodes };
            }
            g = self.done.wait(g).await;
        }
    }

    /// Write the buffered blocks `keep` selects home (one writeback at a time; the
    /// copies are taken under the lock, so no direct write of the block can be
    /// overtaken by an older copy) and drop those not written again meanwhile. Returns
    /// how many went, and when the data was home (on the asynchronous path, when the
    /// journal blocks were too).
    ///
    /// `journal` blocks (a commit's descriptor and metadata, an f-transaction's header
    /// and blocks) go too: after the data on the synchronous path, beside it on the
    /// asynchronous one (AIOS, ATC '19 §3.3–3.4: journal I/O overlapped with data I/O —
    /// the FLUSH before the commit record orders both).
    ///
    /// The journal's two "I/O preparation" steps (AIOS Fig. 5: journal blocks, then the
    /// commit record the caller writes after the FLUSH) are charged here, where each
    /// path puts them. Synchronous (Fig. 5a): data I/O, wait, prepare the journal
    /// blocks, their I/O, wait, prepare the commit record. Asynchronous (Fig. 5b): data
    /// I/O out, prepare and send the journal blocks while it is in flight, prepare the
    /// commit record, then wait for all of it.
    pub(super) async fn write_data(
        &self,
        keep: impl Fn(&(u32, u64), &Dirty) -> bool,
        journal: impl FnOnce() -> JournalBatch,
    ) -> io::Result<(u64, Nanos)> {
        let wb = self
            .writeback_lock(|st| {
                st.data
                    .iter()
                    .filter(|(k, d)| keep(k, d))
                    .map(|(k, _)| k.0)
                    .collect()
            })
            .await;
        let copies = self.data_copies(|k, d| wb.inodes.contains(&k.0) && keep(k, d));
        // Blocks a tentative commit vouches for are sealed before they change (`seal.rs`);
        // from here to the submission nothing waits.
        self.seal_before(copies.iter().map(|c| c.2)).await?;
        self.st
            .borrow_mut()
            .seals
            .issued(copies.iter().map(|c| (c.2, &c.3[..])));
        // Each block goes home with the class of the tasks that wrote it (critical if a
        // critical task did), as FastResponse's address_space attribute; a task critical
        // by inheritance only (RCP: it works for a critical waiter) sends all of it
        // critical. The journal blocks go with the task's class.
        let inherited =
            current_class() == IoClass::Critical && current_base_class() != IoClass::Critical;
        // Per inode, so each file is released as soon as its own blocks are home (as
        // Linux's fsync waits on its file's pages under writeback, not on the rest of a
        // commit's ordered data): a critical fsync of a file a compound commit is
        // writing waits for that file's blocks only, not for the other files' data the
        // commit writes with them (T_D2). Blocks merge into requests within a file.
        let inodes: Vec<u32> = wb.inodes.iter().copied().collect();
        let blocks = |ino: u32, critical: bool| -> Vec<(u64, Vec<u8>)> {
            copies
                .iter()
                .filter(|c| c.0 .0 == ino && (c.4 || inherited) == critical)
                .map(|c| (c.2, c.3.clone()))
                .collect()
        };
        let submit_data = || -> Vec<(u32, bool, Vec<IoHandle>)> {
            // Critical blocks first (every file's), then the others.
            let mut out = Vec::new();
            for critical in [true, false] {
                let class = if critical {
                    IoClass::Critical
                } else {
                    IoClass::Normal
                };
                for &ino in &inodes {
                    let hs = self
                        .dev
                        .submit_all(&blocks(ino, critical), IoOptions::new().class(class));
                    if !hs.is_empty() {
                        out.push((ino, critical, hs));
                    }
                }
            }
            out
        };
        let jopts = IoOptions::new().activity(Activity::WAL);
        // The journal blocks are made once the data is out (their data tags name what
        // went), prepared (charged), then sent. No journal blocks (a writeback, a
        // data-only fdatasync): nothing to prepare. A commit record in the batch
        // (single-flush) is prepared before it goes; one written after the FLUSH, after
        // the journal blocks are home (AIOS Fig. 5's two preparation steps).
        let prepare = |j: &JournalBatch| {
            let nj = j.blocks.len() as u64 - u64::from(j.commit_inside);
            let later = u64::from(nj > 0 && !j.commit_inside);
            (nj, u64::from(j.commit_inside), later)
        };
        let mut wb = wb;
        let data = if self.fsync_path.get() == FsyncPath::Async {
            let hs = submit_data();
            let j = journal();
            let (nj, now_commit, later) = prepare(&j);
            charge(|c| c.journal_block_ns * nj + c.commit_block_ns * now_commit).await;
            let js = self.dev.submit_all(&j.blocks, jopts);
            charge(|c| c.commit_block_ns * later).await;
            self.home_by_file(&mut wb, hs, &copies).await?;
            Dev::wait_all(js).await?;
            now()
        } else {
            self.home_by_file(&mut wb, submit_data(), &copies).await?;
            let data = now();
            let j = journal();
            let (nj, now_commit, later) = prepare(&j);
            charge(|c| c.journal_block_ns * nj + c.commit_block_ns * now_commit).await;
            Dev::wait_all(self.dev.submit_all(&j.blocks, jopts)).await?;
            charge(|c| c.commit_block_ns * later).await;
            data
        };
        if !copies.is_empty() {
            // The writeback bandwidth the writers' pauses are set by (Linux's
            // `bdi_update_write_bandwidth` counts all writeback, whoever issues it).
            self.note_written(copies.len() as u64);
        }
        Ok((copies.len() as u64, data))
    }

    /// Wait for each file's data requests (`hs`: file, critical, requests), files with
    /// critical blocks first; as a file's last request completes, drop its blocks
    /// that were not written again meanwhile and release the file from `wb`.
    async fn home_by_file(
        &self,
        wb: &mut Writeback<'_>,
        hs: Vec<(u32, bool, Vec<IoHandle>)>,
        copies: &[DataCopy],
    ) -> io::Result<()> {
        let mut by_file: Vec<(u32, Vec<IoHandle>)> = Vec::new();
        // Files in the order their first group was submitted: critical groups first.
        for (ino, _, h) in hs {
            match by_file.iter_mut().find(|(i, _)| *i == ino) {
                Some((_, v)) => v.extend(h),
                None => by_file.push((ino, h)),
            }
        }
        for (ino, h) in by_file {
            let r = Dev::wait_all(h).await;
            // A failed writeback no longer changes its blocks either (and a record
            // waiting for the blocks' writes must not wait for ever).
            let done = copies.iter().filter(|c| r.is_err() || c.0 .0 == ino);
            self.st
                .borrow_mut()
                .seals
                .completed(done.map(|c| (c.2, &c.3[..])));
            r?;
            let mut st = self.st.borrow_mut();
            for (key, gen, ..) in copies.iter().filter(|c| c.0 .0 == ino) {
                if st.data.get(key).is_some_and(|d| d.gen == *gen) {
                    let d = st.data.remove(key).expect("present");
                    st.data_bytes -= d.bytes.len() as u64;
                    // Home now: the clean copy a later read finds (not of a freed
                    // block's, under inode 0: `drop_buffered`).
                    if key.0 != 0 {
                        st.cache.written(key.0, key.1, d.bytes);
                    }
                }
            }
            drop(st);
            wb.release(ino);
        }
        Ok(())
    }
}

/// A commit's journal writes, made by [`Store::write_data`] once the data is out.
#[derive(Debug, Default)]
pub(super) struct JournalBatch {
    /// (block, contents), consecutive blocks merged into requests.
    pub(super) blocks: Vec<(u64, Vec<u8>)>,
    /// Whether the commit record is among them (single-flush).
    pub(super) commit_inside: bool,
}

/// The inodes a writeback holds ([`Store::writeback_lock`]); released when dropped.
pub(super) struct Writeback<'a> {
    s: &'a Store,
    inodes: BTreeSet<u32>,
}

impl Writeback<'_> {
    /// Release file `ino` before the others (its writeback is done).
    fn release(&mut self, ino: u32) {
        if self.inodes.remove(&ino) {
            self.s.st.borrow_mut().busy.remove(&ino);
            self.s.done.notify_all();
        }
    }
}

impl Drop for Writeback<'_> {
    fn drop(&mut self) {
        let mut st = self.s.st.borrow_mut();
        for i in &self.inodes {
            st.busy.remove(i);
        }
        drop(st);
        self.s.done.notify_all();
    }
}
