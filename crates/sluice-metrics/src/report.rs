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
    /// One report per job section, in job order, its `numjobs` threads summed (what
    /// sluice's own experiments and sweeps read by job name).
    #[serde(skip)]
    pub jobs: Vec<JobReport>,
    /// fio's report entries, in job order (in the JSON document they are fio's
    /// top-level `jobs`, each with its run's `policy`, not repeated in the run's
    /// object; the tables and terse lines show them too): each thread of a job with
    /// `numjobs` > 1 is an entry of its own (the job's name and `groupid`), unless
    /// `group_reporting` merges the jobs of a reporting group (`stonewall`, `new_group`)
    /// into one entry with the first job's name. A run without either has the same
    /// entries as `jobs`.
    #[serde(skip)]
    pub entries: Vec<JobReport>,
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
    /// The `[global]` options as written (fio's `global options`).
    #[serde(skip)]
    pub global_options: Vec<(String, String)>,
    /// When the run started, ms since the Unix epoch (fio's `timestamp_ms`): the wall
    /// clock on a real run; 0 in the simulator, whose output depends on its inputs only.
    #[serde(skip)]
    pub started_unix_ms: u64,
}

/// One job's results, in fio's shape (the JSON document adds `jobname`, `groupid` and
/// `policy` in front, see [`json_bytes`]).
#[derive(Clone, Debug, Serialize)]
pub struct JobReport {
    /// The job's name.
    #[serde(skip)]
    pub jobname: String,
    /// fio's `error`: the errno that ended one of the entry's threads, else (with
    /// `continue_on_error`) the first one it went on after; 0 for none
    /// ([`crate::errors`]).
    pub error: i32,
    /// fio's `eta`: seconds of the job left when the report was written — 0, sluice
    /// reports when the job is over.
    pub eta: u64,
    /// fio's `elapsed`: seconds from the job's start to its end, rounded up (its
    /// measured window; `ramp_time` excluded).
    pub elapsed: u64,
    /// fio's `desc`: the job's `description`, when it has one.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub desc: String,
    /// The job section's own options as written (fio's `job options`).
    #[serde(rename = "job options", serialize_with = "options_map")]
    pub job_options: Vec<(String, String)>,
    /// Reads.
    pub read: DirReport,
    /// Writes.
    pub write: DirReport,
    /// Trims (`rw=trim`, `randtrim`, `trimwrite`, `randtrimwrite`); present and empty
    /// for a job without trims, as in fio's JSON (tools that read fio's json+ look for
    /// all of read, write and trim).
    pub trim: DirReport,
    /// Flushes (fio's `sync` section; `io_bytes` is 0).
    pub sync: DirReport,
    /// The job's runtime, ms (fio's `job_runtime`).
    pub job_runtime: u64,
    /// User CPU, percent of the runtime (fio's `usr_cpu`): `sluice run` fills it from
    /// `getrusage` of the whole process (its threads serve every job); 0 in the
    /// simulator, which models no host CPU.
    pub usr_cpu: f64,
    /// System CPU, percent of the runtime, as `usr_cpu`.
    pub sys_cpu: f64,
    /// Context switches (voluntary and involuntary), as `usr_cpu`.
    pub ctx: u64,
    /// Major page faults, as `usr_cpu`.
    pub majf: u64,
    /// Minor page faults, as `usr_cpu`.
    pub minf: u64,
    /// fio's `iodepth_level`: percent of the job's I/Os issued at each depth
    /// ([`crate::IoDepths`]).
    pub iodepth_level: LatBuckets,
    /// fio's `iodepth_submit`: percent of submissions by the I/Os they carried.
    pub iodepth_submit: LatBuckets,
    /// fio's `iodepth_complete`: percent of reapings by the I/Os they reaped.
    pub iodepth_complete: LatBuckets,
    /// fio's `latency_ns`: percent of the job's I/Os whose completion latency
    /// (`clat`) fell in each bucket below 1 µs (keys: upper bounds in ns).
    pub latency_ns: LatBuckets,
    /// fio's `latency_us`: the same from 1 µs to 1 ms (keys in µs).
    pub latency_us: LatBuckets,
    /// fio's `latency_ms`: the same from 1 ms (keys in ms, the last `>=2000`).
    pub latency_ms: LatBuckets,
    /// fio's `total_err`: the errors the entry's threads went on after; present, as
    /// in fio, only for a job with `continue_on_error`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_err: Option<u64>,
    /// fio's `first_error`: the errno of the first of them (0: none); present with
    /// `total_err`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_error: Option<i32>,
    /// The errno that ended one of the entry's threads, 0 for none (fio's thread
    /// `error`; fio's exit status counts the threads that have one).
    #[serde(skip)]
    pub thread_error: i32,
    /// fio's `latency_depth`, `latency_target`, `latency_percentile`,
    /// `latency_window`.
    #[serde(flatten)]
    pub latency: crate::LatencyTarget,
    /// The job's reporting group (`stonewall` or `new_group` starts one; the document's
    /// `groupid` adds the groups of the runs before).
    #[serde(skip)]
    pub group: usize,
    /// The name of the job's flow.
    pub flow: String,
    /// The job's I/O class.
    pub class: IoClass,
    /// Threads (fio `numjobs`) that issued the job's I/O.
    pub threads: u32,
    /// sluice's own count: every failed I/O and failed check of the entry, continued
    /// or not (fio counts the continued ones only, in `total_err`).
    pub failed_ios: u64,
    /// The job's runtime: from its window start to its end, ns.
    pub runtime_ns: u64,
    /// fio's steady-state detection, for a job with `ss_dur`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steadystate: Option<SteadyReport>,
}

fn options_map<S: Serializer>(opts: &[(String, String)], s: S) -> Result<S::Ok, S::Error> {
    let mut m = s.serialize_map(Some(opts.len()))?;
    for (k, v) in opts {
        m.serialize_entry(k, v)?;
    }
    m.end()
}

/// fio's latency buckets of one job (`latency_ns`, `latency_us` or `latency_ms`): the
/// percent of its I/Os in each, keyed by the bucket's upper bound as fio writes it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LatBuckets(pub Vec<(&'static str, f64)>);

impl LatBuckets {
    /// Each of `counts` as a percentage of `total` (0 when `total` is 0), keyed by
    /// `names` in order.
    pub(crate) fn percent(names: &[&'static str], counts: &[u64], total: u64) -> LatBuckets {
        LatBuckets(
            names
                .iter()
                .zip(counts)
                .map(|(n, &c)| {
                    let p = if total > 0 {
                        c as f64 * 100.0 / total as f64
                    } else {
                        0.0
                    };
                    (*n, p)
                })
                .collect(),
        )
    }
}

impl Serialize for LatBuckets {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

impl RunReport {
    /// Remove fio's json+ bins (`clat_ns.bins`) from every job: the JSON then is fio's
    /// plain `json` shape.
    pub fn drop_bins(&mut self) {
        for j in self.jobs.iter_mut().chain(&mut self.entries) {
            for d in [&mut j.read, &mut j.write, &mut j.trim, &mut j.sync] {
                d.clat_ns.bins = None;
                d.lat_ns.bins = None;
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
    /// The read, write, trim and sync sections with their names.
    pub fn dirs(&self) -> [(&'static str, &DirReport); 4] {
        [
            ("read", &self.read),
            ("write", &self.write),
            ("trim", &self.trim),
            ("sync", &self.sync),
        ]
    }
}

/// One direction (read, write, trim or sync) of one job, with fio's field names.
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
    /// fio's short I/Os: sluice completes every I/O whole (0).
    pub short_ios: u64,
    /// fio's dropped I/Os (0).
    pub drop_ios: u64,
    /// fio's submission latency: submit → dispatch to the device (the time the request
    /// spent in sluice's block layer; equal to `sched_ns`), no percentiles.
    pub slat_ns: LatReport,
    /// fio's completion latency: dispatch → reaped (on the device and after it; equal
    /// to `device_ns` + `post_ns`), with fio's percentiles (and json+'s `bins`).
    pub clat_ns: LatReport,
    /// fio's total latency: submit → reaped, what the application saw (`slat + clat`),
    /// with percentiles (as fio's `lat_percentiles=1`): the latency sluice's tables show.
    pub lat_ns: LatReport,
    /// Smallest bandwidth over the samples, KiB/s (fio's `bw_min`; a sample is one
    /// bandwidth bin of the run, `bw_series.interval_ns`, wholly inside the job's window).
    pub bw_min: u64,
    /// Largest sampled bandwidth, KiB/s.
    pub bw_max: u64,
    /// This job's part of all the jobs' bandwidth in this direction, percent (fio's
    /// `bw_agg`).
    pub bw_agg: f64,
    /// Mean sampled bandwidth, KiB/s.
    pub bw_mean: f64,
    /// Sample standard deviation of the sampled bandwidth, KiB/s.
    pub bw_dev: f64,
    /// Number of bandwidth samples.
    pub bw_samples: u64,
    /// Smallest sampled IOPS.
    pub iops_min: u64,
    /// Largest sampled IOPS.
    pub iops_max: u64,
    /// Mean sampled IOPS.
    pub iops_mean: f64,
    /// Sample standard deviation of the sampled IOPS.
    pub iops_stddev: f64,
    /// Number of IOPS samples.
    pub iops_samples: u64,
    /// sluice's breakdown — time queued in the scheduler: dispatch − submit.
    pub sched_ns: LatReport,
    /// Time on the device: device_done − dispatch.
    pub device_ns: LatReport,
    /// Time after the device until reaped: reaped − device_done.
    pub post_ns: LatReport,
    /// Total-latency (`lat_ns`) CCDF for plots: `(latency ns, fraction of I/Os slower)`.
    #[serde(skip)]
    pub lat_ccdf: Vec<(u64, f64)>,
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
    /// Its fraction of the bytes served to the flows that share by weight (those add up
    /// to 1); 0 for a latency-only flow, which takes no part in the sharing.
    pub share: f64,
    /// Its fraction of all bytes served (every flow, latency-only ones included).
    pub bytes_fraction: f64,
    /// Its weight over the total weight of the active flows (0 when inactive).
    pub weight_share: f64,
    /// `share / weight_share − 1` (0 when inactive).
    pub share_error: f64,
}

/// Fairness among the active flows.
#[derive(Clone, Debug, Serialize)]
pub struct Fairness {
    /// Jain's index over the active sharing flows' `bw / weight` (1 by definition with
    /// fewer than two, where it says nothing: the table leaves it out).
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
    /// Total latency, submit → reaped (with percentiles).
    pub lat_ns: LatReport,
    /// Time queued in the scheduler (no percentiles).
    pub sched_ns: LatReport,
    /// Time on the device (no percentiles).
    pub device_ns: LatReport,
    /// Time after the device (no percentiles).
    pub post_ns: LatReport,
    /// Time waiting for admission (admit − submit; part of `sched_ns`), with percentiles.
    pub admit_wait_ns: LatReport,
    /// Total-latency CCDF for plots: `(latency ns, fraction of I/Os slower)`.
    #[serde(skip)]
    pub lat_ccdf: Vec<(u64, f64)>,
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

/// One job of the document: fio's `jobname` and `groupid` (the job's reporting group;
/// each policy's run numbers its groups after the runs before it) and the run's
/// `policy`, then the job's report.
#[derive(Serialize)]
struct JobEntry<'a> {
    jobname: &'a str,
    groupid: usize,
    policy: &'a str,
    #[serde(flatten)]
    job: &'a JobReport,
}

/// The JSON document: fio's top level, then sluice's runs.
#[derive(Serialize)]
struct Document<'a> {
    #[serde(rename = "fio version")]
    fio_version: String,
    timestamp: u64,
    timestamp_ms: u64,
    time: String,
    #[serde(rename = "global options", serialize_with = "options_map")]
    global_options: &'a [(String, String)],
    jobs: Vec<JobEntry<'a>>,
    runs: &'a [RunReport],
}

/// The version sluice writes as fio's `fio version`.
pub const VERSION: &str = concat!("sluice-", env!("CARGO_PKG_VERSION"));

fn document(runs: &[RunReport]) -> Document<'_> {
    let started = runs.first().map_or(0, |r| r.started_unix_ms);
    Document {
        fio_version: VERSION.to_string(),
        timestamp: started / 1000,
        timestamp_ms: started,
        time: ctime_utc(started / 1000),
        global_options: runs.first().map_or(&[][..], |r| &r.global_options[..]),
        jobs: runs
            .iter()
            .scan(0, |first, r| {
                let base = *first;
                *first += r.entries.iter().map(|j| j.group + 1).max().unwrap_or(1);
                Some((base, r))
            })
            .flat_map(|(base, r)| {
                r.entries.iter().map(move |j| JobEntry {
                    jobname: &j.jobname,
                    groupid: base + j.group,
                    policy: &r.policy,
                    job: j,
                })
            })
            .collect(),
        runs,
    }
}

/// `secs` since the Unix epoch as C's `ctime` writes it, in UTC and without the
/// newline (fio's `time`): `Thu Jan  1 00:00:00 1970`.
pub fn ctime_utc(secs: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = secs / 86_400;
    let rem = secs % 86_400;
    // Howard Hinnant's civil_from_days: days since 1970-01-01 → (year, month, day).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{} {} {:>2} {:02}:{:02}:{:02} {}",
        DAYS[(days % 7) as usize],
        MONTHS[(month - 1) as usize],
        day,
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        year
    )
}

/// The JSON document of the runs, one shape whatever their number: fio's top-level
/// fields (`fio version`, `timestamp`, `timestamp_ms`, `time`, `global options`), fio's
/// `jobs` — every job of every run, each with its run's `policy` and `groupid` (the
/// run's index) —, then `runs`: per policy, sluice's own figures (`policy`,
/// `duration_ns`, `flows`, `classes`, `fairness`, `bw_series`, `extra`).
///
/// A [`serde_json::Value`] sorts object keys; [`write_json`] keeps the declared field
/// order instead.
pub fn to_json(runs: &[RunReport]) -> serde_json::Value {
    serde_json::to_value(document(runs))
        .expect("reports serialise (string keys, finite or null numbers)")
}

/// [`to_json`]'s document, pretty-printed in fio's field order.
pub fn json_bytes(runs: &[RunReport]) -> Result<Vec<u8>, serde_json::Error> {
    serde_json::to_vec_pretty(&document(runs))
}

/// Write [`to_json`]'s document, pretty-printed in fio's field order, to `path`.
pub fn write_json(runs: &[RunReport], path: &Path) -> Result<(), MetricsError> {
    let json = json_bytes(runs).map_err(|source| MetricsError::Json {
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
