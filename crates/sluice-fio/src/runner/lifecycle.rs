//! The runner's groups and jobs over time: a stonewall group's start, `wait_for`, a
//! job's start and end (`runtime`, steady state, `exitall`, interrupts), a thread's end
//! (its end sync, the job's and the group's end).

use super::*;

impl Runner {
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
    pub(super) fn waitee_done(&self, w: u32, port: &mut impl Port) -> bool {
        match self.scope {
            Scope::Whole => self.jobs[w as usize].done,
            Scope::Part => port.job_over(w),
        }
    }

    /// A waiting job `j`: start it if its waitee is done; else, in a [`Scope::Part`]
    /// runner (whose waitee may run in another part), look again [`WAIT_POLL_NS`]
    /// later. A [`Scope::Whole`] runner starts it when the waitee's last thread is
    /// done.
    pub(super) fn poll_wait(&mut self, j: u32, now: Nanos, port: &mut impl Port) {
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
    pub(super) fn start_job(&mut self, j: u32, now: Nanos, port: &mut impl Port) {
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

    /// fio's `exitall`: when job `j` ends, so do the jobs its `exit_what` names
    /// ([`sluice_workload::exit_targets`]) that have not ended.
    pub(super) fn exit_all(&mut self, j: u32, port: &mut impl Port) {
        if self.jobs[j as usize].opts.exits.is_empty() {
            return;
        }
        let others: Vec<u32> = self.jobs[j as usize]
            .opts
            .exits
            .iter()
            .copied()
            .filter(|&k| {
                let rt = &self.jobs[k as usize];
                rt.here && !rt.done && rt.ended_ns.is_none()
            })
            .collect();
        port.exit_all(j, &others);
    }

    pub(super) fn maybe_thread_done(&mut self, t: u32, now: Nanos, port: &mut impl Port) {
        let th = &mut self.threads[t as usize];
        if th.state != State::Stopping || th.outstanding > 0 {
            return;
        }
        th.state = State::Done;
        self.active -= 1;
        port.thread_end(th.job as usize, th.index, now);
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
}
