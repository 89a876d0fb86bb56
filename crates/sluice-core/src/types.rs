//! The vocabulary every layer shares: requests, flows, classes, device queue classes.
//!
//! Units are in the names: `_ns` is nanoseconds of (real or simulated) time, `len` and
//! `offset` are bytes.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Time in nanoseconds. Policies are *given* the time; they never read a clock.
pub type Nanos = u64;

/// Identifier of a request, assigned by the engine (simulator or io_uring engine).
/// Unique among the requests alive at one time. The pieces of a split request share
/// their parent's id (see [`Request::parts`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ReqId(pub u64);

/// Identifier of a flow (a tenant: by default one fio job section). Dense, from 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct FlowId(pub u32);

impl FlowId {
    /// The flow id as an index into per-flow arrays.
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// What a request does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    /// Read `len` bytes at `offset`.
    Read,
    /// Write `len` bytes at `offset`.
    Write,
    /// Flush the device's volatile write cache (`len` is 0).
    Flush,
    /// Deallocate `len` bytes at `offset` (NVMe Dataset Management deallocate, Linux
    /// `REQ_OP_DISCARD`, fio's trim): the range's data is no longer needed. The
    /// simulated FTL marks its pages invalid; a file has a hole punched, a block device
    /// is sent `BLKDISCARD`.
    Trim,
}

impl Op {
    /// Whether the operation is a read (reads are "sync" in the block layer's sense).
    #[inline]
    pub fn is_read(self) -> bool {
        matches!(self, Op::Read)
    }

    /// Whether the operation goes in the write direction as Linux's `rq_data_dir`
    /// puts it: writes and trims (a discard is a write-direction request in the block
    /// layer; mq-deadline queues it in the write FIFO). Flushes are neither here: the
    /// policies keep their own handling of them.
    #[inline]
    pub fn is_write_dir(self) -> bool {
        matches!(self, Op::Write | Op::Trim)
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Op::Read => "read",
            Op::Write => "write",
            Op::Flush => "flush",
            Op::Trim => "trim",
        })
    }
}

/// The request-centric class of FastResponse and RCP: it is set where the request is
/// born (the job) and carried through every layer into the results.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IoClass {
    /// Latency-critical: foreground work whose latency a user waits on.
    Critical,
    /// Ordinary best-effort work.
    Normal,
    /// Background work that should use only idle device time (`prioclass=3`).
    Idle,
}

impl IoClass {
    /// All classes, most urgent first.
    pub const ALL: [IoClass; 3] = [IoClass::Critical, IoClass::Normal, IoClass::Idle];

    /// Index into per-class arrays (critical 0, normal 1, idle 2).
    #[inline]
    pub fn index(self) -> usize {
        self as usize
    }

    /// Lower-case name as used in job files and reports.
    pub fn name(self) -> &'static str {
        match self {
            IoClass::Critical => "critical",
            IoClass::Normal => "normal",
            IoClass::Idle => "idle",
        }
    }
}

/// NVMe submission-queue priority class. With round-robin arbitration the class is
/// ignored by the controller; with weighted round robin `Urgent` is served with strict
/// priority and `High`/`Medium`/`Low` by their weights (NVMe base spec, "Weighted Round
/// Robin with Urgent Priority Class Arbitration").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QueueClass {
    /// Strict priority over the weighted classes.
    Urgent,
    /// Weighted class with weight HPW.
    High,
    /// Weighted class with weight MPW (the default class for ordinary submissions).
    Medium,
    /// Weighted class with weight LPW.
    Low,
}

impl QueueClass {
    /// All classes in index order.
    pub const ALL: [QueueClass; 4] = [
        QueueClass::Urgent,
        QueueClass::High,
        QueueClass::Medium,
        QueueClass::Low,
    ];

    /// Index into per-class arrays (urgent 0 … low 3).
    #[inline]
    pub fn index(self) -> usize {
        self as usize
    }

    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            QueueClass::Urgent => "urgent",
            QueueClass::High => "high",
            QueueClass::Medium => "medium",
            QueueClass::Low => "low",
        }
    }
}

/// A flow: a tenant that shares the device with others by weight.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Flow {
    /// Dense id, the index in the engine's flow table.
    pub id: FlowId,
    /// Human-readable name (the job section name or `sluice_flow`).
    pub name: String,
    /// Proportional-share weight, at least 1.
    pub weight: u32,
}

/// One block I/O request as the scheduling policy sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    /// Engine-assigned id; shared by the pieces of a split request.
    pub id: ReqId,
    /// The flow (tenant) that issued it.
    pub flow: FlowId,
    /// Read, write or flush.
    pub op: Op,
    /// Byte offset on the device or file.
    pub offset: u64,
    /// Length in bytes.
    pub len: u32,
    /// Critical, normal or idle.
    pub class: IoClass,
    /// When the application submitted it.
    pub submit_ns: Nanos,
    /// The hardware queue (submitting core) it came from; policies that keep a dispatch
    /// queue per hardware queue (FastResponse LD) use it.
    pub hwq: u16,
    /// Into how many pieces the request was split (1 when whole). The engine completes
    /// the parent when all `parts` pieces with this id have completed.
    pub parts: u16,
    /// Force unit access (NVMe FUA, Linux `REQ_FUA`, `RWF_DSYNC` for a file): a write
    /// completes only once its data is durable, whatever the device's volatile write
    /// cache holds. Ignored for reads and flushes.
    pub fua: bool,
    /// NVMe Flexible Data Placement: the placement identifier of a write, i.e. the
    /// reclaim unit handle whose open reclaim unit takes its data (0, the default
    /// handle, for a write without one; ignored for other commands). fio's
    /// `fdp`/`plids` choose it (`dspec`).
    pub placement: u8,
    /// An atomic (untorn) write: Linux's `REQ_ATOMIC` from `RWF_ATOMIC`, fio's
    /// `atomic=1`. Its data reaches the media all or nothing, also across a power
    /// failure (NVMe: a write within the namespace's atomic write unit, AWUPF/NAWUPF).
    /// It is therefore never split into pieces (see [`Request::split`]); a layer that
    /// merged requests would have to keep a merge with one within the device's atomic
    /// limit — sluice's block layer merges nothing. Ignored for reads, flushes, trims.
    pub atomic: bool,
}

impl Request {
    /// Whether this is an atomic write (a write with [`Request::atomic`]): one that
    /// no layer may split.
    #[inline]
    pub fn is_atomic_write(&self) -> bool {
        self.atomic && self.op == Op::Write
    }

    /// Split the request into pieces of at most `piece_len` bytes in LBA order, each
    /// carrying the parent's id and the number of pieces. A request no longer than
    /// `piece_len` (or a flush, a trim or an atomic write) comes back whole.
    ///
    /// An atomic write stays whole as Linux's blk-mq keeps a `REQ_ATOMIC` bio whole
    /// (`bio_split_rw_at` refuses to split one): pieces would reach the device as
    /// separate commands, each atomic on its own but not together, so a power failure
    /// could tear the write between them. Its size was checked against the device's
    /// atomic write unit when the job was set up.
    ///
    /// # Panics
    /// If `piece_len` is zero, or the request would need more than `u16::MAX` pieces.
    pub fn split(&self, piece_len: u32) -> impl Iterator<Item = Request> + '_ {
        assert!(piece_len > 0, "split size must be positive");
        // A trim stays whole too: Linux caps a discard by the device's (large)
        // max_discard_sectors, not by the data transfer size.
        let n = if matches!(self.op, Op::Flush | Op::Trim)
            || self.is_atomic_write()
            || self.len <= piece_len
        {
            1
        } else {
            self.len.div_ceil(piece_len)
        };
        assert!(n <= u16::MAX as u32, "too many pieces");
        let whole = *self;
        (0..n).map(move |i| {
            if n == 1 {
                return whole;
            }
            let start = i * piece_len;
            Request {
                offset: whole.offset + start as u64,
                len: piece_len.min(whole.len - start),
                parts: n as u16,
                ..whole
            }
        })
    }
}
