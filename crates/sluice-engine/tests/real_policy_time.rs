//! The engine's measurement of the time spent inside policy calls
//! (`extra.policy_ns_per_io`), on short real runs over temporary files.
//! Where io_uring cannot be set up at all, each test says why and returns.

use crate::common;

use common::{cfg_in, jobs, prepare};

use std::hint::black_box;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use sluice_core::policy::{Completion, DeviceView, Dispatch, NonePolicy, Policy, PolicySpec};
use sluice_core::{Nanos, Request};
use sluice_engine::{EngineConfig, EngineOutput};

const JOB: &str = "[r]\nrw=randread\nbs=4k\nsize=4m\niodepth=4\nnumjobs=1\n";

fn cfg(dir: &Path) -> EngineConfig {
    cfg_in(dir, Some(1))
}

/// `extra.KEY` as the JSON report has it.
fn json(out: &EngineOutput, key: &str) -> serde_json::Value {
    serde_json::to_value(&out.report).unwrap()["extra"][key].clone()
}

fn num(out: &EngineOutput, key: &str) -> f64 {
    json(out, key)
        .as_f64()
        .unwrap_or_else(|| panic!("extra.{key} missing: {:?}", out.report.extra))
}

#[test]
fn policy_time_is_reported_positive_and_consistent() {
    let dir = tempfile::tempdir().unwrap();
    let j = jobs(JOB);
    let c = cfg(dir.path());
    let Some(files) = prepare(&j, &c) else { return };
    for policy in ["none", "d2fq", "mqfq"] {
        let stop = AtomicBool::new(false);
        let spec = policy.parse::<PolicySpec>().unwrap();
        let out = sluice_engine::run(&j, &files, &spec, &c, &stop, &mut |_| {}).unwrap();
        assert_eq!(out.stats.ios, 1024, "{policy}");
        let net = num(&out, "policy_ns_per_io");
        let raw = num(&out, "policy_ns_per_io_raw");
        let calls = num(&out, "policy_calls_per_io");
        // The net figure subtracts the bracket's measured cost, so for a policy as cheap
        // as `none` it can come out as 0 on a loaded machine; the raw one cannot.
        assert!(net >= 0.0, "{policy}: policy_ns_per_io {net}");
        assert!(raw > 0.0, "{policy}: policy_ns_per_io_raw {raw}");
        assert!(raw >= net, "{policy}: raw {raw} < net {net}");
        // Every I/O is admitted, enqueued, dispatched and completed at least once.
        assert!(calls >= 4.0, "{policy}: {calls} calls per I/O");
        let by = json(&out, "policy_ns_per_io_by_call");
        let by = by.as_object().unwrap();
        let sum: f64 = by.values().map(|v| v.as_f64().unwrap()).sum();
        assert!((sum - net).abs() < 1e-3 * net.max(1.0), "{policy}: {by:?}");
        // Per kind the bracket's cost is subtracted, so a call cheaper than the
        // bracket (d2fq's enqueue) may come out as 0, never below.
        for k in [
            "admit",
            "enqueue",
            "dispatch",
            "complete",
            "timer",
            "next_timer",
        ] {
            assert!(by[k].as_f64().unwrap() >= 0.0, "{policy}: {k} in {by:?}");
        }
        let overhead = num(&out, "policy_timing_overhead_ns");
        assert!(overhead > 0.0 && overhead < 1_000.0, "{policy}: {overhead}");
    }
}

/// `NonePolicy` whose `complete` does a fixed amount of work (no clock in it).
struct Busy {
    inner: NonePolicy,
    spin: u64,
}

fn burn(n: u64) -> u64 {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for i in 0..n {
        x = black_box(x.rotate_left(7) ^ i).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    }
    x
}

impl Policy for Busy {
    fn name(&self) -> &'static str {
        "busy"
    }
    fn enqueue(&mut self, now: Nanos, req: Request) {
        self.inner.enqueue(now, req)
    }
    fn dispatch(&mut self, now: Nanos, view: &DeviceView) -> Option<Dispatch> {
        self.inner.dispatch(now, view)
    }
    fn complete(&mut self, now: Nanos, done: &Completion) {
        black_box(burn(self.spin));
        self.inner.complete(now, done)
    }
    fn queued(&self) -> usize {
        self.inner.queued()
    }
}

#[test]
fn work_done_inside_complete_is_measured_there() {
    // The time of the busy loop, measured here, outside the engine: the fastest of
    // several tries (the test machine is shared).
    let spin = 5_000;
    let alone = (0..20)
        .map(|_| {
            let t = Instant::now();
            black_box(burn(spin));
            t.elapsed().as_nanos() as f64
        })
        .fold(f64::MAX, f64::min);
    let dir = tempfile::tempdir().unwrap();
    let j = jobs(JOB);
    let c = cfg(dir.path());
    let Some(files) = prepare(&j, &c) else { return };
    let stop = AtomicBool::new(false);
    let out = sluice_engine::run_with(
        &j,
        &files,
        Box::new(Busy {
            inner: NonePolicy::new(),
            spin,
        }),
        &c,
        &stop,
        &mut |_| {},
    )
    .unwrap();
    let by = &json(&out, "policy_ns_per_io_by_call");
    let complete = by["complete"].as_f64().unwrap();
    let dispatch = by["dispatch"].as_f64().unwrap();
    // One completion per I/O: the engine's figure is the loop's time (cache misses and
    // interrupts may add to it; a preempted call is left out).
    assert!(
        complete > 0.7 * alone && complete < 3.0 * alone,
        "complete {complete} ns/I/O, loop alone {alone} ns"
    );
    assert!(dispatch < complete / 4.0, "dispatch {dispatch} ns/I/O");
}
