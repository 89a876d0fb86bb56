//! The block layer's own figures.

use serde::{Deserialize, Serialize};
use sluice_core::policy::Counter;
use sluice_core::Nanos;

/// What the block layer did over a run (typed, so a renamed field is a compile error in
/// every reader, not a silent zero).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockStats {
    /// Requests submitted.
    pub submitted: u64,
    /// Requests completed (their last piece completed).
    pub completed: u64,
    /// Requests of which at least one piece failed.
    pub failed: u64,
    /// Pieces dispatched to the device port.
    pub pieces: u64,
    /// Pieces the device reported failed (media error, timeout).
    pub failed_pieces: u64,
    /// Pieces dispatched per queue class (urgent, high, medium, low).
    pub dispatched_per_class: [u64; 4],
    /// Most pieces in flight at the port at once (dispatched, not completed).
    pub peak_inflight: u32,
    /// The same per queue class (urgent, high, medium, low).
    pub peak_inflight_per_class: [u32; 4],
    /// Requests that waited for admission (refused, or parked behind their class).
    pub admission_waits: u64,
    /// Promotions of requests waiting for admission (class raised to critical).
    pub promoted_waiting: u64,
    /// Promotions of queued requests the policy accepted (`Policy::promote`).
    pub promoted_queued: u64,
    /// Dispatches held because the port's queue was full.
    pub held: u64,
    /// Times the policy's wanted WRR weights changed and were pushed to the port.
    pub wrr_changes: u64,
    /// Atomic (untorn, `REQ_ATOMIC`) writes submitted: each went to the device as
    /// one piece (absent from the JSON when none).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub atomic_writes: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Most rows a [`CounterSeries`] keeps: past it, every other row is dropped and only
/// every other later sample is kept, so the series stays evenly spaced and its size
/// does not grow with the run's length.
pub const MAX_ROWS: usize = 4096;

/// The policy's counters (`Policy::counters`) sampled over time: one row per sample.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CounterSeries {
    /// The counters, in the policy's order.
    pub names: Vec<Counter>,
    /// `(time, values in name order)`.
    pub rows: Vec<(Nanos, Vec<f64>)>,
    /// Keep one sample in this many (doubles each time the rows are thinned).
    pub(crate) every: u64,
    /// Samples offered so far.
    pub(crate) offered: u64,
}

impl CounterSeries {
    /// Whether the next sample offered is kept (and count it).
    pub(crate) fn take(&mut self) -> bool {
        let every = self.every.max(1);
        let keep = self.offered.is_multiple_of(every);
        self.offered += 1;
        keep
    }

    /// Keep a row; thin the series when it is full.
    pub(crate) fn push(&mut self, t: Nanos, row: Vec<f64>) {
        self.rows.push((t, row));
        if self.rows.len() > MAX_ROWS {
            let mut i = 0;
            self.rows.retain(|_| {
                i += 1;
                (i - 1) % 2 == 0
            });
            self.every = self.every.max(1) * 2;
        }
    }
}
