//! fio job files on the store: a parsed job set run as runtime tasks on an [`Fs`], so
//! the same code drives the simulated stack and real files (`sluice sim --fs …`,
//! `sluice run --fs …`).
//!
//! * **Threads.** The one fio runner ([`sluice_fio::Runner`]) runs the jobs, as it
//!   does in `sluice sim` and `sluice run`: its threads, `iodepth`, the generator and
//!   pacer (offsets, sizes, `nrfiles`, `file_service_type`, `rate`, `ramp_time`, the
//!   `fsync=N` count), `thinktime`, `runtime`, `stonewall`, samples. Each request
//!   is a runtime task with its thread's flow, weight and class
//!   (`sluice_flow`/`sluice_weight`/`sluice_critical`, `prio`/`prioclass` as the fio
//!   path maps them) doing one store call, so offsets and sizes are those of
//!   `sluice sim` on raw files for the same seed.
//! * **Files.** A thread's `nrfiles` files are store files named as fio names them,
//!   `jobname.thread.file`, each `offset + filesize` bytes long (the generator's one
//!   address space per thread is cut into them: file `i` holds bytes
//!   `[offset + i·filesize, offset + (i+1)·filesize)` of it, at `offset` in the file).
//!   They are laid out before the run, as fio and `sluice run` lay out raw files
//!   (created, written whole and synced, so writes overwrite allocated blocks), or
//!   with `create_on_open=1` created empty when the thread first does I/O to them
//!   (writes then allocate).
//! * **I/O.** `direct=1` goes through the store's direct path (`FsFile::write_at`,
//!   data home before it returns, blocks allocated in the running transaction);
//!   `direct=0` through its buffer (`write_buffered`/`read_buffered`), written home by
//!   commits and fsyncs. Data is position-determined ([`fill_pattern`]), so a file can
//!   be checked after a run.
//! * **Syncs.** `fsync=N`/`fdatasync=N`: after every N writes the thread quiesces (no
//!   new I/O until those in flight complete, as fio does), then fsyncs (or
//!   fdatasyncs: the store skips the commit when only the change counter moved) the
//!   file of the last write. `end_fsync` and `fsync_on_close`: each file of the
//!   thread is synced at the thread's end, one after the other, however it ended (by
//!   size or by its runtime, as fio syncs when its I/O loop ends). Each sync is a
//!   sample of the job's `sync` section.
//! * **Ends.** By size (the generator is exhausted), by `runtime` (nothing new is
//!   issued after it; I/Os in flight complete, and are not counted, as in fio and the
//!   other worlds — the end syncs are), or at an I/O error (the thread ends unless
//!   `continue_on_error` names the error's kind, as fio's: the runner's rule; the
//!   job's `error` counts it). `stonewall` groups
//!   run one after the other; `startdelay`, `ramp_time` and `thinktime` as in
//!   `sluice sim`.
//! * **Stop.** A stop flag ([`FioPlan::stop_on`], set by Ctrl-C) ends every job as its
//!   `runtime` would, at the next completion or wake-up the runner sees (I/Os in flight
//!   complete; a thread asleep — `startdelay`, `thinktime`, a `rate` — sees it when it
//!   wakes): later stonewall groups and files not laid out yet are skipped (the end
//!   syncs still go, as in the other worlds), and the store gets a normal commit of
//!   everything (`sync`), so it is left as a clean unmount would leave it. The report covers what ran and says it was
//!   interrupted ([`FioOutput::interrupted`], `extra.runtime.interrupted`).
//! * **Report.** One sample per fio I/O, timed around the store call (the runtime's
//!   clock): the same [`RunReport`] as `sluice sim` (per-job latency with fio's
//!   percentiles, the `sync` section, flows, fairness, JSON, plots). A store call may
//!   be several device I/Os (data, journal, FLUSH), so it has no single dispatch: the
//!   whole call is reported as time on the device (`sched_ns` and `post_ns` are 0).
//!   `extra` is the runtime's (block layer, device, tasks), with the store's read
//!   cache's counters as `extra.runtime.cache`.
//!
//! What this path refuses (a clear error, [`check`]): `filename=` (fio's own names are
//! used), `verify`, `steadystate`, `exitall`, reads with `create_on_open=1` (there is
//! nothing to read), files larger than a store file can be, more files than the store
//! has inodes, names longer than its directory takes. `directory=` is ignored with a
//! warning (the store has one flat directory).

mod thread;

use std::cell::RefCell;
use std::fmt;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use sluice_core::Nanos;
use sluice_metrics::{Collector, RunReport, RunSetup};
use sluice_runtime::{now, Stack};
use sluice_workload::{flows_of, stonewall_groups, JobSpec};

use crate::layout::{self, Geometry};
use crate::{Fs, FsConfig};

pub use thread::fill_pattern;

/// The name of the store's file in the stack's files (in the run directory on real
/// files).
pub const STORE_IMAGE: &str = "sluice-fio-store.img";

/// Largest file the store holds (its block map: direct blocks, an indirect and a
/// double-indirect block — 4 GiB + 4 MiB + 96 KiB).
pub const MAX_FILE_BYTES: u64 = layout::MAX_FILE_BLOCKS * layout::BLOCK as u64;

/// Why a job set cannot run on the store, or why the run failed.
#[derive(Debug, thiserror::Error)]
pub enum FioError {
    /// A job asks for something this path cannot do (bad input: what, where, how to fix).
    #[error("job '{job}' (line {line}): {what}")]
    Job {
        /// The job's name.
        job: String,
        /// Its section's line.
        line: usize,
        /// What is wrong and what to do.
        what: String,
    },
    /// The job set as a whole does not fit (files, weights).
    #[error("{0}")]
    Jobs(String),
    /// `--fs` names no store.
    #[error("{0}")]
    Config(String),
    /// Laying out, mounting or the runtime failed.
    #[error("{0}")]
    Run(String),
}

impl FioError {
    /// Whether the error is bad input (a command exits with 2) rather than a failed run.
    pub fn is_input(&self) -> bool {
        !matches!(self, FioError::Run(_))
    }
}

/// A checked job set: the store's configuration, sized for the jobs' files, and what
/// the run ignores.
#[derive(Clone, Debug)]
pub struct FioPlan {
    /// The store to make (its `blocks` sized for the files).
    pub fs: FsConfig,
    /// Options accepted and ignored, each saying what.
    pub warnings: Vec<String>,
    jobs: Rc<[JobSpec]>,
    /// Set (by Ctrl-C) to end the run early, with a report of what ran.
    stop: Option<Arc<AtomicBool>>,
    /// Called once when the run is under way ([`FioPlan::on_ready`]).
    ready: Option<fn()>,
}

/// The largest store image a simulated run takes, bytes (4 GiB): the simulated device
/// keeps every block written in memory (`sluice_device::Contents`), so the image's data
/// costs its own size in RAM.
pub const MAX_SIM_IMAGE_BYTES: u64 = 4 << 30;

impl FioPlan {
    /// Bytes of the store image the plan sized for its files.
    pub fn image_bytes(&self) -> u64 {
        match &self.fs {
            FsConfig::Store { blocks, .. } => blocks * layout::BLOCK as u64,
            _ => 0,
        }
    }

    /// For a simulated run: refuse an image over [`MAX_SIM_IMAGE_BYTES`] up front (its
    /// data would be held in memory), saying what to lower.
    pub fn check_simulated(&self) -> Result<(), FioError> {
        let bytes = self.image_bytes();
        if bytes > MAX_SIM_IMAGE_BYTES {
            return Err(FioError::Jobs(format!(
                "the jobs' files need a store image of {} MiB; a simulated store keeps its \
                 data in memory and holds at most {} MiB: lower size (or numjobs, nrfiles), \
                 or run it on a real file system with sluice run --fs",
                bytes >> 20,
                MAX_SIM_IMAGE_BYTES >> 20
            )));
        }
        Ok(())
    }

    /// End the run early once `flag` is set (by a signal handler: Ctrl-C), as the
    /// jobs' `runtime` would end them; the report covers what ran (module docs). The
    /// flag changes nothing while it is not set.
    pub fn stop_on(mut self, flag: Arc<AtomicBool>) -> FioPlan {
        self.stop = Some(flag);
        self
    }

    /// Call `f` once the run is under way: when its first sync has completed, or its
    /// first I/O when no job syncs — so a script that stops the run (Ctrl-C) can wait
    /// for it instead of guessing a time.
    pub fn on_ready(mut self, f: fn()) -> FioPlan {
        self.ready = Some(f);
        self
    }
}

/// fio's name of thread `thread`'s file `file` of `job`: `jobname.thread.file`.
pub fn file_name(job: &JobSpec, thread: u32, file: u32) -> String {
    format!("{}.{thread}.{file}", job.name)
}

/// Bytes of each of a job's files: the generator's `size` over `nrfiles`.
fn file_size(job: &JobSpec) -> u64 {
    (job.size / job.nrfiles.max(1) as u64).max(1)
}

/// Check `jobs` for the store path and size the store `fs` names for their files.
pub fn check(jobs: &[JobSpec], fs: &FsConfig) -> Result<FioPlan, FioError> {
    let FsConfig::Store { blocks, .. } = fs else {
        return Err(FioError::Config(
            "the fio runner needs a store (compound, fjournal, compound+async or \
             fjournal+async, each optionally +rcp); raw files run through the simulator and \
             the engine"
                .into(),
        ));
    };
    if jobs.is_empty() {
        return Err(FioError::Jobs("the job file has no jobs".into()));
    }
    sluice_workload::check_limits(jobs).map_err(|e| FioError::Jobs(e.to_string()))?;
    flows_of(jobs).map_err(|e| FioError::Jobs(e.to_string()))?;
    let mut warnings = Vec::new();
    let mut files = 0u64;
    let mut data_blocks = 0u64;
    for j in jobs {
        let bad = |what: String| FioError::Job {
            job: j.name.clone(),
            line: j.line,
            what,
        };
        if let Some(f) = &j.filename {
            return Err(bad(format!(
                "filename={f}: the store path names each thread's files as fio does \
                 (jobname.thread.file); remove filename=, or run without --fs"
            )));
        }
        if let Some(v) = &j.verify {
            return Err(bad(format!(
                "verify={}: not checked on the store path; remove it, or run on raw files \
                 (`sluice run` without --fs checks it)",
                v.kind.name()
            )));
        }
        if j.placement.fdp {
            return Err(bad(
                "fdp=1: the store's files have no NVMe placement IDs (FDP needs passthrough \
                 writes to an FDP namespace); remove it, or run without --fs under \
                 `sluice sim --device nand`"
                    .into(),
            ));
        }
        if let Some(e) = sluice_workload::metadata_refusal(
            std::slice::from_ref(j),
            "the store's files have none",
        ) {
            return Err(FioError::Jobs(e));
        }
        if j.steadystate.is_some() {
            return Err(bad(
                "steadystate: not supported on the store path; remove it, or run without --fs"
                    .into(),
            ));
        }
        if j.offset_increment != 0 {
            return Err(bad(
                "offset_increment: not supported on the store path; remove it, or run without --fs"
                    .into(),
            ));
        }
        if j.rw.trims() {
            return Err(bad(format!(
                "rw={}: the store has no trim (its File punches no holes); run it without --fs",
                j.rw.name()
            )));
        }
        if j.exitall {
            return Err(bad(
                "exitall: not supported on the store path; remove it, or run without --fs".into(),
            ));
        }
        if j.create_on_open && reads(j) {
            return Err(bad(format!(
                "create_on_open=1 with rw={}: the files would be created empty and there \
                 is nothing to read; drop create_on_open or make the job write only",
                j.rw.name()
            )));
        }
        if !j.directory.is_empty() {
            warnings.push(format!(
                "job '{}': directory={}: ignored on the store path (one flat directory, \
                 the store in the run's directory)",
                j.name,
                j.directory.join(":")
            ));
        }
        let len = j.offset.saturating_add(file_size(j));
        if len > MAX_FILE_BYTES {
            return Err(bad(format!(
                "each file would be {len} bytes (offset {} + file size {}); a store file \
                 holds at most {MAX_FILE_BYTES} bytes (4 GiB + 4 MiB + 96 KiB): give a smaller \
                 filesize/size or more nrfiles",
                j.offset,
                file_size(j)
            )));
        }
        let longest = file_name(j, j.numjobs.saturating_sub(1), j.nrfiles.saturating_sub(1));
        if longest.len() > layout::MAX_NAME || j.name.contains('/') {
            return Err(bad(format!(
                "file name '{longest}': the store takes names of at most {} bytes without \
                 '/'; give the job a shorter name (name=)",
                layout::MAX_NAME
            )));
        }
        let n = j.numjobs as u64 * j.nrfiles.max(1) as u64;
        files += n;
        // Data blocks and the map blocks of each file.
        let blocks = len.div_ceil(layout::BLOCK as u64);
        data_blocks += n * (blocks + layout::map_blocks_for(blocks));
    }
    let inodes = Geometry::new(0).inodes as u64;
    if files >= inodes {
        return Err(FioError::Jobs(format!(
            "the jobs have {files} files (numjobs × nrfiles over all jobs); the store has \
             {inodes} inodes: use fewer threads or files"
        )));
    }
    // Room for the files, a quarter more for frees deferred to a commit, and the areas.
    let want = data_blocks + data_blocks / 4 + 1024;
    let mut sized = (*blocks).max(16);
    while sized.saturating_sub(Geometry::new(sized).data_start()) < want {
        sized = sized.saturating_mul(2);
    }
    let mut fs = fs.clone();
    if let FsConfig::Store { blocks, .. } = &mut fs {
        *blocks = sized;
    }
    Ok(FioPlan {
        fs,
        warnings,
        jobs: jobs.to_vec().into(),
        stop: None,
        ready: None,
    })
}

/// The store configuration `text` (`compound`, `fjournal`, `compound+async`,
/// `fjournal+async`, each optionally `+rcp`: RCP's limits of buffered data) for a fio
/// run: its image is [`STORE_IMAGE`].
pub fn store_config(text: &str) -> Result<FsConfig, FioError> {
    match text.parse::<FsConfig>() {
        Ok(FsConfig::Host) => Err(FioError::Config(format!(
            "{text}: a fio job runs on host files without --fs (raw files, through the \
             simulator or the engine); give compound, fjournal, compound+async or \
             fjournal+async (each optionally +rcp) for the journaled store"
        ))),
        Ok(mut fs) => {
            if let FsConfig::Store { image, .. } = &mut fs {
                *image = STORE_IMAGE.into();
            }
            Ok(fs)
        }
        // The job runs on host files without --fs (`raw`), not `host`: say that.
        Err(e) if e.ends_with(crate::fs::STORE_GRAMMAR) => Err(FioError::Config(format!(
            "file system '{text}': give raw (host files, the default), or {}",
            crate::fs::STORE_GRAMMAR
        ))),
        Err(e) => Err(FioError::Config(e)),
    }
}

/// A finished run.
#[derive(Debug)]
pub struct FioOutput {
    /// The report: the fio jobs' figures, the runtime's `extra`.
    pub report: RunReport,
    /// Per job with failed I/O: its name, how many failed, the first error.
    pub errors: Vec<(String, u64, String)>,
    /// The store's counters at the end (commits, f-transactions, …).
    pub store: crate::StoreStats,
    /// The stop flag ended the run early ([`FioPlan::stop_on`]).
    pub interrupted: bool,
}

/// What [`run_jobs`] leaves: the collector of the fio jobs' samples, the measured end,
/// the errors.
#[derive(Debug)]
pub struct FioRun {
    /// The samples, per job.
    pub collector: Collector,
    /// When the last job ended (the report's end).
    pub end_ns: Nanos,
    /// Per job with failed I/O: its name, how many failed, the first error.
    pub errors: Vec<(String, u64, String)>,
    /// The stop flag ended the run early.
    pub interrupted: bool,
}

/// State the threads of a run share.
pub(crate) struct Shared {
    pub(crate) fs: Fs,
    pub(crate) jobs: Rc<[JobSpec]>,
    pub(crate) seed: u64,
    pub(crate) collector: RefCell<Collector>,
    /// Per job: failures and the first message.
    pub(crate) errors: RefCell<Vec<(u64, Option<String>)>>,
    pub(crate) stop: Option<Arc<AtomicBool>>,
    /// Called once the run is under way ([`FioPlan::on_ready`]), taken when called.
    pub(crate) ready: std::cell::Cell<Option<fn()>>,
}

impl Shared {
    /// Whether the stop flag is set.
    pub(crate) fn stopped(&self) -> bool {
        self.stop
            .as_ref()
            .is_some_and(|s| s.load(Ordering::Relaxed))
    }
}

impl fmt::Debug for Shared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shared")
            .field("jobs", &self.jobs.len())
            .finish()
    }
}

/// Run the checked jobs on `fs` (mounted on the current stack), from inside a task of
/// a stack: lay out their files, run the stonewall groups in turn, one task per fio
/// thread. `interval_ns`: the bandwidth bin (`None`: from the jobs' length).
pub async fn run_jobs(
    fs: &Fs,
    plan: &FioPlan,
    seed: u64,
    interval_ns: Option<Nanos>,
) -> Result<FioRun, FioError> {
    let jobs = plan.jobs.clone();
    let (flows, job_flow) = flows_of(&jobs).map_err(|e| FioError::Jobs(e.to_string()))?;
    let setup = RunSetup::for_jobs(&jobs, &flows, &job_flow, interval_ns);
    let collector = Collector::new(setup).with_fio_logs(&jobs);
    let sh = Rc::new(Shared {
        fs: fs.clone(),
        jobs: jobs.clone(),
        seed,
        collector: RefCell::new(collector),
        errors: RefCell::new(vec![(0, None); jobs.len()]),
        stop: plan.stop.clone(),
        ready: std::cell::Cell::new(plan.ready),
    });
    // Lay out the files that are not created on open (before the measurement).
    for (j, job) in jobs.iter().enumerate() {
        if job.create_on_open {
            continue;
        }
        for t in 0..job.numjobs {
            for f in 0..job.nrfiles.max(1) {
                if sh.stopped() {
                    break;
                }
                thread::lay_out(&sh, j, t, f).await.map_err(|e| {
                    FioError::Run(format!("laying out {}: {e}", file_name(job, t, f)))
                })?;
            }
        }
    }
    if jobs.iter().any(|j| !j.create_on_open) {
        fs.sync()
            .await
            .map_err(|e| FioError::Run(format!("syncing the laid-out files: {e}")))?;
    }
    // The runner's stonewall groups, one task per request (thread::Driver).
    let end_ns = if sh.stopped() {
        now()
    } else {
        // Bandwidth bins and flow rates count from the end of the first ramp.
        let groups = stonewall_groups(&jobs);
        let first = (0..jobs.len())
            .filter(|&j| groups[j] == 0)
            .map(|j| jobs[j].startdelay_ns + jobs[j].ramp_ns)
            .min()
            .unwrap_or(0);
        sh.collector.borrow_mut().set_window(now() + first);
        let driver = thread::Driver::new(sh.clone());
        driver.run().await;
        driver.finish().max(1)
    };
    let interrupted = sh.stopped();
    if interrupted {
        // What ran is made durable and the journal left clean, as an unmount would.
        fs.sync()
            .await
            .map_err(|e| FioError::Run(format!("syncing the store after the stop: {e}")))?;
    }
    let errors = sh
        .errors
        .borrow()
        .iter()
        .enumerate()
        .filter(|(_, e)| e.0 > 0)
        .map(|(j, e)| (jobs[j].name.clone(), e.0, e.1.clone().unwrap_or_default()))
        .collect();
    // Tasks still asleep (a runtime end after a job ended by size) hold the shared
    // state until the stack drops them: take the collector out.
    let empty = Collector::new(RunSetup {
        jobs: Vec::new(),
        flows: Vec::new(),
        interval_ns: 1,
        global_options: Vec::new(),
    });
    Ok(FioRun {
        collector: sh.collector.replace(empty),
        end_ns,
        errors,
        interrupted,
    })
}

/// Run the checked jobs on `stack`: mount (make) the store `plan` names, run them
/// ([`run_jobs`]) and report, with the runtime's figures in `extra`. The policy's name
/// is the stack's.
pub fn run(
    stack: Stack,
    plan: &FioPlan,
    seed: u64,
    interval_ns: Option<Nanos>,
) -> Result<FioOutput, FioError> {
    let p = plan.clone();
    let out = stack
        .run(move || async move {
            let fs = Fs::mount(&p.fs)
                .await
                .map_err(|e| FioError::Run(format!("the store {STORE_IMAGE}: {e}")))?;
            let r = run_jobs(&fs, &p, seed, interval_ns).await?;
            let stats = fs.store().map(|s| s.stats()).unwrap_or_default();
            let cache = fs.store().and_then(|s| s.read_cache_stats());
            Ok::<_, FioError>((r, stats, cache))
        })
        .map_err(|e| FioError::Run(e.to_string()))?;
    let (r, store, cache) = out.value?;
    let mut report = r.collector.finish(r.end_ns, &out.report.policy);
    report.policy = out.report.policy.clone();
    report.extra = out.report.extra;
    if let Some(rt) = report.extra.runtime.as_mut() {
        rt.interrupted = r.interrupted;
        // The jobs' page cache is the store's read cache (the stack has none).
        rt.cache = rt.cache.or(cache);
    }
    Ok(FioOutput {
        report,
        errors: r.errors,
        store,
        interrupted: r.interrupted,
    })
}

/// Whether a job reads at all.
pub(crate) fn reads(job: &JobSpec) -> bool {
    job.rw.reads() && !(job.rw.is_mixed() && job.rwmixread == 0)
}
