//! Suite `fios`: FIOS (Park & Shen, "FIOS: A Fair, Efficient Flash I/O Scheduler",
//! FAST '12), §6.1 — fairness (Fig. 5, Fig. 6), efficiency (Fig. 7) and the effect of
//! fairness-oriented anticipation (Fig. 8) on the simulated X25-M, Mtron and Vertex.
//!
//! Every task's slowdown is its mean I/O latency over that of a run of the task alone
//! (on the raw device, `none`); fairness is a slowdown at most the *proportional
//! slowdown* n (n tasks). Concurrent efficiency is FIOS's Eq. 2. Both come from
//! [`sluice_metrics::fios_figures`]; [`alone_runs`] and [`figures_against_alone`] are the
//! library functions behind them (what `sluice sim --alone` calls).
//!
//! `fios` is run with the calibrated linear cost model of §4.3: [`calibrate`] measures
//! standalone 4 KB and 128 KB reads and writes on the simulated device (the four cases
//! the paper calibrates) and fits offset + per-KiB cost.

use sluice_core::Op;
use sluice_device::{Command, DeviceProfile, NvmeSsd, QueueClass};
use sluice_metrics::{fios_figures, FiosFigures, FiosMetricError, RunReport};
use sluice_sim::{SimConfig, SimError};
use sluice_workload::JobSpec;

use crate::{Ctx, Experiment, Goal, Line, ReproError, Suite};

const R1W1: &str = include_str!("../../../experiments/fios/r1w1.fio");
const R4W4: &str = include_str!("../../../experiments/fios/r4w4.fio");
const R4W4_THINK: &str = include_str!("../../../experiments/fios/r4w4-think.fio");
const R4K_R128K: &str = include_str!("../../../experiments/fios/r4k-r128k.fio");

/// The devices of FIOS §6.1.
const DEVICES: [&str; 3] = ["x25m", "mtron", "vertex"];
/// SFQ(D) as FIOS ran it (§5): depth 32, cost = the average service time of the type.
const SFQD: &str = "sfqd:cost=service,depth=32";
/// The policy alone-runs use: the raw device.
const ALONE_POLICY: &str = "none";
/// Slack on the proportional slowdown (the goal is "at or below ≈ n").
const FAIR_SLACK: f64 = 1.1;

/// The suite.
pub const SUITE: Suite = Suite {
        name: "fios",
        about: "FIOS (FAST '12): fair flash timeslices, read preference, parallelism and anticipation vs none, cfq, quanta, sfqd",
        experiments: &[
            Experiment {
                id: "r1w1",
                title: "Fig. 5/7: 1 reader + 1 writer (4 KB) on x25m, mtron, vertex",
                file: "experiments/fios/r1w1.fio",
                run: r1w1,
            },
            Experiment {
                id: "r4w4",
                title: "Fig. 5/7: 4 readers + 4 writers (4 KB) on x25m, mtron, vertex",
                file: "experiments/fios/r4w4.fio",
                run: r4w4,
            },
            Experiment {
                id: "r4w4-think",
                title: "Fig. 5/7: 4 readers + 4 writers with think time ≈ I/O time",
                file: "experiments/fios/r4w4-think.fio",
                run: r4w4_think,
            },
            Experiment {
                id: "r4k-r128k",
                title: "Fig. 6/7: 4 KB reader beside 128 KB reader on x25m, mtron, vertex",
                file: "experiments/fios/r4k-r128k.fio",
                run: r4k_r128k,
            },
            Experiment {
                id: "fig8",
                title: "Fig. 8: fios vs no anticipation vs proximity anticipation, 4r4w think, x25m",
                file: "experiments/fios/r4w4-think.fio",
                run: fig8,
            },
    ],
};

// ---- library: calibration and alone-runs ---------------------------------------------

/// FIOS's calibrated linear cost model (§4.3): `cost = offset + per_kb · KiB`, per
/// operation, in ns.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinearCost {
    /// Read offset, ns.
    pub read_ns: f64,
    /// Read cost per KiB, ns.
    pub read_ns_per_kb: f64,
    /// Write offset, ns.
    pub write_ns: f64,
    /// Write cost per KiB, ns.
    pub write_ns_per_kb: f64,
}

impl LinearCost {
    /// The `fios` parameters that select this model.
    pub fn params(&self) -> String {
        format!(
            "read_cost_ns={:.0},read_ns_per_kb={:.1},write_cost_ns={:.0},write_ns_per_kb={:.1}",
            self.read_ns, self.read_ns_per_kb, self.write_ns, self.write_ns_per_kb
        )
    }
}

/// Mean standalone latency (one request at a time) of `n` requests of `op`/`len` at
/// pseudo-random aligned offsets on a fresh device.
fn standalone_ns(profile: &DeviceProfile, op: Op, len: u32, n: u64) -> f64 {
    let mut ssd = NvmeSsd::new(profile, 1);
    let qid = ssd.queue_id(0, QueueClass::Medium);
    let mut out = Vec::new();
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut now = 0;
    let mut sum = 0u128;
    for tag in 0..n {
        // xorshift: offsets spread over 64 GiB, aligned to the request size.
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let slots = (64u64 << 30) / len as u64;
        let offset = (x % slots) * len as u64;
        let cmd = Command {
            tag: tag as u32,
            op,
            offset,
            len,
            fua: false,
            placement: 0,
        };
        ssd.submit(now, qid, cmd).expect("an empty queue has room");
        while out.is_empty() {
            now = ssd.next_event_ns().expect("a request is in flight");
            ssd.advance(now, &mut out);
        }
        sum += (out[0].complete_ns - out[0].submit_ns) as u128;
        out.clear();
    }
    sum as f64 / n as f64
}

/// Calibrate the linear cost model on `profile` as FIOS does (§4.3): the standalone
/// elapsed time of 4 KB and 128 KB reads and writes, a line through each pair.
pub fn calibrate(profile: &DeviceProfile) -> LinearCost {
    let fit = |op| {
        let small = standalone_ns(profile, op, 4096, 200);
        let large = standalone_ns(profile, op, 128 << 10, 50);
        let per_kb = ((large - small) / 124.0).max(0.0);
        ((small - 4.0 * per_kb).max(0.0), per_kb)
    };
    let (read_ns, read_ns_per_kb) = fit(Op::Read);
    let (write_ns, write_ns_per_kb) = fit(Op::Write);
    LinearCost {
        read_ns,
        read_ns_per_kb,
        write_ns,
        write_ns_per_kb,
    }
}

/// Run every job of `jobs` by itself on `device` under the raw device (`none`), with
/// the settings `cfg`: the baselines of FIOS's slowdown and efficiency. Each run holds
/// one job, in job order.
pub fn alone_runs(
    jobs: &[JobSpec],
    device: &DeviceProfile,
    cfg: &SimConfig,
) -> Result<Vec<RunReport>, SimError> {
    jobs.iter()
        .map(|j| {
            let job = JobSpec {
                stonewall: false,
                startdelay_ns: 0,
                ..j.clone()
            };
            let policy = sluice_core::policy::build(
                &ALONE_POLICY
                    .parse()
                    .expect("the alone policy spec is valid"),
            )
            .expect("the alone policy exists");
            sluice_sim::run(&[job], device, policy, cfg, &mut |_| {}).map(|o| o.report)
        })
        .collect()
}

/// Why [`figures_against_alone`] failed.
#[derive(Debug, thiserror::Error)]
pub enum AloneError {
    /// An alone-run failed.
    #[error("alone-run: {0}")]
    Sim(#[from] SimError),
    /// The figures could not be computed.
    #[error("{0}")]
    Metric(#[from] FiosMetricError),
}

/// FIOS's figures for the concurrent run `conc` of `jobs` on `device`: runs each job
/// alone ([`alone_runs`]) and compares ([`fios_figures`]). This is what `sluice sim
/// --alone` prints next to a run.
pub fn figures_against_alone(
    conc: &RunReport,
    jobs: &[JobSpec],
    device: &DeviceProfile,
    cfg: &SimConfig,
) -> Result<FiosFigures, AloneError> {
    let alone = alone_runs(jobs, device, cfg)?;
    Ok(fios_figures(conc, &alone)?)
}

// ---- the experiments ------------------------------------------------------------------

/// One policy's figures on one device.
struct Row {
    label: &'static str,
    fig: FiosFigures,
}

/// Drives on which FIOS turns read preference with write blocking off: §4.2 makes it
/// optional for drives without strong read/write interference, naming the Vertex.
const WEAK_INTERFERENCE: [&str; 1] = ["vertex"];

/// The `fios` spec for `device`: its calibration, and write blocking off where the
/// interference is weak.
pub fn fios_spec(device: &DeviceProfile) -> String {
    let wb = if WEAK_INTERFERENCE.contains(&device.name.as_str()) {
        ",write_blocking=0"
    } else {
        ""
    };
    format!("fios:{}{wb}", calibrate(device).params())
}

/// The compared policies: (label, spec).
fn policies(device: &DeviceProfile) -> Vec<(&'static str, String)> {
    vec![
        ("fios", fios_spec(device)),
        ("none", "none".into()),
        ("cfq", "cfq".into()),
        ("quanta", "quanta".into()),
        ("sfqd", SFQD.into()),
    ]
}

fn metric_err(e: FiosMetricError) -> ReproError {
    ReproError::Policy {
        spec: "fios figures".into(),
        message: e.to_string(),
    }
}

/// Alone-runs with the context's seed.
fn alone(
    ctx: &Ctx,
    jobs: &[JobSpec],
    device: &DeviceProfile,
) -> Result<Vec<RunReport>, ReproError> {
    (ctx.on_run)(&format!("alone-runs on {}", device.name));
    let cfg = SimConfig {
        seed: ctx.seed,
        ..SimConfig::default()
    };
    Ok(alone_runs(jobs, device, &cfg)?)
}

/// Run `specs` on `device` against the alone-runs.
fn rows(
    ctx: &Ctx,
    jobs: &[JobSpec],
    device: &DeviceProfile,
    specs: &[(&'static str, String)],
    alone: &[RunReport],
) -> Result<Vec<Row>, ReproError> {
    specs
        .iter()
        .map(|(label, spec)| {
            let out = ctx.sim(jobs, device, spec)?;
            let fig = fios_figures(&out.report, alone).map_err(metric_err)?;
            Ok(Row { label, fig })
        })
        .collect()
}

fn row<'a>(rows: &'a [Row], label: &str) -> &'a Row {
    rows.iter()
        .find(|r| r.label == label)
        .expect("policy was run")
}

/// "fios 1.8/2.0 (r 1.7, w 2.0)": worst slowdown over n.
fn describe(r: &Row) -> String {
    let f = &r.fig;
    let worst = f.tasks.iter().map(|t| t.slowdown).fold(0.0, f64::max);
    format!(
        "{} worst slowdown {:.2} (n = {}), readers' mean {:.2}, efficiency {:.2}",
        r.label,
        worst,
        f.proportional,
        f.mean_reader_slowdown(),
        f.concurrent_efficiency
    )
}

/// Goal: `policy` keeps every task at most 1.1 × n.
fn fair_goal(exp: &str, dev: &str, r: &Row) -> Goal {
    Goal::new(
        format!("{exp}/{dev}"),
        format!(
            "{}: worst slowdown / n ≤ {FAIR_SLACK} (Figs. 5/6: fios \"approximately at or below \
             proportional slowdown\"; {FAIR_SLACK}: that \"approximately\")",
            r.label
        ),
        r.fig.worst_ratio(),
        Line::AtMost(FAIR_SLACK),
        describe(r),
    )
}

/// Goal: the readers under none, cfq and sfqd exceed the proportional slowdown.
fn unfair_goal(exp: &str, dev: &str, rows: &[Row]) -> Goal {
    let labels = ["none", "cfq", "sfqd"];
    let ratios: Vec<f64> = labels
        .iter()
        .map(|l| row(rows, l).fig.worst_reader_ratio())
        .collect();
    Goal::new(
        format!("{exp}/{dev}"),
        "none, cfq, sfqd: the least unfair one's worst reader slowdown / n > 1 (Fig. 5: \
         readers far above n on x25m and mtron)",
        ratios.iter().copied().fold(f64::INFINITY, f64::min),
        Line::Above(1.0),
        labels
            .iter()
            .zip(&ratios)
            .map(|(l, x)| format!("{l} worst reader {x:.2} × n"))
            .collect::<Vec<_>>()
            .join(", "),
    )
}

/// The most efficient of the alternatives to fios that pass `only`: (label, efficiency).
fn best_alternative(rows: &[Row], only: impl Fn(&Row) -> bool) -> Option<(&str, f64)> {
    rows.iter()
        .filter(|r| r.label != "fios" && only(r))
        .map(|r| (r.label, r.fig.concurrent_efficiency))
        .fold(None, |a, b| match a {
            Some(a) if a.1 >= b.1 => Some(a),
            _ => Some(b),
        })
}

/// Goal: fios's efficiency is within 5 % of the most efficient alternative that is
/// fair by the paper's own test (§5: every task's slowdown at most the proportional
/// slowdown n) — "competitive with the best of alternative schedulers in all cases"
/// (§6.1, Summary), held against every alternative fair by that test. When no
/// alternative passes the test there is nothing fair to be competitive with: the value
/// is then infinite (fios is the only fair choice). The measured text also gives the
/// best alternative regardless of fairness.
fn efficiency_goal(exp: &str, dev: &str, rows: &[Row]) -> Goal {
    let f = &row(rows, "fios").fig;
    let fios = f.concurrent_efficiency;
    let worst = f.worst_ratio();
    let (any_label, any) = best_alternative(rows, |_| true).expect("alternatives ran");
    let fair = best_alternative(rows, |r| r.fig.worst_ratio() <= 1.0);
    let (value, fair_text) = match fair {
        Some((l, e)) => (fios / e.max(1e-9), format!("{l} {e:.2}")),
        None => (f64::INFINITY, "none passes".into()),
    };
    Goal::new(
        format!("{exp}/{dev}"),
        "fios efficiency / best alternative's that is fair (every slowdown ≤ n) ≥ 0.95 \
         (Fig. 7: fios \"competitive with the best\"; 5 %: \"competitive\")",
        value,
        Line::AtLeast(0.95),
        format!(
            "fios {fios:.2} (worst {worst:.2} × n); best fair alternative: {fair_text}; best \
             overall {any_label} {any:.2}"
        ),
    )
}

/// Goal: fios's efficiency is above every alternative's.
fn above_goal(exp: &str, dev: &str, rows: &[Row]) -> Goal {
    let fios = row(rows, "fios").fig.concurrent_efficiency;
    let (l, best) = best_alternative(rows, |_| true).expect("alternatives ran");
    Goal::new(
        format!("{exp}/{dev}"),
        "fios efficiency / every alternative's > 1 (Fig. 7: fios highest with four readers \
         on the Intel SSD)",
        fios / best.max(1e-9),
        Line::Above(1.0),
        format!("fios {fios:.2}, best alternative {l} {best:.2}"),
    )
}

/// The read/write and read/read cases: fairness of fios (and quanta where asked), the
/// unfairness of the others on the interfering drives, efficiency.
fn standard(
    ctx: &Ctx,
    exp: &str,
    file: &str,
    text: &str,
    think: bool,
    readers_vs_writers: bool,
) -> Result<Vec<Goal>, ReproError> {
    let mut goals = Vec::new();
    for dev in DEVICES {
        let device = ctx.device(dev)?;
        let mut jobs = ctx.jobs(file, text)?;
        let mut base = alone(ctx, &jobs, &device)?;
        if think {
            set_think_time(&mut jobs, &base);
            base = alone(ctx, &jobs, &device)?;
        }
        let rows = rows(ctx, &jobs, &device, &policies(&device), &base)?;
        for r in &rows {
            (ctx.on_note)(&format!("{exp}/{dev}: {}", describe(r)));
        }
        goals.push(fair_goal(exp, dev, row(&rows, "fios")));
        if readers_vs_writers && dev != "vertex" {
            goals.push(unfair_goal(exp, dev, &rows));
        }
        if !readers_vs_writers {
            goals.push(fair_goal(exp, dev, row(&rows, "quanta")));
        }
        if think {
            // Quanta's fairness with think time is the paper's (§3, Fig. 3): similar
            // slowdowns for every task, all of them excessive.
            let q = &row(&rows, "quanta").fig;
            let (lo, hi) = q.tasks.iter().fold((f64::MAX, 0.0f64), |(lo, hi), t| {
                (lo.min(t.slowdown), hi.max(t.slowdown))
            });
            goals.push(Goal::new(
                format!("{exp}/{dev}"),
                "quanta: largest / smallest task slowdown ≤ 1.5 (Fig. 3/5: quanta's \
                 \"similar reader/writer slowdown\"; the paper gives no number)",
                hi / lo.max(1e-9),
                Line::AtMost(1.5),
                format!(
                    "quanta slowdowns {lo:.2} .. {hi:.2} (n = {})",
                    q.proportional
                ),
            ));
            let q = row(&rows, "quanta").fig.concurrent_efficiency;
            let others = rows
                .iter()
                .filter(|r| r.label != "quanta")
                .map(|r| r.fig.concurrent_efficiency)
                .fold(f64::MAX, f64::min);
            goals.push(Goal::new(
                format!("{exp}/{dev}"),
                "quanta efficiency / lowest other's < 1 (Fig. 7: \"quanta exhibits the worst \
                 efficiency\")",
                q / others.max(1e-9),
                Line::Below(1.0),
                format!("quanta {q:.2}, lowest other {others:.2}"),
            ));
        }
        goals.push(efficiency_goal(exp, dev, &rows));
        // Four readers on the X25-M, whose 7× read parallelism fios exploits while
        // keeping reads apart from writes (§6.1, Fig. 7).
        if exp.starts_with("r4w4") && dev == "x25m" {
            goals.push(above_goal(exp, dev, &rows));
        }
    }
    Ok(goals)
}

/// Give every job a fixed think time equal to its mean alone-run latency (the paper's
/// think time is exponential with that mean; the job language has fixed think time
/// only).
fn set_think_time(jobs: &mut [JobSpec], alone: &[RunReport]) {
    for (j, r) in jobs.iter_mut().zip(alone) {
        let rep = &r.jobs[0];
        let n = rep.read.lat_ns.n + rep.write.lat_ns.n;
        let sum = rep.read.lat_ns.mean * rep.read.lat_ns.n as f64
            + rep.write.lat_ns.mean * rep.write.lat_ns.n as f64;
        j.thinktime_ns = (sum / n.max(1) as f64).round() as u64;
    }
}

fn r1w1(ctx: &Ctx) -> Result<Vec<Goal>, ReproError> {
    standard(ctx, "r1w1", "experiments/fios/r1w1.fio", R1W1, false, true)
}

fn r4w4(ctx: &Ctx) -> Result<Vec<Goal>, ReproError> {
    standard(ctx, "r4w4", "experiments/fios/r4w4.fio", R4W4, false, true)
}

fn r4w4_think(ctx: &Ctx) -> Result<Vec<Goal>, ReproError> {
    standard(
        ctx,
        "r4w4-think",
        "experiments/fios/r4w4-think.fio",
        R4W4_THINK,
        true,
        true,
    )
}

fn r4k_r128k(ctx: &Ctx) -> Result<Vec<Goal>, ReproError> {
    standard(
        ctx,
        "r4k-r128k",
        "experiments/fios/r4k-r128k.fio",
        R4K_R128K,
        false,
        false,
    )
}

/// Fig. 8: the three anticipation variants of fios on 4r4w with think time, x25m.
fn fig8(ctx: &Ctx) -> Result<Vec<Goal>, ReproError> {
    let file = "experiments/fios/r4w4-think.fio";
    let device = ctx.device("x25m")?;
    let mut jobs = ctx.jobs(file, R4W4_THINK)?;
    let base = alone(ctx, &jobs, &device)?;
    set_think_time(&mut jobs, &base);
    let base = alone(ctx, &jobs, &device)?;
    let cal = calibrate(&device).params();
    let specs = vec![
        ("fios", format!("fios:{cal}")),
        ("no-anticipation", format!("fios:{cal},anticipation=none")),
        ("proximity", format!("fios:{cal},anticipation=proximity")),
    ];
    let rows = rows(ctx, &jobs, &device, &specs, &base)?;
    for r in &rows {
        (ctx.on_note)(&format!("fig8/x25m: {}", describe(r)));
    }
    let f = row(&rows, "fios");
    let none = row(&rows, "no-anticipation");
    let prox = row(&rows, "proximity");
    let rs = |r: &Row| r.fig.mean_reader_slowdown();
    let eff = |r: &Row| r.fig.concurrent_efficiency;
    Ok(vec![
        Goal::new(
            "fig8/x25m",
            "fios anticipation: readers' mean slowdown / the lower of no-anticipation's and \
             proximity's < 1 (Fig. 8: fios's readers least slowed)",
            rs(f) / rs(none).min(rs(prox)).max(1e-9),
            Line::Below(1.0),
            format!(
                "readers' mean slowdown: fios {:.2}, none {:.2}, proximity {:.2}",
                rs(f),
                rs(none),
                rs(prox)
            ),
        ),
        Goal::new(
            "fig8/x25m",
            "fios efficiency / proximity anticipation's > 1 (Fig. 8: proximity's \"high \
             performance cost due to excessive idling\")",
            eff(f) / eff(prox).max(1e-9),
            Line::Above(1.0),
            format!(
                "efficiency: fios {:.2}, none {:.2}, proximity {:.2}",
                eff(f),
                eff(none),
                eff(prox)
            ),
        ),
    ])
}
