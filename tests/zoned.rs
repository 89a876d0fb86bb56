//! fio's zone modes end to end: `zonemode=zbd` under `sluice sim --device zns` (the
//! shape of fio's zbd examples: jobs sharing one device, sizes and offsets in zones,
//! a random writer bounded by max_open_zones, a garbage-collection trim job), refused
//! on a conventional simulated device and by `sluice run` on a regular file;
//! `zonemode=strided` runs in both worlds.

use crate::common;

use common::{refused, sluice, stderr, write};

const ZBD: &str = "[global]\ndirect=1\nzonemode=zbd\nzonesize=256M\nfilename=/dev/zns0\n\
                   offset=16z\nsize=8z\n\
                   [fill]\nrw=write\nbs=1m\niodepth=4\n\
                   [rand]\nstonewall\nrw=randwrite\nbs=512k\nnumjobs=4\nmax_open_zones=4\n\
                   time_based\nruntime=300ms\n\
                   [gc]\nrw=randtrim\nbs=256M\nflow=1\nruntime=300ms\ntime_based\n\
                   [read]\nstonewall\nrw=read\nbs=256k\niodepth=8\n";

#[test]
fn zbd_jobs_run_on_the_zoned_profile() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(dir.path(), "zbd.fio", ZBD);
    let out = dir.path().join("o.json");
    let o = sluice(&[
        "sim",
        &job,
        "-q",
        "--device",
        "zns",
        "--json",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let jobs = v["jobs"].as_array().unwrap();
    for j in jobs {
        assert_eq!(j["error"], 0, "{}", j["jobname"]);
    }
    // fio's entries: rand's four threads one by one (no group_reporting).
    let names: Vec<&str> = jobs
        .iter()
        .map(|j| j["jobname"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["fill", "rand", "rand", "rand", "rand", "gc", "read"]
    );
    // The fill writes its 8 zones; each random writer and the trims ran; the reader
    // reads written data (8 zones' worth, at most, since the trims emptied some).
    assert_eq!(jobs[0]["write"]["io_bytes"], 8u64 << 28);
    for j in &jobs[1..5] {
        assert!(j["write"]["total_ios"].as_u64().unwrap() > 0);
    }
    assert!(jobs[5]["trim"]["total_ios"].as_u64().unwrap() > 0);
    assert_eq!(jobs[6]["read"]["io_bytes"], 8u64 << 28);
}

#[test]
fn zbd_is_refused_without_a_zoned_device() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(dir.path(), "zbd.fio", ZBD);
    refused(
        &sluice(&["sim", &job, "-q"]),
        &[
            "zonemode=zbd, which needs a zoned device",
            "use --device zns",
        ],
    );
    let local = write(
        dir.path(),
        "local.fio",
        "[z]\ndirect=1\nrw=write\nbs=64k\nsize=4m\nzonemode=zbd\nzonesize=1m\n",
    );
    let d = dir.path().to_str().unwrap();
    let o = sluice(&["run", &local, "-q", "-D", d]);
    refused(
        &o,
        &[
            "zonemode=zbd needs a zoned block device",
            "sluice sim --device zns",
        ],
    );
    assert_eq!(stderr(&o).trim().lines().count(), 1, "{}", stderr(&o));
}

#[test]
fn strided_runs_in_both_worlds() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(
        dir.path(),
        "s.fio",
        "[s]\ndirect=1\nrw=read\nbs=64k\nsize=8m\nzonesize=256k\nzoneskip=768k\n",
    );
    let o = sluice(&["sim", &job, "-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let d = dir.path().to_str().unwrap();
    let o = sluice(&["run", &job, "-q", "-D", d]);
    let e = stderr(&o);
    // Where io_uring cannot be set up the engine says so; otherwise it runs.
    assert!(o.status.success() || e.contains("io_uring"), "{e}");
}
