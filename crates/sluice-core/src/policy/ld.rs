//! `ld`: FastResponse's Limited-Depth block scheduler (Liu et al., ICS '22, §3.3, Fig. 9).
//!
//! # Invariant
//! One device-wide token pool of `tokens` (T) tokens. Every non-critical piece in flight
//! holds exactly one token, so
//!
//! ```text
//!   noncritical_inflight + critical_holding ≤ T,      0 ≤ free = T − held ≤ T
//! ```
//!
//! and a token is returned exactly once, when the piece that took it completes (also on
//! an error completion). Critical requests *bypass* the staging queues: they are
//! dispatched at the first opportunity and never wait for a token. As in the authors'
//! code (`ld_prepare_token`), a critical request takes a free token if one is left
//! (`crit_token=1`) — it does not wait when none is — so critical I/O in flight further
//! narrows the room left to non-critical I/O.
//!
//! # Formulas and names (paper §2.2 Root Cause 1, §3.3)
//! * The ULL SSD reaches its bandwidth at queue depth ≈ 8 and request size ≈ 32 KB; past
//!   that, latency grows with depth. So: `tokens` = 8, `split` = 32 KB.
//! * A non-critical request of `len > split` bytes becomes `⌈len / split⌉` children
//!   (`Request::split`) inserted consecutively in LBA order, and the children of one
//!   parent are dispatched back to back on their hardware queue (a started parent is
//!   finished before another request of that queue goes), because the parent completes
//!   only with its last child. The engine completes the parent and reports its latency.
//! * One dispatch queue per hardware queue (`Request::hwq`), unlike BFQ and mq-deadline's
//!   single global queue, so queues dispatch in parallel; they share only the pool.
//! * Kyber-derived domains (authors' code): each hardware queue has a *sync* FIFO
//!   (reads, flushes) and an *async* FIFO (writes), served in batches of 8 and 4
//!   requests, alternating.
//!
//! # Tunables (`ld:tokens=8,split=32k,crit_token=1`)
//! | key | default | unit | meaning |
//! |---|---|---|---|
//! | `tokens` | 8 | requests | size of the shared pool (1–4096) |
//! | `split` | 32k | bytes | split size for non-critical requests (4k–64m, multiple of 512) |
//! | `crit_token` | 1 | 0/1 | critical requests take a free token when there is one |
//!
//! Simplified: no request merging in the staging queues, no plugging; the kernel's
//! per-software-queue lists are folded into the per-hardware-queue FIFOs; hardware
//! queues take turns at the pool in round-robin order (the kernel wakes waiters on the
//! pool's wait queues).

use std::collections::{BTreeSet, VecDeque};

use super::Counter;
use super::{Completion, DeviceView, Dispatch, ParamError, Params, Policy};
use crate::types::{IoClass, Nanos, Op, ReqId, Request};

/// Default size of the token pool (FastResponse: 8 tokens recommended).
pub const DEFAULT_TOKENS: u32 = 8;
/// Default split size in bytes (FastResponse: 32 KB).
pub const DEFAULT_SPLIT_BYTES: u32 = 32 << 10;
/// Requests per batch of the sync domain (authors' code).
const SYNC_BATCH: u32 = 8;
/// Requests per batch of the async domain (authors' code).
const ASYNC_BATCH: u32 = 4;

const SYNC: usize = 0;
const ASYNC: usize = 1;

/// The staging queues of one hardware queue.
#[derive(Debug, Default)]
struct HwQueue {
    /// Sync (reads, flushes) and async (writes) FIFOs of pieces.
    domains: [VecDeque<Request>; 2],
    /// Domain being batched.
    cur: usize,
    /// Requests dispatched in the current batch.
    batching: u32,
    /// The domain whose head is a child of a parent already partly dispatched; it goes
    /// next so that the children of one parent leave back to back.
    open: Option<usize>,
}

impl HwQueue {
    fn is_empty(&self) -> bool {
        self.domains.iter().all(VecDeque::is_empty)
    }
}

/// FastResponse Limited Depth.
#[derive(Debug)]
pub struct LdPolicy {
    tokens: u32,
    split_bytes: u32,
    crit_token: bool,
    /// Tokens not held by any piece in flight.
    free: u32,
    /// Critical requests: dispatched first, in arrival order, without a token.
    critical: VecDeque<Request>,
    /// Critical requests in flight that hold a token.
    crit_holding: BTreeSet<ReqId>,
    /// Staging queues per hardware queue (grown on demand).
    hwqs: Vec<HwQueue>,
    /// Round-robin cursor over hardware queues for the next token.
    next_hwq: usize,
    /// Non-critical pieces held.
    staged: usize,
    /// Non-critical pieces in flight (each holds a token).
    nc_inflight: u32,
    /// Non-critical requests split into more than one child.
    splits: u64,
}

impl LdPolicy {
    /// A Limited-Depth scheduler with `tokens` tokens and `split_bytes` split size.
    ///
    /// # Panics
    /// If `tokens` or `split_bytes` is zero.
    pub fn new(tokens: u32, split_bytes: u32, crit_token: bool) -> Self {
        assert!(tokens > 0, "ld needs at least one token");
        assert!(split_bytes > 0, "ld split size must be positive");
        LdPolicy {
            tokens,
            split_bytes,
            crit_token,
            free: tokens,
            critical: VecDeque::new(),
            crit_holding: BTreeSet::new(),
            hwqs: Vec::new(),
            next_hwq: 0,
            staged: 0,
            nc_inflight: 0,
            splits: 0,
        }
    }

    /// Build from `tokens`, `split` and `crit_token` parameters.
    pub fn from_params(p: &mut Params) -> Result<Self, ParamError> {
        let tokens = p.take_u64_in("tokens", DEFAULT_TOKENS as u64, 1, 4096)? as u32;
        let split = p.take("split", String::new(), "a size such as 32k")?;
        let split_bytes = if split.is_empty() {
            DEFAULT_SPLIT_BYTES as u64
        } else {
            parse_size("split", &split)?
        };
        if !(4096..=(64 << 20)).contains(&split_bytes) || split_bytes % 512 != 0 {
            return Err(ParamError::OutOfRange {
                key: "split".into(),
                value: split,
                why: "must be between 4k and 64m and a multiple of 512 bytes".into(),
            });
        }
        let crit_token = p.take_u64_in("crit_token", 1, 0, 1)? == 1;
        Ok(LdPolicy::new(tokens, split_bytes as u32, crit_token))
    }

    /// Tokens not held by a piece in flight.
    pub fn free_tokens(&self) -> u32 {
        self.free
    }

    fn take_token(&mut self) -> bool {
        if self.free == 0 {
            return false;
        }
        self.free -= 1;
        true
    }

    fn give_token(&mut self) {
        assert!(self.free < self.tokens, "ld: token returned twice");
        self.free += 1;
    }

    fn domain(op: Op) -> usize {
        // A trim is async work like a write (Linux: REQ_OP_DISCARD is not REQ_SYNC).
        if op.is_write_dir() {
            ASYNC
        } else {
            SYNC
        }
    }

    /// The next non-critical piece of hardware queue `h` (kyber-style domain batching),
    /// taking a token for it. None when the queue is empty or no token is free.
    fn dispatch_hwq(&mut self, h: usize) -> Option<Request> {
        if self.free == 0 || self.hwqs[h].is_empty() {
            return None;
        }
        let q = &mut self.hwqs[h];
        let d = match q.open {
            // Finish the parent already started, whatever the batch says.
            Some(d) => d,
            None => {
                let batch = if q.cur == SYNC {
                    SYNC_BATCH
                } else {
                    ASYNC_BATCH
                };
                if q.batching < batch && !q.domains[q.cur].is_empty() {
                    q.cur
                } else {
                    // Start a new batch in the next domain that has work (wrapping round
                    // to the current one if it alone has).
                    q.batching = 0;
                    let other = 1 - q.cur;
                    q.cur = if q.domains[other].is_empty() {
                        q.cur
                    } else {
                        other
                    };
                    q.cur
                }
            }
        };
        let piece = q.domains[d].pop_front().expect("domain chosen non-empty");
        // Batches count requests: only a parent's first piece counts.
        if q.open.is_none() {
            q.batching += 1;
        }
        // The next piece of this domain continues the same parent?
        q.open = match q.domains[d].front() {
            Some(n) if n.parts > 1 && n.id == piece.id => Some(d),
            _ => None,
        };
        let took = self.take_token();
        debug_assert!(took, "checked free > 0 above");
        self.staged -= 1;
        self.nc_inflight += 1;
        Some(piece)
    }
}

impl Policy for LdPolicy {
    fn name(&self) -> &'static str {
        "ld"
    }

    fn enqueue(&mut self, _now_ns: Nanos, req: Request) {
        if req.class == IoClass::Critical {
            // Bypass: no staging, no split, no token wait.
            self.critical.push_back(req);
            return;
        }
        let h = req.hwq as usize;
        if self.hwqs.len() <= h {
            self.hwqs.resize_with(h + 1, HwQueue::default);
        }
        // A piece count must fit the request's u16 `parts`; a request that would need
        // more pieces (over 2 GB at 32 KB) is split into larger ones.
        let piece = self
            .split_bytes
            .max(req.len.div_ceil(u16::MAX as u32).next_multiple_of(512));
        let q = &mut self.hwqs[h].domains[Self::domain(req.op)];
        let before = q.len();
        // Children in LBA order, back to back at the tail: they dispatch consecutively.
        // (A trim stays whole: `Request::split` does not cut one — it moves no data.)
        q.extend(req.split(piece));
        let n = q.len() - before;
        if n > 1 {
            self.splits += 1;
        }
        self.staged += n;
    }

    fn dispatch(&mut self, _now_ns: Nanos, _view: &DeviceView) -> Option<Dispatch> {
        if let Some(req) = self.critical.pop_front() {
            if self.crit_token && self.take_token() {
                self.crit_holding.insert(req.id);
            }
            return Some(Dispatch::medium(req));
        }
        if self.staged == 0 || self.free == 0 {
            return None;
        }
        let n = self.hwqs.len();
        // A hardware queue in the middle of a split parent goes first.
        if let Some(h) = (0..n).find(|&h| self.hwqs[h].open.is_some()) {
            return self.dispatch_hwq(h).map(Dispatch::medium);
        }
        for i in 0..n {
            let h = (self.next_hwq + i) % n;
            if let Some(piece) = self.dispatch_hwq(h) {
                self.next_hwq = (h + 1) % n;
                return Some(Dispatch::medium(piece));
            }
        }
        None
    }

    fn complete(&mut self, _now_ns: Nanos, done: &Completion) {
        // Tokens come back on every completion, successful or not (`done.ok` is not
        // consulted): an error must not leak a token.
        if done.req.class == IoClass::Critical {
            if self.crit_holding.remove(&done.req.id) {
                self.give_token();
            }
        } else {
            assert!(
                self.nc_inflight > 0,
                "ld: completion of a piece not in flight"
            );
            self.nc_inflight -= 1;
            self.give_token();
        }
    }

    fn queued(&self) -> usize {
        self.critical.len() + self.staged
    }

    fn counters(&self) -> Vec<(Counter, f64)> {
        vec![
            (Counter::FreeTokens, self.free as f64),
            (Counter::NoncriticalInflight, self.nc_inflight as f64),
            (Counter::Staged, self.staged as f64),
            (Counter::SplitRequests, self.splits as f64),
        ]
    }
}

/// Parse a size: bytes, or a whole number with a `k`/`m`/`g` suffix (powers of 1024).
pub(crate) fn parse_size(key: &str, v: &str) -> Result<u64, ParamError> {
    let bad = || ParamError::BadValue {
        key: key.to_string(),
        value: v.to_string(),
        expected: "a size such as 4096, 32k or 1m",
    };
    let s = v.trim().to_ascii_lowercase();
    let s = s.strip_suffix('b').unwrap_or(&s);
    let (num, shift) = match s.chars().last() {
        Some('k') => (&s[..s.len() - 1], 10),
        Some('m') => (&s[..s.len() - 1], 20),
        Some('g') => (&s[..s.len() - 1], 30),
        _ => (s, 0),
    };
    let n: u64 = num.parse().map_err(|_| bad())?;
    n.checked_mul(1 << shift).ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{build, PolicySpec};
    use crate::types::{FlowId, QueueClass};

    fn req(id: u64, class: IoClass, op: Op, len: u32, hwq: u16) -> Request {
        Request {
            id: ReqId(id),
            flow: FlowId(0),
            op,
            offset: id << 30,
            len,
            class,
            submit_ns: 0,
            hwq,
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

    fn drain(p: &mut LdPolicy) -> Vec<Request> {
        let v = DeviceView::default();
        std::iter::from_fn(|| p.dispatch(0, &v).map(|d| d.req)).collect()
    }

    #[test]
    fn params_parse_and_reject() {
        let mut p = Params::parse("tokens=4,split=64k,crit_token=0").unwrap();
        let ld = LdPolicy::from_params(&mut p).unwrap();
        assert_eq!(
            (ld.tokens, ld.split_bytes, ld.crit_token),
            (4, 64 << 10, false)
        );
        for bad in [
            "tokens=0",
            "split=3k",
            "split=abc",
            "split=1000",
            "crit_token=2",
        ] {
            let spec: PolicySpec = format!("ld:{bad}").parse().unwrap();
            assert!(build(&spec).is_err(), "{bad} accepted");
        }
        let e = build(&"ld:tokenz=3".parse().unwrap()).err().unwrap();
        assert!(e.to_string().contains("'tokenz'"), "{e}");
    }

    #[test]
    fn tokens_limit_noncritical_inflight_and_return_on_errors() {
        let mut p = LdPolicy::new(3, 32 << 10, false);
        for i in 0..10 {
            p.enqueue(0, req(i, IoClass::Normal, Op::Read, 4096, 0));
        }
        let first = drain(&mut p);
        assert_eq!(first.len(), 3, "three tokens, three in flight");
        assert_eq!(p.free_tokens(), 0);
        // Completions — failed ones included — return exactly one token each.
        p.complete(1, &done(first[0], false));
        assert_eq!(p.free_tokens(), 1);
        p.complete(1, &done(first[1], true));
        assert_eq!(p.free_tokens(), 2);
        let more = drain(&mut p);
        assert_eq!(more.len(), 2);
        assert_eq!(p.free_tokens(), 0);
        let mut inflight: Vec<Request> = vec![first[2]];
        inflight.extend(more);
        // Drain everything with a mix of errors; the pool ends full, never over.
        let mut k = 0;
        while let Some(r) = inflight.pop() {
            p.complete(2, &done(r, k % 2 == 0));
            k += 1;
            assert!(p.free_tokens() <= 3);
            inflight.extend(drain(&mut p));
        }
        assert_eq!(p.free_tokens(), 3, "no token leaked");
        assert_eq!(p.queued(), 0);
    }

    #[test]
    #[should_panic(expected = "not in flight")]
    fn completing_an_unknown_piece_is_a_bug() {
        let mut p = LdPolicy::new(2, 32 << 10, false);
        p.complete(0, &done(req(1, IoClass::Normal, Op::Read, 4096, 0), true));
    }

    #[test]
    fn critical_bypasses_and_never_waits_for_a_token() {
        let mut p = LdPolicy::new(1, 32 << 10, true);
        p.enqueue(0, req(1, IoClass::Normal, Op::Read, 4096, 0));
        p.enqueue(0, req(2, IoClass::Normal, Op::Read, 4096, 0));
        let nc = drain(&mut p);
        assert_eq!(nc.len(), 1);
        assert_eq!(p.free_tokens(), 0);
        // No token left: critical requests still go at once.
        for i in 10..15 {
            p.enqueue(0, req(i, IoClass::Critical, Op::Read, 4096, 0));
        }
        let crit = drain(&mut p);
        assert_eq!(crit.len(), 5);
        assert!(crit.iter().all(|r| r.class == IoClass::Critical));
        // Critical completions return nothing they did not take.
        for r in &crit {
            p.complete(1, &done(*r, true));
        }
        assert_eq!(p.free_tokens(), 0);
        // With a free token, a critical request takes it (authors' code) and gives it
        // back on completion, so the waiting non-critical one goes only afterwards.
        p.complete(2, &done(nc[0], true));
        p.enqueue(3, req(20, IoClass::Critical, Op::Read, 4096, 0));
        let c = drain(&mut p);
        assert_eq!(c.len(), 1, "critical took the free token; normal waits");
        p.complete(4, &done(c[0], false));
        assert_eq!(p.free_tokens(), 1);
        assert_eq!(drain(&mut p).len(), 1);
    }

    #[test]
    fn large_noncritical_requests_split_in_lba_order_and_go_consecutively() {
        let mut p = LdPolicy::new(64, 32 << 10, false);
        // Two 128 KB writes on hwq 0, one 100 KB read on hwq 1, one critical 128 KB read.
        p.enqueue(0, req(1, IoClass::Normal, Op::Write, 128 << 10, 0));
        p.enqueue(0, req(2, IoClass::Normal, Op::Write, 128 << 10, 0));
        p.enqueue(0, req(3, IoClass::Normal, Op::Read, 100 << 10, 1));
        p.enqueue(0, req(4, IoClass::Critical, Op::Read, 128 << 10, 0));
        assert_eq!(p.queued(), 4 + 4 + 4 + 1);
        let out = drain(&mut p);
        assert_eq!(out[0].id, ReqId(4), "critical first");
        assert_eq!(out[0].parts, 1, "critical requests are not split");
        let mut by_parent: std::collections::BTreeMap<u64, Vec<(usize, Request)>> =
            Default::default();
        for (i, r) in out.iter().enumerate().skip(1) {
            by_parent.entry(r.id.0).or_default().push((i, *r));
        }
        for (id, pieces) in &by_parent {
            let parent_len: u32 = pieces.iter().map(|(_, r)| r.len).sum();
            assert_eq!(pieces.len(), parent_len.div_ceil(32 << 10) as usize, "{id}");
            // LBA order, tiling the parent, dispatched back to back.
            for w in pieces.windows(2) {
                assert_eq!(w[1].0, w[0].0 + 1, "parent {id} interleaved");
                assert_eq!(w[1].1.offset, w[0].1.offset + w[0].1.len as u64);
            }
            assert!(pieces.iter().all(|(_, r)| r.len <= 32 << 10));
            assert!(pieces.iter().all(|(_, r)| r.parts as usize == pieces.len()));
        }
    }

    #[test]
    fn children_of_a_parent_stay_together_when_tokens_run_out() {
        // Two tokens, a 128 KB write (4 children) and reads behind it on the same hwq:
        // once the parent started, its remaining children go before the reads.
        let mut p = LdPolicy::new(2, 32 << 10, false);
        p.enqueue(0, req(1, IoClass::Normal, Op::Write, 128 << 10, 0));
        for i in 2..6 {
            p.enqueue(0, req(i, IoClass::Normal, Op::Read, 4096, 0));
        }
        let mut order = Vec::new();
        let mut inflight = drain(&mut p);
        while let Some(r) = inflight.first().copied() {
            inflight.remove(0);
            order.push(r.id.0);
            p.complete(1, &done(r, true));
            inflight.extend(drain(&mut p));
        }
        let first_write = order.iter().position(|&i| i == 1).unwrap();
        let last_write = order.iter().rposition(|&i| i == 1).unwrap();
        assert_eq!(
            last_write - first_write,
            3,
            "children consecutive: {order:?}"
        );
        assert_eq!(p.free_tokens(), 2);
    }

    #[test]
    fn sync_and_async_domains_alternate_in_batches() {
        let mut p = LdPolicy::new(1000, 1 << 20, false);
        for i in 0..20 {
            p.enqueue(0, req(i, IoClass::Normal, Op::Read, 4096, 0));
        }
        for i in 100..120 {
            p.enqueue(0, req(i, IoClass::Normal, Op::Write, 4096, 0));
        }
        let ops: Vec<Op> = drain(&mut p).iter().map(|r| r.op).collect();
        let runs: Vec<(Op, usize)> = ops
            .chunk_by(|a, b| a == b)
            .map(|c| (c[0], c.len()))
            .collect();
        assert_eq!(runs[0], (Op::Read, 8));
        assert_eq!(runs[1], (Op::Write, 4));
        assert_eq!(runs[2], (Op::Read, 8));
        assert_eq!(ops.len(), 40);
    }

    #[test]
    fn hardware_queues_share_the_pool_round_robin() {
        let mut p = LdPolicy::new(4, 32 << 10, false);
        for i in 0..8 {
            p.enqueue(0, req(i, IoClass::Normal, Op::Read, 4096, (i % 2) as u16));
        }
        let hw: Vec<u16> = drain(&mut p).iter().map(|r| r.hwq).collect();
        assert_eq!(hw, vec![0, 1, 0, 1]);
    }
}
