//! Suite `rcp`: RCP's whole-stack results (Kim et al., FAST '17, §7.2 Fig. 4–6, §7.5
//! Fig. 10) on the OLTP stand-in of `sluice-apps` (PostgreSQL under TPC-C with periodic
//! checkpoints), in the simulator: the same application code under each stack
//! configuration ([`StackSetup`]).

use sluice_apps::oltp::{OltpConfig, OltpResult, StackSetup};

use crate::{Ctx, Experiment, Goal, ReproError, Suite};

const FIG6: &str = include_str!("../../../experiments/rcp/fig6.toml");
const FIG10: &str = include_str!("../../../experiments/rcp/fig10.toml");
const DEVICE: &str = "nand";

/// The suite.
pub(crate) const SUITE: Suite = Suite {
    name: "rcp",
    about: "RCP whole stack: OLTP under checkpoints (Fig. 4–6), one part off at a time (Fig. 10)",
    experiments: &[
        Experiment {
            id: "fig6",
            title: "Fig. 6: transaction latency and throughput under checkpoints, none / cfq-idle / rcp-block / rcp",
            file: "experiments/rcp/fig6.toml",
            run: fig6,
        },
        Experiment {
            id: "fig10",
            title: "Fig. 10: throughput with one part of RCP off at a time",
            file: "experiments/rcp/fig10.toml",
            run: fig10,
        },
    ],
};

fn config(file: &str, text: &str, seed: u64) -> Result<OltpConfig, ReproError> {
    let mut c = OltpConfig::from_toml(text).map_err(|message| ReproError::App {
        what: file.to_string(),
        message,
    })?;
    c.seed = seed;
    Ok(c)
}

fn run(ctx: &Ctx, cfg: &OltpConfig, s: &StackSetup) -> Result<OltpResult, ReproError> {
    (ctx.on_run)(&format!("oltp under {} on {DEVICE}", s.name));
    s.run(cfg, DEVICE, None).map_err(|message| ReproError::App {
        what: format!("oltp under {}", s.name),
        message,
    })
}

fn fig6(ctx: &Ctx) -> Result<Vec<Goal>, ReproError> {
    let cfg = config("experiments/rcp/fig6.toml", FIG6, ctx.seed)?;
    let setups = StackSetup::fig6();
    let results = ctx.each(&setups, |s| run(ctx, &cfg, s))?;
    ctx.plot(
        "rcp-fig6",
        "RCP Fig. 6: transaction latency CCDF (OLTP stand-in, nand)",
        "latency (ms)",
        "fraction of transactions at least this slow",
        &setups
            .iter()
            .zip(&results)
            .map(|(s, r)| sluice_metrics::XySeries {
                name: s.name.to_string(),
                points: r.ccdf(),
            })
            .collect::<Vec<_>>(),
        true,
    )?;
    let by = |name: &str| &results[setups.iter().position(|s| s.name == name).expect("a setup")];
    let (none, rcp) = (by("none"), by("rcp"));
    let all = setups
        .iter()
        .zip(&results)
        .map(|(s, r)| format!("{}: {}", s.name, r.summary()))
        .collect::<Vec<_>>()
        .join("; ");
    let p99 = rcp.percentile(99.0) as f64 / none.percentile(99.0).max(1) as f64;
    let tput = rcp.tps() / none.tps().max(1e-9);
    let log = rcp.max_log_bytes as f64 / none.max_log_bytes.max(1) as f64;
    let goal = |goal: &str, measured: String, pass: bool| Goal {
        experiment: "fig6".into(),
        goal: goal.into(),
        measured,
        pass,
    };
    Ok(vec![
        goal(
            "rcp p99 <= 0.1 x none's (paper: 42x better)",
            format!(
                "{p99:.3} (p99.9 {:.3}); {all}",
                rcp.percentile(99.9) as f64 / none.percentile(99.9).max(1) as f64
            ),
            p99 <= 0.1,
        ),
        goal(
            "rcp throughput >= 1.15 x none's (paper: +15-37 %)",
            format!("{tput:.3}"),
            tput >= 1.15,
        ),
        goal(
            "rcp checkpoints every interval: at most 1 fewer than none",
            format!("{} vs {}", rcp.checkpoints, none.checkpoints),
            rcp.checkpoints + 1 >= none.checkpoints && rcp.checkpoints >= 2,
        ),
        goal(
            "rcp WAL bounded: largest WAL <= 2 x none's (Fig. 5)",
            format!("{log:.3}"),
            log <= 2.0,
        ),
    ])
}

fn fig10(ctx: &Ctx) -> Result<Vec<Goal>, ReproError> {
    let cfg = config("experiments/rcp/fig10.toml", FIG10, ctx.seed)?;
    let setups = StackSetup::fig10();
    let mut runs = ctx.each(&setups, |s| run(ctx, &cfg, s))?.into_iter();
    let full = runs.next().expect("the full stack ran");
    let mut goals = Vec::new();
    for (s, r) in setups[1..].iter().zip(runs) {
        let rel = r.tps() / full.tps().max(1e-9);
        goals.push(Goal {
            experiment: "fig10".into(),
            goal: format!(
                "{}: throughput below the full stack's (paper: -7-33 %)",
                s.name
            ),
            measured: format!("{rel:.3} of {:.0} txn/s; {}", full.tps(), r.summary()),
            pass: rel < 0.98,
        });
    }
    Ok(goals)
}
