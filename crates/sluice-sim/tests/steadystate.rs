//! fio's `steadystate` in virtual time: a job whose rate is steady ends when its first
//! full window meets the criterion, deterministically; one whose rate keeps changing
//! runs to its runtime; `exitall` still ends the group.

use sluice_core::policy::{self, PolicySpec};
use sluice_device::DeviceProfile;
use sluice_sim::{run, SimConfig, SimOutput};
use sluice_workload::{parse_str, ParseOptions};

fn sim(text: &str) -> SimOutput {
    let jobs = parse_str(text, "ss.fio", &ParseOptions::default())
        .unwrap()
        .jobs;
    let pol = policy::build(&"none".parse::<PolicySpec>().unwrap()).unwrap();
    run(
        &jobs,
        &DeviceProfile::resolve("ull").unwrap(),
        pol,
        &SimConfig::default(),
        &mut |_| {},
    )
    .unwrap()
}

const MS: u64 = 1_000_000;

#[test]
fn a_steady_job_ends_at_its_first_full_window() {
    let text = "[r]\ndirect=1\nrw=randread\nsize=256m\niodepth=4\ntime_based\nruntime=30s\n\
                steadystate=iops:2%\nss_dur=400ms\nss_interval=100ms\n";
    let a = sim(text);
    let j = &a.report.jobs[0];
    let ss = j.steadystate.as_ref().unwrap();
    assert!(ss.attained);
    assert_eq!(ss.attained_ms, Some(400));
    assert_eq!(ss.ss, "iops:2%");
    assert_eq!(j.runtime_ns, 400 * MS);
    assert!(ss.criterion.unwrap() < 2.0);
    // The same inputs, the same outcome.
    let b = sim(text);
    assert_eq!(b.report.jobs[0].steadystate, a.report.jobs[0].steadystate);
    assert_eq!(b.report.jobs[0].read.total_ios, j.read.total_ios);
}

#[test]
fn ramp_delays_the_window_and_a_changing_rate_is_not_steady() {
    // ss_ramp=300ms: rates recorded from the check at 400 ms; window full at 600 ms.
    let out = sim("[r]\nrw=randread\nsize=256m\ntime_based\nruntime=2s\n\
         steadystate=iops_slope:5%\nss_dur=300ms\nss_ramp=300ms\nss_interval=100ms\n");
    assert_eq!(
        out.report.jobs[0].steadystate.as_ref().unwrap().attained_ms,
        Some(600)
    );
    // Poisson arrivals: the I/Os per interval vary, so four equal intervals (a
    // deviation below 0.0001 %) never come before the runtime.
    let out = sim(
        "[w]\nrw=randwrite\nsize=256m\ntime_based\nruntime=1s\nrate_iops=1000\nrate_process=poisson\n\
         steadystate=bw:0.0001%\nss_dur=400ms\nss_interval=100ms\n",
    );
    let j = &out.report.jobs[0];
    let ss = j.steadystate.as_ref().unwrap();
    assert!(!ss.attained, "{ss:?}");
    assert_eq!(j.runtime_ns, 1000 * MS);
}
