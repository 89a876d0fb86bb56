//! Writeback that keeps failing (a full or failing device under the job's files).
//!
//! A failed writeback leaves its pages dirty (the cache's `end_writeback`): nothing a
//! job wrote is dropped. Without more, the flusher would send the same pages again the
//! moment the failure came back — in the simulator an endless chain of events, on a
//! real device a busy loop — and a writer paused at its dirty limit would wait for room
//! no writeback can make. So, as the runtime's page cache does:
//!
//! * after a failed writeback the flusher sends nothing before a pause, 0.1 s doubling
//!   to 5 s (Linux's periodic writeback interval, `dirty_writeback_centisecs`) while
//!   the failures go on; any writeback that succeeds (an fsync's too) ends it;
//! * once [`FAILED`] writebacks in a row failed, a job I/O that needs room — a writer
//!   at its dirty limit, an I/O with no clean page left — completes with an error
//!   (fio's job then stops or goes on as its `continue_on_error` says) instead of
//!   waiting for ever.
//!
//! With no failure nothing here acts: runs without faults are unchanged.

use sluice_core::Nanos;

/// The flusher's first pause after a failed writeback.
pub const RETRY_MIN_NS: Nanos = 100_000_000;
/// Its longest pause: Linux's periodic writeback interval (5 s).
pub const RETRY_MAX_NS: Nanos = 5_000_000_000;
/// Writebacks in a row that failed, after which a job I/O needing room gets an error.
pub const FAILED: u32 = 2;

/// The state of failing writeback.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Failing {
    /// Writeback requests in a row that failed (0 after one succeeds).
    run: u32,
    /// No background writeback before this time.
    retry_at: Option<Nanos>,
    /// The last pause.
    backoff: Nanos,
}

impl Failing {
    /// A writeback request ended at `now`.
    pub(super) fn ended(&mut self, ok: bool, now: Nanos) {
        if ok {
            *self = Failing::default();
            return;
        }
        self.run += 1;
        // One longer pause per round: the failures of requests sent together count once.
        if self.retry_at.is_none_or(|t| t <= now) {
            self.backoff = (self.backoff * 2).clamp(RETRY_MIN_NS, RETRY_MAX_NS);
            self.retry_at = Some(now + self.backoff);
        }
    }

    /// No room will come: a job I/O that needs it gets an error.
    pub(super) fn hopeless(&self) -> bool {
        self.run >= FAILED
    }

    /// Whether the flusher may send writeback at `now` (the pause, if any, is over: it
    /// is forgotten).
    pub(super) fn may_issue(&mut self, now: Nanos) -> bool {
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
    pub(super) fn retry_at(&self) -> Option<Nanos> {
        self.retry_at
    }
}
