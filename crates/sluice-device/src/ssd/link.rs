//! The shared host transfer (`controller.transfer = "shared"`, see
//! [`crate::profile::Transfer`]): command processing is one FIFO stage, and the data
//! transfers past it share the front end's bandwidth equally (processor sharing).
//!
//! With `n` transfers in progress each moves at `bus / n`. Work is kept as the time a
//! transfer would take alone, in units of 2⁻¹⁶ ns; over `dt` every transfer in progress
//! loses `⌊dt · 2¹⁶ / n⌋`. The next departure is `⌈min_left · n / 2¹⁶⌉` ns away (so at
//! that instant the smallest remaining work has reached 0 exactly: integers only, the
//! same on every machine). An arrival slows every transfer in progress, and a small one
//! may finish first, so a transfer's end is known only once no other can join before
//! it. Every transfer starts after its command's processing, which is FIFO, so none
//! booked later joins before the processor is free: the link runs eagerly to that
//! horizon (at a busy controller, far ahead of the transfers), and a link event is
//! booked only for a change beyond it. One stays armed; an earlier one is added when
//! a change comes before it, and one that finds nothing to do is harmless.

use std::collections::VecDeque;

use sluice_core::Nanos;

use super::state::LINK_EVENT;
use super::{Command, NvmeSsd};

/// Fixed-point scale of remaining work (2¹⁶ units per ns). Work fits a `u64`: a
/// command moves at most 4 GiB, at least 1 MB/s (profile bounds), so under 2⁴² ns.
const SHIFT: u32 = 16;

/// `⌈left · n / 2¹⁶⌉`: the time for `n` transfers sharing the link to move `left`
/// each.
#[inline]
fn span(left: u64, n: u64) -> Nanos {
    ((left as u128 * n as u128 + (1 << SHIFT) - 1) >> SHIFT) as Nanos
}

/// `⌊dt · 2¹⁶ / n⌋`: the work each of `n` transfers moves in `dt`.
#[inline]
fn share(dt: Nanos, n: u64) -> u64 {
    if dt < 1 << (64 - SHIFT) {
        (dt << SHIFT) / n
    } else {
        u64::MAX
    }
}

/// A transfer booked on the link: its command's slot, when it starts (joins the
/// link), when its command's processing ends, its time alone, and whether the media
/// come after it (a write) or it ends the command (a read's data going to the host).
#[derive(Clone, Copy, Debug)]
pub(super) struct Staged {
    pub(super) slot: u32,
    pub(super) start: Nanos,
    pub(super) cmd_end: Nanos,
    pub(super) work: Nanos,
    pub(super) then_media: bool,
}

/// A transfer in progress.
#[derive(Clone, Copy, Debug)]
struct Active {
    job: Staged,
    /// Work left, ns × 2¹⁶.
    left: u64,
}

/// A transfer that ended, its command, and when the front end is done with it (the
/// later of its transfer's and its processing's end).
#[derive(Clone, Copy, Debug)]
pub(super) struct Departed {
    job: Staged,
    cmd: Command,
    done: Nanos,
}

/// The link's state.
#[derive(Debug, Default)]
pub(super) struct Link {
    /// When the controller's processor is free (commands are processed in fetch order).
    cpu_free: Nanos,
    /// Transfers booked to start, by start time.
    joining: VecDeque<Staged>,
    /// Transfers in progress.
    active: Vec<Active>,
    /// The time `active`'s work was last brought up to.
    last: Nanos,
    /// The earliest link event in the device's event list, if any.
    armed: Option<Nanos>,
    /// Per slot: the command whose transfer is booked.
    cmds: Vec<Command>,
}

impl Link {
    /// A link for a controller of `slots` commands.
    pub(super) fn new(slots: u32) -> Link {
        Link {
            cmds: vec![
                Command {
                    tag: 0,
                    op: sluice_core::Op::Flush,
                    offset: 0,
                    len: 0,
                    fua: false,
                    placement: 0,
                };
                slots as usize
            ],
            ..Link::default()
        }
    }

    /// Book command processing of `cmd_ns` for a command reaching the front end at
    /// `arrive`: returns when it starts and ends.
    pub(super) fn process(&mut self, arrive: Nanos, cmd_ns: Nanos) -> (Nanos, Nanos) {
        let start = arrive.max(self.cpu_free);
        self.cpu_free = start + cmd_ns;
        (start, self.cpu_free)
    }

    /// Book `job`, the transfer of `cmd`.
    fn stage(&mut self, cmd: Command, job: Staged) {
        self.cmds[job.slot as usize] = cmd;
        let start = job.start;
        // Start times mostly come in order (processing is FIFO; a read's varies with
        // its media): look from the back.
        if self.joining.back().is_none_or(|j| j.start <= start) {
            self.joining.push_back(job);
        } else {
            let i = self.joining.partition_point(|j| j.start <= start);
            self.joining.insert(i, job);
        }
    }

    /// Bring every transfer in progress up to `t`.
    fn progress(&mut self, t: Nanos) {
        if t <= self.last {
            return;
        }
        if !self.active.is_empty() {
            let done = share(t - self.last, self.active.len() as u64);
            for a in &mut self.active {
                a.left = a.left.saturating_sub(done);
            }
        }
        self.last = t;
    }

    /// When the first transfer ends, the transfers booked to join included (they join
    /// on the way: every transfer in progress loses the same work, so the least stays
    /// the least until a smaller one joins). The same integer steps as
    /// [`Link::run_to`], so at that time a transfer's work has reached 0 exactly; no
    /// event is needed for a join.
    fn next_departure(&self) -> Option<Nanos> {
        let mut t = self.last;
        let mut n = self.active.len() as u64;
        let mut min = self.active.iter().map(|a| a.left).min();
        for j in &self.joining {
            if let Some(m) = min {
                let d = t + span(m, n);
                if d <= j.start {
                    return Some(d);
                }
                if j.start > t {
                    min = Some(m.saturating_sub(share(j.start - t, n)));
                }
            }
            t = t.max(j.start);
            n += 1;
            let w = j.work << SHIFT;
            min = Some(min.map_or(w, |m| m.min(w)));
        }
        min.map(|m| t + span(m, n))
    }

    /// When the link next changes: a join, or a departure among the transfers in
    /// progress.
    fn next_change(&self) -> Option<Nanos> {
        let join = self.joining.front().map(|j| j.start);
        let n = self.active.len() as u64;
        let leave = self
            .active
            .iter()
            .map(|a| a.left)
            .min()
            .map(|m| self.last + span(m, n));
        match (join, leave) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Run the link up to `t`: joins and departures in time order; the transfers that
    /// ended are appended to `out` in the order they ended (ties in join order).
    fn run_to(&mut self, t: Nanos, out: &mut Vec<Departed>) {
        while let Some(next) = self.next_change().filter(|&n| n <= t) {
            self.progress(next);
            let mut i = 0;
            while i < self.active.len() {
                if self.active[i].left == 0 {
                    let a = self.active.remove(i);
                    out.push(Departed {
                        job: a.job,
                        cmd: self.cmds[a.job.slot as usize],
                        done: next.max(a.job.cmd_end),
                    });
                } else {
                    i += 1;
                }
            }
            while self.joining.front().is_some_and(|j| j.start <= next) {
                let job = self.joining.pop_front().expect("checked");
                self.active.push(Active {
                    job,
                    left: job.work << SHIFT,
                });
            }
        }
    }

    /// The link event to book after a change: the next one, if it comes before the
    /// armed one (or none is armed).
    fn rebook(&mut self) -> Option<Nanos> {
        let next = self.next_departure()?;
        if self.armed.is_some_and(|a| a <= next) {
            return None;
        }
        self.armed = Some(next);
        Some(next)
    }
}

impl NvmeSsd {
    /// Book `job`, the transfer of `cmd`, on the shared link (its processing booked).
    pub(super) fn link_stage(&mut self, cmd: Command, job: Staged) {
        let link = self.sharing.as_mut().expect("shared transfer");
        link.stage(cmd, job);
        self.link_run(0);
    }

    /// A link event at `t`: run the link (to `t` at least).
    pub(super) fn link_event(&mut self, t: Nanos) {
        let link = self.sharing.as_mut().expect("shared transfer");
        if link.armed == Some(t) {
            link.armed = None;
        }
        self.link_run(t);
    }

    /// Run the link as far as it is known — to `t`, and to when the processor is free:
    /// every transfer booked later starts after its processing, so none joins before
    /// that — finish the front end of every transfer that ended, and book a link event
    /// for the next change beyond. At a busy controller the horizon runs ahead of the
    /// transfers, and a transfer's end costs no event of its own (its completion is
    /// booked at once; `scripts/perf-sim.sh`).
    fn link_run(&mut self, t: Nanos) {
        let link = self.sharing.as_mut().expect("shared transfer");
        let horizon = t.max(link.cpu_free);
        let mut ended = std::mem::take(&mut self.sharing_ended);
        link.run_to(horizon, &mut ended);
        if let Some(t) = link.rebook() {
            self.push_event(t, LINK_EVENT, 0);
        }
        for d in ended.drain(..) {
            let done = if d.job.then_media {
                self.after_front(d.job.slot, &d.cmd, d.job.start, d.done)
            } else {
                Some(d.done)
            };
            if let Some(done) = done {
                self.push_event(done + self.complete_ns, d.job.slot, 0);
            }
        }
        self.sharing_ended = ended;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_core::Op;

    fn cmd(tag: u32) -> Command {
        Command {
            tag,
            op: Op::Write,
            offset: 0,
            len: 4096,
            fua: false,
            placement: 0,
        }
    }

    fn job(i: usize, start: Nanos, work: Nanos) -> Staged {
        Staged {
            slot: i as u32,
            start,
            cmd_end: start,
            work,
            then_media: true,
        }
    }

    fn run(jobs: &[(Nanos, Nanos)]) -> Vec<(u32, Nanos)> {
        let mut link = Link::new(64);
        for (i, &(start, work)) in jobs.iter().enumerate() {
            link.stage(cmd(i as u32), job(i, start, work));
        }
        let mut out = Vec::new();
        link.run_to(Nanos::MAX / 2, &mut out);
        out.iter().map(|d| (d.job.slot, d.done)).collect()
    }

    proptest::proptest! {
        /// The first departure foreseen through the joins is the one the link finds
        /// when it runs (so no event is needed for a join), and every transfer ends.
        #[test]
        fn the_foreseen_departure_is_the_first_one(
            jobs in proptest::collection::vec((0u64..50_000, 1u64..60_000), 1..40),
            done_first in 0usize..40,
        ) {
            let mut link = Link::new(64);
            let mut sorted = jobs.clone();
            sorted.sort_unstable();
            let mut out = Vec::new();
            // Some transfers already in progress, the rest still to join.
            let split = done_first.min(sorted.len());
            for (i, &(start, work)) in sorted[..split].iter().enumerate() {
                link.stage(cmd(i as u32), job(i, start, work));
            }
            let cut = sorted[..split].last().map_or(0, |j| j.0);
            link.run_to(cut, &mut out);
            for (i, &(start, work)) in sorted.iter().enumerate().skip(split) {
                link.stage(cmd(i as u32), job(i, start.max(cut), work));
            }
            let foreseen = link.next_departure();
            let before = out.len();
            link.run_to(Nanos::MAX / 2, &mut out);
            proptest::prop_assert_eq!(foreseen, out.get(before).map(|d| d.done));
            proptest::prop_assert_eq!(out.len(), jobs.len());
        }
    }

    #[test]
    fn one_transfer_alone_takes_its_own_time() {
        assert_eq!(run(&[(100, 1707)]), vec![(0, 1807)]);
    }

    #[test]
    fn equal_transfers_started_together_share_and_end_together() {
        // Two 10 µs transfers at once: each moves at half speed, both end at 20 µs.
        assert_eq!(
            run(&[(0, 10_000), (0, 10_000)]),
            vec![(0, 20_000), (1, 20_000)]
        );
    }

    #[test]
    fn a_small_transfer_among_large_ones_waits_n_times_its_own_not_their_sum() {
        // Eight 13.6 µs transfers in progress; a 1.7 µs one joins at 1 µs: it moves at
        // 1/9 of the bandwidth, so it ends after 9 × 1.7 µs, where FIFO would make it
        // wait for the eight (≈ 108 µs).
        let mut jobs = vec![(0, 13_600); 8];
        jobs.push((1_000, 1_700));
        let out = run(&jobs);
        assert_eq!(out[0], (8, 1_000 + 9 * 1_700));
        // The large ones lose exactly the small one's work: all end at 8 × 13.6 + 1.7 µs.
        for &(_, done) in &out[1..] {
            assert_eq!(done, 8 * 13_600 + 1_700);
        }
    }

    #[test]
    fn the_link_never_moves_more_than_its_bandwidth() {
        // Work conserving: however the transfers overlap, the last ends when the total
        // work has moved since the link last went idle.
        let jobs = [
            (0, 5_000),
            (1_000, 3_000),
            (2_500, 7_000),
            (2_500, 1),
            (20_000, 4_000),
        ];
        let out = run(&jobs);
        let end_busy = out.iter().filter(|d| d.0 < 4).map(|d| d.1).max().unwrap();
        assert_eq!(end_busy, 5_000 + 3_000 + 7_000 + 1);
        assert_eq!(out.last().unwrap(), &(4, 24_000));
    }
}
