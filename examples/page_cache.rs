//! The page cache's two RCP effects and its hit path, on a simulated device or on real
//! files (a directory; the example creates its files there and removes nothing else).
//!
//! ```sh
//! cargo run --release --example page_cache -- effects              # simulated nand
//! cargo run --release --example page_cache -- effects --real DIR   # real files
//! cargo run --release --example page_cache -- hits --real DIR      # cache hits vs pread
//! ```
//!
//! * `effects` — (1) RCP's class-aware dirty limits: four background tasks stream buffered
//!   writes far past the cache while a critical task writes 8 KiB every 200 µs; the
//!   critical task's total time in `write_buffered` with class limits on (1 % / 20 %)
//!   and off (one 20 % ratio, Linux's). (2) Writeback promotion: a checkpoint task
//!   fsyncs a page whose writeback queues behind a saturating writer; a critical task
//!   rewriting the page waits for that writeback, with inheritance on and off.
//! * `hits` — 4 KiB random reads served from the runtime's page cache (warm) against
//!   `pread` through the host's page cache (warm) on the same file, same process;
//!   five alternating rounds, medians.

use std::collections::VecDeque;
use std::os::unix::fs::FileExt;
use std::process::ExitCode;
use std::time::Instant;

use sluice::runtime::{
    now, sleep, spawn, Activity, CacheConfig, DmaBuffer, File, Inherit, IoOptions, Op, Stack,
    StackBuilder, TaskCtx,
};

const MS: u64 = 1_000_000;
const US: u64 = 1_000;

fn builder(real: Option<&str>) -> StackBuilder {
    let b = Stack::builder().policy("rcp");
    match real {
        Some(dir) => b.directory(dir).cores(1),
        None => b.device("nand"),
    }
}

/// Unique file names per run, so a real directory never holds one the stack did not
/// create (the runtime refuses to create over an existing file).
fn name(base: &str, run: usize) -> String {
    format!("sluice-page-cache-{}-{base}-{run}", std::process::id())
}

fn dirty_limits(real: Option<&str>, class_limits: bool, run: usize) -> Result<u64, String> {
    let cfg = CacheConfig {
        pages: 4096,
        class_limits,
        ..CacheConfig::default()
    };
    let log = name("log", run);
    let bulks: Vec<String> = (0..BULK_WRITERS)
        .map(|k| name(&format!("bulk{k}"), run))
        .collect();
    let out = builder(real)
        .cache(cfg)
        .build()
        .map_err(|e| e.to_string())?
        .run(move || async move {
            // Several bulk writers (one flow): whenever one pauses at the dirty limit,
            // another fills it again, so the limit is full most of the time — as under
            // Linux's single `dirty_ratio` when a few background writers stream.
            let mut bg = Vec::new();
            for (k, bulk) in bulks.into_iter().enumerate() {
                bg.push(spawn(
                    TaskCtx::new(format!("bulk{k}"))
                        .flow("bulk")
                        .activity(Activity::COMPACTION),
                    async move {
                        let f = File::create(&bulk).await.unwrap();
                        let chunk = vec![7u8; 64 << 10];
                        for i in 0..1024u64 {
                            f.write_buffered(i * (64 << 10), &chunk).await.unwrap();
                        }
                    },
                ));
            }
            let crit = spawn(TaskCtx::new("log").critical(), async move {
                let f = File::create(&log).await.unwrap();
                sleep(5 * MS).await;
                let mut waited = 0;
                for i in 0..100u64 {
                    let t0 = now();
                    f.write_buffered(i * 8192, &[1u8; 8192]).await.unwrap();
                    waited += now() - t0;
                    sleep(200 * US).await;
                }
                waited
            });
            let waited = crit.await;
            for h in bg {
                h.await;
            }
            waited
        })
        .map_err(|e| e.to_string())?;
    Ok(out.value)
}

/// Bulk buffered writers beside the critical writer in [`dirty_limits`].
const BULK_WRITERS: usize = 4;

fn writeback_wait(real: Option<&str>, inherit: Inherit, run: usize) -> Result<u64, String> {
    let (bulk, table) = (name("wbulk", run), name("table", run));
    let out = builder(real)
        .inherit(inherit)
        .cache(CacheConfig::default())
        .build()
        .map_err(|e| e.to_string())?
        .run(move || async move {
            let bulk = spawn(TaskCtx::new("bulk"), async move {
                let f = File::create(&bulk).await.unwrap();
                let end = now() + 20 * MS;
                let mut q = VecDeque::new();
                let mut off = 0;
                while now() < end {
                    while q.len() < 32 {
                        q.push_back(f.submit(
                            Op::Write,
                            DmaBuffer::new(128 << 10),
                            off,
                            IoOptions::new(),
                        ));
                        off = (off + (128 << 10)) % (256 << 20);
                    }
                    q.pop_front().unwrap().await.0.unwrap();
                }
                for h in q {
                    h.await.0.unwrap();
                }
            });
            let f = File::create(&table).await.unwrap();
            let checkpoint = spawn(TaskCtx::new("checkpoint"), async move {
                sleep(2 * MS).await;
                f.write_buffered(0, &[1u8; 4096]).await.unwrap();
                f.fsync().await.unwrap();
            });
            let crit = spawn(TaskCtx::new("update").critical(), async move {
                sleep(2 * MS + 50 * US).await;
                let t0 = now();
                f.write_buffered(0, &[2u8; 4096]).await.unwrap();
                now() - t0
            });
            let waited = crit.await;
            checkpoint.await;
            bulk.await;
            waited
        })
        .map_err(|e| e.to_string())?;
    Ok(out.value)
}

/// Remove the files the example created in `dir`.
fn clean(dir: &str) {
    let prefix = format!("sluice-page-cache-{}-", std::process::id());
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.file_name().to_string_lossy().starts_with(&prefix) {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
}

fn effects(real: Option<&str>) -> Result<(), String> {
    let r = measure_effects(real);
    if let Some(dir) = real {
        clean(dir);
    }
    r
}

fn measure_effects(real: Option<&str>) -> Result<(), String> {
    let world = real.map_or("simulated nand".to_string(), |d| {
        format!("real files in {d}")
    });
    println!("page cache effects on {world} (policy rcp)");
    let on = dirty_limits(real, true, 0)?;
    let off = dirty_limits(real, false, 1)?;
    println!(
        "  critical writer's total write time, 100 × 8 KiB beside 4 bulk writers: class limits on {:.3} ms, off {:.3} ms",
        on as f64 / 1e6,
        off as f64 / 1e6
    );
    let on = writeback_wait(real, Inherit::ON, 2)?;
    let off = writeback_wait(real, Inherit::OFF, 3)?;
    println!(
        "  critical rewrite of a page under writeback: inheritance on {:.1} µs, off {:.1} µs",
        on as f64 / 1e3,
        off as f64 / 1e3
    );
    Ok(())
}

const HIT_PAGES: u64 = 8192; // 32 MiB
const HIT_READS: u64 = 1_000_000;

fn next(x: &mut u64) -> u64 {
    // xorshift64*: the same page sequence for both contenders.
    *x ^= *x >> 12;
    *x ^= *x << 25;
    *x ^= *x >> 27;
    x.wrapping_mul(0x2545_F491_4F6C_DD1D)
}

/// Reads per second from the runtime's cache (warm), and the file's name.
fn cache_hits(dir: &str, run: usize) -> Result<(f64, String), String> {
    let file = name("hits", run);
    let f2 = file.clone();
    let out = Stack::builder()
        .directory(dir)
        .cores(1)
        .cache(CacheConfig {
            pages: HIT_PAGES as usize + 64,
            ..CacheConfig::default()
        })
        .build()
        .map_err(|e| e.to_string())?
        .run(move || async move {
            let f = File::create(&f2).await.unwrap();
            let chunk = DmaBuffer::from_slice(&vec![5u8; 1 << 20]);
            let mut chunk = Some(chunk);
            for i in 0..HIT_PAGES / 256 {
                let (r, b) = f.write_at(chunk.take().unwrap(), i << 20).await;
                r.unwrap();
                chunk = Some(b);
            }
            let mut page = [0u8; 4096];
            for p in 0..HIT_PAGES {
                f.read_buffered(p * 4096, &mut page).await.unwrap();
            }
            let mut x = 88172645463325252u64;
            let t0 = Instant::now();
            for _ in 0..HIT_READS {
                let p = next(&mut x) % HIT_PAGES;
                f.read_buffered(p * 4096, &mut page).await.unwrap();
            }
            HIT_READS as f64 / t0.elapsed().as_secs_f64()
        })
        .map_err(|e| e.to_string())?;
    Ok((out.value, file))
}

/// Reads per second with `pread` through the host's page cache (warm).
fn host_preads(path: &std::path::Path) -> Result<f64, String> {
    let f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut page = [0u8; 4096];
    for p in 0..HIT_PAGES {
        f.read_exact_at(&mut page, p * 4096)
            .map_err(|e| e.to_string())?;
    }
    let mut x = 88172645463325252u64;
    let t0 = Instant::now();
    for _ in 0..HIT_READS {
        let p = next(&mut x) % HIT_PAGES;
        f.read_exact_at(&mut page, p * 4096)
            .map_err(|e| e.to_string())?;
    }
    Ok(HIT_READS as f64 / t0.elapsed().as_secs_f64())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn hits(dir: &str) -> Result<(), String> {
    println!("4 KiB random reads, 32 MiB file, {HIT_READS} reads per round, 5 rounds");
    let (mut ours, mut host) = (Vec::new(), Vec::new());
    for round in 0..5 {
        let (iops, file) = cache_hits(dir, 10 + round)?;
        let path = std::path::Path::new(dir).join(&file);
        let h = host_preads(&path)?;
        std::fs::remove_file(&path).map_err(|e| e.to_string())?;
        println!(
            "  round {round}: runtime cache {:.2} M reads/s, host pread {:.2} M reads/s",
            iops / 1e6,
            h / 1e6
        );
        ours.push(iops);
        host.push(h);
    }
    let (o, h) = (median(ours), median(host));
    println!(
        "median: runtime cache {:.2} M reads/s, host pread {:.2} M reads/s, ratio {:.2} (goal ≥ 1.0)",
        o / 1e6,
        h / 1e6,
        o / h
    );
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let real = args
        .iter()
        .position(|a| a == "--real")
        .map(|i| args.get(i + 1).cloned());
    let real = match real {
        Some(None) => {
            eprintln!("--real needs a directory");
            return ExitCode::from(2);
        }
        Some(Some(d)) => Some(d),
        None => None,
    };
    let r = match (args.first().map(String::as_str), real.as_deref()) {
        (Some("effects"), r) => effects(r),
        (Some("hits"), Some(dir)) => hits(dir),
        (Some("hits"), None) => {
            Err("hits compares with the host's page cache: give --real DIR".into())
        }
        _ => Err("usage: page_cache effects [--real DIR] | page_cache hits --real DIR".into()),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("page_cache: {e}");
            ExitCode::FAILURE
        }
    }
}
