//! Buffered fio jobs (`direct=0`) through the page cache in the simulator: RCP's
//! class-aware dirty limits, fsync, determinism and clear errors.

use sluice_core::policy::{self, PolicySpec};
use sluice_device::DeviceProfile;
use sluice_fio::front::FrontConfig;
use sluice_sim::{run, SimConfig, SimError, SimOutput};
use sluice_workload::{parse_str, ParseOptions};

fn sim(text: &str, cache: FrontConfig, seed: u64) -> Result<SimOutput, SimError> {
    let jobs = parse_str(text, "test.fio", &ParseOptions::default())
        .expect("valid job")
        .jobs;
    let cfg = SimConfig {
        seed,
        page_cache: cache,
        ..SimConfig::default()
    };
    let pol = policy::build(&"rcp".parse::<PolicySpec>().unwrap()).unwrap();
    run(
        &jobs,
        &DeviceProfile::resolve("ull").unwrap(),
        pol,
        &cfg,
        &mut |_| {},
    )
}

/// A background writer that keeps its dirty limit full beside a critical writer that
/// fsyncs every 4 writes.
const BESIDE: &str = "
[global]
direct=0
runtime=200ms
time_based
[bg]
rw=write
bs=128k
size=256m
iodepth=4
[critical]
rw=randwrite
bs=4k
size=16m
fsync=4
sluice_critical=1
";

fn cache(class_limits: bool) -> FrontConfig {
    let mut c = FrontConfig::default();
    c.cache.class_limits = class_limits;
    c
}

#[test]
fn a_critical_writer_is_not_throttled_by_background_dirt_with_class_limits() {
    let rcp = sim(BESIDE, cache(true), 1).unwrap();
    let linux = sim(BESIDE, cache(false), 1).unwrap();
    let crit = |o: &SimOutput| o.report.jobs[1].write.lat_ns.mean;
    let throttled = |o: &SimOutput| o.report.extra.page_cache.expect("a cache").cache.throttled;
    // With RCP's limits the critical writer's writes land in the cache at once: their
    // time is the system call's copy (1 µs + 4 KiB at 10 GB/s = 1.41 µs), only the
    // background writer pauses; with one limit it pauses behind background dirt too.
    let copy = 1_409.6;
    eprintln!(
        "critical write mean: class limits {} ns, single limit {} ns",
        crit(&rcp),
        crit(&linux)
    );
    assert!(
        (crit(&rcp) - copy).abs() < 5.0,
        "critical write mean {} ns",
        crit(&rcp)
    );
    assert!(
        crit(&linux) - copy > 1_000.0,
        "single limit: {} ns",
        crit(&linux)
    );
    assert!(throttled(&rcp) > 0, "the background writer is throttled");
    // Every fsync went out as a flush, after the file's writeback (the one in flight
    // at the job's time-based end is not counted in the report, as in fio).
    let pc = rcp.report.extra.page_cache.unwrap();
    let syncs = rcp.report.jobs[1].sync.total_ios;
    assert!(
        pc.flushes == syncs || pc.flushes == syncs + 1,
        "{} vs {syncs}",
        pc.flushes
    );
    assert!(pc.flushes > 10 && pc.device_writes > 0);
}

#[test]
fn reads_hit_the_cache_after_the_first_pass_and_runs_replay() {
    let text = "
[r]
direct=0
rw=read
bs=4k
size=8m
loops=3
";
    let a = sim(text, cache(true), 7).unwrap();
    let pc = a.report.extra.page_cache.unwrap();
    // 8 MiB of pages: the first pass misses (a read of each page), the next two hit.
    assert_eq!(pc.cache.misses, 2048);
    assert_eq!(pc.cache.hits, 2 * 2048);
    assert_eq!(a.report.jobs[0].read.total_ios, 3 * 2048);
    let b = sim(text, cache(true), 7).unwrap();
    assert_eq!(
        serde_json::to_string(&sluice_metrics::to_json(&[a.report])).unwrap(),
        serde_json::to_string(&sluice_metrics::to_json(&[b.report])).unwrap()
    );
}

#[test]
fn a_job_that_cannot_run_buffered_is_a_clear_error() {
    let mut small = cache(true);
    small.cache.pages = 64;
    let e = sim("[w]\ndirect=0\nrw=write\nbs=1m\nsize=4m\n", small, 1).unwrap_err();
    assert!(e.to_string().contains("--page-cache"), "{e}");
    let e = sim(
        "[w]\ndirect=0\nrw=write\nbs=512\nsize=6000\n",
        cache(true),
        1,
    )
    .unwrap_err();
    assert!(e.to_string().contains("multiples of 4k"), "{e}");
}

#[test]
fn a_time_based_job_gives_its_end_fsync_when_its_runtime_ends() {
    // A buffered writer far larger than its runtime, two threads: fio syncs each
    // thread's file when its I/O loop ends, however it ended.
    let text = "[w]\ndirect=0\nrw=write\nbs=4k\nsize=256m\nnumjobs=2\ntime_based\n\
                runtime=20ms\nend_fsync=1\n";
    let out = sim(text, FrontConfig::default(), 1).unwrap();
    let w = &out.report.jobs[0];
    assert!(w.write.total_ios > 0);
    assert_eq!(w.sync.total_ios, 2, "an end fsync per thread");
    assert_eq!(out.report.extra.page_cache.expect("a cache").flushes, 2);
    // Without end_fsync, nothing after the runtime.
    let quiet = sim(
        &text.replace("end_fsync=1\n", ""),
        FrontConfig::default(),
        1,
    )
    .unwrap();
    assert_eq!(quiet.report.jobs[0].sync.total_ios, 0);
}

#[test]
fn a_reader_whose_file_is_cached_takes_the_copy_time_per_read() {
    // Every read hits after the first pass: each takes the system call and the copy
    // (1.41 µs for 4 KiB), so the time-based job ends — before the copy was modelled
    // such a thread issued without end at one instant.
    let text = "
[r]
direct=0
rw=randread
bs=4k
size=1m
runtime=20ms
time_based
";
    let o = sim(text, cache(true), 3).unwrap();
    let iops = o.report.jobs[0].read.iops;
    assert!(
        (550_000.0..710_000.0).contains(&iops),
        "{iops} reads/s (1 / 1.41 µs = 709 k, less the first pass's misses)"
    );
}
