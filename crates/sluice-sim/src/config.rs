//! A simulation's settings, its errors and what it returns.

use sluice_core::Nanos;
use sluice_device::FaultConfig;
use sluice_metrics::RunReport;
use sluice_workload::FlowConflict;

/// Simulation settings that are not part of the job file.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// Seed of every random stream (combined with each job's `randseed` and thread).
    pub seed: u64,
    /// Host cores: threads are placed on cores round robin, and each core has its own
    /// submission/completion queue pairs (one per queue class) on the device.
    pub cores: u16,
    /// Width of one bandwidth-over-time bin; `None` picks about 1/100 of the expected
    /// run length (at least 1 ms).
    pub interval_ns: Option<Nanos>,
    /// Hard cap on simulated time, a guard against a job that would never end.
    pub max_sim_ns: Nanos,
    /// Seeded command faults of the simulated device (media errors, timeouts); none by
    /// default. Drawn from the run's seed unless the configuration names its own.
    pub faults: FaultConfig,
    /// Set (e.g. by a Ctrl-C handler) to end every job now and report what was measured
    /// so far; looked at every 65 536 events.
    pub stop: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// The page cache of buffered jobs (`direct=0`): its size, dirty limits and
    /// writeback (used only when a job is buffered).
    pub page_cache: sluice_fio::front::FrontConfig,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            seed: 1,
            cores: 8,
            interval_ns: None,
            max_sim_ns: 24 * 3600 * 1_000_000_000,
            faults: FaultConfig::none(),
            stop: None,
            page_cache: sluice_fio::front::FrontConfig::default(),
        }
    }
}

/// Why a simulation could not run.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SimError {
    /// The job list was empty.
    #[error("no jobs to run")]
    NoJobs,
    /// `cores` was zero.
    #[error("--cores must be at least 1")]
    NoCores,
    /// Two jobs name the same flow with different weights.
    #[error("{0}")]
    WeightConflict(#[from] FlowConflict),
    /// More threads than the simulator can index.
    #[error("too many threads ({0}); at most 65535 over all jobs")]
    TooManyThreads(u64),
    /// A buffered job cannot run through the page cache as configured.
    #[error("{0}")]
    PageCache(String),
    /// `zonemode=zbd` jobs and the device do not fit (no zones, another zone size, …).
    #[error("{0}")]
    Zones(String),
    /// Jobs ask for an NVMe feature the device lacks: `fdp=1` (no FDP, a placement ID
    /// index past its reclaim unit handles), metadata or protection information.
    #[error("{0}")]
    Placement(String),
    /// `atomic=1` jobs and the device's atomic write unit do not fit (a write size
    /// over `controller.atomic_write_bytes`).
    #[error("{0}")]
    Atomic(String),
    /// `fill_device` jobs and the device do not fit (no room, a file past the end).
    #[error("{0}")]
    Fill(String),
    /// The run is larger than sluice's limits (docs/limits.md).
    #[error("{0}")]
    Limit(#[from] sluice_workload::LimitError),
    /// Requests are outstanding but nothing can happen any more: a policy holds
    /// requests without dispatching them and without asking for a timer.
    #[error(
        "simulation stalled at {now_ns} ns: {queued} request(s) held by policy '{policy}', \
         {waiting} waiting for admission, nothing in flight and no timer — a policy bug"
    )]
    Stalled {
        /// Virtual time.
        now_ns: Nanos,
        /// Policy name.
        policy: String,
        /// Requests the policy holds.
        queued: usize,
        /// Requests refused admission.
        waiting: usize,
    },
    /// The run reached `max_sim_ns`.
    #[error(
        "simulated time reached its cap of {cap_ns} ns (SimConfig::max_sim_ns, one day by \
         default) while {jobs} still ran: {cause} (embedders can raise the cap)"
    )]
    TimeCap {
        /// The cap.
        cap_ns: Nanos,
        /// The jobs still running, named.
        jobs: String,
        /// Why they still ran and what to change, from their options
        /// ([`crate::estimate::time_cap_cause`]).
        cause: String,
    },
}

/// Little's law check over the whole run: L (time-average number of requests in the
/// system, integrated event by event) against λ·W (completed requests per time × their
/// mean latency, plus the residence of requests still in flight at the end).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LittleCheck {
    /// Time-average number of requests in the system.
    pub l: f64,
    /// Arrival rate times mean time in system, from the per-request latencies.
    pub lambda_w: f64,
    /// |L − λW| / L (0 when L is 0).
    pub rel_error: f64,
}

/// Facts about the simulation itself.
#[derive(Clone, Debug, PartialEq)]
pub struct SimStats {
    /// Events processed (loop iterations).
    pub events: u64,
    /// Requests completed (all jobs, inside and outside the measurement window).
    pub ios: u64,
    /// Simulated time at the end.
    pub sim_ns: Nanos,
    /// Little's law check.
    pub little: LittleCheck,
    /// Commands the device's controller fetched per queue class (urgent, high, medium, low).
    pub fetched_per_class: [u64; 4],
    /// The run was stopped early ([`SimConfig::stop`]); the report covers what ran.
    pub interrupted: bool,
    /// A zoned device's zones at the end (`None` for a conventional device).
    pub zones: Option<ZoneStats>,
}

/// A zoned device's zones at the end of a run.
#[derive(Clone, Debug, PartialEq)]
pub struct ZoneStats {
    /// Each zone's write pointer, relative to the zone's start.
    pub write_pointers: Vec<u64>,
    /// Zones the device reset (a trim of whole zones).
    pub resets: u64,
    /// Of those, the resets zbd jobs' threads sent themselves (full zones,
    /// `zone_reset_threshold`), not their trims.
    pub runner_resets: u64,
    /// Commands the device refused (a write off the write pointer, …).
    pub errors: u64,
    /// Zones the device closed to open another.
    pub implicit_closes: u64,
    /// The most zones open, and active, at once.
    pub peak_open: u32,
    /// See `peak_open`.
    pub peak_active: u32,
}

/// The result of one run.
#[derive(Debug)]
pub struct SimOutput {
    /// The report (jobs, flows, classes, fairness, device facts in `extra`).
    pub report: RunReport,
    /// Facts about the simulation.
    pub stats: SimStats,
}
