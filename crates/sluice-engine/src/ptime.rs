//! Policy CPU time.
//!
//! Every call into the policy on the I/O path (`admit`, `enqueue`, `dispatch` —
//! including the one that finds nothing —, `complete`, `timer`, `next_timer_ns`) is
//! bracketed by two reads of the CPU's time-stamp counter ([`PolicyTime`]; the
//! monotonic clock where there is no TSC), so the cost of scheduling can be told
//! apart from the kernel's and the engine's. The bracket's own cost (the median
//! interval of two back-to-back reads, measured when the worker starts) is subtracted
//! per call and reported; an interval longer than [`OUTLIER_NS`] is a preemption, not
//! policy work, and is left out (and counted). Ticks become ns by the ratio of the TSC
//! to the monotonic clock over the worker's life. The policy never sees any of it.

use std::time::Instant;

use sluice_block::{Meter, PolicyCall};

/// A timed policy call longer than this is taken for a preemption of the worker
/// thread (or a long interrupt), not policy work: it is left out of the policy time
/// and counted in [`PolicyTimeReport::outliers`].
pub(crate) const OUTLIER_NS: u64 = 100_000;

/// The time-stamp counter (x86-64) or the monotonic clock in ns (elsewhere).
#[inline(always)]
fn ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: RDTSC has no preconditions on x86-64.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: valid out pointer.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    }
}

/// Name of the counter [`ticks`] reads.
pub(crate) const TICK_SOURCE: &str = if cfg!(target_arch = "x86_64") {
    "tsc"
} else {
    "clock_monotonic"
};

/// Time spent inside policy calls, accumulated per call kind in ticks.
#[derive(Debug)]
pub(crate) struct PolicyTime {
    ticks: [u64; 6],
    calls: [u64; 6],
    outliers: u64,
    outlier_ticks: u64,
    /// Median interval of two back-to-back `ticks()` reads: the bracket's own cost.
    overhead_ticks: u64,
    start_ticks: u64,
    start: Instant,
}

impl PolicyTime {
    pub(crate) fn new() -> PolicyTime {
        // The bracket's cost, and a first ticks-per-ns estimate for the outlier bound.
        let mut d: Vec<u64> = (0..4096)
            .map(|_| {
                let a = ticks();
                let b = std::hint::black_box(ticks());
                b.wrapping_sub(a)
            })
            .collect();
        d.sort_unstable();
        let (t0, i0) = (ticks(), Instant::now());
        while i0.elapsed().as_nanos() < 200_000 {
            std::hint::spin_loop();
        }
        let per_ns = ticks().wrapping_sub(t0) as f64 / i0.elapsed().as_nanos().max(1) as f64;
        PolicyTime {
            ticks: [0; 6],
            calls: [0; 6],
            outliers: 0,
            outlier_ticks: (OUTLIER_NS as f64 * per_ns.max(1e-3)) as u64,
            overhead_ticks: d[d.len() / 2],
            start_ticks: ticks(),
            start: Instant::now(),
        }
    }

    /// Run `f` (one policy call of kind `k`) and add its duration.
    #[inline(always)]
    fn time_kind<R>(&mut self, k: usize, f: impl FnOnce() -> R) -> R {
        let a = ticks();
        let r = f();
        let d = ticks().wrapping_sub(a);
        if d < self.outlier_ticks {
            self.ticks[k] += d;
            self.calls[k] += 1;
        } else {
            self.outliers += 1;
        }
        r
    }

    /// Ticks to ns over the worker's life, and the per-kind figures in ns.
    pub(crate) fn report(&self) -> PolicyTimeReport {
        let ns = self.start.elapsed().as_nanos() as f64;
        let tk = ticks().wrapping_sub(self.start_ticks) as f64;
        let ns_per_tick = if tk > 0.0 { ns / tk } else { 1.0 };
        let mut r = PolicyTimeReport {
            raw_ns: [0.0; 6],
            ns: [0.0; 6],
            calls: self.calls,
            outliers: self.outliers,
            overhead_ns: self.overhead_ticks as f64 * ns_per_tick,
        };
        for k in 0..6 {
            let raw = self.ticks[k] as f64;
            let net = (raw - (self.calls[k] * self.overhead_ticks) as f64).max(0.0);
            r.raw_ns[k] = raw * ns_per_tick;
            r.ns[k] = net * ns_per_tick;
        }
        r
    }
}

/// The policy time in ns (see [`PolicyTime`]), per kind of [`PolicyCall`].
#[derive(Clone, Debug, Default)]
pub(crate) struct PolicyTimeReport {
    /// Measured, the bracket's cost included.
    pub raw_ns: [f64; 6],
    /// Measured minus `overhead_ns` per call.
    pub ns: [f64; 6],
    /// Timed calls (outliers not included).
    pub calls: [u64; 6],
    /// Calls longer than [`OUTLIER_NS`], left out.
    pub outliers: u64,
    /// The bracket's cost per call, ns.
    pub overhead_ns: f64,
}

impl Meter for PolicyTime {
    #[inline(always)]
    fn time<R>(&mut self, call: PolicyCall, f: impl FnOnce() -> R) -> R {
        self.time_kind(call.index(), f)
    }
}
