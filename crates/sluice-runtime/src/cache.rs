//! The page cache in the runtime: buffered reads and writes of [`File`]s
//! ([`File::read_buffered`], [`File::write_buffered`]), writeback by a non-critical
//! flusher task, RCP's class-aware dirty throttling, and an fsync that writes its
//! file's dirty pages and waits for their writeback. The cache's state machine is
//! `sluice_cache::PageCache`; this module issues its I/O and its waits with the
//! runtime's own primitives, so RCP's inheritance reaches into the cache:
//!
//! - a task that waits on a page **under writeback** (to change it, or in fsync)
//!   awaits that write's [`IoWait`]: a critical waiter promotes it (RCP §5: the
//!   `PG_writeback` wait);
//! - a writer is **paced** by Linux's dirty-ratelimit control against its class's limit
//!   ([`sluice_cache::throttle`], the rule the job runner's buffered front follows too):
//!   each task keeps its `nr_dirtied`; past freerun it pauses `pages dirtied /
//!   task_ratelimit` every `nr_dirtied_pause` pages, and at its limit it kicks the
//!   flusher and pauses `max_pause` (an eighth of the time writeback needs for what is
//!   dirty, 4 ms to 200 ms), then asks again — it sleeps, it is not woken when room is
//!   made;
//! - a paused task that a critical task's chain of waits reaches (it holds a lock a
//!   critical task wants, say) is boosted *and woken at once*, and asks again under the
//!   critical limit (RCP §4.4: the cause of its block resolved; with
//!   `Inherit::transitive` off it is boosted but sleeps its pause out).
//!
//! - a writeback that **fails** leaves its page dirty (fsync reports the error and a
//!   later fsync tries again: nothing a caller wrote is dropped, unlike Linux, which
//!   cleans the page and keeps only the error). While every writeback fails (a full or
//!   failing backing device) the flusher retries after a growing pause rather than at
//!   once, and a writer that needs room the failing writeback cannot make — at its
//!   dirty limit, or with no clean frame left — gets the error instead of waiting for
//!   ever: [`sluice_cache::failing`]'s rule, shared with the job runner, where one
//!   failure is a round of the flusher's whose every writeback failed.
//!
//! Both worlds run this code: in simulation on the simulated device, on real files
//! through the real backend's ring (files opened `O_DIRECT`: the host's page cache is
//! not involved).
//!
//! ## On several cores
//! A real stack's cores are threads, and their tasks share the one cache: its state
//! machine is behind a `std` mutex (held only for a step of the state machine — a
//! lookup, a copy of a page, the start of a writeback's submission — never across an
//! `await`), its counters are atomics, and its waits are the runtime's own `Mutex`,
//! `Condvar` and I/O waiters, which work across cores (their state is the runtime's
//! shared table). So the dirty limits are global, as RCP's are (one count of dirty and
//! writeback pages against each class's ratio), and an fsync on core 0 promotes a
//! writeback the flusher issued on core 1. Every check of a page's state and the change
//! it allows are made under one hold of the mutex (a writer checks and writes a page in
//! one step; a reader copies the frames a read indexed before letting go), since another
//! core may evict or start writing back a page between two holds. One mutex rather than
//! shards by file: the runtime already serializes its scheduling under one lock, a
//! step here is a few hundred nanoseconds, and one state machine keeps the simulator —
//! one thread, where the mutex is never contended — running exactly the code and order
//! it ran before (its output stays byte-identical).

use std::io;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::sync::{Arc, Mutex as StdMutex, MutexGuard};

use sluice_cache::throttle::{Throttle, Verdict};
use sluice_cache::{CacheConfig, Failing, PageCache, PageKey, PageRange, WriteCheck, PAGE};
use sluice_core::{IoClass, Op};

use crate::buffer::DmaBuffer;
use crate::ctx::{Activity, IoOptions, TaskCtx};
use crate::exec::with;
use crate::io::{File, IoHandle, IoWait};
use crate::sync::{Condvar, Mutex};

mod read;

/// Most writebacks the flusher keeps in flight.
const FLUSH_DEPTH: usize = 16;

/// The stack's page cache (one per stack, shared by its tasks).
pub(crate) struct Cache {
    pc: StdMutex<PageCache<DmaBuffer>>,
    lock: Mutex<()>,
    /// Signalled when writeback made room (dirty pages fell, frames became clean).
    room: Condvar,
    /// Wakes the flusher.
    work: Condvar,
    /// Tasks waiting in `room`.
    waiting: AtomicU32,
    /// Writers pausing at their dirty limit (not those only paced below it).
    pausing: AtomicU32,
    /// Writeback that keeps failing: a round in which every writeback failed is one
    /// failure, a round with any success ends them.
    failing: StdMutex<Failing>,
    /// The dirty throttle (Linux's dirty-ratelimit control; each task's own state is
    /// in its record, `crate::task::dirtier`).
    throttle: StdMutex<Throttle>,
}

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cache")
            .field("stats", &self.pc().stats())
            .finish()
    }
}

/// A waiter handle as a cache token (slot, generation).
fn token(w: IoWait) -> u64 {
    let (slot, gen) = w.parts();
    (slot as u64) << 32 | gen as u64
}

fn wait_of(token: u64) -> IoWait {
    IoWait::from_parts((token >> 32) as u32, token as u32)
}

fn current() -> Arc<Cache> {
    with(|inner, _| inner.io.cache.clone()).expect("checked by the caller")
}

fn no_cache() -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        "buffered I/O needs a page cache: build the stack with StackBuilder::cache(CacheConfig)",
    )
}

fn page_key(file: &File, offset: u64) -> (PageKey, usize) {
    let key = PageKey {
        file: file.id(),
        index: offset / PAGE,
    };
    (key, (offset % PAGE) as usize)
}

impl Cache {
    pub(crate) fn new(cfg: CacheConfig) -> Cache {
        Cache {
            pc: StdMutex::new(PageCache::new(cfg)),
            lock: Mutex::new_stack_level(()).named("page cache"),
            room: Condvar::new_stack_level().named("page cache room"),
            work: Condvar::new_stack_level().named("flusher work"),
            waiting: AtomicU32::new(0),
            pausing: AtomicU32::new(0),
            failing: StdMutex::new(Failing::default()),
            throttle: StdMutex::new(Throttle::default()),
        }
    }

    /// The state machine, for one step (never held across an `await`).
    pub(crate) fn pc(&self) -> MutexGuard<'_, PageCache<DmaBuffer>> {
        self.pc.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The state machine if no other core is in it now (for the runtime's own lock
    /// holder, which must not wait for a task that may wait for the runtime's lock).
    pub(crate) fn try_pc(&self) -> Option<MutexGuard<'_, PageCache<DmaBuffer>>> {
        match self.pc.try_lock() {
            Ok(g) => Some(g),
            Err(std::sync::TryLockError::Poisoned(e)) => Some(e.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        }
    }

    fn throttle(&self) -> MutexGuard<'_, Throttle> {
        self.throttle.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Wait until the calling task may dirty one more page (Linux's
    /// `balance_dirty_pages`): when it has dirtied its `nr_dirtied_pause` pages since it
    /// last called, or its class's limit is reached, ask the throttle; pause as it says
    /// (kicking the flusher), then look again. The class is read again after every
    /// pause: a task that inherited the critical class meanwhile is judged by the
    /// critical limit, and if the inheritance reached it through a chain its pause was
    /// cut short (RCP §4.4).
    async fn admit_dirty(&self) -> io::Result<()> {
        let mut counted = false;
        loop {
            let class = crate::current_class();
            let now = crate::now();
            let mut w = crate::task::dirtier();
            let verdict = {
                let mut pc = self.pc();
                let at_limit = !pc.may_dirty(class);
                if !at_limit && !w.must_balance() {
                    return Ok(());
                }
                if at_limit {
                    self.check_failing()?;
                }
                let dirty = pc.dirty_pages() + pc.writeback_pages();
                let cfg = *pc.config();
                let v = self.throttle().balance(&mut w, &cfg, class, dirty, now);
                if !counted && v != Verdict::Go {
                    pc.note_throttled();
                    counted = true;
                }
                v
            };
            crate::task::set_dirtier(w);
            let Verdict::Pause {
                ns: pause,
                at_limit,
            } = verdict
            else {
                return Ok(());
            };
            // Only a pause under the non-critical limit can be resolved by inheritance
            // (a critical task's limit would not change: it sleeps its pause out).
            let cfg = *self.pc().config();
            let resolvable = cfg.class_limits && class != IoClass::Critical;
            if at_limit {
                self.pausing.fetch_add(1, Relaxed);
            }
            self.work.notify_one();
            if resolvable {
                crate::task::throttle_pause(pause).await;
            } else {
                crate::sleep(pause).await;
            }
            if at_limit {
                self.pausing.fetch_sub(1, Relaxed);
            }
        }
    }

    /// The state of failing writeback (held for a step only).
    fn failing(&self) -> MutexGuard<'_, Failing> {
        self.failing.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// No room can be made: writeback failed in every request of the last
    /// `sluice_cache::failing::FAILED` rounds or more. The error a writer needing room
    /// gets then.
    fn check_failing(&self) -> io::Result<()> {
        let f = *self.failing();
        if !f.hopeless() {
            return Ok(());
        }
        let n = f.run();
        Err(io::Error::other(format!(
            "no room in the page cache: writeback failed in {n} rounds in a row \
             (the dirty pages stay; fsync reports and retries)"
        )))
    }

    /// Wait until writeback has made room (or changed something worth a new look).
    async fn wait_room(&self) -> io::Result<()> {
        self.check_failing()?;
        let g = self.lock.lock().await;
        self.waiting.fetch_add(1, Relaxed);
        self.work.notify_one();
        let g = self.room.wait(g).await;
        self.waiting.fetch_sub(1, Relaxed);
        drop(g);
        Ok(())
    }

    /// Wait for the writeback of `key` tagged `t` (RCP's `PG_writeback` wait: a
    /// critical waiter promotes the write) and end it if its issuer has not yet — the
    /// issuer may be waiting for an earlier, unpromoted write of its batch.
    async fn wait_writeback(&self, key: PageKey, t: u64) {
        let w = wait_of(t);
        w.await;
        if let Some(ok) = w.outcome() {
            self.pc().end_writeback(key, t, ok);
        }
    }

    /// Tell waiters that room was made.
    async fn made_room(&self) {
        let _g = self.lock.lock().await;
        self.room.notify_all();
    }

    /// Above the background threshold, or while a writer waits for a frame or pauses
    /// at its limit. Linux's background writeback stops at the background threshold
    /// even while writers pause; here a pausing writer keeps the flusher going to zero,
    /// because in a small cache the threshold can reach the non-critical limit itself
    /// (both are at least a page), and a writer paused there would wait for ever (tried
    /// 2026-11-25: a test's run hit the day-long time cap).
    fn flusher_has_work(&self) -> bool {
        let pc = self.pc();
        let dirty = pc.dirty_pages();
        dirty > pc.config().background_pages()
            || (dirty > 0 && self.waiting.load(Relaxed) + self.pausing.load(Relaxed) > 0)
    }

    /// Write back up to `FLUSH_DEPTH` dirty pages (of `range` only, if given) with the
    /// calling task's class, then wait for them. Returns the first error.
    async fn write_back(&self, range: Option<PageRange>) -> io::Result<usize> {
        let mut flying: Vec<(PageKey, u64, IoHandle)> = Vec::with_capacity(FLUSH_DEPTH);
        while flying.len() < FLUSH_DEPTH {
            let mut pc = self.pc();
            let Some((key, f)) = pc.start_writeback(range) else {
                break;
            };
            let mut buf = DmaBuffer::new(PAGE as usize);
            pc.read(f, 0, &mut buf);
            let h = File::from_id(key.file).submit(
                Op::Write,
                buf,
                key.index * PAGE,
                IoOptions {
                    writeback: true,
                    ..IoOptions::new().activity(Activity::WRITEBACK)
                },
            );
            let t = token(h.waiter());
            pc.set_token(f, t);
            flying.push((key, t, h));
        }
        let n = flying.len();
        let mut first_err = None;
        let mut failed = 0;
        for (key, t, h) in flying {
            let (r, _) = h.await;
            self.throttle().written(1, crate::now());
            // A task that waited on it may have ended it already.
            self.pc().end_writeback(key, t, r.is_ok());
            if let Err(e) = r {
                failed += 1;
                first_err.get_or_insert(e);
            }
        }
        if n > 0 {
            self.failing().ended(failed < n, crate::now());
            self.made_room().await;
        }
        first_err.map_or(Ok(n), Err)
    }
}

/// The flusher: a non-critical task that writes dirty pages back when they pass the
/// background threshold or a writer waits for room.
pub(crate) async fn flusher(cache: Arc<Cache>) {
    cache.room.register_helper();
    loop {
        {
            let mut g = cache.lock.lock().await;
            while !cache.flusher_has_work() {
                g = cache.work.wait(g).await;
            }
        }
        // A failed writeback leaves its page dirty; it is tried again next round — at
        // once if some succeeded, after the failing rule's pause while all fail.
        let pause = {
            let now = crate::now();
            let mut f = cache.failing();
            match f.retry_at() {
                Some(t) if !f.may_issue(now) => Some(t - now),
                _ => None,
            }
        };
        match pause {
            Some(p) => crate::sleep(p).await,
            None => {
                // Its error is the failing rule's to act on (an fsync reports its own).
                let _ = cache.write_back(None).await;
            }
        }
    }
}

/// The flusher's context: flow `writeback`, normal class.
pub(crate) fn flusher_ctx() -> TaskCtx {
    TaskCtx::new("writeback").activity(Activity::WRITEBACK)
}

impl File {
    /// Write `data` at `offset` through the page cache; returns the bytes written. The
    /// write completes in the cache (write it back with [`File::fsync`], or let the
    /// flusher do it); a writer that would pass its class's dirty limit waits for
    /// writeback first (RCP's class-aware dirty ratios).
    pub async fn write_buffered(&self, offset: u64, data: &[u8]) -> io::Result<usize> {
        let Some(cache) = with(|inner, _| inner.io.cache.clone()) else {
            return Err(no_cache());
        };
        self.check_writable()?;
        let mut done = 0;
        while done < data.len() {
            let (key, off) = page_key(self, offset + done as u64);
            let len = (PAGE as usize - off).min(data.len() - done);
            self.write_page(&cache, key, off, &data[done..done + len])
                .await?;
            done += len;
        }
        self.grow(offset + data.len() as u64);
        Ok(data.len())
    }

    async fn write_page(
        &self,
        cache: &Cache,
        key: PageKey,
        off: usize,
        data: &[u8],
    ) -> io::Result<()> {
        // Admitted by the dirty limit (then written without a further wait, unless the
        // page changed state meanwhile).
        let mut admitted = false;
        /// What the state machine said, done after letting go of it.
        enum Step {
            Wait(u64),
            Read,
            Admit,
            Room,
            /// `new`: the page became dirty.
            Written {
                wake: bool,
                new: bool,
            },
        }
        loop {
            // The check and the write it allows under one hold of the state machine:
            // on a real stack another core's task (the flusher) may start the page's
            // writeback between two holds.
            let step = {
                let mut pc = cache.pc();
                let check = pc.check_write(key, off, data.len());
                match check {
                    WriteCheck::WaitWriteback(t) => Step::Wait(t),
                    // A partial write of a page not cached: read it in first.
                    WriteCheck::NeedRead if key.index * PAGE < self.len() => Step::Read,
                    // Ready, or a partial page past the end of the file: a new zeroed
                    // page.
                    WriteCheck::Ready { .. } | WriteCheck::NeedRead => {
                        let new_dirty = !matches!(check, WriteCheck::Ready { new_dirty: false });
                        if new_dirty && !admitted {
                            Step::Admit
                        } else if pc.contains(key) {
                            pc.write(key, off, data, None);
                            Step::Written {
                                wake: pc.dirty_pages() > pc.config().background_pages(),
                                new: new_dirty,
                            }
                        } else if pc.reserve() {
                            pc.write(key, off, data, Some(DmaBuffer::unpooled(PAGE as usize)));
                            Step::Written {
                                wake: pc.dirty_pages() > pc.config().background_pages(),
                                new: new_dirty,
                            }
                        } else {
                            Step::Room
                        }
                    }
                }
            };
            match step {
                Step::Wait(t) => cache.wait_writeback(key, t).await,
                Step::Read => {
                    self.read_run(cache, key, 1, |_, _| {}).await?;
                }
                Step::Admit => {
                    cache.admit_dirty().await?;
                    admitted = true;
                }
                Step::Room => cache.wait_room().await?,
                Step::Written { wake, new } => {
                    if new {
                        let mut w = crate::task::dirtier();
                        cache.throttle().dirtied(&mut w, 1);
                        crate::task::set_dirtier(w);
                    }
                    if wake {
                        cache.work.notify_one();
                    }
                    return Ok(());
                }
            }
        }
    }

    /// Write back the dirty pages of `range` with the calling task's class and wait
    /// for every writeback of its pages in flight (a critical caller promotes them):
    /// what `fsync` does for the whole file, and what a direct read or write does for
    /// its range first (as Linux's `filemap_write_and_wait_range` before direct I/O).
    pub(crate) async fn sync_range(&self, range: PageRange) -> io::Result<()> {
        let cache = current();
        loop {
            let dirty = cache.pc().dirty_in(range);
            if dirty {
                cache.write_back(Some(range)).await?;
                continue;
            }
            let flying = cache.pc().writebacks_in(range);
            if flying.is_empty() {
                return Ok(());
            }
            for (key, t) in flying {
                cache.wait_writeback(key, t).await;
            }
        }
    }
}

impl File {
    /// Before a direct read or write of bytes `offset..offset + len`: the range's dirty
    /// pages go to the device and its writebacks in flight are awaited (promoted for a
    /// critical caller), so a direct read sees buffered writes and a direct write is not
    /// overtaken by an older writeback.
    pub(crate) async fn direct_coherence(&self, offset: u64, len: usize) -> io::Result<()> {
        if !crate::exec::current_has_cache() || len == 0 {
            return Ok(());
        }
        self.sync_range(PageRange::bytes(self.id(), offset, len as u64))
            .await
    }

    /// After a direct write: clean cached pages of its range are stale; drop them.
    pub(crate) fn direct_written(&self, offset: u64, len: usize) {
        if !crate::exec::current_has_cache() {
            return;
        }
        if let Some(c) = with(|inner, _| inner.io.cache.clone()) {
            c.pc()
                .forget_clean(PageRange::bytes(self.id(), offset, len as u64));
        }
    }
}

impl File {
    /// Write back the dirty pages of bytes `offset..offset + len` (`None`: the whole
    /// file) with the calling task's class and wait for every writeback of those pages
    /// in flight — a critical caller promotes them (RCP's inheritance through
    /// outstanding I/O). No device FLUSH: [`File::fsync`] adds it. Nothing to do
    /// without a page cache. For a layer above that keeps a file's metadata itself (its
    /// length, say) and must order it after the data.
    pub async fn write_back_cached(&self, range: Option<(u64, u64)>) -> io::Result<()> {
        if !crate::exec::current_has_cache() {
            return Ok(());
        }
        let r = match range {
            None => PageRange::file(self.id()),
            Some((_, 0)) => return Ok(()),
            Some((o, l)) => PageRange::bytes(self.id(), o, l),
        };
        self.sync_range(r).await
    }

    /// Drop the clean cached pages of bytes `offset..offset + len` (`None`: the whole
    /// file): the file's bytes changed under the cache (`fallocate` punching a hole,
    /// say). Dirty pages and pages under writeback stay: write them back first
    /// ([`File::write_back_cached`]).
    pub fn forget_cached(&self, range: Option<(u64, u64)>) {
        let r = match range {
            None => PageRange::file(self.id()),
            Some((_, 0)) => return,
            Some((o, l)) => PageRange::bytes(self.id(), o, l),
        };
        if let Some(c) = with(|inner, _| inner.io.cache.clone()) {
            c.pc().forget_clean(r);
        }
    }
}

/// Write back every dirty page of the stack's page cache (with the calling task's
/// class) and wait until none is dirty or under writeback: what an unmount does before
/// the stack stops. Returns the first writeback error (its page stays dirty).
pub async fn write_back_all() -> io::Result<()> {
    let Some(cache) = with(|inner, _| inner.io.cache.clone()) else {
        return Ok(());
    };
    loop {
        let dirty = cache.pc().dirty_pages() > 0;
        if dirty {
            cache.write_back(None).await?;
            continue;
        }
        // Writebacks of other tasks (the flusher's) still in flight: wait for them.
        let flying = cache.pc().writebacks();
        if flying.is_empty() {
            return Ok(());
        }
        for (key, t) in flying {
            cache.wait_writeback(key, t).await;
        }
    }
}

/// The page cache's counters so far, if the stack has one (for a live view).
pub fn cache_stats() -> Option<sluice_cache::CacheStats> {
    with(|inner, _| inner.io.cache.clone()).map(|c| c.pc().stats())
}
