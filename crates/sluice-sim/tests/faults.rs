//! The simulated device's seeded command faults drive the error paths of the one block
//! layer and the policies (issue 10): LD gives a token back on an error completion, a
//! split parent whose piece failed is reported failed once, every request is accounted
//! for, and a fault run replays from its seed.

use sluice_core::policy::{self, Counter, PolicySpec};
use sluice_device::{DeviceProfile, FaultConfig};
use sluice_sim::{run, SimConfig, SimOutput};
use sluice_workload::{parse_str, ParseOptions};

/// A critical 4 KB reader beside two 128 KB writers that LD splits into 32 KB pieces;
/// every job goes on after its failed I/Os (`continue_on_error=io`; fio's default would
/// end a thread at its first), so the whole run's accounting is checked.
const JOB: &str = "
[global]
direct=1
size=64m
continue_on_error=io
[crit]
rw=randread
bs=4k
iodepth=4
size=8m
sluice_critical=1
[bulk]
rw=randwrite
bs=128k
iodepth=16
numjobs=2
";

fn sim(policy: &str, faults: &str, seed: u64) -> SimOutput {
    let jobs = parse_str(JOB, "faults.fio", &ParseOptions::default())
        .unwrap()
        .jobs;
    let cfg = SimConfig {
        seed,
        faults: FaultConfig::parse(faults).unwrap(),
        ..SimConfig::default()
    };
    let pol = policy::build(&policy.parse::<PolicySpec>().unwrap()).unwrap();
    run(
        &jobs,
        &DeviceProfile::resolve("ull").unwrap(),
        pol,
        &cfg,
        &mut |_| {},
    )
    .expect("a run with faults completes")
}

#[test]
fn every_request_is_accounted_for_and_ld_gets_its_tokens_back() {
    let out = sim("ld:tokens=8", "media=0.03,timeout=0.005,timeout_us=400", 3);
    let r = &out.report;
    let block = r.extra.block;
    let faults = r.extra.sim.as_ref().unwrap().device_faults.unwrap();
    // Every piece the device failed reached the block layer as a failed piece.
    assert!(faults.media_errors > 0 && faults.timeouts > 0, "{faults:?}");
    assert_eq!(block.failed_pieces, faults.media_errors + faults.timeouts);
    // Each job issued size/bs requests; each is either a completed I/O or an error.
    let crit = &r.jobs[0];
    assert_eq!(crit.read.total_ios + crit.failed_ios, 2048);
    let bulk = &r.jobs[1];
    assert_eq!(bulk.write.total_ios + bulk.failed_ios, 2 * 512);
    assert_eq!(crit.failed_ios + bulk.failed_ios, block.failed);
    // A parent fails once however many of its pieces failed: with four pieces per
    // bulk write, fewer failed parents than failed pieces.
    assert!(block.failed < block.failed_pieces, "{block:?}");
    assert!(bulk.failed_ios > 0 && crit.failed_ios > 0);
    // Their jobs go on after I/O errors (continue_on_error=io): fio's `total_err`
    // counts every one, and no error ended a thread.
    assert_eq!(crit.total_err, Some(crit.failed_ios));
    assert_eq!(bulk.total_err, Some(bulk.failed_ios));
    // LD returned the token of every failed piece: the whole pool is free at the end.
    assert_eq!(r.extra.counter(Counter::FreeTokens), Some(8.0));
    assert_eq!(r.extra.counter(Counter::NoncriticalInflight), Some(0.0));
}

#[test]
fn rcp_releases_admission_slots_of_failed_requests() {
    // RCP with few slots stalls if a failed request kept its slot.
    let out = sim("rcp:nc_slots=2,slots=2", "media=0.2", 9);
    let r = &out.report;
    assert!(r.extra.block.failed > 0);
    assert_eq!(r.jobs[0].read.total_ios + r.jobs[0].failed_ios, 2048);
    assert_eq!(r.extra.counter(Counter::NoncriticalSlotsHeld), Some(0.0));
    assert_eq!(r.extra.counter(Counter::CriticalSlotsHeld), Some(0.0));
}

#[test]
fn a_fault_run_replays_from_its_seed() {
    let json = |o: &SimOutput| serde_json::to_string(&o.report).unwrap();
    let spec = "media=0.02,timeout=0.002,timeout_us=300";
    let a = sim("ld", spec, 5);
    assert_eq!(json(&a), json(&sim("ld", spec, 5)));
    let b = sim("ld", spec, 6);
    assert_ne!(a.report.extra.block.failed_pieces, 0);
    assert_ne!(json(&a), json(&b));
    // No faults: the same run as without a fault configuration at all.
    let plain = sim("ld", "", 5);
    assert_eq!(plain.report.extra.block.failed_pieces, 0);
    assert!(plain
        .report
        .extra
        .sim
        .as_ref()
        .unwrap()
        .device_faults
        .is_none());
}
