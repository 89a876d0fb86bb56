//! Real-I/O tests of the engine on temporary files (short: well under a second each).
//! Where io_uring cannot be set up at all, each test says why and returns.

use crate::common;

use common::{cfg_in, jobs, prepare};

use std::collections::VecDeque;
use std::path::Path;
use std::sync::atomic::AtomicBool;

use sluice_core::policy::{Completion, Counter, DeviceView, Dispatch, Policy, PolicySpec};
use sluice_core::{Nanos, QueueClass, Request};
use sluice_engine::{EngineConfig, EngineOutput, FileSet};
use sluice_workload::JobSpec;

fn cfg(dir: &Path) -> EngineConfig {
    cfg_in(dir, None)
}

fn run(j: &[JobSpec], files: &FileSet, policy: &str, c: &EngineConfig) -> EngineOutput {
    let stop = AtomicBool::new(false);
    sluice_engine::run(
        j,
        files,
        &policy.parse::<PolicySpec>().unwrap(),
        c,
        &stop,
        &mut |_| {},
    )
    .unwrap()
}

#[test]
fn size_based_job_transfers_exactly_its_size_and_cleans_up() {
    let dir = tempfile::tempdir().unwrap();
    let j = jobs(
        "[w]\nrw=write\nbs=64k\nsize=4m\niodepth=4\n[r]\nrw=randread\nbs=4k\nsize=2m\niodepth=8\n",
    );
    let c = cfg(dir.path());
    let Some(files) = prepare(&j, &c) else { return };
    assert_eq!(files.created().len(), 2);
    let out = run(&j, &files, "none", &c);
    let w = &out.report.jobs[0];
    assert_eq!(w.write.io_bytes, 4 << 20);
    assert_eq!(w.write.total_ios, 64);
    assert_eq!(w.error, 0);
    let r = &out.report.jobs[1];
    assert_eq!(r.read.io_bytes, 2 << 20);
    assert!(r.read.lat_ns.mean > 0.0);
    // Device time dominates and the parts add up to the total.
    let parts = r.read.sched_ns.mean + r.read.device_ns.mean + r.read.post_ns.mean;
    assert!(
        (parts - r.read.lat_ns.mean).abs() < 1.0,
        "{parts} vs {}",
        r.read.lat_ns.mean
    );
    assert_eq!(out.report.extra.engine, "io_uring");
    assert_eq!(out.stats.ios, 64 + 512);
    drop(files);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn rate_thinktime_and_stonewall_are_honoured() {
    let dir = tempfile::tempdir().unwrap();
    let j = jobs(
        "[global]\nsize=8m\ntime_based\nruntime=400ms\nrw=randread\n\
         [paced]\nrate_iops=500\n\
         [thinker]\nthinktime=10ms\n\
         [later]\nstonewall\nruntime=200ms\niodepth=2\n",
    );
    let c = cfg(dir.path());
    let Some(files) = prepare(&j, &c) else { return };
    let out = run(&j, &files, "none", &c);
    // The limits are upper bounds, checked as such; the lower bounds only say the jobs
    // ran (a loaded machine may hold a job's thread back, never push it past a limit).
    let paced = out.report.jobs[0].read.iops;
    assert!(paced > 100.0 && paced < 550.0, "rate_iops=500 gave {paced}");
    let thinker = out.report.jobs[1].read.iops;
    assert!(
        thinker > 10.0 && thinker <= 101.0,
        "thinktime=10ms gave {thinker} IOPS"
    );
    let later = &out.report.jobs[2];
    assert!(later.read.total_ios > 0);
    // It ran its 200 ms (an end that ignored the runtime would never come).
    assert!(
        later.runtime_ns as f64 > 190e6,
        "runtime {}",
        later.runtime_ns
    );
    // The stonewalled job ran after the first group: the run lasts both.
    assert!(
        out.stats.wall_ns >= 600_000_000,
        "wall {}",
        out.stats.wall_ns
    );
}

/// A test policy: splits every request into 4 KiB pieces and alternates them between
/// the high and low queue classes, so the arbiter and the piece bookkeeping do real
/// work.
#[derive(Default)]
struct SplitAlternate {
    q: VecDeque<Request>,
    n: u64,
    completed_pieces: u64,
}

impl Policy for SplitAlternate {
    fn name(&self) -> &'static str {
        "split-alternate"
    }
    fn enqueue(&mut self, _now: Nanos, req: Request) {
        self.q.extend(req.split(4096));
    }
    fn dispatch(&mut self, _now: Nanos, _v: &DeviceView) -> Option<Dispatch> {
        let req = self.q.pop_front()?;
        self.n += 1;
        let queue = if self.n.is_multiple_of(2) {
            QueueClass::High
        } else {
            QueueClass::Low
        };
        Some(Dispatch { req, queue })
    }
    fn complete(&mut self, _now: Nanos, done: &Completion) {
        assert!(done.ok);
        self.completed_pieces += 1;
    }
    fn queued(&self) -> usize {
        self.q.len()
    }
    fn counters(&self) -> Vec<(Counter, f64)> {
        vec![(
            Counter::Custom("completed_pieces"),
            self.completed_pieces as f64,
        )]
    }
}

#[test]
fn split_pieces_go_through_the_wrr_arbiter() {
    // 16 KiB requests become four 4 KiB pieces on high and low; the ring holds two.
    let dir = tempfile::tempdir().unwrap();
    let j = jobs("[r]\nrw=randread\nbs=16k\nsize=4m\niodepth=8\n");
    let c = EngineConfig {
        ring_cap: Some(2),
        workers: Some(1),
        ..cfg(dir.path())
    };
    let Some(files) = prepare(&j, &c) else { return };
    let stop = AtomicBool::new(false);
    let out = sluice_engine::run_with(
        &j,
        &files,
        Box::new(SplitAlternate::default()),
        &c,
        &stop,
        &mut |_| {},
    )
    .unwrap();
    let r = &out.report.jobs[0];
    assert_eq!(r.read.io_bytes, 4 << 20);
    assert_eq!(r.read.total_ios, 256);
    assert_eq!(r.error, 0);
    let real = out.report.extra.real.as_ref().unwrap();
    let fetched = real.arbiter_fetched_per_class;
    assert_eq!(
        fetched.get(QueueClass::High) + fetched.get(QueueClass::Low),
        1024
    );
    assert_eq!(
        out.report
            .extra
            .counter(Counter::Custom("completed_pieces")),
        Some(1024.0)
    );
    // With the ring capped at 2 of 32 pieces offered, most went through the staging queues.
    assert!(real.arbiter_fast_path < 1024);
}
