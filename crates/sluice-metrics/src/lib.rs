//! # sluice-metrics
//!
//! What both sluice engines (the deterministic simulator and the io_uring engine) measure,
//! and how the `sluice` command reports it.
//!
//! * [`Collector`] is fed one [`Sample`] per completed I/O. It keeps, per job and per
//!   direction (read, write, sync = flushes), the I/O count, the bytes and the completion
//!   latency in a histogram (HdrHistogram's buckets), together with the latency
//!   *breakdown* (time queued in the scheduler, on the device, and after the device until
//!   the application reaped it). Per flow it keeps I/Os, bytes and bandwidth over time;
//!   per [`IoClass`] a latency histogram, so latency-critical and other I/O can be shown
//!   apart. Recording is O(1) and allocates only when a histogram or the bandwidth series
//!   has to grow (amortised, a bounded number of times), never per sample.
//! * Each thread of a job with several threads (fio's `numjobs`) is counted on its own
//!   unless the job has `group_reporting`: the report carries fio's entries
//!   ([`RunReport::entries`]: a thread an entry, or a reporting group's jobs in one with
//!   `group_reporting`, as fio's `stat.c`) and one report per job section
//!   ([`RunReport::jobs`], its threads summed, for sluice's own readers).
//! * [`Collector::finish`] turns the counters into a [`RunReport`]: serde-serialisable
//!   with fio's JSON field names where the meaning is the same (`jobname`, `read`,
//!   `io_bytes`, `bw_bytes`, `bw` in KiB/s, `iops`, `runtime` in ms, `total_ios`,
//!   `clat_ns` with `percentile` keyed `"99.900000"`), plus the breakdown (`sched_ns`,
//!   `device_ns`, `post_ns`), per-flow shares against weights, Jain's fairness index and a
//!   compact bandwidth-over-time series.
//! * [`to_json`], [`write_json`], [`print_table`] and [`plot`] present one run or several
//!   runs (one per policy) side by side.
//!
//! ## Definitions
//!
//! * `clat` is the whole latency the application saw: `reaped − submit`. It is the sum of
//!   `sched = dispatch − submit`, `device = device_done − dispatch` and
//!   `post = reaped − device_done`; means, minima and maxima are exact (kept as integer
//!   sums), percentiles come from histograms with HdrHistogram's buckets at 3
//!   significant digits — the figures the `hdrhistogram` crate gives (values are clamped
//!   at one hour).
//! * A sample counts only if it was reaped at or after its job's measurement start (fio's
//!   `ramp_time`), see [`Collector::set_window`] and [`Collector::set_job_window`].
//! * A flow is *active* if it completed any I/O in the window. Its `share` is its fraction
//!   of all bytes served, its `weight_share` its weight over the total weight of the active
//!   flows, and `share_error = share / weight_share − 1` (0 for inactive flows).
//! * Jain's index is computed over the active flows' normalised throughputs
//!   `x_i = bw_i / weight_i`, see [`jain_index`].
#![warn(missing_docs)]

mod collector;
mod depths;
pub mod errors;
mod extra;
mod fiolog;
mod fioplus;
mod fios;
mod hist;
mod lat;
mod plot;
mod report;
mod table;
mod terse;
mod text_table;

pub use collector::{
    Collector, FlowInfo, JobInfo, RunSetup, Sample, DEFAULT_INTERVAL_NS, MAX_BINS,
};
pub use depths::{IoDepths, LatencyTarget};
pub use extra::{
    DeviceFaults, DeviceFlash, Extra, FileFact, IoErrorFact, PerClass, PolicyCounters,
    PolicySeries, PolicyTiming, RealFacts, RuntimeFacts, SimFacts, VerifyFact, WaitSiteFacts,
};
pub use fiolog::{format_entry, log_dir, write_fio_logs, FioLogFile, LogEntry, MAX_LOG_ENTRIES};
pub use fioplus::{plat_index, plat_value, PLAT_NR};
pub use fios::{fios_figures, FiosFigures, FiosMetricError, TaskFigures};
pub use plot::{plot, plot_xy, XySeries};
pub use report::{
    json_bytes, to_json, write_json, BwSeries, ClassReport, DirReport, Fairness, FlowReport,
    FlowSeries, JobReport, LatReport, Percentiles, RunReport, SteadyReport, FIO_PERCENTILES,
};
pub use table::{fmt_count, fmt_mib, fmt_ns, print_table};
pub use terse::terse;
pub use text_table::Table;

pub use sluice_core::{IoClass, Nanos, Op};

use std::path::PathBuf;

/// Errors of the output layer. Every variant names the file or directory involved.
#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    /// The output directory could not be created.
    #[error("cannot create output directory {}: {source}", path.display())]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A file could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A report could not be serialised to JSON.
    #[error("cannot serialise the report for {}: {source}", path.display())]
    Json {
        /// The file that was to be written.
        path: PathBuf,
        /// The underlying error.
        source: serde_json::Error,
    },
    /// The plotting library failed to draw a chart.
    #[error("cannot draw plot {}: {message}", path.display())]
    Plot {
        /// The file that was to be written.
        path: PathBuf,
        /// What the plotting library said.
        message: String,
    },
}

/// Jain's fairness index `(Σx)² / (n · Σx²)` of the values `x`.
///
/// It is 1 when all values are equal and `1/n` when one value takes everything. By
/// definition here it is also 1 for an empty slice (nobody is treated unfairly) and for
/// all-zero values (everybody got the same, nothing). Callers pass non-negative values;
/// for weighted fairness they pass throughput divided by weight.
///
/// ```
/// assert_eq!(sluice_metrics::jain_index(&[1.0, 1.0, 1.0]), 1.0);
/// assert_eq!(sluice_metrics::jain_index(&[1.0, 0.0]), 0.5);
/// ```
pub fn jain_index(x: &[f64]) -> f64 {
    if x.is_empty() {
        return 1.0;
    }
    let sum: f64 = x.iter().sum();
    let sum_sq: f64 = x.iter().map(|v| v * v).sum();
    if sum_sq == 0.0 {
        return 1.0;
    }
    sum * sum / (x.len() as f64 * sum_sq)
}

#[cfg(test)]
mod tests;
