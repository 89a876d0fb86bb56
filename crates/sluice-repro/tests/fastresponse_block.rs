//! The `fastresponse-block` suite meets its goals over seeds 1–5, and LD behaves in the simulator as
//! its protocol promises (tokens bound the non-critical pieces at the device, large
//! requests are split and reported once per parent).

use crate::common;
use sluice_core::policy::Counter;
use sluice_core::policy::{build, PolicySpec};
use sluice_device::DeviceProfile;
use sluice_sim::{run, SimConfig};
use sluice_workload::{parse_str, ParseOptions};

/// Every goal over seeds 1–5 but the known failure: Fig. 19b's mean does not fall as
/// the critical rate rises (the simulated Terasort's bursts hit the same share of
/// critical reads at every rate).
#[test]
fn suite_goals_over_seeds() {
    let (goals, table) = common::judged("fastresponse-block", &[]);
    assert!(goals.len() >= 14, "{table}");
    common::assert_verdicts(&goals, &table, &[("fig19b", "critical mean at 16000")]);
}

#[test]
fn ld_in_the_simulator_bounds_tokens_and_splits_parents() {
    let text =
        "[global]\ndirect=1\n[crit]\nrw=randread\nbs=4k\nsize=4m\niodepth=4\nsluice_critical=1\n\
                [bulk]\nrw=randwrite\nbs=128k\nsize=8m\niodepth=32\n";
    let jobs = parse_str(text, "t.fio", &ParseOptions::default())
        .unwrap()
        .jobs;
    let pol = build(&"ld:tokens=4".parse::<PolicySpec>().unwrap()).unwrap();
    let cfg = SimConfig {
        interval_ns: Some(20_000),
        ..SimConfig::default()
    };
    let out = run(
        &jobs,
        &DeviceProfile::resolve("ull").unwrap(),
        pol,
        &cfg,
        &mut |_| {},
    )
    .unwrap();
    let bulk = &out.report.jobs[1];
    assert_eq!(bulk.write.total_ios, 64, "parents reported once each");
    assert_eq!(bulk.write.io_bytes, 8 << 20);
    // 1024 critical reads whole, 64 writes in 4 children each.
    let fetched: u64 = out.stats.fetched_per_class.iter().sum();
    assert_eq!(fetched, 1024 + 64 * 4);
    let extra = &out.report.extra;
    assert_eq!(extra.counter(Counter::SplitRequests), Some(64.0));
    assert_eq!(
        extra.counter(Counter::FreeTokens),
        Some(4.0),
        "every token back at the end"
    );
    let series = extra.series(Counter::NoncriticalInflight).unwrap();
    assert!(series.len() > 10);
    assert!(series.iter().all(|v| *v <= 4.0));
    assert!(series.iter().any(|v| *v >= 3.0), "the pool is used");
}
