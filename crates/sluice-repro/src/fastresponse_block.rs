//! Suite `fastresponse-block`: FastResponse's Limited-Depth scheduler at the block
//! layer (Liu et al., ICS '22, Fig. 12 block part, Fig. 14, Fig. 19a/b) on `ull`.
//!
//! Every run reports the critical class's mean, p99 and p99.9 completion latency
//! (`classes[critical].lat_ns`) and the co-runner's throughput (bytes/s of the
//! non-critical classes). The real-device part of the issue (the same co-run through
//! the io_uring engine with `sluice run`) is not here: it needs the engine.
//! Plots (latency against tokens and against rate) are not drawn; the series are in the
//! goals' measured text.

use sluice_core::IoClass;
use sluice_sim::SimOutput;

use crate::{Ctx, Experiment, Goal, ReproError, Suite};

const DEVICE: &str = "ull";
/// The policies Fig. 12 compares (B-Opt is `ld`; the rest are baselines).
const POLICIES: [&str; 5] = ["none", "ld", "rcp", "mq-deadline", "kyber"];
/// Fig. 19a's token counts.
const TOKENS: [u32; 6] = [1, 2, 4, 8, 16, 32];
/// Fig. 19b's critical request rates (requests/s).
const RATES: [u32; 5] = [1000, 2000, 4000, 8000, 16000];

const TERASORT: &str = include_str!("../../../experiments/fastresponse-block/fig12-terasort.fio");
const BAYES: &str = include_str!("../../../experiments/fastresponse-block/fig12-bayes.fio");
const KMEANS: &str = include_str!("../../../experiments/fastresponse-block/fig12-kmeans.fio");
const PAGERANK: &str = include_str!("../../../experiments/fastresponse-block/fig12-pagerank.fio");
const INDEX: &str = include_str!("../../../experiments/fastresponse-block/fig12-index.fio");
const FIG19: &str = include_str!("../../../experiments/fastresponse-block/fig19.fio");

/// The suite.
pub(crate) const SUITE: Suite = Suite {
    name: "fastresponse-block",
    about: "FastResponse LD: critical reader beside Table 1 co-runners on ull (Fig. 12, 14, 19)",
    experiments: &[
        Experiment {
            id: "fig12-terasort",
            title: "Fig. 12/14: readrandom beside Terasort (I/O-heavy)",
            file: "experiments/fastresponse-block/fig12-terasort.fio",
            run: |ctx| fig12(ctx, "fig12-terasort", TERASORT, true),
        },
        Experiment {
            id: "fig12-bayes",
            title: "Fig. 12/14: readrandom beside Bayes",
            file: "experiments/fastresponse-block/fig12-bayes.fio",
            run: |ctx| fig12(ctx, "fig12-bayes", BAYES, false),
        },
        Experiment {
            id: "fig12-kmeans",
            title: "Fig. 12/14: readrandom beside Kmeans",
            file: "experiments/fastresponse-block/fig12-kmeans.fio",
            run: |ctx| fig12(ctx, "fig12-kmeans", KMEANS, false),
        },
        Experiment {
            id: "fig12-pagerank",
            title: "Fig. 12/14: readrandom beside PageRank",
            file: "experiments/fastresponse-block/fig12-pagerank.fio",
            run: |ctx| fig12(ctx, "fig12-pagerank", PAGERANK, false),
        },
        Experiment {
            id: "fig12-index",
            title: "Fig. 12/14: readrandom beside Index (I/O-heavy)",
            file: "experiments/fastresponse-block/fig12-index.fio",
            run: |ctx| fig12(ctx, "fig12-index", INDEX, true),
        },
        Experiment {
            id: "fig19a",
            title: "Fig. 19a: critical latency against LD tokens (Terasort co-run)",
            file: "experiments/fastresponse-block/fig19.fio",
            run: fig19a,
        },
        Experiment {
            id: "fig19b",
            title: "Fig. 19b: critical latency against the critical rate (Terasort co-run)",
            file: "experiments/fastresponse-block/fig19.fio",
            run: fig19b,
        },
    ],
};

/// What one run gives: critical latency and co-runner throughput.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CritRun {
    /// Critical mean completion latency, ns.
    pub mean_ns: f64,
    /// Critical p99, ns.
    pub p99_ns: f64,
    /// Critical p99.9, ns.
    pub p999_ns: f64,
    /// Bytes/s of the non-critical classes.
    pub other_bw: f64,
}

/// Critical latency and non-critical throughput from a run's per-class report.
pub(crate) fn crit_run(out: &SimOutput) -> CritRun {
    let classes = &out.report.classes;
    let crit = classes
        .iter()
        .find(|c| c.class == IoClass::Critical)
        .expect("the experiment has a critical job");
    let pct = |p: f64| crit.lat_ns.percentile.get(p).unwrap_or(0) as f64;
    CritRun {
        mean_ns: crit.lat_ns.mean,
        p99_ns: pct(99.0),
        p999_ns: pct(99.9),
        other_bw: classes
            .iter()
            .filter(|c| c.class != IoClass::Critical)
            .map(|c| c.bw_bytes as f64)
            .sum(),
    }
}

fn us(ns: f64) -> String {
    format!("{:.0}", ns / 1000.0)
}

fn mbs(bw: f64) -> String {
    format!("{:.0}", bw / 1e6)
}

fn fig12(ctx: &Ctx, id: &str, text: &str, heavy: bool) -> Result<Vec<Goal>, ReproError> {
    let jobs = ctx.jobs(id, text)?;
    let dev = ctx.device(DEVICE)?;
    let mut runs = Vec::with_capacity(POLICIES.len());
    for p in POLICIES {
        runs.push((p, crit_run(&ctx.sim(&jobs, &dev, p)?)));
    }
    let get = |name: &str| runs.iter().find(|(p, _)| *p == name).expect("ran").1;
    let (none, ld) = (get("none"), get("ld"));
    let table: Vec<String> = runs
        .iter()
        .map(|(p, r)| {
            format!(
                "{p} {}/{}/{} µs {} MB/s",
                us(r.mean_ns),
                us(r.p99_ns),
                us(r.p999_ns),
                mbs(r.other_bw)
            )
        })
        .collect();
    let cut = 1.0 - ld.p999_ns / none.p999_ns;
    let (goal, pass) = if heavy {
        (
            "ld critical p99.9 ≤ 0.5 × none (−50 % or more)",
            ld.p999_ns <= 0.5 * none.p999_ns,
        )
    } else {
        ("ld critical p99.9 ≤ none", ld.p999_ns <= none.p999_ns)
    };
    let loss = 1.0 - ld.other_bw / none.other_bw;
    Ok(vec![
        Goal {
            experiment: id.to_string(),
            goal: goal.to_string(),
            measured: format!(
                "p99.9 none {} µs, ld {} µs ({:+.0} %); mean/p99/p99.9, co-runner: {}",
                us(none.p999_ns),
                us(ld.p999_ns),
                -100.0 * cut,
                table.join("; ")
            ),
            pass,
        },
        Goal {
            experiment: id.to_string(),
            goal: "ld co-runner throughput ≥ 0.94 × none (loss ≤ 6 %)".to_string(),
            measured: format!(
                "none {} MB/s, ld {} MB/s (loss {:.1} %)",
                mbs(none.other_bw),
                mbs(ld.other_bw),
                100.0 * loss
            ),
            pass: loss <= 0.06,
        },
    ])
}

/// `values[i] ≥ tol × values[i−1]` for every step.
fn non_decreasing(values: &[f64], tol: f64) -> bool {
    values.windows(2).all(|w| w[1] >= tol * w[0])
}

fn series(keys: &[u32], values: &[f64]) -> String {
    keys.iter()
        .zip(values)
        .map(|(k, v)| format!("{k}:{}", us(*v)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Series of a sweep for a figure: one line per named metric, latencies in µs.
fn sweep(keys: &[u32], metrics: &[(&str, &[f64])]) -> Vec<sluice_metrics::XySeries> {
    metrics
        .iter()
        .map(|(name, values)| sluice_metrics::XySeries {
            name: (*name).to_string(),
            points: keys
                .iter()
                .zip(values.iter())
                .map(|(&k, &v)| (k as f64, v / 1e3))
                .collect(),
        })
        .collect()
}

fn fig19a(ctx: &Ctx) -> Result<Vec<Goal>, ReproError> {
    let jobs = ctx.jobs("fig19.fio", FIG19)?;
    let dev = ctx.device(DEVICE)?;
    let mut runs = Vec::new();
    for t in TOKENS {
        runs.push(crit_run(&ctx.sim(
            &jobs,
            &dev,
            &format!("ld:tokens={t}"),
        )?));
    }
    let p999: Vec<f64> = runs.iter().map(|r| r.p999_ns).collect();
    let mean: Vec<f64> = runs.iter().map(|r| r.mean_ns).collect();
    let p99: Vec<f64> = runs.iter().map(|r| r.p99_ns).collect();
    ctx.plot(
        "fastresponse-fig19a",
        "FastResponse Fig. 19a: critical latency vs LD tokens (ull)",
        "tokens",
        "critical latency (µs)",
        &sweep(&TOKENS, &[("mean", &mean), ("p99", &p99), ("p99.9", &p999)]),
        true,
    )?;
    let first = runs[0];
    let last = runs[runs.len() - 1];
    Ok(vec![
        Goal {
            experiment: "fig19a".into(),
            goal: "critical p99.9 non-decreasing in tokens (each step ≥ 0.9 × previous)".into(),
            measured: format!("tokens:p99.9 µs {}", series(&TOKENS, &p999)),
            pass: non_decreasing(&p999, 0.9),
        },
        Goal {
            experiment: "fig19a".into(),
            goal: "critical mean and p99 at 32 tokens ≥ 2 × at 1 token".into(),
            measured: format!(
                "mean µs {}; p99 µs {}",
                series(&TOKENS, &mean),
                series(&TOKENS, &p99)
            ),
            pass: last.mean_ns >= 2.0 * first.mean_ns && last.p99_ns >= 2.0 * first.p99_ns,
        },
    ])
}

fn fig19b(ctx: &Ctx) -> Result<Vec<Goal>, ReproError> {
    let dev = ctx.device(DEVICE)?;
    let mut runs = Vec::new();
    for rate in RATES {
        let text = FIG19.replace("rate_iops=2000", &format!("rate_iops={rate}"));
        let jobs = ctx.jobs("fig19.fio", &text)?;
        runs.push(crit_run(&ctx.sim(&jobs, &dev, "ld")?));
    }
    let p99: Vec<f64> = runs.iter().map(|r| r.p99_ns).collect();
    let mean: Vec<f64> = runs.iter().map(|r| r.mean_ns).collect();
    let p999: Vec<f64> = runs.iter().map(|r| r.p999_ns).collect();
    ctx.plot(
        "fastresponse-fig19b",
        "FastResponse Fig. 19b: critical latency vs reader rate under ld (ull)",
        "critical requests per second",
        "critical latency (µs)",
        &sweep(&RATES, &[("mean", &mean), ("p99", &p99), ("p99.9", &p999)]),
        true,
    )?;
    let max = p99.iter().copied().fold(f64::MIN, f64::max);
    let min = p99.iter().copied().fold(f64::MAX, f64::min);
    let (lo, hi) = (mean[0], mean[mean.len() - 1]);
    Ok(vec![
        Goal {
            experiment: "fig19b".into(),
            goal: "critical p99 stable over 1000–16000 req/s (max/min ≤ 1.25)".into(),
            measured: format!(
                "rate:p99 µs {} (max/min {:.2})",
                series(&RATES, &p99),
                max / min
            ),
            pass: min > 0.0 && max / min <= 1.25,
        },
        Goal {
            experiment: "fig19b".into(),
            goal: "critical mean at 16000 req/s ≤ 1.05 × at 1000 req/s".into(),
            measured: format!("rate:mean µs {} ({:.2}×)", series(&RATES, &mean), hi / lo),
            pass: hi <= 1.05 * lo,
        },
    ])
}
