//! The job threads of a run as one state machine, driven by a world through a
//! [`Port`].
//!
//! # A thread's life
//! `Idle` (its stonewall group has not started) → `Running` (issues as far as its
//! `iodepth`, the pacer and its size allow; the first issue waits for `startdelay`)
//! → `Stopping` (its size is done, its `runtime` is over or the run was interrupted:
//! it issues nothing more and waits for its requests in flight) → `Done`.
//!
//! # Invariants
//! * `outstanding ≤ iodepth` for every thread; a thread is `Done` only with nothing
//!   outstanding.
//! * A job ends once (its `runtime`, `exitall`, steady state, an interrupt or its
//!   last thread): the first end is the one recorded ([`Port::job_done`]); samples of
//!   I/Os that complete after a time-based end are not taken, as in fio, except the
//!   end sync (`end_fsync`), which fio issues after its I/O loop and counts.
//! * Pacing (`rate`, `rate_iops`, `rate_process`) counts from the job's start
//!   (`startdelay` after its group started).
//! * A thread's `thinktime` runs from the instant its completion was reaped.
//!
//! # Scope
//! A [`Scope::Whole`] runner has every thread of the run (the simulator): it counts a
//! job's live threads itself, starts the next stonewall group when one ends and
//! tracks steady state. A [`Scope::Part`] runner has a share of the threads (one
//! worker of the io_uring engine): the world counts live threads over all parts
//! ([`Port::thread_done`]), starts groups and decides steady state.

use sluice_block::{Finished, NewRequest};
use sluice_core::{FlowId, IoClass, Nanos, Op};
use sluice_metrics::{IoDepths, Sample};
use sluice_workload::{
    exit_targets, stonewall_groups, stream_seed, IoSource, IoSpec, JobSpec, NextIo, PlacementDraw,
    PrioDraw, SteadyTrack,
};

use crate::latency::{LatTarget, LatVerdict};
use crate::tokens::TokenFlows;
use crate::verify::Verifier;
use crate::zbd::{ZRange, Zbd};
use sluice_workload::ZoneSpec;
use zoned::Held;

mod zoned;

/// How often a waiting job of a [`Scope::Part`] runner looks whether its waitee is
/// done (1 ms).
pub const WAIT_POLL_NS: Nanos = 1_000_000;

/// How often a thread of a [`Scope::Part`] runner over its token-flow share without
/// `flow_sleep` looks again (50 µs).
pub const FLOW_POLL_NS: Nanos = 50_000;

/// How much of the run a [`Runner`] has (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Every thread: the runner chains stonewall groups and tracks steady state.
    Whole,
    /// A share of the threads: the world chains groups and decides steady state.
    Part,
}

/// One request a thread issues.
#[derive(Debug)]
pub struct Submit<'a> {
    /// The runner's index of the thread.
    pub thread: u32,
    /// The thread's job.
    pub job: u32,
    /// The request for the block layer (offset in the planned address space, the
    /// job's flow and class, the thread's hardware queue).
    pub req: NewRequest,
    /// The I/O as the job sees it (offset within its file).
    pub io: IoSpec,
    /// A read whose data the thread's verifier checks at completion.
    pub check: bool,
    /// The thread's verifier, to fill a write's buffer ([`Verifier::fill`]) — only
    /// in a world that carries data.
    pub verify: Option<&'a mut Verifier>,
}

/// The data of a verify thread's completed request, for its checks.
#[derive(Debug)]
pub struct VerifyDone<'a> {
    /// The I/O's offset within its file.
    pub offset: u64,
    /// It was submitted with [`Submit::check`].
    pub check: bool,
    /// The request's buffer (`len` bytes).
    pub data: &'a [u8],
}

/// What a world gives the runner.
pub trait Port {
    /// Issue a thread's request.
    fn submit(&mut self, s: Submit<'_>);
    /// Call [`Runner::wake`] for `thread` at `at` (an earlier wake supersedes a later
    /// one; the runner asks only for earlier ones).
    fn wake_at(&mut self, thread: u32, at: Nanos);
    /// Job `job` starts at `start_ns` (its group's start plus its `startdelay`).
    fn job_start(&mut self, job: u32, start_ns: Nanos) {
        let _ = (job, start_ns);
    }
    /// Call [`Runner::end_job`] for `job` at `at`, its `runtime`'s end.
    fn end_at(&mut self, job: u32, at: Nanos);
    /// Call [`Runner::steady_check`] for `job` at `at` (a [`Scope::Whole`] runner's
    /// jobs with `ss_dur`).
    fn steady_at(&mut self, job: u32, at: Nanos) {
        let _ = (job, at);
    }
    /// One completed I/O.
    fn record(&mut self, s: &Sample);
    /// An error of kind `errno` (`sluice_metrics::errors`) of thread `thread` (its
    /// index within the job) of `job` that produced no sample (a failed verify check).
    fn record_error(&mut self, job: usize, thread: u32, op: Op, errno: i32);
    /// Job `job` ended at `at` (called once per end; the first call counts).
    fn job_done(&mut self, job: usize, at: Nanos);
    /// Thread `thread` (its index within the job) of job `job` is done at `at`:
    /// its I/O issued and drained (fio reports it as a job of its own, whose runtime
    /// ends there; [`Collector::thread_done`]). Called before the job's
    /// [`Port::job_done`] when it is the job's last.
    ///
    /// [`Collector::thread_done`]: sluice_metrics::Collector::thread_done
    fn thread_end(&mut self, job: usize, thread: u32, at: Nanos);
    /// Job `job` ended and ends others (`exitall`, `exit_what`: [`exit_targets`]): end
    /// `others`, those of them still
    /// running here, now. (A [`Scope::Part`] world ends them in every part.)
    fn exit_all(&mut self, job: u32, others: &[u32]);
    /// Whether every thread of `job` is done over the whole run (for `wait_for` in a
    /// [`Scope::Part`] world; a [`Scope::Whole`] runner knows it itself).
    fn job_over(&mut self, job: u32) -> bool {
        let _ = job;
        false
    }
    /// fio's token flow `f` shared by the parts of a [`Scope::Part`] world: add the
    /// deltas and give `(count, total weight)` after (`None`: the runner's own count).
    fn token_flow(&mut self, f: usize, d_count: i64, d_weight: i64) -> Option<(u64, u64)> {
        let _ = (f, d_count, d_weight);
        None
    }
    /// A thread of `job` is done: whether it was the job's last over the whole run.
    /// Asked of [`Scope::Part`] worlds only.
    fn thread_done(&mut self, job: u32) -> bool {
        let _ = job;
        true
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Idle,
    /// Its job waits for another (`wait_for`): counted active, issuing nothing.
    Waiting,
    Running,
    Stopping,
    Done,
}

#[derive(Debug)]
struct Thread {
    job: u32,
    base: u64,
    hwq: u16,
    source: IoSource,
    outstanding: u32,
    iodepth: u32,
    state: State,
    wake_at: Option<Nanos>,
    verify: Option<Box<Verifier>>,
    /// fio's per-I/O priorities (`cmdprio_*`): the class of each I/O drawn high.
    prio: Option<PrioDraw>,
    /// NVMe FDP (`fdp=1`): each write's placement ID ([`Runner::set_placement`]).
    place: Option<PlacementDraw>,
    /// fio's token flow (`flow`): the flow, the thread's weight and its I/O count.
    tok: Option<(usize, u32)>,
    tok_count: u64,
    /// fio's queue-depth search (`latency_target`).
    lat: Option<LatTarget>,
    /// Its part of fio's depth maps.
    depths: depths::ThreadDepths,
    /// Its index within its job.
    index: u32,
    /// `zonemode=zbd` on a zoned device: its zones, an I/O held for a zone reset,
    /// and the zone of its reset in flight.
    zr: Option<ZRange>,
    zstash: Option<Held>,
    zreset: Option<u32>,
    /// `fill_device`: a write of the thread's found no space (ENOSPC, EDQUOT): the
    /// thread is done, without an error (see [`crate::fill`]).
    filled: bool,
}

impl Thread {
    /// The thread issues nothing more (its generator ends, no wake-up); a running
    /// thread drains what it has in flight.
    fn stop_issuing(&mut self) {
        self.source.end_now();
        self.wake_at = None;
        if self.state == State::Running {
            self.state = State::Stopping;
        }
    }
}

/// What the runner keeps of a job's options.
#[derive(Debug)]
struct JobOpts {
    startdelay_ns: Nanos,
    ramp_ns: Nanos,
    runtime_ns: Option<Nanos>,
    thinktime_ns: Nanos,
    /// The jobs its end ends (`exitall`, `exit_what`).
    exits: Vec<u32>,
    time_based: bool,
    /// Bytes per thread, and threads (for the progress).
    size: u64,
    numjobs: u32,
    /// `wait_for`: the job whose threads must all be done before this one starts.
    wait_for: Option<u32>,
    /// fio's `flow_sleep`.
    flow_sleep_ns: Nanos,
    /// `fill_device`: running out of space ends the job, not as an error.
    fill: bool,
    /// `atomic=1`: its writes are atomic (`Request::atomic`, `RWF_ATOMIC`).
    atomic: bool,
    /// `continue_on_error`: the failures a thread goes on after.
    continue_on: sluice_workload::ContinueOn,
}

#[derive(Debug)]
struct JobRt {
    opts: JobOpts,
    flow: FlowId,
    class: IoClass,
    group: usize,
    /// It has threads in this runner.
    here: bool,
    start_ns: Nanos,
    /// When its `runtime` runs out, once it started.
    end_ns: Option<Nanos>,
    /// When it ended, if it did.
    ended_ns: Option<Nanos>,
    /// Every thread of it here is done.
    done: bool,
    /// Its threads here not done yet.
    live: u32,
    /// Its threads here (runner indices).
    threads: Vec<u32>,
    /// fio's steady-state detection (`ss_dur`), in a [`Scope::Whole`] runner.
    ss: Option<SteadyTrack>,
    /// Its zone options.
    zone: ZoneSpec,
}

/// One thread given to a runner: its job, its index within the job, where its file
/// starts in the address space and the hardware queue it submits from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadSetup {
    /// Its job.
    pub job: u32,
    /// Its index within the job.
    pub index: u32,
    /// Its file's base in the address space.
    pub base: u64,
    /// The hardware queue (simulated core, engine worker) it submits from.
    pub hwq: u16,
}

/// The job threads of a run (or of a part of it). See the module documentation.
#[derive(Debug)]
pub struct Runner {
    scope: Scope,
    threads: Vec<Thread>,
    jobs: Vec<JobRt>,
    groups: Vec<Vec<u32>>,
    group: usize,
    /// Threads started and not done.
    active: u32,
    last_job_end: Nanos,
    /// Interrupted: no group starts any more.
    stopped: bool,
    /// fio's token flows (`flow`), and per flow the threads over their share waiting
    /// for another thread of it to issue (a [`Scope::Whole`] runner's, `flow_sleep=0`).
    tokens: TokenFlows,
    blocked: Vec<Vec<u32>>,
    /// The zones of a zoned device, for `zonemode=zbd` jobs ([`Runner::set_zoned`]).
    zbd: Option<Zbd>,
    /// The run's seed (the threads' streams, placement draws).
    seed: u64,
}

impl Runner {
    /// A runner for `threads` of `specs` (`job_flow`: each job's flow). `data`: the
    /// world carries data, so verify jobs read back and check (else they run without
    /// their verify reads). Nothing starts before [`Runner::start_group`].
    pub fn new(
        specs: &[JobSpec],
        job_flow: &[FlowId],
        threads: &[ThreadSetup],
        seed: u64,
        scope: Scope,
        data: bool,
    ) -> Runner {
        let group_of = stonewall_groups(specs);
        let mut groups: Vec<Vec<u32>> = vec![Vec::new(); group_of.last().map_or(0, |g| g + 1)];
        for (j, &g) in group_of.iter().enumerate() {
            groups[g].push(j as u32);
        }
        let mut jobs: Vec<JobRt> = specs
            .iter()
            .enumerate()
            .map(|(j, s)| JobRt {
                opts: JobOpts {
                    startdelay_ns: s.startdelay_ns,
                    ramp_ns: s.ramp_ns,
                    runtime_ns: s.runtime_ns,
                    thinktime_ns: s.thinktime_ns,
                    exits: exit_targets(specs, j)
                        .into_iter()
                        .map(|k| k as u32)
                        .collect(),
                    time_based: s.time_based,
                    size: s.size,
                    numjobs: s.numjobs,
                    wait_for: s.wait_for.map(|w| w as u32),
                    flow_sleep_ns: s.flow_sleep_ns,
                    fill: s.fill_device,
                    atomic: s.atomic,
                    continue_on: s.continue_on,
                },
                flow: job_flow[j],
                class: s.class,
                group: group_of[j],
                here: false,
                start_ns: 0,
                end_ns: None,
                ended_ns: None,
                done: false,
                live: 0,
                threads: Vec::new(),
                ss: match scope {
                    Scope::Whole => s.steadystate.as_ref().map(SteadyTrack::new),
                    Scope::Part => None,
                },
                zone: s.zone,
            })
            .collect();
        let tokens = TokenFlows::new(specs);
        let threads = threads
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let spec = &specs[t.job as usize];
                let rt = &mut jobs[t.job as usize];
                rt.here = true;
                rt.live += 1;
                rt.threads.push(i as u32);
                Thread {
                    job: t.job,
                    base: t.base,
                    hwq: t.hwq,
                    source: IoSource::new(spec, t.job as usize, t.index, seed),
                    tok: tokens.of(spec).map(|f| (f, spec.token_flow)),
                    tok_count: 0,
                    lat: LatTarget::new(spec),
                    filled: false,
                    depths: Default::default(),
                    prio: PrioDraw::new(
                        &spec.cmdprio,
                        stream_seed(seed, spec.randseed, t.job as usize, t.index),
                    ),
                    place: None,
                    outstanding: 0,
                    iodepth: spec.iodepth.max(1),
                    state: State::Idle,
                    wake_at: None,
                    verify: spec
                        .verify
                        .as_ref()
                        .filter(|_| data)
                        .map(|v| Box::new(Verifier::new(v, spec.rw.writes()))),
                    index: t.index,
                    zr: None,
                    zstash: None,
                    zreset: None,
                }
            })
            .collect();
        Runner {
            scope,
            blocked: vec![Vec::new(); tokens.len()],
            tokens,
            threads,
            jobs,
            groups,
            group: 0,
            active: 0,
            last_job_end: 0,
            stopped: false,
            zbd: None,
            seed,
        }
    }

    /// The device offers `handles` NVMe FDP reclaim unit handles (placement IDs
    /// `0..handles`; 0: no FDP): each thread of an `fdp=1` job of `specs` (the specs
    /// the runner was made with) gets its placement draw. An error names the job and
    /// the fix: a device without FDP, a `plids` index past its handles.
    pub fn set_placement(
        &mut self,
        handles: u32,
        specs: &[JobSpec],
        device: &str,
    ) -> Result<(), String> {
        for th in &mut self.threads {
            let spec = &specs[th.job as usize];
            if !spec.placement.fdp {
                continue;
            }
            let seed = stream_seed(self.seed, spec.randseed, th.job as usize, th.index);
            th.place = PlacementDraw::new(&spec.placement, handles, seed).map_err(|e| {
                if handles == 0 {
                    format!(
                        "job '{}' has fdp=1, which needs a device with NVMe Flexible Data Placement, and the device profile '{device}' has none; use --device nand (or a profile with [flash] fdp_ruhs)",
                        spec.name
                    )
                } else {
                    format!("job '{}' (plids): {e} (device profile '{device}')", spec.name)
                }
            })?;
        }
        Ok(())
    }

    /// The number of stonewall groups.
    pub fn groups(&self) -> usize {
        self.groups.len()
    }

    /// The group running (equal to [`Runner::groups`] once every group ended).
    pub fn group(&self) -> usize {
        self.group
    }

    /// Each job's stonewall group.
    pub fn job_group(&self, job: usize) -> usize {
        self.jobs[job].group
    }

    /// Threads started and not done (a [`Scope::Part`] world's part of a group is
    /// over when this is 0 and nothing is in flight).
    pub fn active(&self) -> u32 {
        self.active
    }

    /// When the last job ended (the end of the measurement).
    pub fn last_job_end(&self) -> Nanos {
        self.last_job_end
    }

    /// Whether every thread of job `job` here is done.
    pub fn done(&self, job: usize) -> bool {
        self.jobs[job].done
    }

    /// Whether job `job` has ended.
    pub fn ended(&self, job: usize) -> bool {
        self.jobs[job].ended_ns.is_some()
    }

    /// When job `job` started (its group's start plus its `startdelay`).
    pub fn start_ns(&self, job: usize) -> Nanos {
        self.jobs[job].start_ns
    }

    /// Thread `t`'s job.
    pub fn job_of(&self, t: u32) -> u32 {
        self.threads[t as usize].job
    }

    /// A write of thread `t` failed for want of space (ENOSPC or EDQUOT, the world
    /// says which): with `fill_device` that is the end fio's job waits for, and the
    /// request's completion ends the thread without an error (returns `true`); else
    /// it is an error as any other (`false`).
    pub fn space_ran_out(&mut self, t: u32) -> bool {
        let th = &mut self.threads[t as usize];
        let fill = self.jobs[th.job as usize].opts.fill;
        th.filled |= fill;
        fill
    }

    /// Bytes thread `t` has issued.
    pub fn issued_bytes(&self, t: u32) -> u64 {
        self.threads[t as usize].source.issued_bytes()
    }

    /// The number of threads.
    pub fn thread_count(&self) -> usize {
        self.threads.len()
    }

    /// Thread `t`'s verifier, if it has one.
    pub fn verifier(&self, t: u32) -> Option<&Verifier> {
        self.threads[t as usize].verify.as_deref()
    }

    /// Ask for thread `t` to be woken at `at` unless it is woken earlier already.
    fn wake_after(&mut self, t: u32, at: Nanos, port: &mut impl Port) {
        let th = &mut self.threads[t as usize];
        if th.wake_at.is_some_and(|w| w <= at) {
            return;
        }
        th.wake_at = Some(at);
        port.wake_at(t, at);
    }

    /// Thread `t`'s wake-up at `now` (asked with [`Port::wake_at`]): it issues if the
    /// wake-up is due. Returns whether it was (a stale or superseded one is not).
    pub fn wake(&mut self, t: u32, now: Nanos, port: &mut impl Port) -> bool {
        let th = &mut self.threads[t as usize];
        if !matches!(th.wake_at, Some(w) if w <= now) {
            return false;
        }
        th.wake_at = None;
        if th.state == State::Waiting {
            let j = th.job;
            self.poll_wait(j, now, port);
            return true;
        }
        self.try_issue(t, now, port);
        true
    }

    /// When thread `t` asked to be woken, if it did.
    pub fn wake_time(&self, t: u32) -> Option<Nanos> {
        self.threads[t as usize].wake_at
    }

    /// The fraction of the run done at `now` (0..=1): per job, the larger of its time
    /// and its bytes done, averaged over the jobs.
    pub fn progress(&self, now: Nanos) -> f64 {
        let mut sum = 0.0;
        for rt in &self.jobs {
            let spec = &rt.opts;
            let f = if rt.done {
                1.0
            } else if rt.group > self.group {
                0.0
            } else {
                let by_time = spec.runtime_ns.map_or(0.0, |r| {
                    let total = (spec.ramp_ns + r) as f64;
                    (now.saturating_sub(rt.start_ns) as f64 / total).min(1.0)
                });
                let by_size = if spec.time_based {
                    0.0
                } else {
                    let issued: u64 = rt
                        .threads
                        .iter()
                        .map(|&t| self.threads[t as usize].source.issued_bytes())
                        .sum();
                    issued as f64 / (spec.size as f64 * spec.numjobs as f64)
                };
                by_time.max(by_size).min(1.0)
            };
            sum += f;
        }
        sum / self.jobs.len().max(1) as f64
    }

    /// The verify results per thread: (job, verifier).
    pub fn verifiers(&self) -> impl Iterator<Item = (usize, &Verifier)> {
        self.threads
            .iter()
            .filter_map(|t| t.verify.as_deref().map(|v| (t.job as usize, v)))
    }

    /// Per job with threads here: fio's depth maps of its threads, and the deepest
    /// depth its latency-target search settled on (a job with `latency_target`). The
    /// world adds them to its collector at the end ([`Collector::add_depths`],
    /// [`Collector::set_latency_depth`]).
    ///
    /// [`Collector::add_depths`]: sluice_metrics::Collector::add_depths
    /// [`Collector::set_latency_depth`]: sluice_metrics::Collector::set_latency_depth
    pub(crate) fn queue_facts(
        &self,
    ) -> impl Iterator<Item = (usize, u32, IoDepths, Option<u32>)> + '_ {
        self.threads.iter().map(|th| {
            (
                th.job as usize,
                th.index,
                th.depths.total(),
                th.lat.as_ref().map(|l| l.depth()),
            )
        })
    }

    /// Give the collector what [`Runner::queue_facts`] says.
    pub fn report_queue_facts(&self, c: &mut sluice_metrics::Collector) {
        for (j, t, d, lat) in self.queue_facts() {
            c.add_depths(j, t, &d);
            if let Some(depth) = lat {
                c.set_latency_depth(j, t, depth);
            }
        }
    }
}

#[cfg(test)]
mod tests;

mod depths;
mod io;
mod lifecycle;
