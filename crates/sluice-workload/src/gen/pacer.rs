//! Open-loop pacing of a job's issues: fio's `rate`, `rate_iops` and `rate_process`.

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use sluice_core::{Nanos, Op};

use super::{mix64, stream_seed};
use crate::job::{JobSpec, RateProcess};

/// Open-loop pacing for `rate` and `rate_iops`, fio style: the n-th I/O of a direction
/// may be issued no earlier than (bytes issued before it) / rate, and no earlier than
/// (I/Os issued before it) / rate_iops, measured from the job's start. A limit given as
/// one value counts reads and writes together; a `read,write` pair paces each
/// direction on its own.
///
/// With `rate_process=poisson` the gaps between slots are instead exponentially
/// distributed with the same mean as the linear gap of each I/O (its bytes / rate, or
/// 1 / rate_iops, the longer), drawn from the pacer's seeded stream: a Poisson arrival
/// process, as fio's (whose λ is 10⁶ / IOPS).
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
    /// Poisson pacing: the gap stream and the next slot per clock (one shared clock
    /// when a limit is a total).
    poisson: Option<Xoshiro256PlusPlus>,
    clock: [f64; 2],
}

/// `amount / per_sec` seconds in nanoseconds, exact to the nanosecond below.
#[inline]
fn ns_for(amount: u64, per_sec: u64) -> Nanos {
    let t = amount as u128 * 1_000_000_000 / per_sec as u128;
    t.min(u64::MAX as u128) as Nanos
}

impl Pacer {
    /// The pacer of one thread of `job`, or `None` when the job has no rate limit. A
    /// Poisson pacer made here draws from a stream seeded by `randseed` alone; the
    /// engines use [`Pacer::seeded`].
    pub fn new(job: &JobSpec) -> Option<Pacer> {
        Pacer::seeded(job, stream_seed(0, job.randseed, 0, 0))
    }

    /// The pacer of one thread of `job` whose Poisson gaps (if any) come from `seed`
    /// (the engines pass the thread's [`stream_seed`]).
    pub fn seeded(job: &JobSpec, seed: u64) -> Option<Pacer> {
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
            poisson: (job.rate_process == RateProcess::Poisson)
                .then(|| Xoshiro256PlusPlus::seed_from_u64(mix64(seed ^ 0x9015_5011_0000_0001))),
            clock: [0.0; 2],
        })
    }

    /// Start counting afresh: the next I/O may go at once (fio resets its rate
    /// accounting when `ramp_time` ends).
    pub fn restart(&mut self) {
        self.bytes = [0; 2];
        self.ios = [0; 2];
        self.clock = [0.0; 2];
    }

    /// The earliest time (ns since the job's start, or since the last
    /// [`Pacer::restart`]) the next I/O, of `op` and `len`, may be issued; the I/O is
    /// counted as issued. A direction without a limit, and a flush, may go at once (0).
    #[inline]
    pub fn next_issue_ns(&mut self, op: Op, len: u32) -> Nanos {
        let d = match op {
            Op::Read => 0,
            Op::Write => 1,
            // fio's third `rate` value (trims) is not read: trims go unpaced.
            Op::Flush | Op::Trim => return 0,
        };
        if let Some(rng) = &mut self.poisson {
            let bps = if self.bps_total {
                self.bps[0]
            } else {
                self.bps[d]
            };
            let iops = if self.iops_total {
                self.iops[0]
            } else {
                self.iops[d]
            };
            let mut gap: f64 = 0.0;
            if bps > 0 {
                gap = len as f64 * 1e9 / bps as f64;
            }
            if iops > 0 {
                gap = gap.max(1e9 / iops as f64);
            }
            if gap == 0.0 {
                return 0;
            }
            let k = if self.bps_total || self.iops_total {
                0
            } else {
                d
            };
            let t = self.clock[k];
            let u: f64 = rng.random();
            self.clock[k] += -(1.0 - u).ln() * gap;
            return t.min(u64::MAX as f64) as Nanos;
        }
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
