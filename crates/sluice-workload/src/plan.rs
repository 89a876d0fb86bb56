//! From jobs to the run's structure, shared by both engines: which flow each job
//! belongs to (one per distinct flow name, in order of first appearance), and which
//! stonewall group each job runs in.

use sluice_core::{Flow, FlowId};

use crate::JobSpec;

/// Two jobs name the same flow with different weights.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "jobs '{a}' and '{b}' share flow '{flow}' but give it weights {wa} and {wb}; \
     give every job of a flow the same sluice_weight/prio"
)]
pub struct FlowConflict {
    /// Flow name.
    pub flow: String,
    /// First job.
    pub a: String,
    /// Its weight.
    pub wa: u32,
    /// Second job.
    pub b: String,
    /// Its weight.
    pub wb: u32,
}

/// The flows of `jobs` (one per distinct `JobSpec::flow`, numbered in order of first
/// appearance, weight at least 1) and each job's flow.
pub fn flows_of(jobs: &[JobSpec]) -> Result<(Vec<Flow>, Vec<FlowId>), FlowConflict> {
    let mut flows: Vec<(Flow, usize)> = Vec::new();
    let mut job_flow = Vec::with_capacity(jobs.len());
    for (j, spec) in jobs.iter().enumerate() {
        let weight = spec.weight.max(1);
        match flows.iter().position(|(f, _)| f.name == spec.flow) {
            Some(i) => {
                let (f, first) = &flows[i];
                if f.weight != weight {
                    return Err(FlowConflict {
                        flow: spec.flow.clone(),
                        a: jobs[*first].name.clone(),
                        wa: f.weight,
                        b: spec.name.clone(),
                        wb: spec.weight,
                    });
                }
                job_flow.push(FlowId(i as u32));
            }
            None => {
                let id = FlowId(flows.len() as u32);
                let flow = Flow {
                    id,
                    name: spec.flow.clone(),
                    weight,
                };
                flows.push((flow, j));
                job_flow.push(id);
            }
        }
    }
    Ok((flows.into_iter().map(|(f, _)| f).collect(), job_flow))
}

/// The reporting group of every job (fio's `groupid`): a job with `stonewall` or
/// `new_group` (other than the first) starts a new one (fio's `add_job`). `new_group`
/// changes only the report — which jobs `group_reporting` sums into one entry, and
/// their `groupid` — not when the jobs run ([`stonewall_groups`]).
pub fn report_groups(jobs: &[JobSpec]) -> Vec<usize> {
    let mut g = 0;
    jobs.iter()
        .enumerate()
        .map(|(j, s)| {
            if (s.stonewall || s.new_group) && j > 0 {
                g += 1;
            }
            g
        })
        .collect()
}

/// What a job's end ends when `exitall` is set (fio's `exit_what`, its
/// `TERMINATE_GROUP` / `TERMINATE_STONEWALL` / `TERMINATE_ALL`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ExitWhat {
    /// The jobs of its reporting group (fio's default: `fio_terminate_threads` ends
    /// the jobs whose `groupid` is the ending job's; `new_group` starts one).
    #[default]
    Group,
    /// Every job running: its stonewall group (only one runs at a time).
    Stonewall,
    /// Every job. (fio's later stonewall groups then never start; sluice still runs
    /// them — not done.)
    All,
}

/// The jobs that job `j`'s end ends (`j` not among them), as fio's
/// `fio_terminate_threads(td->groupid, td->o.exit_what)` at a thread's end. fio's
/// `exitall` is one flag for the whole run (`exitall_on_terminate`, set by any job's
/// `exitall`), so with it on any job every job's end ends others, each by its own
/// `exit_what`; without `exitall` nothing is ended.
pub fn exit_targets(jobs: &[JobSpec], j: usize) -> Vec<usize> {
    if !jobs.iter().any(|s| s.exitall) {
        return Vec::new();
    }
    let (report, stonewall) = (report_groups(jobs), stonewall_groups(jobs));
    let same: &[usize] = match jobs[j].exit_what {
        ExitWhat::Group => &report,
        ExitWhat::Stonewall | ExitWhat::All => &stonewall,
    };
    (0..jobs.len())
        .filter(|&k| k != j && same[k] == same[j])
        .collect()
}

/// The stonewall group of every job: a job with `stonewall` (other than the first)
/// starts a new group, which runs when every job of the groups before it has ended.
pub fn stonewall_groups(jobs: &[JobSpec]) -> Vec<usize> {
    let mut g = 0;
    jobs.iter()
        .enumerate()
        .map(|(j, s)| {
            if s.stonewall && j > 0 {
                g += 1;
            }
            g
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(name: &str, flow: &str, weight: u32, stonewall: bool) -> JobSpec {
        JobSpec {
            name: name.into(),
            flow: flow.into(),
            weight,
            stonewall,
            ..JobSpec::default()
        }
    }

    #[test]
    fn flows_in_order_of_first_appearance() {
        let jobs = [
            job("a", "x", 2, false),
            job("b", "y", 0, false),
            job("c", "x", 2, false),
        ];
        let (flows, of) = flows_of(&jobs).unwrap();
        assert_eq!(flows.len(), 2);
        assert_eq!((flows[0].name.as_str(), flows[0].weight), ("x", 2));
        assert_eq!(flows[1].weight, 1, "weight 0 becomes 1");
        assert_eq!(of, vec![FlowId(0), FlowId(1), FlowId(0)]);
    }

    #[test]
    fn conflicting_weights() {
        let e = flows_of(&[job("a", "x", 2, false), job("b", "x", 3, false)]).unwrap_err();
        assert_eq!((e.wa, e.wb), (2, 3));
        assert!(e.to_string().contains("share flow 'x'"));
    }

    #[test]
    fn groups() {
        let jobs = [
            job("a", "a", 1, true),
            job("b", "b", 1, false),
            job("c", "c", 1, true),
            job("d", "d", 1, true),
        ];
        assert_eq!(stonewall_groups(&jobs), vec![0, 0, 1, 2]);
    }

    #[test]
    fn new_group_starts_a_reporting_group_but_not_a_stonewall_one() {
        let mut jobs = [
            job("a", "a", 1, false),
            job("b", "b", 1, false),
            job("c", "c", 1, true),
            job("d", "d", 1, false),
        ];
        jobs[0].new_group = true; // the first job's starts nothing, as fio's
        jobs[1].new_group = true;
        jobs[3].new_group = true;
        assert_eq!(report_groups(&jobs), vec![0, 1, 2, 3]);
        assert_eq!(stonewall_groups(&jobs), vec![0, 0, 1, 1]);
    }
}
