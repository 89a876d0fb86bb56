//! Deterministic I/O generation for one thread of a job, and open-loop pacing.

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use sluice_core::{Nanos, Op};

use crate::job::{BlockSize, JobSpec};
use crate::units::PPM;

/// One I/O to issue. `offset` is relative to the start of the thread's address space
/// (the engine adds the base of the file or region it gives the job).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IoSpec {
    /// Read or write (generators never produce flushes).
    pub op: Op,
    /// Byte offset.
    pub offset: u64,
    /// Length in bytes.
    pub len: u32,
}

/// The SplitMix64 finaliser: a bijective 64-bit mixer.
#[inline]
fn mix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The seed of one thread's stream: the run seed, the job's `randseed` (if any), the
/// job index and the thread index, each mixed in turn.
pub fn stream_seed(seed: u64, randseed: Option<u64>, job_index: usize, thread: u32) -> u64 {
    let mut s = mix64(seed);
    if let Some(r) = randseed {
        s = mix64(s ^ mix64(r ^ 0x5EED_0000_0000_0001));
    }
    s = mix64(s ^ (job_index as u64).wrapping_mul(0xA24B_AED4_963E_E407));
    mix64(s ^ (thread as u64).wrapping_mul(0x9FB2_1C65_1E98_DF25))
}

/// One block size a direction can draw, with what random placement needs.
#[derive(Clone, Copy, Debug)]
struct Slot {
    len: u32,
    /// Cumulative share up to and including this entry, in ppm.
    cum_ppm: u32,
    /// First offset a random I/O of this size may start at.
    base: u64,
    /// How many aligned positions there are (at least 1).
    positions: u64,
}

/// The sizes of one direction.
#[derive(Clone, Debug)]
struct Sizes {
    slots: Vec<Slot>,
}

impl Sizes {
    fn new(bs: &BlockSize, start: u64, end: u64) -> Sizes {
        let table: Vec<(u32, u32)> = match bs {
            BlockSize::Fixed(n) => vec![(*n, PPM)],
            BlockSize::Split(t) => t.iter().map(|e| (e.len, e.ppm)).collect(),
        };
        let mut cum = 0u32;
        let slots = table
            .into_iter()
            .map(|(len, ppm)| {
                cum = cum.saturating_add(ppm);
                let l = (len as u64).max(1);
                // Align to the block size in absolute terms when the region holds at
                // least one such block, else relative to the region's start.
                let aligned = start.div_ceil(l).saturating_mul(l);
                let (base, positions) = if aligned.saturating_add(l) <= end {
                    (aligned, (end - aligned) / l)
                } else {
                    (start, ((end - start) / l).max(1))
                };
                Slot {
                    len,
                    cum_ppm: cum,
                    base,
                    positions,
                }
            })
            .collect();
        Sizes { slots }
    }

    /// Pick a size (consumes randomness only when there is a choice).
    #[inline]
    fn pick(&self, rng: &mut Xoshiro256PlusPlus) -> &Slot {
        if self.slots.len() == 1 {
            return &self.slots[0];
        }
        let r = rng.random_range(0..PPM);
        self.slots
            .iter()
            .find(|s| r < s.cum_ppm)
            .unwrap_or(&self.slots[self.slots.len() - 1])
    }
}

/// The I/O stream of one thread of a job: directions by `rwmixread`, sizes by
/// `bs`/`bssplit`, offsets uniformly random (aligned to the drawn size) or sequential
/// with wrap-around. Same job, indices and seed → same stream.
///
/// `next_io` does not allocate.
#[derive(Clone, Debug)]
pub struct IoGen {
    rng: Xoshiro256PlusPlus,
    random: bool,
    /// Reads per 100 I/Os: 100 for read-only modes, 0 for write-only ones.
    read_pct: u32,
    sizes: [Sizes; 2],
    start: u64,
    end: u64,
    /// Next sequential position per direction (fio keeps one per direction too).
    cursor: [u64; 2],
    issued: u64,
    limit: Option<u64>,
}

impl IoGen {
    /// The generator of thread `thread` of job number `job_index` (its position in the
    /// job file). `seed` is the run's seed; it is combined with `job.randseed` (if set),
    /// the job index and the thread index, so every thread has its own reproducible
    /// stream.
    pub fn new(job: &JobSpec, job_index: usize, thread: u32, seed: u64) -> IoGen {
        let start = job.offset;
        let end = job.offset.saturating_add(job.size.max(1));
        let read_pct = match job.rw {
            m if m.is_mixed() => job.rwmixread.min(100) as u32,
            m if m.reads() => 100,
            _ => 0,
        };
        IoGen {
            rng: Xoshiro256PlusPlus::seed_from_u64(stream_seed(
                seed,
                job.randseed,
                job_index,
                thread,
            )),
            random: job.rw.is_random(),
            read_pct,
            sizes: [
                Sizes::new(&job.bs.read, start, end),
                Sizes::new(&job.bs.write, start, end),
            ],
            start,
            end,
            cursor: [start; 2],
            issued: 0,
            limit: (!job.time_based).then_some(job.size),
        }
    }

    /// The next I/O. Sequential modes run through `[offset, offset+size)` and start
    /// again at `offset` when the next block would not fit; random modes pick a uniform
    /// position aligned to the drawn block size (absolute alignment when the region
    /// holds such a block), with replacement (fio's `norandommap`).
    #[inline]
    pub fn next_io(&mut self) -> IoSpec {
        let dir = match self.read_pct {
            100 => 0,
            0 => 1,
            p => usize::from(self.rng.random_range(0..100u32) >= p),
        };
        let slot = *self.sizes[dir].pick(&mut self.rng);
        let len = slot.len;
        let offset = if self.random {
            if slot.positions > 1 {
                slot.base + self.rng.random_range(0..slot.positions) * len as u64
            } else {
                slot.base
            }
        } else {
            let mut pos = self.cursor[dir];
            if pos.saturating_add(len as u64) > self.end {
                pos = self.start;
            }
            self.cursor[dir] = pos + len as u64;
            pos
        };
        self.issued = self.issued.saturating_add(len as u64);
        IoSpec {
            op: if dir == 0 { Op::Read } else { Op::Write },
            offset,
            len,
        }
    }

    /// Whether the thread has issued all it should: at least `size` bytes when the job
    /// is not `time_based` (the last I/O may pass `size` by less than one block). A
    /// time-based job is never exhausted; its end is the engine's business.
    #[inline]
    pub fn exhausted(&self) -> bool {
        self.limit.is_some_and(|l| self.issued >= l)
    }

    /// Bytes issued so far.
    #[inline]
    pub fn issued_bytes(&self) -> u64 {
        self.issued
    }

    /// The region `[start, end)` the thread's I/Os fall into.
    pub fn region(&self) -> (u64, u64) {
        (self.start, self.end)
    }
}

/// Open-loop pacing for `rate` and `rate_iops`, fio style: the n-th I/O of a direction
/// may be issued no earlier than (bytes issued before it) / rate, and no earlier than
/// (I/Os issued before it) / rate_iops, measured from the job's start. A limit given as
/// one value counts reads and writes together; a `read,write` pair paces each
/// direction on its own.
///
/// `next_issue_ns` does not allocate.
#[derive(Clone, Debug)]
pub struct Pacer {
    /// Bytes per second `[read, write]`; 0 = no limit.
    bps: [u64; 2],
    bps_total: bool,
    /// I/Os per second `[read, write]`; 0 = no limit.
    iops: [u64; 2],
    iops_total: bool,
    bytes: [u64; 2],
    ios: [u64; 2],
}

/// `amount / per_sec` seconds in nanoseconds, exact to the nanosecond below.
#[inline]
fn ns_for(amount: u64, per_sec: u64) -> Nanos {
    let t = amount as u128 * 1_000_000_000 / per_sec as u128;
    t.min(u64::MAX as u128) as Nanos
}

impl Pacer {
    /// The pacer of one thread of `job`, or `None` when the job has no rate limit.
    pub fn new(job: &JobSpec) -> Option<Pacer> {
        let b = job.rate_bytes.map(|r| r.unwrap_or(0));
        let i = job.rate_iops.map(|r| r.unwrap_or(0));
        if b == [0, 0] && i == [0, 0] {
            return None;
        }
        Some(Pacer {
            bps: b,
            bps_total: job.rate_bytes_total,
            iops: i,
            iops_total: job.rate_iops_total,
            bytes: [0; 2],
            ios: [0; 2],
        })
    }

    /// The earliest time (ns since the job's start) the next I/O, of `op` and `len`, may
    /// be issued; the I/O is counted as issued. A direction without a limit, and a
    /// flush, may go at once (0).
    #[inline]
    pub fn next_issue_ns(&mut self, op: Op, len: u32) -> Nanos {
        let d = match op {
            Op::Read => 0,
            Op::Write => 1,
            Op::Flush => return 0,
        };
        let mut t = 0;
        if self.bps_total {
            if self.bps[0] > 0 {
                t = ns_for(self.bytes[0] + self.bytes[1], self.bps[0]);
            }
        } else if self.bps[d] > 0 {
            t = ns_for(self.bytes[d], self.bps[d]);
        }
        if self.iops_total {
            if self.iops[0] > 0 {
                t = t.max(ns_for(self.ios[0] + self.ios[1], self.iops[0]));
            }
        } else if self.iops[d] > 0 {
            t = t.max(ns_for(self.ios[d], self.iops[d]));
        }
        self.bytes[d] += len as u64;
        self.ios[d] += 1;
        t
    }
}
