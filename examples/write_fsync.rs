//! AIOS's fsync path (ATC '19 Fig. 11; `sluice::apps::writefsync`): 1 to N critical
//! threads, each repeating a buffered 4 KiB write at a random block of its own file on
//! the journaled store and an `fsync` (ordered mode, compound commits). Prints, per
//! thread count, the mean write + fsync latency and the operations per second with the
//! synchronous commit path (data, then journal blocks) and AIOS's asynchronous one
//! (journal blocks sent while the data is in flight), and the gain.
//!
//! ```sh
//! cargo run --release --example write_fsync                                  # simulated ull
//! cargo run --release --example write_fsync -- --config experiments/aios/fig11.toml
//! cargo run --release --example write_fsync -- --real DIR --threads 1,4      # a store file in DIR
//! scripts/bench-aios-real.sh                                                 # medians on this disk
//! ```

use std::path::PathBuf;
use std::process::ExitCode;
#[path = "common/scratch.rs"]
mod scratch;

use sluice::apps::writefsync::{run, WriteFsyncConfig};
use sluice::store::FsyncPath;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let (mut cfg, mut real) = (WriteFsyncConfig::default(), None::<PathBuf>);
    let usage = "use --config FILE, --threads N[,N…], --ops N, --device NAME or --real DIR";
    while let Some(k) = args.next() {
        let Some(v) = args.next() else {
            eprintln!("write_fsync: {k} needs a value; {usage}");
            return ExitCode::from(2);
        };
        let r: Result<(), String> = match k.as_str() {
            "--config" => std::fs::read_to_string(&v)
                .map_err(|e| format!("{v}: {e}"))
                .and_then(|t| WriteFsyncConfig::from_toml(&t).map_err(|e| format!("{v}: {e}")))
                .map(|c| cfg = c),
            "--threads" => v
                .split(',')
                .map(|t| t.trim().parse::<u32>())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("--threads {v}: {e}"))
                .and_then(|t| {
                    if t.is_empty() || t.contains(&0) {
                        Err(format!("--threads {v}: give counts of at least 1"))
                    } else {
                        cfg.threads = t;
                        Ok(())
                    }
                }),
            "--ops" => match v.parse::<u32>() {
                Ok(n) if n > 0 => {
                    cfg.ops = n;
                    Ok(())
                }
                _ => Err(format!("--ops {v}: give a count of at least 1")),
            },
            "--device" => {
                cfg.device = v;
                Ok(())
            }
            "--real" => {
                real = Some(PathBuf::from(v));
                Ok(())
            }
            _ => Err(format!("unknown option '{k}'")),
        };
        if let Err(e) = r {
            eprintln!("write_fsync: {e}; {usage}");
            return ExitCode::from(2);
        }
    }
    let place = match &real {
        Some(d) => format!("a store file in {}", d.display()),
        None => format!("simulated {}", cfg.device),
    };
    println!("write + fsync, {} × 4 KiB per thread, {place}", cfg.ops);
    println!(
        "{:>7} {:>12} {:>12} {:>8} {:>12} {:>12}",
        "threads", "sync µs", "async µs", "gain", "sync IOPS", "async IOPS"
    );
    for &t in &cfg.threads {
        let mut row = Vec::new();
        for path in [FsyncPath::Sync, FsyncPath::Async] {
            let dir = match real.as_deref().map(|d| {
                scratch::RunDir::new(
                    d,
                    &format!("write-fsync-{}-{t}-{path:?}", std::process::id()),
                )
            }) {
                Some(Err(e)) => {
                    eprintln!("write_fsync: {e}");
                    return ExitCode::from(2);
                }
                d => d.map(Result::unwrap),
            };
            let r = run(&cfg, t, path, dir.as_ref().map(|d| d.path()));
            drop(dir);
            match r {
                Ok(r) => row.push(r),
                Err(e) => {
                    eprintln!("write_fsync: {t} threads, {path:?} path: {e}");
                    return ExitCode::from(1);
                }
            }
        }
        println!(
            "{:>7} {:>12.1} {:>12.1} {:>7.1}% {:>12.0} {:>12.0}",
            t,
            row[0].mean_ns / 1e3,
            row[1].mean_ns / 1e3,
            (1.0 - row[1].mean_ns / row[0].mean_ns) * 100.0,
            row[0].iops,
            row[1].iops
        );
    }
    ExitCode::SUCCESS
}
