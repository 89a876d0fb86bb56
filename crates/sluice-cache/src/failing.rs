//! Writeback that keeps failing (a full or failing device under the cache).
//!
//! A failed writeback leaves its page dirty ([`PageCache::end_writeback`]): nothing a
//! program wrote is dropped. Without more, the flusher would send the same pages again
//! the moment the failure came back — in the simulator an endless chain of events, on
//! a real device a busy loop — and a writer paused at its dirty limit would wait for
//! room no writeback can make. Both clients of the cache (the runtime's page cache and
//! the job runner's buffered front) follow this one rule:
//!
//! * after a failed writeback the flusher sends nothing before a pause, [`RETRY_MIN_NS`]
//!   doubling to [`RETRY_MAX_NS`] (Linux's periodic writeback interval,
//!   `dirty_writeback_centisecs`) while the failures go on; any writeback that succeeds
//!   (an fsync's too) ends it;
//! * once [`FAILED`] failures in a row were seen, an I/O that needs room — a writer at
//!   its dirty limit, a read or write with no clean frame left — gets an error instead
//!   of waiting for ever (Linux leaves such a writer throttled; a userspace stack that
//!   cannot be killed the same way answers instead).
//!
//! What one failure is, is the client's: the runtime's flusher reports a round whose
//! every writeback failed as one; the job runner reports each writeback request. With
//! no failure nothing here acts: runs without faults are unchanged.
//!
//! [`PageCache::end_writeback`]: crate::PageCache::end_writeback

use sluice_core::Nanos;

/// The flusher's first pause after a failed writeback.
pub const RETRY_MIN_NS: Nanos = 100_000_000;
/// Its longest pause: Linux's periodic writeback interval (5 s), after which the
/// kernel's flusher looks at the dirty pages again.
pub const RETRY_MAX_NS: Nanos = 5_000_000_000;
/// Failures in a row after which an I/O needing room gets an error (two: the first
/// retry after a pause failed too).
pub const FAILED: u32 = 2;

/// The state of failing writeback: how many failures in a row, and the flusher's pause.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Failing {
    /// Failures in a row (0 after a success).
    run: u32,
    /// No background writeback before this time.
    retry_at: Option<Nanos>,
    /// The last pause.
    backoff: Nanos,
}

impl Failing {
    /// A writeback (or a round of them: the client's unit) ended at `now`.
    pub fn ended(&mut self, ok: bool, now: Nanos) {
        if ok {
            *self = Failing::default();
            return;
        }
        self.run += 1;
        // One longer pause per pause: failures of requests sent together count once.
        if self.retry_at.is_none_or(|t| t <= now) {
            self.backoff = (self.backoff * 2).clamp(RETRY_MIN_NS, RETRY_MAX_NS);
            self.retry_at = Some(now + self.backoff);
        }
    }

    /// Failures in a row so far.
    pub fn run(&self) -> u32 {
        self.run
    }

    /// No room will come: an I/O that needs it gets an error.
    pub fn hopeless(&self) -> bool {
        self.run >= FAILED
    }

    /// Whether the flusher may send writeback at `now` (the pause, if any, is over: it
    /// is forgotten).
    pub fn may_issue(&mut self, now: Nanos) -> bool {
        match self.retry_at {
            Some(t) if t > now => false,
            Some(_) => {
                self.retry_at = None;
                true
            }
            None => true,
        }
    }

    /// When the pause ends, if the flusher is pausing.
    pub fn retry_at(&self) -> Option<Nanos> {
        self.retry_at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pause_doubles_to_five_seconds_and_a_success_ends_it() {
        let mut f = Failing::default();
        let mut now = 0;
        let mut pauses = Vec::new();
        for _ in 0..8 {
            assert!(f.may_issue(now));
            f.ended(false, now);
            let t = f.retry_at().unwrap();
            assert!(!f.may_issue(now));
            pauses.push(t - now);
            now = t;
        }
        assert_eq!(pauses[0], RETRY_MIN_NS);
        assert_eq!(pauses[1], 2 * RETRY_MIN_NS);
        assert_eq!(*pauses.last().unwrap(), RETRY_MAX_NS);
        assert!(f.hopeless());
        f.ended(true, now);
        assert_eq!(f, Failing::default());
        assert!(!f.hopeless() && f.may_issue(now));
    }

    #[test]
    fn failures_within_one_pause_lengthen_it_once_but_all_count() {
        let mut f = Failing::default();
        f.ended(false, 0);
        assert!(!f.hopeless());
        f.ended(false, 10);
        assert_eq!(f.retry_at(), Some(RETRY_MIN_NS));
        assert!(f.hopeless());
    }
}
