//! Validation: the same jobs on the device (median of rounds) and in the simulator on
//! the derived profile, and the simulator's error on each (`sim / real − 1`).
//!
//! The jobs ([`JOBS`]) cover what a profile is used for: 4 KiB random reads at QD1
//! (latency) and QD32 (parallelism), 4 KiB random writes at QD32, a 70/30 16 KiB mix at
//! QD4 (reads and writes together) and 128 KiB sequential reads at QD8 (bandwidth).
//! The goals ([`GOAL_IOPS_MEAN`], [`GOAL_P99`]) are MQSim's validation range (FAST '18:
//! errors from a few % to under 20 % against real SSDs).

use std::sync::atomic::AtomicBool;

use sluice_core::policy::{self, PolicySpec};
use sluice_device::DeviceProfile;
use sluice_sim::SimConfig;
use sluice_workload::RwMode;

use crate::analysis;
use crate::{CalibrateError, Plan, PointSpec, Target, Window};

/// Goal: |error| of IOPS and mean latency, %.
pub const GOAL_IOPS_MEAN: f64 = 15.0;
/// Goal: |error| of the 99th percentile, %.
pub const GOAL_P99: f64 = 25.0;

/// One validation job: a grid point's mix, size and depth, random or sequential.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Job {
    /// Mix, request size, queue depth.
    pub spec: PointSpec,
    /// Sequential offsets (reads only) instead of random ones.
    pub sequential: bool,
}

impl Job {
    const fn random(read_pct: u8, bs: u32, qd: u32) -> Job {
        Job {
            spec: PointSpec { read_pct, bs, qd },
            sequential: false,
        }
    }

    /// A short label, e.g. `randread 4k qd1` or `read 128k qd8`.
    pub fn label(&self) -> String {
        if self.sequential {
            self.spec.label().replacen("randread", "read", 1)
        } else {
            self.spec.label()
        }
    }
}

/// The validation jobs.
pub const JOBS: [Job; 5] = [
    Job::random(100, 4096, 1),
    Job::random(100, 4096, 32),
    Job::random(0, 4096, 32),
    Job::random(70, 16384, 4),
    Job {
        spec: PointSpec {
            read_pct: 100,
            bs: 128 << 10,
            qd: 8,
        },
        sequential: true,
    },
];

/// Real (median of rounds) and simulated figures of one validation job.
#[derive(Clone, Debug, PartialEq)]
pub struct Check {
    /// The job.
    pub job: Job,
    /// The round whose IOPS is the median (its latencies belong to it).
    pub real: Window,
    /// Every real round, in the order run.
    pub real_rounds: Vec<Window>,
    /// The simulator on the profile.
    pub sim: Window,
}

impl Check {
    /// Errors of the simulator in % (`sim / real − 1`): IOPS, mean latency, p99.
    pub fn errors(&self) -> (f64, f64, f64) {
        (
            analysis::error_pct(self.sim.iops, self.real.iops),
            analysis::error_pct(self.sim.lat_mean_ns, self.real.lat_mean_ns),
            analysis::error_pct(self.sim.lat_p99_ns, self.real.lat_p99_ns),
        )
    }

    /// The device against itself: how far apart its rounds of this job were, in % of
    /// the median round — (max − min) / median of IOPS, mean latency and p99. An error
    /// of the simulator smaller than this is below what the device repeats; on a disk
    /// whose rounds differ more than a goal, that goal cannot be judged.
    pub fn device_spread(&self) -> (f64, f64, f64) {
        let spread = |f: fn(&Window) -> f64| {
            let v: Vec<f64> = self.real_rounds.iter().map(f).collect();
            let (lo, hi) = v
                .iter()
                .fold((f64::MAX, f64::MIN), |(lo, hi), &x| (lo.min(x), hi.max(x)));
            match f(&self.real) {
                m if m > 0.0 && !v.is_empty() => (hi - lo) / m * 100.0,
                _ => 0.0,
            }
        };
        (
            spread(|w| w.iops),
            spread(|w| w.lat_mean_ns),
            spread(|w| w.lat_p99_ns),
        )
    }

    /// How far the device moved between the grid and this job, in % of the grid's
    /// IOPS (`real / grid − 1`): the grid point measuring the same thing (a random
    /// 4 KiB job's depth in the queue-depth sweep), if there is one. The profile is
    /// fitted to the grid, so an error of the simulator near this is the device's
    /// drift, not the model's.
    pub fn grid_drift(&self, points: &[crate::Point]) -> Option<f64> {
        if self.job.sequential {
            return None;
        }
        points
            .iter()
            .find(|p| p.role == crate::Role::QdSweep && p.spec == self.job.spec && p.iops > 0.0)
            .map(|p| analysis::error_pct(self.real.iops, p.iops))
    }

    /// Whether every error is within its goal.
    pub fn meets_goals(&self) -> bool {
        let (i, m, p) = self.errors();
        i.abs() <= GOAL_IOPS_MEAN && m.abs() <= GOAL_IOPS_MEAN && p.abs() <= GOAL_P99
    }
}

/// The window whose IOPS is the median of the rounds' (an actual run, so its latency
/// figures belong together).
pub fn median_window(rounds: &[Window]) -> Window {
    let mut v: Vec<&Window> = rounds.iter().collect();
    v.sort_by(|a, b| a.iops.total_cmp(&b.iops));
    *v[v.len() / 2]
}

/// Where the device's validation rounds run in a grid of `total` points: the grid
/// positions (a round at `k` runs before grid point `k`, at `total` after the last),
/// `rounds` of them spread evenly from before the first point to after the last. One
/// round runs after the grid.
///
/// Why spread: the profile is fitted to the grid, which takes minutes, and a shared disk
/// moves by more than a goal in that time (docs/calibrate.md, "Caveat: shared disks";
/// QD1 reads 9.5–15.5 % slower in validations run after the grid than at the grid's
/// point, runs 6–9). Rounds spread over the grid see the device over the same span as
/// the points the profile comes from, and their median is its middle.
pub fn round_positions(total: usize, rounds: usize) -> Vec<usize> {
    match rounds.max(1) {
        1 => vec![total],
        r => (0..r)
            .map(|k| (k * total + (r - 1) / 2) / (r - 1))
            .collect(),
    }
}

/// Where rounds at grid positions `at` ran, in words, for a grid of `total` points:
/// e.g. `before point 1 of the grid's 48, before point 25 and after the last`; empty `at`:
/// after the grid and the fits (the order before rounds were spread).
pub fn describe_positions(at: &[usize], total: usize) -> String {
    if at.is_empty() {
        return "after the grid and the fits".into();
    }
    let one = |k: usize| match k {
        k if k >= total => "after the last".to_string(),
        k => format!("before point {}", k + 1),
    };
    let mut words: Vec<String> = at.iter().map(|&k| one(k)).collect();
    words[0] = format!("{} of the grid's {total}", words[0]);
    match words.len() {
        1 => words.remove(0),
        n => format!("{} and {}", words[..n - 1].join(", "), words[n - 1]),
    }
}

/// Round `round` of every job of [`JOBS`] on the device (`plan.validate_ns` after a
/// warm-up each), in [`JOBS`]' order; `progress` is told each job as it starts.
pub fn device_round(
    target: &Target,
    plan: &Plan,
    seed: u64,
    round: usize,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(&Job),
) -> Result<Vec<Window>, CalibrateError> {
    let mut windows = Vec::with_capacity(JOBS.len());
    for (i, job) in JOBS.iter().enumerate() {
        progress(job);
        let s = job_seed(seed, i) + round as u64;
        let mut j = target.job(&job.spec, plan.validate_ns, plan.warmup_ns, s)?;
        if job.sequential {
            j.rw = RwMode::Read;
        }
        windows.push(Window::from_report(&target.run_once(j, stop)?));
    }
    Ok(windows)
}

/// The validation's device rounds spread over a grid ([`round_positions`]): the grid
/// calls [`SpreadRounds::run_due`] before each point and after the last
/// ([`crate::measure`]'s `between`), and the rounds it collects, by job, go to
/// [`checks`] once the profile is fitted ([`crate::Calibration::set_validation`]).
#[derive(Debug)]
pub struct SpreadRounds {
    /// The grid positions, one per round.
    pub at: Vec<usize>,
    /// The rounds run so far, by job of [`JOBS`].
    pub by_job: Vec<Vec<Window>>,
}

impl SpreadRounds {
    /// `rounds` rounds over a grid of `total` points.
    pub fn new(total: usize, rounds: usize) -> SpreadRounds {
        SpreadRounds {
            at: round_positions(total, rounds),
            by_job: vec![Vec::new(); JOBS.len()],
        }
    }

    /// Run on the device every round due at grid position `k` ([`device_round`]);
    /// `progress` is told the round (0-based) and each job as it starts.
    pub fn run_due(
        &mut self,
        k: usize,
        target: &Target,
        plan: &Plan,
        seed: u64,
        stop: &AtomicBool,
        progress: &mut dyn FnMut(usize, &Job),
    ) -> Result<(), CalibrateError> {
        for r in (0..self.at.len()).filter(|&r| self.at[r] == k) {
            let round = device_round(target, plan, seed, r, stop, &mut |job| progress(r, job))?;
            for (i, w) in round.into_iter().enumerate() {
                self.by_job[i].push(w);
            }
        }
        Ok(())
    }
}

/// The checks of the device's rounds against the simulator on `profile`:
/// `by_job[i]` holds the rounds of job `i` of [`JOBS`] (from [`device_round`], or a
/// saved file's), of which the median is compared; each job is simulated once
/// ([`simulate_job`]).
pub fn checks(
    by_job: Vec<Vec<Window>>,
    plan: &Plan,
    size_bytes: u64,
    profile: &DeviceProfile,
    seed: u64,
) -> Result<Vec<Check>, CalibrateError> {
    by_job
        .into_iter()
        .enumerate()
        .filter(|(_, rounds)| !rounds.is_empty())
        .map(|(i, real_rounds)| {
            Ok(Check {
                job: JOBS[i],
                real: median_window(&real_rounds),
                real_rounds,
                sim: simulate_job(i, plan, size_bytes, profile, seed)?,
            })
        })
        .collect()
}

/// The seed of validation job `i`'s first real round (and of its simulated run).
fn job_seed(seed: u64, i: usize) -> u64 {
    seed.wrapping_add(1000 + 10 * i as u64)
}

/// Validation job `i` of [`JOBS`] in the simulator on `profile`, as [`validate`] runs
/// it beside the device's rounds (also when a saved calibration is fitted again:
/// `Calibration::refit`).
pub fn simulate_job(
    i: usize,
    plan: &Plan,
    size_bytes: u64,
    profile: &DeviceProfile,
    seed: u64,
) -> Result<Window, CalibrateError> {
    let job = JOBS[i];
    let mut spec = job.spec.job(
        "validate.dat",
        size_bytes,
        plan.validate_ns,
        plan.warmup_ns,
        job_seed(seed, i),
    )?;
    if job.sequential {
        spec.rw = RwMode::Read;
    }
    sim_window(spec, profile, seed)
}

/// One job alone in the simulator on `profile` as the engine ran it on the device
/// (policy `none`, one core, `seed`): its window. The grid's fits and the validation
/// simulate this way.
pub(crate) fn sim_window(
    job: sluice_workload::JobSpec,
    profile: &DeviceProfile,
    seed: u64,
) -> Result<Window, CalibrateError> {
    let cfg = SimConfig {
        seed,
        cores: 1,
        ..SimConfig::default()
    };
    let none: PolicySpec = "none".parse().expect("`none` parses");
    let policy = policy::build(&none).expect("`none` builds");
    let out = sluice_sim::run(&[job], profile, policy, &cfg, &mut |_| {})?;
    Ok(Window::from_report(&out.report))
}
