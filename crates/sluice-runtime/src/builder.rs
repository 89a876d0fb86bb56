//! [`StackBuilder`]: a stack's settings (device or directory, policy, cores, wakeup,
//! inheritance, costs, cache, buffers) and their checks; [`StackBuilder::build`] makes
//! the [`Stack`].

use std::path::PathBuf;

use sluice_core::policy::{self, PolicySpec};
use sluice_core::Nanos;
use sluice_device::DeviceProfile;

use crate::{
    pool, CacheConfig, CostTable, DiskImage, Inherit, ReadPath, RuntimeError, Stack, Wakeup,
};

/// Where the stack's files live.
#[derive(Clone, Debug)]
pub(crate) enum DeviceChoice {
    Simulated(Box<DeviceProfile>),
    Directory(PathBuf),
}

/// Builds a [`Stack`] (`Stack::builder()`).
#[derive(Clone, Debug)]
pub struct StackBuilder {
    pub(crate) device: Result<DeviceChoice, String>,
    pub(crate) policy: String,
    pub(crate) seed: u64,
    pub(crate) cores: u16,
    pub(crate) wakeup: Wakeup,
    pub(crate) inherit: Inherit,
    pub(crate) costs: CostTable,
    pub(crate) read_path: ReadPath,
    pub(crate) interval_ns: Nanos,
    pub(crate) helper_window_ns: Nanos,
    pub(crate) max_sim_ns: Nanos,
    pub(crate) direct: bool,
    pub(crate) image: Option<DiskImage>,
    pub(crate) cache: Option<CacheConfig>,
    /// Registered buffer pool (slots, bytes per slot); `None`: the default, real only.
    pub(crate) buffer_pool: Option<(u32, usize)>,
    /// Real backend: `File::open` opens files the stack did not create for writing.
    pub(crate) write_existing: bool,
    /// Real backend: most commands in the cores' rings at once (`None`: [`crate::RING_CAP`]).
    pub(crate) ring_cap: Option<u32>,
    /// Real backend: the core of the page cache's flusher (modulo the cores).
    pub(crate) flusher_core: u16,
    /// Real backend: the cores' rings take 128-byte SQEs.
    pub(crate) uring_commands: bool,
    /// Real backend: core `c`'s thread pinned to CPU `core_cpus[c % len]` (empty: unpinned).
    pub(crate) core_cpus: Vec<usize>,
    /// Simulated device: seeded command faults (media errors, timeouts).
    pub(crate) faults: Option<sluice_device::FaultConfig>,
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
            ring_cap: None,
            flusher_core: 0,
            uring_commands: false,
            core_cpus: Vec::new(),
            faults: None,
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

    /// Real backend: at most `cap` commands in all the cores' rings at once (1 ..=
    /// [`crate::RING_CAP`], the default): past it, requests wait at the port's weighted
    /// round-robin arbiter by queue class, so `d2fq`'s classes (and its H/M/L weights)
    /// take effect as in `sluice run --ring-cap` — a device's command slots, where the
    /// rings alone would take everything. Refused at `build` outside that range.
    pub fn ring_cap(mut self, cap: u32) -> StackBuilder {
        self.ring_cap = Some(cap);
        self
    }

    /// Real backend: [`File::open`](crate::File::open) opens a file of the directory that the stack did not
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

    /// Seeded command faults of the simulated device (media errors, timeouts; see
    /// `sluice_device::faults`), drawn from the stack's [`seed`](Self::seed) unless the
    /// faults name their own: the error paths of the stack above run under a seed.
    pub fn faults(mut self, faults: sluice_device::FaultConfig) -> StackBuilder {
        self.faults = Some(faults);
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

    /// A page cache for buffered I/O ([`File::read_buffered`](crate::File::read_buffered), [`File::write_buffered`](crate::File::write_buffered)):
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

    /// Real backend: the core the page cache's flusher runs on (default 0, the main
    /// task's; taken modulo the cores). A program that keeps core 0 for its critical
    /// tasks (`sluice mount`) puts the non-critical flusher elsewhere. In simulation the
    /// flusher is dealt to a core as every task is.
    pub fn flusher_core(mut self, core: u16) -> StackBuilder {
        self.flusher_core = core;
        self
    }

    /// Real backend: the cores' rings take 128-byte SQEs (`IORING_SETUP_SQE128`, Linux
    /// 5.19+), so that a task can submit io_uring commands with an 80-byte argument on
    /// its core's ring ([`crate::commands`]: FUSE over io_uring's, `sluice mount`).
    /// Default off: 64-byte SQEs. In simulation there are no rings: ignored.
    pub fn uring_commands(mut self, on: bool) -> StackBuilder {
        self.uring_commands = on;
        self
    }

    /// Real backend: pin core `c`'s thread to CPU `cpus[c % cpus.len()]`
    /// (`sched_setaffinity`, for the run; core 0, the calling thread, gets its CPU mask
    /// back at the end). Empty (the default): the cores' threads run where the scheduler
    /// puts them. A program whose requests reach a core by the CPU their caller ran on —
    /// FUSE over io_uring delivers a request to the thread that registered an entry of
    /// the caller's CPU's queue (`sluice mount`) — needs to know which CPU serves it. A
    /// CPU the process may not run on is a start error of that core. In simulation:
    /// ignored.
    pub fn pin_cores(mut self, cpus: Vec<usize>) -> StackBuilder {
        self.core_cpus = cpus;
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
            DeviceChoice::Simulated(_) if self.ring_cap.is_some() => {
                return Err(RuntimeError::Config(
                    "ring_cap is for the real backend (directory(DIR)); a simulated device \
                     arbitrates in its controller (the profile's `arbitration`)"
                        .into(),
                ))
            }
            DeviceChoice::Simulated(p) => p.validate()?,
            DeviceChoice::Directory(_)
                if self
                    .ring_cap
                    .is_some_and(|c| !(1..=crate::RING_CAP).contains(&c)) =>
            {
                return Err(RuntimeError::Config(format!(
                    "ring cap {}: give 1..={} commands in the rings at once",
                    self.ring_cap.unwrap_or(0),
                    crate::RING_CAP
                )))
            }
            DeviceChoice::Directory(_) if self.faults.is_some() => {
                return Err(RuntimeError::Config(
                    "faults(...) is for a simulated device; a real device's errors are its own"
                        .into(),
                ))
            }
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
