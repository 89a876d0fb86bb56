//! readrandom beside throughput co-runners on the journaled store: FastResponse's read
//! path (Li et al., ICS '22, §4.4, Fig. 15(a)), where a critical read's time goes.
//!
//! * **readrandom** (RocksDB db_bench's, a critical task): a 4 KiB read at a random
//!   block of a 4 MiB file every `interval_us` (FastResponse sends 2 000 requests per
//!   second), through the store (no read cache: every read goes to the device); its
//!   latency is the read's, from its arrival.
//! * **co-runners**: fillsync's ([`crate::fillsync`]): Table 1's 128 KiB reads and
//!   buffered writes at their arrival intervals, CPU per request, an fsync every
//!   `fsync_every` writes.
//!
//! The breakdown comes from the stack's per-I/O samples of the critical class (only the
//! reader is critical here): the block layer (submit → dispatch, the paper's T_Blk),
//! the device (dispatch → device done, T_Dev) and the time until the reading task runs
//! again (device done → reaped: the completion's handling and the wait for a core);
//! the reader measures its own wait from a read's arrival until it runs (its timer's
//! wake-up and the wait for a core). The two waits are the paper's T_Sched, "the
//! waiting time due to process scheduling"; the rest of a read's latency is the
//! store's and the runtime's work around the I/O (the paper's T_FS and T_PC together).

use std::cell::Cell;
use std::rc::Rc;

use sluice_runtime::{now, sleep, spawn, IoClass, TaskCtx, Wakeup};
use sluice_store::{CommitMode, FsFile};

use crate::fillsync::{mount, spawn_corunners, stack_builder, CoRunner, FillsyncConfig, Latencies};

const MS: u64 = 1_000_000;
const US: u64 = 1_000;
/// The reader's file: 4 MiB (a co-runner's file size, Table 1).
const FILE: u64 = 4 << 20;
/// A read: 4 KiB (RocksDB's values, §4.1).
const READ: usize = 4096;

/// One of Fig. 15(a)'s schemes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadScheme {
    /// Its name (the paper's).
    pub name: &'static str,
    /// Block-layer policy.
    pub policy: &'static str,
    /// Run-queue order.
    pub wakeup: Wakeup,
}

impl ReadScheme {
    /// Fig. 15(a)'s vanilla, B-Opt (LD) and BS-Opt (LD + critical wakeup); BSJ-Opt's
    /// fjournal is not on the read path, SelectISR (polling) is not modelled.
    pub fn fig15a() -> [ReadScheme; 3] {
        [
            ReadScheme {
                name: "vanilla",
                policy: "none",
                wakeup: Wakeup::Fifo,
            },
            ReadScheme {
                name: "B-Opt",
                policy: "ld",
                wakeup: Wakeup::Fifo,
            },
            ReadScheme {
                name: "BS-Opt",
                policy: "ld",
                wakeup: Wakeup::Critical,
            },
        ]
    }
}

/// Means per critical read, ns.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ReadBreakdown {
    /// The read's latency from its arrival.
    pub total: f64,
    /// Submit → dispatch (T_Blk).
    pub block: f64,
    /// Dispatch → device done (T_Dev).
    pub device: f64,
    /// Device done → the reading task runs (the I/O's part of T_Sched).
    pub sched: f64,
    /// The read's arrival → the reading task runs (its timer's wake-up and the wait
    /// for a core: the arrival's part of T_Sched).
    pub wake: f64,
    /// The rest: the store's and the runtime's work around the I/O (T_FS + T_PC).
    pub rest: f64,
    /// Critical I/Os the breakdown is over.
    pub ios: u64,
}

/// What one run measured.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReadCorun {
    /// The measured reads' latencies.
    pub latencies: Latencies,
    /// Where their time went.
    pub breakdown: ReadBreakdown,
    /// Most pieces in flight at the device at once (every class).
    pub peak_depth: u32,
}

/// Run readrandom beside `co` under `scheme` on the simulated `device`; `cfg.puts` is
/// the number of reads, `cfg.interval_us` their interval (the other keys are the
/// co-runners', as for fillsync).
pub fn run(
    cfg: &FillsyncConfig,
    co: &CoRunner,
    scheme: &ReadScheme,
    device: &str,
) -> Result<ReadCorun, String> {
    cfg.check()?;
    let b = stack_builder(cfg, scheme.policy, scheme.wakeup, device);
    let (c, co) = (cfg.clone(), co.clone());
    let out = b
        .build()
        .map_err(|e| e.to_string())?
        .run(move || workload(c, co))
        .map_err(|e| e.to_string())?;
    let (mut lat, wake) = out.value?;
    let wake = wake.iter().sum::<u64>() as f64 / wake.len().max(1) as f64;
    lat.sort_unstable();
    let latencies = Latencies(lat);
    let crit = out
        .report
        .classes
        .iter()
        .find(|c| c.class == IoClass::Critical)
        .ok_or("no critical I/O reached the device")?;
    let total = latencies.mean();
    let (block, device, sched) = (crit.sched_ns.mean, crit.device_ns.mean, crit.post_ns.mean);
    Ok(ReadCorun {
        breakdown: ReadBreakdown {
            total,
            block,
            device,
            sched,
            wake,
            rest: (total - block - device - sched - wake).max(0.0),
            ios: crit.lat_ns.n,
        },
        latencies,
        peak_depth: out.report.extra.block.peak_inflight,
    })
}

/// Latencies and wake-up waits of the reads, ns.
type Reads = (Vec<u64>, Vec<u64>);

async fn workload(cfg: FillsyncConfig, co: CoRunner) -> Result<Reads, String> {
    let err = |e: std::io::Error| e.to_string();
    // The store as fillsync's, with compound journaling (the co-runners' fsyncs).
    let fs = mount(&cfg, Some(CommitMode::Compound)).await?;
    // The reader's file, written and made durable before anything is measured.
    let db = fs.create("db").await.map_err(err)?;
    db.write_buffered(0, &vec![3u8; FILE as usize])
        .await
        .map_err(err)?;
    db.fsync().await.map_err(err)?;
    let stop = Rc::new(Cell::new(false));
    let tasks = spawn_corunners(&fs, &co, &cfg, &stop).await?;
    sleep(cfg.warmup_ms * MS).await;
    let reader = spawn(
        TaskCtx::new("readrandom").class(IoClass::Critical),
        readrandom(db, cfg.clone()),
    );
    let lat = reader.await;
    stop.set(true);
    for t in tasks {
        t.await?;
    }
    lat
}

/// Reads at a fixed rate; each one's latency from its arrival to its end, and its wait
/// from its arrival until the task ran.
async fn readrandom(db: FsFile, cfg: FillsyncConfig) -> Result<Reads, String> {
    let t0 = now();
    let mut rng = crate::Xorshift::from_seed(cfg.seed ^ 0x5eed);
    let mut buf = vec![0u8; READ];
    let mut lat = Vec::with_capacity(cfg.puts as usize);
    let mut wake = Vec::with_capacity(cfg.puts as usize);
    for i in 0..cfg.puts as u64 {
        let arrival = t0 + i * cfg.interval_us * US;
        let t = now();
        if t < arrival {
            sleep(arrival - t).await;
        }
        wake.push(now().saturating_sub(arrival));
        let off = rng.next() % (FILE / READ as u64) * READ as u64;
        db.read_buffered(off, &mut buf)
            .await
            .map_err(|e| e.to_string())?;
        lat.push(now() - arrival);
    }
    Ok((lat, wake))
}
