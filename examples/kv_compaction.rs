//! Embedding sluice: a toy key-value store's foreground reads beside a compaction task.
//!
//! Clients (critical tasks) look keys up: a little CPU, then a 4 KiB read of the key's
//! block. Compaction (idle class; four tasks, as RocksDB's subcompactions) reads and
//! rewrites 256 KiB runs as fast as it can, burning CPU between them. The program runs the same code under a few stack
//! configurations and prints the clients' latency per configuration (p50 / p99, and
//! the part after the device: waiting to run again), and the compaction's throughput —
//! the report is `sluice sim`'s, one job per (task flow, activity).
//!
//! ```sh
//! cargo run --release --example kv_compaction                # simulated ull
//! cargo run --release --example kv_compaction -- --device nand
//! cargo run --release --example kv_compaction -- --real DIR  # real files under DIR (io_uring)
//! ```

use std::cell::Cell;
use std::process::ExitCode;
use std::rc::Rc;

use sluice::metrics::RunReport;
use sluice::runtime::{
    cpu, now, sleep, spawn, Activity, DmaBuffer, File, IoClass, Stack, TaskCtx, Wakeup,
};

const MS: u64 = 1_000_000;
static RUNS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// A run's own directory under `--real DIR`, removed with everything in it when dropped
/// (the run's files are the stack's own).
struct RunDir(std::path::PathBuf);

impl RunDir {
    fn new(dir: &str) -> Result<RunDir, String> {
        let n = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let d = std::path::Path::new(dir).join(format!("run-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&d).map_err(|e| format!("{}: {e}", d.display()))?;
        Ok(RunDir(d))
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
const US: u64 = 1_000;
const KEYS: u64 = 4096;
/// The 256 KiB runs compaction reads and rewrites (the keys' 16 MiB).
const SST_RUNS: u64 = KEYS / 64;
/// Compaction tasks (subcompactions), each over its own share of the runs.
const COMPACTIONS: u64 = 4;

fn run(
    device: &str,
    real: Option<&str>,
    policy: &str,
    wakeup: Wakeup,
) -> Result<RunReport, String> {
    let mut b = Stack::builder()
        .device(device)
        .policy(policy)
        .wakeup(wakeup)
        .cores(2);
    // A fresh directory per run (the stack creates its files and never reuses one),
    // removed once the run is measured.
    let run_dir = real.map(RunDir::new).transpose()?;
    if let Some(d) = &run_dir {
        b = b.directory(&d.0).cores(1);
    }
    let out = b
        .build()
        .map_err(|e| e.to_string())?
        .run(|| async {
            let data = File::create("sst").await.unwrap();
            // Load the keys' blocks.
            for i in 0..SST_RUNS {
                data.write_at(DmaBuffer::new(256 << 10), i * (256 << 10))
                    .await
                    .0
                    .unwrap();
            }
            let stop = Rc::new(Cell::new(false));
            // Compaction merges several runs at once (RocksDB's subcompactions): four
            // tasks of one flow, each reading and rewriting its own quarter of the runs,
            // so up to four 256 KiB requests of the idle class are out at a time — what a
            // two-class scheduler (`rcp`: one non-critical request at the device) holds
            // back and `none` does not.
            let out = File::create("sst2").await.unwrap();
            let mut compactions = Vec::new();
            for k in 0..COMPACTIONS {
                let s = stop.clone();
                compactions.push(spawn(
                    TaskCtx::new(format!("compaction{k}"))
                        .flow("compaction")
                        .class(IoClass::Idle)
                        .activity(Activity::COMPACTION),
                    async move {
                        let mut i = 0u64;
                        while !s.get() {
                            let run = k * SST_RUNS / COMPACTIONS + i % (SST_RUNS / COMPACTIONS);
                            let (r, buf) = data
                                .read_at(DmaBuffer::new(256 << 10), run * (256 << 10))
                                .await;
                            r.unwrap();
                            cpu(150 * US).await; // merge
                            out.write_at(buf, run * (256 << 10)).await.0.unwrap();
                            i += 1;
                        }
                        i
                    },
                ));
            }
            let mut clients = Vec::new();
            for c in 0..4u64 {
                clients.push(spawn(
                    TaskCtx::new(format!("client{c}"))
                        .flow("clients")
                        .critical()
                        .activity(Activity::GET),
                    async move {
                        let mut x = c + 1;
                        for _ in 0..300 {
                            x = x
                                .wrapping_mul(6364136223846793005)
                                .wrapping_add(1442695040888963407);
                            cpu(5 * US).await; // parse, index lookup
                            let key = (x >> 33) % KEYS;
                            data.read_at(DmaBuffer::new(4096), key * 4096)
                                .await
                                .0
                                .unwrap();
                            sleep(200 * US).await; // think time
                        }
                    },
                ));
            }
            for h in clients {
                h.await;
            }
            stop.set(true);
            let mut runs = 0;
            for h in compactions {
                runs += h.await;
            }
            (runs, now())
        })
        .map_err(|e| e.to_string())?;
    let _ = MS;
    Ok(out.report)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (mut device, mut real) = ("ull".to_string(), None);
    let mut i = 0;
    while i < args.len() {
        match (args[i].as_str(), args.get(i + 1)) {
            ("--device", Some(v)) => device = v.clone(),
            ("--real", Some(v)) => real = Some(v.clone()),
            (flag, _) => {
                eprintln!("kv_compaction: unknown or incomplete option '{flag}'; use --device NAME or --real DIR");
                return ExitCode::from(2);
            }
        }
        i += 2;
    }
    println!(
        "{:<28} {:>10} {:>10} {:>14} {:>16}",
        "stack", "get p50", "get p99", "get post-dev", "compaction MiB/s"
    );
    for (policy, wakeup) in [
        ("none", Wakeup::Fifo),
        ("rcp", Wakeup::Fifo),
        ("rcp", Wakeup::Critical),
    ] {
        let r = match run(&device, real.as_deref(), policy, wakeup) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("kv_compaction: {e}");
                return ExitCode::from(2);
            }
        };
        let get = r
            .jobs
            .iter()
            .find(|j| j.jobname == "clients/get")
            .expect("clients ran");
        let pct = |p: &str| {
            get.read
                .lat_ns
                .percentile
                .0
                .iter()
                .find(|(q, _)| format!("{q:.1}") == p)
                .map_or(0.0, |(_, v)| *v as f64 / 1e3)
        };
        let comp_bytes: u64 = r
            .jobs
            .iter()
            .filter(|j| j.jobname.starts_with("compaction/"))
            .map(|j| j.read.io_bytes + j.write.io_bytes)
            .sum();
        let secs = r.duration_ns as f64 / 1e9;
        let name = format!("{policy}, wakeup={wakeup:?}").to_lowercase();
        println!(
            "{name:<28} {:>8.1}µs {:>8.1}µs {:>12.1}µs {:>16.0}",
            pct("50.0"),
            pct("99.0"),
            get.read.post_ns.mean / 1e3,
            comp_bytes as f64 / secs / (1 << 20) as f64
        );
    }
    ExitCode::SUCCESS
}
