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
    stonewall_groups, stream_seed, IoSource, IoSpec, JobSpec, NextIo, PrioDraw, SteadyTrack,
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
    /// An error of `job` that produced no sample (a failed verify check).
    fn record_error(&mut self, job: usize, op: Op);
    /// Job `job` ended at `at` (called once per end; the first call counts).
    fn job_done(&mut self, job: usize, at: Nanos);
    /// Job `job` ended and has `exitall`: end `others`, the jobs of its group still
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

/// What the runner keeps of a job's options.
#[derive(Debug)]
struct JobOpts {
    startdelay_ns: Nanos,
    ramp_ns: Nanos,
    runtime_ns: Option<Nanos>,
    thinktime_ns: Nanos,
    exitall: bool,
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
                    exitall: s.exitall,
                    time_based: s.time_based,
                    size: s.size,
                    numjobs: s.numjobs,
                    wait_for: s.wait_for.map(|w| w as u32),
                    flow_sleep_ns: s.flow_sleep_ns,
                    fill: s.fill_device,
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
        }
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

    /// Start stonewall group `g` at `now`: its jobs start `startdelay` later (their
    /// `runtime` ends and steady-state checks are asked of the port), their threads
    /// run from then.
    pub fn start_group(&mut self, g: usize, now: Nanos, port: &mut impl Port) {
        if self.stopped {
            // Interrupted: the run is over once the groups started have drained.
            self.group = self.groups.len();
            return;
        }
        self.group = g;
        if g >= self.groups.len() {
            return;
        }
        for i in 0..self.groups[g].len() {
            let j = self.groups[g][i];
            if !self.jobs[j as usize].here {
                continue;
            }
            if let Some(w) = self.jobs[j as usize].opts.wait_for {
                if !self.waitee_done(w, port) {
                    // fio's wait_for: the job starts when its waitee is done; its
                    // threads count as active so the group does not end before it.
                    for k in 0..self.jobs[j as usize].threads.len() {
                        let t = self.jobs[j as usize].threads[k];
                        self.threads[t as usize].state = State::Waiting;
                        self.active += 1;
                    }
                    self.poll_wait(j, now, port);
                    continue;
                }
            }
            self.start_job(j, now, port);
        }
    }

    /// Whether every thread of job `w` is done: known here in a [`Scope::Whole`]
    /// runner, asked of the world ([`Port::job_over`]) in a [`Scope::Part`] one.
    fn waitee_done(&self, w: u32, port: &mut impl Port) -> bool {
        match self.scope {
            Scope::Whole => self.jobs[w as usize].done,
            Scope::Part => port.job_over(w),
        }
    }

    /// A waiting job `j`: start it if its waitee is done; else, in a [`Scope::Part`]
    /// runner (whose waitee may run in another part), look again [`WAIT_POLL_NS`]
    /// later. A [`Scope::Whole`] runner starts it when the waitee's last thread is
    /// done.
    fn poll_wait(&mut self, j: u32, now: Nanos, port: &mut impl Port) {
        let w = self.jobs[j as usize].opts.wait_for.expect("a waiting job");
        if self.waitee_done(w, port) {
            self.start_job(j, now, port);
            return;
        }
        if self.scope == Scope::Part {
            for k in 0..self.jobs[j as usize].threads.len() {
                let t = self.jobs[j as usize].threads[k];
                self.wake_after(t, now + WAIT_POLL_NS, port);
            }
        }
    }

    /// Start job `j` at `now`: it starts `startdelay` later (its `runtime` end and
    /// steady-state checks are asked of the port), its threads run from then.
    fn start_job(&mut self, j: u32, now: Nanos, port: &mut impl Port) {
        let rt = &mut self.jobs[j as usize];
        let spec = &rt.opts;
        let start = now + spec.startdelay_ns;
        rt.start_ns = start;
        port.job_start(j, start);
        if let Some(r) = spec.runtime_ns {
            let end = start.saturating_add(spec.ramp_ns).saturating_add(r);
            rt.end_ns = Some(end);
            port.end_at(j, end);
        }
        if let Some(ss) = &rt.ss {
            port.steady_at(j, start + ss.spec().interval_ns);
        }
        for k in 0..self.jobs[j as usize].threads.len() {
            let t = self.jobs[j as usize].threads[k];
            let th = &mut self.threads[t as usize];
            if th.state != State::Waiting {
                self.active += 1;
            }
            th.state = State::Running;
            if let Some(l) = th.lat.as_mut() {
                l.start(start);
            }
            if let Some((f, w)) = th.tok {
                self.token_flow(f, 0, w as i64, port);
            }
            self.wake_after(t, start, port);
        }
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

    /// Issue from thread `t` as far as its depth, pacer and size allow.
    /// Issue what thread `t` may now: one turn (fio's submission, for its depth maps).
    fn try_issue(&mut self, t: u32, now: Nanos, port: &mut impl Port) {
        self.issue_turn(t, now, port);
        self.threads[t as usize].depths.end_turn();
    }

    fn issue_turn(&mut self, t: u32, now: Nanos, port: &mut impl Port) {
        loop {
            let th = &mut self.threads[t as usize];
            // fio's latency target searches the depth between 1 and iodepth.
            let depth = th.lat.as_ref().map_or(th.iodepth, |l| l.depth());
            if th.state != State::Running || th.outstanding >= depth {
                return;
            }
            let rt = &self.jobs[th.job as usize];
            // A verify thread reads back what it wrote before it issues more (see
            // `verify`).
            let mut check = false;
            // An I/O of the job's stream (not a verify read-back): it counts in a
            // token flow.
            let mut fresh = false;
            let read_back = th.verify.as_mut().and_then(|v| v.next_read());
            let io = if let Some((offset, len)) = read_back {
                check = true;
                IoSpec {
                    op: Op::Read,
                    offset,
                    len,
                }
            } else if th.verify.as_ref().is_some_and(|v| v.busy()) {
                return;
            } else {
                if let Some((f, w)) = th.tok {
                    let (mine, outstanding, sleep) =
                        (th.tok_count, th.outstanding, rt.opts.flow_sleep_ns);
                    let st = self.token_flow(f, 0, 0, port);
                    if TokenFlows::exceeded(w, mine, st) {
                        self.flow_wait(t, f, sleep, outstanding, now, port);
                        return;
                    }
                }
                let th = &mut self.threads[t as usize];
                let rt = &self.jobs[th.job as usize];
                if th.zreset.is_some() {
                    // A zone reset of the thread's is in flight.
                    return;
                }
                let held = match th.zstash.take() {
                    Some(held) => held,
                    None => match th.source.next_with(now, rt.start_ns, th.outstanding) {
                        NextIo::Issue(io) => Held::new(io),
                        other => {
                            if self.not_issued(t, other, now, port) {
                                continue;
                            }
                            return;
                        }
                    },
                };
                fresh = true;
                if self.threads[t as usize].zr.is_some() && held.io.op != Op::Flush {
                    match self.zbd_gate(t, held, now, port) {
                        Some(io) => io,
                        None => return,
                    }
                } else {
                    held.io
                }
            };
            if fresh {
                if let Some((f, _)) = self.threads[t as usize].tok {
                    self.threads[t as usize].tok_count += 1;
                    self.token_flow(f, 1, 0, port);
                    self.unblock(f, now, port);
                }
            }
            let th = &mut self.threads[t as usize];
            let rt = &self.jobs[th.job as usize];
            if let Some(v) = th.verify.as_mut() {
                check |= io.op == Op::Read && v.checks_every_read();
            }
            th.outstanding += 1;
            th.depths.issue(th.outstanding);
            // A per-I/O priority drawn high gives the request its own class.
            let class = th
                .prio
                .as_mut()
                .and_then(|p| p.draw(io.op, io.len))
                .map_or(rt.class, |e| e.io_class(rt.class));
            let req = NewRequest {
                flow: rt.flow,
                op: io.op,
                offset: th.base + io.offset,
                len: io.len,
                class,
                hwq: th.hwq,
                fua: false,
            };
            port.submit(Submit {
                thread: t,
                job: th.job,
                req,
                io,
                check,
                verify: th.verify.as_deref_mut(),
            });
        }
    }

    /// Thread `t`'s source gave no I/O (`next`: wait for a slot, drain, or it is
    /// exhausted): act on it. Returns whether the thread should look again at once
    /// (a verify thread's final read-back starts).
    fn not_issued(&mut self, t: u32, next: NextIo, now: Nanos, port: &mut impl Port) -> bool {
        let th = &mut self.threads[t as usize];
        match next {
            NextIo::At(at) => {
                self.wake_after(t, at, port);
                false
            }
            NextIo::Drain | NextIo::Issue(_) => false,
            NextIo::Exhausted => {
                if let Some(v) = th.verify.as_mut() {
                    // The final read-back starts when no write is in flight.
                    if v.final_pending() && th.outstanding > 0 {
                        return false;
                    }
                    if v.start_final() {
                        return true;
                    }
                }
                th.state = State::Stopping;
                self.maybe_thread_done(t, now, port);
                false
            }
        }
    }

    /// fio's token flow `f`: add `d_count` I/Os and `d_weight` weight; its
    /// `(count, total weight)` after — this runner's own in a [`Scope::Whole`] runner,
    /// the world's shared one ([`Port::token_flow`]) in a [`Scope::Part`] one.
    fn token_flow(
        &mut self,
        f: usize,
        d_count: i64,
        d_weight: i64,
        port: &mut impl Port,
    ) -> (u64, u64) {
        let local = self.tokens.apply(f, d_count, d_weight);
        match self.scope {
            Scope::Whole => local,
            Scope::Part => port.token_flow(f, d_count, d_weight).unwrap_or(local),
        }
    }

    /// Thread `t` is over its share of token flow `f`: with `flow_sleep`, it sleeps
    /// that long once its I/Os in flight have completed (a completion brings it back
    /// here); without, it tries again when another thread of the flow has issued (a
    /// [`Scope::Part`] runner, whose flow is shared with other parts, looks again
    /// [`FLOW_POLL_NS`] later).
    fn flow_wait(
        &mut self,
        t: u32,
        f: usize,
        sleep_ns: Nanos,
        outstanding: u32,
        now: Nanos,
        port: &mut impl Port,
    ) {
        if sleep_ns > 0 {
            if outstanding == 0 {
                self.wake_after(t, now + sleep_ns, port);
            }
        } else if self.scope == Scope::Whole {
            if !self.blocked[f].contains(&t) {
                self.blocked[f].push(t);
            }
        } else if outstanding == 0 {
            self.wake_after(t, now + FLOW_POLL_NS, port);
        }
    }

    /// A thread of token flow `f` issued (or left): the threads waiting on it try again.
    fn unblock(&mut self, f: usize, now: Nanos, port: &mut impl Port) {
        if self.blocked[f].is_empty() {
            return;
        }
        for t in std::mem::take(&mut self.blocked[f]) {
            self.wake_after(t, now, port);
        }
    }

    /// Thread `t`'s request `f` completed and was reaped at `reaped_ns` (`verify`: its
    /// data, for a verify thread in a world that carries data): check it, take its
    /// sample, then the thread thinks or issues more.
    pub fn complete(
        &mut self,
        t: u32,
        f: &Finished,
        reaped_ns: Nanos,
        verify: Option<VerifyDone<'_>>,
        port: &mut impl Port,
    ) {
        if self.threads[t as usize].zr.is_some() && self.zone_done(t, f, reaped_ns, port) {
            return;
        }
        if let Some(v) = verify {
            self.verify_done(t, f, v, reaped_ns, port);
        }
        let th = &mut self.threads[t as usize];
        th.outstanding -= 1;
        th.depths.reaped(reaped_ns);
        // fio's latency target: the search sees every data I/O's latency.
        let verdict = match (&mut th.lat, f.op) {
            (Some(l), Op::Read | Op::Write) if th.state == State::Running => {
                l.complete(reaped_ns.saturating_sub(f.submit_ns), reaped_ns)
            }
            _ => LatVerdict::Go,
        };
        let job = th.job as usize;
        if !f.ok && th.filled {
            // fio's fill_device: ENOSPC ends the job (its error cleared); the I/O
            // that found no space moved nothing and takes no sample.
            th.source.end_now();
            th.wake_at = None;
            if th.state == State::Running {
                th.state = State::Stopping;
            }
            self.maybe_thread_done(t, reaped_ns, port);
            return;
        }
        if verdict != LatVerdict::Go {
            // The search ended the thread (its depth found, or depth 1 missed the
            // target: an error, as fio's ETIMEDOUT): it issues nothing more.
            if verdict == LatVerdict::Fatal {
                port.record_error(job, f.op);
            }
            th.source.end_now();
            th.wake_at = None;
            th.state = State::Stopping;
        }
        let rt = &mut self.jobs[job];
        if rt.ended_ns.is_none() || f.op == Op::Flush {
            if let Some(ss) = &mut rt.ss {
                if f.ok {
                    // Completion latency: reaped − dispatch, as the samples'.
                    ss.count(1, f.len as u64, reaped_ns.saturating_sub(f.dispatch_ns));
                }
            }
            port.record(&Sample {
                job,
                op: f.op,
                // The block layer's class at the end (a promotion raises it).
                class: f.class,
                bytes: f.len,
                submit_ns: f.submit_ns,
                admit_ns: f.admit_ns,
                dispatch_ns: f.dispatch_ns,
                device_done_ns: f.device_done_ns,
                reaped_ns,
                ok: f.ok,
            });
        }
        if self.threads[t as usize].state == State::Running {
            let think = self.jobs[job].opts.thinktime_ns;
            if think > 0 {
                self.wake_after(t, reaped_ns + think, port);
            } else {
                self.try_issue(t, reaped_ns, port);
            }
        } else {
            self.maybe_thread_done(t, reaped_ns, port);
        }
    }

    /// A verify thread's request completed: record a written block, or check a block
    /// read. A failed check counts as an error of the job (as fio's), and ends the job
    /// with `verify_fatal`.
    fn verify_done(
        &mut self,
        t: u32,
        f: &Finished,
        d: VerifyDone<'_>,
        now: Nanos,
        port: &mut impl Port,
    ) {
        let th = &mut self.threads[t as usize];
        let job = th.job as usize;
        let Some(v) = th.verify.as_mut() else {
            return;
        };
        if f.op == Op::Write && f.ok {
            v.written(d.offset, f.len);
            return;
        }
        if f.op != Op::Read || !d.check {
            return;
        }
        if !v.checks_every_read() {
            v.read_back_done();
        }
        if !f.ok {
            return;
        }
        let result = v.check(&d.data[..f.len as usize], d.offset);
        let failed = result.is_err();
        v.record(result, d.offset, f.len);
        if failed {
            port.record_error(job, Op::Read);
            if v.fatal() && self.jobs[job].ended_ns.is_none() {
                self.end_job(job as u32, now, port);
            }
        }
    }

    /// Job `j` ends at `at` (its `runtime` ran out, it became steady, another job's
    /// `exitall`, an interrupt): its threads stop issuing — but a thread's end sync
    /// (`end_fsync`) still goes once its I/O drained (a verify thread ends at once: no
    /// read-back after its runtime). Nothing happens if it ended already or has no
    /// thread here.
    pub fn end_job(&mut self, j: u32, at: Nanos, port: &mut impl Port) {
        let rt = &mut self.jobs[j as usize];
        if !rt.here || rt.done || rt.ended_ns.is_some() {
            return;
        }
        rt.ended_ns = Some(at);
        self.exit_all(j, port);
        self.last_job_end = self.last_job_end.max(at);
        port.job_done(j as usize, at);
        for k in 0..self.jobs[j as usize].threads.len() {
            let t = self.jobs[j as usize].threads[k];
            let th = &mut self.threads[t as usize];
            if th.state == State::Waiting {
                // Ended (exitall, an interrupt) before its waitee was done: it never
                // joined its token flow either.
                th.wake_at = None;
                th.state = State::Stopping;
                th.tok = None;
            }
            if th.state == State::Running {
                th.wake_at = None;
                if th.verify.is_none() && th.source.end_now() {
                    self.try_issue(t, at, port);
                    continue;
                }
                th.state = State::Stopping;
            }
            self.maybe_thread_done(t, at, port);
        }
    }

    /// The instant job `j`'s `runtime` runs out, if it has started and has one.
    pub fn end_time(&self, j: usize) -> Option<Nanos> {
        self.jobs[j].end_ns
    }

    /// fio's `exitall`: when job `j` ends, so does every other job of its group.
    fn exit_all(&mut self, j: u32, port: &mut impl Port) {
        if !self.jobs[j as usize].opts.exitall {
            return;
        }
        let g = self.jobs[j as usize].group;
        let others: Vec<u32> = self.groups[g]
            .iter()
            .copied()
            .filter(|&k| {
                let rt = &self.jobs[k as usize];
                k != j && rt.here && !rt.done && rt.ended_ns.is_none()
            })
            .collect();
        port.exit_all(j, &others);
    }

    fn maybe_thread_done(&mut self, t: u32, now: Nanos, port: &mut impl Port) {
        let th = &mut self.threads[t as usize];
        if th.state != State::Stopping || th.outstanding > 0 {
            return;
        }
        th.state = State::Done;
        self.active -= 1;
        if let Some((f, w)) = th.tok {
            // fio's flow_put: the thread's count and weight leave the flow.
            let c = th.tok_count as i64;
            self.token_flow(f, -c, -(w as i64), port);
            self.unblock(f, now, port);
        }
        let th = &self.threads[t as usize];
        let j = th.job as usize;
        let rt = &mut self.jobs[j];
        rt.live -= 1;
        let last = match self.scope {
            Scope::Whole => rt.live == 0,
            Scope::Part => port.thread_done(j as u32),
        };
        if rt.live == 0 {
            rt.done = true;
        }
        if !last {
            return;
        }
        if rt.ended_ns.is_none() {
            rt.ended_ns = Some(now);
            self.last_job_end = self.last_job_end.max(now);
            port.job_done(j, now);
            self.exit_all(j as u32, port);
        }
        if self.scope == Scope::Whole {
            // Jobs waiting for this one (`wait_for`) start now.
            let waiters: Vec<u32> = (0..self.jobs.len() as u32)
                .filter(|&k| {
                    self.jobs[k as usize].opts.wait_for == Some(j as u32)
                        && self.jobs[k as usize]
                            .threads
                            .iter()
                            .any(|&t| self.threads[t as usize].state == State::Waiting)
                })
                .collect();
            for k in waiters {
                self.start_job(k, now, port);
            }
            let g = self.jobs[j].group;
            if self.groups[g].iter().all(|&k| self.jobs[k as usize].done) {
                self.start_group(g + 1, now, port);
            }
        }
    }

    /// A [`Scope::Whole`] runner's steady-state check of job `j` at `now` (asked with
    /// [`Port::steady_at`]): a steady job ends now, as its runtime would; otherwise
    /// the next check is asked for one interval later.
    pub fn steady_check(&mut self, j: u32, now: Nanos, port: &mut impl Port) {
        let rt = &mut self.jobs[j as usize];
        if rt.done || rt.ended_ns.is_some() {
            return;
        }
        let elapsed = now - rt.start_ns;
        let Some(ss) = rt.ss.as_mut() else {
            return;
        };
        let interval = ss.spec().interval_ns;
        if ss.check(elapsed) {
            port.end_at(j, now);
        } else {
            port.steady_at(j, now + interval);
        }
    }

    /// The steady-state trackers of a [`Scope::Whole`] runner's jobs with `ss_dur`.
    pub fn steady(&self) -> impl Iterator<Item = (usize, &SteadyTrack)> {
        self.jobs
            .iter()
            .enumerate()
            .filter_map(|(j, rt)| rt.ss.as_ref().map(|s| (j, s)))
    }

    /// Stop every job that has started, at `now`: its threads issue nothing more and
    /// drain (Ctrl-C, another part's failure; their end syncs still go, as fio's); no
    /// later stonewall group starts.
    pub fn interrupt(&mut self, now: Nanos, port: &mut impl Port) {
        self.stopped = true;
        for j in 0..self.jobs.len() {
            let started = self.jobs[j]
                .threads
                .iter()
                .any(|&t| !matches!(self.threads[t as usize].state, State::Idle | State::Done));
            if started {
                self.end_job(j as u32, now, port);
            }
        }
    }

    /// Cut the run at `now` without draining: every job of the groups started that
    /// is still running ends now (its results so far are kept).
    pub fn cut(&mut self, now: Nanos, port: &mut impl Port) {
        for j in 0..self.jobs.len() {
            let rt = &mut self.jobs[j];
            if rt.done || rt.ended_ns.is_some() || rt.group > self.group {
                continue;
            }
            rt.ended_ns = Some(now);
            self.last_job_end = self.last_job_end.max(now);
            port.job_done(j, now);
        }
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
    pub(crate) fn queue_facts(&self) -> impl Iterator<Item = (usize, IoDepths, Option<u32>)> + '_ {
        self.jobs
            .iter()
            .enumerate()
            .filter(|(_, rt)| rt.here)
            .map(|(j, rt)| {
                let mut d = IoDepths::default();
                let mut lat = None;
                for &t in &rt.threads {
                    let th = &self.threads[t as usize];
                    d.add(&th.depths.total());
                    if let Some(l) = &th.lat {
                        lat = Some(lat.map_or(l.depth(), |x: u32| x.max(l.depth())));
                    }
                }
                (j, d, lat)
            })
    }

    /// Give the collector what [`Runner::queue_facts`] says.
    pub fn report_queue_facts(&self, c: &mut sluice_metrics::Collector) {
        for (j, d, lat) in self.queue_facts() {
            c.add_depths(j, &d);
            if let Some(depth) = lat {
                c.set_latency_depth(j, depth);
            }
        }
    }
}

#[cfg(test)]
mod tests;

mod depths;
