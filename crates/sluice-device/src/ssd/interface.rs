//! What the host sees of the simulated SSD: commands, completions, submission errors
//! and the device's counters.

use sluice_core::{Nanos, Op};

/// One NVMe command as the host submits it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Command {
    /// Host-chosen identifier returned in the completion (the NVMe command id).
    pub tag: u32,
    /// Read, write or flush.
    pub op: Op,
    /// Byte offset on the device.
    pub offset: u64,
    /// Length in bytes (0 for a flush).
    pub len: u32,
    /// Force unit access: a write bypasses the volatile write buffer and completes when
    /// its data is on the media (ignored for reads and flushes).
    pub fua: bool,
    /// A write's placement identifier (NVMe FDP's DSPEC with DTYPE 2): the reclaim
    /// unit handle whose write point takes its data on a profile with `[flash]
    /// fdp_ruhs`; 0 (the default handle) without one.
    pub placement: u8,
}

/// A completed command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceCompletion {
    /// The command's tag.
    pub tag: u32,
    /// The submission queue it was submitted to.
    pub qid: u16,
    /// When it was submitted (doorbell rung).
    pub submit_ns: Nanos,
    /// When the controller fetched it from its submission queue.
    pub fetch_ns: Nanos,
    /// When its completion became visible to the host.
    pub complete_ns: Nanos,
    /// Whether it succeeded (false: a seeded media error or timeout, see
    /// [`NvmeSsd::set_faults`]).
    pub ok: bool,
}

/// Why [`NvmeSsd::submit`] refused a command.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SubmitError {
    /// The submission queue has no free entry; complete some commands first.
    #[error("submission queue full")]
    QueueFull,
    /// No such submission queue (qid ≥ cores × 4).
    #[error("no such submission queue")]
    BadQueue,
}

/// Counters kept by the device. Times are simulated nanoseconds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeviceStats {
    /// Commands accepted by [`NvmeSsd::submit`].
    pub submitted: u64,
    /// Commands fetched by the controller, per queue class index (urgent, high,
    /// medium, low). With round robin the class is that of the queue fetched from.
    pub fetched_per_class: [u64; 4],
    /// Commands completed (successfully or not).
    pub completed: u64,
    /// Commands that completed with a (seeded) media error.
    pub media_errors: u64,
    /// Commands that hung until the host's timeout aborted them.
    pub timeouts: u64,
    /// Reads completed.
    pub completed_reads: u64,
    /// Writes completed.
    pub completed_writes: u64,
    /// Flushes completed.
    pub completed_flushes: u64,
    /// Trims (deallocates) completed.
    pub completed_trims: u64,
    /// Bytes of completed trims.
    pub bytes_trimmed: u64,
    /// Bytes of completed reads.
    pub bytes_read: u64,
    /// Bytes of completed writes.
    pub bytes_written: u64,
    /// Total service time booked on the shared front end (controller + host transfer;
    /// with a shared transfer, each command's processing and transfer alone combined
    /// as `controller.front_end` combines them).
    pub front_busy_ns: u64,
    /// Total service time booked on each media unit (reads, unbuffered writes and
    /// destage programs).
    pub unit_busy_ns: Vec<u64>,
    /// Writes that found the write buffer full (or other writes waiting) and queued for
    /// room.
    pub buffer_full_waits: u64,
    /// Total time writes waited for buffer room.
    pub buffer_wait_ns: u64,
    /// ∫ inflight dt over `[0, area_until_ns]`, in command·ns (inflight = submitted and
    /// not completed, as [`NvmeSsd::inflight`]). Divided by elapsed time it is the mean
    /// number of commands in the device.
    pub inflight_area: u128,
    /// The time up to which `inflight_area` is integrated (the latest submit, event or
    /// advance time).
    pub area_until_ns: Nanos,
}

impl DeviceStats {
    /// Mean inflight over `[0, area_until_ns]` (0 before any time has passed).
    pub fn mean_inflight(&self) -> f64 {
        if self.area_until_ns == 0 {
            0.0
        } else {
            self.inflight_area as f64 / self.area_until_ns as f64
        }
    }

    /// Busy fraction of media unit `unit` over `elapsed_ns` (booked service / elapsed).
    pub fn unit_utilization(&self, unit: usize, elapsed_ns: Nanos) -> f64 {
        if elapsed_ns == 0 {
            0.0
        } else {
            self.unit_busy_ns[unit] as f64 / elapsed_ns as f64
        }
    }
}
