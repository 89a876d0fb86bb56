//! Group commit: N tasks (16 by default) each append 4 KiB records to their own file
//! and fsync after every one, all at once. A journal that commits many fsyncs in one
//! transaction (jbd2's group commit; the store's compound mode, whose journal task
//! closes the running transaction with every change made while the previous commit was
//! in flight) turns N concurrent fsyncs into one commit; FastResponse's f-transactions
//! are one per fsync, one at a time. The figure is fsyncs per second over all tasks,
//! on the store's modes and, as the baseline users would otherwise have, on the stack's
//! own files (on a real directory: files on the host's file system, ext4 here, each
//! write + fsync a real one; the kernel's journal does the group commit). With
//! `--kernel` on real files, the same work also runs as N plain threads calling
//! `pwrite` and `fsync` through the host kernel's page cache (a program not built on
//! sluice).
//!
//! The writers are normal-class tasks by default (in fjournal mode their fsyncs are
//! then normal commits, as in compound mode); `--critical` makes them critical, so
//! that fjournal commits an f-transaction per fsync.
//!
//! ```sh
//! cargo run --release --example group_commit                       # simulated ull
//! cargo run --release --example group_commit -- --real DIR         # files in DIR
//! cargo run --release --example group_commit -- --tasks 4 --ops 100 --critical
//! cargo run --release --example group_commit -- --real DIR --kernel
//! ```

use std::process::ExitCode;

use sluice::runtime::{now, spawn, CacheConfig, IoClass, Stack, TaskCtx};
use sluice::store::{Fs, FsConfig};

struct Args {
    real: Option<String>,
    device: String,
    tasks: usize,
    ops: u64,
    critical: bool,
    kernel: bool,
    fss: Vec<FsConfig>,
}

/// The same work as N OS threads on the host kernel's page cache in a new
/// subdirectory of `dir`: fsyncs per second and the mean fsync latency (ns).
fn run_kernel(a: &Args, dir: &str) -> Result<(f64, f64), String> {
    use std::os::unix::fs::FileExt;
    let sub = format!("{dir}/sluice-group-commit-{}-kernel", std::process::id());
    std::fs::create_dir(&sub).map_err(|e| format!("{sub}: {e}"))?;
    let t0 = std::time::Instant::now();
    let hs: Vec<_> = (0..a.tasks)
        .map(|t| {
            let (path, ops) = (format!("{sub}/w{t}"), a.ops);
            std::thread::spawn(move || -> std::io::Result<u64> {
                let f = std::fs::File::create(path)?;
                let mut sum = 0u64;
                for i in 0..ops {
                    f.write_all_at(&[t as u8; 4096], i * 4096)?;
                    let t1 = std::time::Instant::now();
                    f.sync_all()?;
                    sum += t1.elapsed().as_nanos() as u64;
                }
                Ok(sum)
            })
        })
        .collect();
    let mut r = Ok(0u64);
    for h in hs {
        match h.join().expect("a writer thread panicked") {
            Ok(s) => r = r.map(|x| x + s),
            Err(e) => r = Err(format!("{sub}: {e}")),
        }
    }
    let secs = t0.elapsed().as_secs_f64();
    let _ = std::fs::remove_dir_all(&sub);
    let n = (a.tasks as u64 * a.ops) as f64;
    r.map(|sum| (n / secs, sum as f64 / n))
}

/// Fsyncs per second over all tasks, and the mean fsync latency (ns); real files go
/// in a new subdirectory `k` of the run's directory, removed afterwards.
fn run(a: &Args, fs: FsConfig, k: usize) -> Result<(f64, f64), String> {
    let sub = a
        .real
        .as_ref()
        .map(|d| format!("{d}/sluice-group-commit-{}-{k}", std::process::id()));
    if let Some(d) = &sub {
        std::fs::create_dir(d).map_err(|e| format!("{d}: {e}"))?;
    }
    let r = run_in(a, fs, sub.as_deref());
    if let Some(d) = &sub {
        let _ = std::fs::remove_dir_all(d);
    }
    r
}

fn run_in(a: &Args, fs: FsConfig, dir: Option<&str>) -> Result<(f64, f64), String> {
    let b = Stack::builder().policy("none");
    let b = match dir {
        Some(dir) => b.directory(dir).cores(1),
        None => b.device(&a.device),
    };
    let b = match fs {
        FsConfig::Host => b.cache(CacheConfig::default()),
        FsConfig::Store { .. } => b,
    };
    let (tasks, ops) = (a.tasks, a.ops);
    let class = if a.critical {
        IoClass::Critical
    } else {
        IoClass::Normal
    };
    let out = b
        .build()
        .map_err(|e| e.to_string())?
        .run(move || async move {
            let files = Fs::mount(&fs).await.map_err(|e| e.to_string())?;
            let t0 = now();
            let mut hs = Vec::new();
            for t in 0..tasks {
                let f = files
                    .create(&format!("w{t}"))
                    .await
                    .map_err(|e| e.to_string())?;
                hs.push(spawn(
                    TaskCtx::new(format!("w{t}")).class(class),
                    async move {
                        let mut sum = 0u64;
                        for i in 0..ops {
                            f.write_buffered(i * 4096, &[t as u8; 4096])
                                .await
                                .map_err(|e| e.to_string())?;
                            let t1 = now();
                            f.fsync().await.map_err(|e| e.to_string())?;
                            sum += now() - t1;
                        }
                        Ok::<u64, String>(sum)
                    },
                ));
            }
            let mut sum = 0u64;
            for h in hs {
                sum += h.await?;
            }
            let n = (tasks as u64 * ops) as f64;
            let secs = (now() - t0).max(1) as f64 / 1e9;
            Ok::<(f64, f64), String>((n / secs, sum as f64 / n))
        })
        .map_err(|e| e.to_string())?;
    out.value
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        real: None,
        device: "ull".into(),
        tasks: 16,
        ops: 200,
        critical: false,
        kernel: false,
        fss: Vec::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut val = || {
            it.next().ok_or_else(|| {
                format!("{k} needs a value (see the header of examples/group_commit.rs)")
            })
        };
        match k.as_str() {
            "--real" => a.real = Some(val()?),
            "--device" => a.device = val()?,
            "--tasks" => {
                a.tasks = val()?
                    .parse()
                    .ok()
                    .filter(|&n| (1..=1000).contains(&n))
                    .ok_or("--tasks: give 1 to 1000")?
            }
            "--ops" => {
                a.ops = val()?
                    .parse()
                    .ok()
                    .filter(|&n| (1..=1000).contains(&n))
                    .ok_or("--ops: give 1 to 1000")?
            }
            "--critical" => a.critical = true,
            "--kernel" => a.kernel = true,
            "--fs" => a.fss.push(val()?.parse()?),
            other => {
                return Err(format!(
                    "unknown option '{other}': use --real DIR, --device NAME, --tasks N, --ops N, --critical, --kernel, --fs host|compound|fjournal[+async]"
                ))
            }
        }
    }
    if a.kernel && a.real.is_none() {
        return Err("--kernel runs the work on the host kernel's page cache, which only real files have: give --real DIR too".into());
    }
    if a.fss.is_empty() {
        a.fss = ["host", "compound", "fjournal", "compound+async"]
            .iter()
            .map(|s| s.parse().expect("known"))
            .collect();
    }
    Ok(a)
}

fn main() -> ExitCode {
    let a = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("group_commit: {e}");
            return ExitCode::from(2);
        }
    };
    let place = a.real.clone().map_or_else(
        || format!("simulated {}", a.device),
        |d| format!("files in {d}"),
    );
    println!(
        "group commit: {} {} tasks × {} × (4 KiB append + fsync), {place}",
        a.tasks,
        if a.critical { "critical" } else { "normal" },
        a.ops
    );
    let mut host = None;
    for (k, fs) in a.fss.iter().enumerate() {
        match run(&a, fs.clone(), k) {
            Ok((rate, mean)) => {
                let vs = match (fs, host) {
                    (FsConfig::Host, _) => {
                        host = Some(rate);
                        String::new()
                    }
                    (_, Some(h)) => format!("   {:.2} × host", rate / h),
                    _ => String::new(),
                };
                println!(
                    "  {:<15} {rate:>10.0} fsyncs/s   mean fsync {:>9.1} µs{vs}",
                    fs.to_string(),
                    mean / 1e3
                );
            }
            Err(e) => {
                eprintln!("group_commit: {fs}: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    if let (true, Some(dir)) = (a.kernel, a.real.as_deref()) {
        match run_kernel(&a, dir) {
            Ok((rate, mean)) => {
                let vs = host.map_or(String::new(), |h| format!("   {:.2} × host", rate / h));
                println!(
                    "  {:<15} {rate:>10.0} fsyncs/s   mean fsync {:>9.1} µs{vs}",
                    "kernel",
                    mean / 1e3
                );
            }
            Err(e) => {
                eprintln!("group_commit: kernel: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}
