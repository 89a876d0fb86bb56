//! Benchmark: 4 KiB random reads at a fixed depth issued through the runtime's API, on
//! real files (io_uring) or a simulated device. Prints the IOPS and the mean latency, to
//! set beside `sluice run` on the same job (`scripts/bench-runtime.sh` does both).
//!
//! ```sh
//! cargo run --release --example rt_randread -- --real DIR [--qd 32] [--secs 5] [--size-mb 1024] [--cores N] [--no-pool]
//! cargo run --release --example rt_randread -- --device ull
//! ```

use std::collections::VecDeque;
use std::process::ExitCode;

use sluice::runtime::{now, spawn_on, DmaBuffer, File, IoOptions, Op, Stack, TaskCtx};

struct Args {
    real: Option<String>,
    device: String,
    qd: usize,
    secs: u64,
    size_mb: u64,
    file: Option<String>,
    buffered: bool,
    cores: Option<u16>,
    no_pool: bool,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        real: None,
        device: "ull".into(),
        qd: 32,
        secs: 5,
        size_mb: 1024,
        file: None,
        buffered: false,
        cores: None,
        no_pool: false,
    };
    let v: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < v.len() {
        if v[i] == "--buffered" {
            a.buffered = true;
            i += 1;
            continue;
        }
        if v[i] == "--no-pool" {
            a.no_pool = true;
            i += 1;
            continue;
        }
        let val = v
            .get(i + 1)
            .ok_or(format!("option {} needs a value", v[i]))?;
        let num = || {
            val.parse::<u64>()
                .map_err(|_| format!("{} {val}: give a whole number", v[i]))
        };
        match v[i].as_str() {
            "--real" => a.real = Some(val.clone()),
            "--device" => a.device = val.clone(),
            "--qd" => a.qd = num()?.clamp(1, 256) as usize,
            "--secs" => a.secs = num()?.max(1),
            "--size-mb" => a.size_mb = num()?.max(1),
            "--file" => a.file = Some(val.clone()),
            "--cores" => {
                a.cores = Some(
                    u16::try_from(num()?).map_err(|_| format!("--cores {val}: give 1 to 1024"))?,
                )
            }
            other => return Err(format!("unknown option {other}; use --real DIR, --file NAME (an existing file of DIR, read-only), --buffered (no O_DIRECT: tmpfs), --no-pool (no registered buffers), --device NAME, --qd N, --secs N, --size-mb N, --cores N (the readers are spread over them)")),
        }
        i += 2;
    }
    Ok(a)
}

fn main() -> ExitCode {
    let a = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("rt_randread: {e}");
            return ExitCode::from(2);
        }
    };
    let mut b = Stack::builder().device(&a.device).policy("none");
    if let Some(d) = &a.real {
        b = b.directory(d).cores(1).direct(!a.buffered);
        if a.no_pool {
            b = b.buffer_pool(0, 0);
        }
    } else if a.no_pool || a.buffered {
        eprintln!("rt_randread: --no-pool and --buffered are for --real DIR");
        return ExitCode::from(2);
    }
    if let Some(c) = a.cores {
        b = b.cores(c);
    }
    let cores = a.cores.map(u64::from);
    let stack = match b.build() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("rt_randread: {e}");
            return ExitCode::from(2);
        }
    };
    let (qd, secs, size) = (a.qd, a.secs, a.size_mb << 20);
    let existing = a.file.clone();
    let out = stack.run(move || async move {
        let f = match &existing {
            Some(name) => File::open(name).await.unwrap(),
            None => {
                let f = File::create("rt-randread.data").await.unwrap();
                // Lay the file out (1 MiB writes, 8 in flight).
                let mut q = VecDeque::new();
                for off in (0..size).step_by(1 << 20) {
                    if q.len() == 8 {
                        let h: sluice::runtime::IoHandle = q.pop_front().unwrap();
                        h.await.0.unwrap();
                    }
                    q.push_back(f.submit(
                        Op::Write,
                        DmaBuffer::new(1 << 20),
                        off,
                        IoOptions::new(),
                    ));
                }
                for h in q {
                    h.await.0.unwrap();
                }
                f
            }
        };
        let size = if existing.is_some() {
            f.len() / 4096 * 4096
        } else {
            size
        };
        // Random 4 KiB reads at depth qd for `secs`: qd tasks, each one read at a time,
        // dealt to the cores round robin.
        let blocks = size / 4096;
        let t0 = now();
        let end = t0 + secs * 1_000_000_000;
        let mut tasks = Vec::with_capacity(qd);
        for k in 0..qd as u64 {
            let ctx = TaskCtx::new(format!("reader{k}")).flow("readers");
            let ctx = match cores {
                Some(c) => ctx.core((k % c) as u16),
                None => ctx,
            };
            tasks.push(spawn_on(ctx, move || async move {
                let mut x: u64 =
                    0x9E37_79B9_7F4A_7C15 ^ (k + 1).wrapping_mul(0xA24B_AED4_963E_E407);
                let mut buf = DmaBuffer::new(4096);
                let mut ios = 0u64;
                while now() < end {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let (r, b) = f.read_at(buf, (x % blocks) * 4096).await;
                    r.unwrap();
                    buf = b;
                    ios += 1;
                }
                ios
            }));
        }
        let mut ios = 0;
        for t in tasks {
            ios += t.await;
        }
        (ios, now() - t0)
    });
    let out = match out {
        Ok(o) => o,
        Err(e) => {
            eprintln!("rt_randread: {e}");
            return ExitCode::from(1);
        }
    };
    let (ios, ns) = out.value;
    let lat = out
        .report
        .jobs
        .iter()
        .find(|j| j.jobname == "readers/other")
        .map_or(0.0, |j| j.read.lat_ns.mean);
    println!(
        "runtime randread qd={qd}: {ios} I/Os in {:.2} s = {:.0} IOPS, mean latency {:.1} µs",
        ns as f64 / 1e9,
        ios as f64 * 1e9 / ns as f64,
        lat / 1e3
    );
    if let (Some(d), None) = (&a.real, &a.file) {
        let _ = std::fs::remove_file(std::path::Path::new(d).join("rt-randread.data"));
    }
    ExitCode::SUCCESS
}
