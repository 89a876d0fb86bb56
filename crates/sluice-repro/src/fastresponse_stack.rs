//! Suite `fastresponse`: FastResponse's whole-stack synchronous write path (Li et al.,
//! ICS '22, §4.2, Fig. 13): RocksDB's fillsync beside each co-runner of Table 1 on the
//! journaled store, under vanilla, B-Opt, BS-Opt and BSJ-Opt
//! (`sluice_apps::fillsync`), in the simulator.

use sluice_apps::fillsync::{run, FillsyncConfig, Latencies, Scheme};

use crate::{Ctx, Experiment, Goal, ReproError, Suite};

const FIG13: &str = include_str!("../../../experiments/fastresponse/fig13.toml");
const DEVICE: &str = "ull";

/// The suite.
pub(crate) const SUITE: Suite = Suite {
    name: "fastresponse",
    about: "FastResponse whole stack: fillsync beside Table 1's co-runners on the journaled store (Fig. 13)",
    experiments: &[Experiment {
        id: "fig13",
        title: "Fig. 13: fillsync latency, vanilla / B-Opt / BS-Opt / BSJ-Opt, per co-runner",
        file: "experiments/fastresponse/fig13.toml",
        run: fig13,
    }],
};

fn fig13(ctx: &Ctx) -> Result<Vec<Goal>, ReproError> {
    let mut cfg = FillsyncConfig::from_toml(FIG13).map_err(|message| ReproError::App {
        what: "experiments/fastresponse/fig13.toml".into(),
        message,
    })?;
    cfg.seed = ctx.seed;
    let schemes = Scheme::fig13();
    let (mut mean_cut, mut tail_cut) = (Vec::new(), Vec::new());
    let mut goals = Vec::new();
    // Every (co-runner, scheme) run side by side, co-runner by co-runner in order.
    let pairs: Vec<_> = cfg
        .corunner
        .iter()
        .flat_map(|co| schemes.iter().map(move |s| (co, s)))
        .collect();
    let mut all = ctx
        .each(&pairs, |(co, s)| {
            (ctx.on_run)(&format!(
                "fillsync beside {} under {} on {DEVICE}",
                co.name, s.name
            ));
            run(&cfg, co, s, DEVICE, None).map_err(|message| ReproError::App {
                what: format!("fillsync beside {} under {}", co.name, s.name),
                message,
            })
        })?
        .into_iter();
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
        goals.push(Goal {
            experiment: "fig13".into(),
            goal: format!("{}: BSJ-Opt mean below vanilla's", co.name),
            measured: format!("mean/p99/p99.9: {line}"),
            pass: full.mean() < van.mean(),
        });
    }
    let avg = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let (m, t) = (avg(&mean_cut), avg(&tail_cut));
    goals.push(Goal {
        experiment: "fig13".into(),
        goal: "BSJ-Opt cuts the mean by >= 50 % vs vanilla, averaged (paper: 58 %)".into(),
        measured: format!("{:.1} %", m * 100.0),
        pass: m >= 0.5,
    });
    goals.push(Goal {
        experiment: "fig13".into(),
        goal: "BSJ-Opt cuts the p99.9 by >= 60 % vs vanilla, averaged (paper: 74 %)".into(),
        measured: format!("{:.1} %", t * 100.0),
        pass: t >= 0.6,
    });
    Ok(goals)
}
