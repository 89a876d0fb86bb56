//! # sluice-repro — paper reproductions with goals
//!
//! Each *suite* (one per paper part: `d2fq`, `fios`, `fastresponse-block`, `rcp-block`)
//! is a list of *experiments*. An experiment is a job file under `experiments/<suite>/`
//! whose header names the paper figure, the scenario, the goal and the command that
//! checks it, plus a Rust function here that runs it in the simulator (under the
//! policies and devices the figure compares) and turns the measurements into
//! [`Goal`]s: one number each, held against a line, with the paper's figure and claim
//! in the goal's text. `sluice repro SUITE` runs a suite at several seeds (default
//! 1–5; [`runner`]) and judges every goal on its median over the seeds, with the
//! spread, passing it when the median meets the line and at most one seed in five
//! misses ([`judge`]); it prints the table and a closing list of what failed.
//!
//! The job files are embedded with `include_str!`, so the `sluice` binary carries its
//! experiments; the same files run by hand with `sluice sim experiments/<suite>/<file>`.
#![warn(missing_docs, missing_debug_implementations)]

use std::fmt::Write as _;

mod aios_stack;
mod d2fq;
mod d2fq_latency;
mod d2fq_tuning;
mod fastresponse_block;
mod fastresponse_stack;
pub mod fios;
mod judge;
mod rcp_block;
mod rcp_stack;
pub mod runner;
mod tally;

pub use judge::{format_verdicts, judge, Line, Verdict};
use sluice_core::policy::{self, PolicySpec};
use sluice_device::DeviceProfile;
use sluice_sim::{SimConfig, SimOutput};
use sluice_workload::{parse_str, JobSpec, ParseOptions};

/// One checked goal of an experiment, at one seed.
///
/// A goal is one number (`value`) held against a line (`line`); its text names the
/// paper's figure and claim beside the threshold. Over several seeds the goals of the
/// same experiment and place are judged together ([`judge`]): on the median, with the
/// spread shown.
#[derive(Clone, Debug, PartialEq)]
pub struct Goal {
    /// Experiment id (e.g. `fig11a`).
    pub experiment: String,
    /// The goal in words, with the paper's figure and number (e.g. "d2fq bandwidth
    /// ratio 1 ± 0.05 (Fig. 11a: 1.0)").
    pub goal: String,
    /// What was measured, in words and figures.
    pub measured: String,
    /// The number the goal is judged on (1 or 0 for a [`Line::Holds`] goal).
    pub value: f64,
    /// The line `value` must meet.
    pub line: Line,
    /// Whether the goal was met at this seed (`line.meets(value)`).
    pub pass: bool,
}

impl Goal {
    /// A goal on a number: passes when `value` meets `line`.
    pub fn new(
        experiment: impl Into<String>,
        goal: impl Into<String>,
        value: f64,
        line: Line,
        measured: impl Into<String>,
    ) -> Goal {
        Goal {
            experiment: experiment.into(),
            goal: goal.into(),
            measured: measured.into(),
            value,
            pass: line.meets(value),
            line,
        }
    }

    /// A goal on a condition that holds or not (a trend over a sweep, several
    /// comparisons at once): over seeds it is judged on how many seeds it holds at.
    pub fn holds(
        experiment: impl Into<String>,
        goal: impl Into<String>,
        holds: bool,
        measured: impl Into<String>,
    ) -> Goal {
        Goal::new(
            experiment,
            goal,
            if holds { 1.0 } else { 0.0 },
            Line::Holds,
            measured,
        )
    }
}

/// An experiment: a job file with a header and the function that checks its goals.
#[derive(Clone, Copy)]
pub struct Experiment {
    /// Short id, unique in its suite (e.g. `fig11a`).
    pub id: &'static str,
    /// The paper figure and a one-line scenario.
    pub title: &'static str,
    /// Path of the job file relative to the repository root.
    pub file: &'static str,
    /// Runs the experiment and returns its goals.
    pub run: fn(&Ctx) -> Result<Vec<Goal>, ReproError>,
}

impl std::fmt::Debug for Experiment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Experiment")
            .field("id", &self.id)
            .field("file", &self.file)
            .finish()
    }
}

/// A named list of experiments.
#[derive(Clone, Copy, Debug)]
pub struct Suite {
    /// Name given to `sluice repro`.
    pub name: &'static str,
    /// One line about the suite.
    pub about: &'static str,
    /// Its experiments, in order.
    pub experiments: &'static [Experiment],
}

/// Why an experiment could not run (as opposed to running and missing a goal).
#[derive(Debug, thiserror::Error)]
pub enum ReproError {
    /// An embedded job file does not parse (a bug in the experiment).
    #[error("experiment job {file}: {source}")]
    Job {
        /// File.
        file: String,
        /// Parser error.
        #[source]
        source: sluice_workload::WorkloadError,
    },
    /// A policy spec is wrong (a bug in the experiment).
    #[error("experiment policy '{spec}': {message}")]
    Policy {
        /// The spec.
        spec: String,
        /// What was wrong.
        message: String,
    },
    /// A device name is wrong (a bug in the experiment).
    #[error("experiment device: {0}")]
    Device(#[from] sluice_device::ProfileError),
    /// The simulation failed.
    #[error("simulation: {0}")]
    Sim(#[from] sluice_sim::SimError),
    /// A figure could not be written.
    #[error("{0}")]
    Plot(#[from] sluice_metrics::MetricsError),
    /// An application of a whole-stack experiment failed (a bug in the experiment).
    #[error("{what}: {message}")]
    App {
        /// The experiment's run.
        what: String,
        /// What failed.
        message: String,
    },
    /// No suite has that name.
    #[error("unknown repro suite '{name}'; known suites: {known}")]
    UnknownSuite {
        /// Name given.
        name: String,
        /// Known names.
        known: String,
    },
}

/// What every experiment is given: the seed and a progress callback.
#[allow(missing_debug_implementations)]
pub struct Ctx<'a> {
    /// Seed of every simulation the experiment runs.
    pub seed: u64,
    /// Called with a short label before each simulation starts (from the thread that
    /// runs it: [`Ctx::sim_each`] runs simulations side by side).
    pub on_run: &'a (dyn Fn(&str) + Sync),
    /// Called with a line of detail an experiment reports beside its goals (the
    /// command prints it unless quiet; a library never prints).
    pub on_note: &'a (dyn Fn(&str) + Sync),
    /// Where experiments write their figures (SVG); `None`: no figures.
    pub plot_dir: Option<std::path::PathBuf>,
}

impl Ctx<'_> {
    /// Parse an embedded job file.
    pub fn jobs(&self, file: &str, text: &str) -> Result<Vec<JobSpec>, ReproError> {
        parse_str(text, file, &ParseOptions::default())
            .map(|p| p.jobs)
            .map_err(|source| ReproError::Job {
                file: file.to_string(),
                source,
            })
    }

    /// Run `jobs` on `device` (a builtin name, or a profile) under `policy`
    /// (`NAME[:k=v,...]`) with the context's seed and default simulator settings.
    pub fn sim(
        &self,
        jobs: &[JobSpec],
        device: &DeviceProfile,
        policy: &str,
    ) -> Result<SimOutput, ReproError> {
        self.sim_with(jobs, device, policy, &SimConfig::default())
    }

    /// `f` on each of `items`, side by side on the current thread pool (see
    /// [`runner`]): the values in the order of `items`, or the first error in that
    /// order — what a loop over `items` that stops at its first error returns, since
    /// each call is independent of the others.
    pub fn each<I: Sync, T: Send>(
        &self,
        items: &[I],
        f: impl Fn(&I) -> Result<T, ReproError> + Sync,
    ) -> Result<Vec<T>, ReproError> {
        use rayon::prelude::*;
        let outs: Vec<Result<T, ReproError>> = items.par_iter().map(&f).collect();
        outs.into_iter().collect()
    }

    /// [`Ctx::sim`] under each of `policies`, side by side ([`Ctx::each`]).
    pub fn sim_each(
        &self,
        jobs: &[JobSpec],
        device: &DeviceProfile,
        policies: &[&str],
    ) -> Result<Vec<SimOutput>, ReproError> {
        self.each(policies, |p| self.sim(jobs, device, p))
    }

    /// [`Ctx::sim`] with explicit simulator settings (its seed is replaced by the
    /// context's).
    pub fn sim_with(
        &self,
        jobs: &[JobSpec],
        device: &DeviceProfile,
        policy: &str,
        cfg: &SimConfig,
    ) -> Result<SimOutput, ReproError> {
        (self.on_run)(&format!("{policy} on {}", device.name));
        let pol = self.policy(policy)?;
        self.sim_policy(jobs, device, policy, pol, cfg)
    }

    /// A policy built from its spec (`NAME[:k=v,...]`).
    pub fn policy(&self, spec: &str) -> Result<Box<dyn policy::Policy>, ReproError> {
        let bad = |message: String| ReproError::Policy {
            spec: spec.to_string(),
            message,
        };
        let parsed: PolicySpec = spec.parse().map_err(|e| bad(format!("{e}")))?;
        policy::build(&parsed).map_err(|e| bad(format!("{e}")))
    }

    /// [`Ctx::sim_with`] under a policy already built (e.g. wrapped to measure it);
    /// `label` names it in the report.
    pub fn sim_policy(
        &self,
        jobs: &[JobSpec],
        device: &DeviceProfile,
        label: &str,
        pol: Box<dyn policy::Policy>,
        cfg: &SimConfig,
    ) -> Result<SimOutput, ReproError> {
        let cfg = SimConfig {
            seed: self.seed,
            ..cfg.clone()
        };
        let mut out = sluice_sim::run(jobs, device, pol, &cfg, &mut |_| {})?;
        out.report.policy = label.to_string();
        Ok(out)
    }

    /// Write a line chart `<plot_dir>/<name>.svg` of a sweep (nothing without a plot
    /// directory). Returns the path written.
    pub fn plot(
        &self,
        name: &str,
        title: &str,
        x_desc: &str,
        y_desc: &str,
        series: &[sluice_metrics::XySeries],
        log_x: bool,
    ) -> Result<Option<std::path::PathBuf>, ReproError> {
        let Some(dir) = &self.plot_dir else {
            return Ok(None);
        };
        let path = dir.join(format!("{name}.svg"));
        sluice_metrics::plot_xy(&path, title, x_desc, y_desc, series, log_x)?;
        Ok(Some(path))
    }

    /// A builtin device profile by name.
    pub fn device(&self, name: &str) -> Result<DeviceProfile, ReproError> {
        Ok(DeviceProfile::resolve(name)?)
    }
}

/// Every suite, in the order `sluice repro --list` shows them.
pub fn suites() -> Vec<Suite> {
    vec![
        d2fq::SUITE,
        fios::SUITE,
        fastresponse_block::SUITE,
        rcp_block::SUITE,
        rcp_stack::SUITE,
        fastresponse_stack::SUITE,
        aios_stack::SUITE,
    ]
}

/// Find a suite by name.
pub fn suite(name: &str) -> Result<Suite, ReproError> {
    let all = suites();
    all.iter()
        .find(|s| s.name == name)
        .copied()
        .ok_or_else(|| ReproError::UnknownSuite {
            name: name.to_string(),
            known: all.iter().map(|s| s.name).collect::<Vec<_>>().join(", "),
        })
}

/// Format goals as an aligned pass/fail table.
pub fn format_table(goals: &[Goal]) -> String {
    let mut t = sluice_metrics::Table::new(
        &[
            ("experiment", false),
            ("goal", false),
            ("pass", false),
            ("measured", false),
        ],
        false,
    );
    for g in goals {
        t.row(vec![
            g.experiment.clone(),
            g.goal.clone(),
            if g.pass { "PASS" } else { "FAIL" }.into(),
            g.measured.clone(),
        ]);
    }
    let mut out = Vec::new();
    t.write(&mut out).expect("writing to memory");
    let mut s = String::from_utf8(out).expect("cells are text");
    let passed = goals.iter().filter(|g| g.pass).count();
    let _ = writeln!(s, "{} passed, {} failed", passed, goals.len() - passed);
    s
}

/// Widest a goal's or a measurement's text runs in [`format_verdicts`] before it wraps
/// onto the next line.
pub const DETAIL_WIDTH: usize = 56;

/// `text` in lines of at most `width` characters, broken at spaces (a longer word is
/// cut).
pub(crate) fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        let mut word: Vec<char> = word.chars().collect();
        while word.len() > width {
            if !line.is_empty() {
                lines.push(std::mem::take(&mut line));
            }
            lines.push(word.drain(..width).collect());
        }
        let len = line.chars().count();
        if len > 0 && len + 1 + word.len() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.extend(word);
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

/// Helper for goals on a ratio: pass when `|value − target| ≤ tol`.
pub fn goal_within(
    experiment: &str,
    goal: impl Into<String>,
    value: f64,
    target: f64,
    tol: f64,
) -> Goal {
    Goal::new(
        experiment,
        goal,
        value,
        Line::Within { target, tol },
        format!("{value:.4}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_counts_pass_and_fail() {
        let goals = vec![
            goal_within("e1", "ratio 1 ± 0.05", 1.02, 1.0, 0.05),
            goal_within("e1", "ratio 1 ± 0.05", 1.2, 1.0, 0.05),
        ];
        let t = format_table(&goals);
        assert!(t.contains("PASS") && t.contains("FAIL"));
        assert!(t.contains("1 passed, 1 failed"));
    }

    #[test]
    fn suite_table_names_the_suite_and_wraps_the_detail() {
        let long = "a measurement that goes on and on ".repeat(6);
        let mut g = goal_within("fig6", "ratio 1 ± 0.05", 1.02, 1.0, 0.05);
        g.measured = long.clone();
        let other = goal_within("fig6", "ratio 1 ± 0.05", 1.2, 1.0, 0.05);
        let mut v = judge(&[1], &[vec![g, other]]).unwrap();
        v[0].suite = "d2fq".into();
        v[1].suite = "rcp-block".into();
        let t = format_verdicts(&v);
        let header = t.lines().next().unwrap();
        assert!(header.starts_with("suite"), "{t}");
        // fig6 of two suites: each line says which.
        assert!(t
            .lines()
            .any(|l| l.starts_with("d2fq ") && l.contains("fig6")));
        assert!(t
            .lines()
            .any(|l| l.starts_with("rcp-block ") && l.contains("fig6")));
        let widest = t
            .lines()
            .take_while(|l| !l.contains("passed"))
            .map(|l| l.chars().count())
            .max()
            .unwrap();
        assert!(widest < 2 * DETAIL_WIDTH + 100, "{widest}: {t}");
        // The long measurement wraps over several lines.
        assert!(
            t.lines().filter(|l| l.contains("on and on")).count() >= 3,
            "{t}"
        );
        assert!(t.contains("1 passed, 1 failed"));
        assert_eq!(wrap("abc defg", 3), vec!["abc", "def", "g"]);
        assert_eq!(wrap("", 5), vec![""]);
    }

    #[test]
    fn unknown_suite_lists_known() {
        let e = suite("nope").unwrap_err();
        assert!(e.to_string().contains("unknown repro suite 'nope'"));
    }
}
