//! Suite `fastresponse`: FastResponse's whole-stack synchronous write path (Li et al.,
//! ICS '22, §4.2, Fig. 13): RocksDB's fillsync beside each co-runner of Table 1 on the
//! journaled store, under vanilla, B-Opt, BS-Opt and BSJ-Opt
//! (`sluice_apps::fillsync`), in the simulator; where a critical fsync's time goes
//! under each (§4.4, Fig. 15(b)); and where a critical read's time goes beside Bayes
//! under vanilla, B-Opt and BS-Opt (§4.4, Fig. 15(a), `sluice_apps::readcorun`).

use sluice_apps::fillsync::{run, Fillsync, FillsyncConfig, Latencies, Scheme};

use crate::{Ctx, Experiment, Goal, Line, ReproError, Suite};

const FIG13: &str = include_str!("../../../experiments/fastresponse/fig13.toml");
const FIG15: &str = include_str!("../../../experiments/fastresponse/fig15.toml");
const FIG15A: &str = include_str!("../../../experiments/fastresponse/fig15a.toml");
const DEVICE: &str = "ull";

/// The suite.
pub(crate) const SUITE: Suite = Suite {
    name: "fastresponse",
    about: "FastResponse whole stack: fillsync beside Table 1's co-runners on the journaled store (Fig. 13) and where a critical fsync's time goes (Fig. 15(b))",
    experiments: &[
        Experiment {
            id: "fig13",
            title: "Fig. 13: fillsync latency, vanilla / B-Opt / BS-Opt / BSJ-Opt, per co-runner",
            file: "experiments/fastresponse/fig13.toml",
            run: fig13,
        },
        Experiment {
            id: "fig15",
            title: "Fig. 15(b): where a critical fsync's time goes, beside Bayes, per scheme",
            file: "experiments/fastresponse/fig15.toml",
            run: fig15,
        },
        Experiment {
            id: "fig15a",
            title: "Fig. 15(a): where a critical read's time goes, beside Bayes, per scheme",
            file: "experiments/fastresponse/fig15a.toml",
            run: fig15a,
        },
    ],
};

fn config(text: &str, file: &str, ctx: &Ctx) -> Result<FillsyncConfig, ReproError> {
    let mut cfg = FillsyncConfig::from_toml(text).map_err(|message| ReproError::App {
        what: file.into(),
        message,
    })?;
    cfg.seed = ctx.seed;
    Ok(cfg)
}

/// Every (co-runner, scheme) of `cfg` run side by side, co-runner by co-runner in
/// order.
fn runs(ctx: &Ctx, cfg: &FillsyncConfig) -> Result<Vec<Fillsync>, ReproError> {
    let schemes = Scheme::fig13();
    let pairs: Vec<_> = cfg
        .corunner
        .iter()
        .flat_map(|co| schemes.iter().map(move |s| (co, s)))
        .collect();
    ctx.each(&pairs, |(co, s)| {
        (ctx.on_run)(&format!(
            "fillsync beside {} under {} on {DEVICE}",
            co.name, s.name
        ));
        run(cfg, co, s, DEVICE, None).map_err(|message| ReproError::App {
            what: format!("fillsync beside {} under {}", co.name, s.name),
            message,
        })
    })
}

fn fig15(ctx: &Ctx) -> Result<Vec<Goal>, ReproError> {
    let cfg = config(FIG15, "experiments/fastresponse/fig15.toml", ctx)?;
    let schemes = Scheme::fig13();
    let all = runs(ctx, &cfg)?;
    let mut goals = Vec::new();
    for (co, res) in cfg.corunner.iter().zip(all.chunks(schemes.len())) {
        // Means per fsync, µs: wait, data, journal, commit, wake, total.
        let m: Vec<[f64; 6]> = res
            .iter()
            .map(|r| r.breakdown.means().map(|v| v / 1e3))
            .collect();
        let line = schemes
            .iter()
            .zip(&m)
            .map(|(s, b)| {
                format!(
                    "{} {:.1}/{:.1}/{:.1}/{:.1}/{:.1} = {:.1}",
                    s.name, b[0], b[1], b[2], b[3], b[4], b[5]
                )
            })
            .collect::<Vec<_>>()
            .join("; ");
        let (bs, bsj) = (&m[2], &m[3]);
        goals.push(Goal::new(
            "fig15",
            format!(
                "{}: BSJ-Opt's data part / BS-Opt's < 0.5 (Fig. 15(b): fjournal removes \
                 T_D2, the other files' data; the paper draws it gone, no number)",
                co.name
            ),
            bsj[1] / bs[1].max(1e-9),
            Line::Below(0.5),
            format!("fsync µs wait/data/journal/commit/wake = total: {line}"),
        ));
        goals.push(Goal::new(
            "fig15",
            format!(
                "{}: BSJ-Opt's wait + wake / BS-Opt's < 0.1 (Fig. 15(b): T_Sched \
                 \"completely removed\")",
                co.name
            ),
            (bsj[0] + bsj[4]) / (bs[0] + bs[4]).max(1e-9),
            Line::Below(0.1),
            format!(
                "wait + wake: BS-Opt {:.1} µs, BSJ-Opt {:.1} µs",
                bs[0] + bs[4],
                bsj[0] + bsj[4]
            ),
        ));
    }
    Ok(goals)
}

fn fig13(ctx: &Ctx) -> Result<Vec<Goal>, ReproError> {
    let cfg = config(FIG13, "experiments/fastresponse/fig13.toml", ctx)?;
    let schemes = Scheme::fig13();
    let (mut mean_cut, mut tail_cut) = (Vec::new(), Vec::new());
    let mut goals = Vec::new();
    let mut all = runs(ctx, &cfg)?.into_iter().map(|r| r.latencies);
    for co in &cfg.corunner {
        let res: Vec<Latencies> = all.by_ref().take(schemes.len()).collect();
        let (van, full) = (&res[0], &res[3]);
        let cut = |a: f64, b: f64| 1.0 - b / a.max(1.0);
        mean_cut.push(cut(van.mean(), full.mean()));
        tail_cut.push(cut(
            van.percentile(99.9) as f64,
            full.percentile(99.9) as f64,
        ));
        let line = schemes
            .iter()
            .zip(&res)
            .map(|(s, l)| {
                format!(
                    "{} {:.0}/{:.0}/{:.0} µs",
                    s.name,
                    l.mean() / 1e3,
                    l.percentile(99.0) as f64 / 1e3,
                    l.percentile(99.9) as f64 / 1e3
                )
            })
            .collect::<Vec<_>>()
            .join(", ");
        goals.push(Goal::new(
            "fig13",
            format!(
                "{}: BSJ-Opt mean / vanilla's < 1 (Fig. 13: BSJ-Opt lowest beside every \
                 co-runner)",
                co.name
            ),
            full.mean() / van.mean().max(1.0),
            Line::Below(1.0),
            format!("mean/p99/p99.9 ({} puts): {line}", van.0.len()),
        ));
    }
    let avg = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let (m, t) = (avg(&mean_cut), avg(&tail_cut));
    goals.push(Goal::new(
        "fig13",
        "BSJ-Opt's mean cut vs vanilla, averaged over co-runners, ≥ 0.58 (Fig. 13: 58 %)",
        m,
        Line::AtLeast(0.58),
        format!("{:.1} %", m * 100.0),
    ));
    goals.push(Goal::new(
        "fig13",
        "BSJ-Opt's p99.9 cut vs vanilla, averaged over co-runners, ≥ 0.74 (Fig. 13: 74 %)",
        t,
        Line::AtLeast(0.74),
        format!("{:.1} % ({} puts a run)", t * 100.0, cfg.puts),
    ));
    Ok(goals)
}

fn fig15a(ctx: &Ctx) -> Result<Vec<Goal>, ReproError> {
    use sluice_apps::readcorun::{self, ReadScheme};
    let cfg = config(FIG15A, "experiments/fastresponse/fig15a.toml", ctx)?;
    let schemes = ReadScheme::fig15a();
    let pairs: Vec<_> = cfg
        .corunner
        .iter()
        .flat_map(|co| schemes.iter().map(move |s| (co, s)))
        .collect();
    let all = ctx.each(&pairs, |(co, s)| {
        (ctx.on_run)(&format!(
            "readrandom beside {} under {} on {DEVICE}",
            co.name, s.name
        ));
        readcorun::run(&cfg, co, s, DEVICE).map_err(|message| ReproError::App {
            what: format!("readrandom beside {} under {}", co.name, s.name),
            message,
        })
    })?;
    let mut goals = Vec::new();
    for (co, res) in cfg.corunner.iter().zip(all.chunks(schemes.len())) {
        let b: Vec<_> = res.iter().map(|r| r.breakdown).collect();
        let line = schemes
            .iter()
            .zip(&b)
            .zip(res)
            .map(|((s, b), r)| {
                format!(
                    "{} {:.1}/{:.1}/{:.1}+{:.1}/{:.1} = {:.1} (peak depth {})",
                    s.name,
                    b.block / 1e3,
                    b.device / 1e3,
                    b.wake / 1e3,
                    b.sched / 1e3,
                    b.rest / 1e3,
                    b.total / 1e3,
                    r.peak_depth
                )
            })
            .collect::<Vec<_>>()
            .join("; ");
        let (van, bopt, bsopt) = (&b[0], &b[1], &b[2]);
        let measured = format!(
            "read µs T_Blk/T_Dev/T_Sched (arrival + after the device)/rest = total: {line}"
        );
        let sched = |b: &sluice_apps::readcorun::ReadBreakdown| b.wake + b.sched;
        goals.push(Goal::new(
            "fig15a",
            format!(
                "{}: B-Opt's T_Dev / vanilla's ≤ 17/26 = 0.654 (Fig. 15(a): B-Opt cuts the \
                 device part from 26 µs to 17 µs)",
                co.name
            ),
            bopt.device / van.device.max(1e-9),
            Line::AtMost(17.0 / 26.0),
            measured.clone(),
        ));
        goals.push(Goal::new(
            "fig15a",
            format!(
                "{}: BS-Opt's T_Sched / B-Opt's ≤ 7/22 = 0.318 (Fig. 15(a): BS-Opt cuts \
                 process scheduling from 22 µs to 7 µs)",
                co.name
            ),
            sched(bsopt) / sched(bopt).max(1e-9),
            Line::AtMost(7.0 / 22.0),
            measured,
        ));
    }
    Ok(goals)
}
