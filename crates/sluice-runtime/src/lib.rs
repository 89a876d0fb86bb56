//! # sluice-runtime — sluice as a library
//!
//! An async runtime for application tasks over sluice's one block layer: build a
//! [`Stack`] (device, policy, seed, cores), run a main task, [`spawn`] more with a
//! [`TaskCtx`] (flow, weight, class, activity), do I/O on [`File`]s with [`DmaBuffer`]s,
//! synchronise with [`Mutex`], [`RwLock`] and [`Condvar`], and get the same
//! `RunReport` (tables, JSON, plots) as `sluice sim`.
//!
//! ```
//! use sluice_runtime::{spawn, Activity, DmaBuffer, File, Stack, TaskCtx};
//!
//! let out = Stack::builder()
//!     .device("ull")
//!     .policy("rcp")
//!     .seed(7)
//!     .build()
//!     .unwrap()
//!     .run(|| async {
//!         let f = File::create("data").await.unwrap();
//!         let (r, _) = f.write_at(DmaBuffer::from_slice(&[1u8; 4096]), 0).await;
//!         r.unwrap();
//!         // A background task and a critical reader side by side.
//!         let bg = spawn(TaskCtx::new("compaction").activity(Activity::COMPACTION), async move {
//!             for i in 0..8u64 {
//!                 let (r, _) = f.write_at(DmaBuffer::new(128 << 10), (i + 1) << 20).await;
//!                 r.unwrap();
//!             }
//!         });
//!         let get = spawn(TaskCtx::new("get").critical().activity(Activity::GET), async move {
//!             let (r, buf) = f.read_at(DmaBuffer::new(4096), 0).await;
//!             assert_eq!(r.unwrap(), 4096);
//!             buf[0]
//!         });
//!         bg.await;
//!         get.await
//!     })
//!     .unwrap();
//! assert_eq!(out.value, 1);
//! assert!(out.report.jobs.iter().any(|j| j.jobname == "get/get"));
//! ```
//!
//! ## Layers
//! * the executor (`exec`): tasks on simulated cores, FastResponse's
//!   critical wakeup ([`Wakeup`]), a CPU cost table ([`CostTable`]);
//! * inheritance (`deps`): RCP's I/O priority inheritance through locks, condition
//!   variables, joins and outstanding I/O, transitively ([`Inherit`]);
//! * I/O ([`File`]): every request carries its task's flow and class (or an
//!   [`IoOptions`] override) and an [`Activity`] tag into the block layer.
//!
//! ## Worlds
//! * **simulated** ([`StackBuilder::device`]): deterministic, single-threaded, virtual
//!   time, on a simulated NVMe SSD (any `sluice list` profile or a TOML file), with a
//!   simulated host of `cores` cores;
//! * **real** ([`StackBuilder::directory`]): files the stack creates in a directory,
//!   `O_DIRECT`, through io_uring with registered files (at most [`MAX_FILES`] open at
//!   once; [`File::close`] gives a file's slot back) and fixed buffers, thread per
//!   core.
#![warn(missing_docs, missing_debug_implementations)]

mod buffer;
mod cache;
mod config;
mod crash;
mod ctx;
mod deps;
#[doc(hidden)]
pub mod diag;
mod exec;
mod io;
mod pool;
mod real;
mod sync;
mod task;

use std::cell::RefCell;
use std::future::Future;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;

use sluice_block::BlockLayer;
use sluice_core::policy::{self, PolicySpec};
use sluice_core::Nanos;
use sluice_device::{DeviceProfile, NvmeSsd};
use sluice_metrics::{Collector, Extra, PerClass, RunReport, RunSetup, RuntimeFacts, SimFacts};
use sluice_sim::SimPort;

pub use buffer::DmaBuffer;
pub use config::{CostTable, Inherit, ReadPath, Wakeup};
pub use crash::CrashOutput;
pub use ctx::{Activity, IoClass, IoOptions, TaskCtx};
pub use deps::MAX_CHAIN;
pub use exec::RunError;
pub use io::{DiskImage, File, IoHandle, IoWait, FILE_SPAN, IO_ALIGN};
pub use real::MAX_FILES;
pub use sluice_cache::{CacheConfig, CacheStats};
pub use sluice_core::Op;
pub use sluice_device::{CrashReport, CrashSpec};
pub use sync::{Condvar, LockFuture, Mutex, MutexGuard, RwLock, RwReadGuard, RwWriteGuard};
pub use task::{
    charge, cpu, current_class, now, set_class, sleep, spawn, spawn_on, yield_now, BoostGuard, Cpu,
    JoinHandle, Sleep, TaskHandle, YieldNow,
};

use exec::{ExecConfig, Inner, Shared};

/// Why a stack could not be built or run.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// The device profile is wrong or unknown.
    #[error("{0}")]
    Device(#[from] sluice_device::ProfileError),
    /// The policy specification is wrong.
    #[error("policy: {0}")]
    PolicySpec(#[from] sluice_core::policy::ParamError),
    /// The policy is unknown or its parameters are wrong.
    #[error("policy: {0}")]
    Policy(#[from] sluice_core::policy::PolicyError),
    /// A setting is out of range.
    #[error("{0}")]
    Config(String),
    /// The run could not finish.
    #[error("{0}")]
    Run(#[from] RunError),
}

/// Where the stack's files live.
#[derive(Clone, Debug)]
enum DeviceChoice {
    Simulated(Box<DeviceProfile>),
    Directory(PathBuf),
}

/// Builds a [`Stack`] (`Stack::builder()`).
#[derive(Clone, Debug)]
pub struct StackBuilder {
    device: Result<DeviceChoice, String>,
    policy: String,
    seed: u64,
    cores: u16,
    wakeup: Wakeup,
    inherit: Inherit,
    costs: CostTable,
    read_path: ReadPath,
    interval_ns: Nanos,
    helper_window_ns: Nanos,
    max_sim_ns: Nanos,
    direct: bool,
    image: Option<DiskImage>,
    cache: Option<CacheConfig>,
    /// Registered buffer pool (slots, bytes per slot); `None`: the default, real only.
    buffer_pool: Option<(u32, usize)>,
    /// Real backend: `File::open` opens files the stack did not create for writing.
    write_existing: bool,
}

/// The real backend's registered buffer pool by default: 256 slots of 64 KiB (16 MiB).
pub const DEFAULT_BUFFER_POOL: (u32, usize) = (256, 64 << 10);

impl Default for StackBuilder {
    fn default() -> Self {
        StackBuilder {
            device: Ok(DeviceChoice::Simulated(Box::new(
                DeviceProfile::builtin("ull").expect("ull is built in"),
            ))),
            policy: "none".into(),
            seed: 1,
            cores: 2,
            wakeup: Wakeup::default(),
            inherit: Inherit::default(),
            costs: CostTable::default(),
            read_path: ReadPath::default(),
            interval_ns: 10_000_000,
            helper_window_ns: 1_000_000_000,
            max_sim_ns: 24 * 3600 * 1_000_000_000,
            direct: true,
            image: None,
            cache: None,
            buffer_pool: None,
            write_existing: false,
        }
    }
}

impl StackBuilder {
    /// A simulated device: a built-in profile name (`ull`, `zssd`, `nand`, …) or a
    /// profile TOML file.
    pub fn device(mut self, profile: &str) -> StackBuilder {
        self.device = DeviceProfile::resolve(profile)
            .map(|p| DeviceChoice::Simulated(Box::new(p)))
            .map_err(|e| e.to_string());
        self
    }

    /// A simulated device from a profile value.
    pub fn device_profile(mut self, profile: DeviceProfile) -> StackBuilder {
        self.device = Ok(DeviceChoice::Simulated(Box::new(profile)));
        self
    }

    /// Real files in `dir` through io_uring. Not built yet: `build` says so.
    pub fn directory(mut self, dir: impl Into<PathBuf>) -> StackBuilder {
        self.device = Ok(DeviceChoice::Directory(dir.into()));
        self
    }

    /// Real backend: open files with `O_DIRECT` (the default), or (`false`) through
    /// the host's page cache — for file systems that refuse direct I/O such as tmpfs,
    /// or to compare with buffered engines. Ignored (and said so by `build`) in
    /// simulation.
    pub fn direct(mut self, direct: bool) -> StackBuilder {
        self.direct = direct;
        self
    }

    /// Real backend: [`File::open`] opens a file of the directory that the stack did not
    /// create for writing too (default: read-only — the stack never writes such a file
    /// unless told, as `sluice run --allow-write-existing`). For a file a previous run
    /// left, such as a store to recover.
    pub fn allow_write_existing(mut self, allow: bool) -> StackBuilder {
        self.write_existing = allow;
        self
    }

    /// Real backend: the registered (fixed) buffer pool, `slots` buffers of
    /// `slot_bytes` (a multiple of 4 096) registered with every core's ring; default
    /// [`DEFAULT_BUFFER_POOL`]; `buffer_pool(0, 0)`: none (every buffer from the heap,
    /// plain reads and writes). A simulated stack refuses it (it has no ring).
    pub fn buffer_pool(mut self, slots: u32, slot_bytes: usize) -> StackBuilder {
        self.buffer_pool = Some((slots, slot_bytes));
        self
    }

    /// The block-layer policy, `NAME[:key=value,...]` (default `none`).
    pub fn policy(mut self, spec: &str) -> StackBuilder {
        self.policy = spec.to_string();
        self
    }

    /// Seed of the device's random streams (faults, later service-time variation).
    pub fn seed(mut self, seed: u64) -> StackBuilder {
        self.seed = seed;
        self
    }

    /// Simulated host cores (default 2), each with its run queue and the device's
    /// queue pairs.
    pub fn cores(mut self, cores: u16) -> StackBuilder {
        self.cores = cores;
        self
    }

    /// The wake-up order (default [`Wakeup::Critical`]).
    pub fn wakeup(mut self, wakeup: Wakeup) -> StackBuilder {
        self.wakeup = wakeup;
        self
    }

    /// The inheritance switches (default all on).
    pub fn inherit(mut self, inherit: Inherit) -> StackBuilder {
        self.inherit = inherit;
        self
    }

    /// The simulated host's CPU costs.
    pub fn costs(mut self, costs: CostTable) -> StackBuilder {
        self.costs = costs;
        self
    }

    /// The page cache's read path: Linux's (the default) or AIOS's ([`ReadPath`]): where
    /// the simulated host charges a buffered read's page work against its device I/O.
    /// On real files both run the same code (the pages' buffer is made before the read
    /// is submitted) and nothing is charged: AIOS's gains there need the kernel changes
    /// the paper made.
    pub fn read_path(mut self, path: ReadPath) -> StackBuilder {
        self.read_path = path;
        self
    }

    /// Width of the bandwidth bins and policy-counter samples (default 10 ms).
    pub fn interval_ns(mut self, ns: Nanos) -> StackBuilder {
        self.interval_ns = ns;
        self
    }

    /// How long a condition variable remembers a task that signalled it as a helper
    /// (RCP's time window; default 1 s; 0: forever).
    pub fn helper_window_ns(mut self, ns: Nanos) -> StackBuilder {
        self.helper_window_ns = ns;
        self
    }

    /// Stop with an error if simulated time passes this (default one day).
    pub fn max_sim_ns(mut self, ns: Nanos) -> StackBuilder {
        self.max_sim_ns = ns;
        self
    }

    /// A page cache for buffered I/O ([`File::read_buffered`], [`File::write_buffered`]):
    /// its size, RCP's per-class dirty ratios (1 % non-critical, 20 % critical by
    /// default) and whether they are per class. A non-critical flusher task writes
    /// dirty pages back. Without it (the default) buffered I/O is refused.
    ///
    /// ```
    /// use sluice_runtime::{CacheConfig, File, Stack};
    ///
    /// let out = Stack::builder()
    ///     .device("nand")
    ///     .cache(CacheConfig { pages: 1024, ..CacheConfig::default() })
    ///     .build()
    ///     .unwrap()
    ///     .run(|| async {
    ///         let f = File::create("log").await.unwrap();
    ///         f.write_buffered(10, b"hello").await.unwrap(); // in the cache
    ///         f.fsync().await.unwrap(); // written back, then a device FLUSH
    ///         let mut back = [0u8; 5];
    ///         f.read_buffered(10, &mut back).await.unwrap();
    ///         back
    ///     })
    ///     .unwrap();
    /// assert_eq!(&out.value, b"hello");
    /// let cache = out.report.extra.runtime.unwrap().cache.unwrap();
    /// assert_eq!((cache.writebacks, cache.hits), (1, 1));
    /// ```
    pub fn cache(mut self, cfg: CacheConfig) -> StackBuilder {
        self.cache = Some(cfg);
        self
    }

    /// Start from the files and device contents a crash left
    /// ([`Stack::run_until_crash`]); simulated devices only. The device should be the
    /// one the image came from.
    pub fn image(mut self, image: DiskImage) -> StackBuilder {
        self.image = Some(image);
        self
    }

    /// Check the settings.
    pub fn build(self) -> Result<Stack, RuntimeError> {
        let device = self.device.clone().map_err(RuntimeError::Config)?;
        match &device {
            DeviceChoice::Simulated(_) if !self.direct => {
                return Err(RuntimeError::Config(
                    "direct(false) is for the real backend (directory(DIR)); a simulated \
                     device has no page cache to go through"
                        .into(),
                ))
            }
            DeviceChoice::Simulated(_) if self.buffer_pool.is_some() => {
                return Err(RuntimeError::Config(
                    "buffer_pool is for the real backend (directory(DIR)); a simulated \
                     device has no ring to register buffers with"
                        .into(),
                ))
            }
            DeviceChoice::Simulated(p) => p.validate()?,
            DeviceChoice::Directory(_) if self.image.is_some() => {
                return Err(RuntimeError::Config(
                    "image(...) is for a simulated device (a crash image of `run_until_crash`); \
                     the real backend reads its directory's files"
                        .into(),
                ))
            }
            DeviceChoice::Directory(d) => {
                if !d.is_dir() {
                    return Err(RuntimeError::Config(format!(
                        "directory {}: not a directory (give an existing directory for the \
                         stack's files)",
                        d.display()
                    )));
                }
            }
        }
        if self.cores == 0 || self.cores > 1024 {
            return Err(RuntimeError::Config(format!(
                "cores = {}: give 1 to 1024",
                self.cores
            )));
        }
        if let Some(c) = &self.cache {
            c.validate()
                .map_err(|e| RuntimeError::Config(e.to_string()))?;
        }
        if self.cache.is_some() && self.cores > 1 && matches!(device, DeviceChoice::Directory(_)) {
            // The cache's state is single-threaded (Rc/RefCell); a real stack's cores
            // are threads.
            return Err(RuntimeError::Config(format!(
                "cache(...) with cores = {}: on real files the page cache runs on one core \
                 for now; give .cores(1) (simulated stacks take any number)",
                self.cores
            )));
        }
        if let Some((n, len)) = self.buffer_pool {
            pool::check(n, len).map_err(RuntimeError::Config)?;
        }
        if self.interval_ns == 0 {
            return Err(RuntimeError::Config(
                "interval_ns = 0: give at least 1".into(),
            ));
        }
        let spec: PolicySpec = self.policy.parse()?;
        policy::build(&spec)?;
        Ok(Stack {
            b: self,
            device,
            spec,
        })
    }
}

/// A stack: device, block layer, runtime. [`Stack::run`] runs a main task to its end.
#[derive(Debug)]
pub struct Stack {
    b: StackBuilder,
    device: DeviceChoice,
    spec: PolicySpec,
}

/// What [`Stack::run`] returns.
#[derive(Debug)]
pub struct RunOutput<T> {
    /// The main task's result.
    pub value: T,
    /// The run's report, as `sluice sim` prints it: one job per (flow, activity), one
    /// flow per task flow, the block layer's and the runtime's figures in `extra`.
    pub report: RunReport,
}

impl Stack {
    /// A builder with the defaults: simulated `ull`, policy `none`, seed 1, 2 cores,
    /// critical wakeup, inheritance on, the default cost table.
    pub fn builder() -> StackBuilder {
        StackBuilder::default()
    }

    /// Run `main` (the root task, class normal, named `main`) to its end and report.
    /// Tasks still running when it ends are dropped.
    pub fn run<F, Fut>(self, main: F) -> Result<RunOutput<Fut::Output>, RuntimeError>
    where
        F: FnOnce() -> Fut,
        Fut: Future + 'static,
        Fut::Output: 'static,
    {
        self.run_as(TaskCtx::new("main"), main)
    }

    /// [`Stack::run`] with the main task's context.
    pub fn run_as<F, Fut>(
        self,
        ctx: TaskCtx,
        main: F,
    ) -> Result<RunOutput<Fut::Output>, RuntimeError>
    where
        F: FnOnce() -> Fut,
        Fut: Future + 'static,
        Fut::Output: 'static,
    {
        let (sh, main_id, slot) = self.start(ctx, main)?;
        let result = sh.run(main_id, self.b.max_sim_ns);
        let report = sh.report(&self);
        sh.shutdown();
        result?;
        let value = slot
            .borrow_mut()
            .take()
            .expect("the main task finished, so it left its value");
        Ok(RunOutput { value, report })
    }

    /// Build the world and spawn the main task.
    #[allow(clippy::type_complexity)]
    fn start<F, Fut>(
        &self,
        ctx: TaskCtx,
        main: F,
    ) -> Result<(Arc<Shared>, u32, Rc<RefCell<Option<Fut::Output>>>), RuntimeError>
    where
        F: FnOnce() -> Fut,
        Fut: Future + 'static,
        Fut::Output: 'static,
    {
        let b = &self.b;
        exec::discard_stale_futures();
        let policy = policy::build(&self.spec)?;
        let block = BlockLayer::new(policy, &[]);
        let pool = match &self.device {
            DeviceChoice::Simulated(_) => None,
            DeviceChoice::Directory(_) => {
                let (n, len) = b.buffer_pool.unwrap_or(DEFAULT_BUFFER_POOL);
                (n > 0).then(|| Arc::new(pool::BufferPool::new(n, len)))
            }
        };
        let port = match &self.device {
            DeviceChoice::Simulated(profile) => {
                let mut ssd = NvmeSsd::new(profile, b.cores);
                ssd.set_seed(b.seed);
                io::Port::Sim(SimPort::new(ssd))
            }
            DeviceChoice::Directory(dir) => {
                let mut p = real::RealPort::new(dir, b.cores, b.direct, pool.as_ref())
                    .map_err(RuntimeError::Config)?;
                p.write_existing = b.write_existing;
                io::Port::Real(p)
            }
        };
        let bells = match &self.device {
            DeviceChoice::Simulated(_) => Vec::new(),
            DeviceChoice::Directory(_) => (0..b.cores)
                .map(|_| sluice_engine::Doorbell::new())
                .collect::<Result<_, _>>()
                .map_err(|e| RuntimeError::Config(e.to_string()))?,
        };
        let collector = Collector::new(RunSetup {
            jobs: Vec::new(),
            flows: Vec::new(),
            interval_ns: b.interval_ns,
        });
        let mut io = io::IoState::new(block, port, collector);
        if let Some(image) = &b.image {
            io.install(image.clone());
        }
        let cache = b.cache.map(|c| Rc::new(cache::Cache::new(c)));
        io.cache = cache.clone();
        let cfg = ExecConfig {
            cores: b.cores,
            wakeup: b.wakeup,
            inherit: b.inherit,
            costs: b.costs,
            read_path: b.read_path,
            interval_ns: b.interval_ns,
        };
        let sh = Shared::new(Inner::new(cfg, io, b.helper_window_ns), bells, pool);
        let slot: Rc<RefCell<Option<Fut::Output>>> = Rc::new(RefCell::new(None));
        let out = slot.clone();
        let main_id = {
            let fut = main();
            sh.spawn(
                ctx,
                Box::pin(async move {
                    let v = fut.await;
                    *out.borrow_mut() = Some(v);
                }),
            )
        };
        if let Some(c) = cache {
            sh.spawn(cache::flusher_ctx(), Box::pin(cache::flusher(c)));
        }
        Ok((sh, main_id, slot))
    }
}

impl Shared {
    /// The report of the run so far.
    fn report(&self, stack: &Stack) -> RunReport {
        let mut inner = self.lock();
        let inner = &mut *inner;
        let now = inner.now;
        let collector = std::mem::replace(
            &mut inner.io.collector,
            Collector::new(RunSetup {
                jobs: Vec::new(),
                flows: Vec::new(),
                interval_ns: 1,
            }),
        );
        let block = &inner.io.block;
        let mut report = collector.finish(now, block.policy().name());
        report.policy = stack.spec.text.clone();
        let dev = inner.io.device();
        let real = inner.io.is_real();
        let inh = stack.b.inherit;
        let inherit = if !inh.any() {
            "off".to_string()
        } else {
            [
                (inh.locks, "locks"),
                (inh.condvars, "condvars"),
                (inh.io, "io"),
                (inh.transitive, "transitive"),
            ]
            .iter()
            .filter(|x| x.0)
            .map(|x| x.1)
            .collect::<Vec<_>>()
            .join(",")
        };
        report.extra = Extra {
            sim: dev.map(|dev| SimFacts {
                device: dev.profile().name.clone(),
                cores: stack.b.cores,
                sim_ns: now,
                sim_events: 0,
                sim_ios: block.stats().completed,
                device_fetched_per_class: PerClass(dev.stats().fetched_per_class),
                device_wrr_weights: block.wrr_applied(),
                device_faults: None,
                device_flash: sluice_sim::flash_facts(dev),
                littles_law_l: 0.0,
                littles_law_lambda_w: 0.0,
            }),
            runtime: Some(RuntimeFacts {
                wakeup: match stack.b.wakeup {
                    Wakeup::Fifo => "fifo".into(),
                    Wakeup::Critical => "critical".into(),
                },
                inherit,
                tasks: inner.stats.spawned,
                polls: inner.stats.polls,
                critical_wakeups: inner.stats.critical_next,
                preemptions: inner.stats.preemptions,
                boosts: inner.stats.boosts,
                boost_ends: inner.stats.boost_ends,
                inherited_promotions: inner.stats.inherited_promotions,
                core_busy_ns: inner.cores.iter().map(|c| c.busy_ns).collect(),
                cache: inner.io.cache.as_ref().map(|c| c.pc.borrow().stats()),
            }),
            ..Extra::from_block(if real { "io_uring" } else { "sim" }, stack.b.seed, block)
        };
        report
    }

    /// Drop the tasks still alive (their destructors may call back into the runtime).
    /// (The other cores' threads dropped theirs before they ended.)
    fn shutdown(self: &Arc<Self>) {
        exec::drop_tasks(self, exec::ALL_CORES);
    }
}
