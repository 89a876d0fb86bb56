//! Cost per request of the block layer and a policy as the queue depth grows (issue 17:
//! `rcp` used to cost O(depth) per completion through the admission retry). A closed
//! loop of `depth` requests through `BlockLayer` with a port that completes in FIFO
//! order; time per request should stay flat from depth 64 to 65 535.
//!
//! Run: `cargo bench -p sluice-block --bench depth` (figures in docs/perf.md).

use std::collections::VecDeque;
use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use sluice_block::{BlockLayer, DevicePort, NewRequest};
use sluice_core::policy::{self, Dispatch, PolicySpec};
use sluice_core::{Flow, FlowId, IoClass, Nanos, Op};

struct Fifo(VecDeque<u32>);

impl DevicePort for Fifo {
    fn max_inflight(&self) -> u32 {
        u32::MAX
    }
    fn try_submit(&mut self, _: Nanos, tag: u32, _: &Dispatch) -> bool {
        self.0.push_back(tag);
        true
    }
    fn set_wrr_weights(&mut self, _: [u32; 3]) {}
}

fn closed_loop(policy: &str, depth: u64, ops: u64) -> u64 {
    let flows = [Flow {
        id: FlowId(0),
        name: "f".into(),
        weight: 1,
    }];
    let p = policy::build(&policy.parse::<PolicySpec>().unwrap()).unwrap();
    let mut b = BlockLayer::new(p, &flows);
    let mut port = Fifo(VecDeque::new());
    let r = |i: u64| NewRequest {
        flow: FlowId(0),
        op: Op::Read,
        offset: (i % 65536) * 4096,
        len: 4096,
        class: IoClass::Normal,
        hwq: 0,
        fua: false,
        placement: 0,
        atomic: false,
    };
    for i in 0..depth {
        b.submit(0, r(i), i);
    }
    b.pump(0, &mut port);
    let mut done = 0;
    let mut now = 0;
    while done < ops {
        now += 1;
        if let Some(f) = port.0.pop_front().and_then(|t| b.piece_done(now, t, true)) {
            done += 1;
            b.submit(now, r(f.token + depth), f.token + depth);
        }
        b.fire_timer(now);
        b.pump(now, &mut port);
    }
    done
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("block_layer_depth");
    g.sample_size(10);
    let ops = 20_000;
    g.throughput(Throughput::Elements(ops));
    for policy in ["none", "rcp", "ld", "d2fq", "mqfq"] {
        for depth in [64u64, 1024, 8192, 65535] {
            g.bench_with_input(BenchmarkId::new(policy, depth), &depth, |bch, &d| {
                bch.iter(|| black_box(closed_loop(policy, d, ops)))
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
