//! `mq-deadline`: the Linux blk-mq deadline scheduler (block/mq-deadline.c), as a
//! baseline for FastResponse and RCP.
//!
//! # Invariant and rules
//! Requests sit on two lists per priority level and direction: a FIFO in arrival order
//! (each with its deadline `t_arrival + expire[dir]`) and a list sorted by LBA.
//! * **Priority levels** RT > BE > IDLE from the request's class (critical → RT,
//!   normal → BE, idle → IDLE). A level is served only when every higher level has
//!   nothing *outstanding* — queued or dispatched and not completed — as the kernel's
//!   `dd_queued()` counts. Exception, *aging*: a lower-level request waiting longer than
//!   `prio_aging_expire` (10 s) is served first.
//! * **Batches**: after choosing a direction, up to `fifo_batch` (16) requests continue
//!   in LBA order from the last position (`latest_pos`) before the choice is made again.
//! * **Direction**: reads are preferred, but if writes are waiting they are chosen after
//!   reads have been preferred `writes_starved` (2) times in a row.
//! * **Expiry**: within the chosen direction, if the FIFO head's deadline has passed
//!   (`read_expire` 500 ms, `write_expire` 5 s) — or there is no request beyond the last
//!   position — the batch restarts from the FIFO head; otherwise it continues in LBA
//!   order. Deadlines are soft and checked at dispatch opportunities (the engine offers
//!   one after every completion), so no timer is needed, as in the kernel.
//!
//! # Tunables (`mq-deadline:read_expire_ms=500,write_expire_ms=5000,...`)
//! | key | default | unit |
//! |---|---|---|
//! | `read_expire_ms` | 500 | ms |
//! | `write_expire_ms` | 5000 | ms |
//! | `fifo_batch` | 16 | requests |
//! | `writes_starved` | 2 | batches |
//! | `prio_aging_ms` | 10000 | ms |
//!
//! Simplified: no front/back merging, no `async_depth` limit on scheduler tags (there is
//! no tag allocation here: the engine's admission replaces it), one shared queue for all
//! hardware queues (as the kernel: mq-deadline is queue-wide). Flushes are served as
//! reads (the kernel sends them around the scheduler).

use std::collections::{BTreeMap, BTreeSet};

use super::Counter;
use super::{Completion, DeviceView, Dispatch, ParamError, Params, Policy};
use crate::types::{IoClass, Nanos, Op, Request};

const READ: usize = 0;
const WRITE: usize = 1;
const RT: usize = 0;
const BE: usize = 1;
const IDLE: usize = 2;

/// Per priority level: FIFO and LBA-sorted lists per direction.
#[derive(Debug, Default)]
struct PerPrio {
    /// Arrival sequence → request (FIFO order = key order).
    fifo: [BTreeMap<u64, (Request, Nanos)>; 2],
    /// (offset, sequence) — the LBA-sorted list.
    sorted: [BTreeSet<(u64, u64)>; 2],
    /// Offset of the last request dispatched in each direction.
    latest_pos: [u64; 2],
    /// Queued plus dispatched-not-completed (the kernel's `dd_queued`).
    outstanding: u64,
}

impl PerPrio {
    fn queued(&self) -> usize {
        self.fifo[READ].len() + self.fifo[WRITE].len()
    }

    /// First request at or beyond the last position in direction `dir`.
    fn next_sorted(&self, dir: usize) -> Option<u64> {
        self.sorted[dir]
            .range((self.latest_pos[dir], 0)..)
            .next()
            .map(|&(_, seq)| seq)
    }

    fn fifo_head(&self, dir: usize) -> Option<(u64, Nanos, Nanos)> {
        self.fifo[dir]
            .iter()
            .next()
            .map(|(&seq, (r, deadline))| (seq, r.submit_ns, *deadline))
    }

    fn remove(&mut self, dir: usize, seq: u64) -> Request {
        let (req, _) = self.fifo[dir].remove(&seq).expect("queued");
        self.sorted[dir].remove(&(req.offset, seq));
        self.latest_pos[dir] = req.offset;
        req
    }
}

/// Linux mq-deadline.
#[derive(Debug)]
pub struct MqDeadlinePolicy {
    expire_ns: [Nanos; 2],
    fifo_batch: u32,
    writes_starved: u32,
    prio_aging_ns: Nanos,
    prio: [PerPrio; 3],
    /// Arrival time per queued sequence, for aging (kept in the FIFO entries).
    seq: u64,
    last_dir: usize,
    batching: u32,
    starved: u32,
}

impl Default for MqDeadlinePolicy {
    fn default() -> Self {
        Self::new()
    }
}

impl MqDeadlinePolicy {
    /// mq-deadline with the kernel's defaults.
    pub fn new() -> Self {
        MqDeadlinePolicy {
            expire_ns: [500_000_000, 5_000_000_000],
            fifo_batch: 16,
            writes_starved: 2,
            prio_aging_ns: 10_000_000_000,
            prio: Default::default(),
            seq: 0,
            last_dir: WRITE,
            batching: 0,
            starved: 0,
        }
    }

    /// Build from parameters (see the module table).
    pub fn from_params(p: &mut Params) -> Result<Self, ParamError> {
        let mut d = MqDeadlinePolicy::new();
        d.expire_ns[READ] = p.take_u64_in("read_expire_ms", 500, 1, 3_600_000)? * 1_000_000;
        d.expire_ns[WRITE] = p.take_u64_in("write_expire_ms", 5000, 1, 3_600_000)? * 1_000_000;
        d.fifo_batch = p.take_u64_in("fifo_batch", 16, 1, 1 << 16)? as u32;
        d.writes_starved = p.take_u64_in("writes_starved", 2, 0, 1 << 16)? as u32;
        d.prio_aging_ns = p.take_u64_in("prio_aging_ms", 10_000, 1, 3_600_000)? * 1_000_000;
        Ok(d)
    }

    fn level(class: IoClass) -> usize {
        match class {
            IoClass::Critical => RT,
            IoClass::Normal => BE,
            IoClass::Idle => IDLE,
        }
    }

    fn dir(op: Op) -> usize {
        // Linux's rq_data_dir: a discard is a write-direction request, queued in the
        // write FIFO with the write expiry.
        if op.is_write_dir() {
            WRITE
        } else {
            READ
        }
    }

    /// The kernel's `__dd_dispatch_request` for level `lvl`: the next request, unless it
    /// arrived after `latest_start` (used by aging).
    fn dispatch_level(
        &mut self,
        lvl: usize,
        now_ns: Nanos,
        latest_start: Nanos,
    ) -> Option<Request> {
        // Continue the batch in LBA order while entitled to.
        let (dir, seq) = match self.prio[lvl].next_sorted(self.last_dir) {
            Some(seq) if self.batching < self.fifo_batch => (self.last_dir, seq),
            _ => {
                let pp = &self.prio[lvl];
                let dir = if !pp.fifo[READ].is_empty() {
                    // As the kernel: `starved` counts only while writes are waiting.
                    let writes_waiting = !pp.fifo[WRITE].is_empty();
                    let starve = writes_waiting && self.starved >= self.writes_starved;
                    if writes_waiting {
                        self.starved += 1;
                    }
                    if starve {
                        self.starved = 0;
                        WRITE
                    } else {
                        READ
                    }
                } else if !pp.fifo[WRITE].is_empty() {
                    self.starved = 0;
                    WRITE
                } else {
                    return None;
                };
                let pp = &self.prio[lvl];
                let (head, _, deadline) = pp.fifo_head(dir).expect("direction has requests");
                let seq = match pp.next_sorted(dir) {
                    Some(next) if deadline > now_ns => next,
                    // Expired, or nothing beyond the last position: restart at the head.
                    _ => head,
                };
                self.last_dir = dir;
                self.batching = 0;
                (dir, seq)
            }
        };
        let submit = self.prio[lvl].fifo[dir][&seq].0.submit_ns;
        if submit > latest_start {
            return None;
        }
        self.batching += 1;
        Some(self.prio[lvl].remove(dir, seq))
    }
}

impl Policy for MqDeadlinePolicy {
    fn name(&self) -> &'static str {
        "mq-deadline"
    }

    fn enqueue(&mut self, now_ns: Nanos, req: Request) {
        let lvl = Self::level(req.class);
        let dir = Self::dir(req.op);
        self.seq += 1;
        let pp = &mut self.prio[lvl];
        pp.fifo[dir].insert(self.seq, (req, now_ns + self.expire_ns[dir]));
        pp.sorted[dir].insert((req.offset, self.seq));
        pp.outstanding += 1;
    }

    fn dispatch(&mut self, now_ns: Nanos, _view: &DeviceView) -> Option<Dispatch> {
        // Aging: with two or more levels busy, a BE/IDLE request older than
        // prio_aging_expire goes first.
        let busy = self.prio.iter().filter(|p| p.outstanding > 0).count();
        if busy >= 2 {
            if let Some(limit) = now_ns.checked_sub(self.prio_aging_ns) {
                for lvl in [BE, IDLE] {
                    if let Some(r) = self.dispatch_level(lvl, now_ns, limit) {
                        return Some(Dispatch::medium(r));
                    }
                }
            }
        }
        // Strict priority: a lower level only when the higher ones have nothing
        // outstanding.
        for lvl in [RT, BE, IDLE] {
            if let Some(r) = self.dispatch_level(lvl, now_ns, now_ns) {
                return Some(Dispatch::medium(r));
            }
            if self.prio[lvl].outstanding > 0 {
                break;
            }
        }
        None
    }

    fn complete(&mut self, _now_ns: Nanos, done: &Completion) {
        let pp = &mut self.prio[Self::level(done.req.class)];
        assert!(
            pp.outstanding as usize > pp.queued(),
            "mq-deadline: completion of a request not dispatched"
        );
        pp.outstanding -= 1;
    }

    fn queued(&self) -> usize {
        self.prio.iter().map(PerPrio::queued).sum()
    }

    fn counters(&self) -> Vec<(Counter, f64)> {
        vec![
            (Counter::RtOutstanding, self.prio[RT].outstanding as f64),
            (Counter::BeOutstanding, self.prio[BE].outstanding as f64),
            (Counter::IdleOutstanding, self.prio[IDLE].outstanding as f64),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{FlowId, QueueClass, ReqId};

    fn req(id: u64, op: Op, offset: u64, class: IoClass, t: Nanos) -> Request {
        Request {
            id: ReqId(id),
            flow: FlowId(0),
            op,
            offset,
            len: 4096,
            class,
            submit_ns: t,
            hwq: 0,
            parts: 1,
            fua: false,
            placement: 0,
            atomic: false,
        }
    }

    fn done(req: Request) -> Completion {
        Completion {
            req,
            queue: QueueClass::Medium,
            dispatch_ns: 0,
            complete_ns: 1,
            ok: true,
        }
    }

    fn ids(p: &mut MqDeadlinePolicy, now: Nanos, n: usize) -> Vec<u64> {
        let v = DeviceView::default();
        (0..n)
            .filter_map(|_| p.dispatch(now, &v).map(|d| d.req.id.0))
            .collect()
    }

    #[test]
    fn reads_preferred_but_writes_starved_bounds_it() {
        let mut p =
            MqDeadlinePolicy::from_params(&mut Params::parse("fifo_batch=1").unwrap()).unwrap();
        for i in 0..6 {
            p.enqueue(0, req(i, Op::Read, i * 4096, IoClass::Normal, 0));
        }
        for i in 100..103 {
            p.enqueue(0, req(i, Op::Write, i * 4096, IoClass::Normal, 0));
        }
        // The kernel starts with last_dir = write, so the first "batch" continues there;
        // then reads are preferred twice (starved 0, 1) before a write (starved 2).
        assert_eq!(ids(&mut p, 1, 9), vec![100, 0, 1, 101, 2, 3, 102, 4, 5]);
    }

    #[test]
    fn batches_continue_in_lba_order() {
        let mut p = MqDeadlinePolicy::new();
        p.enqueue(0, req(3, Op::Read, 3 << 20, IoClass::Normal, 0));
        p.enqueue(1, req(1, Op::Read, 1 << 20, IoClass::Normal, 1));
        p.enqueue(2, req(2, Op::Read, 2 << 20, IoClass::Normal, 2));
        p.enqueue(3, req(4, Op::Read, 4 << 20, IoClass::Normal, 3));
        assert_eq!(ids(&mut p, 10, 4), vec![1, 2, 3, 4]);
    }

    /// After a request at 1 MB, B (0.5 MB, older) and C (5 MB) wait: before B's deadline
    /// the batch continues upwards to C; after it, the expired FIFO head B goes first.
    fn expiry_case(op: Op, now: Nanos) -> Vec<u64> {
        let mut p =
            MqDeadlinePolicy::from_params(&mut Params::parse("fifo_batch=1").unwrap()).unwrap();
        p.enqueue(0, req(1, op, 1 << 20, IoClass::Normal, 0));
        assert_eq!(ids(&mut p, 1, 1), vec![1]);
        p.enqueue(1, req(2, op, 512 << 10, IoClass::Normal, 1));
        p.enqueue(2, req(3, op, 5 << 20, IoClass::Normal, 2));
        ids(&mut p, now, 2)
    }

    #[test]
    fn expired_fifo_head_restarts_the_batch() {
        assert_eq!(expiry_case(Op::Read, 100), vec![3, 2]);
        assert_eq!(expiry_case(Op::Read, 500_000_002), vec![2, 3]);
        assert_eq!(
            expiry_case(Op::Write, 499_000_000),
            vec![3, 2],
            "writes: 5 s"
        );
        assert_eq!(expiry_case(Op::Write, 5_000_000_002), vec![2, 3]);
    }

    #[test]
    fn rt_outstanding_holds_back_lower_levels_until_aging() {
        let mut p = MqDeadlinePolicy::new();
        let rt = req(1, Op::Read, 0, IoClass::Critical, 0);
        p.enqueue(0, rt);
        p.enqueue(0, req(2, Op::Read, 4096, IoClass::Normal, 0));
        p.enqueue(0, req(3, Op::Read, 8192, IoClass::Idle, 0));
        assert_eq!(
            ids(&mut p, 1, 3),
            vec![1],
            "BE waits while RT is outstanding"
        );
        p.complete(2, &done(rt));
        assert_eq!(ids(&mut p, 2, 3), vec![2], "then BE; IDLE waits for BE");
        // Aging: an IDLE request older than 10 s goes even though BE is outstanding.
        assert_eq!(ids(&mut p, 10_000_000_001, 1), vec![3]);
    }

    #[test]
    fn params_checked() {
        assert!(
            MqDeadlinePolicy::from_params(&mut Params::parse("fifo_batch=0").unwrap()).is_err()
        );
        let mut ps = Params::parse("read_expire_ms=2").unwrap();
        let p = MqDeadlinePolicy::from_params(&mut ps).unwrap();
        assert_eq!(p.expire_ns[READ], 2_000_000);
    }
}
