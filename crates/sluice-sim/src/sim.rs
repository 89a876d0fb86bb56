//! The simulation loop. See the crate documentation for the model.

use std::collections::BTreeMap;

use sluice_block::{BlockLayer, Finished, NewRequest};
use sluice_core::policy::Policy;
use sluice_core::{FlowId, IoClass, Nanos, Op};
use sluice_device::{DeviceCompletion, DeviceProfile, NvmeSsd};
use sluice_metrics::{
    Collector, DeviceFaults, Extra, PerClass, RunSetup, Sample, SimFacts, SteadyReport,
};
use sluice_workload::{flows_of, stonewall_groups, IoSource, IoSpec, JobSpec, NextIo, SteadyTrack};

use crate::config::{LittleCheck, SimConfig, SimError, SimOutput, SimStats};
use crate::events::{Event, EventQueue};
use crate::port::SimPort;

mod buffered;
use buffered::Buffered;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ThreadState {
    /// Its job has not started.
    Waiting,
    /// Issuing.
    Running,
    /// No longer issues; done once its outstanding requests complete.
    Stopping,
    /// Finished.
    Done,
}

#[derive(Debug)]
struct Thread {
    job: u32,
    source: IoSource,
    base: u64,
    /// Its file in the page cache (buffered jobs).
    file: u32,
    hwq: u16,
    outstanding: u32,
    iodepth: u32,
    state: ThreadState,
    wake_at: Option<Nanos>,
}

#[derive(Debug)]
struct JobRt {
    flow: FlowId,
    class: IoClass,
    group: usize,
    start_ns: Nanos,
    threads: std::ops::Range<u32>,
    live: u32,
    done: bool,
    /// When its `runtime` ran out (or it became steady), if it did.
    ended_ns: Option<Nanos>,
    /// fio's steady-state detection, for a job with `ss_dur`.
    ss: Option<SteadyTrack>,
}

struct Sim<'a> {
    specs: &'a [JobSpec],
    cfg: &'a SimConfig,
    /// The one block layer (admission, policy, pieces), as in the real engine.
    block: BlockLayer,
    port: SimPort,
    collector: Collector,
    events: EventQueue,
    threads: Vec<Thread>,
    jobs: Vec<JobRt>,
    groups: Vec<Vec<u32>>,
    group: usize,
    completions: Vec<DeviceCompletion>,
    /// The page cache of buffered jobs (`direct=0`), if any job is.
    buffered: Option<Buffered>,
    timer_armed: Option<Nanos>,
    /// When the page cache's timer event is armed for (see `Event::FrontTimer`).
    front_timer_armed: Option<Nanos>,
    now: Nanos,
    /// When the last job ended (the end of the measurement; draining comes after).
    last_job_end: Nanos,
    // Little's law bookkeeping.
    in_system: u64,
    /// Σ submission times of the requests in the system (for the residual in Little's
    /// law when a run is cut short).
    in_system_submit_sum: u128,
    interrupted: bool,
    area_ns: u128,
    last_t: Nanos,
    latency_sum_ns: u128,
    ios: u64,
    n_events: u64,
    interval_ns: Nanos,
}

impl std::fmt::Debug for Sim<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sim").field("now", &self.now).finish()
    }
}

/// Run `jobs` under `policy` on a simulated device with `profile`.
///
/// `progress` is called now and then with the fraction done (0..=1).
pub fn run(
    jobs: &[JobSpec],
    profile: &DeviceProfile,
    policy: Box<dyn Policy>,
    cfg: &SimConfig,
    progress: &mut dyn FnMut(f64),
) -> Result<SimOutput, SimError> {
    let mut sim = Sim::new(jobs, profile, policy, cfg)?;
    sim.run(progress)?;
    Ok(sim.finish())
}

impl<'a> Sim<'a> {
    fn new(
        specs: &'a [JobSpec],
        profile: &DeviceProfile,
        policy: Box<dyn Policy>,
        cfg: &'a SimConfig,
    ) -> Result<Self, SimError> {
        if specs.is_empty() {
            return Err(SimError::NoJobs);
        }
        if cfg.cores == 0 {
            return Err(SimError::NoCores);
        }
        sluice_workload::check_limits(specs)?;
        let total_threads: u64 = specs.iter().map(|j| j.numjobs as u64).sum();
        if total_threads > u16::MAX as u64 {
            return Err(SimError::TooManyThreads(total_threads));
        }

        let (flows, job_flow) = flows_of(specs)?;

        // Stonewall groups: a job with `stonewall` starts a new group that waits for
        // every job before it.
        let group_of = stonewall_groups(specs);
        let mut groups: Vec<Vec<u32>> = vec![Vec::new(); group_of.last().map_or(0, |g| g + 1)];
        for (j, &g) in group_of.iter().enumerate() {
            groups[g].push(j as u32);
        }

        // Threads and their address ranges: every (job, thread) has its own region
        // unless jobs name the same `filename`, which then share one.
        let mut bases: BTreeMap<String, u64> = BTreeMap::new();
        let mut files: Vec<(u64, FlowId, u16)> = Vec::new();
        let mut next_base: u64 = 0;
        let align = |x: u64| x.div_ceil(1 << 20) << 20;
        let mut threads = Vec::with_capacity(total_threads as usize);
        let mut jobs_rt = Vec::with_capacity(specs.len());
        for (j, spec) in specs.iter().enumerate() {
            let first = threads.len() as u32;
            let group = groups
                .iter()
                .position(|g| g.contains(&(j as u32)))
                .unwrap_or(0);
            for t in 0..spec.numjobs {
                let key = match &spec.filename {
                    Some(f) => f.clone(),
                    None => format!("\u{0}{j}.{t}"),
                };
                let base = *bases.entry(key).or_insert_with(|| {
                    let b = next_base;
                    next_base = align(next_base + spec.offset + spec.size);
                    b
                });
                let global = threads.len() as u32;
                let file = match files.iter().position(|f| f.0 == base) {
                    Some(i) => i,
                    None => {
                        files.push((base, job_flow[j], (global % cfg.cores as u32) as u16));
                        files.len() - 1
                    }
                } as u32;
                threads.push(Thread {
                    job: j as u32,
                    source: IoSource::new(spec, j, t, cfg.seed),
                    base,
                    file,
                    hwq: (global % cfg.cores as u32) as u16,
                    outstanding: 0,
                    iodepth: spec.iodepth.max(1),
                    state: ThreadState::Waiting,
                    wake_at: None,
                });
            }
            jobs_rt.push(JobRt {
                flow: job_flow[j],
                class: spec.class,
                group,
                start_ns: 0,
                threads: first..threads.len() as u32,
                live: spec.numjobs,
                done: false,
                ended_ns: None,
                ss: spec.steadystate.as_ref().map(SteadyTrack::new),
            });
        }

        let setup = RunSetup::for_jobs(specs, &flows, &job_flow, cfg.interval_ns);
        let interval_ns = setup.interval_ns;

        let mut device = NvmeSsd::new(profile, cfg.cores);
        device.set_faults(cfg.faults, cfg.seed);
        device.set_seed(cfg.seed);
        let cap: usize = threads.iter().map(|t| t.iodepth as usize).sum();
        // Preallocate for the usual depths; deeper runs grow as requests arrive.
        let block = BlockLayer::with_meter(policy, &flows, sluice_block::NoMeter, cap.min(1 << 16));

        let buffered = Buffered::for_jobs(specs, &cfg.page_cache, &files)?;
        Ok(Sim {
            specs,
            cfg,
            buffered,
            block,
            port: SimPort::new(device),
            collector: Collector::new(setup).with_fio_logs(specs),
            events: EventQueue::new(),
            threads,
            jobs: jobs_rt,
            groups,
            group: 0,
            completions: Vec::with_capacity(256),
            timer_armed: None,
            front_timer_armed: None,
            now: 0,
            last_job_end: 0,
            in_system: 0,
            in_system_submit_sum: 0,
            interrupted: false,
            area_ns: 0,
            last_t: 0,
            latency_sum_ns: 0,
            ios: 0,
            n_events: 0,
            interval_ns,
        })
    }

    fn run(&mut self, progress: &mut dyn FnMut(f64)) -> Result<(), SimError> {
        self.start_group(0);
        if self.block.has_counters() {
            self.events.push(0, Event::SampleCounters);
        }
        progress(0.0);
        loop {
            if self.group >= self.groups.len() {
                break;
            }
            let t_dev = self.port.device.next_event_ns();
            let t_ev = self.events.peek_ns();
            let take_device = match (t_dev, t_ev) {
                (None, None) => {
                    return Err(SimError::Stalled {
                        now_ns: self.now,
                        policy: self.block.policy().name().to_string(),
                        queued: self.block.policy().queued(),
                        waiting: self.block.waiting(),
                    })
                }
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (Some(d), Some(e)) => d <= e,
            };
            let t = if take_device { t_dev } else { t_ev }.expect("checked above");
            debug_assert!(t >= self.now, "time went backwards");
            if t > self.cfg.max_sim_ns {
                let running: Vec<String> = self
                    .jobs
                    .iter()
                    .zip(self.specs)
                    .filter(|(rt, _)| !rt.done && rt.group == self.group)
                    .map(|(_, s)| format!("job '{}'", s.name))
                    .collect();
                return Err(SimError::TimeCap {
                    cap_ns: self.cfg.max_sim_ns,
                    jobs: running.join(", "),
                });
            }
            self.advance_clock(t);
            self.n_events += 1;
            if take_device {
                self.device_events();
            } else {
                let (_, ev) = self.events.pop().expect("peeked");
                self.handle(ev);
            }
            self.pump();
            if self.n_events & 0xFFFF == 0 {
                progress(self.progress());
                let stop = self.cfg.stop.as_ref();
                if stop.is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed)) {
                    self.interrupted = true;
                    self.end_all_jobs();
                    break;
                }
            }
        }
        progress(1.0);
        Ok(())
    }

    /// Stop: every job still running ends now (its results so far are kept).
    fn end_all_jobs(&mut self) {
        for j in 0..self.jobs.len() {
            let rt = &mut self.jobs[j];
            if rt.done || rt.ended_ns.is_some() || rt.group > self.group {
                continue;
            }
            rt.ended_ns = Some(self.now);
            self.last_job_end = self.last_job_end.max(self.now);
            self.collector.job_done(j, self.now);
        }
    }

    fn advance_clock(&mut self, t: Nanos) {
        self.area_ns += self.in_system as u128 * (t - self.last_t) as u128;
        self.last_t = t;
        self.now = t;
    }

    fn progress(&self) -> f64 {
        let mut sum = 0.0;
        for (j, spec) in self.specs.iter().enumerate() {
            let rt = &self.jobs[j];
            let f = if rt.done {
                1.0
            } else if rt.group > self.group {
                0.0
            } else {
                let by_time = spec.runtime_ns.map_or(0.0, |r| {
                    let total = (spec.ramp_ns + r) as f64;
                    (self.now.saturating_sub(rt.start_ns) as f64 / total).min(1.0)
                });
                let by_size = if spec.time_based {
                    0.0
                } else {
                    let issued: u64 = rt
                        .threads
                        .clone()
                        .map(|t| self.threads[t as usize].source.issued_bytes())
                        .sum();
                    issued as f64 / (spec.size as f64 * spec.numjobs as f64)
                };
                by_time.max(by_size).min(1.0)
            };
            sum += f;
        }
        sum / self.specs.len() as f64
    }

    fn start_group(&mut self, g: usize) {
        self.group = g;
        if g >= self.groups.len() {
            return;
        }
        let now = self.now;
        if g == 0 {
            // Bandwidth bins and flow rates count from the end of the first ramp.
            let first = self.groups[0]
                .iter()
                .map(|&j| self.specs[j as usize].startdelay_ns + self.specs[j as usize].ramp_ns)
                .min()
                .unwrap_or(0);
            self.collector.set_window(now + first);
        }
        for &j in &self.groups[g].clone() {
            let spec = &self.specs[j as usize];
            let start = now + spec.startdelay_ns;
            self.jobs[j as usize].start_ns = start;
            self.collector
                .set_job_window(j as usize, start + spec.ramp_ns);
            if let Some(rt) = spec.runtime_ns {
                self.events
                    .push(start + spec.ramp_ns + rt, Event::JobEnd(j));
            }
            if let Some(ss) = &spec.steadystate {
                self.events
                    .push(start + ss.interval_ns, Event::SteadyCheck(j));
            }
            for t in self.jobs[j as usize].threads.clone() {
                self.threads[t as usize].state = ThreadState::Running;
                self.wake(t, start);
            }
        }
    }

    fn wake(&mut self, t: u32, at: Nanos) {
        let th = &mut self.threads[t as usize];
        if th.wake_at.is_some_and(|w| w <= at) {
            return;
        }
        th.wake_at = Some(at);
        self.events.push(at, Event::ThreadWake(t));
    }

    fn handle(&mut self, ev: Event) {
        match ev {
            Event::ThreadWake(t) => {
                let th = &mut self.threads[t as usize];
                if th.wake_at != Some(self.now) {
                    return; // superseded by an earlier wake
                }
                th.wake_at = None;
                self.try_issue(t);
            }
            Event::JobEnd(j) => {
                let rt = &mut self.jobs[j as usize];
                if rt.done || rt.ended_ns.is_some() {
                    return;
                }
                rt.ended_ns = Some(self.now);
                self.exit_all(j);
                self.last_job_end = self.last_job_end.max(self.now);
                self.collector.job_done(j as usize, self.now);
                for t in self.jobs[j as usize].threads.clone() {
                    let th = &mut self.threads[t as usize];
                    if th.state == ThreadState::Running {
                        if th.source.end_now() {
                            // Its end sync (end_fsync) goes once its I/O has drained.
                            self.try_issue(t);
                            continue;
                        }
                        th.state = ThreadState::Stopping;
                    }
                    self.maybe_thread_done(t);
                }
            }
            Event::SteadyCheck(j) => {
                let rt = &mut self.jobs[j as usize];
                if rt.done || rt.ended_ns.is_some() {
                    return;
                }
                let elapsed = self.now - rt.start_ns;
                let ss = rt
                    .ss
                    .as_mut()
                    .expect("checks only for jobs with steadystate");
                let interval = ss.spec().interval_ns;
                if ss.check(elapsed) {
                    // fio ends a steady job at once, as its runtime would.
                    self.events.push(self.now, Event::JobEnd(j));
                } else {
                    self.events.push(self.now + interval, Event::SteadyCheck(j));
                }
            }
            Event::SampleCounters => {
                self.block.sample_counters(self.now);
                // Keep sampling only while something else can still happen, so a stuck
                // policy is still reported as stalled.
                if !self.events.is_empty() || self.port.device.next_event_ns().is_some() {
                    self.events
                        .push(self.now + self.interval_ns, Event::SampleCounters);
                }
            }
            Event::PolicyTimer => {
                if self.timer_armed == Some(self.now) {
                    self.timer_armed = None;
                    self.block.fire_timer(self.now);
                }
            }
            Event::FrontTimer => self.front_timer(),
            Event::BufferedDone(id) => self.buffered_delivered(id),
        }
    }

    /// Issue from thread `t` as far as its depth, pacer and size allow.
    fn try_issue(&mut self, t: u32) {
        loop {
            let now = self.now;
            let th = &mut self.threads[t as usize];
            if th.state != ThreadState::Running {
                return;
            }
            if th.outstanding >= th.iodepth {
                return;
            }
            let io =
                match th
                    .source
                    .next_with(now, self.jobs[th.job as usize].start_ns, th.outstanding)
                {
                    NextIo::Issue(io) => io,
                    NextIo::At(at) => {
                        self.wake(t, at);
                        return;
                    }
                    NextIo::Drain => return,
                    NextIo::Exhausted => {
                        th.state = ThreadState::Stopping;
                        self.maybe_thread_done(t);
                        return;
                    }
                };
            th.outstanding += 1;
            let (job, base, hwq) = (th.job, th.base, th.hwq);
            self.submit(t, job, base, hwq, io);
        }
    }

    fn submit(&mut self, thread: u32, job: u32, base: u64, hwq: u16, io: IoSpec) {
        let rt = &self.jobs[job as usize];
        self.in_system += 1;
        self.in_system_submit_sum += self.now as u128;
        if self.specs[job as usize].buffered {
            self.submit_buffered(thread, io);
            return;
        }
        let r = NewRequest {
            flow: rt.flow,
            op: io.op,
            offset: base + io.offset,
            len: io.len,
            class: rt.class,
            hwq,
            fua: false,
        };
        self.block.submit(self.now, r, thread as u64);
    }

    /// Offer dispatch opportunities (the block layer's pump), then keep one timer event
    /// armed for the policy's timer.
    fn pump(&mut self) {
        self.block.pump(self.now, &mut self.port);
        let want = self.block.next_timer_ns();
        self.events
            .arm(&mut self.timer_armed, want, self.now, Event::PolicyTimer);
    }

    fn device_events(&mut self) {
        let mut done = std::mem::take(&mut self.completions);
        self.port.device.advance(self.now, &mut done);
        for c in done.drain(..) {
            if let Some(f) = self.block.piece_done(self.now, c.tag, c.ok) {
                if sluice_cache::front::FRONT_TOKEN & f.token != 0 {
                    self.front_finished(f);
                } else {
                    self.request_done(f);
                }
            }
        }
        self.completions = done;
    }

    fn request_done(&mut self, rs: Finished) {
        self.io_done(rs.token as u32, &rs);
    }

    /// Thread `t`'s I/O `rs` completed (a request of a direct job, or a buffered job's
    /// I/O through the page cache, then with its device times).
    fn io_done(&mut self, t: u32, rs: &Finished) {
        self.in_system -= 1;
        self.in_system_submit_sum -= rs.submit_ns as u128;
        self.ios += 1;
        self.latency_sum_ns += (self.now - rs.submit_ns) as u128;
        let th = &mut self.threads[t as usize];
        th.outstanding -= 1;
        let job = th.job as usize;
        // Completions after a job's time-based end are not counted, as in fio — but its
        // end sync is (fio issues it after its I/O loop and counts it).
        if self.jobs[job].ended_ns.is_none() || rs.op == Op::Flush {
            if let Some(ss) = &mut self.jobs[job].ss {
                if rs.ok {
                    ss.count(1, rs.len as u64);
                }
            }
            self.collector.record(&Sample {
                job,
                op: rs.op,
                class: self.jobs[job].class,
                bytes: rs.len,
                submit_ns: rs.submit_ns,
                admit_ns: rs.admit_ns,
                dispatch_ns: rs.dispatch_ns,
                // The simulator reaps a request at the device event that completes it
                // (no host CPU model yet): device done = reaped = now (= the block
                // layer's `rs.device_done_ns`), and saying so lets the compiler fold
                // the zero "after device" part.
                device_done_ns: self.now,
                reaped_ns: self.now,
                ok: rs.ok,
            });
        }
        let think = self.specs[job].thinktime_ns;
        if self.threads[t as usize].state == ThreadState::Running {
            if think > 0 {
                self.wake(t, self.now + think);
            } else {
                self.try_issue(t);
            }
        } else {
            self.maybe_thread_done(t);
        }
    }

    /// fio's `exitall`: when job `j` ends, so does every other job of its group.
    fn exit_all(&mut self, j: u32) {
        if !self.specs[j as usize].exitall {
            return;
        }
        let g = self.jobs[j as usize].group;
        for &k in &self.groups[g] {
            let rt = &self.jobs[k as usize];
            if k != j && !rt.done && rt.ended_ns.is_none() {
                self.events.push(self.now, Event::JobEnd(k));
            }
        }
    }

    fn maybe_thread_done(&mut self, t: u32) {
        let th = &mut self.threads[t as usize];
        if th.state != ThreadState::Stopping || th.outstanding > 0 {
            return;
        }
        th.state = ThreadState::Done;
        let j = th.job as usize;
        let rt = &mut self.jobs[j];
        rt.live -= 1;
        if rt.live > 0 {
            return;
        }
        rt.done = true;
        if rt.ended_ns.is_none() {
            self.last_job_end = self.last_job_end.max(self.now);
            self.collector.job_done(j, self.now);
            self.exit_all(j as u32);
        }
        let g = self.jobs[j].group;
        if self.groups[g].iter().all(|&j| self.jobs[j as usize].done) {
            self.start_group(g + 1);
        }
    }

    fn finish(mut self) -> SimOutput {
        // Residence of requests still in the system (none after a normal end; kept so
        // the check stays exact if a run is cut short).
        let residual: u128 = self.in_system as u128 * self.now as u128 - self.in_system_submit_sum;
        let t = self.now.max(1) as f64;
        let l = self.area_ns as f64 / t;
        let lambda_w = (self.latency_sum_ns + residual) as f64 / t;
        let rel_error = if l > 0.0 {
            (l - lambda_w).abs() / l
        } else {
            0.0
        };
        let little = LittleCheck {
            l,
            lambda_w,
            rel_error,
        };
        let fetched = self.port.device.stats().fetched_per_class;
        for (j, rt) in self.jobs.iter().enumerate() {
            if let Some(ss) = &rt.ss {
                self.collector.set_steadystate(j, SteadyReport::of(ss));
            }
        }
        let mut report = std::mem::replace(
            &mut self.collector,
            Collector::new(RunSetup {
                jobs: Vec::new(),
                flows: Vec::new(),
                interval_ns: 1,
            }),
        )
        .finish(self.last_job_end, self.block.policy().name());
        report.extra = Extra {
            sim: Some(SimFacts {
                device: self.port.device.profile().name.clone(),
                cores: self.cfg.cores,
                sim_ns: self.now,
                sim_events: self.n_events,
                sim_ios: self.ios,
                device_fetched_per_class: PerClass(fetched),
                device_wrr_weights: self.block.wrr_applied(),
                device_faults: self.port.device.faults().map(|_| DeviceFaults {
                    media_errors: self.port.device.stats().media_errors,
                    timeouts: self.port.device.stats().timeouts,
                }),
                device_flash: crate::port::flash_facts(&self.port.device),
                littles_law_l: round6(l),
                littles_law_lambda_w: round6(lambda_w),
            }),
            page_cache: self.buffered.as_ref().map(Buffered::stats),
            ..Extra::from_block("sim", self.cfg.seed, &self.block)
        };
        SimOutput {
            report,
            stats: SimStats {
                events: self.n_events,
                ios: self.ios,
                sim_ns: self.now,
                little,
                fetched_per_class: fetched,
                interrupted: self.interrupted,
            },
        }
    }
}

fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}
