//! fio's `fill_device` in the simulator: the filling job's file reaches to the end of
//! the simulated device, the job ends there without an error, and a later job on the
//! file without a size reads what was written (fio's examples/surface-scan.fio).

use sluice_core::policy::{self, PolicySpec};
use sluice_device::DeviceProfile;
use sluice_sim::{run, SimConfig, SimError, SimOutput};
use sluice_workload::{parse_str, ParseOptions};

/// The nand profile cut to a 2 GiB logical space (its flash map still leaves the
/// spare blocks garbage collection needs, without FDP: 4 spare blocks per die hold no
/// part-written block for each of 8 placement handles).
fn small_nand() -> DeviceProfile {
    let mut p = DeviceProfile::resolve("nand").unwrap();
    let f = p.flash.as_mut().expect("nand has [flash]");
    f.logical_bytes = 2 << 30;
    f.fdp_ruhs = 0;
    p
}

fn sim(text: &str, profile: &DeviceProfile) -> Result<SimOutput, SimError> {
    let jobs = parse_str(text, "test.fio", &ParseOptions::default())
        .expect("valid job")
        .jobs;
    let pol = policy::build(&"rcp".parse::<PolicySpec>().unwrap()).unwrap();
    run(&jobs, profile, pol, &SimConfig::default(), &mut |_| {})
}

/// surface-scan.fio, with 1 MiB blocks to keep the test short.
const SCAN: &str = "
[global]
bs=1m
direct=1
iodepth=4
[write-phase]
filename=datafile.tmp
rw=write
fill_device=1
loops=3
[verify-phase]
stonewall
filename=datafile.tmp
rw=read
";

#[test]
fn the_write_phase_fills_the_device_and_the_read_phase_reads_it() {
    let out = sim(SCAN, &small_nand()).expect("runs");
    let [w, r] = &out.report.jobs[..] else {
        panic!("two jobs");
    };
    assert_eq!(
        w.write.io_bytes,
        2 << 30,
        "written to the device's end, once"
    );
    assert_eq!(w.error, 0);
    assert_eq!(
        r.read.io_bytes,
        2 << 30,
        "the read phase reads what was written"
    );
    assert_eq!(r.error, 0);
}

#[test]
fn a_given_size_or_offset_is_overridden_to_the_end() {
    let text = "[w]\nbs=1m\nrw=write\nfill_fs=1\nsize=4m\noffset=1g\n";
    let out = sim(text, &small_nand()).expect("runs");
    assert_eq!(out.report.jobs[0].write.io_bytes, 1 << 30);
}

#[test]
fn no_capacity_or_a_file_past_the_end_is_a_clear_error() {
    let e = sim(SCAN, &DeviceProfile::resolve("ull").unwrap()).unwrap_err();
    assert!(e.to_string().contains("gives no capacity"), "{e}");
    let text = "[w]\nbs=1m\nrw=write\nfill_device=1\n[x]\nrw=read\nsize=1m\n";
    let e = sim(text, &small_nand()).unwrap_err();
    assert!(e.to_string().contains("past the end"), "{e}");
}
