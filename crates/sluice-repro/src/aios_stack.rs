//! Suite `aios`: AIOS's asynchronous fsync path (Lee et al., ATC '19, §3.3, Fig. 11) on
//! the journaled store, 1 to N threads of 4 KiB random write + fsync
//! (`sluice_apps::writefsync`), and Filebench's varmail at 1 to N threads (§4.3.2,
//! Fig. 17, `sluice_apps::varmail`), in the simulator.
//!
//! AIOS's read path (Fig. 8: lean submission and lazy indexing against the vanilla
//! read path at 4–128 KiB) is not in this suite: the runtime has no vanilla read
//! path with per-page indexing costs to compare against yet.

use sluice_apps::varmail::{self, VarmailConfig};
use sluice_apps::writefsync::{run, WriteFsyncConfig};
use sluice_store::{CommitMode, FsConfig, FsyncPath};

use crate::{Ctx, Experiment, Goal, ReproError, Suite};

const FIG11: &str = include_str!("../../../experiments/aios/fig11.toml");
const FIG17: &str = include_str!("../../../experiments/aios/fig17.toml");

/// The suite.
pub(crate) const SUITE: Suite = Suite {
    name: "aios",
    about: "AIOS whole stack: write + fsync latency, synchronous vs asynchronous fsync path, 1–N threads (Fig. 11)",
    experiments: &[
        Experiment {
            id: "fig11",
            title: "Fig. 11: 4 KiB random write + fsync latency, sync vs async fsync path, 1–8 threads",
            file: "experiments/aios/fig11.toml",
            run: fig11,
        },
        Experiment {
            id: "fig17",
            title: "Fig. 17: Filebench varmail throughput, sync vs async fsync path, 1–16 threads",
            file: "experiments/aios/fig17.toml",
            run: fig17,
        },
    ],
};

/// The gains shrink as threads grow (each at most 2 points above the one before, the
/// last below the first).
fn shrinking(gains: &[f64]) -> bool {
    gains.windows(2).all(|w| w[1] <= w[0] + 0.02) && gains.last() < gains.first()
}

fn fig17(ctx: &Ctx) -> Result<Vec<Goal>, ReproError> {
    let mut cfg = VarmailConfig::from_toml(FIG17).map_err(|message| ReproError::App {
        what: "experiments/aios/fig17.toml".into(),
        message,
    })?;
    cfg.seed = ctx.seed;
    let runs: Vec<(u32, FsyncPath)> = cfg
        .threads
        .iter()
        .flat_map(|&t| [(t, FsyncPath::Sync), (t, FsyncPath::Async)])
        .collect();
    let mut all = ctx
        .each(&runs, |&(t, path)| {
            (ctx.on_run)(&format!(
                "varmail, {t} threads, {path:?} path on {}",
                cfg.device
            ));
            let fs = FsConfig::store(CommitMode::Compound).with_fsync_path(path);
            varmail::run(&cfg, t, &fs, None).map_err(|message| ReproError::App {
                what: format!("varmail with {t} threads"),
                message,
            })
        })?
        .into_iter();
    let (mut gains, mut line) = (Vec::new(), Vec::new());
    for &t in &cfg.threads {
        let r: Vec<_> = all.by_ref().take(2).collect();
        let gain = r[1].ops_per_sec / r[0].ops_per_sec.max(1.0) - 1.0;
        line.push(format!(
            "{t} threads: {:.0} → {:.0} ops/s ({:+.1} %)",
            r[0].ops_per_sec,
            r[1].ops_per_sec,
            gain * 100.0
        ));
        gains.push(gain);
    }
    Ok(vec![
        Goal {
            experiment: "fig17".into(),
            goal:
                "one thread: async fsync path raises varmail throughput by >= 20 % (paper: +29.4 %)"
                    .into(),
            measured: line.join("; "),
            pass: gains[0] >= 0.2,
        },
        Goal {
            experiment: "fig17".into(),
            goal: "the gain shrinks as threads grow (paper's trend)".into(),
            measured: gains
                .iter()
                .map(|g| format!("{:+.1} %", g * 100.0))
                .collect::<Vec<_>>()
                .join(", "),
            pass: shrinking(&gains),
        },
    ])
}

fn fig11(ctx: &Ctx) -> Result<Vec<Goal>, ReproError> {
    let mut cfg = WriteFsyncConfig::from_toml(FIG11).map_err(|message| ReproError::App {
        what: "experiments/aios/fig11.toml".into(),
        message,
    })?;
    cfg.seed = ctx.seed;
    let mut gains = Vec::new();
    let mut line = Vec::new();
    // Every (threads, path) run side by side, in the order of the loop below.
    let runs: Vec<(u32, FsyncPath)> = cfg
        .threads
        .iter()
        .flat_map(|&t| [(t, FsyncPath::Sync), (t, FsyncPath::Async)])
        .collect();
    let mut all = ctx
        .each(&runs, |&(t, path)| {
            (ctx.on_run)(&format!(
                "write+fsync, {t} threads, {path:?} path on {}",
                cfg.device
            ));
            run(&cfg, t, path, None).map_err(|message| ReproError::App {
                what: format!("write+fsync with {t} threads"),
                message,
            })
        })?
        .into_iter();
    for &t in &cfg.threads {
        let r: Vec<_> = all.by_ref().take(2).collect();
        let gain = 1.0 - r[1].mean_ns / r[0].mean_ns.max(1.0);
        line.push(format!(
            "{t} threads: {:.1} → {:.1} µs ({:+.1} %), {:.0} → {:.0} IOPS",
            r[0].mean_ns / 1e3,
            r[1].mean_ns / 1e3,
            -gain * 100.0,
            r[0].iops,
            r[1].iops
        ));
        gains.push(gain);
    }
    Ok(vec![
        Goal {
            experiment: "fig11".into(),
            goal: "one thread: async fsync path cuts latency by >= 20 % (paper: up to 21 %)".into(),
            measured: line.join("; "),
            pass: gains[0] >= 0.2,
        },
        Goal {
            experiment: "fig11".into(),
            goal: "the gain shrinks as threads grow (paper's trend)".into(),
            measured: gains
                .iter()
                .map(|g| format!("{:.1} %", g * 100.0))
                .collect::<Vec<_>>()
                .join(", "),
            pass: shrinking(&gains),
        },
    ])
}
