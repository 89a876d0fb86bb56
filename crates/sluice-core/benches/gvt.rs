//! D2FQ Fig. 17: scalability of global-virtual-time tracking.
//!
//! Each of N threads is one flow doing what D2FQ does per I/O: at completion it
//! advances its vt and updates gvt, at the next dispatch it reads gvt to choose a queue
//! class. Four ways to track gvt:
//!
//! * `none` — no gvt at all (the cost floor);
//! * `sloppy` — D2FQ's [`SloppyGvt`]: one CAS word {holder, value} (§3.4);
//! * `scan` — "D2FQ-serial": every read scans the vts of all 64 flow slots;
//! * `tree` — a tree-based minimum (Mindicator-like, as MQFQ uses): a leaf per flow,
//!   an update recomputes the minima on the path to the root, a read loads the root.
//!
//! Run: `cargo bench -p sluice-core --bench gvt` (results in docs/policies/d2fq.md).
//! The time reported is per round, one operation on each of the N threads in parallel.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use sluice_core::policy::SloppyGvt;

/// Flow slots the scan and the tree cover (threads use the first N).
const FLOWS: usize = 64;

/// A value on its own cache line, so flows do not false-share.
#[repr(align(64))]
struct Padded(AtomicU64);

trait Tracker: Sync {
    /// Flow `id` completed an I/O: its vt is now `vt`.
    fn update(&self, id: usize, vt: u64);
    /// The gvt a dispatch compares against.
    fn read(&self) -> u64;
}

struct NoTracking;
impl Tracker for NoTracking {
    fn update(&self, _id: usize, vt: u64) {
        black_box(vt);
    }
    fn read(&self) -> u64 {
        0
    }
}

impl Tracker for SloppyGvt {
    fn update(&self, id: usize, vt: u64) {
        SloppyGvt::update(self, id as u16, vt);
    }
    fn read(&self) -> u64 {
        self.value()
    }
}

/// D2FQ-serial: every read inspects every flow.
struct Scan {
    vts: Vec<Padded>,
}
impl Scan {
    fn new() -> Self {
        Scan {
            vts: (0..FLOWS)
                .map(|_| Padded(AtomicU64::new(u64::MAX)))
                .collect(),
        }
    }
}
impl Tracker for Scan {
    fn update(&self, id: usize, vt: u64) {
        self.vts[id].0.store(vt, Ordering::Release);
    }
    fn read(&self) -> u64 {
        self.vts
            .iter()
            .map(|v| v.0.load(Ordering::Acquire))
            .min()
            .unwrap_or(0)
    }
}

/// A min-tree over the flow slots (heap layout: node i has children 2i and 2i+1,
/// leaves at FLOWS..2·FLOWS). An update rewrites the leaf and recomputes each ancestor
/// as the min of its children; concurrent updates may leave an ancestor briefly stale,
/// which the next update on that path repairs (as in Mindicator, without its
/// quiescence machinery).
struct Tree {
    nodes: Vec<Padded>,
}
impl Tree {
    fn new() -> Self {
        Tree {
            nodes: (0..2 * FLOWS)
                .map(|_| Padded(AtomicU64::new(u64::MAX)))
                .collect(),
        }
    }
}
impl Tracker for Tree {
    fn update(&self, id: usize, vt: u64) {
        let mut i = FLOWS + id;
        self.nodes[i].0.store(vt, Ordering::Release);
        while i > 1 {
            i /= 2;
            let m = self.nodes[2 * i]
                .0
                .load(Ordering::Acquire)
                .min(self.nodes[2 * i + 1].0.load(Ordering::Acquire));
            if self.nodes[i].0.swap(m, Ordering::AcqRel) == m {
                break; // nothing above changes
            }
        }
    }
    fn read(&self) -> u64 {
        self.nodes[1].0.load(Ordering::Acquire)
    }
}

/// `iters` rounds on each of `threads` threads; returns the wall time.
fn run(tracker: &dyn Tracker, threads: usize, iters: u64) -> Duration {
    let barrier = Barrier::new(threads + 1);
    std::thread::scope(|s| {
        for t in 0..threads {
            let barrier = &barrier;
            s.spawn(move || {
                let stride = 3 + t as u64;
                let mut vt = 0u64;
                barrier.wait();
                for _ in 0..iters {
                    vt += stride; // completion: vt_f += l / w_f
                    tracker.update(t, vt);
                    let gap = vt.saturating_sub(tracker.read()); // dispatch: Eq. 1
                    black_box(gap);
                }
                barrier.wait();
            });
        }
        barrier.wait();
        let start = Instant::now();
        barrier.wait();
        start.elapsed()
    })
}

fn gvt_tracking(c: &mut Criterion) {
    let mut g = c.benchmark_group("gvt");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    let max_threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut counts: Vec<usize> = vec![1, 2, 4, 8];
    counts.retain(|&n| n <= (2 * max_threads).max(2));
    for &n in &counts {
        g.bench_with_input(BenchmarkId::new("none", n), &n, |b, &n| {
            b.iter_custom(|iters| run(&NoTracking, n, iters))
        });
        g.bench_with_input(BenchmarkId::new("sloppy", n), &n, |b, &n| {
            b.iter_custom(|iters| run(&SloppyGvt::new(), n, iters))
        });
        g.bench_with_input(BenchmarkId::new("scan", n), &n, |b, &n| {
            b.iter_custom(|iters| run(&Scan::new(), n, iters))
        });
        g.bench_with_input(BenchmarkId::new("tree", n), &n, |b, &n| {
            b.iter_custom(|iters| run(&Tree::new(), n, iters))
        });
    }
    g.finish();
}

criterion_group!(benches, gvt_tracking);
criterion_main!(benches);
