//! The front driven by a block layer and a toy device that holds bytes and completes
//! what the test says, when it says.

use std::collections::HashMap;

use sluice_block::{BlockLayer, DevicePort, Finished};
use sluice_core::policy::{build, Dispatch, PolicySpec};
use sluice_core::{Flow, FlowId, IoClass, Nanos, Op};

use super::*;
use sluice_cache::CacheConfig;

#[derive(Default)]
struct VecAlloc;
impl Alloc for VecAlloc {
    type Buf = Vec<u8>;
    fn alloc(&mut self, len: usize) -> Vec<u8> {
        vec![0; len]
    }
}

#[derive(Debug)]
struct Data(Vec<u8>);
impl IoBuf for Data {
    fn bytes(&mut self) -> Option<&mut [u8]> {
        Some(&mut self.0)
    }
}

/// A device: the pieces dispatched to it (tag, request) until the test completes them.
struct Port {
    inflight: Vec<(u32, sluice_core::Request)>,
    max: u32,
}
impl DevicePort for Port {
    fn max_inflight(&self) -> u32 {
        self.max
    }
    fn try_submit(&mut self, _now: Nanos, tag: u32, d: &Dispatch) -> bool {
        self.inflight.push((tag, d.req));
        true
    }
    fn set_wrr_weights(&mut self, _w: [u32; 3]) {}
}

struct Rig {
    front: Front<Data, VecAlloc>,
    block: BlockLayer,
    port: Port,
    disk: HashMap<u64, u8>,
    done: Vec<FrontDone>,
    now: Nanos,
    next_id: u64,
    /// The device fails every write (a full or failing disk).
    fail_writes: bool,
    /// The thread the next I/Os come from.
    task: u64,
    /// The device keeps no bytes (a long run).
    no_bytes: bool,
}

fn cfg(pages: usize, class_limits: bool) -> FrontConfig {
    FrontConfig {
        cache: CacheConfig {
            pages,
            class_limits,
            ..CacheConfig::default()
        },
        writeback_pages: 4,
        run_pages: 4,
        writeback_run_pages: 4,
        writeback_depth: WritebackDepth::UNBOUNDED,
    }
}

impl Rig {
    fn new(cfg: FrontConfig, policy: &str, max_inflight: u32) -> Rig {
        let flows: Vec<Flow> = (0..2)
            .map(|i| Flow {
                id: FlowId(i),
                name: format!("f{i}"),
                weight: 1,
            })
            .collect();
        let spec: PolicySpec = policy.parse().expect("policy");
        let block = BlockLayer::new(build(&spec).expect("policy"), &flows);
        let files = vec![FrontFile {
            base: 1 << 20,
            flow: FlowId(0),
            hwq: 0,
            open_on: 0,
        }];
        Rig {
            front: Front::new(cfg, files, VecAlloc),
            block,
            port: Port {
                inflight: Vec::new(),
                max: max_inflight,
            },
            disk: HashMap::new(),
            done: Vec::new(),
            now: 0,
            next_id: 0,
            fail_writes: false,
            task: 0,
            no_bytes: false,
        }
    }

    fn io(&mut self, op: FrontOp, offset: u64, data: Vec<u8>, class: IoClass) -> u64 {
        self.next_id += 1;
        let io = FrontIo {
            id: self.next_id,
            file: 0,
            op,
            offset,
            len: data.len() as u32,
            class,
            flow: FlowId(u32::from(class != IoClass::Critical)),
            task: self.task,
            data: Data(data),
        };
        self.front
            .submit(self.now, io, &mut self.block, &mut self.done);
        self.block.pump(self.now, &mut self.port);
        self.next_id
    }

    fn write(&mut self, offset: u64, byte: u8, len: usize, class: IoClass) -> u64 {
        self.io(FrontOp::Write, offset, vec![byte; len], class)
    }

    fn is_done(&self, id: u64) -> bool {
        self.done.iter().any(|d| d.id == id && d.ok)
    }

    /// Complete the oldest piece at the device (moving its bytes), a µs on.
    fn complete_one(&mut self) -> Option<Op> {
        self.complete_at(self.now + 1000)
    }

    /// Complete the oldest piece at the device at `at`.
    fn complete_at(&mut self, at: Nanos) -> Option<Op> {
        if self.port.inflight.is_empty() {
            return None;
        }
        let (tag, req) = self.port.inflight.remove(0);
        self.now = at;
        let crate::Owner::Front(seq) = crate::Owner::of(self.block.request(req.id).token) else {
            panic!("only the front submits here");
        };
        if req.op != Op::Flush && !self.no_bytes {
            let buf = self
                .front
                .device_buf(seq, req.offset)
                .expect("a data buffer");
            for k in 0..req.len as u64 {
                let at = req.offset + k;
                if req.op == Op::Write {
                    self.disk.insert(at, buf[k as usize]);
                } else {
                    buf[k as usize] = *self.disk.get(&at).unwrap_or(&0);
                }
            }
        }
        let f: Finished = self
            .block
            .piece_done(self.now, tag, !(self.fail_writes && req.op == Op::Write))
            .expect("one piece");
        self.front
            .finished(self.now, &f, &mut self.block, &mut self.done);
        self.block.pump(self.now, &mut self.port);
        Some(req.op)
    }

    /// Complete everything at the device, and end the writers' pauses at their dirty
    /// limits as time reaches them, until nothing is left to do.
    fn drain(&mut self) {
        loop {
            while self.complete_one().is_some() {}
            let Some(t) = self.front.next_timer_ns() else {
                return;
            };
            self.now = self.now.max(t);
            self.front
                .fire_timer(self.now, &mut self.block, &mut self.done);
            self.block.pump(self.now, &mut self.port);
        }
    }
}

#[test]
fn a_write_is_read_back_from_the_cache_and_reaches_the_device_by_fsync() {
    let mut r = Rig::new(cfg(64, true), "none", 64);
    let w = r.write(4096 + 100, 7, 200, IoClass::Normal);
    // A partial page not cached: read first (read-modify-write).
    assert!(!r.is_done(w));
    r.drain();
    assert!(r.is_done(w));
    let rd = r.io(FrontOp::Read, 4096, vec![0; 4096], IoClass::Normal);
    assert!(r.is_done(rd), "a hit completes at once");
    assert_eq!(r.front.stats().device_reads, 1);
    let s = r.io(FrontOp::Fsync, 0, Vec::new(), IoClass::Normal);
    assert!(!r.is_done(s));
    assert_eq!(r.complete_one(), Some(Op::Write));
    assert!(!r.is_done(s), "the flush comes after the writeback");
    assert_eq!(r.complete_one(), Some(Op::Flush));
    assert!(r.is_done(s));
    let base = 1 << 20;
    assert_eq!(r.disk.get(&(base + 4096 + 100)), Some(&7));
    assert_eq!(r.disk.get(&(base + 4096 + 300)), Some(&0));
    assert_eq!(r.disk.get(&(base + 4096 + 299)), Some(&7));
}

#[test]
fn a_read_copies_the_device_bytes_across_pages() {
    let mut r = Rig::new(cfg(64, true), "none", 64);
    for k in 0..3 * 4096u64 {
        r.disk.insert((1 << 20) + k, (k / 4096 + 1) as u8);
    }
    r.next_id += 1;
    let id = r.next_id;
    let io = FrontIo {
        id,
        file: 0,
        op: FrontOp::Read,
        offset: 4000,
        len: 200,
        class: IoClass::Normal,
        flow: FlowId(0),
        task: 0,
        data: Data(vec![0; 200]),
    };
    r.front.submit(0, io, &mut r.block, &mut r.done);
    r.block.pump(0, &mut r.port);
    assert_eq!(r.port.inflight.len(), 1, "two missing pages: one run");
    r.drain();
    assert!(r.is_done(id));
    // The buffer is gone with the I/O; check through a hit instead.
    let mut out = [0; 200];
    let f0 = r
        .front
        .pc
        .lookup(PageKey { file: 0, index: 0 })
        .expect("cached");
    r.front.pc.read(f0, 4000, &mut out[..96]);
    let f1 = r
        .front
        .pc
        .lookup(PageKey { file: 0, index: 1 })
        .expect("cached");
    r.front.pc.read(f1, 0, &mut out[96..]);
    assert!(out[..96].iter().all(|&b| b == 1) && out[96..].iter().all(|&b| b == 2));
}

#[test]
fn a_duplicate_read_is_issued_and_the_later_one_abandoned() {
    let mut r = Rig::new(cfg(64, true), "none", 64);
    let a = r.io(FrontOp::Read, 0, vec![0; 4096], IoClass::Normal);
    let b = r.io(FrontOp::Read, 0, vec![0; 4096], IoClass::Normal);
    assert_eq!(
        r.port.inflight.len(),
        2,
        "lazy indexing: the second miss reads too"
    );
    r.drain();
    assert!(r.is_done(a) && r.is_done(b));
    assert_eq!(r.front.stats().cache.duplicate_reads, 1);
    assert_eq!(r.front.cache().pages(), 1);
}

/// Fill the non-critical limit (1 % of 1600 pages = 16) with a background writer.
fn filled(class_limits: bool) -> Rig {
    let mut r = Rig::new(cfg(1600, class_limits), "none", 0);
    for p in 0..16 {
        r.write(p * 4096, 1, 4096, IoClass::Normal);
    }
    r
}

#[test]
fn with_class_limits_a_critical_writer_is_not_throttled_by_background_dirt() {
    let mut r = filled(true);
    let bg = r.write(100 * 4096, 1, 4096, IoClass::Normal);
    assert!(!r.is_done(bg), "the background writer is at its 1 % limit");
    let c = r.write(200 * 4096, 2, 4096, IoClass::Critical);
    assert!(r.is_done(c), "a critical writer has its own 20 % limit");
    assert_eq!(r.front.stats().cache.throttled, 1);
    // It pauses (Linux's balance_dirty_pages: a jiffy at least) while the flusher
    // writes back; when the pause ends it goes on.
    let pause_end = r.front.next_timer_ns().expect("the writer pauses");
    assert!(pause_end >= r.now + sluice_cache::throttle::JIFFY_NS);
    r.port.max = 64;
    r.block.pump(r.now, &mut r.port);
    while r.complete_one().is_some() {}
    assert!(!r.is_done(bg), "written back, but still in its pause");
    r.drain();
    assert!(r.is_done(bg));
    assert!(r.now >= pause_end);
}

#[test]
fn without_class_limits_every_writer_shares_one_limit() {
    let mut r = filled(false);
    // Linux: one ratio (20 % = 320 pages) for everybody; fill it.
    for p in 16..320 {
        r.write(p * 4096, 1, 4096, IoClass::Normal);
    }
    let c = r.write(1000 * 4096, 2, 4096, IoClass::Critical);
    assert!(
        !r.is_done(c),
        "the critical writer waits behind background dirt"
    );
}

#[test]
fn a_critical_writer_waiting_on_writeback_promotes_it() {
    // The device takes one command: the second writeback run waits in the block layer.
    let mut r = Rig::new(
        FrontConfig {
            writeback_pages: 16,
            ..cfg(1600, true)
        },
        "rcp",
        1,
    );
    for p in 0..16 {
        r.write(p * 4096, 1, 4096, IoClass::Normal);
    }
    // The flusher started runs of 4 pages past the background threshold (8 pages):
    // pages 0-3 (at the device), then 4-7 (waiting in the block layer).
    assert_eq!(r.front.cache().writeback_pages(), 8);
    let before = r.front.stats().promotions;
    let c = r.write(5 * 4096, 9, 4096, IoClass::Critical);
    assert!(!r.is_done(c), "stable pages: wait for the writeback");
    assert_eq!(r.front.stats().promotions, before + 1);
    r.drain();
    assert!(r.is_done(c));
}

/// The device writes in flight: (offset, length).
fn device_writes(r: &Rig) -> Vec<(u64, u32)> {
    r.port
        .inflight
        .iter()
        .filter(|(_, q)| q.op == Op::Write)
        .map(|(_, q)| (q.offset, q.len))
        .collect()
}

#[test]
fn a_writeback_run_reaches_the_disks_largest_request_not_the_read_run() {
    // Reads go in runs of 4 pages; the disk takes 16-page requests: 16 contiguous dirty
    // pages are written back in one write (Linux merges up to max_sectors_kb).
    let c = cfg(1600, false).with_queue(16 * 4096, WritebackDepth::UNBOUNDED);
    assert_eq!((c.run_pages, c.writeback_run_pages), (4, 16));
    let mut r = Rig::new(c, "none", 64);
    for p in 0..16 {
        r.write(p * 4096, 7, 4096, IoClass::Normal);
    }
    r.io(FrontOp::Fsync, 0, Vec::new(), IoClass::Normal);
    assert_eq!(device_writes(&r), vec![(1 << 20, 16 * 4096)]);
    r.drain();
    assert_eq!(r.disk.get(&((1 << 20) + 15 * 4096)), Some(&7));
}

#[test]
fn background_writeback_keeps_wbts_depths_in_flight() {
    // One page per run, every other page dirty; limit 320 pages, background 160.
    let depth = WritebackDepth {
        background: 1,
        throttled: 2,
    };
    let mut r = Rig::new(cfg(1600, false).with_queue(4096, depth), "none", 64);
    for p in 0..200 {
        r.write(p * 2 * 4096, 1, 4096, IoClass::Normal);
    }
    // Past the background threshold with no writer waiting: one write at a time.
    assert_eq!(device_writes(&r).len(), 1);
    assert_eq!(r.front.cache().writeback_pages(), 1);
    // A writer at its limit pauses: the flusher works for it with the throttled depth.
    let mut p = 200;
    while r.front.next_timer_ns().is_none() {
        r.write(p * 2 * 4096, 1, 4096, IoClass::Normal);
        p += 1;
    }
    assert_eq!(device_writes(&r).len(), 2);
    r.drain();
    assert_eq!(r.front.cache().writeback_pages(), 0);
}

#[test]
fn wbt_depths_follow_the_kernels_calc_wb_limits() {
    let d = |q, on| {
        let w = WritebackDepth::of_queue(q, on);
        (w.background, w.throttled)
    };
    // min(16, nr_requests) = 16: wb_background 4, wb_normal 8.
    assert_eq!(d(256, true), (4, 8));
    assert_eq!(d(8, true), (2, 4));
    assert_eq!(d(2, true), (1, 2));
    assert_eq!(d(1, true), (1, 1));
    // Throttling off: the queue's depth.
    assert_eq!(d(64, false), (64, 64));
}

/// Every write fails at the device: the writers waiting for room (paused at their dirty
/// limit) complete with an error instead of waiting for ever, and the flusher pauses
/// between failed writebacks rather than sending them again at once (without that the
/// loop below never ends: each failure sent the same pages again).
#[test]
fn writers_get_an_error_instead_of_waiting_while_every_writeback_fails() {
    let mut r = Rig::new(cfg(64, false), "none", 64);
    r.fail_writes = true;
    let ids: Vec<u64> = (0..64)
        .map(|k| r.write(k * 4096, 1, 4096, IoClass::Normal))
        .collect();
    let mut steps = 0;
    let mut device_writes = 0;
    loop {
        while let Some(op) = r.complete_one() {
            device_writes += u32::from(op == Op::Write);
            steps += 1;
            assert!(
                steps < 10_000,
                "writeback sent again and again without a pause"
            );
        }
        let Some(t) = r.front.next_timer_ns() else {
            break;
        };
        r.now = r.now.max(t);
        r.front.fire_timer(r.now, &mut r.block, &mut r.done);
        r.block.pump(r.now, &mut r.port);
        steps += 1;
        assert!(steps < 10_000, "timers fired without end");
    }
    assert_eq!(
        r.front.pending(),
        0,
        "every write completed, none left waiting"
    );
    let failed = ids
        .iter()
        .filter(|&&id| r.done.iter().any(|d| d.id == id && !d.ok))
        .count();
    // The normal class's limit is 20 % of the 64 pages: the writes past it needed room.
    assert!(failed >= 40, "{failed} of 64 writes failed");
    assert!(
        failed < 64,
        "the writes under the limit went into the cache"
    );
    assert!(
        device_writes > 0 && device_writes < 64,
        "{device_writes} device writes"
    );
}

/// `n` equal threads, each writing 4 KiB pages of its own 256 MiB of a file at
/// random, a write every 2 µs of CPU when not held, one write in flight each, against
/// a device that ends one request every 100 µs: the writes each completed in the
/// second half of `secs` (30 s: the rate control takes seconds to settle).
fn equal_writers(n: u64, secs: u64) -> Vec<u64> {
    let mut c = cfg(16384, false);
    c.writeback_pages = 256;
    c.writeback_run_pages = 32;
    let mut r = Rig::new(c, "none", 64);
    r.no_bytes = true;
    let end = secs * 1_000_000_000;
    let (cpu, service) = (2_000, 100_000);
    let mut next: Vec<Option<Nanos>> = vec![Some(0); n as usize];
    let mut writing: HashMap<u64, usize> = HashMap::new();
    let mut counted = vec![0u64; n as usize];
    let mut dev_at = None;
    let mut seed = 1u64;
    loop {
        if dev_at.is_none() && !r.port.inflight.is_empty() {
            dev_at = Some(r.now + service);
        }
        let wr = next
            .iter()
            .enumerate()
            .filter_map(|(w, t)| t.map(|t| (t, w)))
            .min();
        let t = [dev_at, r.front.next_timer_ns(), wr.map(|w| w.0)]
            .into_iter()
            .flatten()
            .min()
            .expect("something to do");
        if t >= end {
            break;
        }
        if dev_at == Some(t) {
            dev_at = None;
            r.complete_at(t);
        } else if r.front.next_timer_ns() == Some(t) {
            r.now = t;
            r.front.fire_timer(t, &mut r.block, &mut r.done);
            r.block.pump(t, &mut r.port);
        } else {
            let w = wr.expect("a writer").1;
            r.now = t;
            next[w] = None;
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let page = w as u64 * 65536 + (seed >> 33) % 65536;
            r.task = w as u64;
            writing.insert(r.write(page * 4096, 1, 4096, IoClass::Normal), w);
        }
        for d in std::mem::take(&mut r.done) {
            let w = writing.remove(&d.id).expect("a writer's write");
            if r.now >= end / 2 {
                counted[w] += 1;
            }
            next[w] = Some(r.now + cpu);
        }
    }
    counted
}

#[test]
fn equal_writers_over_the_limit_get_equal_shares() {
    // Linux's rule (one limit): 3 276 pages, the device cleans far less than the
    // writers would dirty. The dirty-ratelimit control paces every thread at one rate.
    let counted = equal_writers(4, 30);
    let (lo, hi) = (
        *counted.iter().min().unwrap(),
        *counted.iter().max().unwrap(),
    );
    eprintln!("writes per thread: {counted:?}");
    assert!(lo > 1000, "{counted:?}");
    assert!(hi as f64 <= 1.06 * lo as f64, "shares {counted:?}");
}
