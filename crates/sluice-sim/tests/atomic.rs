//! fio's `atomic=1` under the simulator: each write is one atomic (untorn) request
//! that the block layer never splits, within the profile's atomic write unit
//! (`controller.atomic_write_bytes`, NVMe AWUPF); a write over it is refused at setup.

use sluice_core::policy::{self, PolicySpec};
use sluice_device::{DeviceProfile, DEFAULT_ATOMIC_WRITE_BYTES};
use sluice_sim::{run, SimConfig, SimError, SimOutput};
use sluice_workload::{parse_str, ParseOptions};

fn sim_on(text: &str, profile: &DeviceProfile, pol: &str) -> Result<SimOutput, SimError> {
    let jobs = parse_str(text, "atomic.fio", &ParseOptions::default())
        .unwrap()
        .jobs;
    let pol = policy::build(&pol.parse::<PolicySpec>().unwrap()).unwrap();
    run(&jobs, profile, pol, &SimConfig::default(), &mut |_| {})
}

fn ull_with(atomic: u32) -> DeviceProfile {
    let mut p = DeviceProfile::builtin("ull").unwrap();
    p.controller.atomic_write_bytes = Some(atomic);
    p
}

/// fio's `examples/atomic-verify.fio` (its device a file of 64 MiB here): ten threads
/// of 4 KiB atomic random writes at depth 16 run, and every write is atomic.
#[test]
fn fios_atomic_verify_job_runs_with_every_write_atomic() {
    let text = "[write-and-verify]\nrw=randwrite\nbs=4k\ndirect=1\nioengine=libaio\n\
        iodepth=16\nverify=crc64\natomic=1\nverify_write_sequence=0\nnumjobs=10\n\
        filename=dev\nsize=64m\nio_size=1m\n";
    let p = DeviceProfile::builtin("ull").unwrap();
    assert_eq!(p.atomic_write_unit(), (512, DEFAULT_ATOMIC_WRITE_BYTES));
    let o = sim_on(text, &p, "none").expect("runs");
    let b = &o.report.extra.block;
    assert_eq!(b.submitted, 10 * 256);
    assert_eq!(b.atomic_writes, b.submitted, "every write is atomic");
    assert_eq!(b.pieces, b.submitted);
    let sim = o.report.extra.sim.as_ref().unwrap();
    assert_eq!(sim.device_atomic_write_bytes, Some(4096));
    let json = serde_json::to_string(&o.report.extra).unwrap();
    assert!(json.contains("\"atomic_writes\":2560"), "{json}");
}

/// LD cuts a non-critical 64 KiB write into 32 KiB pieces; the same write with
/// `atomic=1` (on a device whose atomic write unit is 64 KiB) goes whole.
#[test]
fn an_atomic_write_is_not_split_where_a_plain_one_is() {
    let job = |atomic: u8| {
        format!(
            "[w]\nrw=randwrite\nbs=64k\ndirect=1\niodepth=4\nsize=16m\nio_size=4m\natomic={atomic}\n"
        )
    };
    let p = ull_with(64 << 10);
    let plain = sim_on(&job(0), &p, "ld").expect("runs");
    let atomic = sim_on(&job(1), &p, "ld").expect("runs");
    let (pb, ab) = (&plain.report.extra.block, &atomic.report.extra.block);
    assert_eq!((pb.submitted, ab.submitted), (64, 64));
    assert_eq!(pb.pieces, 128, "plain: two 32 KiB pieces each");
    assert_eq!(pb.atomic_writes, 0);
    assert_eq!(ab.pieces, 64, "atomic: whole");
    assert_eq!(ab.atomic_writes, 64);
    // The same bytes were written either way.
    assert_eq!(
        plain.report.jobs[0].write.io_bytes,
        atomic.report.jobs[0].write.io_bytes
    );
    // Nothing reported for a run without atomic writes (byte-identical JSON as before).
    let json = serde_json::to_string(&plain.report.extra).unwrap();
    assert!(!json.contains("atomic"), "{json}");
}

#[test]
fn a_write_over_the_devices_atomic_write_unit_is_refused_naming_it() {
    let text = "[big]\nrw=randwrite\nbs=16k\ndirect=1\natomic=1\nsize=16m\n";
    let Err(e) = sim_on(text, &DeviceProfile::builtin("ull").unwrap(), "none") else {
        panic!("a 16 KiB atomic write on a 4 KiB unit should be refused");
    };
    let e = e.to_string();
    assert!(e.contains("job 'big'") && e.contains("16KiB"), "{e}");
    assert!(e.contains("512B..4KiB") && e.contains("'ull'"), "{e}");
    assert!(e.contains("controller.atomic_write_bytes"), "{e}");
    // The same job on a device with a 16 KiB unit runs.
    assert!(sim_on(
        text.replace("size=16m", "size=16m\nio_size=64k").as_str(),
        &ull_with(16 << 10),
        "none"
    )
    .is_ok());
}
