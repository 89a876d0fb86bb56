//! `rcp`: the block layer of RCP, request-centric I/O prioritization (Kim et al.,
//! FAST '17, §4.2.2, §4.3, §7.1, §7.6).
//!
//! # Invariants
//! * **Admission isolation** (§4.3): critical and non-critical requests take admission
//!   slots from separate pools, `held_c ≤ S_c` and `held_n ≤ S_n` (128 each). A slot is
//!   held from admission until the request completes. A burst of non-critical requests
//!   can fill only its own pool, so a critical request is never refused because of it.
//! * **Two FIFOs, critical first**: every queued critical request is dispatched before
//!   any non-critical one, except when the starvation timer fired.
//! * **Outstanding limit** (§4.3, §7.6): at most `N` non-critical requests are at the
//!   device at once (`nc_inflight ≤ N`, N = 1 by default) — a hard bound.
//! * **Starvation bound** (§4.3): if non-critical requests have been queued for
//!   `starve` (10 ms) with none dispatched, the head of the non-critical FIFO goes at
//!   the next opportunity where the outstanding limit allows it, ahead of critical
//!   requests. So between two non-critical dispatches at most `starve` passes, plus the
//!   completion of the one non-critical request in flight when the limit is full.
//! * **Split** (opt-in, `split`; off by default): a non-critical request longer than
//!   `split` bytes is cut into pieces of at most `split` bytes (`Request::split`) that
//!   queue in LBA order and count one by one against the outstanding limit, so a
//!   critical request waits behind at most `N` pieces at the device rather than `N`
//!   whole requests — what the kernel RCP ran in did by cutting bios at the queue's
//!   `max_sectors_kb` (512 KiB by default then), which this engine does not. The
//!   request holds its slot until its last piece completes.
//! * **Promotion** (§4.2.2): `promote(id)` moves a queued non-critical request (every
//!   piece of it still queued) to the tail of the critical FIFO, as critical. It keeps the slot it was admitted with
//!   (RCP reprioritises the I/O where it is; it does not reallocate its request).
//!   Requests still waiting for admission are promoted by the engine and admitted again
//!   with the critical pool.
//!
//! `Idle` requests are non-critical.
//!
//! # Tunables (`rcp:slots=128,nc_slots=128,limit=1,starve_ms=10,split=0`)
//! | key | default | unit | meaning |
//! |---|---|---|---|
//! | `slots` | 128 | requests | critical admission slots S_c |
//! | `nc_slots` | 128 | requests | non-critical admission slots S_n |
//! | `limit` | 1 | requests | non-critical requests outstanding at the device, N |
//! | `starve_ms` | 10 | ms | starvation bound; 0 turns the timer off |
//! | `depth` | 0 | requests | device queue depth the scheduler fills (a SATA NCQ-like tag limit); 0 = as deep as the engine allows |
//! | `isolate` | 1 | 0/1 | 0 = one shared pool of S_c + S_n slots (ablation: no admission isolation) |
//! | `split` | 0 | bytes | cut non-critical requests into pieces of at most this size (4k–64m, multiple of 512; 0 = never) |
//! | `target_us` | 0 | µs | adapt N to a target for the critical requests' device time (0 = off: N fixed) |
//!
//! **Adaptive N** (opt-in, `target_us`; not in the paper): RCP's fixed N = 1 suits the
//! SATA SSDs it measured; a device that needs many requests in flight for its bandwidth
//! loses most of the background's. With a target, N starts at `limit` and moves between
//! 1 and `nc_slots` after every 32 critical completions: halved when more than a tenth
//! of them spent longer than the target at the device, raised by a quarter (at least 1)
//! when none did ([`super::depth_target::DepthTarget`], Kyber's idea of a depth that
//! follows a latency target).
//!
//! Simplified: the dirty-ratio limits of the caching layer and the priority inheritance
//! through locks live in other layers; here promotion is an entry point the engine (or
//! a test) calls.

use std::collections::VecDeque;

use super::Counter;
use super::{Admission, Completion, DeviceView, Dispatch, ParamError, Params, Policy};
use crate::types::{IoClass, Nanos, Op, ReqId, Request};

/// Default admission slots per class (RCP §7.1).
pub const DEFAULT_SLOTS: u32 = 128;
/// Default non-critical outstanding limit (RCP §4.3).
pub const DEFAULT_LIMIT: u32 = 1;
/// Default starvation bound in ns (RCP §4.3: 10 ms).
pub const DEFAULT_STARVE_NS: Nanos = 10_000_000;

/// Which admission pool a request's slot came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pool {
    Critical,
    NonCritical,
}

/// RCP's two-class block scheduler with admission slots.
#[derive(Debug)]
pub struct RcpPolicy {
    slots_c: u32,
    slots_n: u32,
    limit: u32,
    starve_ns: Nanos,
    depth: u32,
    isolate: bool,
    /// Non-critical requests longer than this are cut into pieces (0: never).
    split: u32,
    /// With `target_us`: the non-critical limit N adapted to the critical requests'
    /// device time (`limit` is then its current value).
    target: Option<super::depth_target::DepthTarget>,
    held_c: u32,
    held_n: u32,
    /// By request id (the block layer's ids are indices it reuses): the pool of an
    /// admitted request's slot and its pieces not completed yet, until its last piece
    /// completes. A vector, not a map: it grows to the most requests alive at once and
    /// allocates nothing per I/O after.
    admitted: Vec<Option<(Pool, u16)>>,
    crit: VecDeque<Request>,
    nc: VecDeque<Request>,
    nc_inflight: u32,
    inflight: u32,
    /// Start of the current starvation interval: the last non-critical dispatch, or when
    /// the non-critical FIFO last became non-empty.
    nc_clock_ns: Nanos,
    /// The starvation timer fired: the next non-critical request goes first.
    starved: bool,
    promotions: u64,
    starvation_dispatches: u64,
    splits: u64,
}

impl RcpPolicy {
    /// An RCP scheduler with the given slots, limit and starvation bound
    /// (`starve_ns = 0`: no timer), filling the device up to `depth` (0: unbounded).
    ///
    /// # Panics
    /// If a slot count or the limit is zero.
    pub fn new(slots_c: u32, slots_n: u32, limit: u32, starve_ns: Nanos) -> Self {
        assert!(slots_c > 0 && slots_n > 0, "rcp needs admission slots");
        assert!(limit > 0, "rcp non-critical limit must be positive");
        RcpPolicy {
            slots_c,
            slots_n,
            limit,
            starve_ns,
            depth: 0,
            isolate: true,
            split: 0,
            target: None,
            held_c: 0,
            held_n: 0,
            admitted: Vec::new(),
            crit: VecDeque::new(),
            nc: VecDeque::new(),
            nc_inflight: 0,
            inflight: 0,
            nc_clock_ns: 0,
            starved: false,
            promotions: 0,
            starvation_dispatches: 0,
            splits: 0,
        }
    }

    /// Build from parameters (see the module table).
    pub fn from_params(p: &mut Params) -> Result<Self, ParamError> {
        let slots_c = p.take_u64_in("slots", DEFAULT_SLOTS as u64, 1, 1 << 20)? as u32;
        let slots_n = p.take_u64_in("nc_slots", DEFAULT_SLOTS as u64, 1, 1 << 20)? as u32;
        let limit = p.take_u64_in("limit", DEFAULT_LIMIT as u64, 1, 1 << 20)? as u32;
        let starve_ms = p.take_u64_in("starve_ms", DEFAULT_STARVE_NS / 1_000_000, 0, 60_000)?;
        let depth = p.take_u64_in("depth", 0, 0, 1 << 20)? as u32;
        let isolate = p.take_u64_in("isolate", 1, 0, 1)? == 1;
        let split = p.take("split", String::new(), "a size such as 128k, or 0")?;
        let split = match split.trim() {
            "" | "0" => 0,
            v => {
                let b = super::ld::parse_size("split", v)?;
                if !(4096..=(64 << 20)).contains(&b) || b % 512 != 0 {
                    return Err(ParamError::BadValue {
                        key: "split".into(),
                        value: split,
                        expected: "0, or a size from 4k to 64m that is a multiple of 512",
                    });
                }
                b as u32
            }
        };
        let target_us = p.take_u64_in("target_us", 0, 0, 10_000_000)?;
        let mut r = RcpPolicy::new(slots_c, slots_n, limit, starve_ms * 1_000_000);
        r.depth = depth;
        r.isolate = isolate;
        r.split = split;
        if target_us > 0 {
            let t =
                super::depth_target::DepthTarget::new(target_us * 1_000, 1, slots_n.max(1), limit);
            r.limit = t.depth();
            r.target = Some(t);
        }
        Ok(r)
    }

    /// Set the device depth the scheduler fills (0: as deep as the engine allows).
    pub fn with_depth(mut self, depth: u32) -> Self {
        self.depth = depth;
        self
    }

    /// Slots held by critical and non-critical requests.
    pub fn held(&self) -> (u32, u32) {
        (self.held_c, self.held_n)
    }

    fn device_full(&self, view: &DeviceView) -> bool {
        self.depth > 0 && self.inflight.max(view.inflight) >= self.depth
    }

    fn dispatch_nc(&mut self, now_ns: Nanos) -> Option<Dispatch> {
        let req = self.nc.pop_front()?;
        if self.starved {
            self.starvation_dispatches += 1;
        }
        self.starved = false;
        self.nc_clock_ns = now_ns;
        self.nc_inflight += 1;
        self.inflight += 1;
        Some(Dispatch::medium(req))
    }
}

impl Policy for RcpPolicy {
    fn name(&self) -> &'static str {
        "rcp"
    }

    fn admit(&mut self, _now_ns: Nanos, req: &Request) -> Admission {
        let pool = if req.class == IoClass::Critical {
            Pool::Critical
        } else {
            Pool::NonCritical
        };
        let free = if !self.isolate {
            self.held_c + self.held_n < self.slots_c + self.slots_n
        } else if pool == Pool::Critical {
            self.held_c < self.slots_c
        } else {
            self.held_n < self.slots_n
        };
        if !free {
            return Admission::Wait;
        }
        match pool {
            Pool::Critical => self.held_c += 1,
            Pool::NonCritical => self.held_n += 1,
        }
        let i = req.id.0 as usize;
        if self.admitted.len() <= i {
            self.admitted.resize(i + 1, None);
        }
        let prev = self.admitted[i].replace((pool, 1));
        assert!(prev.is_none(), "rcp: request {:?} admitted twice", req.id);
        Admission::Admit
    }

    fn enqueue(&mut self, now_ns: Nanos, req: Request) {
        if req.class == IoClass::Critical {
            self.crit.push_back(req);
        } else {
            if self.nc.is_empty() {
                // The starvation interval starts when non-critical work starts waiting.
                self.nc_clock_ns = now_ns;
            }
            let pieces = match self.split {
                0 => 1,
                s => req.len.div_ceil(s),
            };
            // An atomic write stays whole (`Request::split`): no piece count to keep.
            if pieces > 1
                && pieces <= u16::MAX as u32
                && !matches!(req.op, Op::Flush | Op::Trim)
                && !req.is_atomic_write()
            {
                if let Some(Some(a)) = self.admitted.get_mut(req.id.0 as usize) {
                    a.1 = pieces as u16;
                }
                self.splits += 1;
                self.nc.extend(req.split(self.split));
            } else {
                self.nc.push_back(req);
            }
        }
    }

    fn dispatch(&mut self, now_ns: Nanos, view: &DeviceView) -> Option<Dispatch> {
        if self.device_full(view) {
            return None;
        }
        let nc_room = self.nc_inflight < self.limit;
        // The starvation timer fired: one non-critical request first.
        if self.starved && nc_room && !self.nc.is_empty() {
            return self.dispatch_nc(now_ns);
        }
        if let Some(req) = self.crit.pop_front() {
            self.inflight += 1;
            return Some(Dispatch::medium(req));
        }
        if nc_room {
            return self.dispatch_nc(now_ns);
        }
        None
    }

    fn complete(&mut self, _now_ns: Nanos, done: &Completion) {
        // The slot (with the request's last piece) and the outstanding count come
        // back whatever `done.ok` says.
        let entry = self
            .admitted
            .get_mut(done.req.id.0 as usize)
            .expect("rcp: completion of a request it did not admit");
        let (pool, left) = entry.expect("rcp: completion of a request it did not admit");
        if left > 1 {
            *entry = Some((pool, left - 1));
        } else {
            *entry = None;
            match pool {
                Pool::Critical => self.held_c -= 1,
                Pool::NonCritical => self.held_n -= 1,
            }
        }
        assert!(self.inflight > 0, "rcp: completion with nothing in flight");
        self.inflight -= 1;
        if done.req.class != IoClass::Critical {
            assert!(self.nc_inflight > 0, "rcp: non-critical count underflow");
            self.nc_inflight -= 1;
        } else if let Some(t) = &mut self.target {
            t.observe(done.device_ns());
            self.limit = t.depth();
        }
    }

    fn next_timer_ns(&self) -> Option<Nanos> {
        if self.starve_ns == 0 || self.starved || self.nc.is_empty() {
            return None;
        }
        Some(self.nc_clock_ns + self.starve_ns)
    }

    fn timer(&mut self, now_ns: Nanos) {
        if self.starve_ns > 0 && !self.nc.is_empty() && now_ns >= self.nc_clock_ns + self.starve_ns
        {
            self.starved = true;
        }
    }

    fn promote(&mut self, _now_ns: Nanos, id: ReqId) -> bool {
        // Every piece still queued, in order; pieces already at the device finish as
        // the non-critical pieces they were dispatched as.
        let before = self.crit.len();
        let crit = &mut self.crit;
        self.nc.retain(|r| {
            if r.id != id {
                return true;
            }
            crit.push_back(Request {
                class: IoClass::Critical,
                ..*r
            });
            false
        });
        if self.crit.len() == before {
            return false;
        }
        self.promotions += 1;
        true
    }

    fn queued(&self) -> usize {
        self.crit.len() + self.nc.len()
    }

    fn counters(&self) -> Vec<(Counter, f64)> {
        vec![
            (Counter::CriticalSlotsHeld, self.held_c as f64),
            (Counter::NoncriticalSlotsHeld, self.held_n as f64),
            (Counter::NoncriticalInflight, self.nc_inflight as f64),
            (Counter::Promotions, self.promotions as f64),
            (
                Counter::StarvationDispatches,
                self.starvation_dispatches as f64,
            ),
        ]
        .into_iter()
        // The split count only where splitting is on (the other counters' output is
        // that of RCP as the paper has it).
        .chain((self.split > 0).then_some((Counter::SplitRequests, self.splits as f64)))
        .chain(
            self.target
                .as_ref()
                .map(|t| (Counter::DepthAdjustments, t.adjustments() as f64)),
        )
        .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{FlowId, Op, QueueClass};

    fn req(id: u64, class: IoClass) -> Request {
        Request {
            id: ReqId(id),
            flow: FlowId(0),
            op: Op::Write,
            offset: id * 4096,
            len: 4096,
            class,
            submit_ns: 0,
            hwq: 0,
            parts: 1,
            fua: false,
            placement: 0,
            atomic: false,
        }
    }

    fn done(req: Request, ok: bool) -> Completion {
        Completion {
            req,
            queue: QueueClass::Medium,
            dispatch_ns: 0,
            complete_ns: 1,
            ok,
        }
    }

    fn admit_enqueue(p: &mut RcpPolicy, now: Nanos, r: Request) -> Admission {
        let a = p.admit(now, &r);
        if a == Admission::Admit {
            p.enqueue(now, r);
        }
        a
    }

    #[test]
    fn critical_admission_is_isolated_from_a_noncritical_burst() {
        let mut p = RcpPolicy::new(4, 4, 1, DEFAULT_STARVE_NS);
        let mut refused = 0;
        for i in 0..512 {
            if admit_enqueue(&mut p, 0, req(i, IoClass::Normal)) == Admission::Wait {
                refused += 1;
            }
        }
        assert_eq!(refused, 508, "non-critical burst capped at its 4 slots");
        for i in 1000..1004 {
            assert_eq!(
                admit_enqueue(&mut p, 0, req(i, IoClass::Critical)),
                Admission::Admit
            );
        }
        assert_eq!(p.held(), (4, 4));
        // The critical pool is full now; a fifth critical waits, normal slots unchanged.
        assert_eq!(p.admit(0, &req(1005, IoClass::Critical)), Admission::Wait);

        // Without isolation the burst takes every slot and critical requests wait.
        let mut shared = RcpPolicy::new(4, 4, 1, DEFAULT_STARVE_NS);
        shared.isolate = false;
        for i in 0..512 {
            admit_enqueue(&mut shared, 0, req(i, IoClass::Normal));
        }
        assert_eq!(
            shared.admit(0, &req(1000, IoClass::Critical)),
            Admission::Wait
        );
    }

    #[test]
    fn critical_first_and_noncritical_limit() {
        let mut p = RcpPolicy::new(128, 128, 2, DEFAULT_STARVE_NS);
        for i in 0..5 {
            admit_enqueue(&mut p, 0, req(i, IoClass::Normal));
        }
        for i in 10..13 {
            admit_enqueue(&mut p, 0, req(i, IoClass::Critical));
        }
        let v = DeviceView::default();
        let out: Vec<Request> = std::iter::from_fn(|| p.dispatch(0, &v).map(|d| d.req)).collect();
        let ids: Vec<u64> = out.iter().map(|r| r.id.0).collect();
        assert_eq!(
            ids,
            vec![10, 11, 12, 0, 1],
            "critical FIFO first, then N = 2 normal"
        );
        // A failed non-critical completion frees its outstanding place and its slot.
        p.complete(1, &done(out[3], false));
        assert_eq!(p.held(), (3, 4));
        assert_eq!(p.dispatch(1, &v).map(|d| d.req.id.0), Some(2));
        assert!(p.dispatch(1, &v).is_none());
    }

    /// Drives the policy as an engine would, with a device of depth 4 that a continuous
    /// critical load keeps full: non-critical requests must still leave at least every
    /// 10 ms (plus one device service time when the limit is full).
    #[test]
    fn starvation_bound_under_continuous_critical_load() {
        let service: Nanos = 100_000; // 100 µs per request at the device
        let mut p = RcpPolicy::new(1 << 16, 1 << 16, 1, DEFAULT_STARVE_NS).with_depth(4);
        let mut next_id = 0u64;
        let mut mk = |class| {
            next_id += 1;
            req(next_id, class)
        };
        for _ in 0..50 {
            admit_enqueue(&mut p, 0, mk(IoClass::Normal));
        }
        let mut inflight: VecDeque<(Nanos, Request)> = VecDeque::new();
        let mut nc_dispatch_times = Vec::new();
        let mut now: Nanos = 0;
        let end: Nanos = 200_000_000;
        while now < end {
            // Keep 8 critical requests queued at all times (a continuous critical load).
            while p.crit.len() < 8 {
                admit_enqueue(&mut p, now, mk(IoClass::Critical));
            }
            let v = DeviceView::default();
            while let Some(d) = p.dispatch(now, &v) {
                if d.req.class != IoClass::Critical {
                    nc_dispatch_times.push(now);
                }
                inflight.push_back((now + service, d.req));
            }
            // Next event: a completion or the policy's timer.
            let t_done = inflight.front().map(|(t, _)| *t).unwrap_or(Nanos::MAX);
            let t_timer = p.next_timer_ns().unwrap_or(Nanos::MAX);
            now = t_done.min(t_timer);
            if t_timer <= t_done {
                p.timer(now);
            } else {
                let (_, r) = inflight.pop_front().unwrap();
                p.complete(now, &done(r, true));
            }
        }
        assert!(
            nc_dispatch_times.len() >= 19,
            "{} dispatches",
            nc_dispatch_times.len()
        );
        let max_gap = nc_dispatch_times
            .windows(2)
            .map(|w| w[1] - w[0])
            .max()
            .unwrap();
        assert!(
            max_gap <= DEFAULT_STARVE_NS + service,
            "non-critical waited {max_gap} ns"
        );
        assert!(p.starvation_dispatches > 0, "the timer did the work");

        // Without the timer the same load starves non-critical requests completely.
        let mut q = RcpPolicy::new(1 << 16, 1 << 16, 1, 0).with_depth(4);
        for i in 0..4 {
            admit_enqueue(&mut q, 0, req(i, IoClass::Critical));
        }
        admit_enqueue(&mut q, 0, req(100, IoClass::Normal));
        assert!(q.next_timer_ns().is_none());
        let v = DeviceView::default();
        let ids: Vec<u64> = std::iter::from_fn(|| q.dispatch(0, &v).map(|d| d.req.id.0)).collect();
        assert_eq!(
            ids,
            vec![0, 1, 2, 3],
            "depth full of critical, normal waits"
        );
    }

    #[test]
    fn timer_starts_when_noncritical_work_starts_waiting() {
        let mut p = RcpPolicy::new(8, 8, 1, DEFAULT_STARVE_NS);
        assert_eq!(p.next_timer_ns(), None, "nothing queued, no timer");
        admit_enqueue(&mut p, 50_000_000, req(1, IoClass::Normal));
        assert_eq!(p.next_timer_ns(), Some(60_000_000));
    }

    #[test]
    fn promotion_moves_a_queued_request_to_the_critical_fifo() {
        let mut p = RcpPolicy::new(8, 8, 1, DEFAULT_STARVE_NS);
        let a = req(1, IoClass::Normal);
        let b = req(2, IoClass::Normal);
        let c = req(3, IoClass::Normal);
        for r in [a, b, c] {
            admit_enqueue(&mut p, 0, r);
        }
        let v = DeviceView::default();
        let first = p.dispatch(0, &v).unwrap().req;
        assert_eq!(first.id, ReqId(1));
        assert!(!p.promote(0, ReqId(1)), "in flight: nothing to promote");
        assert!(!p.promote(0, ReqId(99)), "unknown");
        assert!(p.promote(0, ReqId(3)));
        // The promoted request goes now, although the non-critical limit is full.
        let d = p.dispatch(0, &v).unwrap().req;
        assert_eq!((d.id, d.class), (ReqId(3), IoClass::Critical));
        assert!(
            p.dispatch(0, &v).is_none(),
            "request 2 still waits for the limit"
        );
        // It keeps its non-critical slot: completing it frees that one.
        p.complete(1, &done(d, true));
        assert_eq!(p.held(), (0, 2));
        p.complete(1, &done(first, true));
        assert_eq!(p.dispatch(1, &v).unwrap().req.id, ReqId(2));
    }

    #[test]
    fn a_request_waiting_for_admission_is_admitted_critical_once_promoted() {
        let mut p = RcpPolicy::new(1, 1, 1, DEFAULT_STARVE_NS);
        admit_enqueue(&mut p, 0, req(1, IoClass::Normal));
        let mut w = req(2, IoClass::Normal);
        assert_eq!(p.admit(0, &w), Admission::Wait);
        // The engine promotes the waiting request and asks again.
        w.class = IoClass::Critical;
        assert_eq!(p.admit(0, &w), Admission::Admit);
        assert_eq!(p.held(), (1, 1));
    }

    #[test]
    fn a_latency_target_adapts_the_noncritical_limit() {
        let mut r =
            RcpPolicy::from_params(&mut Params::parse("limit=8,target_us=100").unwrap()).unwrap();
        let view = DeviceView::default();
        let mut next = 0u64;
        let mut round = |r: &mut RcpPolicy, device_ns: Nanos| {
            // One window of critical requests, each spending `device_ns` at the device.
            for _ in 0..super::super::depth_target::WINDOW {
                let c = req(next, IoClass::Critical);
                next += 1;
                assert_eq!(r.admit(0, &c), Admission::Admit);
                r.enqueue(0, c);
                let d = r.dispatch(0, &view).unwrap();
                r.complete(
                    device_ns,
                    &Completion {
                        req: d.req,
                        queue: QueueClass::Medium,
                        dispatch_ns: 0,
                        complete_ns: device_ns,
                        ok: true,
                    },
                );
            }
        };
        round(&mut r, 500_000); // slow: 8 → 4
        assert_eq!(r.limit, 4);
        round(&mut r, 50_000); // fast: 4 → 5
        assert_eq!(r.limit, 5);
        // The limit holds at dispatch: 5 non-critical requests go, the sixth waits.
        for i in 0..6 {
            let n = req(1000 + i, IoClass::Normal);
            assert_eq!(r.admit(0, &n), Admission::Admit);
            r.enqueue(0, n);
        }
        let sent = std::iter::from_fn(|| r.dispatch(0, &view)).count();
        assert_eq!(sent, 5);
        assert!(r
            .counters()
            .iter()
            .any(|(c, v)| *c == Counter::DepthAdjustments && *v == 2.0));
    }

    #[test]
    fn params() {
        let mut ps = Params::parse("slots=4,nc_slots=2,limit=3,starve_ms=0,depth=31").unwrap();
        let r = RcpPolicy::from_params(&mut ps).unwrap();
        assert_eq!(
            (r.slots_c, r.slots_n, r.limit, r.starve_ns, r.depth),
            (4, 2, 3, 0, 31)
        );
        assert!(RcpPolicy::from_params(&mut Params::parse("limit=0").unwrap()).is_err());
        assert!(RcpPolicy::from_params(&mut Params::parse("isolate=x").unwrap()).is_err());
        let r = RcpPolicy::from_params(&mut Params::parse("split=128k").unwrap()).unwrap();
        assert_eq!(r.split, 128 << 10);
        for bad in ["split=1k", "split=100000", "split=x", "split=128m"] {
            assert!(
                RcpPolicy::from_params(&mut Params::parse(bad).unwrap()).is_err(),
                "{bad}"
            );
        }
    }

    /// With `split`, a long non-critical request goes as pieces one at a time (limit
    /// 1), a critical request passes between two of them, the slot comes back with
    /// the last piece, and a promotion takes the pieces still queued.
    #[test]
    fn split_pieces_let_critical_requests_pass_between_them() {
        let mut p = RcpPolicy::new(8, 8, 1, DEFAULT_STARVE_NS);
        p.split = 128 << 10;
        let big = Request {
            len: 512 << 10,
            ..req(1, IoClass::Normal)
        };
        admit_enqueue(&mut p, 0, big);
        let v = DeviceView::default();
        let first = p.dispatch(0, &v).unwrap().req;
        assert_eq!((first.id, first.len, first.parts), (ReqId(1), 128 << 10, 4));
        assert!(p.dispatch(0, &v).is_none(), "one piece at a time");
        admit_enqueue(&mut p, 0, req(2, IoClass::Critical));
        p.complete(1, &done(first, true));
        assert_eq!(p.held(), (1, 1), "the slot stays until the last piece");
        // The critical request goes before the second piece.
        assert_eq!(p.dispatch(1, &v).unwrap().req.id, ReqId(2));
        let second = p.dispatch(1, &v).unwrap().req;
        assert_eq!(
            (second.id, second.offset),
            (ReqId(1), first.offset + (128 << 10))
        );
        // Promoted: the two pieces still queued move to the critical FIFO.
        assert!(p.promote(1, ReqId(1)));
        assert!(p.nc.is_empty());
        assert_eq!(p.crit.len(), 2);
        let rest: Vec<Request> = std::iter::from_fn(|| p.dispatch(1, &v).map(|d| d.req)).collect();
        assert_eq!(rest.len(), 2);
        assert!(rest.iter().all(|r| r.class == IoClass::Critical));
        for r in [second, rest[0], rest[1]] {
            p.complete(2, &done(r, true));
        }
        assert_eq!(p.held(), (1, 0), "the last piece gave the slot back");
        assert_eq!(p.nc_inflight, 0);
        let c = p.counters();
        assert!(c.contains(&(Counter::SplitRequests, 1.0)));
        // Off by default: the request goes whole, and no split counter is reported.
        let mut whole = RcpPolicy::new(8, 8, 1, DEFAULT_STARVE_NS);
        admit_enqueue(&mut whole, 0, big);
        assert_eq!(whole.dispatch(0, &v).unwrap().req.len, 512 << 10);
        assert!(!whole
            .counters()
            .iter()
            .any(|c| c.0 == Counter::SplitRequests));
    }

    /// An atomic write that `split` would cut goes whole: one dispatch of its full
    /// length, the slot back with it, no split counted.
    #[test]
    fn an_atomic_write_is_not_split() {
        let mut p = RcpPolicy::new(8, 8, 1, DEFAULT_STARVE_NS);
        p.split = 128 << 10;
        let big = Request {
            len: 512 << 10,
            op: Op::Write,
            atomic: true,
            ..req(1, IoClass::Normal)
        };
        admit_enqueue(&mut p, 0, big);
        let v = DeviceView::default();
        let d = p.dispatch(0, &v).unwrap().req;
        assert_eq!((d.len, d.parts, d.atomic), (512 << 10, 1, true));
        assert!(p.dispatch(0, &v).is_none());
        p.complete(1, &done(d, true));
        assert_eq!(p.held(), (0, 0), "the whole request gave the slot back");
        assert!(p.counters().contains(&(Counter::SplitRequests, 0.0)));
        assert_eq!(p.nc_inflight, 0);
    }
}
