//! The simulation loop. See the crate documentation for the model.

use sluice_block::{BlockLayer, Finished};
use sluice_core::policy::Policy;
use sluice_core::{FlowId, Nanos, Op};
use sluice_device::{DeviceCompletion, DeviceProfile, NvmeSsd};
use sluice_fio::{AddressPlan, Owner, Port, Runner, Scope, Submit, ThreadSetup};
use sluice_metrics::{
    Collector, DeviceFaults, Extra, PerClass, RunSetup, Sample, SimFacts, SteadyReport,
};
use sluice_workload::{flows_of, JobSpec};

use crate::config::{LittleCheck, SimConfig, SimError, SimOutput, SimStats, ZoneStats};
use crate::events::{Event, EventQueue};
use crate::port::SimPort;

mod buffered;
use buffered::Buffered;

/// The simulator's side of the runner's [`Port`]: the block layer, the device, the
/// event queue, the page cache of buffered jobs and the collector.
struct World<'a> {
    specs: &'a [JobSpec],
    /// The one block layer (admission, policy, pieces), as in the real engine.
    block: BlockLayer,
    port: SimPort,
    collector: Collector,
    events: EventQueue,
    /// Thread → its file in the page cache (buffered jobs).
    thread_file: Vec<u32>,
    /// The page cache of buffered jobs (`direct=0`), if any job is.
    buffered: Option<Buffered>,
    /// When the page cache's timer event is armed for (see `Event::FrontTimer`).
    front_timer_armed: Option<Nanos>,
    now: Nanos,
    // Little's law bookkeeping.
    in_system: u64,
    /// Σ submission times of the requests in the system (for the residual in Little's
    /// law when a run is cut short).
    in_system_submit_sum: u128,
    area_ns: u128,
    last_t: Nanos,
    latency_sum_ns: u128,
    ios: u64,
}

impl Port for World<'_> {
    fn submit(&mut self, s: Submit<'_>) {
        self.in_system += 1;
        self.in_system_submit_sum += self.now as u128;
        if self.specs[s.job as usize].buffered {
            self.submit_buffered(s.thread, s.req, s.io);
            return;
        }
        self.block
            .submit(self.now, s.req, Owner::Job(s.thread).token());
    }

    fn wake_at(&mut self, thread: u32, at: Nanos) {
        self.events.push(at, Event::ThreadWake(thread));
    }

    fn job_start(&mut self, job: u32, start_ns: Nanos) {
        let ramp = self.specs[job as usize].ramp_ns;
        self.collector.set_job_window(job as usize, start_ns + ramp);
    }

    fn end_at(&mut self, job: u32, at: Nanos) {
        self.events.push(at, Event::JobEnd(job));
    }

    fn steady_at(&mut self, job: u32, at: Nanos) {
        self.events.push(at, Event::SteadyCheck(job));
    }

    fn record(&mut self, s: &Sample) {
        self.collector.record(s);
    }

    fn thread_end(&mut self, job: usize, thread: u32, at: Nanos) {
        self.collector.thread_done(job, thread, at);
    }

    fn record_error(&mut self, job: usize, thread: u32, op: Op, errno: i32) {
        self.collector.record_thread_error(job, thread, op, errno);
    }

    fn job_done(&mut self, job: usize, at: Nanos) {
        self.collector.job_done(job, at);
    }

    fn exit_all(&mut self, _job: u32, others: &[u32]) {
        for &k in others {
            self.events.push(self.now, Event::JobEnd(k));
        }
    }
}

struct Sim<'a> {
    specs: &'a [JobSpec],
    cfg: &'a SimConfig,
    /// The job threads (the one fio runner).
    runner: Runner,
    w: World<'a>,
    completions: Vec<DeviceCompletion>,
    timer_armed: Option<Nanos>,
    interrupted: bool,
    n_events: u64,
    interval_ns: Nanos,
}

impl std::fmt::Debug for Sim<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sim").field("now", &self.w.now).finish()
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
    // fio's fill_device: the filling job's file reaches to the device's end (files
    // sit side by side in one address space: its room is the capacity past its base).
    let key = |j: usize, t: u32| match &jobs[j].filename {
        Some(f) => f.clone(),
        None => format!("\u{0}{j}.{t}"),
    };
    let cap = profile.capacity_bytes();
    let resolved = sluice_fio::fill::resolve(jobs, key, |f| {
        let Some(cap) = cap else {
            return Err(format!(
                "the device profile '{}' gives no capacity (only [flash] logical_bytes or \
                 [zoned] zones do), so its device never runs out of space; use --device nand \
                 or zns, or a profile with a [flash] section",
                profile.name
            ));
        };
        cap.checked_sub(f.base).filter(|&r| r > 0).ok_or_else(|| {
            format!(
                "its file starts at byte {} of the {cap}-byte device: there is no room left",
                f.base
            )
        })
    })
    .map_err(|e| SimError::Fill(e.to_string()))?;
    if let Some(r) = &resolved {
        let plan = AddressPlan::new(r, |j, t| match &r[j].filename {
            Some(f) => f.clone(),
            None => format!("\u{0}{j}.{t}"),
        });
        let cap = cap.unwrap_or(u64::MAX);
        sluice_fio::fill::check_within(r, &plan, cap).map_err(|e| SimError::Fill(e.to_string()))?;
    }
    let jobs = resolved.as_deref().unwrap_or(jobs);
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

        // The one plan of the address space: every (job, thread) has its own region
        // unless jobs name the same `filename`, which then share one.
        let plan = AddressPlan::new(specs, |j, t| match &specs[j].filename {
            Some(f) => f.clone(),
            None => format!("\u{0}{j}.{t}"),
        });
        let hwq = |global: u32| (global % cfg.cores as u32) as u16;
        let files: Vec<(u64, FlowId, u16)> = plan
            .files
            .iter()
            .map(|f| {
                let first = plan.threads[f.first_thread as usize];
                (f.base, job_flow[first.job as usize], hwq(first.global))
            })
            .collect();
        let threads: Vec<ThreadSetup> = plan
            .threads
            .iter()
            .map(|t| ThreadSetup {
                job: t.job,
                index: t.index,
                base: plan.files[t.file as usize].base,
                hwq: hwq(t.global),
            })
            .collect();
        let mut runner = Runner::new(specs, &job_flow, &threads, cfg.seed, Scope::Whole, false);

        let setup = RunSetup::for_jobs(specs, &flows, &job_flow, cfg.interval_ns);
        let interval_ns = setup.interval_ns;

        let mut device = NvmeSsd::new(profile, cfg.cores);
        device.set_faults(cfg.faults, cfg.seed);
        device.set_seed(cfg.seed);
        let cap: usize = plan
            .threads
            .iter()
            .map(|t| specs[t.job as usize].iodepth.max(1) as usize)
            .sum();
        // Preallocate for the usual depths; deeper runs grow as requests arrive.
        let mut block =
            BlockLayer::with_meter(policy, &flows, sluice_block::NoMeter, cap.min(1 << 16));
        match &profile.zoned {
            Some(z) => {
                // Every policy keeps zone write order on a zoned device; zbd jobs
                // write at the zones' write pointers.
                block.set_zoned(z.zone_size_bytes);
                let geo = sluice_fio::ZoneGeometry {
                    zone_size: z.zone_size_bytes,
                    capacity: z.zone_capacity_bytes,
                    zones: z.zones,
                    max_open: z.max_open,
                };
                runner.set_zoned(geo, specs).map_err(SimError::Zones)?;
            }
            None => {
                if let Some(s) = specs.iter().find(|s| s.zone.zbd()) {
                    return Err(SimError::Zones(format!(
                        "job '{}' has zonemode=zbd, which needs a zoned device, and the device profile '{}' is not zoned; use --device zns (or a profile with a [zoned] section)",
                        s.name, profile.name
                    )));
                }
            }
        }

        runner
            .set_placement(profile.fdp_ruhs(), specs, &profile.name)
            .map_err(SimError::Placement)?;
        // fio's `atomic=1`: each write must fit the device's atomic write unit (NVMe
        // AWUPF, the profile's `controller.atomic_write_bytes`), as Linux checks an
        // `RWF_ATOMIC` write against `atomic_write_unit_{min,max}_bytes`.
        let (min, max) = profile.atomic_write_unit();
        let limits = sluice_workload::AtomicLimits { min, max };
        let what = format!(
            "the device profile '{}' (controller.atomic_write_bytes)",
            profile.name
        );
        for s in specs {
            limits.check(s, &what).map_err(SimError::Atomic)?;
        }
        if let Some(e) = sluice_workload::metadata_refusal(
            specs,
            "sluice's simulated devices have no metadata or PI format",
        ) {
            return Err(SimError::Placement(e));
        }
        let buffered = Buffered::for_jobs(specs, &cfg.page_cache, &files)?;
        Ok(Sim {
            specs,
            cfg,
            runner,
            w: World {
                specs,
                block,
                port: SimPort::new(device),
                collector: Collector::new(setup).with_fio_logs(specs),
                events: EventQueue::new(),
                thread_file: plan.threads.iter().map(|t| t.file).collect(),
                buffered,
                front_timer_armed: None,
                now: 0,
                in_system: 0,
                in_system_submit_sum: 0,
                area_ns: 0,
                last_t: 0,
                latency_sum_ns: 0,
                ios: 0,
            },
            completions: Vec::with_capacity(256),
            timer_armed: None,
            interrupted: false,
            n_events: 0,
            interval_ns,
        })
    }

    fn run(&mut self, progress: &mut dyn FnMut(f64)) -> Result<(), SimError> {
        // Bandwidth bins and flow rates count from the end of the first ramp.
        if let Some(first) = self
            .specs
            .iter()
            .enumerate()
            .filter(|(j, _)| self.runner.job_group(*j) == 0)
            .map(|(_, s)| s.startdelay_ns + s.ramp_ns)
            .min()
        {
            self.w.collector.set_window(first);
        }
        self.runner.start_group(0, 0, &mut self.w);
        if self.w.block.has_counters() {
            self.w.events.push(0, Event::SampleCounters);
        }
        progress(0.0);
        loop {
            if self.runner.group() >= self.runner.groups() {
                break;
            }
            let t_dev = self.w.port.device.next_event_ns();
            let t_ev = self.w.events.peek_ns();
            let take_device = match (t_dev, t_ev) {
                (None, None) => {
                    return Err(SimError::Stalled {
                        now_ns: self.w.now,
                        policy: self.w.block.policy().name().to_string(),
                        queued: self.w.block.policy().queued(),
                        waiting: self.w.block.waiting(),
                    })
                }
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (Some(d), Some(e)) => d <= e,
            };
            let t = if take_device { t_dev } else { t_ev }.expect("checked above");
            debug_assert!(t >= self.w.now, "time went backwards");
            if t > self.cfg.max_sim_ns {
                let g = self.runner.group();
                let running: Vec<&JobSpec> = self
                    .specs
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| !self.runner.done(*j) && self.runner.job_group(*j) == g)
                    .map(|(_, s)| s)
                    .collect();
                let names: Vec<String> = running
                    .iter()
                    .map(|s| format!("job '{}'", s.name))
                    .collect();
                return Err(SimError::TimeCap {
                    cap_ns: self.cfg.max_sim_ns,
                    jobs: names.join(", "),
                    cause: crate::estimate::time_cap_cause(&running, self.cfg.max_sim_ns),
                });
            }
            self.advance_clock(t);
            self.n_events += 1;
            if take_device {
                self.device_events();
            } else {
                let (_, ev) = self.w.events.pop().expect("peeked");
                self.handle(ev);
            }
            self.pump();
            if self.n_events & 0xFFFF == 0 {
                progress(self.runner.progress(self.w.now));
                let stop = self.cfg.stop.as_ref();
                if stop.is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed)) {
                    self.interrupted = true;
                    // Every job still running ends now (its results so far are kept).
                    self.runner.cut(self.w.now, &mut self.w);
                    break;
                }
            }
        }
        progress(1.0);
        Ok(())
    }

    fn advance_clock(&mut self, t: Nanos) {
        let w = &mut self.w;
        w.area_ns += w.in_system as u128 * (t - w.last_t) as u128;
        w.last_t = t;
        w.now = t;
    }

    fn handle(&mut self, ev: Event) {
        let now = self.w.now;
        match ev {
            Event::ThreadWake(t) => {
                self.runner.wake(t, now, &mut self.w);
            }
            Event::JobEnd(j) => self.runner.end_job(j, now, &mut self.w),
            Event::SteadyCheck(j) => self.runner.steady_check(j, now, &mut self.w),
            Event::SampleCounters => {
                self.w.block.sample_counters(now);
                // Keep sampling only while something else can still happen, so a stuck
                // policy is still reported as stalled.
                if !self.w.events.is_empty() || self.w.port.device.next_event_ns().is_some() {
                    self.w
                        .events
                        .push(now + self.interval_ns, Event::SampleCounters);
                }
            }
            Event::PolicyTimer => {
                if self.timer_armed == Some(now) {
                    self.timer_armed = None;
                    self.w.block.fire_timer(now);
                }
            }
            Event::FrontTimer => self.w.front_timer(),
            Event::BufferedDone(id) => {
                let (t, f) = self.w.buffered_delivered(id);
                self.io_done(t, &f);
            }
        }
    }

    /// Offer dispatch opportunities (the block layer's pump), then keep one timer event
    /// armed for the policy's timer.
    fn pump(&mut self) {
        let w = &mut self.w;
        w.block.pump(w.now, &mut w.port);
        let want = w.block.next_timer_ns();
        w.events
            .arm(&mut self.timer_armed, want, w.now, Event::PolicyTimer);
    }

    fn device_events(&mut self) {
        let mut done = std::mem::take(&mut self.completions);
        let now = self.w.now;
        self.w.port.device.advance(now, &mut done);
        for c in done.drain(..) {
            if let Some(f) = self.w.block.piece_done(now, c.tag, c.ok) {
                match Owner::of(f.token) {
                    Owner::Front(_) => self.w.front_finished(f),
                    Owner::Job(t) => self.io_done(t, &f),
                }
            }
        }
        self.completions = done;
    }

    /// Thread `t`'s I/O `rs` completed (a request of a direct job, or a buffered job's
    /// I/O through the page cache, then with its device times). The simulator reaps a
    /// request at the event that completes it (no host CPU model yet).
    fn io_done(&mut self, t: u32, rs: &Finished) {
        let w = &mut self.w;
        w.in_system -= 1;
        w.in_system_submit_sum -= rs.submit_ns as u128;
        w.ios += 1;
        w.latency_sum_ns += (w.now - rs.submit_ns) as u128;
        let now = w.now;
        self.runner.complete(t, rs, now, None, &mut self.w);
    }

    fn finish(mut self) -> SimOutput {
        let w = &mut self.w;
        // Residence of requests still in the system (none after a normal end; kept so
        // the check stays exact if a run is cut short).
        let residual: u128 = w.in_system as u128 * w.now as u128 - w.in_system_submit_sum;
        let t = w.now.max(1) as f64;
        let l = w.area_ns as f64 / t;
        let lambda_w = (w.latency_sum_ns + residual) as f64 / t;
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
        let fetched = w.port.device.stats().fetched_per_class;
        for (j, ss) in self.runner.steady() {
            w.collector.set_steadystate(j, SteadyReport::of(ss));
        }
        self.runner.report_queue_facts(&mut w.collector);
        let mut report = std::mem::replace(
            &mut w.collector,
            Collector::new(RunSetup {
                jobs: Vec::new(),
                flows: Vec::new(),
                interval_ns: 1,
                global_options: Vec::new(),
            }),
        )
        .finish(self.runner.last_job_end(), w.block.policy().name());
        report.extra = Extra {
            sim: Some(SimFacts {
                device: w.port.device.profile().name.clone(),
                cores: self.cfg.cores,
                sim_ns: w.now,
                sim_events: self.n_events,
                sim_ios: w.ios,
                device_fetched_per_class: PerClass(fetched),
                device_wrr_weights: w.block.wrr_applied(),
                device_faults: w.port.device.faults().map(|_| DeviceFaults {
                    media_errors: w.port.device.stats().media_errors,
                    timeouts: w.port.device.stats().timeouts,
                }),
                device_flash: crate::port::flash_facts(&w.port.device),
                device_atomic_write_bytes: self
                    .specs
                    .iter()
                    .any(|s| s.atomic && s.rw.writes())
                    .then(|| w.port.device.profile().atomic_write_unit().1),
                littles_law_l: round6(l),
                littles_law_lambda_w: round6(lambda_w),
            }),
            page_cache: w.buffered.as_ref().map(Buffered::stats),
            ..Extra::from_block("sim", self.cfg.seed, &w.block)
        };
        SimOutput {
            report,
            stats: SimStats {
                events: self.n_events,
                ios: w.ios,
                sim_ns: w.now,
                little,
                fetched_per_class: fetched,
                interrupted: self.interrupted,
                zones: w.port.device.zones().map(|z| ZoneStats {
                    write_pointers: (0..z.config().zones as usize)
                        .map(|i| z.write_pointer(i) - i as u64 * z.config().zone_size_bytes)
                        .collect(),
                    resets: z.resets,
                    runner_resets: self.runner.zone_resets(),
                    errors: z.errors,
                    implicit_closes: z.implicit_closes,
                    peak_open: z.peak_open,
                    peak_active: z.peak_active,
                }),
            },
        }
    }
}

fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}
