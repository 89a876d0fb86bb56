//! # sluice-calibrate
//!
//! `sluice calibrate`: measure a real device through the engine, derive a simulated
//! device profile ([`sluice_device::DeviceProfile`]) from it and check the simulator
//! against the device ([`validate`]) — what Seastar's iotune does, without its known
//! faults. The crate sits above the engine, the simulator and the device model.
//!
//! * **Steady state, not the first burst.** Every point is measured in consecutive
//!   windows after a warm-up (excluded); it ends when the last `agree` windows' IOPS
//!   agree within `tolerance`, or at a time cap (then it is reported as not steady,
//!   with the spread of its last windows).
//! * **The minimum efficient I/O size is measured**, not read from sysfs: IOPS of
//!   requests from the file's alignment up to 4 KiB at the knee queue depth.
//! * **Mixed read/write points** (70/30 and 50/50 by default) are part of the grid.
//!
//! The grid ([`Plan`]): a queue-depth sweep of 4 KiB random reads and writes
//! (1 … 64); the knee queue depth of each ([`analysis::knee_qd`]); small sizes and a
//! size sweep (4 KiB … 128 KiB) at that knee; a QD1 size sweep for the FIOS cost model
//! ([`analysis::linear_fit`]); mixed points at QD1 and at the knee. [`Summary`] derives
//! the figures and [`model::derive`] the profile; [`Calibration`] holds a run's results
//! together and makes the tables, the JSON file and the profile's text of them
//! ([`report`]). Every point runs the engine with
//! policy `none` and one worker on one file: a temporary file that sluice creates (and
//! removes), or an existing file or device under `sluice run`'s safety rules (the
//! engine's own checks: `--allow-write-existing`, `--allow-device`).

#![warn(missing_docs, missing_debug_implementations)]

pub mod analysis;
pub mod buffer;
mod measure;
pub mod model;
mod plan;
pub mod report;
pub mod simfit;
mod summary;
mod target;
pub mod validate;

pub use measure::{aggregate, measure, measure_point, Point, Progress, Window};
pub use plan::{Plan, PointSpec, Role};
pub use report::{Calibration, Provenance, TargetFacts};
pub use summary::{DirSummary, Summary};
pub use target::Target;

use sluice_engine::EngineError;

/// Why a calibration could not run or finish.
#[derive(Debug, thiserror::Error)]
pub enum CalibrateError {
    /// The engine refused the target or failed.
    #[error("{0}")]
    Engine(#[from] EngineError),
    /// The simulator refused a validation run.
    #[error("calibrate: simulator: {0}")]
    Sim(#[from] sluice_sim::SimError),
    /// The derived profile does not validate (a bug of the derivation).
    #[error("calibrate: derived profile: {0}")]
    Profile(#[from] sluice_device::ProfileError),
    /// Bad input: what is wrong and how to fix it.
    #[error("calibrate: {0}")]
    BadInput(String),
    /// The kernel reported I/O errors during a measurement.
    #[error("calibrate: {job}: {count} I/O error(s) while measuring; first: {first}")]
    IoErrors {
        /// The point being measured.
        job: String,
        /// Errors counted.
        count: u64,
        /// The first error's description.
        first: String,
    },
    /// A measurement completed no I/O.
    #[error("calibrate: {0}: no I/O completed in the measurement window; the device may be stalled or the window too short")]
    NoIo(String),
    /// Stopped by Ctrl-C.
    #[error("calibrate: interrupted")]
    Interrupted,
}

impl CalibrateError {
    /// Exit status: 2 for bad input, 130 when interrupted, 1 for failures.
    pub fn exit_code(&self) -> u8 {
        match self {
            CalibrateError::Engine(e) => e.exit_code(),
            CalibrateError::BadInput(_) => 2,
            CalibrateError::Interrupted => 130,
            _ => 1,
        }
    }
}

#[cfg(test)]
mod tests;
