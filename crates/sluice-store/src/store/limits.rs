//! The limits of buffered data: one limit for every writer (Linux's `dirty_bytes`), or
//! RCP's class-aware limits (FAST '17 §4.3), where a non-critical writer over its own
//! pauses as Linux's IO-less `balance_dirty_pages` makes it (since 3.2; RCP ran 3.13)
//! while the store's flusher writes the buffer home — a pause a critical task's chain
//! of waits ends (§4.4).

use std::cell::{Cell, RefCell};
use std::io;
use std::rc::Rc;

use sluice_cache::throttle::{WritebackRate, JIFFY_NS};
use sluice_runtime::{current_class, now, sleep, spawn, throttle_pause, Condvar, IoClass, TaskCtx};

use super::writeback::JournalBatch;
use super::Store;
use crate::layout::BLOCK;

/// The default limit of buffered data: past it a writer writes the buffer home first.
const DATA_LIMIT: u64 = 32 << 20;

/// The store's limits of buffered data and what they need: the writers paused at
/// them, the flusher that writes the buffer home for them, and the device's writeback
/// bandwidth their pauses are set by.
#[derive(Debug)]
pub(super) struct Limits {
    /// RCP's class-aware limits ([`Store::set_class_limits`]).
    class_aware: Cell<bool>,
    /// [`Store::set_buffer_limit`] (default [`DATA_LIMIT`]).
    buffer: Cell<u64>,
    /// [`Store::set_class_buffer_limit`] (default: a fraction of `buffer`).
    normal: Cell<Option<u64>>,
    /// Whether the flusher runs (started by the first writer to pause).
    flusher: Cell<bool>,
    /// Wakes the flusher.
    flush: Condvar,
    /// The flusher's last writeback failed: paused writers write the buffer themselves.
    flush_failed: Cell<bool>,
    /// Writers paused now.
    pausing: Cell<u32>,
    /// The writeback bandwidth of every writeback of buffered data.
    rate: RefCell<WritebackRate>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            class_aware: Cell::new(false),
            buffer: Cell::new(DATA_LIMIT),
            normal: Cell::new(None),
            flusher: Cell::new(false),
            flush: Condvar::new_stack_level().named("store buffer flush"),
            flush_failed: Cell::new(false),
            pausing: Cell::new(0),
            rate: RefCell::default(),
        }
    }
}

impl Store {
    /// RCP's class-aware limits of buffered data (FAST '17 §4.3; default off). Off,
    /// every writer may buffer up to 32 MiB and a writer past that writes all the
    /// buffered data home first, whoever wrote it (Linux's one dirty ratio: a critical
    /// writer can pay for a bulk writer's data). On, a non-critical writer is held to
    /// 1.6 MiB (the page cache's 1 % against its 20 %): over it, it pauses as Linux's
    /// `balance_dirty_pages` makes a writer pause (`sluice_cache::throttle`'s pause)
    /// while the store's flusher writes the buffer home, and looks again — a pause a
    /// critical task waiting on the writer ends (RCP §4.4, `throttle_pause`). So a
    /// critical writer — and a critical fsync's compound commit — finds little bulk
    /// data in the buffer. Off by default because the papers whose
    /// experiments run on the store (FastResponse, AIOS) have one dirty ratio; the
    /// runtime's page cache has it on by default (`CacheConfig::class_limits`).
    pub fn set_class_limits(&self, on: bool) {
        self.limits.class_aware.set(on);
    }

    /// Buffered data above which a writer writes it home first (default 32 MiB, the
    /// role of Linux's `dirty_bytes`); with class-aware limits, a critical writer's
    /// limit, and the base of a non-critical one's (1/20 of it). At least one block.
    pub fn set_buffer_limit(&self, bytes: u64) {
        self.limits.buffer.set(bytes.max(BLOCK as u64));
    }

    /// With class-aware limits, a non-critical writer's limit of buffered data, in
    /// place of the default fraction of the buffer limit (at least one block; at most
    /// the buffer limit, which still holds for everyone).
    pub fn set_class_buffer_limit(&self, bytes: u64) {
        self.limits.normal.set(Some(bytes.max(BLOCK as u64)));
    }

    /// The buffered data a writer of `class` may add to: the buffer limit for everyone,
    /// or with RCP's class-aware limits (FAST '17 §4.3, as the runtime's page cache
    /// applies them) that for a critical writer (the 20 % ratio's role) and for a
    /// non-critical one the same fraction of it as the page cache's non-critical ratio
    /// is of its critical one (1 % of 20 %: 1.6 MiB), so a bulk writer cannot fill the
    /// buffer a critical writer — and, in compound mode, a critical fsync's commit
    /// (T_D2) — then has to write home.
    fn data_limit(&self, class: IoClass) -> u64 {
        let limit = self.limits.buffer.get();
        if !self.limits.class_aware.get() || class == IoClass::Critical {
            return limit;
        }
        if let Some(normal) = self.limits.normal.get() {
            return normal.min(limit);
        }
        let c = sluice_runtime::CacheConfig::default();
        (limit as f64 * c.dirty_ratio_normal / c.dirty_ratio_critical) as u64
    }

    /// Before a buffered write: while the buffered data is over the calling task's
    /// limit, make room. With class-aware limits a non-critical writer pauses
    /// ([`Store::throttle`]); over the one limit, or a critical writer over its own,
    /// the writer writes the buffered data home first (early data is always safe in
    /// ordered mode).
    pub(super) async fn make_room(&self) -> io::Result<()> {
        let class = current_class();
        if self.st.borrow().data_bytes <= self.data_limit(class) {
            return Ok(());
        }
        if self.limits.class_aware.get() && class != IoClass::Critical {
            return self.throttle().await;
        }
        let (n, _) = self
            .write_data(|k, _| self.unpinned(k), JournalBatch::default)
            .await?;
        self.st.borrow_mut().stats.data_by_limit += n;
        Ok(())
    }

    /// Pause, as Linux's `balance_dirty_pages` makes a writer over its dirty limit
    /// pause, until the buffered data is under the calling task's limit: kick the
    /// flusher, sleep `sluice_cache::throttle`'s pause for the buffered blocks and the
    /// writeback bandwidth seen so far, look again. The class is read again after every
    /// pause; a non-critical task's pause is one a critical task's chain of waits ends
    /// (RCP §4.4: it is then judged by the critical limit). When the flusher's
    /// writeback fails, the writer writes the buffer home itself and gets the error.
    async fn throttle(&self) -> io::Result<()> {
        let l = &self.limits;
        let mut counted = false;
        loop {
            if l.flush_failed.take() {
                let (n, _) = self
                    .write_data(|k, _| self.unpinned(k), JournalBatch::default)
                    .await?;
                self.st.borrow_mut().stats.data_by_limit += n;
            }
            let class = current_class();
            let blocks = {
                let st = self.st.borrow();
                if st.data_bytes <= self.data_limit(class) {
                    return Ok(());
                }
                (st.data_bytes / BLOCK as u64) as usize
            };
            if !counted {
                self.st.borrow_mut().stats.throttled += 1;
                counted = true;
            }
            let pause = l.rate.borrow().max_pause_ns(blocks);
            self.start_flusher();
            l.pausing.set(l.pausing.get() + 1);
            l.flush.notify_one();
            if class == IoClass::Critical {
                sleep(pause).await;
            } else {
                throttle_pause(pause).await;
            }
            l.pausing.set(l.pausing.get() - 1);
        }
    }

    /// Start the flusher if it does not run yet: only a store whose writers pause has
    /// one (so a store without class limits runs the same tasks as before it existed).
    fn start_flusher(&self) {
        if self.limits.flusher.replace(true) {
            return;
        }
        if let Some(me) = self.me.upgrade() {
            // It runs until the stack ends, as the journal task does.
            let _flusher = spawn(
                TaskCtx::new("store-flush"),
                async move { me.flusher().await },
            );
        }
    }

    /// The store's flusher (Linux's background writeback of its buffer): while a
    /// writer pauses at its limit and data is buffered, it writes the buffered blocks
    /// home, each with its writers' class (early data is always safe in ordered mode),
    /// then sleeps until a writer pauses again.
    async fn flusher(self: Rc<Self>) {
        let l = &self.limits;
        loop {
            {
                let mut g = self.lock.lock().await;
                while l.pausing.get() == 0 || self.st.borrow().data_bytes == 0 {
                    g = l.flush.wait(g).await;
                }
            }
            match self
                .write_data(|k, _| self.unpinned(k), JournalBatch::default)
                .await
            {
                Ok((0, _)) => {
                    // All that is buffered is pinned (logged inline by f-transactions):
                    // the commit covering their records takes it home.
                    let pin = self.st.borrow().pin_txn(..);
                    match pin {
                        Some(t) => {
                            if self.wait_commit(t).await.is_err() {
                                l.flush_failed.set(true);
                                sleep(JIFFY_NS).await;
                            }
                        }
                        None => sleep(JIFFY_NS).await,
                    }
                }
                Ok((n, _)) => self.st.borrow_mut().stats.data_by_flusher += n,
                // A failed writeback leaves the blocks buffered: the paused writers
                // write them home themselves and get the error (not a pause for ever).
                Err(_) => {
                    l.flush_failed.set(true);
                    sleep(JIFFY_NS).await;
                }
            }
        }
    }

    /// `blocks` buffered blocks went home just now (any writeback: a commit's, an
    /// fsync's, the flusher's), for the pauses' bandwidth estimate.
    pub(super) fn note_written(&self, blocks: u64) {
        self.limits.rate.borrow_mut().written(blocks, now());
    }
}
