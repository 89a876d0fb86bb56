//! `sluice crashtest`: the journaled store's seeded crash-and-recover harness
//! (`sluice::store::crashtest`, the code `tests/crash.rs` runs) on many seeds, for long
//! runs. Every failure is printed with its seed and the command that replays it; the
//! exit status is 1 if any seed failed.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use sluice::cli::{progress_bar, CliError};
use sluice::store::crashtest::{Config, Failure, Harness};

#[derive(clap::Args, Debug)]
pub struct CrashtestArgs {
    /// Seeds to run, for each configuration.
    #[arg(long, default_value_t = 1000)]
    seeds: u64,
    /// The first seed.
    #[arg(long, default_value_t = 0)]
    start: u64,
    /// Commit mode (default: both).
    #[arg(long, value_parser = ["compound", "fjournal"])]
    mode: Option<String>,
    /// fsync path: the synchronous one or AIOS's asynchronous one (default: both).
    #[arg(long, value_parser = ["sync", "async"])]
    fsync: Option<String>,
    /// Threads running seeds side by side (default: the machine's cores). A seed's run
    /// is the same whatever their number.
    /// 1 to 4096.
    #[arg(long, short = 'j', value_parser = clap::value_parser!(u64).range(1..=4096))]
    jobs: Option<u64>,
    /// Stop at the first failure.
    #[arg(long)]
    fail_fast: bool,
    /// No progress on stderr.
    #[arg(long, short = 'q')]
    quiet: bool,
}

pub fn cmd_crashtest(args: CrashtestArgs) -> Result<(), CliError> {
    if args.seeds == 0 {
        return Err(CliError::Usage("--seeds: give at least 1".into()));
    }
    // The last seed, start + seeds − 1, must exist (u64::MAX is a seed like any other).
    let Some(last) = args.start.checked_add(args.seeds - 1) else {
        return Err(CliError::Usage(format!(
            "--start {} with --seeds {} passes the largest seed ({}); give at most {} seeds from there",
            args.start,
            args.seeds,
            u64::MAX,
            u64::MAX - args.start + 1
        )));
    };
    let configs: Vec<Config> = Config::ALL
        .into_iter()
        .filter(|c| args.mode.as_deref().is_none_or(|m| m == c.mode_name()))
        .filter(|c| args.fsync.as_deref().is_none_or(|f| f == c.fsync_name()))
        .collect();
    let jobs = args.jobs.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        |j| j as usize,
    );
    let total = args.seeds.saturating_mul(configs.len() as u64);
    eprintln!(
        "crashtest: seeds {}..={last} on {} ({total} crashes, {jobs} threads)",
        args.start,
        configs
            .iter()
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let started = Instant::now();
    let terminal = !args.quiet && std::io::stderr().is_terminal();
    let bar = terminal.then(|| progress_bar("crashtest", total));
    let say = |line: String| match &bar {
        Some(b) => b.println(line),
        None => eprintln!("{line}"),
    };
    let failures: Mutex<Vec<Failure>> = Mutex::new(Vec::new());
    let stop = AtomicBool::new(false);
    let done = AtomicU64::new(0);
    let (syncs, bytes, mid_run) = (AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0));
    let (big, orphans, cut) = (AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0));
    let mut last_line = Instant::now();
    for config in configs {
        let harness = match Harness::new(config) {
            Ok(h) => h,
            Err(f) => {
                say(format!("FAILED {f}"));
                failures.lock().expect("not poisoned").push(f);
                if args.fail_fast {
                    break;
                }
                continue;
            }
        };
        // Seeds are taken by their index from the start (no sum past the last seed).
        let next = AtomicU64::new(0);
        std::thread::scope(|scope| {
            for _ in 0..jobs {
                scope.spawn(|| loop {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= args.seeds {
                        return;
                    }
                    let seed = args.start + i;
                    match harness.run(seed) {
                        Ok(out) => {
                            syncs.fetch_add(out.syncs, Ordering::Relaxed);
                            bytes.fetch_add(out.bytes_checked, Ordering::Relaxed);
                            mid_run.fetch_add(out.mid_run as u64, Ordering::Relaxed);
                            big.fetch_add(out.big_files, Ordering::Relaxed);
                            orphans.fetch_add(out.orphans, Ordering::Relaxed);
                            cut.fetch_add(out.cut, Ordering::Relaxed);
                        }
                        Err(f) => {
                            say(format!("FAILED {f}"));
                            failures.lock().expect("not poisoned").push(f);
                            if args.fail_fast {
                                stop.store(true, Ordering::Relaxed);
                            }
                        }
                    }
                    let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                    if let Some(b) = &bar {
                        b.set_position(n);
                    }
                });
            }
            // Without a terminal: a progress line every 30 s.
            while !args.quiet && bar.is_none() && next.load(Ordering::Relaxed) < args.seeds {
                std::thread::sleep(Duration::from_millis(200));
                if last_line.elapsed() >= Duration::from_secs(30) && !stop.load(Ordering::Relaxed) {
                    last_line = Instant::now();
                    eprintln!(
                        "crashtest: {}/{total} crashes, {} failed, {:.0} s",
                        done.load(Ordering::Relaxed),
                        failures.lock().expect("not poisoned").len(),
                        started.elapsed().as_secs_f64()
                    );
                }
            }
        });
        if stop.load(Ordering::Relaxed) {
            break;
        }
    }
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let failures = failures.into_inner().expect("not poisoned");
    println!(
        "crashtest: {} crashes ({} inside the workload) in {:.1} s: {} recovered and checked \
         ({} fsyncs and syncs, {:.1} MiB of file contents compared with the model, {} files \
         past 4 MiB + 96 KiB, {} files removed while open freed at mount, {} commits the \
         crash cut dropped at mount), {} failed",
        done.load(Ordering::Relaxed),
        mid_run.load(Ordering::Relaxed),
        started.elapsed().as_secs_f64(),
        done.load(Ordering::Relaxed) - failures.len() as u64,
        syncs.load(Ordering::Relaxed),
        bytes.load(Ordering::Relaxed) as f64 / (1 << 20) as f64,
        big.load(Ordering::Relaxed),
        orphans.load(Ordering::Relaxed),
        cut.load(Ordering::Relaxed),
        failures.len()
    );
    if failures.is_empty() {
        return Ok(());
    }
    println!("failed seeds, each with the command that replays it:");
    for f in &failures {
        println!("  {} seed {}: {}", f.config, f.seed, f.replay_command());
    }
    Err(CliError::CrashtestFailed(failures.len()))
}
