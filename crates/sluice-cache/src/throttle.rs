//! How long a writer over its dirty limit pauses: Linux's IO-less dirty throttling
//! (`balance_dirty_pages`, `mm/page-writeback.c`, since 3.2; RCP ran 3.13).
//!
//! A writer that finds dirty + writeback pages at its limit does not wait for a signal
//! that writeback made room: it kicks background writeback and **sleeps** for a pause,
//! then looks again. Over the limit the pause is the *max pause*:
//!
//! ```text
//! max_pause = min(MAX_PAUSE, dirty / (8 · bw) + 1 jiffy)
//! ```
//!
//! where `dirty` is the device's dirty + writeback pages and `bw` its writeback
//! bandwidth in pages per second (`bdi_max_pause`: an eighth of the time writeback
//! needs to clean what is dirty — "8 serves as the safety ratio" — so the device does
//! not run dry while writers sleep; at least one jiffy; at most `MAX_PAUSE` = 200 ms).
//!
//! That the wait is a sleep matters to RCP (FAST '17 §4.4): a background task paused at
//! the cache's admission while a critical task waits on it (for a lock it holds) does
//! not get out when writeback makes room — it sleeps its pause out, holding the lock.
//! RCP resolves that cause: the task's dirty limit becomes the critical one and it is
//! woken up at once. The runtime does that (its dependency walk ends the pause); this
//! module only gives the pause.
//!
//! `bw` is estimated as Linux's `bdi_update_write_bandwidth` does: every
//! [`BANDWIDTH_INTERVAL_NS`] or more of writeback activity, the pages written in the
//! interval give a rate, blended into the estimate over a [`BANDWIDTH_PERIOD_NS`]
//! window: `bw ← (bw · (period − elapsed) + rate · elapsed) / period`; a gap of more
//! than a second without writeback restarts the interval without an update (the device
//! was idle, not slow). The first estimate is Linux's `INIT_BW`, 100 MB/s.

use sluice_core::Nanos;

const MS: Nanos = 1_000_000;

/// Longest pause (Linux `MAX_PAUSE` = HZ / 5).
pub const MAX_PAUSE_NS: Nanos = 200 * MS;
/// One jiffy at HZ = 250 (the default of Linux's `Kconfig.hz`): the shortest pause.
pub const JIFFY_NS: Nanos = 4 * MS;
/// Shortest interval between bandwidth updates (Linux `BANDWIDTH_INTERVAL`).
pub const BANDWIDTH_INTERVAL_NS: Nanos = 200 * MS;
/// Window the estimate averages over (Linux: `roundup_pow_of_two(3 * HZ)` jiffies).
pub const BANDWIDTH_PERIOD_NS: Nanos = 4096 * MS;
/// First estimate, pages per second (Linux `INIT_BW`: 100 MB/s).
pub const INIT_BW_PAGES: f64 = 100.0 * (1 << 20) as f64 / 4096.0;
/// A gap without writeback longer than this restarts the interval.
const IDLE_NS: Nanos = 1000 * MS;

/// The writeback bandwidth estimate of one cache's device.
#[derive(Clone, Debug, PartialEq)]
pub struct WritebackRate {
    /// Pages per second.
    bw: f64,
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
            self.bw = (self.bw * (p - e) + rate * e) / p;
            self.since = now;
            self.pages = 0;
        }
    }

    /// The estimate, pages per second.
    pub fn pages_per_sec(&self) -> f64 {
        self.bw
    }

    /// The pause of a writer over its limit while `dirty` pages (dirty + writeback)
    /// wait for the device: `min(MAX_PAUSE, dirty / (8 · bw) + 1 jiffy)`.
    pub fn max_pause_ns(&self, dirty: usize) -> Nanos {
        let t = dirty as f64 / (8.0 * self.bw.max(1.0)) * 1e9;
        (t as Nanos + JIFFY_NS).min(MAX_PAUSE_NS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pause_is_an_eighth_of_the_drain_time_plus_a_jiffy_at_most_200_ms() {
        let r = WritebackRate::default();
        // 25 600 pages/s: 2 048 dirty pages drain in 80 ms; an eighth is 10 ms.
        assert_eq!(r.max_pause_ns(2048), 10 * MS + JIFFY_NS);
        assert_eq!(r.max_pause_ns(0), JIFFY_NS);
        assert_eq!(r.max_pause_ns(10_000_000), MAX_PAUSE_NS);
    }

    #[test]
    fn the_estimate_moves_toward_the_measured_rate_and_ignores_idle_gaps() {
        let mut r = WritebackRate::default();
        // 1 000 pages/s for 60 s, one page per ms.
        for i in 1..=60_000u64 {
            r.written(1, i * MS);
        }
        let bw = r.pages_per_sec();
        assert!((bw - 1000.0).abs() < 10.0, "estimate {bw} pages/s");
        // Ten idle seconds, then one page: no update from the gap.
        r.written(1, 70_000 * MS);
        assert_eq!(r.pages_per_sec(), bw);
        // A slower device makes longer pauses.
        assert!(r.max_pause_ns(800) > WritebackRate::default().max_pause_ns(800));
    }
}
