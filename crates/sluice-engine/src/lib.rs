//! # sluice-engine
//!
//! The real engine: it runs fio job files on files (and, when allowed, block devices)
//! through io_uring with O_DIRECT, under the very same [`Policy`] objects the
//! simulator drives, and reports through the same [`Collector`], so `sluice run`
//! prints what `sluice sim` prints — measured instead of simulated.
//!
//! ```text
//!  worker 0..N (one OS thread, one event loop, one ring each)
//!    job threads (IoGen, Pacer, thinktime, runtime) ─ request slot + registered buffer
//!        │ submit (token = slot)                          ▲ Finished → Sample
//!        ▼                                                │
//!  ┌─ the device's one BlockLayer (sluice-block), shared under one lock ──────────┐
//!  │ admission → policy (admit, enqueue, dispatch, complete, timers, promote)    │
//!  │ RingPort: device-wide WRR arbiter + cap → outbox of the owning worker       │
//!  └────────────────────────────┬──────────────────────────▲─────────────────────┘
//!        owner writes the SQE (registered file, fixed buffer, user_data = tag);
//!        doorbell (eventfd) wakes it when another worker dispatched its piece
//!        ▼                                                 │
//!  io_uring: batched submit + wait ──────── CQE → piece_done(tag)
//! ```
//!
//! ## Workers
//! `workers` OS threads (default: the smaller of the available cores and the jobs'
//! total thread count). The job threads (`numjobs` of every job, in job order) are
//! dealt to the workers round robin. Each worker has its own ring; the device has **one
//! block layer and one policy instance** whatever the number of workers (see
//! `device.rs`: device-wide policy state stays one state, as the kernel's per-device
//! scheduler lock keeps it).
//!
//! ## Time
//! Only the engine reads the clock (monotonic, ns since the run's start); policies are
//! given that time. A sample's latency parts mean, here: **sched** = policy dispatch −
//! submission by the job thread (admission wait and policy queueing); **device** =
//! CQE reaped − dispatch (the SQE is written at dispatch and submitted by the
//! `io_uring_enter` that ends the same loop turn; staging in the WRR arbiter, when the
//! ring is at its cap, counts here, as waiting in an NVMe submission queue does in the
//! simulator); **post** = from the reap to the job thread handling the completion.
//!
//! ## Stonewall groups, stops, errors
//! Groups run one after the other on every worker; a group starts when every worker
//! finished the previous one. A stop request (Ctrl-C) ends every job at once; the
//! results so far are reported. An I/O error (negative CQE result or short transfer)
//! is counted per job (`error` in the report) with its first description in
//! [`EngineStats::errors`], never dropped.
#![warn(missing_docs, missing_debug_implementations)]

mod atomic;
mod buf;
mod buffered;
mod device;
mod early;
mod error;
mod extra;
mod files;
mod fill;
mod groups;
mod ptime;
mod queue;
mod ring;
mod sizes;
mod slab;
mod worker;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::Instant;

use sluice_core::policy::{self, Policy, PolicySpec};
use sluice_core::Nanos;
use sluice_metrics::{Collector, RunReport, RunSetup, VerifyFact};
use sluice_workload::{flows_of, stonewall_groups, JobSpec};

pub use error::EngineError;
pub use files::{free_bytes, plan, FilePlan, FileSet, PlannedFile};
pub use fill::resolve_fill;
pub use sizes::resolve_sizes;

use device::{DevState, Doorbell, RingPort};
use groups::{coordinate, worker_thread, GroupSync};
use ptime::PolicyTime;
use sluice_block::BlockLayer;
use sluice_fio::front::FrontConfig;
/// The arbiter's default weights (sluice-uring's, D2FQ's base 6).
pub use sluice_uring::D2FQ_WEIGHTS;
use worker::{PlannedThread, Worker, WorkerCfg, WorkerPlan, WorkerResult};

/// Settings of a real run that are not part of the job file.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// Where job files are created (fio's `directory`); relative `filename=`s are
    /// taken inside it.
    pub directory: PathBuf,
    /// Worker threads; `None`: min(available cores, total job threads).
    pub workers: Option<usize>,
    /// Allow block devices as job files.
    pub allow_device: bool,
    /// Allow writing to existing files sluice did not create.
    pub allow_write_existing: bool,
    /// Keep the files sluice created.
    pub keep_files: bool,
    /// Seed of the I/O generators (combined with each job's `randseed`).
    pub seed: u64,
    /// Width of a bandwidth-over-time bin; `None`: about 1/200 of the planned run.
    pub interval_ns: Option<Nanos>,
    /// Most commands in one worker's ring; `None`: the worker's total `iodepth` (so
    /// the arbiter only stages what the policy splits beyond it).
    pub ring_cap: Option<u32>,
    /// WRR weights of the high, medium and low classes.
    pub wrr_weights: [u32; 3],
    /// While a batch of completions is handled, new SQEs are submitted as soon as this
    /// many are ready (the rest go with the next wait); 1 gives each I/O to the kernel
    /// at once, as fio does. Default 4.
    pub submit_batch: u32,
    /// The page cache of buffered jobs (`direct=0`; used only when a job is).
    pub page_cache: sluice_fio::front::FrontConfig,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            directory: PathBuf::from("."),
            workers: None,
            allow_device: false,
            allow_write_existing: false,
            keep_files: false,
            seed: 1,
            interval_ns: None,
            ring_cap: None,
            wrr_weights: D2FQ_WEIGHTS,
            submit_batch: 4,
            page_cache: sluice_fio::front::FrontConfig::default(),
        }
    }
}

/// Facts about a real run.
#[derive(Clone, Debug, Default)]
pub struct EngineStats {
    /// Requests completed (inside and outside the measurement windows).
    pub ios: u64,
    /// Wall time of the run, ns.
    pub wall_ns: Nanos,
    /// `io_uring_enter` calls.
    pub enters: u64,
    /// CPU time of the process during the run (all threads), user and system, ns.
    pub cpu_user_ns: u64,
    /// See `cpu_user_ns`.
    pub cpu_sys_ns: u64,
    /// Whether the run was stopped early (Ctrl-C).
    pub interrupted: bool,
    /// Per job with errors: job name, error count, first error's description.
    pub errors: Vec<(String, u64, String)>,
    /// Per job with `verify`: what its checks found.
    pub verify: Vec<VerifyFact>,
}

/// The result of one real run.
#[derive(Debug)]
pub struct EngineOutput {
    /// The report, as the simulator's (engine facts in `extra`).
    pub report: RunReport,
    /// Facts about the run.
    pub stats: EngineStats,
}

/// What the workers share: the collector (locked once per batch of samples), the
/// job-thread counts, progress, and the stop flags.
pub(crate) struct Shared<'a> {
    pub collector: Mutex<Collector>,
    /// Threads of each job not yet finished, over all workers.
    pub job_live: Vec<AtomicU32>,
    /// fio's token flows (`flow`), shared by the workers' threads.
    pub tokens: Mutex<sluice_fio::TokenFlows>,
    /// Bytes issued per thread (progress only).
    pub issued: Vec<AtomicU64>,
    /// The caller's stop request.
    pub stop: &'a AtomicBool,
    /// Set when a worker failed: the others stop too.
    pub abort: AtomicBool,
    pub origin: Instant,
    pub interval_ns: Nanos,
    /// `exitall` and `steadystate`: jobs to end early, and the counts steady state is
    /// judged on.
    pub early: early::EarlyEnd,
}

impl Shared<'_> {
    pub(crate) fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed) || self.abort.load(Ordering::Relaxed)
    }
}

/// CPU time of this process so far (all threads): (user, system) in ns.
pub fn cpu_time_ns() -> (u64, u64) {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid out pointer.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
    (ns(ru.ru_utime), ns(ru.ru_stime))
}

fn total_threads(jobs: &[JobSpec]) -> Result<u32, EngineError> {
    let n: u64 = jobs.iter().map(|j| j.numjobs as u64).sum();
    if n > u16::MAX as u64 {
        return Err(EngineError::TooManyThreads(n));
    }
    Ok(n as u32)
}

/// How many workers a run of `jobs` under `cfg` uses: `cfg.workers`, or the smaller of
/// the available cores and the job threads; never more than the job threads.
pub fn worker_count(jobs: &[JobSpec], cfg: &EngineConfig) -> Result<usize, EngineError> {
    let threads = total_threads(jobs)? as usize;
    match cfg.workers {
        Some(0) => Err(EngineError::NoWorkers),
        Some(n) => Ok(n.min(threads).max(1)),
        None => {
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            Ok(cores.min(threads).max(1))
        }
    }
}

/// Check the jobs and the machine, then create and lay out the job files (progress:
/// `(file, bytes written, bytes to write)`). Every check — paths, O_DIRECT, alignment,
/// free space, block devices, whether a ring can be created — runs before the first
/// file is created. The returned set removes the files it created when dropped
/// (unless `keep_files`).
pub fn prepare(
    jobs: &[JobSpec],
    cfg: &EngineConfig,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(&std::path::Path, u64, u64),
) -> Result<FileSet, EngineError> {
    if jobs.is_empty() {
        return Err(EngineError::NoJobs);
    }
    let workers = worker_count(jobs, cfg)?;
    check_size(jobs, workers)?;
    flows_of(jobs)?;
    check_placement(jobs)?;
    let plan = files::plan(
        jobs,
        &cfg.directory,
        cfg.allow_device,
        cfg.allow_write_existing,
    )?;
    // atomic=1: the files' atomic write units, before anything is laid out.
    atomic::check(jobs, &plan)?;
    let _ = workers;
    // Every worker's ring is sized for the device-wide cap: can the kernel give it?
    let page_cache = queue::front_config(cfg.page_cache, &plan, &buffered_files(jobs, &plan));
    drop(ring::new_ring(ring::ring_entries(ring_cap(
        jobs,
        cfg,
        &page_cache,
    )))?);
    FileSet::prepare(plan, cfg.keep_files, stop, progress)
}

/// Refuse FDP jobs (their placement IDs need NVMe passthrough writes) and jobs that
/// need metadata or protection information (a namespace formatted with it).
fn check_placement(jobs: &[JobSpec]) -> Result<(), EngineError> {
    if let Some(j) = jobs.iter().find(|j| j.placement.fdp) {
        return Err(EngineError::Placement(j.name.clone()));
    }
    match sluice_workload::metadata_refusal(
        jobs,
        "`sluice run`'s files and block I/O have none (no NVMe passthrough)",
    ) {
        Some(e) => Err(EngineError::Metadata(e)),
        None => Ok(()),
    }
}

/// Most memory of I/O buffers one worker may pin (its threads' iodepth × the largest
/// block of its jobs): 4 GiB.
pub const MAX_BUFFER_BYTES: u64 = 4 << 30;

/// Check the run's size: sluice's limits (threads, requests in flight) and the buffer
/// memory of each worker (threads dealt round robin, as `run` deals them).
fn check_size(jobs: &[JobSpec], workers: usize) -> Result<(), EngineError> {
    sluice_workload::check_limits(jobs)?;
    let mut depth = vec![0u64; workers];
    let mut block = vec![0u64; workers];
    let mut g = 0usize;
    for s in jobs {
        let len = s.bs.read.max_len().max(s.bs.write.max_len()) as u64;
        for _ in 0..s.numjobs {
            let w = g % workers;
            depth[w] += s.iodepth.max(1) as u64;
            block[w] = block[w].max(len.div_ceil(4096) * 4096);
            g += 1;
        }
    }
    for w in 0..workers {
        let bytes = depth[w].saturating_mul(block[w]);
        if bytes > MAX_BUFFER_BYTES {
            return Err(EngineError::BufferMemory {
                worker: w,
                bytes,
                limit: MAX_BUFFER_BYTES,
            });
        }
    }
    Ok(())
}

/// Commands in all rings at most: `--ring-cap`, or the jobs' total `iodepth` (so the
/// arbiter stages only what the policy splits beyond it) plus, with buffered jobs, the
/// page cache's writeback requests in flight at most (`front`'s: the kernel's
/// writeback is not bounded by a job's depth — a buffered libaio job runs at depth 1).
fn ring_cap(jobs: &[JobSpec], cfg: &EngineConfig, front: &FrontConfig) -> u32 {
    let depth: u64 = jobs
        .iter()
        .map(|s| s.numjobs as u64 * s.iodepth.max(1) as u64)
        .sum();
    let writeback = if jobs.iter().any(|j| j.buffered) {
        let by_pages = front
            .writeback_pages
            .div_ceil(front.writeback_run_pages.max(1) as usize);
        front.writeback_depth.throttled.min(by_pages) as u64
    } else {
        0
    };
    cfg.ring_cap
        .unwrap_or((depth + writeback).min(u32::MAX as u64) as u32)
        .clamp(1, MAX_RING_CAP)
}

/// Per file of `plan`: whether a buffered job's thread uses it.
fn buffered_files(jobs: &[JobSpec], plan: &files::FilePlan) -> Vec<bool> {
    let mut out = vec![false; plan.files.len()];
    let threads = jobs
        .iter()
        .flat_map(|j| std::iter::repeat_n(j.buffered, j.numjobs as usize));
    for (b, &f) in threads.zip(&plan.thread_file) {
        if b {
            out[f as usize] = true;
        }
    }
    out
}

/// The largest ring cap: a ring holds the cap plus the doorbell read, and io_uring
/// allows at most 32768 entries.
const MAX_RING_CAP: u32 = 32767;

/// Run `jobs` under the policy `spec` on the prepared `files`. `progress` is called
/// about ten times a second with the fraction done; `stop` ends the run early with
/// the results so far.
pub fn run(
    jobs: &[JobSpec],
    files: &FileSet,
    spec: &PolicySpec,
    cfg: &EngineConfig,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(f64),
) -> Result<EngineOutput, EngineError> {
    let policy = policy::build(spec)?;
    run_with(jobs, files, policy, cfg, stop, progress)
}

/// Whether the buffered jobs can run through the page cache as configured.
fn check_buffered(
    jobs: &[JobSpec],
    cfg: &sluice_fio::front::FrontConfig,
) -> Result<(), EngineError> {
    cfg.cache
        .validate()
        .map_err(|e| EngineError::Buffered(e.to_string()))?;
    for s in jobs.iter().filter(|s| s.buffered) {
        let max_io = s.bs.read.max_len().max(s.bs.write.max_len());
        sluice_fio::front::check_job(cfg, &s.name, max_io, s.end_of_threads())
            .map_err(EngineError::Buffered)?;
    }
    Ok(())
}

/// Deal the threads to `n_workers` workers, round robin; each worker registers the
/// files its threads use (fixed-file indices in its order of first use).
fn deal(jobs: &[JobSpec], files: &FileSet, n_workers: usize) -> Vec<WorkerPlan> {
    let fplan = files.plan();
    let mut plans: Vec<WorkerPlan> = (0..n_workers)
        .map(|index| WorkerPlan {
            index,
            threads: Vec::new(),
            fds: Vec::new(),
            cache_files: Vec::new(),
        })
        .collect();
    let mut fixed_of: Vec<Vec<Option<u32>>> = vec![vec![None; fplan.files.len()]; n_workers];
    // Worker `w`'s fixed-file index of file `fi`, registering it on first use.
    let mut fixed = |plans: &mut [WorkerPlan], w: usize, fi: usize| -> u32 {
        *fixed_of[w][fi].get_or_insert_with(|| {
            use std::os::fd::AsRawFd;
            plans[w].fds.push(files.file(fi).as_raw_fd());
            (plans[w].fds.len() - 1) as u32
        })
    };
    // The page cache's files, registered on every worker below.
    let mut cached: Vec<usize> = Vec::new();
    let mut global = 0u32;
    for (j, s) in jobs.iter().enumerate() {
        for t in 0..s.numjobs {
            let w = global as usize % n_workers;
            let fi = fplan.thread_file[global as usize] as usize;
            if s.buffered && !cached.contains(&fi) {
                cached.push(fi);
            }
            let fixed = fixed(&mut plans, w, fi);
            plans[w].threads.push(PlannedThread {
                global,
                job: j as u32,
                index: t,
                file: fixed,
                base: fplan.files[fi].base,
                device: fplan.files[fi].device,
            });
            global += 1;
        }
    }
    // The page cache's files on every worker: its writeback goes out on whichever
    // worker is running (a file's own workers may have ended their jobs while a writer
    // elsewhere waits for room in the cache).
    for w in 0..n_workers {
        for &fi in &cached {
            let fixed = fixed(&mut plans, w, fi);
            plans[w]
                .cache_files
                .push((fplan.files[fi].base, fixed, fplan.files[fi].device));
        }
    }
    plans
}

/// The page cache of the buffered jobs, if any: each file's cache I/O goes out on the
/// first worker that has it open.
fn front_of(
    jobs: &[JobSpec],
    job_flow: &[sluice_core::FlowId],
    plans: &[WorkerPlan],
    page_cache: FrontConfig,
    n_workers: usize,
) -> Result<Option<buffered::EngineFront>, EngineError> {
    let mut front_files: Vec<sluice_fio::front::FrontFile> = Vec::new();
    // Every worker has every cache file open (`deal`), so the cache's I/O may go out
    // on any of them (the first 64: `FrontFile::open_on` is a bit set; the rest use
    // the file's own queue, the first worker with a thread on it).
    let open_on = if n_workers >= 64 {
        u64::MAX
    } else {
        (1u64 << n_workers) - 1
    };
    for p in plans {
        for t in &p.threads {
            if !jobs[t.job as usize].buffered || front_files.iter().any(|f| f.base == t.base) {
                continue;
            }
            front_files.push(sluice_fio::front::FrontFile {
                base: t.base,
                flow: job_flow[t.job as usize],
                hwq: p.index as u16,
                open_on,
            });
        }
    }
    if front_files.is_empty() {
        return Ok(None);
    }
    check_buffered(jobs, &page_cache)?;
    Ok(Some(buffered::EngineFront::new(
        page_cache,
        front_files,
        n_workers,
    )))
}

/// Per job with failed I/O over all workers: its name, the count, the first error.
fn job_errors(jobs: &[JobSpec], ok: &[WorkerResult]) -> Vec<(String, u64, String)> {
    let mut out = Vec::new();
    for (j, s) in jobs.iter().enumerate() {
        let n: u64 = ok.iter().map(|r| r.errors[j].count).sum();
        if n > 0 {
            let first = ok
                .iter()
                .find_map(|r| r.errors[j].first.clone())
                .unwrap_or_default();
            out.push((s.name.clone(), n, first));
        }
    }
    out
}

/// Per job with `verify`, its checks over all workers.
fn job_verify(jobs: &[JobSpec], ok: &[WorkerResult]) -> Vec<VerifyFact> {
    jobs.iter()
        .enumerate()
        .filter_map(|(j, s)| {
            let v = s.verify.as_ref()?;
            Some(VerifyFact {
                job: s.name.clone(),
                kind: v.kind.name().to_string(),
                checked: ok.iter().map(|r| r.verify[j].checked).sum(),
                failed: ok.iter().map(|r| r.verify[j].failed).sum(),
                first: ok.iter().find_map(|r| r.verify[j].first.clone()),
            })
        })
        .collect()
}

/// [`run`] with a policy object instead of a specification: for embedders and tests
/// with policies of their own. The one policy object serves every worker (see
/// [`EngineConfig::workers`]).
pub fn run_with(
    jobs: &[JobSpec],
    files: &FileSet,
    policy: Box<dyn Policy>,
    cfg: &EngineConfig,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(f64),
) -> Result<EngineOutput, EngineError> {
    if jobs.is_empty() {
        return Err(EngineError::NoJobs);
    }
    check_placement(jobs)?;
    let n_threads = total_threads(jobs)? as usize;
    let n_workers = worker_count(jobs, cfg)?;
    check_size(jobs, n_workers)?;
    let (flows, job_flow) = flows_of(jobs)?;
    let job_group = stonewall_groups(jobs);
    let n_groups = job_group.last().map_or(0, |g| g + 1);
    let fplan = files.plan();
    let policy_name = policy.name();

    let plans = deal(jobs, files, n_workers);

    let setup = RunSetup::for_jobs(jobs, &flows, &job_flow, cfg.interval_ns);
    let interval_ns = setup.interval_ns;
    // The buffered jobs' page cache writes back as the kernel's flusher would on their
    // disk: its largest request and writeback throttling's depths (`queue`).
    let page_cache = queue::front_config(cfg.page_cache, fplan, &buffered_files(jobs, fplan));
    let cap = ring_cap(jobs, cfg, &page_cache);
    let wcfg = WorkerCfg {
        seed: cfg.seed,
        submit_batch: cfg.submit_batch,
        job_flow: job_flow.clone(),
    };
    let entries = ring::ring_entries(cap);
    // The device's one block layer and its port, shared by the workers.
    let total_depth: u64 = jobs
        .iter()
        .map(|s| s.numjobs as u64 * s.iodepth.max(1) as u64)
        .sum();
    let max_inflight = (4 * total_depth.max(cap as u64)).min(u32::MAX as u64 / 2) as u32;
    let front = front_of(jobs, &job_flow, &plans, page_cache, n_workers)?;
    let dev = Mutex::new(DevState {
        block: BlockLayer::with_meter(policy, &flows, PolicyTime::new(), total_depth as usize),
        port: RingPort::new(n_workers, cap, max_inflight, cfg.wrr_weights),
        front,
    });
    let bells: Vec<Doorbell> = (0..n_workers)
        .map(|_| Doorbell::new())
        .collect::<Result<_, _>>()?;

    let cpu0 = cpu_time_ns();
    let shared = Shared {
        collector: Mutex::new(Collector::new(setup).with_fio_logs(jobs)),
        job_live: jobs.iter().map(|s| AtomicU32::new(s.numjobs)).collect(),
        tokens: Mutex::new(sluice_fio::TokenFlows::new(jobs)),
        issued: (0..n_threads).map(|_| AtomicU64::new(0)).collect(),
        stop,
        abort: AtomicBool::new(false),
        origin: Instant::now(),
        interval_ns,
        early: early::EarlyEnd::new(jobs, &job_group),
    };
    let mut steady = early::SteadyChecks::new(jobs);
    let sync = GroupSync {
        barrier: Barrier::new(n_workers + 1),
        start: AtomicU64::new(0),
        done: AtomicUsize::new(0),
        groups: n_groups,
        workers: n_workers,
    };
    let clock = || shared.origin.elapsed().as_nanos() as Nanos;

    let results: Vec<Result<WorkerResult, EngineError>> = std::thread::scope(|s| {
        let handles: Vec<_> = plans
            .iter()
            .map(|plan| {
                let (shared, sync, wcfg, dev, bells) = (&shared, &sync, &wcfg, &dev, &bells[..]);
                std::thread::Builder::new()
                    .name(format!("sluice-w{}", plan.index))
                    .spawn_scoped(s, move || {
                        let built = Worker::new(plan, jobs, wcfg, entries, shared, dev, bells);
                        worker_thread(built, plan.index, shared, sync)
                    })
                    .expect("spawn a worker thread")
            })
            .collect();
        coordinate(
            jobs,
            &job_group,
            &sync,
            &shared,
            &mut steady,
            &clock,
            progress,
        );
        handles
            .into_iter()
            .enumerate()
            .map(|(i, h)| {
                h.join()
                    .unwrap_or_else(|p| Err(EngineError::WorkerPanic(i, panic_text(&*p))))
            })
            .collect()
    });
    let wall_ns = clock();
    let cpu1 = cpu_time_ns();

    let mut ok = Vec::with_capacity(results.len());
    for r in results {
        ok.push(r?);
    }
    let last_job_end = ok.iter().map(|r| r.last_job_end).max().unwrap_or(0);
    let mut collector = shared.collector.into_inner().expect("collector lock");
    for (j, r) in steady.reports() {
        collector.set_steadystate(j, r);
    }
    let mut report = collector.finish(
        if last_job_end > 0 {
            last_job_end
        } else {
            wall_ns
        },
        policy_name,
    );

    let stats = EngineStats {
        ios: ok.iter().map(|r| r.ios).sum(),
        wall_ns,
        enters: ok.iter().map(|r| r.enters).sum(),
        cpu_user_ns: cpu1.0.saturating_sub(cpu0.0),
        cpu_sys_ns: cpu1.1.saturating_sub(cpu0.1),
        interrupted: stop.load(Ordering::Relaxed) || ok.iter().any(|r| r.interrupted),
        errors: job_errors(jobs, &ok),
        verify: job_verify(jobs, &ok),
    };
    let mut dev = dev.into_inner().expect("device lock");
    if let Some(ef) = dev.front.as_mut() {
        buffered::write_out(ef, files)?;
    }
    extra::fill_extra(&mut report, &ok, &dev, &stats, cfg, n_workers, fplan);
    Ok(EngineOutput { report, stats })
}

/// A panic's message (a `String` or a `&str` payload), or an empty string.
fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_fio::front::WritebackDepth;
    use sluice_workload::{parse_str, ParseOptions};

    fn jobs(text: &str) -> Vec<JobSpec> {
        parse_str(text, "test.fio", &ParseOptions::default())
            .unwrap()
            .jobs
    }

    #[test]
    fn the_ring_cap_makes_room_for_the_page_caches_writeback() {
        // Buffered libaio runs at depth 1 (as fio); the disk's writeback throttling
        // keeps up to 8 writes in flight: the rings take 4 × 1 + 8.
        let buffered = jobs("[w]\nrw=randwrite\nioengine=libaio\niodepth=16\nnumjobs=4\nsize=1m\n");
        let direct = jobs("[w]\ndirect=1\nrw=randwrite\nioengine=libaio\niodepth=16\nsize=1m\n");
        let cfg = EngineConfig::default();
        let front = FrontConfig::default().with_queue(
            4 << 20,
            WritebackDepth {
                background: 4,
                throttled: 8,
            },
        );
        assert_eq!(ring_cap(&buffered, &cfg, &front), 4 + 8);
        assert_eq!(ring_cap(&direct, &cfg, &front), 16);
        // Without the disk's limits: as many as the pages in flight allow (256 / 32).
        assert_eq!(ring_cap(&buffered, &cfg, &FrontConfig::default()), 4 + 8);
        // --ring-cap is the cap.
        let given = EngineConfig {
            ring_cap: Some(2),
            ..EngineConfig::default()
        };
        assert_eq!(ring_cap(&buffered, &given, &front), 2);
    }
}
