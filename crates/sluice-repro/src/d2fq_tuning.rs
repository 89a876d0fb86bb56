//! D2FQ's tuning figures (§3.1, §3.3) in suite `d2fq`, on `zssd`:
//!
//! | id | paper | what is checked |
//! |---|---|---|
//! | `fig5` | Fig. 5 | static H/L 3…256, weights 3:1: the throttled flow's p99 is lowest at 3 and grows; its high-queue part grows |
//! | `fig7` | Fig. 7 | τl 1 MB…1 GB, 4/8/16 KB flows: how soon equal sharing starts |
//! | `fig8` | Fig. 8 | τl 1/10/100 MB: a small τl lengthens the flows' tails (up to 3.7×) |
//!
//! τl in the paper's Fig. 7/8 is a weight-8 flow's service (footnote 2); sluice's
//! `tau_l` is in bytes of weight-1 service, so a run with τl = X gives `tau_l=X/8`.

use sluice_metrics::RunReport;
use sluice_sim::SimConfig;

use crate::d2fq::{job_p99_ns, reports};
use crate::tally::Tally;
use crate::{Ctx, Goal, Line, ReproError};

const FIG5: &str = include_str!("../../../experiments/d2fq/fig5.fio");
const FIG7: &str = include_str!("../../../experiments/d2fq/fig7.fio");
const FIG8: &str = include_str!("../../../experiments/d2fq/fig8.fio");

/// Fig. 5's static H/L ratios (the paper sweeps 3 to 256).
const HL: [u32; 8] = [3, 4, 8, 16, 32, 64, 128, 256];
/// The paper's MB, as sluice's default τl (1 MiB of weight-1 service) reads it.
const MB: u64 = 1 << 20;

/// One H/L ratio's run of Fig. 5.
struct HlPoint {
    hl: u32,
    /// fb's (the weight-1 flow's) read p99, ns.
    p99_b: u64,
    /// fa's read p99, ns.
    p99_a: u64,
    /// Fraction of fb's bytes on each class (urgent, high, medium, low).
    frac_b: [f64; 4],
    /// Fraction of fa's bytes on each class.
    frac_a: [f64; 4],
    /// fa's bandwidth over fb's (3 when fair).
    ratio: f64,
}

fn fractions(b: [u64; 4]) -> [f64; 4] {
    let t = b.iter().sum::<u64>().max(1) as f64;
    b.map(|x| x as f64 / t)
}

pub(crate) fn fig5(ctx: &Ctx) -> Result<Vec<Goal>, ReproError> {
    let file = "experiments/d2fq/fig5.fio";
    let jobs = ctx.jobs(file, FIG5)?;
    let dev = ctx.device("zssd")?;
    let pts = ctx.each(&HL, |&hl| {
        let spec = format!("d2fq:mode=static,hl={hl}");
        (ctx.on_run)(&format!("{spec} on zssd"));
        let (pol, bytes) = Tally::wrap(ctx.policy(&spec)?);
        let out = ctx.sim_policy(&jobs, &dev, &spec, pol, &SimConfig::default())?;
        let r = &out.report;
        let by_flow = bytes.lock().expect("tally lock").clone();
        let idx = |name: &str| r.flows.iter().position(|f| f.name == name);
        let (Some(a), Some(b)) = (idx("fa"), idx("fb")) else {
            return Err(ReproError::App {
                what: file.into(),
                message: "flows fa and fb not in the report".into(),
            });
        };
        let class = |i: usize| by_flow.get(i).copied().unwrap_or([0; 4]);
        Ok(HlPoint {
            hl,
            p99_b: job_p99_ns(r, "fb"),
            p99_a: job_p99_ns(r, "fa"),
            frac_b: fractions(class(b)),
            frac_a: fractions(class(a)),
            ratio: r.flows[a].bw_bytes as f64 / (r.flows[b].bw_bytes as f64).max(1.0),
        })
    })?;
    let sweep = pts
        .iter()
        .map(|p| {
            format!(
                "{}: fb p99 {:.2} ms, fb high {:.0} % / low {:.0} %, fa p99 {:.2} ms, fa:fb {:.2}",
                p.hl,
                p.p99_b as f64 / 1e6,
                p.frac_b[1] * 100.0,
                p.frac_b[3] * 100.0,
                p.p99_a as f64 / 1e6,
                p.ratio
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    (ctx.on_note)(&format!("fig5 sweep (H/L: …): {sweep}"));
    let xy = |name: &str, f: &dyn Fn(&HlPoint) -> f64| sluice_metrics::XySeries {
        name: name.to_string(),
        points: pts.iter().map(|p| (p.hl as f64, f(p))).collect(),
    };
    ctx.plot(
        "d2fq-fig5-tail",
        "D2FQ Fig. 5: p99 read latency against the static H/L ratio (zssd)",
        "H/L ratio",
        "p99 (ms)",
        &[
            xy("fb (weight 1)", &|p| p.p99_b as f64 / 1e6),
            xy("fa (weight 3)", &|p| p.p99_a as f64 / 1e6),
        ],
        true,
    )?;
    ctx.plot(
        "d2fq-fig5-queues",
        "D2FQ Fig. 5: fb's bytes per queue class against the static H/L ratio (zssd)",
        "H/L ratio",
        "share of fb's bytes (%)",
        &[
            xy("high", &|p| p.frac_b[1] * 100.0),
            xy("medium", &|p| p.frac_b[2] * 100.0),
            xy("low", &|p| p.frac_b[3] * 100.0),
        ],
        true,
    )?;
    let first = &pts[0];
    let last = &pts[pts.len() - 1];
    let min_other = pts[1..].iter().map(|p| p.p99_b).min().unwrap_or(0);
    let high_b: Vec<f64> = pts.iter().map(|p| p.frac_b[1]).collect();
    let mut goals = vec![
        Goal::new(
            "fig5",
            "fb's p99 at H/L 3 / its lowest p99 at H/L 4…256 ≤ 1 (Fig. 5: H/L 3 gives the \
             throttled flow its lowest tail)",
            first.p99_b as f64 / min_other.max(1) as f64,
            Line::AtMost(1.0),
            format!(
                "fb p99 {:.3} ms at 3, lowest of the rest {:.3} ms; sweep H/L: fb p99 (ms) {}",
                first.p99_b as f64 / 1e6,
                min_other as f64 / 1e6,
                pts.iter()
                    .map(|p| format!("{} {:.2}", p.hl, p.p99_b as f64 / 1e6))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ),
        Goal::new(
            "fig5",
            "fb's p99 at H/L 256 / at H/L 3 > 1 (Fig. 5: a high ratio lengthens the \
             throttled flow's tail)",
            last.p99_b as f64 / first.p99_b.max(1) as f64,
            Line::Above(1.0),
            format!(
                "fb p99 {:.2} ms at 256 vs {:.2} ms at 3",
                last.p99_b as f64 / 1e6,
                first.p99_b as f64 / 1e6
            ),
        ),
        Goal::new(
            "fig5",
            "at H/L 3 fb is on the low queues, fa on the high ones: the larger of fb's \
             non-low and fa's non-high byte fractions ≤ 0.01 (Fig. 5 / §3.1: \"f_b uses the \
             low queues only while f_a uses high queues only\"; 0.01: the start, before fb \
             is τl ahead, is counted)",
            (1.0 - first.frac_b[3]).max(1.0 - first.frac_a[1]),
            Line::AtMost(0.01),
            format!(
                "fb low {:.2} %, fa high {:.2} %; fa:fb bandwidth {:.3}",
                first.frac_b[3] * 100.0,
                first.frac_a[1] * 100.0,
                first.ratio
            ),
        ),
        Goal::new(
            "fig5",
            "fb's high-queue fraction at H/L 256 − at H/L 3 > 0 (Fig. 5: with a high ratio \
             the throttled flow uses the high queues more)",
            last.frac_b[1] - first.frac_b[1],
            Line::Above(0.0),
            format!(
                "fb's high-queue fraction over the sweep: {}",
                pts.iter()
                    .zip(&high_b)
                    .map(|(p, h)| format!("{} {:.1} %", p.hl, h * 100.0))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ),
    ];
    // Fairness is what every ratio of the sweep keeps (reported beside the goals).
    let worst = pts
        .iter()
        .map(|p| (p.ratio / 3.0 - 1.0).abs())
        .fold(0.0, f64::max);
    goals.push(Goal::new(
        "fig5",
        "fa:fb bandwidth 3 ± 5 % at every H/L of the sweep (Fig. 5 / §3.1: any ratio ≥ 3 \
         covers weights 3:1)",
        worst,
        Line::AtMost(0.05),
        format!(
            "fa:fb {}",
            pts.iter()
                .map(|p| format!("{} {:.3}", p.hl, p.ratio))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    ));
    Ok(goals)
}

/// Bandwidth of each flow per bin of `r`'s series (bytes per bin).
fn bins(r: &RunReport) -> Vec<Vec<u64>> {
    r.bw_series
        .flows
        .iter()
        .map(|f| f.bw_bytes.clone())
        .collect()
}

/// Largest over smallest flow bandwidth in bin `i` (∞ when a flow got nothing).
fn spread_at(b: &[Vec<u64>], i: usize) -> f64 {
    let v: Vec<u64> = b.iter().map(|f| f.get(i).copied().unwrap_or(0)).collect();
    let (lo, hi) = (*v.iter().min().unwrap_or(&0), *v.iter().max().unwrap_or(&0));
    if lo == 0 {
        f64::INFINITY
    } else {
        hi as f64 / lo as f64
    }
}

/// The flows share "equally" in a bin when the largest flow's bandwidth is within 10 %
/// of the smallest's.
const EQUAL: f64 = 1.10;

/// The start (s) of the first bin from which every later full bin is equal, or the run's
/// length when none is.
fn fair_from_s(r: &RunReport) -> f64 {
    let b = bins(r);
    let n = b.iter().map(Vec::len).min().unwrap_or(0);
    // The last bin may be cut short by the run's end: leave it out.
    let full = n.saturating_sub(1);
    let mut start = full;
    for i in (0..full).rev() {
        if spread_at(&b, i) <= EQUAL {
            start = i;
        } else {
            break;
        }
    }
    (r.bw_series.start_ns + start as u64 * r.bw_series.interval_ns) as f64 / 1e9
}

/// `d2fq:tau_l=…` for a paper τl in bytes of a weight-8 flow's service.
fn tau_spec(tau_paper: u64) -> String {
    format!("d2fq:tau_l={}", tau_paper / 8)
}

fn mb(tau: u64) -> String {
    if tau >= 1024 * MB {
        format!("{} GB", tau / (1024 * MB))
    } else {
        format!("{} MB", tau / MB)
    }
}

pub(crate) fn fig7(ctx: &Ctx) -> Result<Vec<Goal>, ReproError> {
    let file = "experiments/d2fq/fig7.fio";
    let jobs = ctx.jobs(file, FIG7)?;
    let dev = ctx.device("zssd")?;
    let taus = [MB, 10 * MB, 100 * MB, 1024 * MB];
    let cfg = SimConfig {
        interval_ns: Some(50_000_000),
        ..SimConfig::default()
    };
    let runs: Vec<RunReport> = ctx
        .each(&taus, |&t| ctx.sim_with(&jobs, &dev, &tau_spec(t), &cfg))?
        .into_iter()
        .map(|o| o.report)
        .collect();
    if let Some(dir) = &ctx.plot_dir {
        sluice_metrics::plot(&runs, &dir.join("d2fq-fig7"))?;
    }
    let from: Vec<f64> = runs.iter().map(fair_from_s).collect();
    let listing = taus
        .iter()
        .zip(&from)
        .map(|(t, f)| format!("τl {}: {f:.2} s", mb(*t)))
        .collect::<Vec<_>>()
        .join(", ");
    let latest = from.iter().copied().fold(0.0, f64::max);
    Ok(vec![
        Goal::new(
            "fig7",
            "τl 1 MB: equal sharing (largest / smallest flow ≤ 1.1 in every later 50 ms \
             bin) from ≤ 0.05 s, the first bin (Fig. 7: \"equally share the I/O bandwidth \
             from the beginning\")",
            from[0],
            Line::AtMost(0.05),
            format!("equal sharing from: {listing}"),
        ),
        Goal::new(
            "fig7",
            "τl 1 GB: equal sharing starts ≥ 1 s in (Fig. 7: \"delayed to after 1 second\")",
            from[3],
            Line::AtLeast(1.0),
            format!("equal sharing from: {listing}"),
        ),
        Goal::new(
            "fig7",
            "every τl, 1 GB too, shares equally from ≤ 2 s on, to the end of the 4 s run \
             (Fig. 7: the 1 GB line is drawn just after 1 s, \"after that point, the flows \
             equally share\"; 2 s: a second's slack)",
            latest,
            Line::AtMost(2.0),
            format!("equal sharing from: {listing}"),
        ),
    ])
}

pub(crate) fn fig8(ctx: &Ctx) -> Result<Vec<Goal>, ReproError> {
    let file = "experiments/d2fq/fig8.fio";
    let jobs = ctx.jobs(file, FIG8)?;
    let dev = ctx.device("zssd")?;
    let [t1, t10, t100] = reports(ctx.sim_each(
        &jobs,
        &dev,
        &[&tau_spec(MB), &tau_spec(10 * MB), &tau_spec(100 * MB)],
    )?);
    let names = ["f4k", "f8k", "f16k"];
    let p99 = |r: &RunReport| names.map(|n| job_p99_ns(r, n));
    let (a, b, c) = (p99(&t1), p99(&t10), p99(&t100));
    let ratio = |x: [u64; 3], y: [u64; 3]| -> Vec<f64> {
        x.iter()
            .zip(y)
            .map(|(x, y)| *x as f64 / y.max(1) as f64)
            .collect()
    };
    let small = ratio(a, c);
    let mid = ratio(b, c);
    let ms = |v: [u64; 3]| {
        v.iter()
            .map(|x| format!("{:.2}", *x as f64 / 1e6))
            .collect::<Vec<_>>()
            .join("/")
    };
    let measured = format!(
        "p99 ms 4k/8k/16k: τl 1 MB {}, 10 MB {}, 100 MB {}",
        ms(a),
        ms(b),
        ms(c)
    );
    let max = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
    Ok(vec![
        Goal::new(
            "fig8",
            "τl 1 MB: the largest flow's p99 over its p99 at 100 MB ≥ 3.7 (Fig. 8: \"up to \
             3.7 times long tail latency\")",
            max(&small),
            Line::AtLeast(3.7),
            format!(
                "{measured}; 1 MB / 100 MB {}",
                small
                    .iter()
                    .map(|r| format!("{r:.2}"))
                    .collect::<Vec<_>>()
                    .join("/")
            ),
        ),
        Goal::new(
            "fig8",
            "τl 10 MB: every flow's p99 over its p99 at 100 MB ≤ 1.25 (Fig. 8: \"no \
             significant increase\"; 1.25: the paper gives no number, a quarter against 1 \
             MB's 3.7×)",
            max(&mid),
            Line::AtMost(1.25),
            format!(
                "10 MB / 100 MB {}",
                mid.iter()
                    .map(|r| format!("{r:.2}"))
                    .collect::<Vec<_>>()
                    .join("/")
            ),
        ),
    ])
}
