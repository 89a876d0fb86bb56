//! The hot-path collector: one [`Collector::record`] per completed I/O.

use crate::report::SteadyReport;

use crate::fiolog::FioLogs;
use sluice_core::{Flow, FlowId, IoClass, Nanos, Op};
use sluice_workload::JobSpec;

/// Most bandwidth bins per flow: when a sample would need more (a run far longer than
/// planned), adjacent bins merge and the bin width doubles, so the report's size does
/// not grow with the run's length.
pub const MAX_BINS: usize = 4096;

/// No bandwidth bin remembered ([`Collector::find_bin`]).
const NO_BIN: (Nanos, Nanos, usize) = (1, 0, 0);

/// Bandwidth bin used when [`RunSetup::interval_ns`] is 0.
pub const DEFAULT_INTERVAL_NS: Nanos = 100_000_000;

pub(crate) use acc::lat_bucket;
use acc::*;
pub use setup::{FlowInfo, JobInfo, RunSetup};

/// One completed I/O, with the four instants of its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    /// Index of the job in [`RunSetup::jobs`].
    pub job: usize,
    /// The thread's index within its job (`0..numjobs`; 0 for a job of one thread).
    pub thread: u32,
    /// Read, write or flush.
    pub op: Op,
    /// The request's class (normally the job's).
    pub class: IoClass,
    /// Bytes transferred.
    pub bytes: u32,
    /// When the application submitted it.
    pub submit_ns: Nanos,
    /// When the policy admitted it (equal to `submit_ns` when admission never waited).
    pub admit_ns: Nanos,
    /// When the scheduler dispatched it to the device.
    pub dispatch_ns: Nanos,
    /// When the device completed it.
    pub device_done_ns: Nanos,
    /// When the application reaped the completion.
    pub reaped_ns: Nanos,
    /// Whether it succeeded. A failed sample counts as an error, not as an I/O.
    pub ok: bool,
}

#[inline]
fn dir_index(op: Op) -> usize {
    match op {
        Op::Read => 0,
        Op::Write => 1,
        Op::Flush => 2,
        Op::Trim => 3,
    }
}

/// Accumulates the samples of one run. See the crate documentation for the definitions.
///
/// Indexing: [`Sample::job`] must be an index into [`RunSetup::jobs`] and every
/// [`JobInfo::flow`] an index into [`RunSetup::flows`]; otherwise the collector panics.
///
/// # Units
/// The counts are kept per *unit*: each thread of a job with several threads and
/// without `group_reporting` is a unit of its own (fio reports it as a job of its
/// own), any other job is one unit. [`Collector::finish`] merges units into fio's
/// report entries and into one report per job section.
#[derive(Debug, Clone)]
pub struct Collector {
    setup: RunSetup,
    /// The units' counts (see the type's documentation), job by job.
    units: Vec<JobAcc>,
    /// Per job: its first unit and whether each of its threads is a unit.
    unit_base: Vec<usize>,
    split: Vec<bool>,
    /// Per unit: its job.
    unit_job: Vec<usize>,
    /// Per job: when it ended ([`Collector::job_done`]).
    job_done_ns: Vec<Option<Nanos>>,
    flows: Vec<FlowAcc>,
    /// Per class, the samples of another class than their job's (a promoted request);
    /// a class's figures are these and those of its jobs' own samples.
    classes: [ClassAcc; 3],
    /// Start of the measurement window and origin of the bandwidth bins.
    origin_ns: Nanos,
    interval_ns: Nanos,
    /// The bandwidth bin of the last sample: its span after the origin and its index.
    last_bin: (Nanos, Nanos, usize),
    /// fio's log files the jobs ask for ([`Collector::with_fio_logs`]).
    logs: Option<Box<FioLogs>>,
    /// Per job: its steady-state outcome ([`Collector::set_steadystate`]).
    steady: Vec<Option<SteadyReport>>,
}

impl Collector {
    /// A collector for the run described by `setup`, measuring from time 0 until
    /// [`Collector::set_window`] says otherwise.
    ///
    /// # Panics
    /// If a job names a flow that is not in `setup.flows`.
    pub fn new(setup: RunSetup) -> Collector {
        for j in &setup.jobs {
            assert!(
                j.flow < setup.flows.len(),
                "job {} names flow {} but there are {} flows",
                j.name,
                j.flow,
                setup.flows.len()
            );
        }
        let interval_ns = if setup.interval_ns == 0 {
            DEFAULT_INTERVAL_NS
        } else {
            setup.interval_ns
        };
        let mut c = Collector {
            units: Vec::new(),
            unit_base: Vec::new(),
            split: Vec::new(),
            unit_job: Vec::new(),
            job_done_ns: Vec::new(),
            flows: vec![FlowAcc::default(); setup.flows.len()],
            classes: std::array::from_fn(|_| ClassAcc::new()),
            origin_ns: 0,
            interval_ns,
            last_bin: NO_BIN,
            logs: None,
            steady: Vec::new(),
            setup: RunSetup::default(),
        };
        let mut setup = setup;
        let jobs = std::mem::take(&mut setup.jobs);
        c.setup = setup;
        for j in jobs {
            c.push_job(j, 0);
        }
        c
    }

    /// Add job `job` and its units, whose windows start at `start_ns`.
    fn push_job(&mut self, job: JobInfo, start_ns: Nanos) -> usize {
        let j = self.setup.jobs.len();
        let split = job.threads > 1 && !job.group_reporting;
        let n = if split { job.threads as usize } else { 1 };
        self.unit_base.push(self.units.len());
        self.split.push(split);
        self.job_done_ns.push(None);
        for _ in 0..n {
            self.units.push(JobAcc::new(start_ns));
            self.unit_job.push(j);
        }
        self.setup.jobs.push(job);
        j
    }

    /// The unit of thread `thread` of job `job`.
    #[inline]
    fn unit(&self, job: usize, thread: u32) -> usize {
        let base = self.unit_base[job];
        if self.split[job] {
            let n = self.setup.jobs[job].threads;
            debug_assert!(thread < n, "thread {thread} of a job of {n}");
            base + thread.min(n - 1) as usize
        } else {
            base
        }
    }

    /// The units of job `job`.
    fn units_of(&self, job: usize) -> std::ops::Range<usize> {
        let end = self
            .unit_base
            .get(job + 1)
            .copied()
            .unwrap_or(self.units.len());
        self.unit_base[job]..end
    }

    /// Add `d` to the depth maps of thread `thread` of job `job` (a runner's, at the
    /// end of the run).
    pub fn add_depths(&mut self, job: usize, thread: u32, d: &crate::IoDepths) {
        if job < self.setup.jobs.len() {
            let u = self.unit(job, thread);
            self.units[u].depths.add(d);
        }
    }

    /// The latency-target search of thread `thread` of job `job` settled on `depth`
    /// (fio's `latency_depth`; threads reported together give the deepest).
    pub fn set_latency_depth(&mut self, job: usize, thread: u32, depth: u32) {
        if job < self.setup.jobs.len() {
            let u = self.unit(job, thread);
            let a = &mut self.units[u];
            a.latency_depth = Some(a.latency_depth.map_or(depth, |d| d.max(depth)));
        }
    }

    /// Record job `job`'s steady-state outcome for its report.
    pub fn set_steadystate(&mut self, job: usize, r: SteadyReport) {
        if self.steady.len() <= job {
            self.steady.resize(job + 1, None);
        }
        self.steady[job] = Some(r);
    }

    /// Keep the fio log files (`write_bw_log`, …) that `jobs` (the jobs of
    /// [`RunSetup::for_jobs`], in the same order) ask for; they come back in
    /// [`RunReport::logs`](crate::RunReport::logs).
    pub fn with_fio_logs(mut self, jobs: &[JobSpec]) -> Collector {
        self.logs = FioLogs::for_jobs(jobs).map(Box::new);
        self
    }

    /// Add a flow after construction (an application's task with a new flow name);
    /// returns its index.
    pub fn add_flow(&mut self, flow: FlowInfo) -> usize {
        self.setup.flows.push(flow);
        self.flows.push(FlowAcc::default());
        self.setup.flows.len() - 1
    }

    /// Add a job after construction (the runtime's (flow, activity) pairs appear as
    /// tasks issue I/O); returns its index. Its window starts at the run's.
    pub fn add_job(&mut self, job: JobInfo) -> usize {
        assert!(
            job.flow < self.setup.flows.len(),
            "job {} names an unknown flow",
            job.name
        );
        self.push_job(job, self.origin_ns)
    }

    /// The bandwidth bin width in use.
    pub fn interval_ns(&self) -> Nanos {
        self.interval_ns
    }

    /// Start measuring at `start_ns` (fio's `ramp_time`): samples reaped earlier are not
    /// counted. Sets the start of *every* job (overriding earlier
    /// [`Collector::set_job_window`] calls), the start of the run's duration and the origin
    /// of the bandwidth-over-time bins. Call it before recording samples of the window.
    pub fn set_window(&mut self, start_ns: Nanos) {
        self.origin_ns = start_ns;
        self.last_bin = NO_BIN;
        for u in &mut self.units {
            u.start_ns = start_ns;
        }
    }

    /// Start measuring job `job` at `start_ns` (a job with its own `startdelay` or
    /// `ramp_time`). Its runtime counts from there. Samples it completes before the run's
    /// origin (set by [`Collector::set_window`]) land in the first bandwidth bin.
    pub fn set_job_window(&mut self, job: usize, start_ns: Nanos) {
        for u in self.units_of(job) {
            self.units[u].start_ns = start_ns;
        }
    }

    /// Job `job` finished (a size-based job completed its bytes) at `now_ns`: its runtime
    /// ends there instead of at the end of the run. The first call wins.
    /// Its threads reported on their own end there too, unless they ended before
    /// ([`Collector::thread_done`]).
    pub fn job_done(&mut self, job: usize, now_ns: Nanos) {
        if self.job_done_ns[job].is_none() {
            self.job_done_ns[job] = Some(now_ns);
        }
        for u in self.units_of(job) {
            let u = &mut self.units[u];
            if u.done_ns.is_none() {
                u.done_ns = Some(now_ns);
            }
        }
    }

    /// Thread `thread` of job `job` is done at `now_ns` (its share of a size-based
    /// job, before the job's last thread): as fio's, the runtime of its own report
    /// entry ends there (threads reported together end with their job). The first
    /// call, or [`Collector::job_done`], wins.
    pub fn thread_done(&mut self, job: usize, thread: u32, now_ns: Nanos) {
        if !self.split[job] {
            return;
        }
        let u = self.unit(job, thread);
        let u = &mut self.units[u];
        if u.done_ns.is_none() {
            u.done_ns = Some(now_ns);
        }
    }

    /// Count an error of kind `errno` ([`crate::errors`]) of job `job` that produced
    /// no sample (e.g. a failed submission), against its first thread.
    pub fn record_error(&mut self, job: usize, op: Op, errno: i32) {
        self.record_thread_error(job, 0, op, errno);
    }

    /// Count an error of kind `errno` of thread `thread` of job `job` that produced no
    /// sample (a failed verify check: `EILSEQ`; a missed latency target: `ETIMEDOUT`).
    /// The job's `continue_on_error` sorts it as continued or thread-ending, as fio.
    pub fn record_thread_error(&mut self, job: usize, thread: u32, op: Op, errno: i32) {
        let u = self.unit(job, thread);
        let on = &self.setup.jobs[job].continue_on;
        self.units[u].errors.add(errno, op, on);
    }

    /// Record one completed I/O. O(1); allocates only when a histogram or the bandwidth
    /// series has to grow. Samples reaped before their job's window start are ignored;
    /// failed samples (`ok == false`) count as errors only. Instants out of order are
    /// treated as zero-length parts (saturating subtraction).
    #[inline]
    pub fn record(&mut self, s: &Sample) {
        let unit = self.unit(s.job, s.thread);
        let job = &mut self.units[unit];
        if s.reaped_ns < job.start_ns {
            return;
        }
        if !s.ok {
            // A failed I/O: EIO, as a media error gives a Linux caller.
            let on = &self.setup.jobs[s.job].continue_on;
            job.errors.add(crate::errors::EIO, s.op, on);
            return;
        }
        let lat = s.reaped_ns.saturating_sub(s.submit_ns);
        let clat = s.reaped_ns.saturating_sub(s.dispatch_ns);
        let sched = s.dispatch_ns.saturating_sub(s.submit_ns);
        let device = s.device_done_ns.saturating_sub(s.dispatch_ns);
        let post = s.reaped_ns.saturating_sub(s.device_done_ns);
        let bytes = s.bytes as u64;

        if let Some(l) = &mut self.logs {
            l.record(s, job.start_ns);
        }
        let admit = s.admit_ns.saturating_sub(s.submit_ns);
        let info = &self.setup.jobs[s.job];
        if !job.mixed && s.class == info.class {
            // Its class's figures are the job's (summed in `finish`).
            job.admit.add(admit);
        } else {
            if !job.mixed {
                // The first sample of another class: the job's samples so far go to its
                // class now, its later ones one by one.
                job.mixed = true;
                self.classes[info.class.index()].fold(job);
            }
            let class = &mut self.classes[s.class.index()];
            class.ios += 1;
            class.bytes += bytes;
            class.lat.add(lat, sched, device, post);
            class.admit.add(admit);
        }
        let fi = info.flow;
        let rel = s.reaped_ns.saturating_sub(self.origin_ns);
        let (lo, hi, last) = self.last_bin;
        let bin = if lo <= rel && rel < hi {
            last
        } else {
            self.find_bin(rel)
        };
        let job = &mut self.units[unit];
        job.lat_buckets[lat_bucket(clat)] += 1;
        let dir = &mut job.dirs[dir_index(s.op)];
        dir.ios += 1;
        dir.bytes += bytes;
        dir.lat.add(lat, sched, device, post);
        dir.clat.add(clat);
        dir.bins.add(bin, bytes);

        self.flows[fi].ios += 1;
        self.flows[fi].bytes += bytes;
        let flow = &mut self.flows[fi];
        if bin >= flow.bins.len() {
            flow.bins.resize(bin + 1, 0);
        }
        flow.bins[bin] += bytes;
    }

    /// The bandwidth bin of a sample reaped `rel` after the origin (coarsening the bins
    /// when it lies beyond the last); remembered for the samples that follow.
    #[cold]
    fn find_bin(&mut self, rel: Nanos) -> usize {
        let mut bin = (rel / self.interval_ns) as usize;
        while bin >= MAX_BINS {
            self.coarsen();
            bin = (rel / self.interval_ns) as usize;
        }
        let lo = bin as Nanos * self.interval_ns;
        self.last_bin = (lo, lo.saturating_add(self.interval_ns), bin);
        bin
    }

    /// Merge adjacent bandwidth bins and double the bin width.
    fn coarsen(&mut self) {
        for f in &mut self.flows {
            let merged: Vec<u64> = f.bins.chunks(2).map(|c| c.iter().sum()).collect();
            f.bins = merged;
        }
        for j in &mut self.units {
            for d in &mut j.dirs {
                d.bins.coarsen();
            }
        }
        self.interval_ns *= 2;
        self.last_bin = NO_BIN;
    }
}

mod acc;
mod bins;
mod finish;
mod setup;

#[cfg(test)]
mod tests;
