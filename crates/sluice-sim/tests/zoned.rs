//! `zonemode=zbd` on the zoned (`zns`) device: writes follow the write pointers, full
//! zones are reset before they are written again, `max_open_zones` bounds the zones
//! written at once, reads stay in written data, a trim resets a zone, a write off
//! the write pointer (a job without zbd) fails as an error of the job, and runs
//! replay from their seed.

use sluice_core::policy::{self, PolicySpec};
use sluice_device::DeviceProfile;
use sluice_metrics::errors::EIO;
use sluice_sim::{run, SimConfig, SimError, SimOutput, ZoneStats};
use sluice_workload::{parse_str, ParseOptions};

const ZONE: u64 = 4 << 20;

/// The zns profile with 64 zones of 4 MiB, at most 8 open and active.
fn zns() -> DeviceProfile {
    let mut p = DeviceProfile::builtin("zns").unwrap();
    let z = p.zoned.as_mut().unwrap();
    z.zone_size_bytes = ZONE;
    z.zone_capacity_bytes = ZONE;
    z.zones = 64;
    z.max_open = 8;
    z.max_active = 8;
    p
}

/// Run `text` (its zbd jobs given the device's zone size, which sizes in zones need).
fn sim_on(
    text: &str,
    profile: &DeviceProfile,
    pol: &str,
    seed: u64,
) -> Result<SimOutput, SimError> {
    // One file, the device, for every job (as fio's zbd jobs name the device).
    let text = text.replace(
        "zonemode=zbd\n",
        "zonemode=zbd\nzonesize=4m\nfilename=dev\n",
    );
    let jobs = parse_str(&text, "zbd.fio", &ParseOptions::default())
        .unwrap()
        .jobs;
    let cfg = SimConfig {
        seed,
        ..SimConfig::default()
    };
    let pol = policy::build(&pol.parse::<PolicySpec>().unwrap()).unwrap();
    run(&jobs, profile, pol, &cfg, &mut |_| {})
}

fn sim(text: &str) -> SimOutput {
    sim_on(text, &zns(), "none", 1).expect("the run completes")
}

fn zones(o: &SimOutput) -> &ZoneStats {
    o.stats.zones.as_ref().expect("a zoned device")
}

#[test]
fn sequential_writes_fill_zones_at_their_write_pointers() {
    let o = sim("[w]\ndirect=1\nrw=write\nbs=256k\niodepth=8\nzonemode=zbd\nsize=3z\n");
    let j = &o.report.jobs[0];
    assert_eq!(j.error, 0);
    assert_eq!(j.write.total_ios, 3 * 16);
    let z = zones(&o);
    assert_eq!(&z.write_pointers[..4], &[ZONE, ZONE, ZONE, 0]);
    assert_eq!((z.errors, z.resets), (0, 0));
}

#[test]
fn a_full_zone_is_reset_before_it_is_written_again() {
    // Two passes over two zones: the second pass resets each zone first.
    let o = sim("[w]\ndirect=1\nrw=write\nbs=1m\nzonemode=zbd\nsize=2z\nio_size=4z\n");
    let z = zones(&o);
    assert_eq!(o.report.jobs[0].error, 0);
    assert_eq!(o.report.jobs[0].write.total_ios, 16);
    assert_eq!((z.resets, z.runner_resets), (2, 2));
    assert_eq!(&z.write_pointers[..3], &[ZONE, ZONE, 0]);
    // The runner's resets are not the job's I/O.
    assert_eq!(o.report.jobs[0].trim.total_ios, 0);
}

#[test]
fn random_writes_keep_to_max_open_zones_and_never_miss_the_write_pointer() {
    let job = "[w]\ndirect=1\nrw=randwrite\nbs=64k\niodepth=4\nnumjobs=4\nzonemode=zbd\nsize=32z\n\
               max_open_zones=3\ntime_based\nruntime=200ms\n";
    for pol in ["none", "bfq", "mq-deadline", "d2fq"] {
        let o = sim_on(job, &zns(), pol, 1).unwrap();
        let z = zones(&o);
        assert_eq!(o.report.jobs[0].error, 0, "{pol}");
        assert_eq!(z.errors, 0, "{pol}");
        assert_eq!(z.peak_open, 3, "{pol}: {z:?}");
        assert!(z.runner_resets > 0, "{pol}: full zones are reset: {z:?}");
    }
    // The device's own limit is the default, and a larger one is refused.
    let o = sim("[w]\ndirect=1\nrw=randwrite\nbs=64k\niodepth=4\nnumjobs=4\nzonemode=zbd\nsize=32z\nnumber_ios=2000\n");
    assert!(zones(&o).peak_open <= 8);
    let e = sim_on(
        &job.replace("max_open_zones=3", "max_open_zones=9"),
        &zns(),
        "none",
        1,
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("larger than the device's limit of 8"),
        "{e}"
    );
}

#[test]
fn job_max_open_zones_bounds_each_job() {
    let o = sim(
        "[w]\ndirect=1\nrw=randwrite\nbs=64k\niodepth=4\nzonemode=zbd\nsize=32z\njob_max_open_zones=2\n\
         number_ios=3000\n",
    );
    assert_eq!(zones(&o).peak_open, 2);
    assert_eq!(zones(&o).errors, 0);
}

#[test]
fn the_reset_threshold_resets_zones_as_fio_simulates_gc() {
    let o = sim(
        "[w]\ndirect=1\nrw=randwrite\nbs=1m\nzonemode=zbd\nsize=8z\nzone_reset_threshold=0.5\n\
         zone_reset_frequency=0.25\nio_size=400m\n",
    );
    let z = zones(&o);
    assert_eq!((o.report.jobs[0].error, z.errors), (0, 0));
    assert!(z.runner_resets > 0);
    // Resets keep the written share near the threshold: not every zone is full.
    let full = z.write_pointers.iter().filter(|&&w| w == ZONE).count();
    assert!(full < 8, "{z:?}");
}

#[test]
fn reads_stay_in_written_data_unless_read_beyond_wp() {
    let write = "[w]\ndirect=1\nrw=write\nbs=1m\nzonemode=zbd\nsize=1z\n";
    let read = "[r]\nstonewall\ndirect=1\nrw=read\nbs=128k\nzonemode=zbd\nsize=4z\n";
    let o = sim(&format!("{write}{read}"));
    // One zone written: the sequential reader reads it, and (as fio's
    // zbd_find_zone finds the nearest zone with data) reads it again for its size.
    let r = &o.report.jobs[1].read;
    assert_eq!(r.io_bytes, 4 * ZONE);
    // Every read touched the media (a read past the write pointer takes a few µs).
    assert!(r.clat_ns.min > 50_000, "{:?}", r.clat_ns);
    // On an empty device a zbd reader has nothing to read.
    let o = sim(read);
    assert_eq!(o.report.jobs[0].read.total_ios, 0);
    // read_beyond_wp reads it all, answered by the controller without the media.
    let o = sim(&format!("{read}read_beyond_wp=1\n"));
    let r = &o.report.jobs[0].read;
    assert_eq!(r.io_bytes, 4 * ZONE);
    assert!(r.clat_ns.max < 50_000, "{:?}", r.clat_ns);
    // Random reads go only where data is.
    let o = sim(&format!("{write}[r]\nstonewall\ndirect=1\nrw=randread\nbs=4k\nzonemode=zbd\nsize=8z\nnumber_ios=500\n"));
    assert_eq!(o.report.jobs[1].read.total_ios, 500);
    assert_eq!(o.report.jobs[1].error, 0);
}

#[test]
fn a_trim_resets_a_written_zone() {
    let o = sim("[w]\ndirect=1\nrw=write\nbs=1m\nzonemode=zbd\nsize=4z\n\
         [t]\nstonewall\ndirect=1\nrw=randtrim\nbs=4m\nzonemode=zbd\nsize=4z\nnumber_ios=4\n");
    let z = zones(&o);
    assert_eq!(o.report.jobs[1].trim.total_ios, 4);
    assert_eq!((z.resets, z.errors), (4, 0));
    assert_eq!(&z.write_pointers[..4], &[0, 0, 0, 0]);
}

#[test]
fn a_write_off_the_write_pointer_is_an_error_of_the_job_not_a_panic() {
    // continue_on_error=write: every one of the 200 writes is issued and accounted for.
    let o = sim(
        "[w]\ndirect=1\nrw=randwrite\nbs=4k\nsize=4m\nnumber_ios=200\ncontinue_on_error=write\n",
    );
    let z = zones(&o);
    assert!(z.errors > 0);
    let j = &o.report.jobs[0];
    assert_eq!(j.failed_ios, z.errors);
    assert_eq!(j.write.total_ios + j.failed_ios, 200);
    // fio's JSON: every error was continued (`total_err`), the first one's EIO is
    // `first_error` and the job's `error`.
    assert_eq!(j.total_err, Some(z.errors));
    assert_eq!((j.error, j.first_error), (EIO, Some(EIO)));
    // fio's default: the first failed write ends the thread.
    let o = sim("[w]\ndirect=1\nrw=randwrite\nbs=4k\nsize=4m\nnumber_ios=200\n");
    let j = &o.report.jobs[0];
    assert!(
        j.failed_ios >= 1 && j.write.total_ios + j.failed_ios < 200,
        "{} + {}",
        j.write.total_ios,
        j.failed_ios
    );
    // The EIO that ended the thread is the job's `error`; no `total_err` without
    // continue_on_error.
    assert_eq!((j.error, j.total_err), (EIO, None));
}

#[test]
fn zbd_needs_a_zoned_device_of_its_zone_size() {
    let job = "[w]\ndirect=1\nrw=write\nzonemode=zbd\nsize=1z\nzonesize=4m\n";
    let e = sim_on(job, &DeviceProfile::builtin("nand").unwrap(), "none", 1).unwrap_err();
    assert!(e.to_string().contains("use --device zns"), "{e}");
    let e = sim_on(&job.replace("4m", "8m"), &zns(), "none", 1).unwrap_err();
    assert!(
        e.to_string()
            .contains("does not match the device's zone size"),
        "{e}"
    );
    let e = sim_on(&job.replace("direct=1\n", ""), &zns(), "none", 1).unwrap_err();
    assert!(e.to_string().contains("add direct=1"), "{e}");
}

#[test]
fn a_zoned_run_replays_from_its_seed() {
    let job = "[w]\ndirect=1\nrw=randrw\nbs=64k\niodepth=8\nnumjobs=2\nzonemode=zbd\nsize=16z\n\
               max_open_zones=4\nnumber_ios=1500\n";
    let a = sim_on(job, &zns(), "bfq", 7).unwrap();
    let b = sim_on(job, &zns(), "bfq", 7).unwrap();
    assert_eq!(format!("{:?}", a.report), format!("{:?}", b.report));
    assert_eq!(a.stats, b.stats);
}

#[test]
fn zone_write_locking_keeps_reordered_writes_at_the_write_pointer() {
    // Half the writes drawn real-time (critical): RCP dispatches them ahead of the
    // normal ones queued before them. Without zone write locking they would reach
    // the device past the write pointer.
    let job = "[w]\ndirect=1\nrw=write\nbs=64k\niodepth=16\nzonemode=zbd\nsize=4z\n\
               cmdprio_percentage=50\ncmdprio_class=1\n";
    for pol in ["rcp", "bfq", "d2fq", "kyber"] {
        let o = sim_on(job, &zns(), pol, 3).unwrap();
        let z = zones(&o);
        assert_eq!((o.report.jobs[0].error, z.errors), (0, 0), "{pol}");
        assert_eq!(&z.write_pointers[..4], &[ZONE; 4], "{pol}");
    }
}

#[test]
fn threshold_resets_are_not_lost_with_io_in_flight() {
    // Past the threshold every 4th write resets its zone first; at depth 8 the thread
    // holds the write until its I/O in flight completed, and the reset still comes.
    let job =
        "[w]\ndirect=1\nrw=randwrite\nbs=1m\nzonemode=zbd\nsize=8z\nzone_reset_threshold=0.5\n\
               zone_reset_frequency=0.25\nio_size=400m\n";
    let qd1 = zones(&sim(job)).runner_resets;
    let qd8 = zones(&sim(&format!("{job}iodepth=8\n"))).runner_resets;
    assert!(qd1 >= 80, "{qd1}");
    assert!(qd8 * 10 >= qd1 * 9, "depth 8: {qd8} resets, depth 1: {qd1}");
}
