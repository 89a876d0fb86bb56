//! Ending jobs early on real files: `exitall` ends the rest of the stonewall group when
//! a job ends (also across workers), and `steadystate` ends a job once its rate is
//! steady, well before its runtime.

use crate::common;

use common::{cfg_in, jobs, prepare};

use std::sync::atomic::AtomicBool;

use sluice_core::policy::PolicySpec;

const MS: u64 = 1_000_000;

fn run(text: &str, workers: usize) -> Option<sluice_engine::EngineOutput> {
    let dir = tempfile::tempdir().unwrap();
    let j = jobs(text);
    let c = cfg_in(dir.path(), Some(workers));
    let files = prepare(&j, &c)?;
    let stop = AtomicBool::new(false);
    Some(
        sluice_engine::run(
            &j,
            &files,
            &"none".parse::<PolicySpec>().unwrap(),
            &c,
            &stop,
            &mut |_| {},
        )
        .unwrap(),
    )
}

#[test]
fn exitall_ends_the_group_when_one_job_ends() {
    for workers in [1, 2] {
        let Some(out) = run(
            "[global]\nsize=8m\nrw=randread\n[short]\nnumber_ios=500\nexitall\n\
             [long]\ntime_based\nruntime=60s\n[later]\nstonewall\nnumber_ios=100\n",
            workers,
        ) else {
            return;
        };
        let r = &out.report;
        assert_eq!(r.jobs[0].read.total_ios, 500);
        // The long job ended with the short one, not after its 60 s; the next group
        // ran. (Half its runtime: a bound the load of a shared machine cannot reach.)
        assert!(
            r.jobs[1].runtime_ns < 30_000 * MS,
            "{}",
            r.jobs[1].runtime_ns
        );
        assert_eq!(r.jobs[2].read.total_ios, 100);
        assert!(out.stats.wall_ns < 30_000 * MS);
    }
}

#[test]
fn a_steady_job_ends_before_its_runtime() {
    // A deviation of less than 100 % of the mean over four 50 ms intervals: met by any
    // job whose rate does not stall, so the job ends at about 200 ms, not at 60 s (the
    // bounds are half that: a loaded machine's stalls may delay the steady state, not
    // to the end of the runtime).
    let Some(out) = run(
        "[r]\nrw=randread\nsize=8m\niodepth=2\nnumjobs=2\ntime_based\nruntime=60s\n\
         steadystate=iops:100%\nss_dur=200ms\nss_interval=50ms\n",
        2,
    ) else {
        return;
    };
    let j = &out.report.jobs[0];
    let ss = j.steadystate.as_ref().unwrap();
    assert!(ss.attained, "{ss:?}");
    let at = ss.attained_ms.unwrap();
    assert!((200..30_000).contains(&at), "{at}");
    assert!(j.runtime_ns < 30_000 * MS, "{}", j.runtime_ns);
}
