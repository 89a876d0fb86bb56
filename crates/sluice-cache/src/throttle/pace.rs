//! The per-task pause of `balance_dirty_pages` (see the module docs of [`super`]).

use sluice_core::{IoClass, Nanos};

use super::control::{pos_ratio, RateLimit, Thresholds};
use super::{WritebackRate, DIRTY_POLL_THRESH, MS};
use crate::CacheConfig;

/// What a writer keeps between its calls (Linux's `task_struct` fields of the same
/// names): one per task (the runtime's task, a fio job's thread).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dirtier {
    /// Pages dirtied since its last pause (or its last reset).
    pub nr_dirtied: u64,
    /// Pages it may dirty before it calls [`Throttle::balance`] again.
    pub nr_dirtied_pause: u64,
    /// When its last pause ended (`dirty_paused_when`); the time it ran since is
    /// credited against its next pause. None: never paused.
    pub paused_when: Option<Nanos>,
}

impl Default for Dirtier {
    fn default() -> Self {
        Dirtier {
            nr_dirtied: 0,
            nr_dirtied_pause: DIRTY_POLL_THRESH,
            paused_when: None,
        }
    }
}

impl Dirtier {
    /// Whether it must call [`Throttle::balance`] before it dirties more
    /// (`balance_dirty_pages_ratelimited`: `nr_dirtied ≥ nr_dirtied_pause`).
    pub fn must_balance(&self) -> bool {
        self.nr_dirtied >= self.nr_dirtied_pause
    }
}

/// What [`Throttle::balance`] says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Dirty on.
    Go,
    /// Sleep `ns`, then look again.
    Pause {
        /// The pause.
        ns: Nanos,
        /// At or over the limit (`pos_ratio` 0, the max pause): the writer waits for
        /// writeback to make room, and the flusher should keep going for it.
        at_limit: bool,
    },
}

/// One cache's dirty throttle: its device's writeback bandwidth, the pages dirtied, and
/// the device's rate control — one for every class, as Linux 3.13 keeps one
/// `dirty_ratelimit` per `backing_dev_info` whatever the thresholds of the task that
/// updates it (see the module docs of [`super`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Throttle {
    rate: WritebackRate,
    /// Pages dirtied since the start (Linux's `BDI_DIRTIED`).
    dirtied: u64,
    ratelimit: RateLimit,
}

impl Throttle {
    /// `pages` writebacks completed at `now` (the bandwidth estimate).
    pub fn written(&mut self, pages: u64, now: Nanos) {
        self.rate.written(pages, now);
    }

    /// The bandwidth estimate.
    pub fn rate(&self) -> &WritebackRate {
        &self.rate
    }

    /// The device's rate control (`dirty_ratelimit`), the same for every class.
    pub fn ratelimit(&self) -> &RateLimit {
        &self.ratelimit
    }

    /// Writer `task` dirtied `pages` pages.
    pub fn dirtied(&mut self, task: &mut Dirtier, pages: u64) {
        task.nr_dirtied += pages;
        self.dirtied += pages;
    }

    /// Writer `task` of `class` calls in at `now` with `dirty` dirty + writeback pages
    /// in the cache (`balance_dirty_pages`, one round): whether it pauses, and for how
    /// long. Call it when [`Dirtier::must_balance`], and before dirtying a page while
    /// the class's limit is reached (`dirty ≥ limit`: always a pause then).
    pub fn balance(
        &mut self,
        task: &mut Dirtier,
        cfg: &CacheConfig,
        class: IoClass,
        dirty: usize,
        now: Nanos,
    ) -> Verdict {
        let t = Thresholds::of(cfg, class);
        let dirty = dirty as u64;
        if dirty <= t.freerun && dirty < t.limit {
            // Below freerun: no pause; call in again after dirty_poll_interval pages
            // (2^⌊log2(thresh − dirty) / 2⌋, about the square root of the distance).
            task.paused_when = Some(now);
            task.nr_dirtied = 0;
            task.nr_dirtied_pause = poll_interval(dirty, t.limit);
            return Verdict::Go;
        }
        let bw = self.rate.avg_pages_per_sec();
        // The update uses the caller's thresholds (Linux's `bdi_update_bandwidth` gets
        // the `dirty_thresh` and `background_thresh` of the task in
        // `balance_dirty_pages`).
        self.ratelimit.update(&t, dirty, self.dirtied, bw, now);
        let rl = self.ratelimit.dirty_ratelimit;
        let task_rl = rl as f64 * pos_ratio(&t, dirty, bw);
        let max_pause = self.rate.max_pause_ns(dirty as usize);
        let (min_pause, pages) = min_pause(bw, rl, task_rl, max_pause);
        if task_rl < 1.0 {
            // pos_ratio 0: at or over the limit, the max pause; look again after it.
            task.paused_when = Some(now + max_pause);
            task.nr_dirtied = 0;
            task.nr_dirtied_pause = pages;
            return Verdict::Pause {
                ns: max_pause,
                at_limit: true,
            };
        }
        // period = nr_dirtied / task_ratelimit, less the time run since the last pause.
        let period = (task.nr_dirtied as f64 / task_rl * 1e9) as i64;
        let ran = task
            .paused_when
            .map_or(i64::MAX / 4, |w| now as i64 - w as i64);
        let wait = period - ran;
        if wait < min_pause as i64 {
            // Too short to sleep: carry it. After a long absence (more than a second
            // of credit) start afresh; with a period, move the mark by it so the debt
            // or credit stays; else let the task dirty more before it calls again.
            if wait < -1000 * MS as i64 {
                task.paused_when = Some(now);
                task.nr_dirtied = 0;
            } else if period > 0 {
                task.paused_when = Some(task.paused_when.unwrap_or(now) + period as Nanos);
                task.nr_dirtied = 0;
            } else if task.nr_dirtied_pause <= task.nr_dirtied {
                task.nr_dirtied_pause += task.nr_dirtied;
            }
            return Verdict::Go;
        }
        let mut at = now;
        let mut ns = wait as Nanos;
        if ns > max_pause {
            // Cut at max_pause; the excess (up to another max_pause) moves the mark on,
            // so it is paid at the next pause.
            at += (ns - max_pause).min(max_pause);
            ns = max_pause;
        }
        task.paused_when = Some(at + ns);
        task.nr_dirtied = 0;
        task.nr_dirtied_pause = pages;
        Verdict::Pause {
            ns,
            at_limit: false,
        }
    }
}

/// `dirty_poll_interval`: pages a task below freerun dirties before it calls again,
/// `2^⌊log2(limit − dirty) / 2⌋` (1 at or over the limit).
fn poll_interval(dirty: u64, limit: u64) -> u64 {
    if limit > dirty {
        1 << ((limit - dirty).ilog2() / 2)
    } else {
        1
    }
}

/// Linux's `wb_min_pause`: the shortest pause worth sleeping and the pages the task may
/// dirty before it calls again (`nr_dirtied_pause`), from the smoothed bandwidth
/// `bw`, the device's `dirty_ratelimit` `rl`, the task's rate and `max_pause`.
///
/// The target pause is 10 ms for one writer, plus ~10 ms per doubling of the writers
/// (`log2(bw) − log2(rl)`: with N writers `rl ≈ bw / N`), at most `max_pause / 2`; the
/// pages are what `rl` dirties in it. If that is under `DIRTY_POLL_THRESH` pages, the
/// target grows to `max_pause` (at most `DIRTY_POLL_THRESH` pages' worth): calls too
/// often cost more than they pace. If the task's own rate would make the pause for
/// those pages longer than `max_pause`, the pages shrink to what it dirties in
/// `max_pause`. The minimum pause is half the target (plus a jiffy) when the pages are
/// at least `DIRTY_POLL_THRESH`, else the target.
fn min_pause(bw: f64, rl: u64, task_rl: f64, max_pause: Nanos) -> (Nanos, u64) {
    let hi = (bw.max(1.0) as u64).ilog2() as i64;
    let lo = rl.max(1).ilog2() as i64;
    let mut t = 10 * MS;
    if hi > lo {
        t += (hi - lo) as Nanos * 10_000 * MS / 1024;
    }
    t = t.min(super::JIFFY_NS + max_pause / 2);
    let mut pages = (rl as f64 * t as f64 / 1e9) as u64;
    if pages < DIRTY_POLL_THRESH {
        t = max_pause;
        pages = (rl as f64 * t as f64 / 1e9) as u64;
        if pages > DIRTY_POLL_THRESH {
            pages = DIRTY_POLL_THRESH;
            t = (DIRTY_POLL_THRESH as f64 / rl.max(1) as f64 * 1e9) as Nanos;
        }
    }
    let est = pages as f64 / (task_rl + 1.0) * 1e9;
    if est > max_pause as f64 {
        t = max_pause;
        pages = (task_rl * t as f64 / 1e9) as u64;
    }
    let min = if pages >= DIRTY_POLL_THRESH {
        super::JIFFY_NS + t / 2
    } else {
        t
    };
    (min, pages.max(1))
}
