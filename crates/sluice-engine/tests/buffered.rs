//! Buffered jobs (`direct=0`) on real files: through sluice's page cache (the same
//! state machine as the simulator's), on one and two workers.

use crate::common;

use common::{cfg_in, jobs, prepare};

use std::sync::atomic::AtomicBool;

use sluice_core::policy::PolicySpec;

fn run(text: &str, workers: usize, dir: &std::path::Path) -> Option<sluice_engine::EngineOutput> {
    let j = jobs(text);
    let mut c = cfg_in(dir, Some(workers));
    c.keep_files = true;
    let files = prepare(&j, &c)?;
    let stop = AtomicBool::new(false);
    Some(
        sluice_engine::run(
            &j,
            &files,
            &"rcp".parse::<PolicySpec>().unwrap(),
            &c,
            &stop,
            &mut |_| {},
        )
        .unwrap(),
    )
}

#[test]
fn buffered_writes_without_a_sync_are_in_the_file_after_the_run() {
    // No fsync: the pages still dirty when the jobs end are written out after the
    // run, not lost with sluice's cache — fio leaves them to the kernel's cache, which
    // keeps them.
    let dir = tempfile::tempdir().unwrap();
    let Some(out) = run(
        "[w]\ndirect=0\nrw=write\nbs=4k\nsize=1m\nfilename=data\n",
        1,
        dir.path(),
    ) else {
        return;
    };
    let pc = out.report.extra.page_cache.expect("a page cache");
    assert!(pc.written_after_run > 0, "{pc:?}");
    let data = std::fs::read(dir.path().join("data")).unwrap();
    let first = &data[..4096];
    assert!(data.chunks(4096).all(|b| b == first));
    assert!(first.iter().any(|&b| b != 0));
}

#[test]
fn buffered_writes_reach_the_file_by_the_end_fsync() {
    for workers in [1, 2] {
        let dir = tempfile::tempdir().unwrap();
        // One thread at depth 1 writes every block from its one slot buffer: after the
        // end fsync, the file holds that block over and over, where its random
        // pre-fill was.
        let Some(out) = run(
            "[w]\ndirect=0\nrw=write\nbs=4k\nsize=1m\nend_fsync=1\nfilename=data\n\
             [r]\ndirect=0\nrw=randread\nbs=4k\nsize=1m\nloops=4\nfilename=other\n",
            workers,
            dir.path(),
        ) else {
            return;
        };
        let r = &out.report;
        assert_eq!(r.jobs[0].write.total_ios, 256);
        assert_eq!(r.jobs[0].sync.total_ios, 1, "one end fsync");
        assert_eq!(r.jobs[1].read.total_ios, 4 * 256);
        let pc = r.extra.page_cache.expect("a page cache");
        assert_eq!(pc.flushes, 1);
        assert!(pc.device_writes > 0, "{pc:?}");
        // The reader's file: a miss per page at most (the cache holds 16 MiB of pages).
        assert!(pc.cache.misses <= 256 + 2 * 256, "{pc:?}");
        assert!(pc.cache.hits >= 3 * 256 - 256, "{pc:?}");
        let data = std::fs::read(dir.path().join("data")).unwrap();
        assert_eq!(data.len(), 1 << 20);
        let first = &data[..4096];
        assert!(data.chunks(4096).all(|b| b == first), "{workers} workers");
        assert!(first.iter().any(|&b| b != 0));
    }
}

#[test]
fn a_critical_writer_beside_a_background_writer_is_not_throttled_with_class_limits() {
    let text = "[global]\ndirect=0\nruntime=500ms\ntime_based\n\
                [bg]\nrw=write\nbs=128k\nsize=64m\niodepth=4\n\
                [crit]\nrw=randwrite\nbs=4k\nsize=4m\nsluice_critical=1\n";
    let dir = tempfile::tempdir().unwrap();
    let Some(out) = run(text, 2, dir.path()) else {
        return;
    };
    let pc = out.report.extra.page_cache.expect("a page cache");
    assert!(
        pc.cache.throttled > 0,
        "the background writer meets its 1 % limit: {pc:?}"
    );
    // The critical writer never waits for its (20 %) limit: its writes land in the
    // cache, so its median is far below a device write's.
    let crit = &out.report.jobs[1].write;
    assert!(crit.total_ios > 0);
    assert!(
        crit.lat_ns.percentile.get(50.0).unwrap_or(u64::MAX) < 100_000,
        "{:?}",
        crit.lat_ns.percentile
    );
}

#[test]
fn a_time_based_job_gives_its_end_fsync_when_its_runtime_ends() {
    for workers in [1, 2] {
        let dir = tempfile::tempdir().unwrap();
        // Two threads of a buffered writer that would take far longer than its runtime:
        // fio syncs each thread's file when its I/O loop ends, however it ended.
        let Some(out) = run(
            "[w]\ndirect=0\nrw=write\nbs=4k\nsize=64m\nnumjobs=2\ntime_based\n\
             runtime=100ms\nend_fsync=1\n",
            workers,
            dir.path(),
        ) else {
            return;
        };
        let r = &out.report;
        assert!(r.jobs[0].write.total_ios > 0);
        assert_eq!(r.jobs[0].sync.total_ios, 2, "an end fsync per thread");
        assert_eq!(r.extra.page_cache.expect("a page cache").flushes, 2);
    }
}

/// A writer waiting for room in the cache is not left waiting for writeback queued
/// for a worker whose jobs have ended: `b` dirties pages of its file and ends; `a`,
/// on the other worker, writes on past the dirty limit, which `b`'s pages count
/// towards. Their writeback once stayed with `b`'s ended worker and `a` waited for
/// ever (fio's `dedupe-global` example hung this way); now the running worker issues
/// it (every worker has the cache's files open).
#[test]
fn a_writer_is_not_left_waiting_on_an_ended_workers_writeback() {
    for round in 0..3 {
        let dir = tempfile::tempdir().unwrap();
        let Some(out) = run(
            "[a]\ndirect=0\nrw=write\nbs=4k\nsize=48m\nfilename=a\n\
             [b]\ndirect=0\nrw=write\nbs=4k\nsize=4m\nfilename=b\n",
            2,
            dir.path(),
        ) else {
            return;
        };
        let r = &out.report;
        assert_eq!(r.jobs[0].write.total_ios, 12 * 1024, "round {round}");
        assert_eq!(r.jobs[1].write.total_ios, 1024, "round {round}");
        let pc = r.extra.page_cache.expect("a page cache");
        assert!(
            pc.cache.throttled > 0,
            "a's writer reached the dirty limit: {pc:?}"
        );
    }
}
