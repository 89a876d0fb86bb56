//! A depth that follows a latency target: how many background requests a scheduler lets
//! reach the device while foreground requests must stay fast.
//!
//! RCP (§4.3, §7.6) bounds the non-critical requests at the device to a fixed `N` (1 by
//! default). On a device that needs many requests in flight for its bandwidth, a fixed
//! `N` either starves the background (N small) or lets the foreground wait behind a deep
//! queue (N large); the best `N` depends on the device and the load. Like Kyber
//! (block/kyber-iosched.c), which scales a domain's depth by how its latency percentile
//! sits against a target, [`DepthTarget`] adapts `N` to the device time of the
//! foreground requests — additive increase, multiplicative decrease, as TCP's
//! congestion window:
//!
//! * the foreground completions are taken in windows of [`WINDOW`];
//! * a window where more than a tenth were slower than the target (its p90 above the
//!   target): `N ← max(min, ⌊N / 2⌋)`;
//! * a window where none was: `N ← min(max, N + max(1, ⌊N / 4⌋))`;
//! * otherwise `N` stays.
//!
//! Windows count completions, not time: no clock is read, and the same completions give
//! the same depths (the simulator stays deterministic). Without foreground requests the
//! depth stays where it was.

use crate::types::Nanos;

/// Foreground completions per decision.
pub const WINDOW: u32 = 32;

/// A depth between `min` and `max` that follows a latency target.
#[derive(Clone, Debug)]
pub struct DepthTarget {
    target_ns: Nanos,
    min: u32,
    max: u32,
    depth: u32,
    seen: u32,
    over: u32,
    adjustments: u64,
}

impl DepthTarget {
    /// Start at `start` (clamped to `min..=max`), aiming at `target_ns` of device time for
    /// the foreground requests.
    ///
    /// # Panics
    /// If `min` is 0 or above `max`.
    pub fn new(target_ns: Nanos, min: u32, max: u32, start: u32) -> Self {
        assert!(min > 0 && min <= max, "depth target: 1 <= min <= max");
        DepthTarget {
            target_ns,
            min,
            max,
            depth: start.clamp(min, max),
            seen: 0,
            over: 0,
            adjustments: 0,
        }
    }

    /// The depth now.
    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// How many times the depth changed.
    pub fn adjustments(&self) -> u64 {
        self.adjustments
    }

    /// A foreground request spent `device_ns` at the device.
    pub fn observe(&mut self, device_ns: Nanos) {
        self.seen += 1;
        if device_ns > self.target_ns {
            self.over += 1;
        }
        if self.seen < WINDOW {
            return;
        }
        let before = self.depth;
        if self.over * 10 > WINDOW {
            self.depth = (self.depth / 2).max(self.min);
        } else if self.over == 0 {
            self.depth = (self.depth + (self.depth / 4).max(1)).min(self.max);
        }
        if self.depth != before {
            self.adjustments += 1;
        }
        self.seen = 0;
        self.over = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(d: &mut DepthTarget, slow: u32, target: Nanos) {
        for i in 0..WINDOW {
            d.observe(if i < slow { target + 1 } else { target });
        }
    }

    #[test]
    fn fast_windows_grow_the_depth_slow_ones_halve_it() {
        let mut d = DepthTarget::new(100, 1, 64, 4);
        window(&mut d, 0, 100);
        assert_eq!(d.depth(), 5); // + max(1, 4/4)
        window(&mut d, 0, 100);
        assert_eq!(d.depth(), 6);
        window(&mut d, 4, 100); // 4 of 32 > a tenth: halve
        assert_eq!(d.depth(), 3);
        window(&mut d, 3, 100); // 3 of 32 <= a tenth, not zero: stay
        assert_eq!(d.depth(), 3);
        for _ in 0..40 {
            window(&mut d, 0, 100);
        }
        assert_eq!(d.depth(), 64, "bounded above");
        for _ in 0..10 {
            window(&mut d, WINDOW, 100);
        }
        assert_eq!(d.depth(), 1, "bounded below");
        assert!(d.adjustments() > 10);
    }

    #[test]
    fn nothing_changes_within_a_window() {
        let mut d = DepthTarget::new(100, 1, 64, 8);
        for _ in 0..WINDOW - 1 {
            d.observe(1_000_000);
        }
        assert_eq!(d.depth(), 8);
        d.observe(1_000_000);
        assert_eq!(d.depth(), 4);
    }
}
