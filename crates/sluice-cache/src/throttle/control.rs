//! The two controls of Linux's dirty throttling: the position control (`pos_ratio`,
//! `wb_position_ratio`, 3.13's `bdi_position_ratio`), against one class's thresholds,
//! and the rate control (`dirty_ratelimit`, `wb_update_dirty_ratelimit`, 3.13's
//! `bdi_update_dirty_ratelimit`), one per cache (see the module docs of [`super`]).

use sluice_core::{IoClass, Nanos};

use super::BANDWIDTH_INTERVAL_NS;
use crate::CacheConfig;

/// One class's thresholds, in pages of dirty + writeback.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Thresholds {
    /// The limit (Linux `thresh`, here also its `hard_dirty_limit`).
    pub limit: u64,
    /// The background threshold of this class (`bg_thresh`): the configured fraction
    /// (`background`) of its own limit.
    pub background: u64,
    /// No pause at or below this (`dirty_freerun_ceiling`: `(bg_thresh + thresh) / 2`).
    pub freerun: u64,
    /// Where `pos_ratio` is 1 (`(freerun + limit) / 2`).
    pub setpoint: u64,
}

impl Thresholds {
    /// From a limit and the background fraction.
    pub fn new(limit: u64, background: f64) -> Thresholds {
        let limit = limit.max(1);
        let background = ((limit as f64 * background) as u64).min(limit);
        let freerun = (background + limit) / 2;
        Thresholds {
            limit,
            background,
            freerun,
            setpoint: (freerun + limit) / 2,
        }
    }

    /// The thresholds of a writer of `class` under `cfg`.
    pub fn of(cfg: &CacheConfig, class: IoClass) -> Thresholds {
        Thresholds::new(cfg.dirty_limit(class) as u64, cfg.background)
    }
}

/// Linux's `wb_position_ratio` for one device: how far the writers' rate is to be
/// scaled given where `dirty` is.
///
/// The global line is cubic, `pos_ratio = 1 + x³` with `x = (setpoint − dirty) /
/// (limit − setpoint)`, held in [0, 2] (`pos_ratio_polynom`): 1 at the setpoint, 2 at
/// freerun, 0 at the limit, flat near the setpoint and steep near the ends. The
/// device's line multiplies it: with `span = 8 · write_bw` (pages; one device per
/// cache, so `wb_thresh = thresh` and the span's share is whole) and `x_intercept =
/// setpoint + span`, the factor is `(x_intercept − dirty) / (x_intercept − setpoint +
/// 1)`, or 1/4 once `dirty` passes `x_intercept − span / 4`. At or over the limit the
/// ratio is 0.
pub fn pos_ratio(t: &Thresholds, dirty: u64, write_bw: f64) -> f64 {
    if dirty >= t.limit {
        return 0.0;
    }
    let span_top = (t.limit - t.setpoint).max(1) as f64;
    let x = (t.setpoint as f64 - dirty as f64) / span_top;
    let mut pos = (1.0 + x * x * x).clamp(0.0, 2.0);
    let span = 8.0 * write_bw.max(1.0);
    let x_intercept = t.setpoint as f64 + span;
    if (dirty as f64) < x_intercept - span / 4.0 {
        pos *= (x_intercept - dirty as f64) / (x_intercept - t.setpoint as f64 + 1.0);
    } else {
        pos /= 4.0;
    }
    pos
}

/// The rate control of a cache's device (Linux's per-`backing_dev_info`
/// `dirty_ratelimit` and `balanced_dirty_ratelimit`): one for every class of writer;
/// each update uses the thresholds of the writer that makes it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateLimit {
    /// The rate every throttled task is paced at when `dirty` is at its class's
    /// setpoint, pages per second (Linux `dirty_ratelimit`; at first `INIT_BW`).
    pub dirty_ratelimit: u64,
    /// The last balanced rate (Linux `balanced_dirty_ratelimit`).
    pub balanced: u64,
    /// When the last update was (`bw_time_stamp`), if any.
    stamp: Option<Nanos>,
    /// The cache's pages dirtied then (`dirtied_stamp`).
    dirtied_stamp: u64,
    /// `pos_ratio` over the interval so far: ∑ pos · dt (ns), the last `pos_ratio`
    /// seen and when (see [`RateLimit::update`]).
    pos_area: f64,
    pos_last: f64,
    pos_at: Nanos,
}

impl Default for RateLimit {
    fn default() -> Self {
        let init = super::INIT_BW_PAGES as u64;
        RateLimit {
            dirty_ratelimit: init,
            balanced: init,
            stamp: None,
            dirtied_stamp: 0,
            pos_area: 0.0,
            pos_last: 1.0,
            pos_at: 0,
        }
    }
}

impl RateLimit {
    /// A throttled task with thresholds `t` calls in at `now`: if a `BANDWIDTH_INTERVAL` has
    /// passed since the last update, update `dirty_ratelimit` from the cache's pages
    /// dirtied so far (`dirtied`), `dirty` and `write_bw` (Linux's
    /// `wb_update_dirty_ratelimit`, called from `__wb_update_bandwidth`). A gap of more
    /// than a second only takes a new snapshot (a quiet period says nothing of the
    /// rate).
    ///
    /// One departure from Linux: `task_ratelimit` in the balanced rate is
    /// `dirty_ratelimit` times `pos_ratio`'s *time average* over the interval (each
    /// call's `pos_ratio` held until the next call), where Linux takes the `pos_ratio`
    /// of the instant of the update, assuming it held for the interval. In sluice's
    /// worlds writers that over-run the limit all pause exactly `MAX_PAUSE` = 200 ms =
    /// the interval, so the instant of the update locks onto their wake-up, when `dirty`
    /// is at its lowest: the rate then reads as balanced while the writers spend most
    /// of the time at the limit, and never falls (tried: four writers stayed at 13× the
    /// balanced rate). The average includes the time at the limit (`pos_ratio` 0).
    pub fn update(&mut self, t: &Thresholds, dirty: u64, dirtied: u64, write_bw: f64, now: Nanos) {
        let pos_now = pos_ratio(t, dirty, write_bw);
        self.pos_area += self.pos_last * now.saturating_sub(self.pos_at) as f64;
        self.pos_last = pos_now;
        self.pos_at = now;
        let Some(stamp) = self.stamp else {
            self.snapshot(dirtied, now);
            return;
        };
        let elapsed = now.saturating_sub(stamp);
        if elapsed < BANDWIDTH_INTERVAL_NS {
            return;
        }
        if elapsed > 5 * BANDWIDTH_INTERVAL_NS {
            self.snapshot(dirtied, now);
            return;
        }
        let secs = elapsed as f64 / 1e9;
        // dirty_rate: pages the cache's writers dirtied per second since the stamp.
        let dirty_rate = (dirtied.saturating_sub(self.dirtied_stamp) as f64 / secs).max(1.0);
        let rl = self.dirty_ratelimit;
        let pos = self.pos_area / elapsed as f64;
        // task_ratelimit (+1 page/s: lets the rate ramp up from tiny values).
        let task_rl = (rl as f64 * pos) as u64 + 1;
        // balanced = task_ratelimit · write_bw / dirty_rate, never above write_bw.
        let balanced = ((task_rl as f64 * write_bw / dirty_rate) as u64).min(write_bw as u64);
        // Step towards `balanced` only where that also moves `dirty` towards the
        // setpoint: below it, up to the least of the last and this balanced rate and
        // task_ratelimit; above it, down to the greatest of them (filters the balanced
        // rate's noise, and keeps the rate from fighting the position control).
        let mut step = 0u64;
        if dirty < t.setpoint {
            let x = self.balanced.min(balanced).min(task_rl);
            if rl < x {
                step = x - rl;
            }
        } else {
            let x = self.balanced.max(balanced).max(task_rl);
            if rl > x {
                step = rl - x;
            }
        }
        // The step shrinks as it gets small against the rate: shifted right by
        // rl / (2 · step + 1), then an eighth (rounded up), so the rate settles rather
        // than oscillates.
        let shift = rl / (2 * step + 1);
        step = if shift < 64 {
            (step >> shift).div_ceil(8)
        } else {
            0
        };
        let rl = if rl < balanced {
            rl + step
        } else {
            rl.saturating_sub(step)
        };
        self.dirty_ratelimit = rl.max(1);
        self.balanced = balanced;
        self.snapshot(dirtied, now);
    }

    fn snapshot(&mut self, dirtied: u64, now: Nanos) {
        self.pos_area = 0.0;
        self.stamp = Some(now);
        self.dirtied_stamp = dirtied;
    }
}
