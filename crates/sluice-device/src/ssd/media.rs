//! Booking a fetched command's service: the shared front end (command processing and
//! host transfer), then the media units (pieces placed by LBA or at the write pointer),
//! or the write buffer.

use super::link::Staged;
use super::{BufferWaiter, Command, FlushWaiter, FrontEnd, NvmeSsd, WritePlacement};
use sluice_core::{Nanos, Op};

impl NvmeSsd {
    /// Book the command on the front end and the media. Returns when its service ends,
    /// or `None` when it waits in the write buffer's queues (it is completed by a later
    /// destage event) or for its turn on the shared link (completed by a link event).
    pub(super) fn service(&mut self, now: Nanos, slot: u32, cmd: &Command) -> Option<Nanos> {
        let arrive = now + self.fetch_ns;
        if cmd.op == Op::Trim {
            return Some(self.deallocate(arrive, cmd));
        }
        let len = cmd.len as u64;
        let (cmd_ns, bus, link) = if cmd.op == Op::Write {
            (self.write_cmd_ns, self.write_bus, self.write_link)
        } else {
            (self.read_cmd_ns, self.bus, self.link)
        };
        if self.sharing.is_some() {
            return self.service_shared(arrive, slot, cmd, cmd_ns, bus.ns(len));
        }
        let mut svc = self.front_end.combine(cmd_ns, bus.ns(len), link.ns(len));
        if cmd.op == Op::Write {
            // A write's data is pulled from host memory by the controller (non-posted
            // PCIe reads, whose round trips vary); a read's is pushed (posted writes).
            // So a write's front-end time varies with the write body, a read's does not.
            if let Some(s) = &mut self.service {
                svc = s.draw_transfer(svc);
            }
        }
        let fs = if self.batch_ns == 0 {
            arrive.max(self.front_free)
        } else {
            self.batch_start(arrive, cmd.op == Op::Write)
        };
        let fe = fs + svc;
        // Where the data transfer starts: with the command (`max`: they overlap), or
        // after it (`additive`); a multi-piece command's pieces reach their units as
        // the transfer progresses.
        let xs = match self.front_end {
            FrontEnd::Max => fs,
            FrontEnd::Additive | FrontEnd::AdditiveCapped => (fs + cmd_ns).min(fe),
        };
        self.front_free = fe;
        self.stats.front_busy_ns += svc;
        self.after_front(slot, cmd, xs, fe)
    }

    /// A command the controller answers itself (a zoned command refused, a read of
    /// nothing written): its processing on the front end, in turn, and no media time.
    /// Returns when it is done.
    pub(super) fn answer_without_media(&mut self, now: Nanos, write: bool) -> Nanos {
        let svc = if write {
            self.write_cmd_ns
        } else {
            self.read_cmd_ns
        };
        self.front_only(now + self.fetch_ns, svc)
    }

    /// `svc` on the front end for a command arriving at `arrive`, nothing else.
    fn front_only(&mut self, arrive: Nanos, svc: Nanos) -> Nanos {
        let fs = match &mut self.sharing {
            Some(sh) => sh.process(arrive, svc).0,
            None => {
                let fs = arrive.max(self.front_free);
                self.front_free = fs + svc;
                fs
            }
        };
        self.stats.front_busy_ns += svc;
        fs + svc
    }

    /// A trim (NVMe Dataset Management, deallocate): the controller processes it as a
    /// write command without data (its range list is a few bytes), in turn on the
    /// front end; the FTL, if any, unmaps the range at once (no media time: a
    /// deallocate changes the map, the invalid pages are reclaimed by later GC).
    /// Returns when it is done. Out of line: no other command's path changes.
    #[cold]
    #[inline(never)]
    fn deallocate(&mut self, arrive: Nanos, cmd: &Command) -> Nanos {
        let done = self.front_only(arrive, self.write_cmd_ns);
        if let Some(f) = self.flash.as_mut() {
            f.ftl.trim(cmd.offset, cmd.len as u64);
        }
        done
    }

    /// `controller.batch_ns`: when a command arriving at `arrive` starts its own
    /// front-end time. A batch takes the commands that arrive until its `batch_ns`
    /// ends (the front end is woken, then collects what is waiting): one arriving
    /// before then joins it, after the commands already in it. Otherwise it begins a
    /// batch: at once on an idle front end, else when the front end's work ends; the
    /// batch pays `batch_ns` before its first command, varied as that command's
    /// media time is (`[service]`: the batch's trip to the backend is where this
    /// form's device spends its media time). Out of line: the path of a profile
    /// without batches stays as it was.
    #[cold]
    #[inline(never)]
    fn batch_start(&mut self, arrive: Nanos, write: bool) -> Nanos {
        match self.batch_open {
            Some(closes) if arrive < closes => self.front_free.max(arrive),
            _ => {
                let b = self.vary(self.batch_ns, write);
                let start = arrive.max(self.front_free) + b;
                self.batch_open = Some(start);
                self.stats.front_busy_ns += b;
                start
            }
        }
    }

    /// [`NvmeSsd::service`] with `controller.transfer = "shared"`: the command is
    /// processed in fetch order; a write's transfer (`xfer` ns alone) joins the shared
    /// link with its processing (`max`) or after it (`additive`; `additive_capped` is
    /// refused with sharing) and its media follow when it has moved; a read goes to
    /// the media (or the write buffer) when processed, and its data joins the link when
    /// read — the order of a real read, which the FIFO front end folds into one stage
    /// ahead of the media. A command without data is done with its processing.
    fn service_shared(
        &mut self,
        arrive: Nanos,
        slot: u32,
        cmd: &Command,
        cmd_ns: Nanos,
        mut xfer: Nanos,
    ) -> Option<Nanos> {
        if cmd.op == Op::Write {
            // As on the FIFO front end (see `service`), a write's transfer varies.
            if let Some(s) = &mut self.service {
                xfer = s.draw_transfer(xfer);
            }
        }
        let (cs, ce) = self
            .sharing
            .as_mut()
            .expect("shared")
            .process(arrive, cmd_ns);
        self.stats.front_busy_ns += self.front_end.combine(cmd_ns, xfer, 0);
        if xfer == 0 {
            return self.after_front(slot, cmd, ce, ce);
        }
        if cmd.op == Op::Read {
            let len = cmd.len as u64;
            // The host transfer streams the data as it leaves the array (cut-through):
            // it starts when the first piece's array read ends, and the command is done
            // when both it and the last piece's unit transfer are.
            let (first, end) = if self.read_from_buffer(cmd.offset, len) {
                let ack = self.buffer.as_ref().expect("flash needs a buffer").ack_ns;
                (ce, ce + ack)
            } else {
                self.media_read(ce, cmd.offset, len)
            };
            self.link_stage(
                *cmd,
                Staged {
                    slot,
                    start: first,
                    cmd_end: end,
                    work: xfer,
                    then_media: false,
                },
            );
            return None;
        }
        let xs = match self.front_end {
            FrontEnd::Max => cs,
            FrontEnd::Additive | FrontEnd::AdditiveCapped => ce,
        };
        self.link_stage(
            *cmd,
            Staged {
                slot,
                start: xs,
                cmd_end: ce,
                work: xfer,
                then_media: true,
            },
        );
        None
    }

    /// The command's service after the front end, which moved its data from `xs` to
    /// `fe`: the media (or the write buffer). Returns when it ends, or `None` when it
    /// waits in the write buffer's queues.
    pub(super) fn after_front(
        &mut self,
        slot: u32,
        cmd: &Command,
        xs: Nanos,
        fe: Nanos,
    ) -> Option<Nanos> {
        let len = cmd.len as u64;
        match cmd.op {
            Op::Read if self.read_from_buffer(cmd.offset, len) => {
                let ack = self.buffer.as_ref().expect("flash needs a buffer").ack_ns;
                Some(fe + ack)
            }
            Op::Read => Some(self.media(xs, fe, cmd.offset, len, false).0),
            // A FUA write goes through to the media (write-through), as a device with a
            // volatile cache serves it.
            Op::Write if self.buffer.is_none() || cmd.fua => {
                Some(self.media(xs, fe, cmd.offset, len, true).0)
            }
            Op::Write => {
                let b = self.buffer.as_mut().expect("buffer");
                if b.waiters.is_empty() && (b.used + len <= b.capacity || b.used == 0) {
                    Some(self.admit(fe, cmd.offset, cmd.len, cmd.placement))
                } else {
                    b.waiters.push_back(BufferWaiter {
                        slot,
                        ready: fe,
                        offset: cmd.offset,
                        len: cmd.len,
                        placement: cmd.placement,
                    });
                    None
                }
            }
            Op::Flush => match self.buffer.as_mut() {
                Some(b) if b.destaged_bytes < b.admitted_bytes => {
                    b.flushes.push_back(FlushWaiter {
                        slot,
                        ready: fe,
                        target: b.admitted_bytes,
                    });
                    None
                }
                _ => Some(fe),
            },
            // Served in `service` (`deallocate`), never here.
            Op::Trim => Some(fe),
        }
    }

    /// When unit `u` lets reads start again after its last write
    /// (`media.read_block_after_write_ns`; only called when it is on). Out of line:
    /// the path of a profile without it stays as it was (the simulator's speed).
    #[cold]
    #[inline(never)]
    pub(super) fn read_block(&self, u: usize) -> Nanos {
        self.read_blocked_until[u]
    }

    /// Writes on units `units` end at `end`: reads there wait until `end` plus
    /// `media.read_block_after_write_ns` (the array still programs; see that field).
    /// Only called when it is on.
    #[cold]
    #[inline(never)]
    pub(super) fn block_reads(&mut self, units: std::ops::Range<usize>, end: Nanos) {
        let until = end + self.read_block_ns;
        for b in &mut self.read_blocked_until[units] {
            *b = until;
        }
    }

    /// The stripe that holds byte `pos` (a shift for the usual power-of-two stripe).
    #[inline]
    fn stripe_of(&self, pos: u64) -> u64 {
        match self.stripe_shift {
            Some(k) => pos >> k,
            None => pos / self.stripe,
        }
    }

    /// The next piece of a command: its unit and length. Pieces are cut at stripe
    /// boundaries and placed by LBA, or, with `round_robin`, given whole stripes on
    /// successive units from the write pointer (which moves by a whole group of
    /// `write_units`; only writes are placed round robin). Writes use the first
    /// `write_parallel` units, reads the first `read_parallel` (all by default).
    #[inline]
    pub(super) fn next_piece(
        &mut self,
        pos: &mut u64,
        left: &mut u64,
        round_robin: bool,
        write: bool,
    ) -> (u32, u64) {
        let stripe = self.stripe;
        let units = if write {
            self.write_parallel
        } else {
            self.read_parallel
        };
        let (unit, bytes) = if round_robin {
            let u = self.write_ptr;
            let next = u + self.write_units;
            self.write_ptr = if next >= units { 0 } else { next };
            (u, (*left).min(stripe))
        } else {
            let s = self.stripe_of(*pos);
            let room = (s + 1) * stripe - *pos;
            ((s % units as u64) as u32, (*left).min(room))
        };
        *pos += bytes;
        *left -= bytes;
        (unit, bytes)
    }

    /// Book a read or unbuffered write on the units, FIFO per unit. Piece `i` of `n`
    /// arrives at `fs + (fe - fs)(i + 1)/n`, `fs` being when the front end's transfer
    /// starts (the front-end transfer is pipelined with the media). A write piece holds
    /// the whole aligned group of `write_units` units around its unit, from when all of
    /// them are free. Returns when the last piece ends, and when the first piece's
    /// array operation ends (its data starts to leave the unit).
    fn media(
        &mut self,
        fs: Nanos,
        fe: Nanos,
        offset: u64,
        len: u64,
        write: bool,
    ) -> (Nanos, Nanos) {
        let stripe = self.stripe;
        let round_robin = write && self.placement == WritePlacement::RoundRobin;
        let n = if len == 0 {
            1
        } else if round_robin {
            len.div_ceil(stripe)
        } else {
            self.stripe_of(offset + len - 1) - self.stripe_of(offset) + 1
        };
        let fixed = if write { self.write_ns } else { self.read_ns };
        let mut pos = offset;
        let mut left = len;
        let mut end = 0;
        let mut first = Nanos::MAX;
        for i in 0..n {
            let piece = pos;
            let (mut unit, bytes) = self.next_piece(&mut pos, &mut left, round_robin, write);
            if !write {
                if let Some(d) = self.flash.as_ref().and_then(|f| f.ftl.die_of(piece)) {
                    unit = d;
                }
            }
            if self.pool {
                unit = self.first_free(write);
            }
            let arrival = if n == 1 {
                fe
            } else {
                fs + (fe - fs) * (i + 1) / n
            };
            let mut array = self.vary(fixed, write);
            let load = if write {
                &self.write_load
            } else {
                &self.read_load
            };
            if !load.is_empty() {
                // `media.*_load_exponent`: the media time grows as n^β with the
                // commands in the device.
                let n = (self.inflight as usize).min(load.len() - 1);
                array = (array as f64 * load[n]).round() as Nanos;
            }
            let xfer = if write {
                self.write_unit_xfer.ns(bytes)
            } else {
                self.unit_xfer.ns(bytes)
            };
            if !write && self.flash.as_ref().is_some_and(|f| f.channels > 0) {
                // Array read on the die, then the data out over the shared channel.
                let u = unit as usize;
                let mut start = arrival.max(self.unit_free[u]);
                if self.read_block_ns != 0 {
                    start = start.max(self.read_block(u));
                }
                let start = self.stall_start(start, false);
                let (_, e) = self.channel(unit, fs, start + array, xfer);
                first = first.min(start + array);
                self.unit_free[u] = e;
                self.stats.unit_busy_ns[u] += e - start;
                end = end.max(e);
                continue;
            }
            let cost = array + xfer;
            let span = if write { self.write_units as usize } else { 1 };
            let g0 = unit as usize / span * span;
            let group = g0..g0 + span;
            let mut free = self.unit_free[group.clone()]
                .iter()
                .copied()
                .max()
                .unwrap_or(0);
            if !write && self.read_block_ns != 0 {
                free = free.max(self.read_block(g0));
            }
            // `[service] stall_*`: a stall in force holds the piece's start.
            let start = self.stall_start(arrival.max(free), write);
            let e = start + cost;
            first = first.min(start + array);
            if write && self.read_block_ns != 0 {
                self.block_reads(group.clone(), e);
            }
            for u in group {
                self.unit_free[u] = e;
                self.stats.unit_busy_ns[u] += cost;
            }
            end = end.max(e);
        }
        (end, first)
    }

    /// `media.pool`: the unit of the direction's units (the first `write_parallel` or
    /// `read_parallel`) that is free first — for a read, counting the time a write
    /// keeps it from reading (`read_block_after_write_ns`); the lowest on a tie.
    fn first_free(&self, write: bool) -> u32 {
        let n = if write {
            self.write_parallel
        } else {
            self.read_parallel
        };
        let free = |u: usize| match write || self.read_block_ns == 0 {
            true => self.unit_free[u],
            false => self.unit_free[u].max(self.read_block(u)),
        };
        // `min_by_key` keeps the first of equal keys.
        (0..n as usize).min_by_key(|&u| free(u)).unwrap_or(0) as u32
    }

    /// A read's media on the shared link's path: every piece reaches its unit at `at`
    /// (the command is processed; no front-end transfer comes first). Returns when the
    /// first piece's data starts to leave its unit and when the last piece ends.
    fn media_read(&mut self, at: Nanos, offset: u64, len: u64) -> (Nanos, Nanos) {
        let (end, first) = self.media(at, at, offset, len, false);
        (first, end)
    }
}
