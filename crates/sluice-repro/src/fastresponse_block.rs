//! Suite `fastresponse-block`: FastResponse's Limited-Depth scheduler at the block
//! layer (Liu et al., ICS '22, Fig. 12 block part, Fig. 14, Fig. 15(a) block part and
//! Fig. 16, Fig. 19a/b) on `ull`.
//!
//! Every run reports the critical class's mean, p99 and p99.9 completion latency
//! (`classes[critical].lat_ns`) and the co-runner's throughput (bytes/s of the
//! non-critical classes). The real-device part of the issue (the same co-run through
//! the io_uring engine with `sluice run`) is not here: it needs the engine.
//! Plots (latency against tokens and against rate) are not drawn; the series are in the
//! goals' measured text.

use sluice_core::IoClass;
use sluice_sim::SimOutput;

use crate::{Ctx, Experiment, Goal, Line, ReproError, Suite};

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
const FIG15A: &str = include_str!("../../../experiments/fastresponse-block/fig15a.fio");

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
            id: "fig15a",
            title: "Fig. 15(a)/16: a critical read's block and device parts beside Bayes, and the device depth",
            file: "experiments/fastresponse-block/fig15a.fio",
            run: fig15a,
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
    /// Critical requests completed (the percentiles' samples).
    pub samples: u64,
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
        samples: crit.lat_ns.n,
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
    let (goal, limit) = if heavy {
        (
            "ld critical p99.9 / none's ≤ 0.5 (Fig. 12: B-Opt far below vanilla beside the \
             I/O-heavy co-runners; the paper's number is BS-Opt's −77 % on average, B-Opt's \
             is not given)",
            0.5,
        )
    } else {
        (
            "ld critical p99.9 / none's ≤ 1 (Fig. 12: B-Opt below vanilla; no number for \
             B-Opt alone, BS-Opt −77 % on average)",
            1.0,
        )
    };
    // Fig. 14 with a co-runner that uses the device: the same co-runner jobs with no
    // think time (each keeps its whole depth in flight), so LD's throttling of
    // non-critical requests can cost throughput. The think-time co-run above uses about
    // a quarter of the device: no policy can cost it anything there.
    let busy_jobs = ctx.jobs(&format!("{id} (device-bound)"), &device_bound(text))?;
    let busy = ctx.each(&["none", "ld"], |p| {
        Ok(crit_run(&ctx.sim(&busy_jobs, &dev, p)?))
    })?;
    let loss = 1.0 - ld.other_bw / none.other_bw;
    let busy_loss = 1.0 - busy[1].other_bw / busy[0].other_bw.max(1.0);
    Ok(vec![
        Goal::new(
            id,
            goal,
            ld.p999_ns / none.p999_ns.max(1.0),
            Line::AtMost(limit),
            format!(
                "p99.9 none {} µs, ld {} µs ({:+.0} %, {} critical reads); mean/p99/p99.9, \
                 co-runner: {}",
                us(none.p999_ns),
                us(ld.p999_ns),
                -100.0 * cut,
                none.samples,
                table.join("; ")
            ),
        ),
        Goal::new(
            id,
            "ld co-runner throughput loss vs none, co-runner with no think time (device-bound) \
             ≤ 0.06 (Fig. 14: \"no more than 6 %\"; B-Opt −1.9 % on average)",
            busy_loss,
            Line::AtMost(0.06),
            format!(
                "device-bound: none {} MB/s, ld {} MB/s (loss {:.1} %; critical p99.9 none {} \
                 µs, ld {} µs); with think time: none {} MB/s, ld {} MB/s (loss {:.1} %)",
                mbs(busy[0].other_bw),
                mbs(busy[1].other_bw),
                100.0 * busy_loss,
                us(busy[0].p999_ns),
                us(busy[1].p999_ns),
                mbs(none.other_bw),
                mbs(ld.other_bw),
                100.0 * loss
            ),
        ),
    ])
}

/// Fig. 15(a)'s block and device parts of a critical read (§4.4) and Fig. 16's device
/// depth, vanilla (`none`) against B-Opt (`ld`).
fn fig15a(ctx: &Ctx) -> Result<Vec<Goal>, ReproError> {
    let jobs = ctx.jobs("experiments/fastresponse-block/fig15a.fio", FIG15A)?;
    let dev = ctx.device(DEVICE)?;
    let shallow = ctx.jobs("experiments/fastresponse-block/fig12-bayes.fio", BAYES)?;
    let runs = [
        (&jobs, "none"),
        (&jobs, "ld"),
        (&shallow, "none"),
        (&shallow, "ld"),
    ];
    let outs = ctx.each(&runs, |(j, p)| ctx.sim(j, &dev, p))?;
    // Per run: the critical class's mean block part (T_Blk), device part (T_Dev), after
    // the device, and total, ns; and the most pieces in flight at the device.
    let parts = |o: &SimOutput| {
        let c = o
            .report
            .classes
            .iter()
            .find(|c| c.class == IoClass::Critical)
            .expect("the experiment has a critical job");
        (
            [
                c.sched_ns.mean,
                c.device_ns.mean,
                c.post_ns.mean,
                c.lat_ns.mean,
            ],
            o.report.extra.block.peak_inflight,
        )
    };
    let (none, none_depth) = parts(&outs[0]);
    let (ld, ld_depth) = parts(&outs[1]);
    let line = |name: &str, p: [f64; 4], depth: u32| {
        format!(
            "{name} T_Blk {:.1} + T_Dev {:.1} + after {:.1} = {:.1} µs, peak depth {depth}",
            p[0] / 1e3,
            p[1] / 1e3,
            p[2] / 1e3,
            p[3] / 1e3
        )
    };
    let (s_none, s_none_depth) = parts(&outs[2]);
    let (s_ld, s_ld_depth) = parts(&outs[3]);
    let measured = format!(
        "bursts of 96: {}; {} (Fig. 12's bursts of 16: {}; {}; T_Dev ratio {:.2})",
        line("none", none, none_depth),
        line("ld", ld, ld_depth),
        line("none", s_none, s_none_depth),
        line("ld", s_ld, s_ld_depth),
        s_ld[1] / s_none[1].max(1.0)
    );
    Ok(vec![
        Goal::new(
            "fig15a",
            "ld's critical T_Dev / none's ≤ 17/26 = 0.654 (Fig. 15(a): B-Opt cuts the device \
             part from 26 µs to 17 µs)",
            ld[1] / none[1].max(1.0),
            Line::AtMost(17.0 / 26.0),
            measured.clone(),
        ),
        Goal::new(
            "fig15a",
            "ld's most pieces in flight at the device ≤ 10 (Fig. 16: B-Opt sustains \
             \"a relatively low queue depth (about 10)\")",
            ld_depth as f64,
            Line::AtMost(10.0),
            measured.clone(),
        ),
        Goal::new(
            "fig15a",
            "none's most pieces in flight at the device > 160 (Fig. 16: vanilla's bursts \
             reach \"extremely large queue depth (even over 160)\"; the bursts are sized \
             for it: this checks the scenario)",
            none_depth as f64,
            Line::Above(160.0),
            measured,
        ),
    ])
}

/// `text` with every `thinktime=` line dropped: each co-runner thread keeps its whole
/// depth in flight.
fn device_bound(text: &str) -> String {
    text.lines()
        .filter(|l| !l.trim_start().starts_with("thinktime="))
        .map(|l| format!("{l}\n"))
        .collect()
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
    let worst_step = p999
        .windows(2)
        .map(|w| w[1] / w[0].max(1.0))
        .fold(f64::INFINITY, f64::min);
    Ok(vec![
        Goal::new(
            "fig19a",
            "critical p99.9: smallest step ratio over 1→32 tokens ≥ 0.9 (Fig. 19a: latency \
             grows with tokens; 0.9: a step may hold flat within sampling noise)",
            worst_step,
            Line::AtLeast(0.9),
            format!(
                "tokens:p99.9 µs {} ({} critical reads a run)",
                series(&TOKENS, &p999),
                first.samples
            ),
        ),
        Goal::new(
            "fig19a",
            "critical mean and p99 at 32 tokens / at 1 token, the lower of the two, ≥ 2 (Fig. \
             19a: \"increase significantly\"; the paper's axis gives no exact factor)",
            (last.mean_ns / first.mean_ns.max(1.0)).min(last.p99_ns / first.p99_ns.max(1.0)),
            Line::AtLeast(2.0),
            format!(
                "mean µs {}; p99 µs {}",
                series(&TOKENS, &mean),
                series(&TOKENS, &p99)
            ),
        ),
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
        Goal::new(
            "fig19b",
            "critical p99 max/min over 1000–16000 req/s ≤ 1.25 (Fig. 19b: the tail \
             \"keeps stable roughly\")",
            if min > 0.0 { max / min } else { f64::INFINITY },
            Line::AtMost(1.25),
            format!(
                "rate:p99 µs {} (max/min {:.2})",
                series(&RATES, &p99),
                max / min
            ),
        ),
        Goal::new(
            "fig19b",
            "critical mean at 16000 req/s / at 1000 req/s < 1 (Fig. 19b: \"the average \
             response time decreases\")",
            hi / lo.max(1.0),
            Line::Below(1.0),
            format!("rate:mean µs {} ({:.3}×)", series(&RATES, &mean), hi / lo),
        ),
    ])
}
