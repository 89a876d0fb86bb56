//! FastResponse's fillsync (ICS '22 Fig. 13) on sluice's journaled store: RocksDB-style
//! puts (append + fsync, 2 000 per second, a critical task) beside each HiBench
//! co-runner of Table 1, under vanilla, B-Opt (ld), BS-Opt (+ critical wakeup) and
//! BSJ-Opt (+ fjournal). Prints mean, p99 and p99.9 put latency per co-runner and scheme,
//! and where the critical fsyncs' time went (FastResponse's Fig. 15(b) breakdown:
//! waiting for the commit to start, ordered data, journal blocks, FLUSH + commit record,
//! waking up after it; `sluice_store::FsyncBreakdown`). With `--real DIR` a fifth row,
//! `host`, runs the same program on host files in DIR (write + `fdatasync(2)` through
//! the runtime's page cache and `O_DIRECT`: the host file system's journal, ext4 here)
//! — the baseline a store is measured against.
//!
//! ```sh
//! cargo run --release --example fillsync -- --config experiments/fastresponse/fig13.toml
//! cargo run --release --example fillsync -- --config FILE --device nand
//! cargo run --release --example fillsync -- --config FILE --real DIR   # a store file in DIR, and host files
//! scripts/bench-fillsync-real.sh                                         # medians over rounds on this disk
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

use sluice::apps::fillsync::{run, FillsyncConfig, Scheme};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (mut device, mut real, mut config) = ("ull".to_string(), None, None);
    let mut i = 0;
    while i < args.len() {
        match (args[i].as_str(), args.get(i + 1)) {
            ("--device", Some(v)) => device = v.clone(),
            ("--real", Some(v)) => real = Some(PathBuf::from(v)),
            ("--config", Some(v)) => config = Some(v.clone()),
            (flag, _) => {
                eprintln!("fillsync: unknown or incomplete option '{flag}'; use --config FILE, --device NAME or --real DIR");
                return ExitCode::from(2);
            }
        }
        i += 2;
    }
    let Some(path) = config else {
        eprintln!("fillsync: give --config FILE (e.g. experiments/fastresponse/fig13.toml: the co-runners are listed there)");
        return ExitCode::from(2);
    };
    let cfg = match std::fs::read_to_string(&path)
        .map_err(|e| e.to_string())
        .and_then(|t| FillsyncConfig::from_toml(&t))
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("fillsync: {path}: {e}");
            return ExitCode::from(2);
        }
    };
    println!(
        "{:<10} {:<8} {:>10} {:>10} {:>10}   fsync mean µs: wait / data / journal / commit / wake",
        "co-runner", "scheme", "put mean", "p99", "p99.9"
    );
    for (k, co) in cfg.corunner.iter().enumerate() {
        let mut schemes = Scheme::fig13().to_vec();
        if real.is_some() {
            schemes.push(Scheme::host());
        }
        for (m, s) in schemes.iter().enumerate() {
            let dir = real
                .as_ref()
                .map(|d| d.join(format!("fillsync-{}-{k}-{m}", std::process::id())));
            if let Some(d) = &dir {
                if let Err(e) = std::fs::create_dir_all(d) {
                    eprintln!("fillsync: {}: {e}", d.display());
                    return ExitCode::from(2);
                }
            }
            let r = run(&cfg, co, s, &device, dir.as_deref());
            // The run's files are the stack's own: removed once it is measured.
            if let Some(d) = &dir {
                let _ = std::fs::remove_dir_all(d);
            }
            match r {
                Ok(r) => {
                    let (l, b) = (&r.latencies, r.breakdown.means().map(|v| v / 1e3));
                    println!(
                        "{:<10} {:<8} {:>10.1} {:>10.1} {:>10.1}   {:.1} / {:.1} / {:.1} / {:.1} / {:.1}",
                        co.name,
                        s.name,
                        l.mean() / 1e3,
                        l.percentile(99.0) as f64 / 1e3,
                        l.percentile(99.9) as f64 / 1e3,
                        b[0],
                        b[1],
                        b[2],
                        b[3],
                        b[4]
                    )
                }
                Err(e) => {
                    eprintln!("fillsync: {} under {}: {e}", co.name, s.name);
                    return ExitCode::from(1);
                }
            }
        }
    }
    ExitCode::SUCCESS
}
