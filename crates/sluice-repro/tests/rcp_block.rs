//! The `rcp-block` suite passes every goal, and RCP's admission isolation and
//! starvation bound hold end to end in the simulator.

use crate::common;
use sluice_core::policy::Counter;
use sluice_core::policy::{build, PolicySpec};
use sluice_core::IoClass;
use sluice_device::DeviceProfile;
use sluice_sim::{run, SimConfig, SimOutput};
use sluice_workload::{parse_str, ParseOptions};

fn sim(text: &str, device: &str, policy: &str) -> SimOutput {
    let jobs = parse_str(text, "t.fio", &ParseOptions::default())
        .unwrap()
        .jobs;
    let pol = build(&policy.parse::<PolicySpec>().unwrap()).unwrap();
    run(
        &jobs,
        &DeviceProfile::resolve(device).unwrap(),
        pol,
        &SimConfig::default(),
        &mut |_| {},
    )
    .unwrap()
}

#[test]
fn suite_goals_all_pass_over_seeds() {
    let (goals, table) = common::judged("rcp-block", &[]);
    assert_eq!(goals.len(), 5, "{table}");
    common::assert_verdicts(&goals, &table, &[]);
}

/// The simulator parks a request behind earlier waiters of its own class only, so a
/// critical request passes a non-critical burst that waits for its slots.
#[test]
fn critical_requests_pass_a_waiting_noncritical_burst() {
    let text = "[global]\nsize=1g\ntime_based\nruntime=50ms\nbs=4k\n\
                [crit]\nrw=randread\nrate_iops=5000\nsluice_critical=1\n\
                [burst]\nrw=randwrite\niodepth=64\nnumjobs=2\n";
    let out = sim(text, "ull", "rcp:nc_slots=8,slots=8");
    let class = |c| out.report.classes.iter().find(|r| r.class == c).unwrap();
    assert!(class(IoClass::Critical).ios > 200);
    assert_eq!(class(IoClass::Critical).admit_wait_ns.max, 0);
    assert!(
        class(IoClass::Normal).admit_wait_ns.mean > 0.0,
        "the burst waits"
    );
}

/// With a device depth of 4 (`depth=4`) that a critical job keeps full, non-critical
/// requests still complete about once per 10 ms thanks to the starvation timer; with the
/// timer off (`starve_ms=0`) they get nothing while the critical job runs.
#[test]
fn starvation_timer_bounds_noncritical_waiting() {
    let text = "[global]\nsize=1g\ntime_based\nruntime=200ms\nbs=4k\n\
                [crit]\nrw=randread\niodepth=32\nsluice_critical=1\n\
                [bg]\nrw=randread\niodepth=4\n";
    let bg_ios = |pol: &str| {
        let out = sim(text, "ull", pol);
        let bg = out.report.jobs.iter().find(|j| j.jobname == "bg").unwrap();
        (
            bg.read.total_ios,
            out.report.extra.counter(Counter::StarvationDispatches),
        )
    };
    let (with_timer, forced) = bg_ios("rcp:depth=4");
    // 200 ms / 10 ms = 20 forced dispatches (± the edges of the run).
    assert!(
        (18..=22).contains(&with_timer),
        "{with_timer} background I/Os"
    );
    assert!(forced.unwrap() >= 18.0, "{forced:?}");
    let (without, _) = bg_ios("rcp:depth=4,starve_ms=0");
    assert_eq!(without, 0, "no timer: starved while the critical job runs");
}
