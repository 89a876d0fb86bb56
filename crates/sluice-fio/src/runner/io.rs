//! The runner's I/O path: a thread's turn of issues (depth, pacing, token flows, verify
//! read-backs, per-I/O priorities, zones) and a completion (latency target, steady
//! state, the sample, the thread's next turn or its end).

use super::*;

impl Runner {
    /// Issue from thread `t` as far as its depth, pacer and size allow: one turn (fio's
    /// submission, for its depth maps).
    pub(super) fn try_issue(&mut self, t: u32, now: Nanos, port: &mut impl Port) {
        self.issue_turn(t, now, port);
        self.threads[t as usize].depths.end_turn();
    }

    pub(super) fn issue_turn(&mut self, t: u32, now: Nanos, port: &mut impl Port) {
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
            // fio's `dp_fill_dspec_data`: writes only.
            let placement = match th.place.as_mut() {
                Some(p) if io.op == Op::Write => p.draw(),
                _ => 0,
            };
            let req = NewRequest {
                flow: rt.flow,
                op: io.op,
                offset: th.base + io.offset,
                len: io.len,
                class,
                hwq: th.hwq,
                fua: false,
                placement,
                // fio's `atomic=1`: `RWF_ATOMIC` on each write (reads are plain).
                atomic: rt.opts.atomic && io.op == Op::Write,
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
    pub(super) fn not_issued(
        &mut self,
        t: u32,
        next: NextIo,
        now: Nanos,
        port: &mut impl Port,
    ) -> bool {
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
    pub(super) fn token_flow(
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
    pub(super) fn flow_wait(
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
    pub(super) fn unblock(&mut self, f: usize, now: Nanos, port: &mut impl Port) {
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
            th.stop_issuing();
            self.maybe_thread_done(t, reaped_ns, port);
            return;
        }
        // fio ends a thread at its first failed I/O unless `continue_on_error` names
        // the I/O's kind (`sluice_workload::ContinueOn`); the I/O is still reported
        // (an error of the job) and the thread drains what it has in flight.
        let failed_stop = !f.ok && !self.jobs[job].opts.continue_on.after_io(f.op);
        let th = &mut self.threads[t as usize];
        if verdict != LatVerdict::Go || failed_stop {
            // The search ended the thread (its depth found, or depth 1 missed the
            // target: an error, as fio's ETIMEDOUT): it issues nothing more.
            if verdict == LatVerdict::Fatal {
                port.record_error(job, th.index, f.op, sluice_metrics::errors::ETIMEDOUT);
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
                thread: self.threads[t as usize].index,
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
    pub(super) fn verify_done(
        &mut self,
        t: u32,
        f: &Finished,
        d: VerifyDone<'_>,
        now: Nanos,
        port: &mut impl Port,
    ) {
        let th = &mut self.threads[t as usize];
        let job = th.job as usize;
        let index = th.index;
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
            port.record_error(job, index, Op::Read, sluice_metrics::errors::EILSEQ);
            if v.fatal() && self.jobs[job].ended_ns.is_none() {
                self.end_job(job as u32, now, port);
            } else if !self.jobs[job].opts.continue_on.verify {
                // fio: a block that failed its check is an error (EILSEQ) that ends
                // the thread unless `continue_on_error` names verify errors.
                self.threads[t as usize].stop_issuing();
            }
        }
    }
}
