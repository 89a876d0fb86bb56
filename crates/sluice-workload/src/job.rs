//! The parsed form of one job section.

use sluice_core::{IoClass, Nanos, Op};

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
}

impl RwMode {
    /// Whether offsets are random (otherwise sequential).
    pub fn is_random(self) -> bool {
        matches!(self, RwMode::RandRead | RwMode::RandWrite | RwMode::RandRw)
    }

    /// Whether the job mixes reads and writes.
    pub fn is_mixed(self) -> bool {
        matches!(self, RwMode::ReadWrite | RwMode::RandRw)
    }

    /// Whether the job issues reads at all (mixed jobs do unless `rwmixread=0`).
    pub fn reads(self) -> bool {
        !matches!(self, RwMode::Write | RwMode::RandWrite)
    }

    /// Whether the job issues writes at all (mixed jobs do unless `rwmixread=100`).
    pub fn writes(self) -> bool {
        !matches!(self, RwMode::Read | RwMode::RandRead)
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
        }
    }
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

/// Block sizes per direction (fio's `bs=read,write` / `bssplit=read,write`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockSizes {
    /// Sizes of reads.
    pub read: BlockSize,
    /// Sizes of writes.
    pub write: BlockSize,
}

impl BlockSizes {
    /// Both directions with one fixed size.
    pub fn fixed(len: u32) -> BlockSizes {
        BlockSizes {
            read: BlockSize::Fixed(len),
            write: BlockSize::Fixed(len),
        }
    }

    /// The sizes of one direction (a flush uses the write sizes, though generators
    /// never produce flushes).
    pub fn get(&self, op: Op) -> &BlockSize {
        match op {
            Op::Read => &self.read,
            Op::Write | Op::Flush => &self.write,
        }
    }
}

impl Default for BlockSizes {
    fn default() -> Self {
        BlockSizes::fixed(4096)
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
    /// Percent of reads in mixed modes (default 50).
    pub rwmixread: u8,
    /// Block sizes per direction; default 4 KiB.
    pub bs: BlockSizes,
    /// Bytes of the region each thread works on; default 1 GiB (fio has no default).
    pub size: u64,
    /// Start of the region, in bytes.
    pub offset: u64,
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
    /// Wait for all earlier jobs to finish before starting (`stonewall`,
    /// `wait_for_previous`).
    pub stonewall: bool,
    /// `filename`: jobs naming the same file share one address range.
    pub filename: Option<String>,
    /// Options accepted but not acted on, as written (`ioengine`, `direct`,
    /// `group_reporting`, …): sluice chooses its engine and always does direct I/O.
    pub passthrough: Vec<(String, String)>,
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
            rwmixread: 50,
            bs: BlockSizes::default(),
            size: 1 << 30,
            offset: 0,
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
            stonewall: false,
            filename: None,
            passthrough: Vec::new(),
        }
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
