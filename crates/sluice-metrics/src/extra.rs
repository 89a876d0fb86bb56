//! [`Extra`]: what a run reports beyond fio's fields, typed.
//!
//! Every figure is a field of a struct (the block layer's [`BlockStats`], the policy's
//! counters keyed by [`Counter`], the simulator's and the real engine's facts), so a
//! renamed figure is a compile error in every reader (the repro suites, the tests),
//! not a silent zero. In JSON the fields keep their flat names under `extra`
//! (`extra.policy.hl_ratio`, `extra.policy_series.t_ns`, `extra.sim_ns`, …).

use std::collections::BTreeMap;

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use sluice_block::{BlockStats, CounterSeries};
use sluice_core::policy::Counter;
use sluice_core::{Nanos, QueueClass};

use crate::fios::FiosFigures;

/// Round to 6 decimals (figures in JSON).
pub(crate) fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

/// What a run reports beyond fio's fields (`RunReport::extra`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Extra {
    /// The world that ran it: `sim` or `io_uring` (empty until an engine fills it).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub engine: String,
    /// The run's seed.
    pub seed: u64,
    /// The block layer's figures.
    pub block: BlockStats,
    /// The policy's counters at the end (none for a policy without counters).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<PolicyCounters>,
    /// The policy's counters once per bandwidth interval.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy_series: Option<PolicySeries>,
    /// The simulator's facts.
    #[serde(flatten)]
    pub sim: Option<SimFacts>,
    /// The real engine's facts.
    #[serde(flatten)]
    pub real: Option<RealFacts>,
    /// The application runtime's facts (a run of `sluice_runtime::Stack`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime: Option<RuntimeFacts>,
    /// FIOS's slowdowns against alone-runs (`sluice sim --alone`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fios: Option<FiosFigures>,
    /// The page cache of buffered fio jobs (`direct=0`), when a job was buffered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page_cache: Option<sluice_cache::FrontStats>,
}

impl Extra {
    /// The figures every world reports from its block layer: its stats, the policy's
    /// final counters and their series (the world fills in its own facts).
    pub fn from_block<M: sluice_block::Meter>(
        engine: &str,
        seed: u64,
        block: &sluice_block::BlockLayer<M>,
    ) -> Extra {
        Extra {
            engine: engine.to_string(),
            seed,
            block: *block.stats(),
            policy: block
                .has_counters()
                .then(|| PolicyCounters(block.policy().counters())),
            policy_series: block
                .has_counters()
                .then(|| PolicySeries::from(block.series())),
            ..Extra::default()
        }
    }

    /// The policy's final value of counter `c`, if it reports it.
    pub fn counter(&self, c: Counter) -> Option<f64> {
        self.policy.as_ref()?.get(c)
    }

    /// Counter `c` over time, if the policy reports it.
    pub fn series(&self, c: Counter) -> Option<&[f64]> {
        self.policy_series.as_ref()?.column(c)
    }
}

/// A policy's counters (JSON: an object of `name: value`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PolicyCounters(pub Vec<(Counter, f64)>);

impl PolicyCounters {
    /// The value of `c`.
    pub fn get(&self, c: Counter) -> Option<f64> {
        self.0.iter().find(|(k, _)| *k == c).map(|(_, v)| *v)
    }
}

impl Serialize for PolicyCounters {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (c, v) in &self.0 {
            m.serialize_entry(c.name(), &round6(*v))?;
        }
        m.end()
    }
}

/// A policy's counters over time (JSON: `t_ns` and one array per counter).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PolicySeries {
    /// Sample times.
    pub t_ns: Vec<Nanos>,
    /// One column per counter, a value per sample time.
    pub columns: Vec<(Counter, Vec<f64>)>,
}

impl PolicySeries {
    /// Counter `c` over time.
    pub fn column(&self, c: Counter) -> Option<&[f64]> {
        self.columns
            .iter()
            .find(|(k, _)| *k == c)
            .map(|(_, v)| v.as_slice())
    }
}

impl From<&CounterSeries> for PolicySeries {
    fn from(s: &CounterSeries) -> Self {
        PolicySeries {
            t_ns: s.rows.iter().map(|(t, _)| *t).collect(),
            columns: s
                .names
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let col = s.rows.iter().map(|(_, r)| r.get(i).copied().unwrap_or(0.0));
                    (*c, col.collect())
                })
                .collect(),
        }
    }
}

impl Serialize for PolicySeries {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.columns.len() + 1))?;
        m.serialize_entry("t_ns", &self.t_ns)?;
        for (c, v) in &self.columns {
            let v: Vec<f64> = v.iter().map(|x| round6(*x)).collect();
            m.serialize_entry(c.name(), &v)?;
        }
        m.end()
    }
}

/// A count per NVMe queue class (JSON: `{"urgent": n, "high": n, "medium": n, "low": n}`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PerClass(pub [u64; 4]);

impl PerClass {
    /// The count of `q`.
    pub fn get(&self, q: QueueClass) -> u64 {
        self.0[q.index()]
    }
}

impl Serialize for PerClass {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(4))?;
        for q in QueueClass::ALL {
            m.serialize_entry(q.name(), &self.0[q.index()])?;
        }
        m.end()
    }
}

/// The simulator's facts.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SimFacts {
    /// Device profile name.
    pub device: String,
    /// Simulated host cores.
    pub cores: u16,
    /// Simulated time at the end, ns.
    pub sim_ns: Nanos,
    /// Events processed.
    pub sim_events: u64,
    /// Requests completed (inside and outside the measurement windows).
    pub sim_ios: u64,
    /// Commands the controller fetched per queue class.
    pub device_fetched_per_class: PerClass,
    /// The last WRR weights a policy programmed into the device (D2FQ's H/L), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_wrr_weights: Option<[u32; 3]>,
    /// Commands the device failed (seeded media errors and timeouts), if faults are on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_faults: Option<DeviceFaults>,
    /// Flash management on a profile with `[flash]` (write amplification, GC time).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_flash: Option<DeviceFlash>,
    /// The device's atomic write unit, bytes (`controller.atomic_write_bytes`, NVMe
    /// AWUPF), when a job wrote with `atomic=1` (the count is the block layer's
    /// `atomic_writes`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_atomic_write_bytes: Option<u32>,
    /// Little's law: time-average requests in the system.
    pub littles_law_l: f64,
    /// Little's law: λ·W from the per-request latencies.
    pub littles_law_lambda_w: f64,
}

/// Flash management of the simulated device over the run (a profile with `[flash]`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct DeviceFlash {
    /// (host + GC-copied mapping units) / host units programmed; 1 without GC.
    pub write_amplification: f64,
    /// Die time spent in garbage collection (copy-back reads and programs, erases),
    /// summed over dies, ns.
    pub gc_ns: u64,
    /// Blocks erased by garbage collection.
    pub gc_erases: u64,
    /// Bytes copied by garbage collection.
    pub gc_copied_bytes: u64,
    /// Reads served from the write buffer.
    pub buffer_reads: u64,
    /// Bytes of mapped data that trims (deallocates) unmapped (absent without trims).
    #[serde(skip_serializing_if = "is_zero")]
    pub trimmed_bytes: u64,
}

impl DeviceFlash {
    /// The flash-management figures of `device` over its run so far (a profile with
    /// `[flash]`; `None` otherwise), for a report's `extra.device_flash` — one reading
    /// for every client of the simulated device (the simulator, the runtime).
    pub fn of(device: &sluice_device::NvmeSsd) -> Option<DeviceFlash> {
        let f = device.flash_stats()?;
        let map_bytes = device
            .profile()
            .flash
            .as_ref()
            .map_or(0, |c| c.map_bytes as u64);
        Some(DeviceFlash {
            write_amplification: (f.write_amplification() * 1e6).round() / 1e6,
            gc_ns: f.gc_busy_ns,
            gc_erases: f.gc_erases,
            gc_copied_bytes: f.gc_copied_units * map_bytes,
            buffer_reads: f.buffer_reads,
            trimmed_bytes: f.trimmed_units * map_bytes,
        })
    }
}

/// Seeded command faults the simulated device injected.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct DeviceFaults {
    /// Commands that completed with a media error.
    pub media_errors: u64,
    /// Commands that timed out.
    pub timeouts: u64,
}

/// A file of a real run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct FileFact {
    /// Its path.
    pub path: String,
    /// Its size in bytes.
    pub size: u64,
    /// Whether sluice created it.
    pub created: bool,
    /// Whether it is a block device.
    pub device: bool,
    /// Its O_DIRECT alignment, bytes.
    pub align: u64,
}

/// The first I/O error of a job and how many it had.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct IoErrorFact {
    /// The job's name.
    pub job: String,
    /// Failed I/Os.
    pub count: u64,
    /// The first error's description.
    pub first: String,
}

/// What a job's data verification (`verify=`) found on the real engine.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct VerifyFact {
    /// The job's name.
    pub job: String,
    /// `crc32c`, `md5` or `pattern`.
    pub kind: String,
    /// Blocks read and checked.
    pub checked: u64,
    /// Blocks that failed their check.
    pub failed: u64,
    /// The first failure's description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first: Option<String>,
}

/// The time spent inside policy calls on the real engine.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct PolicyTiming {
    /// `tsc` or `clock_monotonic`.
    pub policy_timing_clock: String,
    /// One bracket's cost, ns.
    pub policy_timing_overhead_ns: f64,
    /// Calls longer than `policy_timing_outlier_ns`, left out.
    pub policy_timing_outliers: u64,
    /// The outlier bound, ns.
    pub policy_timing_outlier_ns: u64,
    /// Timed calls.
    pub policy_calls: u64,
    /// ns per completed I/O inside policy calls, the brackets' cost subtracted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy_ns_per_io: Option<f64>,
    /// The same, brackets included.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy_ns_per_io_raw: Option<f64>,
    /// Timed calls per I/O.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy_calls_per_io: Option<f64>,
    /// What the brackets add per I/O, ns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy_timing_cost_ns_per_io: Option<f64>,
    /// `policy_ns_per_io` by call kind.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub policy_ns_per_io_by_call: BTreeMap<String, f64>,
}

/// The real engine's facts.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RealFacts {
    /// Worker threads.
    pub workers: usize,
    /// Entries of each worker's ring.
    pub ring_entries: u32,
    /// Most commands in all rings together.
    pub ring_cap: u32,
    /// Whether every worker registered its buffers.
    pub fixed_buffers: bool,
    /// Where the job files are.
    pub directory: String,
    /// The job files.
    pub files: Vec<FileFact>,
    /// Wall time, ns.
    pub wall_ns: Nanos,
    /// Requests completed.
    pub ios: u64,
    /// `io_uring_enter` calls.
    pub io_uring_enters: u64,
    /// Process CPU time, user, ns.
    pub cpu_user_ns: u64,
    /// Process CPU time, system, ns.
    pub cpu_sys_ns: u64,
    /// Process CPU ns per I/O.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_ns_per_io: Option<f64>,
    /// Stopped early (Ctrl-C).
    pub interrupted: bool,
    /// Time inside policy calls.
    #[serde(flatten)]
    pub timing: PolicyTiming,
    /// Commands the software arbiter sent to the rings per queue class.
    pub arbiter_fetched_per_class: PerClass,
    /// Commands that bypassed the arbiter (nothing staged, room under the cap).
    pub arbiter_fast_path: u64,
    /// The arbiter's WRR weights at the end (the policy's, if it asked for any).
    pub arbiter_wrr_weights: [u32; 3],
    /// Jobs with I/O errors.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub io_errors: Vec<IoErrorFact>,
    /// Jobs with `verify`: what their checks found.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub verify: Vec<VerifyFact>,
}

/// Waits of critical tasks at one site ([`RuntimeFacts::waits`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct WaitSiteFacts {
    /// `stack` (the I/O stack's own locks, conditions and I/O: RCP's kernel level) or
    /// `app` (the application's).
    pub level: String,
    /// `lock`, `condvar`, `join`, `own I/O`, `others' I/O` (a request another task
    /// issued: a page under writeback), `dirty throttle`.
    pub kind: String,
    /// The object's name ("" for unnamed objects, counted together).
    pub name: String,
    /// Waits that ended.
    pub count: u64,
    /// Their total, ns.
    pub total_ns: Nanos,
    /// The longest, ns.
    pub max_ns: Nanos,
}

impl WaitSiteFacts {
    /// The site as one label: `stack lock "page cache"`, `app condvar`.
    pub fn label(&self) -> String {
        match self.name.as_str() {
            "" => format!("{} {}", self.level, self.kind),
            n => format!("{} {} \"{n}\"", self.level, self.kind),
        }
    }

    /// Mean wait, ns.
    pub fn mean_ns(&self) -> f64 {
        self.total_ns as f64 / self.count.max(1) as f64
    }
}

/// The application runtime's facts.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RuntimeFacts {
    /// The wake-up order (`fifo` or `critical`).
    pub wakeup: String,
    /// The inheritance switches (`locks,condvars,io,transitive` or `off`).
    pub inherit: String,
    /// Tasks spawned (the main task included).
    pub tasks: u64,
    /// Task polls.
    pub polls: u64,
    /// Critical tasks woken by their I/O that became their core's `next` (Algorithm 1).
    pub critical_wakeups: u64,
    /// Picks where a core passed over its critical `next` because a queued task had run
    /// the wake-up granularity less CPU (Algorithm 1's starvation guard; simulation).
    pub next_deferred: u64,
    /// Non-critical CPU bursts preempted by such a wake-up.
    pub preemptions: u64,
    /// Times a task started inheriting the critical class.
    pub boosts: u64,
    /// Times an inheritance ended.
    pub boost_ends: u64,
    /// Requests promoted to critical by inheritance.
    pub inherited_promotions: u64,
    /// Real cores: waits in the ring that lasted the whole idle timeout (10 ms) with no
    /// I/O of the core in flight and nothing to run — a core that sat idle while work
    /// may have waited in its batch (0 in a run whose tasks keep their core busy);
    /// written only when not 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub idle_timeouts: u64,
    /// CPU busy time per simulated core, ns.
    pub core_busy_ns: Vec<Nanos>,
    /// The page cache's counters (a stack built with a cache).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache: Option<sluice_cache::CacheStats>,
    /// Where tasks critical by their class waited, by site (RCP Table 2: the longest
    /// and the mean wait of PostgreSQL's backends per kernel wait site); written only
    /// when a critical task waited.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub waits: Vec<WaitSiteFacts>,
    /// Stopped early (Ctrl-C): a program on the stack ended its work at the stop (the
    /// fio runner on the store); written only when set.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
