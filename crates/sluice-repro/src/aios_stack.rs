//! Suite `aios`: AIOS's asynchronous fsync path (Lee et al., ATC '19, §3.3, Fig. 11) on
//! the journaled store, 1 to N threads of 4 KiB random write + fsync
//! (`sluice_apps::writefsync`), and Filebench's varmail at 1 to N threads (§4.3.2,
//! Fig. 17, `sluice_apps::varmail`), in the simulator.
//! And AIOS's read path against Linux's, buffered random reads of 4 to 128 KiB
//! (§3.2, Fig. 8, `sluice_apps::readrand`).

use sluice_apps::readrand::{self, ReadPath, ReadRandConfig};
use sluice_apps::varmail::{self, VarmailConfig};
use sluice_apps::writefsync::{run, WriteFsyncConfig};
use sluice_store::{CommitMode, FsConfig, FsyncPath};

use crate::{Ctx, Experiment, Goal, Line, ReproError, Suite};

const FIG8: &str = include_str!("../../../experiments/aios/fig8.toml");
const FIG11: &str = include_str!("../../../experiments/aios/fig11.toml");
const FIG17: &str = include_str!("../../../experiments/aios/fig17.toml");

/// The suite.
pub(crate) const SUITE: Suite = Suite {
    name: "aios",
    about: "AIOS whole stack: read latency by read path (Fig. 8), write + fsync latency (Fig. 11) and varmail (Fig. 17), synchronous vs asynchronous path",
    experiments: &[
        Experiment {
            id: "fig8",
            title: "Fig. 8: buffered random read latency, Linux's vs AIOS's read path, 4–128 KiB",
            file: "experiments/aios/fig8.toml",
            run: fig8,
        },
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

/// Run `one` for every key (a thread count, a block size) under the baseline path and
/// AIOS's, `paths`, side by side; returns (baseline, AIOS) per key, in order. `label`
/// names a run in the progress line, `what` a key in an error.
fn both_paths<P: Copy + Sync, T: Send>(
    ctx: &Ctx,
    keys: &[u32],
    paths: [P; 2],
    label: impl Fn(u32, P) -> String + Sync,
    what: impl Fn(u32) -> String + Sync,
    one: impl Fn(u32, P) -> Result<T, String> + Sync,
) -> Result<Vec<(T, T)>, ReproError> {
    let runs: Vec<(u32, P)> = keys.iter().flat_map(|&k| paths.map(|p| (k, p))).collect();
    let all = ctx.each(&runs, |&(k, path)| {
        (ctx.on_run)(&label(k, path));
        one(k, path).map_err(|message| ReproError::App {
            what: what(k),
            message,
        })
    })?;
    let mut it = all.into_iter();
    let mut pairs = Vec::new();
    while let (Some(s), Some(a)) = (it.next(), it.next()) {
        pairs.push((s, a));
    }
    Ok(pairs)
}

/// [`both_paths`] over thread counts with the synchronous and asynchronous fsync paths.
fn both_fsync_paths<T: Send>(
    ctx: &Ctx,
    threads: &[u32],
    what: &str,
    one: impl Fn(u32, FsyncPath) -> Result<T, String> + Sync,
) -> Result<Vec<(T, T)>, ReproError> {
    both_paths(
        ctx,
        threads,
        [FsyncPath::Sync, FsyncPath::Async],
        |t, path| format!("{what}, {t} threads, {path:?} path"),
        |t| format!("{what} with {t} threads"),
        one,
    )
}

/// The two goals of an AIOS thread sweep: the one-thread gain reaches `goal` (`lines`:
/// the figures per thread count), and the gain shrinks as threads grow (each step at
/// most 2 points up, the last below the first).
fn gain_goals(
    experiment: &str,
    first: &str,
    goal: f64,
    gains: &[f64],
    lines: &[String],
) -> Vec<Goal> {
    let shrinking = gains.windows(2).all(|w| w[1] <= w[0] + 0.02) && gains.last() < gains.first();
    vec![
        Goal::new(
            experiment,
            first,
            gains[0],
            Line::AtLeast(goal),
            lines.join("; "),
        ),
        Goal::holds(
            experiment,
            "the gain shrinks as threads grow: each step at most 2 points up, the last below \
             the first (the paper's trend; 2 points: a step's seed noise)",
            shrinking,
            gains
                .iter()
                .map(|g| format!("{:+.1} %", g * 100.0))
                .collect::<Vec<_>>()
                .join(", "),
        ),
    ]
}

fn fig8(ctx: &Ctx) -> Result<Vec<Goal>, ReproError> {
    let mut cfg = ReadRandConfig::from_toml(FIG8).map_err(|message| ReproError::App {
        what: "experiments/aios/fig8.toml".into(),
        message,
    })?;
    cfg.seed = ctx.seed;
    let pairs = both_paths(
        ctx,
        &cfg.blocks,
        [ReadPath::Vanilla, ReadPath::Aios],
        |b, path| {
            format!(
                "random read, {} KiB, {path:?} read path on {}",
                b / 1024,
                cfg.device
            )
        },
        |b| format!("random reads of {b} bytes"),
        |b, path| readrand::run(&cfg, b, path),
    )?;
    let (mut cuts, mut lines) = (Vec::new(), Vec::new());
    for (&b, (v, a)) in cfg.blocks.iter().zip(&pairs) {
        let cut = 1.0 - a.mean_ns / v.mean_ns.max(1.0);
        lines.push(format!(
            "{} KiB: {:.1} → {:.1} µs ({:+.1} %, hits {:.1} %)",
            b / 1024,
            v.mean_ns / 1e3,
            a.mean_ns / 1e3,
            -cut * 100.0,
            v.hit_ratio * 100.0
        ));
        cuts.push(cut);
    }
    let growing = cuts.windows(2).all(|w| w[1] >= w[0] - 0.01) && cuts.last() > cuts.first();
    Ok(vec![
        Goal::new(
            "fig8",
            "4 KiB: AIOS's read path's latency cut ≥ 0.15 (Fig. 8: 15–33 %)",
            cuts[0],
            Line::AtLeast(0.15),
            lines.join("; "),
        ),
        Goal::holds(
            "fig8",
            "the cut grows with the block size: each step at most 1 point down, the last \
             above the first (Fig. 8's trend)",
            growing,
            cuts.iter()
                .map(|c| format!("{:.1} %", c * 100.0))
                .collect::<Vec<_>>()
                .join(", "),
        ),
    ])
}

fn fig17(ctx: &Ctx) -> Result<Vec<Goal>, ReproError> {
    let mut cfg = VarmailConfig::from_toml(FIG17).map_err(|message| ReproError::App {
        what: "experiments/aios/fig17.toml".into(),
        message,
    })?;
    cfg.seed = ctx.seed;
    let what = format!("varmail on {}", cfg.device);
    // AIOS's whole scheme against the vanilla one: its fsync path with its read path
    // (varmail reads every file whole), as the paper ran it.
    let pairs = both_fsync_paths(ctx, &cfg.threads, &what, |t, path| {
        let fs = FsConfig::store(CommitMode::Compound).with_fsync_path(path);
        let read = match path {
            FsyncPath::Sync => ReadPath::Vanilla,
            FsyncPath::Async => ReadPath::Aios,
        };
        varmail::run(&cfg, t, &fs, read, None)
    })?;
    let (mut gains, mut lines) = (Vec::new(), Vec::new());
    for (&t, (s, a)) in cfg.threads.iter().zip(&pairs) {
        let gain = a.ops_per_sec / s.ops_per_sec.max(1.0) - 1.0;
        lines.push(format!(
            "{t} threads: {:.0} → {:.0} ops/s ({:+.1} %)",
            s.ops_per_sec,
            a.ops_per_sec,
            gain * 100.0
        ));
        gains.push(gain);
    }
    Ok(gain_goals(
        "fig17",
        "one thread: AIOS (async fsync + read path) varmail throughput gain ≥ 0.294 (Fig. 17: \
         +29.4 %)",
        0.294,
        &gains,
        &lines,
    ))
}

fn fig11(ctx: &Ctx) -> Result<Vec<Goal>, ReproError> {
    let mut cfg = WriteFsyncConfig::from_toml(FIG11).map_err(|message| ReproError::App {
        what: "experiments/aios/fig11.toml".into(),
        message,
    })?;
    cfg.seed = ctx.seed;
    let what = format!("write+fsync on {}", cfg.device);
    let pairs = both_fsync_paths(ctx, &cfg.threads, &what, |t, path| run(&cfg, t, path, None))?;
    let (mut gains, mut lines) = (Vec::new(), Vec::new());
    for (&t, (s, a)) in cfg.threads.iter().zip(&pairs) {
        // The latency cut (a gain is a fall here).
        let gain = 1.0 - a.mean_ns / s.mean_ns.max(1.0);
        lines.push(format!(
            "{t} threads: {:.1} → {:.1} µs ({:+.1} %), {:.0} → {:.0} IOPS",
            s.mean_ns / 1e3,
            a.mean_ns / 1e3,
            -gain * 100.0,
            s.iops,
            a.iops
        ));
        gains.push(gain);
    }
    Ok(gain_goals(
        "fig11",
        "one thread: async fsync path's latency cut ≥ 0.20 (Fig. 11: up to 21 %; 0.20: \
         \"up to\" is the best of the paper's runs)",
        0.2,
        &gains,
        &lines,
    ))
}
