//! [`BlockLayer`]: admission, the policy pump, pieces and parents, promotion.

use std::collections::VecDeque;

use sluice_core::policy::{Admission, Completion, DeviceView, Dispatch, Policy};
use sluice_core::{Flow, FlowId, IoClass, Nanos, Op, QueueClass, ReqId, Request};

use crate::meter::{Meter, NoMeter, PolicyCall};
use crate::port::DevicePort;
use crate::stats::{BlockStats, CounterSeries};
use crate::zonelock::ZoneLock;

/// Marks "not yet" in request times.
const NOT_YET: Nanos = Nanos::MAX;

/// A request as a client hands it to the block layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NewRequest {
    /// The flow it is charged to.
    pub flow: FlowId,
    /// Read, write or flush.
    pub op: Op,
    /// Byte offset in the device's address space.
    pub offset: u64,
    /// Length in bytes.
    pub len: u32,
    /// Its I/O class (critical, normal, idle).
    pub class: IoClass,
    /// The hardware queue (core, worker) it was submitted from; its pieces go to that
    /// queue's submission queues.
    pub hwq: u16,
    /// Force unit access for a write ([`Request::fua`]).
    pub fua: bool,
    /// A write's placement identifier ([`Request::placement`]; 0: none).
    pub placement: u8,
    /// An atomic (untorn) write ([`Request::atomic`]): never split into pieces.
    pub atomic: bool,
}

/// The block layer's record of one request (indexed by its [`ReqId`]).
#[derive(Clone, Copy, Debug)]
pub struct ReqState {
    /// The client's token (a thread index, an engine slot): handed back at completion.
    pub token: u64,
    /// Read, write or flush.
    pub op: Op,
    /// Length of the whole request.
    pub len: u32,
    /// Its offset in the device's address space.
    pub offset: u64,
    /// Its class now (raised by a promotion).
    pub class: IoClass,
    /// Submitted to the block layer.
    pub submit_ns: Nanos,
    /// Admitted (equal to `submit_ns` unless it waited for admission).
    pub admit_ns: Nanos,
    /// First piece dispatched (`Nanos::MAX` until then).
    pub dispatch_ns: Nanos,
    remaining: u16,
    ok: bool,
    live: bool,
    waiting: bool,
}

impl ReqState {
    const EMPTY: ReqState = ReqState {
        token: 0,
        op: Op::Read,
        len: 0,
        offset: 0,
        class: IoClass::Normal,
        submit_ns: 0,
        admit_ns: 0,
        dispatch_ns: NOT_YET,
        remaining: 0,
        ok: true,
        live: false,
        waiting: false,
    };
}

/// A request whose last piece completed: what the client needs for its sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Finished {
    /// Its id (free for reuse from now on).
    pub id: ReqId,
    /// The client's token given at submission.
    pub token: u64,
    /// Read, write or flush.
    pub op: Op,
    /// Length in bytes.
    pub len: u32,
    /// Its offset in the address space it was submitted in (0 where a world's own
    /// completion does not carry it: a buffered or refused I/O).
    pub offset: u64,
    /// Its class at the end (critical if it was promoted).
    pub class: IoClass,
    /// Submitted.
    pub submit_ns: Nanos,
    /// Admitted.
    pub admit_ns: Nanos,
    /// First piece dispatched.
    pub dispatch_ns: Nanos,
    /// Last piece done at the device.
    pub device_done_ns: Nanos,
    /// False when any piece failed.
    pub ok: bool,
}

/// A piece in flight at the device port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece {
    /// The piece as the policy dispatched it (`req.id` is its parent).
    pub req: Request,
    /// Its queue class.
    pub queue: QueueClass,
    /// When it was dispatched.
    pub dispatch_ns: Nanos,
}

/// Why nothing can happen any more (see [`BlockLayer::stall`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stall {
    /// Requests the policy holds.
    pub queued: usize,
    /// Requests waiting for admission.
    pub waiting: usize,
}

/// The one block layer. See the crate documentation for the protocol.
///
/// Invariants (checked in debug builds): `view.inflight` = Σ `view.inflight_per_class` = pieces
/// with a live tag; `waiting[c]` holds the requests of class `c` waiting for admission; a
/// request is live from `submit` to the `Finished` its last piece returns.
pub struct BlockLayer<M: Meter = NoMeter> {
    policy: Box<dyn Policy>,
    meter: M,
    reqs: Vec<ReqState>,
    free_reqs: Vec<u32>,
    pieces: Vec<Option<Piece>>,
    free_tags: Vec<u32>,
    /// Requests refused admission, one FIFO per I/O class (critical, normal, idle).
    /// Admission is FIFO *within a class*: a new request is parked without asking the
    /// policy while an earlier request of its own class waits, so a policy with
    /// per-class admission slots (RCP) admits a critical request at once while a
    /// non-critical burst waits; and a retry stops at a class's first refusal, so one
    /// retry costs O(admitted + classes), not O(waiting).
    waiting: [VecDeque<(u64, Request)>; 3],
    /// Arrival sequence of the admission wait lists (retries go in arrival order across
    /// classes).
    arrivals: u64,
    /// Ask again for the waiting requests at the next pump (set by completions,
    /// timers and promotions — whatever may free an admission slot).
    retry: bool,
    /// A dispatch the port had no room for, offered first at the next pump.
    held: Option<Dispatch>,
    /// What the policy sees at a dispatch opportunity, kept up to date in place (pieces
    /// in flight, in all and per queue class; the port's room as of the last pump).
    view: DeviceView,
    timer: Option<Nanos>,
    wrr_applied: Option<[u32; 3]>,
    stats: BlockStats,
    series: CounterSeries,
    /// Zone write locking, for a zoned device ([`BlockLayer::set_zoned`]).
    zones: Option<Box<ZoneLock>>,
}

impl<M: Meter> std::fmt::Debug for BlockLayer<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockLayer")
            .field("policy", &self.policy.name())
            .field("inflight", &self.view.inflight)
            .field("waiting", &self.waiting())
            .field("queued", &self.policy.queued())
            .finish()
    }
}

impl BlockLayer<NoMeter> {
    /// A block layer around `policy`, told about `flows`.
    pub fn new(policy: Box<dyn Policy>, flows: &[Flow]) -> Self {
        BlockLayer::with_meter(policy, flows, NoMeter, 0)
    }
}

impl<M: Meter> BlockLayer<M> {
    /// A block layer whose policy calls are bracketed by `meter`, with room for
    /// `capacity` requests and pieces preallocated (it grows beyond if needed).
    pub fn with_meter(
        mut policy: Box<dyn Policy>,
        flows: &[Flow],
        meter: M,
        capacity: usize,
    ) -> Self {
        for f in flows {
            policy.add_flow(f);
        }
        let names = policy.counters().iter().map(|(n, _)| *n).collect();
        BlockLayer {
            policy,
            meter,
            reqs: Vec::with_capacity(capacity),
            free_reqs: Vec::with_capacity(capacity),
            pieces: Vec::with_capacity(capacity),
            free_tags: Vec::with_capacity(capacity),
            waiting: std::array::from_fn(|_| VecDeque::with_capacity(capacity)),
            arrivals: 0,
            retry: false,
            held: None,
            view: DeviceView::default(),
            timer: None,
            wrr_applied: None,
            stats: BlockStats::default(),
            series: CounterSeries {
                names,
                ..CounterSeries::default()
            },
            zones: None,
        }
    }

    /// The device is zoned with zones of `zone_size` bytes, every one sequential
    /// write required: from now on every policy's writes keep zone write order (at
    /// most one write piece in flight per zone, a zone's writes in submission order;
    /// see `zonelock.rs`). Call before the first submission.
    pub fn set_zoned(&mut self, zone_size: u64) {
        self.zones = Some(Box::new(ZoneLock::new(zone_size)));
    }

    /// Write pieces held back by zone write locking so far (0 on a conventional
    /// device).
    pub fn zone_parked(&self) -> u64 {
        self.zones.as_ref().map_or(0, |z| z.parked)
    }

    /// Tell the policy about a flow that appeared after construction (an application
    /// task with a new flow), or a flow whose weight changed.
    pub fn add_flow(&mut self, flow: &Flow) {
        self.policy.add_flow(flow);
    }

    /// The policy (for its name, counters, queue length).
    pub fn policy(&self) -> &dyn Policy {
        &*self.policy
    }

    /// The meter.
    pub fn meter(&self) -> &M {
        &self.meter
    }

    /// Pieces dispatched and not yet completed.
    #[inline]
    pub fn inflight(&self) -> u32 {
        self.view.inflight
    }

    /// Requests submitted and not finished (waiting for admission, held by the policy
    /// or in the device).
    #[inline]
    pub fn live(&self) -> usize {
        self.reqs.len() - self.free_reqs.len()
    }

    /// Requests waiting for admission.
    #[inline]
    pub fn waiting(&self) -> usize {
        self.waiting.iter().map(VecDeque::len).sum()
    }

    /// What the block layer did so far.
    pub fn stats(&self) -> &BlockStats {
        &self.stats
    }

    /// The policy counters sampled so far ([`BlockLayer::sample_counters`]).
    pub fn series(&self) -> &CounterSeries {
        &self.series
    }

    /// The WRR weights last pushed to the port, if the policy ever asked for any.
    pub fn wrr_applied(&self) -> Option<[u32; 3]> {
        self.wrr_applied
    }

    /// The record of live request `id`.
    #[inline]
    pub fn request(&self, id: ReqId) -> &ReqState {
        &self.reqs[id.0 as usize]
    }

    /// The piece in flight under `tag`.
    #[inline]
    pub fn piece(&self, tag: u32) -> &Piece {
        self.pieces[tag as usize]
            .as_ref()
            .expect("a tag handed to the port stays live until piece_done")
    }

    /// When the policy wants its timer fired ([`BlockLayer::fire_timer`]), as of the
    /// last call into the layer.
    #[inline]
    pub fn next_timer_ns(&self) -> Option<Nanos> {
        self.timer
    }

    /// Take a request from a client. Returns its id. The request is admitted (and
    /// enqueued) at once, or parked in the admission wait list; nothing is dispatched
    /// until the next [`BlockLayer::pump`].
    #[inline]
    pub fn submit(&mut self, now_ns: Nanos, r: NewRequest, token: u64) -> ReqId {
        let idx = match self.free_reqs.pop() {
            Some(i) => i,
            None => {
                self.reqs.push(ReqState::EMPTY);
                (self.reqs.len() - 1) as u32
            }
        };
        let id = ReqId(idx as u64);
        let req = Request {
            id,
            flow: r.flow,
            op: r.op,
            offset: r.offset,
            len: r.len,
            class: r.class,
            submit_ns: now_ns,
            hwq: r.hwq,
            parts: 1,
            fua: r.fua,
            placement: r.placement,
            atomic: r.atomic,
        };
        let rs = &mut self.reqs[idx as usize];
        *rs = ReqState {
            token,
            op: r.op,
            len: r.len,
            offset: r.offset,
            class: r.class,
            submit_ns: now_ns,
            admit_ns: now_ns,
            live: true,
            ..ReqState::EMPTY
        };
        self.stats.submitted += 1;
        self.stats.atomic_writes += req.is_atomic_write() as u64;
        if let Some(z) = self.zones.as_mut() {
            z.submitted(&req);
        }
        let c = r.class.index();
        let admitted = self.waiting[c].is_empty()
            && self
                .meter
                .time(PolicyCall::Admit, || self.policy.admit(now_ns, &req))
                == Admission::Admit;
        if admitted {
            self.meter
                .time(PolicyCall::Enqueue, || self.policy.enqueue(now_ns, req));
        } else {
            self.park(req);
        }
        id
    }

    #[inline]
    fn park(&mut self, req: Request) {
        self.reqs[req.id.0 as usize].waiting = true;
        self.arrivals += 1;
        self.waiting[req.class.index()].push_back((self.arrivals, req));
        self.stats.admission_waits += 1;
    }

    /// Ask the policy again for the requests refused admission, in arrival order
    /// across classes, skipping a class after its first refusal (FIFO within a class):
    /// one retry costs O(admitted + classes), not O(waiting).
    fn retry_admission(&mut self, now_ns: Nanos) {
        let mut refused = [false; 3];
        loop {
            let next = (0..3)
                .filter(|&c| !refused[c])
                .filter_map(|c| self.waiting[c].front().map(|(seq, _)| (*seq, c)))
                .min();
            let Some((_, c)) = next else { break };
            let req = self.waiting[c].front().expect("non-empty").1;
            let admit = self
                .meter
                .time(PolicyCall::Admit, || self.policy.admit(now_ns, &req));
            if admit != Admission::Admit {
                refused[c] = true;
                continue;
            }
            self.waiting[c].pop_front();
            let rs = &mut self.reqs[req.id.0 as usize];
            rs.admit_ns = now_ns;
            rs.waiting = false;
            self.meter
                .time(PolicyCall::Enqueue, || self.policy.enqueue(now_ns, req));
        }
    }

    /// Offer dispatch opportunities until the policy has nothing, the device view is
    /// full or the port has no room; push changed WRR weights to the port; read the
    /// policy's next timer. Requests waiting for admission are asked again first when
    /// something happened that may admit them. Call after every batch of calls into
    /// the layer (submissions, completions, a timer, a promotion).
    pub fn pump<P: DevicePort>(&mut self, now_ns: Nanos, port: &mut P) {
        if self.retry {
            self.retry = false;
            if self.waiting.iter().any(|q| !q.is_empty()) {
                self.retry_admission(now_ns);
            }
        }
        self.view.max_inflight = port.max_inflight();
        loop {
            let d = match self.held.take() {
                Some(d) => d,
                None => {
                    if self.view.inflight >= self.view.max_inflight {
                        break;
                    }
                    if let Some(d) = self.zones.as_mut().and_then(|z| z.ready.pop_front()) {
                        d
                    } else {
                        let view = &self.view;
                        let d = self
                            .meter
                            .time(PolicyCall::Dispatch, || self.policy.dispatch(now_ns, view));
                        match (d, self.zones.as_mut()) {
                            (None, _) => break,
                            (Some(d), None) => d,
                            (Some(d), Some(z)) => match z.admit(d) {
                                Some(d) => d,
                                // Parked until its zone's turn.
                                None => continue,
                            },
                        }
                    }
                }
            };
            let tag = match self.free_tags.last() {
                Some(&t) => t,
                None => self.pieces.len() as u32,
            };
            if !port.try_submit(now_ns, tag, &d) {
                self.stats.held += 1;
                self.held = Some(d);
                break;
            }
            self.start_piece(now_ns, tag, &d);
        }
        let want = self.policy.wrr_weights();
        if let Some(w) = want {
            if want != self.wrr_applied {
                self.wrr_applied = want;
                self.stats.wrr_changes += 1;
                port.set_wrr_weights(w);
            }
        }
        self.timer = self
            .meter
            .time(PolicyCall::NextTimer, || self.policy.next_timer_ns());
    }

    /// Piece `d` went to the port under `tag` (the last free tag, or a new one).
    #[inline]
    fn start_piece(&mut self, now_ns: Nanos, tag: u32, d: &Dispatch) {
        if self.free_tags.pop().is_none() {
            self.pieces.push(None);
        }
        debug_assert!(self.pieces[tag as usize].is_none());
        let rs = &mut self.reqs[d.req.id.0 as usize];
        debug_assert!(rs.live, "dispatch of an unknown request {:?}", d.req.id);
        // An atomic write goes as one piece (`Request::split` keeps it whole, as blk-mq
        // never splits a `REQ_ATOMIC` bio): a policy that cut one would let a power
        // failure tear it between its pieces.
        debug_assert!(
            !(d.req.is_atomic_write() && (d.req.parts > 1 || d.req.len != rs.len)),
            "an atomic write was split: {:?}",
            d.req
        );
        if rs.dispatch_ns == NOT_YET {
            rs.dispatch_ns = now_ns;
            rs.remaining = d.req.parts.max(1);
        }
        self.pieces[tag as usize] = Some(Piece {
            req: d.req,
            queue: d.queue,
            dispatch_ns: now_ns,
        });
        let q = d.queue.index();
        let v = &mut self.view;
        v.inflight += 1;
        v.inflight_per_class[q] += 1;
        let st = &mut self.stats;
        st.pieces += 1;
        st.dispatched_per_class[q] += 1;
        st.peak_inflight = st.peak_inflight.max(v.inflight);
        st.peak_inflight_per_class[q] = st.peak_inflight_per_class[q].max(v.inflight_per_class[q]);
    }

    /// The device reported piece `tag` done at `now_ns` (`ok` false: a media error or a
    /// timeout). Tells the policy; returns the parent request when this was its last
    /// piece. Call [`BlockLayer::pump`] after a batch of these.
    #[inline]
    pub fn piece_done(&mut self, now_ns: Nanos, tag: u32, ok: bool) -> Option<Finished> {
        // The completion is built from the piece in place (a copy of the piece through a
        // temporary cost a store-forwarding stall per completion).
        let slot = &mut self.pieces[tag as usize];
        let piece = slot.as_ref().expect("completion for a tag not in flight");
        let done = Completion {
            req: piece.req,
            queue: piece.queue,
            dispatch_ns: piece.dispatch_ns,
            complete_ns: now_ns,
            ok,
        };
        *slot = None;
        self.free_tags.push(tag);
        self.view.inflight -= 1;
        self.view.inflight_per_class[done.queue.index()] -= 1;
        if !ok {
            self.stats.failed_pieces += 1;
        }
        if let Some(z) = self.zones.as_mut() {
            z.done(&done.req);
        }
        self.meter
            .time(PolicyCall::Complete, || self.policy.complete(now_ns, &done));
        // A completion may free an admission slot.
        self.retry = true;
        let idx = done.req.id.0 as usize;
        let rs = &mut self.reqs[idx];
        rs.ok &= ok;
        rs.remaining -= 1;
        if rs.remaining > 0 {
            return None;
        }
        let rs = std::mem::replace(rs, ReqState::EMPTY);
        self.free_reqs.push(idx as u32);
        self.stats.completed += 1;
        if !rs.ok {
            self.stats.failed += 1;
        }
        Some(Finished {
            id: ReqId(idx as u64),
            token: rs.token,
            op: rs.op,
            len: rs.len,
            offset: rs.offset,
            class: rs.class,
            submit_ns: rs.submit_ns,
            admit_ns: rs.admit_ns,
            dispatch_ns: rs.dispatch_ns,
            device_done_ns: now_ns,
            ok: rs.ok,
        })
    }

    /// Fire the policy's timer if it is due at `now_ns`; returns whether it fired.
    /// Call [`BlockLayer::pump`] afterwards.
    #[inline]
    pub fn fire_timer(&mut self, now_ns: Nanos) -> bool {
        match self.timer {
            Some(t) if t <= now_ns => {
                self.timer = None;
                self.meter
                    .time(PolicyCall::Timer, || self.policy.timer(now_ns));
                self.retry = true;
                true
            }
            _ => false,
        }
    }

    /// Raise request `id` to the critical class because a critical task waits on it
    /// (RCP's I/O priority inheritance through outstanding I/O). A request waiting for
    /// admission gets the critical class and is asked again at the next pump (from its
    /// place in the wait list: admission stays FIFO within the critical class); a
    /// request the policy holds is promoted by `Policy::promote`. Returns whether
    /// anything was raised (false for a request already critical, already dispatched
    /// in full, or not live). Finding a waiting request scans the wait list: promotion
    /// is rare next to submission. Call [`BlockLayer::pump`] afterwards.
    pub fn promote(&mut self, now_ns: Nanos, id: ReqId) -> bool {
        let Some(rs) = self.reqs.get_mut(id.0 as usize) else {
            return false;
        };
        if !rs.live || rs.class == IoClass::Critical {
            return false;
        }
        if rs.waiting {
            let old = rs.class.index();
            rs.class = IoClass::Critical;
            let pos = self.waiting[old]
                .iter()
                .position(|r| r.1.id == id)
                .expect("a request marked waiting is in its class's wait list");
            let (_, mut req) = self.waiting[old].remove(pos).expect("found");
            req.class = IoClass::Critical;
            // It joins the critical FIFO at its end (it arrives there now).
            self.arrivals += 1;
            self.waiting[IoClass::Critical.index()].push_back((self.arrivals, req));
            self.stats.promoted_waiting += 1;
            self.retry = true;
            return true;
        }
        if self.policy.promote(now_ns, id) {
            self.reqs[id.0 as usize].class = IoClass::Critical;
            self.stats.promoted_queued += 1;
            return true;
        }
        false
    }

    /// Nothing can happen any more: requests are held by the policy or wait for
    /// admission, but nothing is in flight, no dispatch is held and the policy wants no
    /// timer — a policy bug. Check after a pump, when the world has no event left.
    pub fn stall(&self) -> Option<Stall> {
        let queued = self.policy.queued();
        if self.view.inflight == 0
            && self.held.is_none()
            && self.zones.as_ref().is_none_or(|z| z.ready.is_empty())
            && self.timer.is_none()
            && (queued > 0 || self.waiting() > 0)
        {
            return Some(Stall {
                queued,
                waiting: self.waiting(),
            });
        }
        None
    }

    /// Record one row of the policy's counters at `now_ns` (the worlds call it once per
    /// bandwidth interval). Does nothing for a policy without counters.
    pub fn sample_counters(&mut self, now_ns: Nanos) {
        if self.series.names.is_empty() || !self.series.take() {
            return;
        }
        let row = self.policy.counters().into_iter().map(|(_, v)| v).collect();
        self.series.push(now_ns, row);
    }

    /// Whether the policy has counters to sample.
    pub fn has_counters(&self) -> bool {
        !self.series.names.is_empty()
    }
}
