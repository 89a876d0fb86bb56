//! The parsed form of one job section.

use sluice_core::{IoClass, Nanos, Op};

use crate::steady::SteadySpec;
use crate::verify::VerifySpec;

/// The I/O pattern of a job (fio's `rw`/`readwrite`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RwMode {
    /// `read`: sequential reads.
    Read,
    /// `write`: sequential writes.
    Write,
    /// `randread`: random reads.
    RandRead,
    /// `randwrite`: random writes.
    RandWrite,
    /// `rw` / `readwrite`: sequential mixed reads and writes (split by `rwmixread`).
    ReadWrite,
    /// `randrw`: random mixed reads and writes (split by `rwmixread`).
    RandRw,
    /// `trim`: sequential trims (deallocates).
    Trim,
    /// `randtrim`: random trims.
    RandTrim,
    /// `trimwrite`: fio's trim-then-write sequence: a trim of the trim block size at
    /// the sequential position, then writes of the write block size from that offset
    /// until the trimmed block is rewritten, then the next trim.
    TrimWrite,
    /// `randtrimwrite`: a trim at a random offset, then one write at the same offset
    /// (fio 3.32's "write at same offset as trim"), then the next trim.
    RandTrimWrite,
}

impl RwMode {
    /// Whether offsets are random (otherwise sequential).
    pub fn is_random(self) -> bool {
        matches!(
            self,
            RwMode::RandRead
                | RwMode::RandWrite
                | RwMode::RandRw
                | RwMode::RandTrim
                | RwMode::RandTrimWrite
        )
    }

    /// Whether the job mixes reads and writes by `rwmixread` (fio's trim modes do not:
    /// `trimwrite` alternates by its own rule).
    pub fn is_mixed(self) -> bool {
        matches!(self, RwMode::ReadWrite | RwMode::RandRw)
    }

    /// Whether the job issues reads at all (mixed jobs do unless `rwmixread=0`).
    pub fn reads(self) -> bool {
        matches!(
            self,
            RwMode::Read | RwMode::RandRead | RwMode::ReadWrite | RwMode::RandRw
        )
    }

    /// Whether the job issues writes at all (mixed jobs do unless `rwmixread=100`).
    pub fn writes(self) -> bool {
        !matches!(
            self,
            RwMode::Read | RwMode::RandRead | RwMode::Trim | RwMode::RandTrim
        )
    }

    /// Whether the job issues trims (deallocates).
    pub fn trims(self) -> bool {
        matches!(
            self,
            RwMode::Trim | RwMode::RandTrim | RwMode::TrimWrite | RwMode::RandTrimWrite
        )
    }

    /// fio's name for the mode.
    pub fn name(self) -> &'static str {
        match self {
            RwMode::Read => "read",
            RwMode::Write => "write",
            RwMode::RandRead => "randread",
            RwMode::RandWrite => "randwrite",
            RwMode::ReadWrite => "rw",
            RwMode::RandRw => "randrw",
            RwMode::Trim => "trim",
            RwMode::RandTrim => "randtrim",
            RwMode::TrimWrite => "trimwrite",
            RwMode::RandTrimWrite => "randtrimwrite",
        }
    }
}

/// fio's `rw=MODE:N` offset modifier.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum RwModifier {
    /// None: sequential I/Os follow each other, random ones are all random.
    #[default]
    None,
    /// A sequential mode's `:N`: N bytes (negative: backwards) added to the end of
    /// each I/O to give the next one's offset (fio's `ddir_seq_add`).
    SeqAdd(i64),
    /// A random mode's `:N`: a new random offset every N I/Os; in between the I/Os
    /// continue sequentially or repeat the offset (`rw_sequencer`; fio's `ddir_seq_nr`).
    RandEvery(u32),
}

/// One row of a `bssplit` table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BsEntry {
    /// Block size in bytes.
    pub len: u32,
    /// Share of I/Os with this size, in parts per million (the shares of one table add
    /// up to exactly 1 000 000). An entry written with an empty percentage gets an equal
    /// part of what the others leave.
    pub ppm: u32,
}

/// The block size(s) of one direction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BlockSize {
    /// Every I/O has this many bytes (`bs`).
    Fixed(u32),
    /// Sizes drawn from a table (`bssplit`); shares add up to 1 000 000 ppm.
    Split(Vec<BsEntry>),
}

impl BlockSize {
    /// Largest size that can be drawn.
    pub fn max_len(&self) -> u32 {
        match self {
            BlockSize::Fixed(n) => *n,
            BlockSize::Split(t) => t.iter().map(|e| e.len).max().unwrap_or(0),
        }
    }

    /// Smallest size that can be drawn (entries with a zero share included).
    pub fn min_len(&self) -> u32 {
        match self {
            BlockSize::Fixed(n) => *n,
            BlockSize::Split(t) => t.iter().map(|e| e.len).min().unwrap_or(0),
        }
    }

    /// Mean size in bytes.
    pub fn mean_len(&self) -> f64 {
        match self {
            BlockSize::Fixed(n) => *n as f64,
            BlockSize::Split(t) => t.iter().map(|e| e.len as f64 * e.ppm as f64 / 1e6).sum(),
        }
    }
}

/// Block sizes per direction (fio's `bs=read,write,trim` / `bssplit=read,write`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockSizes {
    /// Sizes of reads.
    pub read: BlockSize,
    /// Sizes of writes.
    pub write: BlockSize,
    /// Sizes of trims (fio's third `bs` value; only `bs`, not `bssplit`, sets it).
    pub trim: BlockSize,
}

impl BlockSizes {
    /// Both directions with one fixed size.
    pub fn fixed(len: u32) -> BlockSizes {
        BlockSizes {
            read: BlockSize::Fixed(len),
            write: BlockSize::Fixed(len),
            trim: BlockSize::Fixed(len),
        }
    }

    /// The sizes of one direction (a flush uses the write sizes, though generators
    /// never produce flushes).
    pub fn get(&self, op: Op) -> &BlockSize {
        match op {
            Op::Read => &self.read,
            Op::Write | Op::Flush => &self.write,
            Op::Trim => &self.trim,
        }
    }
}

impl Default for BlockSizes {
    fn default() -> Self {
        BlockSizes::fixed(4096)
    }
}

/// How random offsets are drawn (fio's `random_distribution`), for one direction.
#[derive(Clone, Debug, PartialEq)]
pub enum Distribution {
    /// `random`: uniform over the file (the default).
    Uniform,
    /// `zipf:θ[:center]`: fio's Zipf over the file's blocks (θ > 0, θ ≠ 1).
    Zipf {
        /// θ.
        theta: f64,
        /// Where the hottest block sits, 0..=1 of the file; `None`: a seeded random place.
        center: Option<f64>,
    },
    /// `pareto:h[:center]`: fio's Pareto (0 < h < 1).
    Pareto {
        /// h.
        h: f64,
        /// As for Zipf.
        center: Option<f64>,
    },
    /// `normal:σ[:center]` (also `gauss`): fio's approximate normal, σ in percent of
    /// the file (0..=100).
    Normal {
        /// Deviation, percent of the file.
        dev_pct: f64,
        /// Centre, 0..=1 of the file (default 0.5).
        center: Option<f64>,
    },
    /// `zoned:A/S:…`: A % of accesses fall uniformly into the next S % of the file.
    Zoned(Vec<Zone>),
    /// `zoned_abs:A/SIZE:…`: A % of accesses fall uniformly into the next SIZE bytes.
    ZonedAbs(Vec<Zone>),
    /// `sequence:I,J,…`: fio's fixed sequence of block indices (in units of the
    /// direction's smallest block size), the n-th I/O of a direction taking element
    /// n mod len; with `random_sequence_stride` each round is shifted by len blocks.
    Sequence(Vec<u64>),
}

/// One zone of a zoned distribution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Zone {
    /// Percent of accesses (whole, as in fio; all zones add up to 100).
    pub access_pct: u8,
    /// Percent of the file (`zoned`) or bytes (`zoned_abs`).
    pub size: u64,
}

/// Which file of a thread the next I/O goes to (fio's `file_service_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileService {
    /// `roundrobin[:N]`: N I/Os per file, then the next (default N = 1).
    RoundRobin(u32),
    /// `sequential`: one file until its share is done, then the next.
    Sequential,
    /// `random`: a uniformly random file for each I/O.
    Random,
}

/// How paced I/Os are spaced (fio's `rate_process`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RateProcess {
    /// Evenly (fio's default).
    Linear,
    /// Exponentially distributed gaps with the same mean (a Poisson arrival process),
    /// drawn from the thread's seeded stream.
    Poisson,
}

/// fio's log files a job asks for (`write_bw_log`, `write_lat_log`, `write_iops_log`,
/// `log_avg_msec`, `per_job_logs`); written by the command after the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogSpec {
    /// `write_bw_log`: the file-name prefix (the job name when given bare).
    pub bw: Option<String>,
    /// `write_lat_log`: the prefix of the clat, slat and lat logs.
    pub lat: Option<String>,
    /// `write_iops_log`: the prefix.
    pub iops: Option<String>,
    /// `log_avg_msec`: average over windows of this many ms (0: an entry per I/O).
    pub avg_msec: u64,
    /// `per_job_logs` (default 1): one file per job, numbered as fio numbers it
    /// (`prefix_bw.N.log`); 0: one file per prefix and type for all jobs.
    pub per_job: bool,
}

impl Default for LogSpec {
    fn default() -> Self {
        LogSpec {
            bw: None,
            lat: None,
            iops: None,
            avg_msec: 0,
            per_job: true,
        }
    }
}

impl LogSpec {
    /// Whether any log is asked for.
    pub fn any(&self) -> bool {
        self.bw.is_some() || self.lat.is_some() || self.iops.is_some()
    }
}

/// One job section, with `[global]` options applied and defaults filled in.
///
/// See the crate documentation for each option's meaning and default.
#[derive(Clone, Debug, PartialEq)]
pub struct JobSpec {
    /// The section name, or the value of `name=`.
    pub name: String,
    /// Line of the section header (1-based).
    pub line: usize,
    /// `sluice_flow`, else the job name. Jobs with the same flow share one flow (and
    /// must have the same weight); all `numjobs` threads of a job share its flow.
    pub flow: String,
    /// Proportional-share weight, at least 1: `sluice_weight` if given, else from the
    /// I/O priority (best effort: 8 − prio, prio 4 by default; real time: 8; idle: 1).
    pub weight: u32,
    /// `Critical` for `sluice_critical=1` or `prioclass=1`, `Idle` for `prioclass=3`,
    /// else `Normal`.
    pub class: IoClass,
    /// I/O pattern; default `read` as in fio.
    pub rw: RwMode,
    /// fio's `:N` offset modifier of `rw`.
    pub rw_modifier: RwModifier,
    /// `rw_sequencer=identical`: with [`RwModifier::RandEvery`], the I/Os between
    /// random offsets repeat the last offset (default: continue sequentially).
    pub rw_identical: bool,
    /// `random_sequence_stride`: a `sequence` distribution's rounds advance by its
    /// length (fio's strided block groups) instead of repeating.
    pub sequence_stride: bool,
    /// `blockalign`: random offsets are multiples of this `[reads, writes]` (0: of the
    /// drawn block size, fio's default).
    pub blockalign: [u32; 2],
    /// `norandommap`: random offsets are drawn with replacement. Off by default, as in
    /// fio: a random job keeps fio's random map (no block repeats until every block of
    /// the file is done; see [`crate::IoGen`]).
    pub norandommap: bool,
    /// Percent of reads in mixed modes (default 50).
    pub rwmixread: u8,
    /// Block sizes per direction; default 4 KiB.
    pub bs: BlockSizes,
    /// Bytes of the region each thread works on — all its files side by side
    /// (`nrfiles` × `filesize`); default 1 GiB (fio has no default).
    pub size: u64,
    /// Files per thread (`nrfiles`, default 1), each `size / nrfiles` bytes (the
    /// parser makes `size` = `nrfiles` × `filesize`), laid side by side from `offset`.
    /// I/Os never cross a file's end.
    pub nrfiles: u32,
    /// Which file the next I/O goes to when there are several.
    pub file_service: FileService,
    /// Bytes to transfer per thread and loop (`io_size`/`io_limit`; `None`: `size`).
    pub io_size: Option<u64>,
    /// Whether the job file gave the region's size (`size`, `filesize`); else `size`
    /// is the 1 GiB default, which a file's known size replaces (a job reading a file
    /// that a `fill_device` job filled reads what was written, as fio's).
    pub size_given: bool,
    /// `fill_device`/`fill_fs`: the job's file reaches to the end of the space the
    /// world has (the simulated device's capacity; the file system's free space under
    /// `sluice run`, or a block device's size), and the job ends there, as fio's at
    /// ENOSPC/EDQUOT, without an error (see `sluice_fio::fill`).
    pub fill_device: bool,
    /// How many times the job's I/O is repeated (`loops`, default 1).
    pub loops: u32,
    /// Stop each thread after this many I/Os (`number_ios`).
    pub number_ios: Option<u64>,
    /// How random offsets are drawn `[reads, writes]`.
    pub distribution: [Distribution; 2],
    /// Percent of a random job's I/Os that are random `[reads, writes]`; the others
    /// continue sequentially from the direction's last I/O (default 100).
    pub percentage_random: [u8; 2],
    /// How paced I/Os are spaced.
    pub rate_process: RateProcess,
    /// `exitall`: jobs end others when they end ([`crate::exit_targets`]).
    pub exitall: bool,
    /// Which jobs (`exit_what`).
    pub exit_what: crate::ExitWhat,
    /// The errors a thread goes on after (`continue_on_error`; default: none).
    pub continue_on: crate::ContinueOn,
    /// fio's `group_reporting`: the report sums the threads (and, as fio, the jobs
    /// of its stonewall group that follow it with `group_reporting` too) into one
    /// entry; without it each of its `numjobs` threads is an entry of its own.
    pub group_reporting: bool,
    /// Data verification (`verify=`…): acted on by `sluice run`; the simulator carries
    /// no data.
    pub verify: Option<VerifySpec>,
    /// fio's log files.
    pub logs: LogSpec,
    /// fio's steady-state early end (`steadystate` with `ss_dur`).
    pub steadystate: Option<SteadySpec>,
    /// `directory`: the `:`-separated list as given (empty if none).
    pub directory: Vec<String>,
    /// Start of the region, in bytes (of thread 0; see [`JobSpec::thread_offset`]).
    pub offset: u64,
    /// fio's `offset_increment`: thread `t` of the job (its sub-job number) starts at
    /// `offset + t · offset_increment`; 0 by default.
    pub offset_increment: u64,
    /// I/Os in flight per thread; default 1.
    pub iodepth: u32,
    /// Threads of the job; default 1.
    pub numjobs: u32,
    /// Run time limit (`runtime`; `runtime=0` means none).
    pub runtime_ns: Option<Nanos>,
    /// Run for `runtime` even when `size` bytes have been transferred (wrapping around).
    pub time_based: bool,
    /// Warm-up time excluded from the results.
    pub ramp_ns: Nanos,
    /// Delay from the start of the job's group to the job's start.
    pub startdelay_ns: Nanos,
    /// Pause after each I/O completes before the thread issues the next one.
    pub thinktime_ns: Nanos,
    /// Bandwidth caps `[read, write]` in bytes per second (`rate`).
    pub rate_bytes: [Option<u64>; 2],
    /// Whether `rate` was given as one value: then it caps reads and writes together
    /// (the job's total), otherwise each direction separately.
    pub rate_bytes_total: bool,
    /// I/O-rate caps `[read, write]` in I/Os per second (`rate_iops`).
    pub rate_iops: [Option<u64>; 2],
    /// Whether `rate_iops` was given as one value (caps the total, see
    /// [`JobSpec::rate_bytes_total`]).
    pub rate_iops_total: bool,
    /// `randseed`, mixed into each thread's random stream.
    pub randseed: Option<u64>,
    /// `prio` (0 highest … 7 lowest), if given.
    pub prio: Option<u8>,
    /// `prioclass` (1 real time, 2 best effort, 3 idle; 0 none), if given.
    pub prioclass: Option<u8>,
    /// Per-I/O priorities (`cmdprio_percentage`, `cmdprio_bssplit`, …): some I/Os get
    /// their own class (see [`crate::CmdPrio`]).
    pub cmdprio: crate::CmdPrio,
    /// fio's `flow`: this job's weight in its token flow (0: none; see
    /// `sluice_fio::tokens`), unrelated to sluice's own flows.
    pub token_flow: u32,
    /// fio's `flow_id` (default 0).
    pub token_flow_id: u32,
    /// fio's `flow_sleep`: how long a thread over its share sleeps (0: it tries again
    /// when another thread of the flow has issued).
    pub flow_sleep_ns: Nanos,
    /// fio's `latency_target`: the latency the queue-depth search keeps I/Os under
    /// (see `sluice_fio::latency`), ns.
    pub latency_target_ns: Option<Nanos>,
    /// `latency_window` (default 0: a check at every completion), ns.
    pub latency_window_ns: Nanos,
    /// `latency_percentile` (default 100).
    pub latency_percentile: f64,
    /// `latency_run`: keep searching instead of ending at the depth found.
    pub latency_run: bool,
    /// `wait_for`: the index of the earlier job whose threads must all be done before
    /// this job starts.
    pub wait_for: Option<usize>,
    /// Wait for all earlier jobs to finish before starting (`stonewall`,
    /// `wait_for_previous`).
    pub stonewall: bool,
    /// Start a new reporting group (`new_group`; `stonewall` does too).
    pub new_group: bool,
    /// Buffered I/O through sluice's page cache (`direct=0`, `buffered=1`).
    pub buffered: bool,
    /// fio's `atomic=1`: every write is an atomic (untorn) write, `RWF_ATOMIC` (see
    /// [`crate::check_atomic_job`] and [`crate::AtomicLimits`]); implies direct I/O.
    pub atomic: bool,
    /// A sync after every this many writes (`fsync=N`, `fdatasync=N`; 0: none).
    pub fsync_every: u32,
    /// A sync when the thread is done (`end_fsync`, `fsync_on_close`).
    pub end_fsync: bool,
    /// The periodic sync is fio's `fdatasync` rather than `fsync`: `fdatasync=N` given
    /// and more frequent than any `fsync=N` (raw files treat the two alike; the
    /// journaled store does not).
    pub sync_data_only: bool,
    /// `fsync_on_close`: every file is fsynced when the thread closes it at its end,
    /// whatever ended the thread (also folded into [`JobSpec::end_fsync`] for raw files).
    pub fsync_on_close: bool,
    /// `create_on_open`: files are created when the thread first opens them, not laid
    /// out before the run (acted on by the journaled store's fio runner).
    pub create_on_open: bool,
    /// `filename`: jobs naming the same file share one address range.
    pub filename: Option<String>,
    /// fio's zone options (`zonemode`, `zonesize`, …; see [`crate::ZoneSpec`]).
    pub zone: crate::ZoneSpec,
    /// NVMe Flexible Data Placement of the job's writes (`fdp`, `plids`, …; see
    /// [`crate::PlacementSpec`]).
    pub placement: crate::PlacementSpec,
    /// End-to-end protection options (`md_per_io_size`, `pi_chk`, …), parsed; every
    /// world refuses a job that needs them (see [`crate::PiSpec`]).
    pub pi: crate::PiSpec,
    /// Options accepted but not acted on, as written (`ioengine`, `direct`,
    /// `group_reporting`, …): sluice chooses its engine and always does direct I/O.
    pub passthrough: Vec<(String, String)>,
    /// The job section's own options as written, in order (fio's `job options` in the
    /// JSON; a bare flag has an empty value).
    pub job_options: Vec<(String, String)>,
    /// The `[global]` options in force at the job's header, as written (fio's `global
    /// options`).
    pub global_options: Vec<(String, String)>,
}

impl JobSpec {
    /// Where thread `thread` of the job starts: fio's
    /// `offset + subjob_number · offset_increment`.
    pub fn thread_offset(&self, thread: u32) -> u64 {
        self.offset
            .saturating_add(self.offset_increment.saturating_mul(thread as u64))
    }

    /// The end of the last thread's region: `thread_offset(numjobs - 1) + size`.
    pub fn end_of_threads(&self) -> u64 {
        self.thread_offset(self.numjobs.max(1) - 1)
            .saturating_add(self.size)
    }
}

impl Default for JobSpec {
    /// A job with every default: sequential 4 KiB reads over 1 GiB at depth 1, weight
    /// 4, normal class, named `job`.
    fn default() -> Self {
        JobSpec {
            name: "job".to_string(),
            line: 0,
            flow: "job".to_string(),
            weight: 4,
            class: IoClass::Normal,
            rw: RwMode::Read,
            rw_modifier: RwModifier::None,
            rw_identical: false,
            blockalign: [0, 0],
            norandommap: false,
            sequence_stride: false,
            rwmixread: 50,
            bs: BlockSizes::default(),
            size: 1 << 30,
            nrfiles: 1,
            file_service: FileService::RoundRobin(1),
            io_size: None,
            size_given: false,
            fill_device: false,
            loops: 1,
            number_ios: None,
            distribution: [Distribution::Uniform, Distribution::Uniform],
            percentage_random: [100, 100],
            rate_process: RateProcess::Linear,
            exitall: false,
            exit_what: crate::ExitWhat::Group,
            continue_on: crate::ContinueOn::default(),
            group_reporting: false,
            verify: None,
            logs: LogSpec::default(),
            steadystate: None,
            directory: Vec::new(),
            offset: 0,
            offset_increment: 0,
            iodepth: 1,
            numjobs: 1,
            runtime_ns: None,
            time_based: false,
            ramp_ns: 0,
            startdelay_ns: 0,
            thinktime_ns: 0,
            rate_bytes: [None; 2],
            rate_bytes_total: false,
            rate_iops: [None; 2],
            rate_iops_total: false,
            randseed: None,
            prio: None,
            prioclass: None,
            cmdprio: crate::CmdPrio::default(),
            wait_for: None,
            latency_target_ns: None,
            latency_window_ns: 0,
            latency_percentile: 100.0,
            latency_run: false,
            token_flow: 0,
            token_flow_id: 0,
            flow_sleep_ns: 0,
            stonewall: false,
            new_group: false,
            filename: None,
            zone: crate::ZoneSpec::default(),
            placement: crate::PlacementSpec::default(),
            pi: crate::PiSpec::default(),
            buffered: false,
            atomic: false,
            fsync_every: 0,
            end_fsync: false,
            sync_data_only: false,
            fsync_on_close: false,
            create_on_open: false,
            passthrough: Vec::new(),
            job_options: Vec::new(),
            global_options: Vec::new(),
        }
    }
}

impl JobSpec {
    /// Bytes each thread transfers before it ends by size (`io_size` × `loops`),
    /// unless `number_ios` or `runtime` end it first; `None` for time-based jobs.
    pub fn bytes_per_thread(&self) -> Option<u64> {
        (!self.time_based).then(|| {
            self.io_size
                .unwrap_or(self.size)
                .saturating_mul(self.loops.max(1) as u64)
        })
    }
}

/// The weight an I/O priority maps to when no `sluice_weight` is given (D2FQ/BFQ
/// style): idle class → 1; real-time class → 8; otherwise best effort, 8 − prio with
/// prio 4 by default (the kernel's default best-effort level).
pub fn weight_from_prio(prio: Option<u8>, prioclass: Option<u8>) -> u32 {
    match prioclass {
        Some(3) => 1,
        Some(1) => 8,
        _ => 8 - prio.unwrap_or(4).min(7) as u32,
    }
}
