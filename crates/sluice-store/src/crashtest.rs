//! The seeded crash-and-recover harness, written once for the test suite
//! (`tests/crash.rs`) and `sluice crashtest`.
//!
//! One seed: three tasks run the workload of [`workload`] on a store on the simulated
//! `nand` SSD (a volatile write cache) — creates, direct and buffered writes,
//! truncations, renames, unlinks, fsyncs, fdatasyncs and syncs — and the power goes at
//! an instant drawn from the seed (unflushed writes survive, are lost or, on even
//! seeds, torn at 512-byte sectors). The store is then mounted (recovery) and must:
//!
//! 1. pass [`Store::check`]: every used inode's blocks owned once and marked in the
//!    bitmap, no other block marked (the allocation maps agree with the files);
//! 2. agree with the model ([`model`]): every fsync, fdatasync and sync that returned
//!    has its data and metadata, and no file shows data it was never written;
//! 3. keep its fsynced change counters (full fsync only);
//! 4. come out of a second recovery unchanged — after a power cut right after the
//!    first — in names, contents, change counters and metadata
//!    ([`Store::fingerprint`]).
//!
//! One seed in four (`class_limits`) runs with RCP's class-aware limits of buffered
//! data and a 256 KiB buffer: a normal task over its 12.8 KiB pauses while the store's
//! flusher writes the buffer home, so the flusher's writebacks are cut by crashes too.
//!
//! Everything is deterministic: a seed replays exactly.

mod model;
mod workload;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::Rc;

use sluice_runtime::{spawn, CrashSpec, DiskImage, File, IoClass, Stack, StackBuilder, TaskCtx};

use crate::{CommitMode, FsyncPath, Geometry, Store, INLINE_BLOCKS};
use model::TaskModel;

/// Tasks per run.
const TASKS: usize = 3;

/// Whether run `seed` has RCP's class-aware limits on (and a small buffer): one seed
/// in four.
pub(crate) fn class_limits(seed: u64) -> bool {
    seed % 4 == 3
}

/// Whether run `seed` logs small fsyncs' data inline in f-transactions
/// (`Store::set_inline`; fjournal only): one seed in two.
pub(crate) fn inline(seed: u64) -> bool {
    seed % 2 == 1
}
const IMG: &str = "store.img";
/// The seed whose uncrashed run measures the workload's length.
const LENGTH_SEED: u64 = 1_000_000;

/// Which commit mode and fsync path a run uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Compound commits or FastResponse's f-transactions.
    pub mode: CommitMode,
    /// The synchronous commit path or AIOS's asynchronous one.
    pub fsync: FsyncPath,
}

impl Config {
    /// The four combinations.
    pub const ALL: [Config; 4] = [
        Config::new(CommitMode::Compound, FsyncPath::Sync),
        Config::new(CommitMode::Compound, FsyncPath::Async),
        Config::new(CommitMode::FileLevel, FsyncPath::Sync),
        Config::new(CommitMode::FileLevel, FsyncPath::Async),
    ];

    /// A configuration.
    pub const fn new(mode: CommitMode, fsync: FsyncPath) -> Config {
        Config { mode, fsync }
    }

    /// Its `--mode` word (`compound`, `fjournal`).
    pub fn mode_name(&self) -> &'static str {
        match self.mode {
            CommitMode::Compound => "compound",
            CommitMode::FileLevel => "fjournal",
        }
    }

    /// Its `--fsync` word (`sync`, `async`).
    pub fn fsync_name(&self) -> &'static str {
        match self.fsync {
            FsyncPath::Sync => "sync",
            FsyncPath::Async => "async",
        }
    }
}

impl std::fmt::Display for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.mode_name(), self.fsync_name())
    }
}

/// A seed that failed: what went wrong, and how to replay it.
#[derive(Clone, Debug)]
pub struct Failure {
    /// The configuration.
    pub config: Config,
    /// The seed.
    pub seed: u64,
    /// What the check found (or the panic's message).
    pub what: String,
}

impl Failure {
    /// The command that replays this seed.
    pub fn replay_command(&self) -> String {
        format!(
            "sluice crashtest --seeds 1 --start {} --mode {} --fsync {}",
            self.seed,
            self.config.mode_name(),
            self.config.fsync_name()
        )
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} seed {}: {}\nreplay: {}",
            self.config,
            self.seed,
            self.what,
            self.replay_command()
        )
    }
}

/// What one seed did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SeedOutcome {
    /// When the power went (simulated ns).
    pub crash_ns: u64,
    /// Whether the workload was still running then.
    pub mid_run: bool,
    /// fsyncs, fdatasyncs and syncs that had returned (each checked).
    pub syncs: u64,
    /// Bytes of file contents compared with the model.
    pub bytes_checked: u64,
    /// Files past the indirect block's reach (4 MiB + 96 KiB: a double-indirect block)
    /// after recovery.
    pub big_files: u64,
    /// Files without a name but still open at the crash (removed while open) that the
    /// first recovery freed.
    pub orphans: u64,
    /// Last commits the crash cut that the first recovery dropped (single-flush
    /// commits: an intact commit record whose body or data did not land).
    pub cut: u64,
}

/// The harness for one configuration: the base image (an empty store with each task's
/// main file, committed) and the workload's length, to place the crashes in it.
#[derive(Debug)]
pub struct Harness {
    config: Config,
    base: DiskImage,
    end_ns: u64,
}

fn builder(seed: u64) -> StackBuilder {
    Stack::builder().device("nand").seed(seed)
}

impl Harness {
    /// Make the base image and measure the workload (its uncrashed run is checked too).
    pub fn new(config: Config) -> Result<Harness, Failure> {
        let fail = |what: String| Failure {
            config,
            seed: LENGTH_SEED,
            what,
        };
        let mode = config.mode;
        let base = builder(1)
            .build()
            .map_err(|e| fail(e.to_string()))?
            .run_until_crash(
                u64::MAX,
                CrashSpec {
                    seed: 0,
                    torn: false,
                },
                move || async move {
                    let f = File::create(IMG).await.expect("the store's file");
                    Store::mkfs(&f, Geometry::new(4096)).await.expect("mkfs");
                    let s = Store::mount(&f, mode).await.expect("mount");
                    for t in 0..TASKS {
                        s.create(&workload::main_name(t)).expect("create");
                    }
                    s.sync().await.expect("sync");
                },
            )
            .map_err(|e| fail(e.to_string()))?
            .image;
        let mut h = Harness {
            config,
            base,
            end_ns: u64::MAX,
        };
        let out = h.check_at(LENGTH_SEED, u64::MAX)?;
        h.end_ns = out.crash_ns;
        Ok(h)
    }

    /// The configuration.
    pub fn config(&self) -> Config {
        self.config
    }

    /// Run seed `seed`: the workload, a crash at the seed's instant, two recoveries and
    /// the checks.
    pub fn run(&self, seed: u64) -> Result<SeedOutcome, Failure> {
        // Spread over the workload's length (a prime step: neighbouring seeds fall far
        // apart).
        let at = self.end_ns / 1001 * (seed.wrapping_mul(7919) % 1000 + 1);
        self.check_at(seed, at)
    }

    fn check_at(&self, seed: u64, at: u64) -> Result<SeedOutcome, Failure> {
        let r = catch_unwind(AssertUnwindSafe(|| self.seed_run(seed, at)));
        let what = match r {
            Ok(Ok(out)) => return Ok(out),
            Ok(Err(what)) => what,
            Err(p) => {
                let msg = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "a panic".into());
                format!("panicked: {msg}")
            }
        };
        Err(Failure {
            config: self.config,
            seed,
            what,
        })
    }

    fn seed_run(&self, seed: u64, at: u64) -> Result<SeedOutcome, String> {
        let Config { mode, fsync } = self.config;
        let models: Vec<Rc<RefCell<TaskModel>>> = (0..TASKS)
            .map(|t| Rc::new(RefCell::new(TaskModel::new(workload::main_name(t)))))
            .collect();
        let ms = models.clone();
        let crashed = builder(seed)
            .image(self.base.clone())
            .build()
            .map_err(|e| e.to_string())?
            .run_until_crash(
                at,
                CrashSpec {
                    seed,
                    torn: seed.is_multiple_of(2),
                },
                move || async move {
                    let f = File::open(IMG).await.expect("the store's file");
                    let s = Store::mount(&f, mode).await.expect("mount");
                    s.set_fsync_path(fsync);
                    if inline(seed) {
                        s.set_inline(INLINE_BLOCKS);
                    }
                    if class_limits(seed) {
                        // A small buffer (normal tasks held to 12.8 KiB), so they
                        // pause and the flusher runs often.
                        s.set_class_limits(true);
                        s.set_buffer_limit(256 << 10);
                    }
                    let hs: Vec<_> = ms
                        .into_iter()
                        .enumerate()
                        .map(|(t, m)| {
                            // Even tasks are critical: in fjournal mode their fsyncs
                            // are f-transactions, the odd ones' normal commits.
                            let class = if t % 2 == 0 {
                                IoClass::Critical
                            } else {
                                IoClass::Normal
                            };
                            let ctx = TaskCtx::new(format!("t{t}")).class(class);
                            spawn(ctx, workload::task(s.clone(), t, seed, m))
                        })
                        .collect();
                    for h in hs {
                        h.await;
                    }
                },
            )
            .map_err(|e| e.to_string())?;
        // First recovery, then a power cut right after it; second recovery.
        let first = builder(seed)
            .image(crashed.image)
            .build()
            .map_err(|e| e.to_string())?
            .run_until_crash(
                u64::MAX,
                CrashSpec {
                    seed: seed ^ 1,
                    torn: true,
                },
                move || async move { observe(mode).await },
            )
            .map_err(|e| e.to_string())?;
        let (a, orphans, cut) = first.value.expect("the recovery ran to its end")?;
        let b = builder(seed)
            .image(first.image)
            .build()
            .map_err(|e| e.to_string())?
            .run(move || async move { observe(mode).await })
            .map_err(|e| e.to_string())?
            .value?
            .0;
        if a != b {
            return Err(format!(
                "a second recovery changed the store: {}",
                a.difference(&b)
            ));
        }
        let mut out = SeedOutcome {
            crash_ns: crashed.at_ns,
            mid_run: crashed.value.is_none(),
            orphans,
            cut,
            ..SeedOutcome::default()
        };
        for (t, m) in models.iter().enumerate() {
            let m = m.borrow();
            let mine: BTreeMap<String, Vec<u8>> = a
                .files
                .iter()
                .filter(|(n, _)| workload::owns(t, n))
                .map(|(n, (v, _))| (n.clone(), v.clone()))
                .collect();
            m.check(&mine).map_err(|e| format!("task {t}: {e}"))?;
            let change = a.files.get(&workload::main_name(t)).map_or(0, |f| f.1);
            if change < m.main_change {
                return Err(format!(
                    "task {t}: change counter {change} after recovery, {} fsynced",
                    m.main_change
                ));
            }
            out.syncs += m.syncs;
            out.bytes_checked += mine.values().map(|v| v.len() as u64).sum::<u64>();
            let reach = crate::layout::DOUBLE_START * crate::layout::BLOCK as u64;
            out.big_files += mine.values().filter(|v| v.len() as u64 > reach).count() as u64;
        }
        if let Some(n) = a
            .files
            .keys()
            .find(|n| !(0..TASKS).any(|t| workload::owns(t, n)))
        {
            return Err(format!("'{n}' after recovery: no task made such a file"));
        }
        Ok(out)
    }
}

/// What a mounted store shows: names with contents and change counters, metadata.
#[derive(Debug, PartialEq, Eq)]
struct Observed {
    files: BTreeMap<String, (Vec<u8>, u64)>,
    fingerprint: u32,
}

impl Observed {
    fn difference(&self, other: &Observed) -> String {
        if self.files.keys().ne(other.files.keys()) {
            return format!(
                "names {:?}, then {:?}",
                self.files.keys().collect::<Vec<_>>(),
                other.files.keys().collect::<Vec<_>>()
            );
        }
        for (n, f) in &self.files {
            if other.files[n] != *f {
                return format!(
                    "'{n}' differs ({} bytes, then {})",
                    f.0.len(),
                    other.files[n].0.len()
                );
            }
        }
        format!(
            "metadata fingerprint {:08x}, then {:08x}",
            self.fingerprint, other.fingerprint
        )
    }
}

/// Mount (recover), check the structure, and read everything; with the orphans the
/// mount freed and the cut commits it dropped.
async fn observe(mode: CommitMode) -> Result<(Observed, u64, u64), String> {
    let f = File::open(IMG).await.map_err(|e| e.to_string())?;
    let s = Store::mount(&f, mode)
        .await
        .map_err(|e| format!("mount: {e}"))?;
    let problems = s.check();
    if !problems.is_empty() {
        return Err(format!("check after recovery: {}", problems.join("; ")));
    }
    let mut files = BTreeMap::new();
    for (name, len) in s.list() {
        let h = s.open(&name).map_err(|e| e.to_string())?;
        let mut v = vec![0u8; len as usize];
        s.read(h, 0, &mut v).await.map_err(|e| e.to_string())?;
        let change = s.stat(h).map_err(|e| e.to_string())?.change;
        s.close(h).map_err(|e| e.to_string())?;
        files.insert(name, (v, change));
    }
    let observed = Observed {
        files,
        fingerprint: s.fingerprint(),
    };
    let st = s.stats();
    Ok((observed, st.orphans, st.discarded))
}
