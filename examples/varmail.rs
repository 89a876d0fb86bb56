//! Filebench's varmail on sluice (AIOS ATC '19 Fig. 17; `sluice::apps::varmail`): small
//! files created, appended, fsynced, read whole and deleted by 1 to N threads. Prints
//! Filebench operations per second per file system and thread count: the store's
//! modes and, as the baseline, the stack's own files (on a real directory: files on the
//! host's file system, its own journal doing the fsyncs).
//!
//! ```sh
//! cargo run --release --example varmail                                   # simulated ull
//! cargo run --release --example varmail -- --config experiments/aios/fig17.toml
//! cargo run --release --example varmail -- --real DIR --threads 1,16      # files in DIR
//! cargo run --release --example varmail -- --fs compound --fs compound+async
//! cargo run --release --example varmail -- --fs compound+async --read-path aios  # AIOS whole
//! ```
//!
//! `--read-path` (vanilla, the default, or aios) is the stack's read path for every
//! run: AIOS's scheme is its asynchronous fsync path (`+async`) with its read path.

use std::process::ExitCode;
#[path = "common/scratch.rs"]
mod scratch;

use sluice::apps::varmail::{run, VarmailConfig};
use sluice::runtime::ReadPath;
use sluice::store::FsConfig;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let (mut cfg, mut real, mut fss) = (VarmailConfig::default(), None::<String>, Vec::new());
    let mut read_path = ReadPath::Vanilla;
    let usage = "use --config FILE, --threads N[,N…], --device NAME, --real DIR, --fs host|compound|fjournal[+async], --read-path vanilla|aios";
    while let Some(k) = args.next() {
        let Some(v) = args.next() else {
            eprintln!("varmail: {k} needs a value; {usage}");
            return ExitCode::from(2);
        };
        let r: Result<(), String> = match k.as_str() {
            "--config" => std::fs::read_to_string(&v)
                .map_err(|e| format!("{v}: {e}"))
                .and_then(|t| VarmailConfig::from_toml(&t).map_err(|e| format!("{v}: {e}")))
                .map(|c| cfg = c),
            "--threads" => v
                .split(',')
                .map(|t| t.trim().parse::<u32>())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("--threads {v}: {e}"))
                .map(|t| cfg.threads = t),
            "--device" => {
                cfg.device = v;
                Ok(())
            }
            "--real" => {
                real = Some(v);
                Ok(())
            }
            "--fs" => v.parse::<FsConfig>().map(|f| fss.push(f)),
            "--read-path" => v
                .parse::<ReadPath>()
                .map(|p| read_path = p)
                .map_err(|e| format!("--read-path {v}: {e}")),
            _ => Err(format!("unknown option '{k}'; {usage}")),
        };
        if let Err(e) = r.and_then(|_| cfg.check()) {
            eprintln!("varmail: {e}");
            return ExitCode::from(2);
        }
    }
    if fss.is_empty() {
        fss = ["host", "compound", "compound+async", "fjournal"]
            .iter()
            .map(|s| s.parse().expect("known"))
            .collect();
    }
    let place = real.clone().map_or_else(
        || format!("simulated {}", cfg.device),
        |d| format!("files in {d}"),
    );
    println!(
        "varmail: {} files, {} loops per thread, {place}; Filebench ops/s",
        cfg.files, cfg.loops
    );
    for (k, fs) in fss.iter().enumerate() {
        for &t in &cfg.threads {
            // Real files: each run in a new subdirectory of DIR, removed afterwards.
            let sub = match real.as_ref().map(|d| {
                scratch::RunDir::new(
                    std::path::Path::new(d),
                    &format!("sluice-varmail-{}-{k}-{t}", std::process::id()),
                )
            }) {
                Some(Err(e)) => {
                    eprintln!("varmail: {e}");
                    return ExitCode::FAILURE;
                }
                d => d.map(Result::unwrap),
            };
            let r = run(&cfg, t, fs, read_path, sub.as_ref().map(|d| d.path()));
            drop(sub);
            match r {
                Ok(r) => println!(
                    "  {:<15} {t:>3} threads {:>10.0} ops/s   loop {:>8.1} µs",
                    fs.to_string(),
                    r.ops_per_sec,
                    r.loop_ns / 1e3
                ),
                Err(e) => {
                    eprintln!("varmail: {fs}, {t} threads: {e}");
                    return ExitCode::FAILURE;
                }
            }
        }
    }
    ExitCode::SUCCESS
}
