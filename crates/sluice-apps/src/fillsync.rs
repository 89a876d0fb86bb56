//! fillsync beside throughput co-runners on the journaled store: FastResponse's
//! synchronous write path (Li et al., ICS '22, §4.2, Fig. 13, Table 1).
//!
//! * **fillsync** (RocksDB db_bench's, a critical task): a put every `interval_us`
//!   (FastResponse sends 2 000 requests per second) appends a `record_bytes` record to
//!   the log through the store's buffered write path and fsyncs the log (a new 4 MiB log
//!   file once the current one is full, as RocksDB starts a new WAL); its latency
//!   is the put's, from its arrival (a put that arrives while the previous one is
//!   still in its fsync waits for it: the requests queue as they do at RocksDB's WAL);
//! * **co-runners** (Table 1's throughput-oriented HiBench jobs, normal class): each
//!   issues 128 KiB reads and 128 KiB buffered writes of its own files at its arrival
//!   intervals, burning `cpu_us` of CPU per request (MapReduce tasks are CPU-heavy, so
//!   the critical task competes for a core: FastResponse's critical wakeup matters),
//!   and fsyncs its file every `fsync_every` writes (HDFS closing a block).
//!
//! The stack configurations are Fig. 13's schemes ([`Scheme`]): vanilla (no scheduling,
//! compound journaling, FIFO wakeup), B-Opt (the Limited-Depth block scheduler), BS-Opt
//! (+ critical wakeup), BSJ-Opt (+ file-level journaling, fjournal). The program is
//! written against [`Fs`], so [`Scheme::host`] runs the same puts and co-runners on the
//! stack's own files through its page cache: on a real directory, write + fsync on
//! host files (the issue's baseline: ext4 on this machine).

use std::cell::Cell;
use std::rc::Rc;

use serde::Deserialize;
use sluice_runtime::{
    cpu, now, sleep, spawn, CacheConfig, File, Inherit, IoClass, JoinHandle, Stack, StackBuilder,
    TaskCtx, Wakeup,
};
use sluice_store::{CommitMode, Fs, FsConfig, FsFile, FsyncBreakdown, Geometry, Store};

const MS: u64 = 1_000_000;
const US: u64 = 1_000;
/// A co-runner's request: 128 KiB (Table 1).
const REQ: usize = 128 << 10;
/// A co-runner's file, and the most log a run writes: 4 MiB (FastResponse's Table 1
/// files).
const FILE: u64 = 4 << 20;

/// One co-runner of Table 1: mean arrival intervals of its reads and writes.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CoRunner {
    /// Its name (Terasort, Bayes, …).
    pub name: String,
    /// Mean interval between reads, ms.
    pub read_ms: f64,
    /// Mean interval between writes, ms.
    pub write_ms: f64,
}

/// The workload's parameters (a TOML table; every key but `corunner` optional).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct FillsyncConfig {
    /// Puts of the measured run.
    pub puts: u32,
    /// Interval between puts, µs (FastResponse: 2 000 requests/s = 500 µs).
    pub interval_us: u64,
    /// Bytes of a put's record.
    pub record_bytes: u32,
    /// Co-runner tasks of each kind (each with its own files).
    pub corunner_tasks: u32,
    /// A co-runner fsyncs its file every this many writes.
    pub fsync_every: u32,
    /// CPU a co-runner burns per request, µs.
    pub cpu_us: u64,
    /// Host cores.
    pub cores: u16,
    /// Warm-up before the first measured put, ms.
    pub warmup_ms: u64,
    /// Seed.
    pub seed: u64,
    /// The co-runners, one run per entry ([[corunner]] tables).
    pub corunner: Vec<CoRunner>,
}

impl Default for FillsyncConfig {
    fn default() -> Self {
        FillsyncConfig {
            puts: 500,
            interval_us: 500,
            record_bytes: 4096,
            corunner_tasks: 2,
            fsync_every: 8,
            cpu_us: 100,
            cores: 2,
            warmup_ms: 20,
            seed: 1,
            corunner: Vec::new(),
        }
    }
}

impl FillsyncConfig {
    /// Parse a TOML table of [`FillsyncConfig`]'s keys (unknown keys are errors).
    pub fn from_toml(text: &str) -> Result<FillsyncConfig, String> {
        let c: FillsyncConfig = toml::from_str(text).map_err(|e| e.to_string())?;
        c.check()?;
        Ok(c)
    }

    /// How many 4 MiB log files the puts fill.
    pub fn log_files(&self) -> u64 {
        (self.puts as u64 * self.record_bytes as u64)
            .div_ceil(FILE)
            .max(1)
    }

    /// Check the values.
    pub fn check(&self) -> Result<(), String> {
        if self.puts == 0 || self.interval_us == 0 || self.cores == 0 {
            return Err("puts, interval_us and cores must be at least 1".into());
        }
        if self.record_bytes == 0 || self.record_bytes as u64 > FILE {
            return Err(format!(
                "record_bytes = {}: give 1 to {FILE} bytes (a record fits one 4 MiB log file)",
                self.record_bytes
            ));
        }
        for c in &self.corunner {
            if !(c.read_ms > 0.0 && c.write_ms > 0.0) {
                return Err(format!(
                    "co-runner '{}': read_ms and write_ms must be above 0",
                    c.name
                ));
            }
        }
        Ok(())
    }
}

/// One of Fig. 13's schemes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scheme {
    /// Its name (the paper's).
    pub name: &'static str,
    /// Block-layer policy.
    pub policy: &'static str,
    /// Run-queue order.
    pub wakeup: Wakeup,
    /// Journal commit mode of the store the files are on; `None`: the stack's own
    /// files through its page cache (on a real directory, the host's file system).
    pub commit: Option<CommitMode>,
    /// The store's journal task is critical: FastResponse configures JBD2 as a
    /// critical process in B-Opt and BS-Opt (ICS '22 §4.4); in BSJ-Opt a critical
    /// fsync commits its f-transaction by itself, and vanilla knows no critical task.
    pub critical_journal: bool,
}

impl Scheme {
    /// Fig. 13's four: vanilla, B-Opt (ld), BS-Opt (ld + critical wakeup), BSJ-Opt
    /// (ld + critical wakeup + fjournal).
    pub fn fig13() -> [Scheme; 4] {
        let s = |name, policy, wakeup, commit, critical_journal| Scheme {
            name,
            policy,
            wakeup,
            commit: Some(commit),
            critical_journal,
        };
        // §4.4: "we configure JBD2 as a critical process in B-Opt, BS-Opt, and
        // SelectISR"; in BSJ-Opt a critical fsync commits by itself.
        [
            s("vanilla", "none", Wakeup::Fifo, CommitMode::Compound, false),
            s("B-Opt", "ld", Wakeup::Fifo, CommitMode::Compound, true),
            s("BS-Opt", "ld", Wakeup::Critical, CommitMode::Compound, true),
            s(
                "BSJ-Opt",
                "ld",
                Wakeup::Critical,
                CommitMode::FileLevel,
                false,
            ),
        ]
    }

    /// The same program on the stack's own files (write + fsync through the runtime's
    /// page cache; on a real directory, `fdatasync(2)` on host files — ext4 on this
    /// machine), no scheduling, FIFO wakeup.
    pub fn host() -> Scheme {
        Scheme {
            name: "host",
            policy: "none",
            wakeup: Wakeup::Fifo,
            commit: None,
            critical_journal: false,
        }
    }
}

/// Latencies of the measured puts, ns, sorted.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Latencies(pub Vec<u64>);

impl Latencies {
    /// Mean, ns.
    pub fn mean(&self) -> f64 {
        self.0.iter().map(|&l| l as f64).sum::<f64>() / self.0.len().max(1) as f64
    }

    /// Percentile `p` (0–100), ns.
    pub fn percentile(&self, p: f64) -> u64 {
        crate::percentile(&self.0, p)
    }
}

/// What one run measured.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Fillsync {
    /// The measured puts' latencies.
    pub latencies: Latencies,
    /// Where the critical fsyncs' time went (warm-up included): FastResponse's
    /// breakdown (ICS '22 Fig. 15(b)).
    pub breakdown: FsyncBreakdown,
}

/// Run fillsync beside `co` under `scheme` on `device` (a simulated profile) or in a
/// store file under `real`.
pub fn run(
    cfg: &FillsyncConfig,
    co: &CoRunner,
    scheme: &Scheme,
    device: &str,
    real: Option<&std::path::Path>,
) -> Result<Fillsync, String> {
    cfg.check()?;
    let mut b = stack_builder(cfg, scheme.policy, scheme.wakeup, device);
    if let Some(dir) = real {
        b = b.directory(dir).cores(1);
    }
    if scheme.commit.is_none() {
        // The host files' buffered writes: a page cache that holds every file.
        let pages = ((cfg.log_files() + 2 * cfg.corunner_tasks as u64) * FILE / 4096) as usize;
        b = b.cache(CacheConfig {
            pages,
            ..CacheConfig::default()
        });
    }
    let (cfg, co, scheme) = (cfg.clone(), co.clone(), *scheme);
    let out = b
        .build()
        .map_err(|e| e.to_string())?
        .run(move || workload(cfg, co, scheme))
        .map_err(|e| e.to_string())?;
    out.value
}

/// The files of `mode`: a store with the fillsync geometry, or the stack's own.
pub(crate) async fn mount(cfg: &FillsyncConfig, mode: Option<CommitMode>) -> Result<Fs, String> {
    let Some(commit) = mode else {
        return Fs::mount(&FsConfig::Host).await.map_err(|e| e.to_string());
    };
    let err = |e: sluice_store::StoreError| e.to_string();
    let img = File::create("store.img").await.map_err(|e| e.to_string())?;
    // Room for the log files and every co-runner's file, twice over.
    let blocks = 2 * (FILE / 4096) * (cfg.log_files() + cfg.corunner_tasks as u64) + 8192;
    // A 4 MiB journal and a 4 MiB f-transaction area: the log's f-transactions wrap
    // the area every ~250 puts instead of every ~16 (ext4's journal is 128 MiB).
    let geometry = Geometry {
        journal: 1024,
        fjournal: 1024,
        ..Geometry::new(blocks)
    };
    Store::mkfs(&img, geometry).await.map_err(err)?;
    // FastResponse's stacks have one dirty ratio (no RCP limits), the synchronous
    // commit path, and no read cache (the co-runners' reads go to the device).
    let mut fs = FsConfig::store(commit);
    if let FsConfig::Store {
        image, blocks: b, ..
    } = &mut fs
    {
        (*image, *b) = ("store.img".into(), blocks);
    }
    Fs::mount(&fs).await.map_err(|e| e.to_string())
}

async fn workload(cfg: FillsyncConfig, co: CoRunner, scheme: Scheme) -> Result<Fillsync, String> {
    let err = |e: std::io::Error| e.to_string();
    let fs = mount(&cfg, scheme.commit).await?;
    if let (Some(s), true) = (fs.store(), scheme.critical_journal) {
        s.set_journal_class(IoClass::Critical);
    }
    let log = fs.create("log0").await.map_err(err)?;
    let stop = Rc::new(Cell::new(false));
    let tasks = spawn_corunners(&fs, &co, &cfg, &stop).await?;
    sleep(cfg.warmup_ms * MS).await;
    let put = spawn(
        TaskCtx::new("fillsync").class(IoClass::Critical),
        fillsync(fs.clone(), log, cfg.clone()),
    );
    let lat = put.await;
    stop.set(true);
    for t in tasks {
        t.await?;
    }
    let mut lat = lat?;
    lat.sort_unstable();
    Ok(Fillsync {
        latencies: Latencies(lat),
        breakdown: fs.store().map(|s| s.fsync_breakdown()).unwrap_or_default(),
    })
}

/// Puts at a fixed rate; each one's latency from its arrival to its fsync's end.
/// Each log file takes `FILE / record_bytes` puts; the put that finds it full creates
/// the next one (`log1`, `log2`, …) and its creation is in that put's latency.
async fn fillsync(fs: Fs, first: FsFile, cfg: FillsyncConfig) -> Result<Vec<u64>, String> {
    let t0 = now();
    let rec = vec![7u8; cfg.record_bytes as usize];
    let per_file = FILE / cfg.record_bytes as u64;
    let mut log = first;
    let mut lat = Vec::with_capacity(cfg.puts as usize);
    for i in 0..cfg.puts as u64 {
        let arrival = t0 + i * cfg.interval_us * US;
        let t = now();
        if t < arrival {
            sleep(arrival - t).await;
        }
        if i > 0 && i % per_file == 0 {
            log = fs
                .create(&format!("log{}", i / per_file))
                .await
                .map_err(|e| e.to_string())?;
        }
        log.write_buffered(i % per_file * cfg.record_bytes as u64, &rec)
            .await
            .map_err(|e| e.to_string())?;
        log.fsync().await.map_err(|e| e.to_string())?;
        lat.push(now() - arrival);
    }
    Ok(lat)
}

/// The stack of a FastResponse scheme for `cfg` on `device`. FastResponse has no
/// priority inheritance (RCP's): a critical task's wait for another task or its I/O
/// raises nothing, so the schemes run without it.
pub(crate) fn stack_builder(
    cfg: &FillsyncConfig,
    policy: &str,
    wakeup: Wakeup,
    device: &str,
) -> StackBuilder {
    Stack::builder()
        .device(device)
        .policy(policy)
        .wakeup(wakeup)
        .inherit(Inherit::OFF)
        .cores(cfg.cores)
        .seed(cfg.seed)
        .max_sim_ns(600_000 * MS)
}

/// The co-runner's tasks: per file (`corunner_tasks` of them, each written out first, so
/// it exists before it is read) a reader and a writer, until `stop` is set.
pub(crate) async fn spawn_corunners(
    fs: &Fs,
    co: &CoRunner,
    cfg: &FillsyncConfig,
    stop: &Rc<Cell<bool>>,
) -> Result<Vec<JoinHandle<Result<(), String>>>, String> {
    let err = |e: std::io::Error| e.to_string();
    let mut tasks = Vec::new();
    for t in 0..cfg.corunner_tasks {
        let file = fs.create(&format!("{}{t}", co.name)).await.map_err(err)?;
        file.write_buffered(0, &vec![1u8; FILE as usize])
            .await
            .map_err(err)?;
        for write in [false, true] {
            let (file, stop, cfg) = (file.clone(), stop.clone(), cfg.clone());
            let mean_ms = if write { co.write_ms } else { co.read_ms };
            let seed = cfg.seed ^ ((t as u64) << 8) ^ write as u64;
            tasks.push(spawn(
                TaskCtx::new(format!("{}{t}-{}", co.name, if write { "w" } else { "r" }))
                    .flow(co.name.clone()),
                corunner(file, stop, cfg, mean_ms, write, seed),
            ));
        }
    }
    Ok(tasks)
}

/// A co-runner's reads or writes: 128 KiB requests at exponentially distributed
/// intervals of mean `mean_ms`, each after `cpu_us` of CPU.
pub(crate) async fn corunner(
    file: FsFile,
    stop: Rc<Cell<bool>>,
    cfg: FillsyncConfig,
    mean_ms: f64,
    write: bool,
    seed: u64,
) -> Result<(), String> {
    let mut rng = crate::Xorshift::from_seed(seed);
    let mut next = move || rng.next();
    let mut buf = vec![0u8; REQ];
    let mut writes = 0u32;
    while !stop.get() {
        // Exponential gap: −mean · ln(U), U in (0, 1].
        let u = ((next() >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
        sleep((-mean_ms * u.ln() * MS as f64) as u64).await;
        cpu(cfg.cpu_us * US).await;
        let off = next() % (FILE / REQ as u64) * REQ as u64;
        if write {
            file.write_buffered(off, &buf)
                .await
                .map_err(|e| e.to_string())?;
            writes += 1;
            if cfg.fsync_every > 0 && writes.is_multiple_of(cfg.fsync_every) {
                file.fsync().await.map_err(|e| e.to_string())?;
            }
        } else {
            file.read_buffered(off, &mut buf)
                .await
                .map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}
