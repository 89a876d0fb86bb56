//! fio job files in the shapes of fio's own examples (tests/fio-examples/), through the
//! parser and the simulator: the ones sluice can run run, deterministically, and the
//! ones it cannot stop with one clear line.

use std::path::{Path, PathBuf};

use sluice_core::policy::{self, PolicySpec};
use sluice_device::DeviceProfile;
use sluice_sim::{run, SimConfig, SimOutput};
use sluice_workload::{parse_str_with, JobSpec, ParseOptions, Parsed};

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fio-examples")
        .join(name)
}

/// The environment the examples see (not the process's, so tests stay independent).
fn vars(name: &str) -> Option<String> {
    match name {
        "SIZE" => Some("64m".into()),
        "DEPTH_HALF" => Some("4".into()),
        _ => None,
    }
}

fn parse(name: &str) -> Result<Parsed, sluice_workload::WorkloadError> {
    let path = example(name);
    let text = std::fs::read_to_string(&path).unwrap();
    parse_str_with(
        &text,
        &path.display().to_string(),
        &ParseOptions::default(),
        &vars,
    )
}

fn sim(jobs: &[JobSpec], seed: u64) -> SimOutput {
    let cfg = SimConfig {
        seed,
        ..SimConfig::default()
    };
    let pol = policy::build(&"none".parse::<PolicySpec>().unwrap()).unwrap();
    run(
        jobs,
        &DeviceProfile::resolve("ull").unwrap(),
        pol,
        &cfg,
        &mut |_| {},
    )
    .expect("simulation runs")
}

fn json(out: &SimOutput) -> String {
    serde_json::to_string(&sluice_metrics::to_json(std::slice::from_ref(&out.report))).unwrap()
}

fn ios(out: &SimOutput, job: usize) -> f64 {
    let j = &out.report.jobs[job];
    (j.read.io_bytes + j.write.io_bytes) as f64
}

#[test]
fn runnable_examples_run_deterministically() {
    for name in [
        "fio-rand-read.fio",
        "fio-seq-write.fio",
        "zipf-read.fio",
        "include-env-math.fio",
        "buffered.fio",
        "poisson-exitall.fio",
    ] {
        let p = parse(name).unwrap_or_else(|e| panic!("{name}: {e}"));
        let a = sim(&p.jobs, 7);
        let b = sim(&p.jobs, 7);
        assert_eq!(json(&a), json(&b), "{name}: same seed, same run");
        for (j, spec) in p.jobs.iter().enumerate() {
            assert!(ios(&a, j) > 0.0, "{name}: job {} did no I/O", spec.name);
        }
    }
}

#[test]
fn what_each_example_says_and_does() {
    // fio-rand-read: libaio is local I/O, accepted silently (as fio).
    let p = parse("fio-rand-read.fio").unwrap();
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    // `name=` in [global] does not rename the job: fio 3.33 reports it as `file1`.
    assert_eq!(p.jobs[0].name, "file1");
    assert_eq!(p.jobs[0].iodepth, 16);

    // fio-seq-write: direct=0 is buffered, in fio and in sluice (its page cache).
    let p = parse("fio-seq-write.fio").unwrap();
    assert!(
        p.warnings.iter().all(|w| !w.contains("'direct'")),
        "{:?}",
        p.warnings
    );
    assert!(p.jobs[0].buffered);
    let out = sim(&p.jobs, 1);
    let pc = out.report.extra.page_cache.expect("through the page cache");
    assert!(pc.device_writes > 0 && pc.cache.dirtied > 0, "{pc:?}");

    // zipf: the no-effect reporting options warn once each; the reader follows Zipf;
    // the log options give fio's files (fio's thread numbers: zipf 1, uniform 2).
    let p = parse("zipf-read.fio").unwrap();
    assert!(
        !p.warnings.iter().any(|w| w.contains("'ioengine'")),
        "{:?}",
        p.warnings
    );
    // norandommap is acted on (offsets with replacement), so it does not warn.
    assert!(p.jobs.iter().all(|j| j.norandommap));
    // group_reporting has its effect: one entry per group.
    assert!(
        !p.warnings.iter().any(|w| w.contains("'group_reporting'")),
        "{:?}",
        p.warnings
    );
    assert_eq!(
        p.warnings
            .iter()
            .filter(|w| w.contains("option 'gtod_reduce'"))
            .count(),
        1,
        "gtod_reduce: {:?}",
        p.warnings
    );
    assert!(matches!(
        p.jobs[0].distribution[0],
        sluice_workload::Distribution::Zipf { theta, .. } if theta == 1.2
    ));
    assert!(
        !p.warnings.iter().any(|w| w.contains("_log'")),
        "{:?}",
        p.warnings
    );
    let out = sim(&p.jobs, 1);
    let logs: Vec<&str> = out.report.logs.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(
        logs,
        [
            "bw_bw.1.log",
            "lat_clat.1.log",
            "lat_slat.1.log",
            "lat_lat.1.log",
            "bw_bw.2.log",
            "lat_clat.2.log",
            "lat_slat.2.log",
            "lat_lat.2.log"
        ]
    );
    assert_eq!(
        out.report.logs[1].entries.len() as u64,
        out.report.jobs[0].read.total_ios,
        "an entry per I/O"
    );
    // group_reporting: the group's two jobs are one entry, under the first's name.
    let e = &out.report.entries;
    assert_eq!(e.len(), 1);
    assert_eq!((e[0].jobname.as_str(), e[0].threads), ("zipf", 2));
    assert_eq!(
        e[0].read.total_ios,
        out.report.jobs[0].read.total_ios + out.report.jobs[1].read.total_ios
    );

    // include, ${VAR}, arithmetic, files, loops.
    let p = parse("include-env-math.fio").unwrap();
    let [mixed, files] = &p.jobs[..] else {
        panic!("{:?}", p.jobs)
    };
    assert_eq!(mixed.iodepth, 8);
    assert_eq!(mixed.size, 64 << 20);
    assert_eq!(mixed.runtime_ns, Some(20_000_000), "(20*1000) µs");
    assert_eq!(
        mixed.bs.write,
        sluice_workload::BlockSize::Split(vec![sluice_workload::BsEntry {
            len: 8192,
            ppm: 1_000_000
        }])
    );
    assert_eq!((files.nrfiles, files.size, files.loops), (4, 64 << 20, 2));
    assert_eq!(files.bs.read, sluice_workload::BlockSize::Fixed(4096));
    assert!(
        p.warnings
            .iter()
            .any(|w| w.contains("common/base.fio:3: option 'thread'")),
        "warnings name the included file: {:?}",
        p.warnings
    );
    // The files job reads 2 loops × 64 MiB… or until its 20 ms runtime.
    let out = sim(&p.jobs, 1);
    assert!(ios(&out, 1) <= (128 << 20) as f64);

    // buffered: buffered=1, fsync=32 and end_fsync run through the page cache (a sync
    // after every 32 writes and one at the end); create_on_open is acted on by the
    // store only, and raw files say so once.
    let p = parse("buffered.fio").unwrap();
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    let raw = sluice::cli::raw_file_warnings(&p.jobs);
    assert_eq!(raw.len(), 1);
    assert!(raw[0].contains("create_on_open=1 is acted on only on the journaled store"));
    let out = sim(&p.jobs, 1);
    assert_eq!(out.report.jobs[0].write.io_bytes, 8 << 20);
    // 128 writes of 64 KiB: 4 syncs after every 32, and the end sync.
    assert_eq!(out.report.jobs[0].sync.total_ios, 5);
    assert_eq!(out.report.extra.page_cache.expect("cache").flushes, 5);

    // exitall: the short writer's end (32 MiB) ends the 50 ms Poisson reader early.
    let p = parse("poisson-exitall.fio").unwrap();
    let out = sim(&p.jobs, 1);
    assert_eq!(out.report.jobs[1].write.io_bytes, 32 << 20);
    assert!(
        out.report.jobs[0].runtime_ns < 40_000_000,
        "the reader ran {} ns",
        out.report.jobs[0].runtime_ns
    );
}

#[test]
fn a_network_engine_stops_with_one_line() {
    let e = parse("netio.fio").unwrap_err().to_string();
    let path = example("netio.fio");
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(
        e.starts_with(&format!(
            "{}:3: option 'ioengine': 'net' cannot run in sluice: it does network",
            path.display()
        )),
        "{e}"
    );
}

/// fio's `new_group` (waitfor.fio, exitwhat.fio): a new reporting group — with
/// `group_reporting`, its jobs are an entry of their own with the next `groupid`
/// (that the jobs still run side by side: `report_groups`' unit test).
#[test]
fn new_group_splits_the_report_not_the_run() {
    let text = "[global]\ngroup_reporting\nsize=4m\nbs=4k\n\
                [a]\nrw=read\nnumjobs=2\n[b]\nnew_group\nrw=randread\nnumjobs=2\n\
                [c]\nrw=randread\n";
    let jobs = sluice_workload::parse_str(text, "new_group", &ParseOptions::default())
        .unwrap()
        .jobs;
    let out = sim(&jobs, 1);
    let e = &out.report.entries;
    let got: Vec<(&str, u32, usize)> = e
        .iter()
        .map(|j| (j.jobname.as_str(), j.threads, j.group))
        .collect();
    assert_eq!(
        got,
        vec![("a", 2, 0), ("b", 3, 1)],
        "b and c summed, a alone"
    );
}
