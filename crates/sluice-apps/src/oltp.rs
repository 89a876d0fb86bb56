//! An OLTP stand-in for RCP's PostgreSQL under TPC-C (Kim et al., FAST '17, §6 and
//! §7.2), on sluice's runtime.
//!
//! What it keeps of PostgreSQL is what makes RCP's priority inversions happen:
//!
//! * **clients** (PostgreSQL's backends; critical tasks, RCP's "foreground") run
//!   transactions back to back (or with a think time): a little CPU, `reads` 4 KiB
//!   page reads of the data file **through the page cache** (a page the buffer pool
//!   holds dirty needs no read), then `updates` page updates, each under the page's
//!   **buffer lock** (a [`Mutex`] per stripe of pages: PostgreSQL's buffer content
//!   lock) while holding a **row lock** of one of a few hot rows (TPC-C's district
//!   rows) to the end of the transaction, then a WAL record appended under the **WAL
//!   insert lock**, then the commit waits on a [`Condvar`] until the WAL writer has
//!   made the record durable (a client waiting for a row lock waits on a client that
//!   waits on the WAL writer: RCP's transitive dependencies);
//! * a **WAL writer** (background, normal class) with **group commit**: it takes every
//!   record appended so far, writes them to the WAL file through the page cache and
//!   fsyncs it, then wakes the committers; it is the condition's registered helper, so
//!   a critical committer waiting on it lends it its class (RCP §4.2: inheritance
//!   through condition variables);
//! * a **checkpointer** (background: normal, or idle for CFQ-IDLE's configuration),
//!   every `checkpoint_ms` from the previous checkpoint's start (PostgreSQL's
//!   `checkpoint_timeout`; spread as its `checkpoint_completion_target` asks): it writes every page
//!   the buffer pool holds dirty through the page cache, **holding that page's buffer
//!   lock while it writes** (as PostgreSQL's `FlushBuffer` holds the content lock), then
//!   fsyncs the data file, then logs a checkpoint record, which truncates the WAL (the
//!   log size RCP's Fig. 5 tracks).
//!
//! A non-critical checkpointer throttled at its dirty limit or stuck behind the device
//! while a client waits for its buffer lock, a WAL writer whose fsync queues behind
//! checkpoint writeback while every client waits on it: the inversions RCP resolves
//! by inheritance through locks, condition variables and outstanding I/O, class-aware
//! dirty limits and a block layer that prefers critical I/O.
//!
//! The program is the same in both worlds; the caller builds the stack (device,
//! policy, cache, inheritance) and runs [`run`] as its main task.

use std::cell::{Cell, RefCell};
use std::collections::BTreeSet;
use std::rc::Rc;

use serde::Deserialize;
use sluice_runtime::{
    cpu, now, restart_wait_tally, sleep, spawn, Activity, CacheConfig, Condvar, DmaBuffer, IoClass,
    Mutex, TaskCtx,
};
use sluice_store::{Fs, FsConfig, FsFile};

const PAGE: u64 = 4096;
const MS: u64 = 1_000_000;

/// The workload's parameters (a TOML table of these keys; every key optional).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct OltpConfig {
    /// Client tasks (critical).
    pub clients: u32,
    /// Think time between a client's transactions, µs (0: back to back, as RCP's
    /// unlimited-rate runs).
    pub think_us: u64,
    /// Arrival rate, transactions per second (0: closed loop). RCP measured Fig. 6's
    /// latencies with a rate-controlled TPC-C ("a fixed number of transactions",
    /// §7.2) and Fig. 4's throughput at an unlimited rate: with a rate, transactions
    /// arrive every `1 / rate_tps` into one queue the clients serve in order, and a
    /// transaction's latency counts from its arrival, so the time it queued behind a
    /// stall is in it (as a rate-controlled benchmark's is); `think_us` is then unused.
    pub rate_tps: u64,
    /// Database size, MiB (4 KiB pages of one data file).
    pub data_mib: u64,
    /// Page-cache size in percent of the database (RCP: a 40 % buffer pool).
    pub cache_percent: u32,
    /// Dirty limit of non-critical writers, percent of the page cache, with RCP's
    /// class-aware limits on (default: RCP's 1 %, §7.1, of memory). RCP's host had
    /// 64 GB of RAM for a 10 GB database, so its 1 % was 6.4 % of the database; a
    /// scaled-down run whose cache is smaller than the database gives the same
    /// absolute limit with `6.4 / cache_percent × 100` here
    /// (16 %: every RCP experiment's, docs/whole-stack.md). On the store (`fs`), given either of the two, its
    /// limits of buffered data are these percentages of the page cache's bytes; given
    /// neither, the store keeps its own (32 MiB, and 1/20 of it).
    pub dirty_normal_percent: Option<f64>,
    /// Dirty limit of critical writers (and of everyone with the class limits off),
    /// percent of the page cache (default: RCP's 20 %, Linux's `dirty_ratio`).
    pub dirty_critical_percent: Option<f64>,
    /// Pages a transaction reads.
    pub reads: u32,
    /// Pages a transaction updates (the first of those it read).
    pub updates: u32,
    /// CPU per transaction, µs.
    pub cpu_us: u64,
    /// Buffer-lock stripes: page `p`'s lock is stripe `p % stripes`.
    pub stripes: u32,
    /// Hot rows (TPC-C's district rows): a transaction locks one, chosen at random,
    /// from its first update until its commit is durable, as a row lock is held to the
    /// end of the transaction; 0: none.
    pub hot_rows: u32,
    /// WAL bytes per transaction.
    pub wal_bytes: u32,
    /// Time from the start of one checkpoint to the start of the next, ms
    /// (PostgreSQL's `checkpoint_timeout`, counted as its checkpointer counts it, from
    /// the last checkpoint's start; a checkpoint longer than this starts the next at
    /// once. RCP ran 30 s on a 10 GB database, scaled down here).
    pub checkpoint_ms: u64,
    /// The fraction of `checkpoint_ms` a checkpoint spreads its page writes over
    /// (PostgreSQL's `checkpoint_completion_target`, 0.5 by default in the 9.x
    /// releases RCP ran; 0: write everything at once).
    pub checkpoint_completion_target: f64,
    /// Warm-up, ms: transactions run but are not measured.
    pub warmup_ms: u64,
    /// The measured run, ms.
    pub run_ms: u64,
    /// Seed of the clients' page choices.
    pub seed: u64,
    /// The files' file system: `host` (the stack's own files, through its page cache:
    /// no journal under the WAL), or the journaled store, `compound` (jbd2-like: RCP
    /// ran PostgreSQL on ext4, whose fsync waits for a compound commit carrying other
    /// files' ordered data) or `fjournal` — the store reads through a cache of the
    /// page cache's size and keeps its buffered data under the stack's RCP limits when
    /// they are on.
    pub fs: String,
}

impl Default for OltpConfig {
    fn default() -> Self {
        OltpConfig {
            clients: 16,
            think_us: 0,
            rate_tps: 0,
            data_mib: 64,
            cache_percent: 40,
            dirty_normal_percent: None,
            dirty_critical_percent: None,
            reads: 8,
            updates: 2,
            cpu_us: 20,
            stripes: 128,
            hot_rows: 10,
            wal_bytes: 512,
            checkpoint_ms: 250,
            checkpoint_completion_target: 0.0,
            warmup_ms: 250,
            run_ms: 1500,
            seed: 1,
            fs: "host".into(),
        }
    }
}

impl OltpConfig {
    /// Parse a TOML table of [`OltpConfig`]'s keys (unknown keys are errors).
    pub fn from_toml(text: &str) -> Result<OltpConfig, String> {
        let c: OltpConfig = toml::from_str(text).map_err(|e| e.to_string())?;
        c.check()?;
        Ok(c)
    }

    /// Check the values.
    pub fn check(&self) -> Result<(), String> {
        let pos = |name: &str, v: u64| {
            if v == 0 {
                Err(format!("{name} = 0: give at least 1"))
            } else {
                Ok(())
            }
        };
        pos("clients", self.clients as u64)?;
        pos("data_mib", self.data_mib)?;
        pos("stripes", self.stripes as u64)?;
        pos("run_ms", self.run_ms)?;
        pos("checkpoint_ms", self.checkpoint_ms)?;
        pos("reads", self.reads as u64)?;
        if self.updates > self.reads {
            return Err(format!(
                "updates = {} > reads = {}: a transaction updates pages it read",
                self.updates, self.reads
            ));
        }
        if !(1..=100).contains(&self.cache_percent) {
            return Err(format!(
                "cache_percent = {}: give 1 to 100",
                self.cache_percent
            ));
        }
        for (name, v) in [
            ("dirty_normal_percent", self.dirty_normal_percent),
            ("dirty_critical_percent", self.dirty_critical_percent),
        ] {
            let Some(v) = v else { continue };
            if !(v > 0.0 && v <= 100.0) {
                return Err(format!(
                    "{name} = {v}: give a percentage of the page cache above 0 and at most 100"
                ));
            }
        }
        if !(0.0..=1.0).contains(&self.checkpoint_completion_target) {
            return Err(format!(
                "checkpoint_completion_target = {}: give a fraction of checkpoint_ms from 0 to 1",
                self.checkpoint_completion_target
            ));
        }
        self.fs_config(false)?;
        Ok(())
    }

    /// The file system [`OltpConfig::fs`] names, for a stack with (`class_limits`) or
    /// without RCP's class-aware dirty limits. A store is sized for the database and
    /// the WAL, reads through a cache of [`OltpConfig::cache_pages`] blocks, and has
    /// the limits too when the stack has them.
    pub fn fs_config(&self, class_limits: bool) -> Result<FsConfig, String> {
        let fs: FsConfig = self
            .fs
            .parse()
            .map_err(|e| format!("fs = \"{}\": {e}", self.fs))?;
        let mut fs = fs
            .with_read_cache(self.cache_pages())
            .with_class_limits(class_limits);
        if self.dirty_normal_percent.is_some() || self.dirty_critical_percent.is_some() {
            let (normal, critical) = self.dirty_ratios();
            let bytes = (self.cache_pages() as u64 * PAGE) as f64;
            fs = fs.with_buffer_limits((bytes * critical) as u64, (bytes * normal) as u64);
        }
        if let FsConfig::Store { blocks, .. } = &mut fs {
            // The database twice over (the WAL grows with the run), and 64 MiB more.
            *blocks = (*blocks).max((2 * self.data_mib + 64) << 8);
        }
        Ok(fs)
    }

    /// Pages of the database.
    pub fn pages(&self) -> u64 {
        self.data_mib * (1 << 20) / PAGE
    }

    /// The non-critical and the critical dirty ratios (fractions of the page cache):
    /// [`OltpConfig::dirty_normal_percent`] and [`OltpConfig::dirty_critical_percent`],
    /// or RCP's 1 % and 20 %.
    pub fn dirty_ratios(&self) -> (f64, f64) {
        let c = CacheConfig::default();
        (
            self.dirty_normal_percent
                .map_or(c.dirty_ratio_normal, |p| p / 100.0),
            self.dirty_critical_percent
                .map_or(c.dirty_ratio_critical, |p| p / 100.0),
        )
    }

    /// Pages of the page cache (`cache_percent` of the database).
    pub fn cache_pages(&self) -> usize {
        ((self.pages() * self.cache_percent as u64 / 100) as usize).max(16)
    }
}

/// What a run measured.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OltpResult {
    /// Transactions committed in the measured run.
    pub txns: u64,
    /// Length of the measured run, ns.
    pub measured_ns: u64,
    /// Their latencies (start to durable commit), ns, sorted.
    pub latencies_ns: Vec<u64>,
    /// Checkpoints completed over the whole run (warm-up included).
    pub checkpoints: u32,
    /// Checkpoints' durations, ns.
    pub checkpoint_ns: Vec<u64>,
    /// Largest WAL size reached, bytes (the log a checkpoint truncates; RCP Fig. 5).
    pub max_log_bytes: u64,
    /// WAL fsyncs (group commits).
    pub wal_flushes: u64,
    /// Inheritance at work over the whole run (the runtime's figures; 0 from [`run`]
    /// alone, filled by [`StackSetup::run`]): tasks boosted for a critical waiter, and
    /// outstanding non-critical I/Os promoted for one (RCP §4.2.2). A part of RCP that
    /// never acts cannot cost throughput when it is turned off (RCP Fig. 10).
    pub boosts: u64,
    /// See [`OltpResult::boosts`].
    pub io_promotions: u64,
    /// Where the clients (critical) waited, by site, in the measured run (RCP Table 2;
    /// filled by [`StackSetup::run`]).
    pub waits: Vec<sluice_metrics::WaitSiteFacts>,
}

impl OltpResult {
    /// Transactions per second.
    pub fn tps(&self) -> f64 {
        self.txns as f64 / (self.measured_ns.max(1) as f64 / 1e9)
    }

    /// The latency at percentile `p` (0–100), ns; 0 without transactions.
    pub fn percentile(&self, p: f64) -> u64 {
        crate::percentile(&self.latencies_ns, p)
    }

    /// One line: throughput, p50 / p99 / p99.9, checkpoints, largest WAL, inheritance.
    pub fn summary(&self) -> String {
        format!(
            "{:.0} txn/s, p50 {:.2} ms, p99 {:.2} ms, p99.9 {:.2} ms, {} checkpoints of {:.0} ms, WAL ≤ {:.1} MiB, \
             {} boosts, {} I/Os promoted",
            self.tps(),
            self.percentile(50.0) as f64 / 1e6,
            self.percentile(99.0) as f64 / 1e6,
            self.percentile(99.9) as f64 / 1e6,
            self.checkpoints,
            self.checkpoint_mean_ms(),
            self.max_log_bytes as f64 / (1 << 20) as f64,
            self.boosts,
            self.io_promotions
        )
    }

    /// Mean duration of a checkpoint, ms (0 without checkpoints).
    pub fn checkpoint_mean_ms(&self) -> f64 {
        let n = self.checkpoint_ns.len().max(1) as f64;
        self.checkpoint_ns.iter().map(|&d| d as f64).sum::<f64>() / n / 1e6
    }

    /// The longest wait of a client at any site (RCP Table 2's rows: the
    /// application's locks — PostgreSQL's LWLocks on SysV semaphores, `semtimedop` — as
    /// well as the stack's), ns, and the site.
    pub fn longest_wait_any(&self) -> (u64, String) {
        self.waits
            .iter()
            .max_by_key(|w| w.max_ns)
            .map_or((0, "none".into()), |w| (w.max_ns, w.label()))
    }

    /// The clients' waits as one line: each site's longest and (mean) wait, ms,
    /// longest first.
    pub fn waits_line(&self) -> String {
        let mut w: Vec<_> = self.waits.iter().collect();
        w.sort_by_key(|w| std::cmp::Reverse(w.max_ns));
        w.iter()
            .map(|w| {
                format!(
                    "{} {:.1} ({:.2})",
                    w.label(),
                    w.max_ns as f64 / 1e6,
                    w.mean_ns() / 1e6
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Mean latency, ns.
    pub fn mean(&self) -> f64 {
        let n = self.latencies_ns.len().max(1) as f64;
        self.latencies_ns.iter().map(|&l| l as f64).sum::<f64>() / n
    }

    /// The latency CCDF as (latency ms, fraction of transactions at least that slow),
    /// one point per distinct latency step of about 1 % of the log scale.
    pub fn ccdf(&self) -> Vec<(f64, f64)> {
        let n = self.latencies_ns.len();
        let mut out = Vec::new();
        let mut last = 0.0f64;
        for (i, &l) in self.latencies_ns.iter().enumerate() {
            let ms = l as f64 / 1e6;
            if i == 0 || ms >= last * 1.01 || i == n - 1 {
                out.push((ms, (n - i) as f64 / n as f64));
                last = ms;
            }
        }
        out
    }
}

/// The WAL's state, under the WAL insert lock.
#[derive(Debug, Default)]
struct Wal {
    /// Bytes appended and not yet taken by the writer.
    pending: u64,
    /// LSN of the last appended byte.
    appended: u64,
    /// LSN up to which the WAL is durable.
    flushed: u64,
    /// LSN of the last checkpoint record: the log before it can be recycled.
    checkpoint_lsn: u64,
    stop: bool,
}

struct Shared {
    cfg: OltpConfig,
    data: FsFile,
    /// Buffer locks, by stripe.
    locks: Vec<Mutex<()>>,
    /// Row locks of the hot rows.
    rows: Vec<Mutex<()>>,
    /// Pages the buffer pool holds dirty (not yet written by a checkpoint).
    dirty: RefCell<BTreeSet<u64>>,
    wal: Mutex<Wal>,
    /// PostgreSQL's `WALWriteLock`: held while the WAL file is written and fsynced
    /// (by the WAL writer, and by the checkpointer for its checkpoint record); the
    /// WAL file and its write offset.
    wal_write: Mutex<(FsFile, u64)>,
    /// The WAL writer waits here for records.
    work: Condvar,
    /// Committers wait here for their record to be durable.
    durable: Condvar,
    stop: Cell<bool>,
    /// Rate control: when the clients started, and the next arrival to serve.
    started: Cell<u64>,
    arrivals: Cell<u64>,
    measuring: Cell<bool>,
    latencies: RefCell<Vec<u64>>,
    checkpoints: Cell<u32>,
    checkpoint_ns: RefCell<Vec<u64>>,
    max_log: Cell<u64>,
    wal_flushes: Cell<u64>,
}

/// Run the workload on the files `fs` gives: load the database, start the WAL writer,
/// the checkpointer (in `checkpointer` class) and the clients, warm up, measure, stop.
/// Run it as a stack's main task; every file it creates is the stack's or the store's.
///
/// # Panics
/// If a file operation fails (the stack's directory is full, an I/O error): the
/// experiment cannot go on.
pub async fn run(cfg: OltpConfig, checkpointer: IoClass, fs: FsConfig) -> OltpResult {
    let fs = Fs::mount(&fs).await.expect("mount the file system");
    let data = fs.create("data").await.expect("create the data file");
    // Load the database with direct 256 KiB writes (cold cache afterwards).
    let chunk = 256u64 << 10;
    for i in 0..cfg.pages() * PAGE / chunk {
        data.write_at(DmaBuffer::new(chunk as usize), i * chunk)
            .await
            .0
            .expect("load the database");
    }
    let wal_file = fs.create("wal").await.expect("create the WAL");
    let sh = Rc::new(Shared {
        locks: (0..cfg.stripes)
            .map(|_| Mutex::new(()).named("buffer content lock"))
            .collect(),
        rows: (0..cfg.hot_rows)
            .map(|_| Mutex::new(()).named("row lock"))
            .collect(),
        data,
        cfg: cfg.clone(),
        dirty: RefCell::new(BTreeSet::new()),
        wal: Mutex::new(Wal::default()).named("WALInsertLock"),
        wal_write: Mutex::new((wal_file, 0)).named("WALWriteLock"),
        work: Condvar::new().named("WAL writer work"),
        durable: Condvar::new().named("commit durable"),
        stop: Cell::new(false),
        started: Cell::new(0),
        arrivals: Cell::new(0),
        measuring: Cell::new(false),
        latencies: RefCell::new(Vec::new()),
        checkpoints: Cell::new(0),
        checkpoint_ns: RefCell::new(Vec::new()),
        max_log: Cell::new(0),
        wal_flushes: Cell::new(0),
    });
    let writer = spawn(
        TaskCtx::new("walwriter").activity(Activity::WAL),
        wal_writer(sh.clone()),
    );
    let ck = spawn(
        TaskCtx::new("checkpointer")
            .class(checkpointer)
            .activity(Activity::CHECKPOINT),
        checkpoint_loop(sh.clone()),
    );
    sh.started.set(now());
    let clients: Vec<_> = (0..cfg.clients)
        .map(|c| {
            spawn(
                TaskCtx::new(format!("client{c}"))
                    .flow("clients")
                    .critical()
                    .activity(Activity::GET),
                client(sh.clone(), c),
            )
        })
        .collect();
    sleep(cfg.warmup_ms * MS).await;
    sh.measuring.set(true);
    restart_wait_tally();
    let t0 = now();
    sleep(cfg.run_ms * MS).await;
    sh.measuring.set(false);
    let measured_ns = now() - t0;
    sh.stop.set(true);
    for c in clients {
        c.await;
    }
    {
        let mut w = sh.wal.lock().await;
        w.stop = true;
    }
    sh.work.notify_all();
    writer.await;
    ck.await;
    let mut latencies = sh.latencies.take();
    latencies.sort_unstable();
    OltpResult {
        txns: latencies.len() as u64,
        measured_ns,
        latencies_ns: latencies,
        checkpoints: sh.checkpoints.get(),
        checkpoint_ns: sh.checkpoint_ns.take(),
        max_log_bytes: sh.max_log.get(),
        wal_flushes: sh.wal_flushes.get(),
        boosts: 0,
        io_promotions: 0,
        waits: Vec::new(),
    }
}

/// A client: transactions until told to stop.
async fn client(sh: Rc<Shared>, c: u32) {
    let cfg = &sh.cfg;
    // The client's page choices, deterministic per seed.
    let mut rng =
        crate::Xorshift::new(cfg.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (c as u64 + 1));
    let mut next = move || rng.next();
    let mut page_buf = vec![0u8; PAGE as usize];
    while !sh.stop.get() {
        let t0 = match cfg.rate_tps {
            0 => now(),
            rate => {
                // The next arrival of the shared queue; wait for it if it is ahead.
                let k = sh.arrivals.get();
                sh.arrivals.set(k + 1);
                let at = sh.started.get() + (k as u128 * 1_000_000_000 / rate as u128) as u64;
                if at > now() {
                    sleep(at - now()).await;
                    if sh.stop.get() {
                        break;
                    }
                }
                at
            }
        };
        cpu(cfg.cpu_us * 1000).await;
        let mut pages = Vec::with_capacity(cfg.reads as usize);
        for _ in 0..cfg.reads {
            let p = next() % cfg.pages();
            pages.push(p);
            if !sh.dirty.borrow().contains(&p) {
                sh.data
                    .read_buffered(p * PAGE, &mut page_buf)
                    .await
                    .expect("read a page");
            }
        }
        // A hot row's lock, held until the commit is durable.
        let row = if cfg.hot_rows > 0 && cfg.updates > 0 {
            Some(
                sh.rows[(next() % cfg.hot_rows as u64) as usize]
                    .lock()
                    .await,
            )
        } else {
            None
        };
        for &p in pages.iter().take(cfg.updates as usize) {
            // The buffer lock: a checkpointer writing this page out holds it.
            let g = sh.locks[(p % cfg.stripes as u64) as usize].lock().await;
            sh.dirty.borrow_mut().insert(p);
            drop(g);
        }
        let lsn = {
            let mut w = sh.wal.lock().await;
            w.appended += cfg.wal_bytes as u64;
            w.pending += cfg.wal_bytes as u64;
            w.appended
        };
        sh.work.notify_one();
        let mut w = sh.wal.lock().await;
        while w.flushed < lsn {
            w = sh.durable.wait(w).await;
        }
        drop(w);
        drop(row);
        if sh.measuring.get() {
            sh.latencies.borrow_mut().push(now() - t0);
        }
        if cfg.think_us > 0 && cfg.rate_tps == 0 {
            sleep(cfg.think_us * 1000).await;
        }
    }
}

/// The WAL writer: group commit until stopped.
async fn wal_writer(sh: Rc<Shared>) {
    // It signals the committers' condition: a critical committer lends it its class.
    sh.durable.register_helper();
    loop {
        let mut w = sh.wal.lock().await;
        while w.pending == 0 && !w.stop {
            w = sh.work.wait(w).await;
        }
        if w.pending == 0 {
            break;
        }
        let (bytes, upto) = (w.pending, w.appended);
        w.pending = 0;
        drop(w);
        append_wal(&sh, bytes).await;
        sh.wal_flushes.set(sh.wal_flushes.get() + 1);
        let mut w = sh.wal.lock().await;
        w.flushed = upto;
        sh.max_log
            .set(sh.max_log.get().max(w.flushed - w.checkpoint_lsn));
        drop(w);
        sh.durable.notify_all();
    }
    sh.durable.unregister_helper();
}

/// Write `bytes` at the WAL's end and fsync it, under `WALWriteLock`.
async fn append_wal(sh: &Shared, bytes: u64) {
    let mut g = sh.wal_write.lock().await;
    let off = g.1;
    let buf = vec![0u8; bytes as usize];
    g.0.write_buffered(off, &buf)
        .await
        .expect("append to the WAL");
    g.0.fsync().await.expect("fsync the WAL");
    g.1 = off + bytes;
}

/// The checkpointer: every `checkpoint_ms` from the last one's start (PostgreSQL's
/// `checkpoint_timeout`), write the dirty pages out, each under its buffer lock and
/// spread over `checkpoint_completion_target` of the interval, fsync the data file, log
/// the checkpoint.
async fn checkpoint_loop(sh: Rc<Shared>) {
    let cfg = &sh.cfg;
    let page = vec![0u8; PAGE as usize];
    let interval = cfg.checkpoint_ms * MS;
    let mut next = now() + interval;
    loop {
        if next > now() {
            sleep(next - now()).await;
        }
        if sh.stop.get() {
            break;
        }
        let t0 = now();
        next = t0 + interval;
        // The redo point: the WAL up to here is covered once the checkpoint ends.
        let redo = sh.wal.lock().await.appended;
        let pages: Vec<u64> = std::mem::take(&mut *sh.dirty.borrow_mut())
            .into_iter()
            .collect();
        // PostgreSQL's spread checkpoint (`CheckpointWriteDelay`): after each buffer
        // written, a checkpointer ahead of its schedule — fraction i / n of the pages
        // written before fraction i / n of target × interval has passed — naps until it
        // is on schedule; one behind it writes on at once.
        let spread = (interval as f64 * cfg.checkpoint_completion_target) as u64;
        let n = pages.len() as u64;
        for (i, p) in pages.into_iter().enumerate() {
            let g = sh.locks[(p % cfg.stripes as u64) as usize].lock().await;
            sh.data
                .write_buffered(p * PAGE, &page)
                .await
                .expect("write a dirty page");
            drop(g);
            let due = t0 + (spread as u128 * (i as u128 + 1) / n as u128) as u64;
            if due > now() {
                sleep(due - now()).await;
            }
        }
        sh.data.fsync().await.expect("fsync the data file");
        // The checkpoint record, written and fsynced under WALWriteLock: the WAL
        // writer (and through it every committer) waits for the checkpointer here.
        append_wal(&sh, 8192).await;
        sh.wal.lock().await.checkpoint_lsn = redo;
        sh.checkpoints.set(sh.checkpoints.get() + 1);
        sh.checkpoint_ns.borrow_mut().push(now() - t0);
    }
}

mod setup;
pub use setup::StackSetup;
