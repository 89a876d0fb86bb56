//! fio's report entries in the simulator: each thread of a `numjobs` job is an entry
//! of its own unless `group_reporting` sums a group's into one.

use sluice_core::policy::{self, PolicySpec};
use sluice_device::DeviceProfile;
use sluice_sim::{run, SimConfig, SimOutput};
use sluice_workload::{parse_str, ParseOptions};

fn sim(text: &str) -> SimOutput {
    let jobs = parse_str(text, "test.fio", &ParseOptions::default())
        .expect("valid job")
        .jobs;
    run(
        &jobs,
        &DeviceProfile::resolve("ull").unwrap(),
        policy::build(&"none".parse::<PolicySpec>().unwrap()).unwrap(),
        &SimConfig::default(),
        &mut |_| {},
    )
    .expect("simulation runs")
}

fn json_jobs(out: &SimOutput) -> Vec<serde_json::Value> {
    sluice_metrics::to_json(std::slice::from_ref(&out.report))["jobs"]
        .as_array()
        .unwrap()
        .clone()
}

const FOUR: &str = "[global]\nrw=randread\nbs=4k\nsize=16m\niodepth=4\ndirect=1\n\
                    [r]\nnumjobs=4\n";

#[test]
fn numjobs_4_gives_4_json_entries() {
    let out = sim(FOUR);
    let jobs = json_jobs(&out);
    assert_eq!(jobs.len(), 4);
    for j in &jobs {
        assert_eq!(j["jobname"], "r");
        assert_eq!(j["groupid"], 0);
        // Each thread read its own 16 MiB.
        assert_eq!(j["read"]["io_bytes"], 16 << 20);
    }
    assert_eq!(
        out.report.jobs.len(),
        1,
        "one summed report per job section"
    );
}

#[test]
fn group_reporting_gives_one_entry_whose_iops_is_the_sum() {
    let apart = sim(FOUR);
    let together = sim(&format!("{FOUR}group_reporting\n"));
    let jobs = json_jobs(&together);
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0]["read"]["io_bytes"], 64u64 << 20);
    let iops = jobs[0]["read"]["iops"].as_f64().unwrap();
    let sum: f64 = json_jobs(&apart)
        .iter()
        .map(|j| j["read"]["iops"].as_f64().unwrap())
        .sum();
    // The threads end within a few I/Os of each other: the entry's IOPS (all I/Os
    // over the longest thread's runtime) is their sum within 1 %.
    assert!((iops - sum).abs() <= 0.01 * sum, "{iops} vs {sum}");
    // And it is the job section's figure.
    assert_eq!(together.report.jobs[0].read.iops, iops);
}
