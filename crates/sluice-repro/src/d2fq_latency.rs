//! D2FQ's latency and short-term fairness figures (§4.2) in suite `d2fq`, on `zssd`:
//!
//! | id | paper | what is checked |
//! |---|---|---|
//! | `fig13` | Fig. 13 | mean latency of Fig. 11's workloads: none lowest, bfq above d2fq and mqfq, the throttled flow slower |
//! | `fig14` | Fig. 14 | Fig. 11a's flows in 10 ms bins: d2fq steady; mqfq fluctuates |

use sluice_metrics::RunReport;
use sluice_sim::SimConfig;

use crate::d2fq::{reports, FAIR, FIG11A, FIG11B, FIG11C};
use crate::{Ctx, Goal, Line, ReproError};

const FIG14: &str = include_str!("../../../experiments/d2fq/fig14.fio");

/// Mean read latency (ns) of job `name`.
fn job_mean_ns(r: &RunReport, name: &str) -> f64 {
    r.jobs
        .iter()
        .find(|j| j.jobname == name)
        .map_or(0.0, |j| j.read.lat_ns.mean)
}

/// Mean read latency (ns) over every I/O of the run.
fn run_mean_ns(r: &RunReport) -> f64 {
    let (sum, n) = r.jobs.iter().fold((0.0, 0u64), |(s, n), j| {
        (
            s + j.read.lat_ns.mean * j.read.lat_ns.n as f64,
            n + j.read.lat_ns.n,
        )
    });
    sum / n.max(1) as f64
}

/// One of Fig. 11's workloads for Fig. 13: its file, the jobs from the least to the most
/// throttled (the fair policies must hold the last back most), and the figure's panel.
struct Workload {
    panel: &'static str,
    file: &'static str,
    text: &'static str,
    order: &'static [&'static str],
}

const WORKLOADS: [Workload; 3] = [
    Workload {
        panel: "11a",
        file: "experiments/d2fq/fig11a.fio",
        text: FIG11A,
        // Equal weights: the 8 KB flow would take twice the bytes; it is held back.
        order: &["small4k", "large8k"],
    },
    Workload {
        panel: "11b",
        file: "experiments/d2fq/fig11b.fio",
        text: FIG11B,
        // Equal weights: the six-thread flow would take three times the share.
        order: &["two", "six"],
    },
    Workload {
        panel: "11c",
        file: "experiments/d2fq/fig11c.fio",
        text: FIG11C,
        // Equal threads, weights 8, 6, 4, 2: the lighter, the more throttled.
        order: &["w8", "w6", "w4", "w2"],
    },
];

pub(crate) fn fig13(ctx: &Ctx) -> Result<Vec<Goal>, ReproError> {
    let dev = ctx.device("zssd")?;
    let policies: Vec<&str> = std::iter::once("none")
        .chain(FAIR.iter().copied())
        .collect();
    let mut goals = Vec::new();
    for w in &WORKLOADS {
        let jobs = ctx.jobs(w.file, w.text)?;
        let [none, d2fq, mqfq, bfq] = reports(ctx.sim_each(&jobs, &dev, &policies)?);
        let runs = [&none, &d2fq, &mqfq, &bfq];
        let means: Vec<f64> = runs.iter().map(|r| run_mean_ns(r)).collect();
        let per_job = |r: &RunReport| {
            w.order
                .iter()
                .map(|n| format!("{n} {:.0}", job_mean_ns(r, n) / 1e3))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let listing = policies
            .iter()
            .zip(&runs)
            .zip(&means)
            .map(|((p, r), m)| format!("{p} {:.0} ({})", m / 1e3, per_job(r)))
            .collect::<Vec<_>>()
            .join("; ");
        let fig = format!("Fig. 13 ({})", w.panel);
        goals.push(Goal::new(
            "fig13",
            format!(
                "{}: none's mean latency / the lowest fair policy's ≤ 1 ({fig}: \"None shows \
                 the shortest latency in all the cases\")",
                w.panel
            ),
            means[0] / means[1..].iter().copied().fold(f64::INFINITY, f64::min),
            Line::AtMost(1.0),
            format!("mean µs (per job): {listing}"),
        ));
        goals.push(Goal::new(
            "fig13",
            format!(
                "{}: bfq's mean latency / the higher of d2fq's and mqfq's > 1 ({fig}: \"BFQ \
                 shows longer latency than the two\")",
                w.panel
            ),
            means[3] / means[1].max(means[2]).max(1.0),
            Line::Above(1.0),
            format!(
                "mean µs: d2fq {:.0}, mqfq {:.0}, bfq {:.0}",
                means[1] / 1e3,
                means[2] / 1e3,
                means[3] / 1e3
            ),
        ));
        goals.push(Goal::new(
            "fig13",
            format!(
                "{}: d2fq's mean latency / mqfq's within 1 ± 0.2 ({fig}: \"D2FQ and MQFQ \
                 show similar latency\"; ± 0.2: the paper gives no number)",
                w.panel
            ),
            means[1] / means[2].max(1.0),
            Line::Within {
                target: 1.0,
                tol: 0.2,
            },
            format!(
                "mean µs: d2fq {:.0}, mqfq {:.0}",
                means[1] / 1e3,
                means[2] / 1e3
            ),
        ));
        // The throttled flows are slower: under d2fq and mqfq the jobs' mean latencies
        // rise from the least to the most throttled.
        let rising = |r: &RunReport| {
            w.order
                .windows(2)
                .all(|p| job_mean_ns(r, p[1]) > job_mean_ns(r, p[0]))
        };
        goals.push(Goal::holds(
            "fig13",
            format!(
                "{}: under d2fq and mqfq the more throttled flow has the longer mean \
                 latency ({}) ({fig}: \"the throttled flows show longer I/O latency\")",
                w.panel,
                w.order.join(" < ")
            ),
            rising(&d2fq) && rising(&mqfq),
            format!("d2fq: {}; mqfq: {}", per_job(&d2fq), per_job(&mqfq)),
        ));
    }
    Ok(goals)
}

/// Per 10 ms bin, flow 1's bandwidth over flow 0's; bins where either got nothing are
/// left out, and so is the last (cut short by the run's end).
fn bin_ratios(r: &RunReport) -> Vec<f64> {
    let f = &r.bw_series.flows;
    if f.len() < 2 {
        return Vec::new();
    }
    let n = f[0]
        .bw_bytes
        .len()
        .min(f[1].bw_bytes.len())
        .saturating_sub(1);
    (0..n)
        .filter(|&i| f[0].bw_bytes[i] > 0 && f[1].bw_bytes[i] > 0)
        .map(|i| f[1].bw_bytes[i] as f64 / f[0].bw_bytes[i] as f64)
        .collect()
}

/// Coefficient of variation (σ / mean) of each flow's 10 ms bandwidth, the larger of
/// the two flows'.
fn cv(r: &RunReport) -> f64 {
    r.bw_series
        .flows
        .iter()
        .map(|f| {
            let n = f.bw_bytes.len().saturating_sub(1);
            let v: Vec<f64> = f.bw_bytes[..n].iter().map(|&b| b as f64).collect();
            let m = v.iter().sum::<f64>() / v.len().max(1) as f64;
            let var = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / v.len().max(1) as f64;
            var.sqrt() / m.max(1.0)
        })
        .fold(0.0, f64::max)
}

pub(crate) fn fig14(ctx: &Ctx) -> Result<Vec<Goal>, ReproError> {
    let file = "experiments/d2fq/fig14.fio";
    let jobs = ctx.jobs(file, FIG14)?;
    let dev = ctx.device("zssd")?;
    let cfg = SimConfig {
        interval_ns: Some(10_000_000),
        ..SimConfig::default()
    };
    let outs = ctx.each(&["d2fq", "mqfq"], |p| ctx.sim_with(&jobs, &dev, p, &cfg))?;
    let [d2fq, mqfq] = reports(outs);
    if let Some(dir) = &ctx.plot_dir {
        sluice_metrics::plot(&[d2fq.clone(), mqfq.clone()], &dir.join("d2fq-fig14"))?;
    }
    // The share of bins whose 8 KB : 4 KB ratio is within 10 % of 1.
    let even = |r: &RunReport| {
        let v = bin_ratios(r);
        v.iter().filter(|x| (**x - 1.0).abs() <= 0.10).count() as f64 / v.len().max(1) as f64
    };
    let (ed, em) = (even(&d2fq), even(&mqfq));
    let (cd, cm) = (cv(&d2fq), cv(&mqfq));
    Ok(vec![
        Goal::new(
            "fig14",
            "d2fq: ≥ 95 % of the 10 ms bins share evenly (8 KB : 4 KB flow within 1 ± 0.1) \
             (Fig. 14: \"both flows almost evenly share the SSD bandwidth in every short \
             time period\"; 95 % and ± 0.1: the paper gives no number)",
            ed,
            Line::AtLeast(0.95),
            format!(
                "even bins: d2fq {:.1} %, mqfq {:.1} %",
                ed * 100.0,
                em * 100.0
            ),
        ),
        Goal::new(
            "fig14",
            "mqfq fluctuates more than d2fq: its flows' 10 ms bandwidth CV / d2fq's > 1 \
             (Fig. 14: MQFQ \"shows fluctuation of bandwidth in both flows\")",
            cm / cd.max(1e-9),
            Line::Above(1.0),
            format!("largest per-flow CV of the 10 ms bandwidth: d2fq {cd:.3}, mqfq {cm:.3}"),
        ),
    ])
}
