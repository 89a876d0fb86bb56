//! How long a writer pauses before it dirties more pages: Linux's IO-less dirty
//! throttling with its dirty-ratelimit control (`balance_dirty_pages`,
//! `mm/page-writeback.c`, since 3.1/3.2; RCP ran 3.13), the one rule both clients of
//! the page cache follow (the runtime's cache and the job runner's buffered front).
//! A pure state machine: the callers pass `now` and sleep the pauses it gives.
//!
//! ## Linux's rule
//! A task does not ask at every page. It dirties `nr_dirtied_pause` pages (at first 32
//! = 128 KiB), then calls in ([`Throttle::balance`]) with `nr_dirtied`, the pages it
//! dirtied since its last pause. With `dirty` = dirty + writeback pages, `thresh` the
//! dirty limit and `bg_thresh` the background threshold:
//!
//! * **freerun**: `dirty ≤ freerun = (bg_thresh + thresh) / 2`
//!   (`dirty_freerun_ceiling`): no pause; the task may dirty
//!   `dirty_poll_interval = 2^⌊log2(thresh − dirty) / 2⌋` pages before it calls again.
//! * above it every task is paced at one rate, `task_ratelimit = dirty_ratelimit ·
//!   pos_ratio`, pausing `period = nr_dirtied / task_ratelimit`, less the time it ran
//!   since its last pause ended (`dirty_paused_when`); a pause shorter than `min_pause`
//!   is not slept (the debt is carried), one longer than `max_pause` is cut there.
//! * `pos_ratio` ([`control::pos_ratio`], `wb_position_ratio`) is the position control:
//!   a cubic line through 1 at the setpoint `(freerun + limit) / 2`, 2 at freerun and 0
//!   at the limit (`pos_ratio_polynom`), times the device's linear line
//!   (`wb_position_ratio`'s `wb_setpoint`/`x_intercept` part; one device per cache here,
//!   so `wb_thresh = thresh`, `wb_dirty = dirty`).
//! * `dirty_ratelimit` ([`control::RateLimit::update`], `wb_update_dirty_ratelimit`) is the
//!   rate control: every `BANDWIDTH_INTERVAL` (200 ms) a throttled task measures the
//!   dirty rate of the whole cache and computes the balanced rate
//!   `balanced = task_ratelimit · write_bw / dirty_rate` — the rate at which the N
//!   tasks now dirtying would together dirty exactly what writeback cleans: with N
//!   equal writers it settles at `write_bw / N`, so they get equal shares — and steps
//!   `dirty_ratelimit` towards it (only while the step also moves `dirty` towards the
//!   setpoint; the step shrinks as the two get close).
//! * at or over the limit `pos_ratio = 0`: the task pauses `max_pause` (`wb_max_pause`:
//!   `min(200 ms, dirty / (8 · write_bw) + 1 jiffy)`) and looks again.
//!
//! ## RCP's class-aware limits (FAST '17 §4.3)
//! Each class has its own limit ([`crate::CacheConfig::dirty_limit`]: 1 % of the cache
//! for non-critical writers, 20 % for critical ones). RCP ran Linux 3.13 and says only
//! that it applies "separate dirty ratios" to tasks issuing critical and non-critical
//! writes; in 3.13 a task's thresholds are computed per call from the task
//! (`global_dirty_limits`, which already lifts them by a quarter for real-time tasks),
//! while the rate control is the device's: one `dirty_ratelimit` per
//! `backing_dev_info`, updated by whichever throttled task calls in after 200 ms, with
//! that task's thresholds (per-cgroup writeback domains, each with a rate of its own,
//! came in 4.2). So here: a writer's thresholds are its class's — its background
//! threshold is the same fraction (`background`) of its own limit, so its freerun and
//! setpoint scale with it — and there is one [`control::RateLimit`] per cache. The
//! dirty count is the cache's (every class's pages), as RCP's limits count all dirty
//! pages. So a critical writer is throttled only past `(0.5 + 1) / 2 = 75 %` of the
//! critical limit — background dirty data, held near the non-critical setpoint (1 % of
//! the cache), never gets it there — while a non-critical writer is paced by its own
//! line around 0.875 % of the cache. With one limit for all (`class_limits` off,
//! `--single-dirty-limit`) this is Linux's rule.
//!
//! That a pause is a sleep matters to RCP (§4.4): a non-critical task pausing while a
//! critical task waits on it (for a lock it holds) does not get out when writeback
//! makes room. RCP resolves that cause: the task's class becomes critical and it is
//! woken at once, then judged again under the critical thresholds. The runtime does that
//! (its dependency walk ends the pause); this module only gives the pauses.
//!
//! Not modelled: the per-CPU `bdp_ratelimits` and `dirty_throttle_leaks` (a task's
//! count is exact here), the smaller call interval while `dirty_exceeded`, the
//! smoothing of `hard_dirty_limit` (the limit is fixed), `strictlimit` and memcg
//! writeback domains; one departure is said at [`control::RateLimit::update`].
//!
//! `write_bw` is estimated as Linux's `wb_update_write_bandwidth` does
//! ([`WritebackRate`]): every [`BANDWIDTH_INTERVAL_NS`] or more of writeback activity,
//! the pages written in the interval give a rate, blended into the estimate over a
//! [`BANDWIDTH_PERIOD_NS`] window: `bw ← (bw · (period − elapsed) + rate · elapsed) /
//! period`; a gap of more than a second without writeback restarts the interval without
//! an update (the device was idle, not slow). The first estimate is Linux's `INIT_BW`,
//! 100 MB/s. The throttle uses the smoothed `avg_write_bandwidth`, which follows the
//! estimate by an eighth of the gap only while the estimate keeps moving away from it.

use sluice_core::Nanos;

pub mod control;
mod pace;
#[cfg(test)]
mod tests;

pub use pace::{Dirtier, Throttle, Verdict};

const MS: Nanos = 1_000_000;

/// Longest pause (Linux `MAX_PAUSE` = HZ / 5).
pub const MAX_PAUSE_NS: Nanos = 200 * MS;
/// One jiffy at HZ = 250 (the default of Linux's `Kconfig.hz`): the shortest pause.
pub const JIFFY_NS: Nanos = 4 * MS;
/// Shortest interval between bandwidth and ratelimit updates (Linux
/// `BANDWIDTH_INTERVAL`).
pub const BANDWIDTH_INTERVAL_NS: Nanos = 200 * MS;
/// Window the estimate averages over (Linux: `roundup_pow_of_two(3 * HZ)` jiffies).
pub const BANDWIDTH_PERIOD_NS: Nanos = 4096 * MS;
/// First estimate, pages per second (Linux `INIT_BW`: 100 MB/s).
pub const INIT_BW_PAGES: f64 = 100.0 * (1 << 20) as f64 / 4096.0;
/// Pages a task dirties between calls at least, when it can (Linux `DIRTY_POLL_THRESH`,
/// 128 KiB), and at first (a new task's `nr_dirtied_pause`).
pub const DIRTY_POLL_THRESH: u64 = 32;
/// A gap without writeback longer than this restarts the interval.
const IDLE_NS: Nanos = 1000 * MS;

/// The writeback bandwidth estimate of one cache's device.
#[derive(Clone, Debug, PartialEq)]
pub struct WritebackRate {
    /// Pages per second (Linux `write_bandwidth`).
    bw: f64,
    /// Its smoothed value (Linux `avg_write_bandwidth`).
    avg: f64,
    /// Start of the current interval.
    since: Nanos,
    /// Pages written back in it.
    pages: u64,
    /// Last writeback seen.
    last: Nanos,
}

impl Default for WritebackRate {
    fn default() -> Self {
        WritebackRate {
            bw: INIT_BW_PAGES,
            avg: INIT_BW_PAGES,
            since: 0,
            pages: 0,
            last: 0,
        }
    }
}

impl WritebackRate {
    /// `pages` writebacks completed at `now`.
    pub fn written(&mut self, pages: u64, now: Nanos) {
        if now.saturating_sub(self.last) > IDLE_NS {
            // Idle since the last writeback: start a new interval here.
            self.since = now;
            self.pages = 0;
        }
        self.last = now;
        self.pages += pages;
        let elapsed = now.saturating_sub(self.since);
        if elapsed >= BANDWIDTH_INTERVAL_NS {
            let rate = self.pages as f64 / (elapsed as f64 / 1e9);
            let e = elapsed.min(BANDWIDTH_PERIOD_NS) as f64;
            let p = BANDWIDTH_PERIOD_NS as f64;
            let old = self.bw;
            self.bw = (old * (p - e) + rate * e) / p;
            // avg_write_bandwidth follows only a consistent trend (old and new on the
            // same side of it), by an eighth of the gap.
            if self.avg > old && old >= self.bw {
                self.avg -= (self.avg - old) / 8.0;
            }
            if self.avg < old && old <= self.bw {
                self.avg += (old - self.avg) / 8.0;
            }
            self.since = now;
            self.pages = 0;
        }
    }

    /// The estimate, pages per second.
    pub fn pages_per_sec(&self) -> f64 {
        self.bw
    }

    /// The smoothed estimate the throttle uses, pages per second.
    pub fn avg_pages_per_sec(&self) -> f64 {
        self.avg
    }

    /// The longest pause while `dirty` pages (dirty + writeback) wait for the device
    /// (`wb_max_pause`): `min(MAX_PAUSE, dirty / (8 · avg_bw) + 1 jiffy)` — an eighth
    /// of the time writeback needs to clean what is dirty ("8 serves as the safety
    /// ratio"), so the device does not run dry while writers sleep.
    pub fn max_pause_ns(&self, dirty: usize) -> Nanos {
        let t = dirty as f64 / (8.0 * self.avg.max(1.0)) * 1e9;
        (t as Nanos + JIFFY_NS).min(MAX_PAUSE_NS)
    }
}
