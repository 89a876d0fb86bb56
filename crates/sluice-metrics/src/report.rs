//! The report types and their JSON form.

use crate::MetricsError;
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use sluice_core::IoClass;
use std::io::Write as _;
use std::path::Path;

/// fio's default completion-latency percentile list.
pub const FIO_PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

/// The results of one run under one policy.
#[derive(Clone, Debug, Serialize)]
pub struct RunReport {
    /// The scheduling policy's name.
    pub policy: String,
    /// Length of the measurement window (end minus window start), ns.
    pub duration_ns: u64,
    /// One entry per job, in job order.
    pub jobs: Vec<JobReport>,
    /// One entry per flow, in flow order.
    pub flows: Vec<FlowReport>,
    /// One entry per I/O class that a job uses or that completed I/O, most urgent first.
    pub classes: Vec<ClassReport>,
    /// Fairness among the active flows.
    pub fairness: Fairness,
    /// Bandwidth over time per flow.
    pub bw_series: BwSeries,
    /// What the run reports beyond fio's fields (block layer, policy counters, the
    /// engine's facts); the collector leaves it at its default for the engine to fill.
    pub extra: crate::Extra,
    /// fio's log files the jobs asked for (written by the command, not in the JSON).
    #[serde(skip)]
    pub logs: Vec<crate::FioLogFile>,
}

/// One job's results, in fio's shape.
#[derive(Clone, Debug, Serialize)]
pub struct JobReport {
    /// The job's name.
    pub jobname: String,
    /// The name of the job's flow.
    pub flow: String,
    /// The job's I/O class.
    pub class: IoClass,
    /// Threads (fio `numjobs`) that issued the job's I/O.
    pub threads: u32,
    /// The job's runtime: from its window start to its end, ns.
    pub runtime_ns: u64,
    /// Reads.
    pub read: DirReport,
    /// Writes.
    pub write: DirReport,
    /// Flushes (fio's `sync` section; `io_bytes` is 0).
    pub sync: DirReport,
    /// Trims: sluice issues none; present and empty, as in fio's JSON (tools that read
    /// fio's json+ look for all of read, write and trim).
    pub trim: DirReport,
    /// fio's steady-state detection, for a job with `ss_dur`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steadystate: Option<SteadyReport>,
    /// Failed I/Os (failed samples plus [`crate::Collector::record_error`] calls).
    pub error: u64,
}

impl RunReport {
    /// Remove fio's json+ bins (`clat_ns.bins`) from every job: the JSON then is fio's
    /// plain `json` shape.
    pub fn drop_bins(&mut self) {
        for j in &mut self.jobs {
            for d in [&mut j.read, &mut j.write, &mut j.sync] {
                d.clat_ns.bins = None;
            }
        }
    }
}

/// The outcome of a job's steady-state detection.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SteadyReport {
    /// The criterion and limit, fio's way (`iops_slope:0.01%`).
    pub ss: String,
    /// The window, ms.
    pub duration_ms: u64,
    /// Whether the job became steady (and so ended early).
    pub attained: bool,
    /// When, ms since the job's start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attained_ms: Option<u64>,
    /// The criterion's value then (percent of the mean with a `%` limit).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub criterion: Option<f64>,
    /// The window's mean rate then (IOPS or bytes/s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean: Option<f64>,
}

impl SteadyReport {
    /// The report of a tracker.
    pub fn of(t: &sluice_workload::SteadyTrack) -> SteadyReport {
        SteadyReport {
            ss: t.spec().describe(),
            duration_ms: t.spec().dur_ns / 1_000_000,
            attained: t.attained.is_some(),
            attained_ms: t.attained.map(|a| a.0 / 1_000_000),
            criterion: t.attained.map(|a| (a.1.criterion * 1e6).round() / 1e6),
            mean: t.attained.map(|a| (a.1.mean * 1e3).round() / 1e3),
        }
    }
}

impl JobReport {
    /// The read, write and sync sections with their names.
    pub fn dirs(&self) -> [(&'static str, &DirReport); 3] {
        [
            ("read", &self.read),
            ("write", &self.write),
            ("sync", &self.sync),
        ]
    }
}

/// One direction (read, write or sync) of one job, with fio's field names.
#[derive(Clone, Debug, Default, Serialize)]
pub struct DirReport {
    /// Bytes transferred.
    pub io_bytes: u64,
    /// KiB transferred (rounded down).
    pub io_kbytes: u64,
    /// Bandwidth, bytes/s.
    pub bw_bytes: u64,
    /// Bandwidth, KiB/s (fio's `bw`).
    pub bw: u64,
    /// I/Os per second.
    pub iops: f64,
    /// The job's runtime, ms.
    pub runtime: u64,
    /// Completed I/Os.
    pub total_ios: u64,
    /// Completion latency as the application saw it: reaped − submit.
    pub clat_ns: LatReport,
    /// Time queued in the scheduler: dispatch − submit.
    pub sched_ns: LatReport,
    /// Time on the device: device_done − dispatch.
    pub device_ns: LatReport,
    /// Time after the device until reaped: reaped − device_done.
    pub post_ns: LatReport,
    /// Completion-latency CCDF for plots: `(latency ns, fraction of I/Os slower)`.
    #[serde(skip)]
    pub clat_ccdf: Vec<(u64, f64)>,
}

/// Latency statistics in ns. Mean, min, max and stddev are exact; percentiles come from an
/// HdrHistogram with 3 significant digits (absent when the part keeps no histogram or
/// nothing was recorded, as in fio).
#[derive(Clone, Debug, Default, Serialize)]
pub struct LatReport {
    /// Smallest value (0 when empty).
    pub min: u64,
    /// Largest value.
    pub max: u64,
    /// Mean.
    pub mean: f64,
    /// Sample standard deviation.
    pub stddev: f64,
    /// Number of values.
    #[serde(rename = "N")]
    pub n: u64,
    /// Percentiles, keyed like fio (`"99.900000"`).
    #[serde(skip_serializing_if = "Percentiles::is_empty")]
    pub percentile: Percentiles,
    /// fio's json+ bins (`clat_ns` of a job's direction only): bucket value (ns) →
    /// count, see [`crate::fioplus`]. Written only with `--output-format=json+`
    /// ([`RunReport::drop_bins`] removes them otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bins: Option<std::collections::BTreeMap<u64, u64>>,
}

/// `(percentile, value)` pairs in fio's order; serialises as a JSON object whose keys are
/// the percentiles with six decimals (`"1.000000"`, …, `"99.990000"`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Percentiles(pub Vec<(f64, u64)>);

impl Percentiles {
    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The value at percentile `p` (one of [`FIO_PERCENTILES`]).
    pub fn get(&self, p: f64) -> Option<u64> {
        self.0.iter().find(|(q, _)| *q == p).map(|&(_, v)| v)
    }

    /// fio's key for percentile `p`.
    pub fn key(p: f64) -> String {
        format!("{p:.6}")
    }
}

impl Serialize for Percentiles {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (p, v) in &self.0 {
            m.serialize_entry(&Percentiles::key(*p), v)?;
        }
        m.end()
    }
}

/// One flow's service.
#[derive(Clone, Debug, Serialize)]
pub struct FlowReport {
    /// The flow's name.
    pub name: String,
    /// Its weight.
    pub weight: u32,
    /// Whether it completed any I/O in the window.
    pub active: bool,
    /// All its jobs are critical: left out of the shares and the fairness index.
    pub latency_only: bool,
    /// Completed I/Os.
    pub ios: u64,
    /// Bytes transferred.
    pub io_bytes: u64,
    /// I/Os per second over the run's duration.
    pub iops: f64,
    /// Bytes per second over the run's duration.
    pub bw_bytes: u64,
    /// Its fraction of the bytes served to the flows that share by weight (of all bytes
    /// for a latency-only flow).
    pub share: f64,
    /// Its weight over the total weight of the active flows (0 when inactive).
    pub weight_share: f64,
    /// `share / weight_share − 1` (0 when inactive).
    pub share_error: f64,
}

/// Fairness among the active flows.
#[derive(Clone, Debug, Serialize)]
pub struct Fairness {
    /// Jain's index over the active flows' `bw / weight`.
    pub jain_index: f64,
    /// Number of active flows.
    pub active_flows: usize,
    /// Largest `|share_error|` of an active flow.
    pub max_abs_share_error: f64,
}

/// Latency of one I/O class, so critical and other I/O can be compared.
#[derive(Clone, Debug, Serialize)]
pub struct ClassReport {
    /// The class.
    pub class: IoClass,
    /// Completed I/Os.
    pub ios: u64,
    /// Bytes transferred.
    pub io_bytes: u64,
    /// I/Os per second over the run's duration.
    pub iops: f64,
    /// Bytes per second over the run's duration.
    pub bw_bytes: u64,
    /// Completion latency (with percentiles).
    pub clat_ns: LatReport,
    /// Time queued in the scheduler (no percentiles).
    pub sched_ns: LatReport,
    /// Time on the device (no percentiles).
    pub device_ns: LatReport,
    /// Time after the device (no percentiles).
    pub post_ns: LatReport,
    /// Time waiting for admission (admit − submit; part of `sched_ns`), with percentiles.
    pub admit_wait_ns: LatReport,
    /// Completion-latency CCDF for plots: `(latency ns, fraction of I/Os slower)`.
    #[serde(skip)]
    pub clat_ccdf: Vec<(u64, f64)>,
}

/// Bandwidth over time: bin `i` covers `start_ns + i·interval_ns` onwards. The last bin is
/// divided by the part of it inside the run.
#[derive(Clone, Debug, Serialize)]
pub struct BwSeries {
    /// Bin width, ns.
    pub interval_ns: u64,
    /// Start of the first bin (the window start), ns.
    pub start_ns: u64,
    /// One series per flow, in flow order.
    pub flows: Vec<FlowSeries>,
}

/// One flow's bandwidth over time.
#[derive(Clone, Debug, Serialize)]
pub struct FlowSeries {
    /// The flow's name.
    pub name: String,
    /// Bytes/s in each bin.
    pub bw_bytes: Vec<u64>,
}

#[derive(Serialize)]
struct Runs<'a> {
    runs: &'a [RunReport],
}

/// The JSON of the runs: one run is the run object itself; zero or several are
/// `{"runs": [...]}`, each with its `"policy"`.
///
/// A [`serde_json::Value`] sorts object keys; [`write_json`] keeps the declared field
/// order instead.
pub fn to_json(runs: &[RunReport]) -> serde_json::Value {
    let v = if runs.len() == 1 {
        serde_json::to_value(&runs[0])
    } else {
        serde_json::to_value(Runs { runs })
    };
    v.expect("reports serialise (string keys, finite or null numbers)")
}

/// [`to_json`]'s document, pretty-printed in fio's field order.
pub fn json_bytes(runs: &[RunReport]) -> Result<Vec<u8>, serde_json::Error> {
    if runs.len() == 1 {
        serde_json::to_vec_pretty(&runs[0])
    } else {
        serde_json::to_vec_pretty(&Runs { runs })
    }
}

/// Write [`to_json`]'s document, pretty-printed in fio's field order, to `path`.
pub fn write_json(runs: &[RunReport], path: &Path) -> Result<(), MetricsError> {
    let json = if runs.len() == 1 {
        serde_json::to_vec_pretty(&runs[0])
    } else {
        serde_json::to_vec_pretty(&Runs { runs })
    }
    .map_err(|source| MetricsError::Json {
        path: path.to_path_buf(),
        source,
    })?;
    let write_err = |source| MetricsError::Write {
        path: path.to_path_buf(),
        source,
    };
    // A temporary file beside it, renamed over it once whole: a full file system (or a
    // crash) leaves the previous report as it was, never an empty or cut one.
    let name = path
        .file_name()
        .map_or_else(|| "report".into(), |n| n.to_string_lossy().into_owned());
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let written = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(&json)?;
        f.write_all(b"\n")?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(write_err(e));
    }
    Ok(())
}
