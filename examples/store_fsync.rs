//! fillsync on the journaled store: a critical task appends records (4 KiB, or `--record BYTES`) to a log
//! (buffered) and fsyncs each (RocksDB db_bench's fillsync), beside bulk writers that
//! keep rewriting their own 4 MiB files with buffered 256 KiB writes and fdatasync every
//! 1 MiB while the log runs (FastResponse ICS '22 Table 1's co-runners). The log's fsync
//! latency with compound commits (jbd2-like: the whole running transaction, the
//! others' ordered data included) against file-level f-transactions (FastResponse's
//! fjournal: the log's inode alone), each with the synchronous commit path (data, then
//! journal blocks) and AIOS's asynchronous one (journal blocks written while the data
//! is in flight) — and, as baselines, the same program on the stack's own files
//! (no journal; buffered writes through the runtime's page cache, then `fdatasync` of
//! the host file) and, with `--kernel` on real files, the same program as plain
//! threads calling `pwrite` and `fsync` through the host kernel's page cache (what a
//! program not built on sluice does on ext4). Beside the bulk writers each line also
//! gives what they wrote per second while the log ran: the other side of the log's
//! latency (RCP's limit on non-critical requests at the device trades one for the
//! other).
//!
//! The program is written once against `sluice::store::Fs`: which files it runs on is
//! the one setting `--fs` (`host`, `compound`, `fjournal`, `compound+async`,
//! `fjournal+async`; give several, or none for all five).
//!
//! ```sh
//! cargo run --release --example store_fsync                    # simulated ull, policy rcp
//! cargo run --release --example store_fsync -- --device nand   # a volatile write cache
//! cargo run --release --example store_fsync -- --real DIR      # files in DIR
//! cargo run --release --example store_fsync -- --alone         # no co-runners
//! cargo run --release --example store_fsync -- --fs host --fs fjournal
//! cargo run --release --example store_fsync -- --class-limits # RCP's limits in the store
//! cargo run --release --example store_fsync -- --real DIR --kernel  # + the kernel's path
//! cargo run --release --example store_fsync -- --real DIR --kernel --kernel-first  # it first
//! cargo run --release --example store_fsync -- --record 512    # a WAL's small records
//! cargo run --release --example store_fsync -- --records 2000 # a steadier p99 (default 400)
//! cargo run --release --example store_fsync -- --fs fjournal+async+inline  # data in the record
//! cargo run --release --example store_fsync -- --policy ld    # FastResponse's block layer
//! ```

use std::cell::Cell;
use std::process::ExitCode;
#[path = "common/scratch.rs"]
mod scratch;

use std::rc::Rc;

use sluice::runtime::{now, spawn, CacheConfig, IoClass, Stack, StackBuilder, TaskCtx};
use sluice::store::{Fs, FsConfig};

/// Records appended and fsynced per setting by default (`--records`).
const RECORDS: usize = 400;

fn builder(real: Option<&str>, device: &str, policy: &str, fs: &FsConfig) -> StackBuilder {
    let b = Stack::builder().policy(policy);
    let b = match real {
        Some(dir) => b.directory(dir).cores(1),
        None => b.device(device),
    };
    match fs {
        // The stack's own files buffer in the runtime's page cache.
        FsConfig::Host => b.cache(CacheConfig::default()),
        FsConfig::Store { .. } => b,
    }
}

/// The program's shape, the same on every side.
#[derive(Clone, Copy)]
struct Shape {
    /// Bulk writers beside the log (0 with `--alone`).
    bulk_writers: usize,
    /// Bytes per appended record.
    record: usize,
    /// Records appended and fsynced.
    records: usize,
}

/// The program: the same whatever the files are. Returns the log's fsync latencies and
/// the bulk writers' bytes per second while the log ran (what their writes returned).
async fn fillsync(fs: Fs, shape: Shape) -> (Vec<u64>, f64) {
    let Shape {
        bulk_writers,
        record,
        records,
    } = shape;
    let log = fs.create("log").await.unwrap();
    let done = Rc::new(Cell::new(false));
    let written = Rc::new(Cell::new(0u64));
    let mut bulk = Vec::new();
    for w in 0..bulk_writers {
        let (fs, done, written) = (fs.clone(), done.clone(), written.clone());
        bulk.push(spawn(TaskCtx::new(format!("bulk{w}")), async move {
            // 4 MiB files rewritten in place while the log runs.
            let file = fs.create(&format!("bulk{w}")).await.unwrap();
            let chunk = vec![w as u8; 256 << 10];
            let mut i = 0u64;
            while !done.get() {
                file.write_buffered(i % 16 * (256 << 10), &chunk)
                    .await
                    .unwrap();
                written.set(written.get() + chunk.len() as u64);
                if i % 4 == 3 {
                    file.fdatasync().await.unwrap();
                }
                i += 1;
            }
        }));
    }
    let (start, at_start) = (now(), written.get());
    let fillsync = spawn(
        TaskCtx::new("fillsync").class(IoClass::Critical),
        async move {
            let mut lat = Vec::with_capacity(records);
            for i in 0..records as u64 {
                log.write_buffered(i * record as u64, &vec![i as u8; record])
                    .await
                    .unwrap();
                let t0 = now();
                log.fsync().await.unwrap();
                lat.push(now() - t0);
            }
            lat
        },
    );
    let lat = fillsync.await;
    let rate = (written.get() - at_start) as f64 / ((now() - start).max(1) as f64 / 1e9);
    done.set(true);
    for b in bulk {
        b.await;
    }
    (lat, rate)
}

fn run(
    real: Option<&str>,
    device: &str,
    policy: &str,
    fs: FsConfig,
    shape: Shape,
    class_limits: bool,
) -> Result<(Vec<u64>, f64, Option<String>), String> {
    let out = builder(real, device, policy, &fs)
        .build()
        .map_err(|e| e.to_string())?
        .run(move || async move {
            let files = Fs::mount(&fs).await.unwrap();
            if let Some(s) = files.store() {
                s.set_class_limits(class_limits);
            }
            let store = files.store().cloned();
            let (lat, rate) = fillsync(files, shape).await;
            // Where the critical fsyncs' time went (FastResponse Fig. 15(b)'s parts).
            let parts = store.map(|s| {
                let b = s.fsync_breakdown();
                let [wait, data, journal, commit, wake, _] = b.means();
                let st = s.stats();
                // The log's layout: appends of partial blocks move the last block.
                let extents = s
                    .open("log")
                    .and_then(|f| {
                        let e = s.stat(f).map(|x| x.extents);
                        s.close(f)?;
                        e
                    })
                    .unwrap_or(0);
                format!(
                    "{:>19}wait {:.1} / data {:.1} / journal {:.1} / commit {:.1} / wake {:.1} µs; \
                     {} seals, {} two-flush commits, {} redirects, {} blocks logged inline; \
                     the log in {} extents",
                    "",
                    wait / 1e3,
                    data / 1e3,
                    journal / 1e3,
                    commit / 1e3,
                    wake / 1e3,
                    st.seals,
                    st.two_flush,
                    st.redirected,
                    st.inline_blocks,
                    extents
                ) + &b
                    .tail_means(0.01)
                    .map(|(n, [wait, data, journal, commit, wake, total])| {
                        format!(
                            "\n{:>19}the slowest 1 % ({n}, mean {:.1} µs): wait {:.1} / data {:.1} / \
                             journal {:.1} / commit {:.1} / wake {:.1} µs",
                            "",
                            total / 1e3,
                            wait / 1e3,
                            data / 1e3,
                            journal / 1e3,
                            commit / 1e3,
                            wake / 1e3
                        )
                    })
                    .unwrap_or_default()
            });
            (lat, rate, parts)
        })
        .map_err(|e| e.to_string())?;
    Ok(out.value)
}

/// The same program as plain OS threads on the host kernel's page cache, in `dir`:
/// `pwrite` + `fsync` of the log, bulk writers rewriting their files with `pwrite` and
/// `fdatasync` every 1 MiB.
fn kernel_fillsync(dir: &str, shape: Shape) -> std::io::Result<(Vec<u64>, f64)> {
    let Shape {
        bulk_writers,
        record,
        records,
    } = shape;
    use std::os::unix::fs::FileExt;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::Arc;
    let done = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicU64::new(0));
    let mut bulk = Vec::new();
    for w in 0..bulk_writers {
        let file = std::fs::File::create(format!("{dir}/bulk{w}"))?;
        let (done, written) = (done.clone(), written.clone());
        bulk.push(std::thread::spawn(move || -> std::io::Result<()> {
            let chunk = vec![w as u8; 256 << 10];
            let mut i = 0u64;
            while !done.load(Ordering::Relaxed) {
                file.write_all_at(&chunk, i % 16 * (256 << 10))?;
                written.fetch_add(chunk.len() as u64, Ordering::Relaxed);
                if i % 4 == 3 {
                    file.sync_data()?;
                }
                i += 1;
            }
            Ok(())
        }));
    }
    let log = std::fs::File::create(format!("{dir}/log"))?;
    let (start, at_start) = (std::time::Instant::now(), written.load(Ordering::Relaxed));
    let mut lat = Vec::with_capacity(records);
    let mut result = Ok(());
    for i in 0..records as u64 {
        if let Err(e) = log.write_all_at(&vec![i as u8; record], i * record as u64) {
            result = Err(e);
            break;
        }
        let t0 = std::time::Instant::now();
        if let Err(e) = log.sync_all() {
            result = Err(e);
            break;
        }
        lat.push(t0.elapsed().as_nanos() as u64);
    }
    let rate = (written.load(Ordering::Relaxed) - at_start) as f64
        / start.elapsed().as_secs_f64().max(1e-9);
    done.store(true, Ordering::Relaxed);
    for b in bulk {
        b.join().expect("a bulk writer panicked")?;
    }
    result.map(|()| (lat, rate))
}

/// Print a setting's line: the fsync latencies and, beside bulk writers (`Some`), what
/// they wrote per second meanwhile.
fn summary(name: &str, mut v: Vec<u64>, bulk_rate: Option<f64>) -> (f64, f64) {
    v.sort_unstable();
    let mean = v.iter().sum::<u64>() as f64 / v.len() as f64;
    let at = |q: usize| v[(v.len() * q / 100).min(v.len() - 1)] as f64 / 1e3;
    let p99 = at(99) * 1e3;
    let rate = bulk_rate.map_or(String::new(), |r| format!("   bulk {:>6.0} MB/s", r / 1e6));
    println!(
        "  {name:<15} fsync mean {:>8.1} µs   p50 {:>8.1} µs   p99 {:>8.1} µs{rate}",
        mean / 1e3,
        at(50),
        p99 / 1e3
    );
    (mean, p99)
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let (mut real, mut device, mut alone, mut fss) = (None, "ull".to_string(), false, Vec::new());
    let mut policy = "rcp".to_string();
    let (mut class_limits, mut kernel, mut record) = (false, false, 4096usize);
    let mut records = RECORDS;
    let mut kernel_first = false;
    let usage = "usage: store_fsync [--device PROFILE | --real DIR [--kernel [--kernel-first]]] [--policy SPEC] [--alone] [--class-limits] [--record BYTES] [--records N] [--fs host|compound[+async]|fjournal[+async][+inline]]...";
    while let Some(a) = args.next() {
        let mut value = || args.next().ok_or(usage);
        let r = match a.as_str() {
            "--alone" => {
                alone = true;
                Ok(())
            }
            // RCP's class-aware limits of the store's buffered data (the runtime's page
            // cache, `host`, has them on by default).
            "--class-limits" => {
                class_limits = true;
                Ok(())
            }
            "--kernel" => {
                kernel = true;
                Ok(())
            }
            // The kernel's path before the store's settings rather than after them (a
            // benchmark alternates the order between rounds: scripts/bench-store-fsync.sh).
            "--kernel-first" => {
                kernel_first = true;
                Ok(())
            }
            "--real" => value().map(|v| real = Some(v)),
            // Bytes per appended record (each fsynced): 4 KiB as db_bench's fillsync,
            // or a WAL's small records.
            "--record" => value().and_then(|v| match v.parse::<usize>() {
                Ok(n) if (1..=1 << 20).contains(&n) => {
                    record = n;
                    Ok(())
                }
                _ => {
                    eprintln!("store_fsync: --record {v}: give a byte count from 1 to 1048576");
                    Err(usage)
                }
            }),
            // Records per setting (default 400): a p99 of 400 fsyncs rests on its 4
            // slowest; more records steady it.
            "--records" => value().and_then(|v| match v.parse::<usize>() {
                Ok(n) if (100..=20_000).contains(&n) => {
                    records = n;
                    Ok(())
                }
                _ => {
                    eprintln!("store_fsync: --records {v}: give a count from 100 to 20000");
                    Err(usage)
                }
            }),
            "--device" => value().map(|v| device = v),
            // The block layer's policy (default rcp; ld for FastResponse's).
            "--policy" => value().map(|v| policy = v),
            "--fs" => value().and_then(|v| {
                v.parse::<FsConfig>().map(|c| fss.push(c)).map_err(|e| {
                    eprintln!("store_fsync: {e}");
                    usage
                })
            }),
            _ => Err(usage),
        };
        if let Err(u) = r {
            eprintln!("{u}");
            return ExitCode::from(2);
        }
    }
    if fss.is_empty() {
        fss = [
            "host",
            "compound",
            "compound+async",
            "fjournal",
            "fjournal+async",
        ]
        .iter()
        .map(|s| s.parse().expect("a known setting"))
        .collect();
    }
    if records * record > 64 << 20 {
        eprintln!(
            "store_fsync: --records {records} × --record {record} is a log of {} MiB; the store holds 256 MiB beside the bulk writers' files: keep the log within 64 MiB",
            (records * record) >> 20
        );
        return ExitCode::from(2);
    }
    if kernel_first && !kernel {
        eprintln!("store_fsync: --kernel-first orders the kernel's path, which only --kernel runs: give --kernel too");
        return ExitCode::from(2);
    }
    if kernel && real.is_none() {
        eprintln!("store_fsync: --kernel runs the program on the host kernel's page cache, which only real files have: give --real DIR too");
        return ExitCode::from(2);
    }
    let bulk = if alone { 0 } else { 2 };
    let shape = Shape {
        bulk_writers: bulk,
        record,
        records,
    };
    let world = real
        .as_deref()
        .map_or(format!("simulated {device}"), |d| format!("files in {d}"));
    println!(
        "fillsync ({records} × {record} B append + fsync) beside {bulk} bulk writers, on {world}"
    );
    let pid = std::process::id();
    let mut res: Vec<(String, f64, f64)> = Vec::new();
    // The same program as plain threads on the host kernel's page cache.
    let run_kernel = |res: &mut Vec<(String, f64, f64)>| -> Result<(), ExitCode> {
        let (true, Some(d)) = (kernel, real.as_deref()) else {
            return Ok(());
        };
        let sub = format!("{d}/sluice-store-fsync-{pid}-kernel");
        let dir = scratch::RunDir::new(
            std::path::Path::new(d),
            &format!("sluice-store-fsync-{pid}-kernel"),
        );
        let r = dir
            .map_err(std::io::Error::other)
            .and_then(|_dir| kernel_fillsync(&sub, shape));
        match r {
            Ok((v, rate)) => {
                let (mean, p99) = summary("kernel", v, (bulk > 0).then_some(rate));
                res.push(("kernel".into(), mean, p99));
                Ok(())
            }
            Err(e) => {
                eprintln!("store_fsync: {sub}: {e}");
                Err(ExitCode::FAILURE)
            }
        }
    };
    if kernel_first {
        if let Err(c) = run_kernel(&mut res) {
            return c;
        }
    }
    for (k, fs) in fss.into_iter().enumerate() {
        let name = fs.to_string();
        // Each run in a directory of its own (real files: a subdirectory of DIR).
        let dir = match real.as_deref().map(|d| {
            scratch::RunDir::new(
                std::path::Path::new(d),
                &format!("sluice-store-fsync-{pid}-{k}"),
            )
        }) {
            Some(Err(e)) => {
                eprintln!("store_fsync: {e}");
                return ExitCode::FAILURE;
            }
            d => d.map(Result::unwrap),
        };
        let sub = dir.as_ref().map(|d| d.path().display().to_string());
        let r = run(sub.as_deref(), &device, &policy, fs, shape, class_limits);
        drop(dir);
        match r {
            Ok((v, rate, parts)) => {
                let (mean, p99) = summary(&name, v, (bulk > 0).then_some(rate));
                if let Some(p) = parts {
                    println!("{p}");
                }
                res.push((name, mean, p99));
            }
            Err(e) => {
                eprintln!("store_fsync: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    if !kernel_first {
        if let Err(c) = run_kernel(&mut res) {
            return c;
        }
    }
    let get = |n: &str| res.iter().find(|r| r.0 == n).map(|r| (r.1, r.2));
    let pct = |a: f64, b: f64| (a / b - 1.0) * 100.0;
    if let (Some((cm, cp)), Some((fm, fp))) = (get("compound"), get("fjournal")) {
        println!(
            "fjournal vs compound: mean {:+.0} %, p99 {:+.0} % (FastResponse reports −58 % mean, −74 % p99.9 on ext4)",
            pct(fm, cm),
            pct(fp, cp)
        );
    }
    for m in ["compound", "fjournal"] {
        if let (Some((s, _)), Some((a, _))) = (get(m), get(&format!("{m}+async"))) {
            println!(
                "asynchronous vs synchronous commit path, {m}: mean {:+.0} %",
                pct(a, s)
            );
        }
    }
    ExitCode::SUCCESS
}
