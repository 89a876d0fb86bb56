//! `kyber`: the Linux blk-mq Kyber scheduler (block/kyber-iosched.c), as a baseline.
//!
//! # Invariant
//! Requests are sorted into *domains* — READ, WRITE, OTHER (flushes; sluice has no
//! discards) — and each domain has a device-wide token pool: `inflight[d] ≤ depth[d]`
//! at every dispatch (a pool shrunk below its in-flight count admits nothing until
//! enough complete). Depths start at the maximum (READ 256, WRITE 128, OTHER 16) and
//! are adapted to meet latency targets (READ 2 ms, WRITE 10 ms). Kyber ignores the
//! critical class: it is a latency-target scheduler, not a priority one.
//!
//! # Latency histograms and the depth rule (kernel names)
//! Every completion of a READ or WRITE request adds its *total* latency (completion −
//! submit) and its *I/O* latency (completion − dispatch) to 8-bucket histograms whose
//! bucket width is target/4 (`KYBER_LATENCY_SHIFT` = 2): buckets 0–3 are ≤ target
//! ("good"), 4–7 above it. A timer runs 100 ms after the first completion since it last
//! ran. It computes, for a domain with ≥ 500 samples or 1 s since its first sample:
//! * `bad` = some domain's p90 I/O-latency bucket ≥ 4 (the device is congested);
//! * per domain the p99 total-latency bucket `p99` (remembered across windows);
//! * if `bad` or `p99 ≥ 4`: `depth ← clamp(depth · (p99 + 1) / 4, 1, max)` — a domain
//!   meeting its target is throttled when the device is congested, one missing it is
//!   given more depth.
//!
//! A histogram is cleared when a percentile is taken from it.
//!
//! # Dispatch
//! Per hardware queue, domains are served in batches (READ 16, WRITE 8, OTHER 1),
//! rotating to the next domain with work and a token when the batch ends or the domain
//! is empty or out of tokens.
//!
//! # Tunables (`kyber:read_lat_us=2000,write_lat_us=10000`)
//! | key | default | unit |
//! |---|---|---|
//! | `read_lat_us` | 2000 | µs |
//! | `write_lat_us` | 10000 | µs |
//!
//! Simplified: no bio merging in the per-CPU lists, no `async_depth` limit on scheduler
//! tags, the per-CPU histograms are one histogram, hardware queues take turns round
//! robin, and there is no DISCARD domain.

use std::collections::VecDeque;

use super::Counter;
use super::{Completion, DeviceView, Dispatch, ParamError, Params, Policy};
use crate::types::{Nanos, Op, Request};

const READ: usize = 0;
const WRITE: usize = 1;
const OTHER: usize = 2;
const DOMAINS: usize = 3;
/// Domains with latency targets and histograms.
const MEASURED: usize = 2;

/// Maximum (and initial) depth per domain.
const MAX_DEPTH: [u32; DOMAINS] = [256, 128, 16];
/// Requests per batch per domain.
const BATCH: [u32; DOMAINS] = [16, 8, 1];
/// Bucket width is target >> SHIFT; the first 1 << SHIFT buckets are good.
const SHIFT: u32 = 2;
const GOOD_BUCKETS: usize = 1 << SHIFT;
const BUCKETS: usize = 2 << SHIFT;
const TOTAL: usize = 0;
const IO: usize = 1;
/// Timer period: 100 ms (HZ / 10).
const TIMER_NS: Nanos = 100_000_000;
/// A percentile is computed from 500 samples, or after 1 s with fewer.
const MIN_SAMPLES: u64 = 500;
const SAMPLE_TIMEOUT_NS: Nanos = 1_000_000_000;

#[derive(Debug, Default)]
struct HwQueue {
    rqs: [VecDeque<Request>; DOMAINS],
    cur: usize,
    batching: u32,
}

/// Linux Kyber.
#[derive(Debug)]
pub struct KyberPolicy {
    target_ns: [Nanos; MEASURED],
    depth: [u32; DOMAINS],
    inflight: [u32; DOMAINS],
    hwqs: Vec<HwQueue>,
    next_hwq: usize,
    queued: usize,
    /// [domain][TOTAL | IO][bucket]
    buckets: [[[u64; BUCKETS]; 2]; MEASURED],
    /// When a domain's first sample of the current window was seen by the timer.
    latency_timeout: [Option<Nanos>; MEASURED],
    /// p99 bucket remembered until congestion is seen (-1: none).
    domain_p99: [i32; MEASURED],
    timer_at: Option<Nanos>,
    adjustments: u64,
}

impl Default for KyberPolicy {
    fn default() -> Self {
        Self::new(2_000_000, 10_000_000)
    }
}

impl KyberPolicy {
    /// Kyber with read and write latency targets in ns.
    pub fn new(read_target_ns: Nanos, write_target_ns: Nanos) -> Self {
        KyberPolicy {
            target_ns: [read_target_ns, write_target_ns],
            depth: MAX_DEPTH,
            inflight: [0; DOMAINS],
            hwqs: Vec::new(),
            next_hwq: 0,
            queued: 0,
            buckets: [[[0; BUCKETS]; 2]; MEASURED],
            latency_timeout: [None; MEASURED],
            domain_p99: [-1; MEASURED],
            timer_at: None,
            adjustments: 0,
        }
    }

    /// Build from parameters (see the module table).
    pub fn from_params(p: &mut Params) -> Result<Self, ParamError> {
        let r = p.take_u64_in("read_lat_us", 2000, 1, 60_000_000)?;
        let w = p.take_u64_in("write_lat_us", 10_000, 1, 60_000_000)?;
        Ok(KyberPolicy::new(r * 1000, w * 1000))
    }

    /// Current depth of the READ, WRITE and OTHER domains.
    pub fn depths(&self) -> [u32; DOMAINS] {
        self.depth
    }

    fn domain(op: Op) -> usize {
        match op {
            Op::Read => READ,
            Op::Write => WRITE,
            // Linux's kyber has a DISCARD domain of its own; here trims share OTHER
            // with flushes (its own token pool, so trims never take read or write
            // tokens).
            Op::Flush | Op::Trim => OTHER,
        }
    }

    fn add_sample(&mut self, d: usize, kind: usize, latency_ns: Nanos) {
        let width = (self.target_ns[d] >> SHIFT).max(1);
        let b = if latency_ns == 0 {
            0
        } else {
            (((latency_ns - 1) / width) as usize).min(BUCKETS - 1)
        };
        self.buckets[d][kind][b] += 1;
    }

    /// The kernel's `calculate_percentile`: the bucket holding percentile `pct` of
    /// domain `d`'s `kind` histogram, or -1 without enough samples. Clears the histogram
    /// when it answers.
    fn percentile(&mut self, now_ns: Nanos, d: usize, kind: usize, pct: u64) -> i32 {
        let samples: u64 = self.buckets[d][kind].iter().sum();
        if samples == 0 {
            return -1;
        }
        let timeout = *self.latency_timeout[d].get_or_insert(now_ns + SAMPLE_TIMEOUT_NS);
        if samples < MIN_SAMPLES && now_ns < timeout {
            return -1;
        }
        self.latency_timeout[d] = None;
        let mut left = (samples * pct).div_ceil(100);
        let mut bucket = 0;
        while bucket < BUCKETS - 1 {
            if self.buckets[d][kind][bucket] >= left {
                break;
            }
            left -= self.buckets[d][kind][bucket];
            bucket += 1;
        }
        self.buckets[d][kind] = [0; BUCKETS];
        bucket as i32
    }

    fn dispatch_domain(&mut self, h: usize, d: usize) -> Option<Request> {
        if self.inflight[d] >= self.depth[d] {
            return None;
        }
        let r = self.hwqs[h].rqs[d].pop_front()?;
        self.inflight[d] += 1;
        self.hwqs[h].batching += 1;
        self.queued -= 1;
        Some(r)
    }

    /// The kernel's `kyber_dispatch_request` for one hardware queue.
    fn dispatch_hwq(&mut self, h: usize) -> Option<Request> {
        let cur = self.hwqs[h].cur;
        if self.hwqs[h].batching < BATCH[cur] {
            if let Some(r) = self.dispatch_domain(h, cur) {
                return Some(r);
            }
        }
        self.hwqs[h].batching = 0;
        for _ in 0..DOMAINS {
            let q = &mut self.hwqs[h];
            q.cur = (q.cur + 1) % DOMAINS;
            let d = q.cur;
            if let Some(r) = self.dispatch_domain(h, d) {
                return Some(r);
            }
        }
        None
    }
}

impl Policy for KyberPolicy {
    fn name(&self) -> &'static str {
        "kyber"
    }

    fn enqueue(&mut self, _now_ns: Nanos, req: Request) {
        let h = req.hwq as usize;
        if self.hwqs.len() <= h {
            self.hwqs.resize_with(h + 1, HwQueue::default);
        }
        self.hwqs[h].rqs[Self::domain(req.op)].push_back(req);
        self.queued += 1;
    }

    fn dispatch(&mut self, _now_ns: Nanos, _view: &DeviceView) -> Option<Dispatch> {
        let n = self.hwqs.len();
        for i in 0..n {
            let h = (self.next_hwq + i) % n;
            if let Some(r) = self.dispatch_hwq(h) {
                self.next_hwq = (h + 1) % n;
                return Some(Dispatch::medium(r));
            }
        }
        None
    }

    fn complete(&mut self, now_ns: Nanos, done: &Completion) {
        let d = Self::domain(done.req.op);
        assert!(self.inflight[d] > 0, "kyber: completion with no token held");
        self.inflight[d] -= 1;
        if d == OTHER {
            return;
        }
        self.add_sample(
            d,
            TOTAL,
            done.complete_ns.saturating_sub(done.req.submit_ns),
        );
        self.add_sample(d, IO, done.device_ns());
        // timer_reduce(now + 100 ms): the earlier of the pending time and this one.
        let at = now_ns + TIMER_NS;
        self.timer_at = Some(self.timer_at.map_or(at, |t| t.min(at)));
    }

    fn next_timer_ns(&self) -> Option<Nanos> {
        self.timer_at
    }

    /// The kernel's `kyber_timer_fn`.
    // `d` indexes several per-domain arrays at once, as in the kernel.
    #[allow(clippy::needless_range_loop)]
    fn timer(&mut self, now_ns: Nanos) {
        self.timer_at = None;
        let mut bad = false;
        for d in 0..MEASURED {
            if self.percentile(now_ns, d, IO, 90) >= GOOD_BUCKETS as i32 {
                bad = true;
            }
        }
        for d in 0..MEASURED {
            let mut p99 = self.percentile(now_ns, d, TOTAL, 99);
            // Domains reach enough samples in different windows: remember a p99 until
            // congestion is seen, then use it once.
            if bad {
                if p99 < 0 {
                    p99 = self.domain_p99[d];
                }
                self.domain_p99[d] = -1;
            } else if p99 >= 0 {
                self.domain_p99[d] = p99;
            }
            if p99 < 0 {
                continue;
            }
            if bad || p99 >= GOOD_BUCKETS as i32 {
                let scaled = (self.depth[d] as u64 * (p99 as u64 + 1)) >> SHIFT;
                let depth = (scaled as u32).clamp(1, MAX_DEPTH[d]);
                if depth != self.depth[d] {
                    self.depth[d] = depth;
                    self.adjustments += 1;
                }
            }
        }
    }

    fn queued(&self) -> usize {
        self.queued
    }

    fn counters(&self) -> Vec<(Counter, f64)> {
        vec![
            (Counter::ReadDepth, self.depth[READ] as f64),
            (Counter::WriteDepth, self.depth[WRITE] as f64),
            (Counter::DepthAdjustments, self.adjustments as f64),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{FlowId, IoClass, QueueClass, ReqId};

    fn req(id: u64, op: Op, hwq: u16) -> Request {
        Request {
            id: ReqId(id),
            flow: FlowId(0),
            op,
            offset: id * 4096,
            len: 4096,
            class: IoClass::Normal,
            submit_ns: 0,
            hwq,
            parts: 1,
            fua: false,
            placement: 0,
            atomic: false,
        }
    }

    /// Complete `n` requests of `op` with the given total and device latencies.
    fn feed(p: &mut KyberPolicy, now: Nanos, op: Op, n: u64, total_ns: Nanos, io_ns: Nanos) {
        let v = DeviceView::default();
        for i in 0..n {
            p.enqueue(now, req(i, op, 0));
            let d = p.dispatch(now, &v).expect("a token").req;
            p.complete(
                now + total_ns,
                &Completion {
                    req: Request {
                        submit_ns: now,
                        ..d
                    },
                    queue: QueueClass::Medium,
                    dispatch_ns: now + total_ns - io_ns,
                    complete_ns: now + total_ns,
                    ok: true,
                },
            );
        }
    }

    #[test]
    fn congestion_throttles_good_domains_and_bad_ones_get_depth_back() {
        let mut p = KyberPolicy::default();
        assert_eq!(p.depths(), [256, 128, 16]);
        // Reads miss their 2 ms target on the device (congestion); writes are fast.
        feed(&mut p, 0, Op::Read, 600, 5_000_000, 5_000_000);
        feed(&mut p, 0, Op::Write, 600, 1_000_000, 1_000_000);
        let t = p.next_timer_ns().expect("timer armed by completions");
        assert_eq!(
            t,
            1_000_000 + TIMER_NS,
            "100 ms after the earliest completion"
        );
        p.timer(t);
        let [r, w, _] = p.depths();
        // Writes (p99 in bucket 0: ≤ 2.5 ms of 10 ms) are throttled to 1/4.
        assert_eq!(w, 32, "write depth 128 → 128·1/4");
        // Reads: p99 in the last bucket, depth · 8/4, clamped at the maximum 256.
        assert_eq!(r, 256);

        // Now reads are throttled by write congestion, then ask for depth back.
        let mut p = KyberPolicy::default();
        feed(&mut p, 0, Op::Read, 600, 300_000, 300_000); // good: bucket 0
        feed(&mut p, 0, Op::Write, 600, 30_000_000, 30_000_000); // congested
        p.timer(p.next_timer_ns().unwrap());
        assert_eq!(p.depths()[READ], 64, "good reads throttled 256 → 64");
        let before = p.depths()[READ];
        // Reads now miss their target (p99 bucket 5: 2.5–3 ms): depth grows 6/4.
        feed(&mut p, 1_000_000_000, Op::Read, 600, 2_900_000, 100_000);
        p.timer(p.next_timer_ns().unwrap());
        assert_eq!(p.depths()[READ], before * 6 / 4, "bad reads get depth back");
    }

    #[test]
    fn no_adjustment_without_enough_samples_and_no_congestion() {
        let mut p = KyberPolicy::default();
        feed(&mut p, 0, Op::Read, 100, 5_000_000, 5_000_000);
        p.timer(p.next_timer_ns().unwrap());
        assert_eq!(
            p.depths(),
            MAX_DEPTH,
            "100 samples < 500 within the first second"
        );
        // After 1 s the same histogram counts.
        feed(&mut p, 1_100_000_000, Op::Write, 600, 100_000, 100_000);
        p.timer(p.next_timer_ns().unwrap());
        assert_eq!(
            p.depths()[WRITE],
            32,
            "congested reads throttle good writes"
        );
    }

    #[test]
    fn depth_limits_inflight_per_domain() {
        let mut p = KyberPolicy::default();
        p.depth[WRITE] = 2;
        for i in 0..5 {
            p.enqueue(0, req(i, Op::Write, 0));
        }
        p.enqueue(0, req(10, Op::Read, 0));
        let v = DeviceView::default();
        let out: Vec<Request> = std::iter::from_fn(|| p.dispatch(0, &v).map(|d| d.req)).collect();
        let writes = out.iter().filter(|r| r.op == Op::Write).count();
        assert_eq!(
            (writes, out.len()),
            (2, 3),
            "2 write tokens, reads unaffected"
        );
        assert_eq!(p.queued(), 3);
    }
}
