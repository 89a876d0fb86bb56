//! fillsync on the journaled store: a critical task appends 4 KiB records to a log
//! (buffered) and fsyncs each (RocksDB db_bench's fillsync), beside bulk writers that
//! keep rewriting their own 4 MiB files with buffered 256 KiB writes and fsync every
//! 1 MiB while the log runs (FastResponse ICS '22 Table 1's co-runners). The log's fsync latency with compound commits (jbd2-like: the whole
//! running transaction, the others' ordered data included) against file-level
//! f-transactions (FastResponse's fjournal: the log's inode alone), each with the
//! synchronous commit path (data, then journal blocks) and AIOS's asynchronous one
//! (journal blocks written while the data is in flight).
//!
//! ```sh
//! cargo run --release --example store_fsync                    # simulated ull, policy rcp
//! cargo run --release --example store_fsync -- --device nand   # a volatile write cache
//! cargo run --release --example store_fsync -- --real DIR      # a store file in DIR
//! cargo run --release --example store_fsync -- --alone         # no co-runners
//! ```

use std::cell::Cell;
use std::process::ExitCode;
use std::rc::Rc;

use sluice::runtime::{now, spawn, File, IoClass, Stack, StackBuilder, TaskCtx};
use sluice::store::{CommitMode, FsyncPath, Geometry, Store};

const RECORDS: usize = 400;

fn builder(real: Option<&str>, device: &str) -> StackBuilder {
    let b = Stack::builder().policy("rcp");
    match real {
        Some(dir) => b.directory(dir).cores(1),
        None => b.device(device),
    }
}

fn run(
    real: Option<&str>,
    device: &str,
    mode: CommitMode,
    path: FsyncPath,
    bulk_writers: usize,
    img: &str,
) -> Result<Vec<u64>, String> {
    let img = img.to_string();
    let out = builder(real, device)
        .build()
        .map_err(|e| e.to_string())?
        .run(move || async move {
            let f = File::create(&img).await.unwrap();
            Store::mkfs(&f, Geometry::new(65536)).await.unwrap();
            let s = Store::mount(&f, mode).await.unwrap();
            s.set_fsync_path(path);
            let log = s.create("log").unwrap();
            let done = Rc::new(Cell::new(false));
            let mut bulk = Vec::new();
            for w in 0..bulk_writers {
                let (s, done) = (s.clone(), done.clone());
                bulk.push(spawn(TaskCtx::new(format!("bulk{w}")), async move {
                    // 4 MiB files rewritten in place while the log runs.
                    let file = s.create(&format!("bulk{w}")).unwrap();
                    let chunk = vec![w as u8; 256 << 10];
                    let mut i = 0u64;
                    while !done.get() {
                        s.write_buffered(file, i % 16 * (256 << 10), &chunk)
                            .await
                            .unwrap();
                        if i % 4 == 3 {
                            s.fsync(file).await.unwrap();
                        }
                        i += 1;
                    }
                }));
            }
            let s2 = s.clone();
            let fillsync = spawn(
                TaskCtx::new("fillsync").class(IoClass::Critical),
                async move {
                    let mut lat = Vec::with_capacity(RECORDS);
                    for i in 0..RECORDS as u64 {
                        s2.write_buffered(log, i * 4096, &[i as u8; 4096])
                            .await
                            .unwrap();
                        let t0 = now();
                        s2.fsync(log).await.unwrap();
                        lat.push(now() - t0);
                    }
                    lat
                },
            );
            let lat = fillsync.await;
            done.set(true);
            for b in bulk {
                b.await;
            }
            lat
        })
        .map_err(|e| e.to_string())?;
    Ok(out.value)
}

fn summary(name: &str, mut v: Vec<u64>) -> (f64, f64) {
    v.sort_unstable();
    let mean = v.iter().sum::<u64>() as f64 / v.len() as f64;
    let p99 = v[(v.len() * 99 / 100).min(v.len() - 1)] as f64;
    println!(
        "  {name:<15} fsync mean {:>8.1} µs   p99 {:>8.1} µs",
        mean / 1e3,
        p99 / 1e3
    );
    (mean, p99)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let alone = args.iter().any(|a| a == "--alone");
    let args: Vec<&String> = args.iter().filter(|a| *a != "--alone").collect();
    let (real, device) = match args.as_slice() {
        [] => (None, "ull".to_string()),
        [flag, v] if *flag == "--real" => (Some(v.to_string()), String::new()),
        [flag, v] if *flag == "--device" => (None, v.to_string()),
        _ => {
            eprintln!("usage: store_fsync [--device PROFILE | --real DIR] [--alone]");
            return ExitCode::from(2);
        }
    };
    let bulk = if alone { 0 } else { 2 };
    let world = real.as_deref().map_or(format!("simulated {device}"), |d| {
        format!("a store file in {d}")
    });
    println!("fillsync ({RECORDS} × 4 KiB append + fsync) beside {bulk} bulk writers, on {world}");
    let pid = std::process::id();
    let mut res = Vec::new();
    let runs = [
        (CommitMode::Compound, FsyncPath::Sync, "compound"),
        (CommitMode::Compound, FsyncPath::Async, "compound+async"),
        (CommitMode::FileLevel, FsyncPath::Sync, "fjournal"),
        (CommitMode::FileLevel, FsyncPath::Async, "fjournal+async"),
    ];
    for (k, (mode, path, name)) in runs.into_iter().enumerate() {
        let img = format!("sluice-store-{pid}-{k}.img");
        let r = run(real.as_deref(), &device, mode, path, bulk, &img);
        if let Some(dir) = &real {
            let _ = std::fs::remove_file(std::path::Path::new(dir).join(&img));
        }
        match r {
            Ok(v) => res.push(summary(name, v)),
            Err(e) => {
                eprintln!("store_fsync: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    let pct = |a: f64, b: f64| (a / b - 1.0) * 100.0;
    let ((cm, cp), (fm, fp)) = (res[0], res[2]);
    println!(
        "fjournal vs compound: mean {:+.0} %, p99 {:+.0} % (FastResponse reports −58 % mean, −74 % p99.9 on ext4)",
        pct(fm, cm),
        pct(fp, cp)
    );
    println!(
        "asynchronous vs synchronous commit path: compound mean {:+.0} %, fjournal mean {:+.0} %",
        pct(res[1].0, cm),
        pct(res[3].0, fm)
    );
    ExitCode::SUCCESS
}
