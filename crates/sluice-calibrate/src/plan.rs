//! What the grid measures: the plan (depths, sizes, mixes, windows, goals of the
//! steady-state rule) and one point's specification as an engine job.

use crate::CalibrateError;
use sluice_core::Nanos;
use sluice_workload::{BlockSizes, JobSpec, RwMode};

/// What to measure and for how long.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// Queue depths of the 4 KiB sweeps.
    pub qds: Vec<u32>,
    /// Request sizes of the size sweeps (4 KiB and up), bytes.
    pub sizes: Vec<u32>,
    /// Sizes below 4 KiB for the minimum efficient size (those below the file's
    /// alignment are skipped), bytes.
    pub small_sizes: Vec<u32>,
    /// Request sizes measured at each direction's middle depth (the smallest depth
    /// whose 4 KiB IOPS reach half the best, [`MID_FRACTION`]), bytes: what a request's
    /// size costs between QD1 and the knee, which tells batched service from a
    /// load-dependent media time (docs/calibrate.md, "Batches").
    pub mid_sizes: Vec<u32>,
    /// Read percentages of the mixed points (each at QD1 and at the knee, 4 KiB).
    pub mixes: Vec<u8>,
    /// Measure both 4 KiB queue-depth sweeps a second time at the grid's end
    /// ([`Role::QdRepeat`]); the fits take each depth as the two passes together
    /// ([`crate::measure::merge_repeats`]), the device over the grid's minutes rather
    /// than at one moment of them.
    pub repeat_sweeps: bool,
    /// Bytes of the region measured (the temporary file's size).
    pub size_bytes: u64,
    /// Warm-up before a point's first window (excluded), ns.
    pub warmup_ns: Nanos,
    /// One measurement window, ns.
    pub window_ns: Nanos,
    /// Most time for one point, warm-up included, ns.
    pub cap_ns: Nanos,
    /// Windows that must agree.
    pub agree: usize,
    /// Largest `(max − min) / mean` of the agreeing windows' IOPS.
    pub tolerance: f64,
    /// Length of each validation job, ns (after its warm-up).
    pub validate_ns: Nanos,
    /// Real runs of each validation job (the median is compared).
    pub validate_rounds: usize,
    /// Pause before each write burst of the write-buffer probe ([`buffer`]), ns.
    pub burst_pause_ns: Nanos,
    /// Simulated I/Os per grid point and candidate in the fits that simulate the grid
    /// (the tails, the read/write interference: [`crate::simfit`]).
    pub fit_ios: u64,
}

impl Plan {
    /// The full grid: QD 1…64, 4 KiB…128 KiB, 512 B…2 KiB, 16 and 64 KiB at the middle
    /// depth, mixes 70/30 and 50/50, the 4 KiB sweeps again at the end;
    /// 0.5 s warm-up, 0.25 s windows, 3 agreeing within 5 %, at most 4 s per point;
    /// 1 GiB; validation jobs of 3 s, three rounds; 60 000 simulated I/Os per point in
    /// the fits that simulate.
    pub fn full() -> Plan {
        Plan {
            qds: vec![1, 2, 4, 8, 16, 32, 64],
            sizes: vec![4096, 8192, 16384, 32768, 65536, 131072],
            small_sizes: vec![512, 1024, 2048],
            mid_sizes: vec![16384, 65536],
            mixes: vec![70, 50],
            repeat_sweeps: true,
            size_bytes: 1 << 30,
            warmup_ns: 500_000_000,
            window_ns: 250_000_000,
            cap_ns: 4_000_000_000,
            agree: 3,
            tolerance: 0.05,
            validate_ns: 3_000_000_000,
            validate_rounds: 3,
            burst_pause_ns: 1_000_000_000,
            fit_ios: 60_000,
        }
    }

    /// A short grid for tests and a first look (seconds): QD 1, 4, 16; 4, 16, 64 KiB;
    /// 2 KiB; 16 KiB at the middle depth; one 70/30 mix; 64 MiB; 40 ms windows, 2
    /// agreeing within 10 %; 10 000 simulated I/Os per point in the fits.
    pub fn quick() -> Plan {
        Plan {
            qds: vec![1, 4, 16],
            sizes: vec![4096, 16384, 65536],
            small_sizes: vec![2048],
            mid_sizes: vec![16384],
            mixes: vec![70],
            repeat_sweeps: false,
            size_bytes: 64 << 20,
            warmup_ns: 30_000_000,
            window_ns: 40_000_000,
            cap_ns: 200_000_000,
            agree: 2,
            tolerance: 0.10,
            validate_ns: 300_000_000,
            validate_rounds: 1,
            burst_pause_ns: 50_000_000,
            fit_ios: 10_000,
        }
    }

    /// Points the grid measures on a file of alignment `align`.
    pub fn point_count(&self, align: u32) -> usize {
        let small = self
            .small_sizes
            .iter()
            .filter(|&&s| s >= align && s.is_multiple_of(align))
            .count();
        let big = self.sizes.iter().filter(|&&s| s != 4096).count();
        2 * self.qds.len()
            + 2 * small
            + 2 * big
            + 2 * big
            + 2 * self.mid_sizes.len()
            + 2 * self.mixes.len()
            + if self.repeat_sweeps {
                2 * self.qds.len()
            } else {
                0
            }
    }

    /// Check the plan; the message says what to fix.
    pub fn check(&self) -> Result<(), CalibrateError> {
        let bad = |m: String| Err(CalibrateError::BadInput(m));
        if self.qds.is_empty() || self.qds.contains(&0) {
            return bad("the queue depths must be positive and at least one".into());
        }
        if !self.qds.contains(&1) {
            return bad("the queue-depth sweep must include QD1 (the latency anchors)".into());
        }
        if !self.sizes.contains(&4096) {
            return bad("the size sweep must include 4 KiB (the IOPS anchors)".into());
        }
        if self.sizes.iter().chain(&self.small_sizes).any(|&s| s == 0) {
            return bad("request sizes must be positive".into());
        }
        if self.size_bytes < (16 << 20) {
            return bad(format!(
                "--size {} is too small: give at least 16m, so that random offsets spread over the device",
                self.size_bytes
            ));
        }
        if self.window_ns == 0 || self.agree == 0 {
            return bad("the window and the count of agreeing windows must be positive".into());
        }
        Ok(())
    }
}

/// The middle depth of a direction: the smallest measured depth whose 4 KiB IOPS
/// reach this share of the sweep's best.
pub const MID_FRACTION: f64 = 0.5;

/// One point of the grid: a mix, a request size, a queue depth.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PointSpec {
    /// Percent of reads: 100 = random reads, 0 = random writes, else mixed.
    pub read_pct: u8,
    /// Request size, bytes.
    pub bs: u32,
    /// Queue depth.
    pub qd: u32,
}

impl PointSpec {
    /// `randread`, `randwrite` or `randrw 70/30`.
    pub fn mix_name(&self) -> String {
        match self.read_pct {
            100 => "randread".into(),
            0 => "randwrite".into(),
            r => format!("randrw {r}/{}", 100 - r),
        }
    }

    /// A short label, e.g. `randread 4k qd8`.
    pub fn label(&self) -> String {
        format!("{} {} qd{}", self.mix_name(), show_bs(self.bs), self.qd)
    }

    /// The engine's job of this point on `filename` (region `size_bytes`), time based,
    /// built as a value (what a fio section `rw=… bs=… iodepth=… time_based` gives).
    pub fn job(
        &self,
        filename: &str,
        size_bytes: u64,
        runtime_ns: Nanos,
        ramp_ns: Nanos,
        seed: u64,
    ) -> Result<JobSpec, CalibrateError> {
        let (rw, rwmixread) = match self.read_pct {
            100 => (RwMode::RandRead, 50),
            0 => (RwMode::RandWrite, 50),
            r => (RwMode::RandRw, r),
        };
        // Whole microseconds, as a job file gives them.
        let us = |ns: Nanos| ns / 1000 * 1000;
        Ok(JobSpec {
            name: "cal".into(),
            flow: "cal".into(),
            rw,
            rwmixread,
            bs: BlockSizes::fixed(self.bs),
            size: size_bytes,
            iodepth: self.qd,
            runtime_ns: Some(us(runtime_ns).max(1000)),
            ramp_ns: us(ramp_ns),
            time_based: true,
            randseed: Some(seed),
            filename: Some(filename.to_string()),
            ..JobSpec::default()
        })
    }
}

fn show_bs(bs: u32) -> String {
    if bs >= 1024 && bs.is_multiple_of(1024) {
        format!("{}k", bs / 1024)
    } else {
        format!("{bs}")
    }
}

/// Which part of the grid a point belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    /// 4 KiB, queue depth 1…64.
    QdSweep,
    /// Below 4 KiB at the knee (minimum efficient size).
    SmallSize,
    /// 8 KiB…128 KiB at the knee.
    SizeSweep,
    /// 8 KiB…128 KiB at QD1 (cost model).
    Qd1Size,
    /// A few sizes at the middle depth ([`Plan::mid_sizes`]).
    MidSize,
    /// Mixed reads and writes.
    Mixed,
    /// 4 KiB, queue depth 1…64 again, at the grid's end ([`Plan::repeat_sweeps`]).
    QdRepeat,
}

impl Role {
    /// Every role, in the grid's order.
    pub const ALL: [Role; 7] = [
        Role::QdSweep,
        Role::SmallSize,
        Role::SizeSweep,
        Role::Qd1Size,
        Role::MidSize,
        Role::Mixed,
        Role::QdRepeat,
    ];

    /// Name in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Role::QdSweep => "qd-sweep",
            Role::SmallSize => "small-size",
            Role::SizeSweep => "size-sweep",
            Role::Qd1Size => "qd1-size",
            Role::MidSize => "mid-size",
            Role::Mixed => "mixed",
            Role::QdRepeat => "qd-repeat",
        }
    }
}
