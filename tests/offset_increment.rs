//! fio's `offset_increment` end to end: the threads of one job write disjoint parts
//! of one file, each `offset_increment` further, and the file is laid out to hold the
//! last.

use crate::common;

use common::{run_kept_json, sluice, stderr, write};

#[test]
fn threads_write_their_own_segments_of_one_file() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let job = write(
        dir.path(),
        "o.fio",
        "[w]\ndirect=1\nfilename=f0\nrw=write\nbs=64k\nsize=1m\nnumjobs=3\n\
         offset=1m\noffset_increment=2m\n",
    );
    let out = dir.path().join("o.json");
    if run_kept_json(&job, &data, &out, &[]).is_none() {
        return;
    }
    // Thread 2 ends at 1m + 2·2m + 1m = 6 MiB.
    let m = std::fs::metadata(data.join("f0")).unwrap();
    assert_eq!(m.len(), 6 << 20);
    // Simulated: the same job runs, its three threads each writing 1 MiB.
    let o = sluice(&["sim", &job, "-q", "--json", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    // fio's entries: one per thread, 1 MiB each.
    let jobs = v["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 3);
    for j in jobs {
        assert_eq!(j["write"]["io_bytes"], 1 << 20);
    }
}
