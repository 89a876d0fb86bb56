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
mod builder;
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
use std::rc::Rc;
use std::sync::Arc;

use sluice_block::BlockLayer;
use sluice_core::policy::{self, PolicySpec};
use sluice_device::{NvmeSsd, SimPort};
use sluice_metrics::{Collector, Extra, PerClass, RunReport, RunSetup, RuntimeFacts, SimFacts};

pub use buffer::DmaBuffer;
use builder::DeviceChoice;
pub use builder::{StackBuilder, DEFAULT_BUFFER_POOL};
pub use cache::{cache_stats, write_back_all};
pub use config::{CostTable, Inherit, ReadPath, Wakeup};
pub use crash::CrashOutput;
pub use ctx::{Activity, IoClass, IoOptions, TaskCtx};
pub use deps::MAX_CHAIN;
pub use exec::RunError;
pub use io::{DiskImage, File, IoHandle, IoWait, FILE_SPAN, IO_ALIGN};
pub use real::MAX_FILES;
pub use real::RING_CAP;
pub use real::{commands, readable, CmdSink, Commands, Readable};
pub use sluice_cache::{CacheConfig, CacheStats};
pub use sluice_core::Op;
pub use sluice_device::{CrashReport, CrashSpec, FaultConfig};
pub use sync::{
    Condvar, LockFuture, Mutex, MutexGuard, RangeAcquire, RangeGuard, RangeLock, RwLock,
    RwReadGuard, RwWriteGuard,
};
pub use task::{
    charge, cpu, current_base_class, current_class, now, restart_wait_tally, set_class, sleep,
    spawn, spawn_on, throttle_pause, yield_now, BoostGuard, Cpu, JoinHandle, Sleep, TaskHandle,
    YieldNow,
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

/// A stack: device, block layer, runtime. [`Stack::run`] runs a main task to its end.
#[derive(Debug)]
pub struct Stack {
    pub(crate) b: StackBuilder,
    pub(crate) device: DeviceChoice,
    pub(crate) spec: PolicySpec,
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
                if let Some(f) = b.faults {
                    ssd.set_faults(f, b.seed);
                }
                io::Port::Sim(SimPort::new(ssd))
            }
            DeviceChoice::Directory(dir) => {
                // Checked by `build`.
                let cap = b.ring_cap.unwrap_or(real::RING_CAP);
                let mut p = real::RealPort::new(dir, b.cores, b.direct, cap, pool.as_ref())
                    .map_err(RuntimeError::Config)?;
                p.write_existing = b.write_existing;
                io::Port::Real(p)
            }
        };
        let bells = match &self.device {
            DeviceChoice::Simulated(_) => Vec::new(),
            DeviceChoice::Directory(_) => (0..b.cores)
                .map(|_| sluice_uring::Doorbell::new())
                .collect::<Result<_, _>>()
                .map_err(|e| RuntimeError::Config(e.to_string()))?,
        };
        let collector = Collector::new(RunSetup {
            jobs: Vec::new(),
            flows: Vec::new(),
            interval_ns: b.interval_ns,
            global_options: Vec::new(),
        });
        let mut io = io::IoState::new(block, port, collector);
        if let Some(image) = &b.image {
            io.install(image.clone());
        }
        let cache = b.cache.map(|c| std::sync::Arc::new(cache::Cache::new(c)));
        io.cache = cache.clone();
        let cfg = ExecConfig {
            cores: b.cores,
            wakeup: b.wakeup,
            inherit: b.inherit,
            costs: b.costs,
            read_path: b.read_path,
            interval_ns: b.interval_ns,
            uring_commands: b.uring_commands,
            core_cpus: b.core_cpus.clone(),
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
            // A real stack's tasks spawned here have their futures on this thread, which
            // runs core 0: the flusher is placed there, or sent to its core's thread
            // (`flusher_core`; in simulation, dealt as before).
            match &self.device {
                DeviceChoice::Simulated(_) => {
                    sh.spawn(cache::flusher_ctx(), Box::pin(cache::flusher(c)));
                }
                DeviceChoice::Directory(_) => match self.b.flusher_core % b.cores.max(1) {
                    0 => {
                        sh.spawn(cache::flusher_ctx().core(0), Box::pin(cache::flusher(c)));
                    }
                    core => {
                        sh.spawn_on(
                            cache::flusher_ctx().core(core),
                            Box::new(move || -> exec::TaskFuture { Box::pin(cache::flusher(c)) }),
                        );
                    }
                },
            }
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
                global_options: Vec::new(),
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
                (inh.stack, "stack"),
                (inh.user, "user"),
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
                device_flash: sluice_metrics::DeviceFlash::of(dev),
                device_atomic_write_bytes: (block.stats().atomic_writes > 0)
                    .then(|| dev.profile().atomic_write_unit().1),
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
                next_deferred: inner.stats.next_deferred,
                preemptions: inner.stats.preemptions,
                boosts: inner.stats.boosts,
                boost_ends: inner.stats.boost_ends,
                inherited_promotions: inner.stats.inherited_promotions,
                idle_timeouts: inner.stats.idle_timeouts,
                core_busy_ns: inner.cores.iter().map(|c| c.busy_ns).collect(),
                cache: inner.io.cache.as_ref().map(|c| c.pc().stats()),
                waits: inner
                    .waits
                    .sites
                    .iter()
                    .map(|(site, w)| sluice_metrics::WaitSiteFacts {
                        level: site.level.into(),
                        kind: site.kind.into(),
                        name: site.name.into(),
                        count: w.count,
                        total_ns: w.total_ns,
                        max_ns: w.max_ns,
                    })
                    .collect(),
                interrupted: false,
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
