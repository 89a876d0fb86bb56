//! RCP's PostgreSQL/TPC-C stand-in (FAST '17 Fig. 6 and Fig. 10) on sluice's runtime:
//! clients (critical) with buffer locks, reads through the page cache and group commit,
//! beside a checkpointer that writes the dirty pages out and fsyncs every interval.
//! Prints, per stack configuration, transactions per second, latency percentiles,
//! checkpoints completed and the largest WAL.
//!
//! ```sh
//! cargo run --release --example oltp                                 # Fig. 6 setups, simulated
//! cargo run --release --example oltp -- --fig10                      # Fig. 10 ablation
//! cargo run --release --example oltp -- --config experiments/rcp/fig6.toml --device nand
//! cargo run --release --example oltp -- --real DIR                   # real files under DIR
//! # fs = "compound" in a config: the files on the journaled store (OltpConfig::fs)
//! ```

use std::path::PathBuf;
use std::process::ExitCode;
#[path = "common/scratch.rs"]
mod scratch;

use sluice::apps::oltp::{OltpConfig, StackSetup};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (mut device, mut real, mut cfg, mut fig10) =
        ("nand".to_string(), None, OltpConfig::default(), false);
    let mut i = 0;
    while i < args.len() {
        match (args[i].as_str(), args.get(i + 1)) {
            ("--device", Some(v)) => device = v.clone(),
            ("--real", Some(v)) => real = Some(PathBuf::from(v)),
            ("--config", Some(v)) => {
                match std::fs::read_to_string(v)
                    .map_err(|e| e.to_string())
                    .and_then(|t| OltpConfig::from_toml(&t))
                {
                    Ok(c) => cfg = c,
                    Err(e) => {
                        eprintln!("oltp: {v}: {e}");
                        return ExitCode::from(2);
                    }
                }
            }
            ("--fig10", _) => {
                fig10 = true;
                i += 1;
                continue;
            }
            (flag, _) => {
                eprintln!("oltp: unknown or incomplete option '{flag}'; use --device NAME, --real DIR, --config FILE or --fig10");
                return ExitCode::from(2);
            }
        }
        i += 2;
    }
    let setups = if fig10 {
        let mut s = StackSetup::fig10();
        s.extend(StackSetup::fig10_kinds());
        s
    } else {
        StackSetup::fig6()
    };
    println!(
        "{:<18} {:>9} {:>10} {:>10} {:>10} {:>11} {:>8} {:>12} {:>7} {:>12}",
        "stack",
        "txn/s",
        "p50 ms",
        "p99 ms",
        "p99.9 ms",
        "checkpoints",
        "ckpt ms",
        "max WAL MiB",
        "boosts",
        "I/O promoted"
    );
    let mut waits = Vec::new();
    for (k, s) in setups.iter().enumerate() {
        let dir = match real
            .as_deref()
            .map(|d| scratch::RunDir::new(d, &format!("oltp-{}-{k}", std::process::id())))
        {
            Some(Err(e)) => {
                eprintln!("oltp: {e}");
                return ExitCode::from(2);
            }
            d => d.map(Result::unwrap),
        };
        let r = s.run(&cfg, &device, dir.as_ref().map(|d| d.path()));
        // The run's files are the stack's own: removed once it is measured (or on
        // Ctrl-C / SIGTERM).
        drop(dir);
        match r {
            Ok(r) => {
                waits.push(format!("{}: {}", s.name, r.waits_line()));
                println!(
                "{:<18} {:>9.0} {:>10.2} {:>10.2} {:>10.2} {:>11} {:>8.0} {:>12.2} {:>7} {:>12}",
                s.name,
                r.tps(),
                r.percentile(50.0) as f64 / 1e6,
                r.percentile(99.0) as f64 / 1e6,
                r.percentile(99.9) as f64 / 1e6,
                r.checkpoints,
                r.checkpoint_mean_ms(),
                r.max_log_bytes as f64 / (1 << 20) as f64,
                r.boosts,
                r.io_promotions
            )
            }
            Err(e) => {
                eprintln!("oltp: {}: {e}", s.name);
                return ExitCode::from(1);
            }
        }
    }
    // RCP Table 2: where the clients waited, each site's longest (mean) wait in ms.
    println!("\nclients' waits by site, longest (mean) ms:");
    for w in waits {
        println!("  {w}");
    }
    ExitCode::SUCCESS
}
