//! RCP's I/O priority inversion, and inheritance fixing it (FAST '17 §2.2, §4.2).
//!
//! A critical task needs a lock that a background task holds while the background
//! task's small write waits in the block layer behind a saturating bulk writer. Without
//! inheritance the critical task waits for the whole queue; with it, the holder
//! inherits the critical class, its queued write is promoted, and the wait is about one
//! device latency.
//!
//! ```sh
//! cargo run --release --example inversion                 # simulated ull, policy rcp
//! cargo run --release --example inversion -- --device nand --policy rcp
//! cargo run --release --example inversion -- --real DIR   # real files under DIR (io_uring)
//! cargo run --release --example inversion -- --real DIR --cores 2
//! ```
//!
//! With `--cores N` (N ≥ 2) the writer and the lock holder run on core 1 and the
//! critical task on core 0: on a real stack, threads of their own.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use sluice::runtime::{
    now, sleep, spawn_on, Activity, DmaBuffer, File, Inherit, IoOptions, Mutex, Op, Stack, TaskCtx,
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

fn wait_for_lock(
    device: &str,
    policy: &str,
    real: Option<&str>,
    cores: Option<u16>,
    inherit: Inherit,
) -> Result<u64, String> {
    let mut b = Stack::builder()
        .device(device)
        .policy(policy)
        .inherit(inherit);
    // A fresh directory per run (the stack creates its files and never reuses one),
    // removed once the run is measured.
    let run_dir = real.map(RunDir::new).transpose()?;
    if let Some(d) = &run_dir {
        b = b.directory(&d.0).cores(1);
    }
    if let Some(n) = cores {
        b = b.cores(n);
    }
    // The writer and the holder on core 1, the critical task on core 0 (with --cores);
    // round robin otherwise.
    let on = move |ctx: TaskCtx, core: u16| match cores {
        Some(n) => ctx.core(core % n),
        None => ctx,
    };
    let stack = b.build().map_err(|e| e.to_string())?;
    let out = stack
        .run(move || async move {
            let lock = Arc::new(Mutex::new(()));
            // The bulk writer: 32 writes of 128 KiB outstanding, for 20 ms.
            let writer = spawn_on(
                on(TaskCtx::new("bulk").activity(Activity::COMPACTION), 1),
                || async {
                    let f = File::create("bulk").await.unwrap();
                    let mut q = std::collections::VecDeque::new();
                    let mut off = 0u64;
                    while now() < 20 * MS {
                        while q.len() < 32 {
                            q.push_back(f.submit(
                                Op::Write,
                                DmaBuffer::new(128 << 10),
                                off,
                                IoOptions::new(),
                            ));
                            off += 128 << 10;
                        }
                        q.pop_front().unwrap().await.0.unwrap();
                    }
                    for h in q {
                        h.await.0.unwrap();
                    }
                },
            );
            // The background task: takes the lock, then writes 4 KiB under it.
            let l = lock.clone();
            let held = Arc::new(AtomicBool::new(false));
            let held2 = held.clone();
            let bg = spawn_on(
                on(
                    TaskCtx::new("checkpointer").activity(Activity::CHECKPOINT),
                    1,
                ),
                move || async move {
                    sleep(2 * MS).await;
                    let f = File::create("meta").await.unwrap();
                    let _g = l.lock().await;
                    held2.store(true, Ordering::SeqCst);
                    f.write_at(DmaBuffer::new(4096), 0).await.0.unwrap();
                },
            );
            // The critical task: needs the lock a little later.
            let crit = spawn_on(
                on(TaskCtx::new("client").critical(), 0),
                move || async move {
                    sleep(2 * MS + 200 * US).await;
                    // On real files the holder may be late (a loaded host): wait until it
                    // holds the lock (in simulation it does by now).
                    while !held.load(Ordering::SeqCst) {
                        sleep(50 * US).await;
                    }
                    let t0 = now();
                    let _g = lock.lock().await;
                    now() - t0
                },
            );
            let waited = crit.await;
            bg.await;
            writer.await;
            waited
        })
        .map_err(|e| e.to_string())?;
    Ok(out.value)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut device = "ull".to_string();
    let mut policy = "rcp".to_string();
    let mut real = None;
    let mut cores = None;
    let mut i = 0;
    while i < args.len() {
        let value = args.get(i + 1).cloned();
        match (args[i].as_str(), value) {
            ("--device", Some(v)) => device = v,
            ("--policy", Some(v)) => policy = v,
            ("--real", Some(v)) => real = Some(v),
            ("--cores", Some(v)) => match v.parse::<u16>() {
                Ok(n) => cores = Some(n),
                Err(_) => {
                    eprintln!("inversion: --cores {v}: give a number of cores, 1 to 1024");
                    return ExitCode::from(2);
                }
            },
            (flag, _) => {
                eprintln!("inversion: unknown or incomplete option '{flag}'; use --device NAME, --policy SPEC, --real DIR, --cores N");
                return ExitCode::from(2);
            }
        }
        i += 2;
    }
    let mut world = match &real {
        Some(d) => format!("real files under {d}"),
        None => format!("simulated {device}"),
    };
    if let Some(n) = cores {
        world += &format!(", {n} cores");
    }
    println!("critical task's wait for the lock ({world}, {policy}):");
    for (name, inherit) in [
        ("inheritance off", Inherit::OFF),
        ("inheritance on", Inherit::ON),
    ] {
        match wait_for_lock(&device, &policy, real.as_deref(), cores, inherit) {
            Ok(ns) => println!("  {name:<16} {:>10.1} µs", ns as f64 / 1e3),
            Err(e) => {
                eprintln!("inversion: {e}");
                return ExitCode::from(2);
            }
        }
    }
    ExitCode::SUCCESS
}
