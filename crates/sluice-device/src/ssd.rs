//! The simulated NVMe SSD: queue pairs, arbitration, front end, media units and
//! write buffer. See the crate docs for the model.

use crate::arbiter::Arbiter;
use crate::faults::{Fault, FaultConfig, Faults};
use crate::ftl::FlashStats;
use crate::profile::{Arbitration, DeviceProfile, FrontEnd, ProfileError, WritePlacement};
use crate::service::Service;
use sluice_core::{Nanos, Op, QueueClass};
use std::collections::VecDeque;

mod buffer;
mod events;
mod flash;
mod interface;
mod link;
mod media;
mod state;

use events::EventList;
pub use interface::{Command, DeviceCompletion, DeviceStats, SubmitError};
use state::{
    BufferState, BufferWaiter, Event, FlashState, FlushWaiter, Pending, PerByte, Slot, LINK_EVENT,
    PROGRAM,
};

/// The simulated NVMe SSD. Passive and deterministic: it is given the time by its
/// caller, holds no clock or thread, draws its seeded faults (if any) from its own
/// stream, and identical call sequences give identical results.
///
/// The caller must [`advance`](NvmeSsd::advance) to `now_ns` before submitting at
/// `now_ns`, and must never go back in time.
#[derive(Debug)]
pub struct NvmeSsd {
    profile: DeviceProfile,
    cores: u16,
    queues: u16,
    sq_depth: u32,
    sqs: Vec<VecDeque<Pending>>,
    arbiter: Arbiter,
    slots: Vec<Slot>,
    free_slots: Vec<u32>,
    events: EventList,
    seq: u64,
    inflight: u32,
    // Front end and media state.
    fetch_ns: Nanos,
    complete_ns: Nanos,
    read_cmd_ns: Nanos,
    write_cmd_ns: Nanos,
    /// `controller.front_end`: how command processing and transfer combine.
    front_end: FrontEnd,
    bus: PerByte,
    unit_xfer: PerByte,
    /// Writes' front-end transfer and unit transfer (the read figures unless the
    /// profile gives write ones).
    write_bus: PerByte,
    write_unit_xfer: PerByte,
    /// `media.link_bandwidth_bytes` and its write figure (`additive_capped` only).
    link: PerByte,
    write_link: PerByte,
    read_ns: Nanos,
    write_ns: Nanos,
    stripe: u64,
    /// log2 of `stripe` when it is a power of two.
    stripe_shift: Option<u32>,
    /// Units that serve writes and reads (the first `write_parallel_units` /
    /// `read_parallel_units`; all by default).
    write_parallel: u32,
    read_parallel: u32,
    /// Units one unbuffered write piece occupies (an aligned group; 1 = one unit).
    write_units: u32,
    placement: WritePlacement,
    /// `media.pool`: a piece goes to the unit free first, not by LBA.
    pool: bool,
    /// `media.read_load_exponent` / `write_load_exponent` as tables: entry `n` is
    /// `n^β` (empty: off). Indexed by the commands in the device, capped at the table's
    /// end (`max_outstanding` plus what the submission queues may hold is not
    /// tabulated: beyond the controller's slots the factor stays at its last value).
    read_load: Vec<f64>,
    write_load: Vec<f64>,
    front_free: Nanos,
    /// `controller.batch_ns` (0: off), and when the last batch begun stops taking
    /// commands (the end of its `batch_ns`; see `batch_start`).
    batch_ns: Nanos,
    batch_open: Option<Nanos>,
    /// `controller.transfer = "shared"`: the processing stage and the shared link
    /// (`None`: one FIFO front end, `front_free`).
    sharing: Option<link::Link>,
    /// Scratch for the transfers a link event ends.
    sharing_ended: Vec<link::Departed>,
    unit_free: Vec<Nanos>,
    /// `media.read_block_after_write_ns` (0: off), and per unit the time before which
    /// no read starts there (the end of its last write plus that; empty when off).
    read_block_ns: Nanos,
    read_blocked_until: Vec<Nanos>,
    write_ptr: u32,
    buffer: Option<BufferState>,
    faults: Option<Faults>,
    /// Per-operation media-time variation (`None`: the profile has none).
    service: Option<Service>,
    /// Flash management (`None`: the profile has no `[flash]`).
    flash: Option<FlashState>,
    /// The zoned namespace's zones (`None`: a conventional namespace).
    zones: Option<crate::zns::Zones>,
    stats: DeviceStats,
}

/// `n^β` for `n` in `0..=max_out` (entry 0 unused), or empty without an exponent.
fn load_table(exponent: Option<f64>, max_out: u32) -> Vec<f64> {
    match exponent {
        Some(b) => (0..=max_out).map(|n| (n.max(1) as f64).powf(b)).collect(),
        None => Vec::new(),
    }
}

const OP_READ: u8 = 0;
const OP_WRITE: u8 = 1;
const OP_FLUSH: u8 = 2;
const OP_TRIM: u8 = 3;

impl NvmeSsd {
    /// A device with one submission/completion queue pair per (core, [`QueueClass`]):
    /// `qid = core * 4 + class.index()`.
    ///
    /// # Panics
    /// If `cores` is 0 or above 16383 (qids are `u16`), or the profile is invalid.
    pub fn new(profile: &DeviceProfile, cores: u16) -> NvmeSsd {
        assert!(
            (1..=16383).contains(&cores),
            "cores must be 1..=16383, got {cores}"
        );
        if let Err(e) = profile.validate() {
            panic!("{e}");
        }
        let c = &profile.controller;
        let m = &profile.media;
        let queues = cores * 4;
        let max_out = c.max_outstanding;
        let buffer = profile.write_buffer.as_ref().map(|w| BufferState {
            capacity: w.capacity_bytes,
            used: 0,
            ack_ns: w.ack_ns,
            program: PerByte::new(m.write_ns, w.program_bytes as u64),
            waiters: VecDeque::with_capacity(max_out as usize),
            flushes: VecDeque::new(),
            admitted_bytes: 0,
            destaged_bytes: 0,
            pending: (0..m.units).map(|_| VecDeque::new()).collect(),
            programming: vec![false; m.units as usize],
        });
        NvmeSsd {
            profile: profile.clone(),
            cores,
            queues,
            sq_depth: c.sq_depth,
            sqs: (0..queues).map(|_| VecDeque::new()).collect(),
            arbiter: Arbiter::new(&profile.arbitration, cores),
            slots: vec![Slot::default(); max_out as usize],
            free_slots: (0..max_out).rev().collect(),
            events: EventList::with_capacity(max_out as usize + m.units as usize),
            seq: 0,
            inflight: 0,
            fetch_ns: c.fetch_ns,
            complete_ns: c.complete_ns,
            read_cmd_ns: c.read_cmd_ns,
            write_cmd_ns: c.write_cmd_ns,
            front_end: c.front_end,
            bus: PerByte::from_bandwidth(m.bus_bandwidth_bytes),
            unit_xfer: PerByte::from_bandwidth(m.unit_bandwidth_bytes),
            write_bus: PerByte::from_bandwidth(
                m.write_bus_bandwidth_bytes.unwrap_or(m.bus_bandwidth_bytes),
            ),
            // Only `additive_capped` reads the links (validated present there).
            link: PerByte::from_bandwidth(m.link_bandwidth_bytes.unwrap_or(m.bus_bandwidth_bytes)),
            write_link: PerByte::from_bandwidth(
                m.write_link_bandwidth_bytes
                    .or(m.link_bandwidth_bytes)
                    .unwrap_or(m.bus_bandwidth_bytes),
            ),
            write_unit_xfer: PerByte::from_bandwidth(
                m.write_unit_bandwidth_bytes
                    .unwrap_or(m.unit_bandwidth_bytes),
            ),
            write_parallel: m.write_parallel_units.unwrap_or(m.units),
            read_parallel: m.read_parallel_units.unwrap_or(m.units),
            read_ns: m.read_ns,
            write_ns: m.write_ns,
            stripe: m.stripe_bytes as u64,
            stripe_shift: (m.stripe_bytes as u64)
                .is_power_of_two()
                .then(|| m.stripe_bytes.trailing_zeros()),
            write_units: m.write_units,
            placement: m.write_placement,
            pool: m.pool,
            read_load: load_table(m.read_load_exponent, max_out),
            write_load: load_table(m.write_load_exponent, max_out),
            front_free: 0,
            batch_ns: c.batch_ns.unwrap_or(0),
            batch_open: None,
            sharing: (c.transfer == crate::profile::Transfer::Shared)
                .then(|| link::Link::new(max_out)),
            sharing_ended: Vec::new(),
            unit_free: vec![0; m.units as usize],
            read_block_ns: m.read_block_after_write_ns.unwrap_or(0),
            read_blocked_until: match m.read_block_after_write_ns {
                Some(b) if b > 0 => vec![0; m.units as usize],
                _ => Vec::new(),
            },
            write_ptr: 0,
            buffer,
            faults: None,
            service: Service::new(profile.service.as_ref(), 0),
            flash: FlashState::new(profile),
            zones: profile.zoned.as_ref().map(crate::zns::Zones::new),
            stats: DeviceStats {
                unit_busy_ns: vec![0; m.units as usize],
                ..DeviceStats::default()
            },
        }
    }

    /// The qid of `core`'s queue pair of `class`.
    #[inline]
    pub fn queue_id(&self, core: u16, class: QueueClass) -> u16 {
        debug_assert!(core < self.cores);
        crate::arbiter::sq_id(core, class)
    }

    /// Number of cores (queue-pair groups) the device was built with.
    pub fn cores(&self) -> u16 {
        self.cores
    }

    /// Ring the doorbell of `qid` with `cmd` at `now_ns`. The controller fetches it at
    /// once if it has a free internal slot; otherwise it waits in the submission queue
    /// until arbitration picks it.
    #[inline]
    pub fn submit(&mut self, now_ns: Nanos, qid: u16, cmd: Command) -> Result<(), SubmitError> {
        if qid >= self.queues {
            return Err(SubmitError::BadQueue);
        }
        let q = qid as usize;
        if self.sqs[q].len() as u32 >= self.sq_depth {
            return Err(SubmitError::QueueFull);
        }
        self.account(now_ns);
        self.inflight += 1;
        self.stats.submitted += 1;
        let p = Pending {
            cmd,
            submit_ns: now_ns,
        };
        if self.free_slots.is_empty() {
            // Invariant: a free slot implies every SQ is empty, so queueing is needed
            // only when the controller is full.
            let sq = &mut self.sqs[q];
            sq.push_back(p);
            if sq.len() == 1 {
                self.arbiter.mark_nonempty(qid);
            }
        } else {
            self.fetch(now_ns, qid, p);
        }
        Ok(())
    }

    /// The time of the earliest internal event (a completion, the end of a destage
    /// program, which may admit waiting writes, or a change on the shared link), if
    /// any. An event need not complete a command: drive the device until the
    /// completions wanted have come.
    #[inline]
    pub fn next_event_ns(&self) -> Option<Nanos> {
        self.events.peek().map(|e| e.time)
    }

    /// Process every internal event with time ≤ `now_ns` in (time, creation order)
    /// order, pushing completions to `out` in completion order. Each completion frees a
    /// controller slot, which is refilled at once by arbitration from the submission
    /// queues.
    pub fn advance(&mut self, now_ns: Nanos, out: &mut Vec<DeviceCompletion>) {
        while let Some(&ev) = self.events.peek() {
            if ev.time > now_ns {
                break;
            }
            self.events.pop();
            if ev.id & PROGRAM != 0 {
                self.program_end(ev.time, ev.id & !PROGRAM, ev.bytes);
                continue;
            }
            if ev.id == LINK_EVENT {
                self.link_event(ev.time);
                continue;
            }
            self.account(ev.time);
            self.inflight -= 1;
            let s = self.slots[ev.id as usize];
            let st = &mut self.stats;
            st.completed += 1;
            match (s.fault, s.op) {
                (Fault::Media, _) => st.media_errors += 1,
                (Fault::Timeout, _) => st.timeouts += 1,
                (Fault::Zone, _) => {}
                (Fault::None, OP_READ) => {
                    st.completed_reads += 1;
                    st.bytes_read += s.len as u64;
                }
                (Fault::None, OP_WRITE) => {
                    st.completed_writes += 1;
                    st.bytes_written += s.len as u64;
                }
                (Fault::None, OP_TRIM) => {
                    st.completed_trims += 1;
                    st.bytes_trimmed += s.len as u64;
                }
                (Fault::None, _) => st.completed_flushes += 1,
            }
            out.push(DeviceCompletion {
                tag: s.tag,
                qid: s.qid,
                submit_ns: s.submit_ns,
                fetch_ns: s.fetch_ns,
                complete_ns: ev.time,
                ok: s.fault == Fault::None,
            });
            self.free_slots.push(ev.id);
            if let Some(qid) = self.arbiter.pick() {
                let sq = &mut self.sqs[qid as usize];
                let p = sq.pop_front().expect("arbiter picked an empty SQ");
                if sq.is_empty() {
                    self.arbiter.mark_empty(qid);
                }
                self.fetch(ev.time, qid, p);
            }
        }
        self.account(now_ns);
    }

    /// Commands submitted and not yet completed (queued in SQs or held by the controller).
    #[inline]
    pub fn inflight(&self) -> u32 {
        self.inflight
    }

    /// Commands held by the controller (fetched, not completed).
    #[inline]
    pub fn outstanding(&self) -> u32 {
        self.slots.len() as u32 - self.free_slots.len() as u32
    }

    /// Free entries in submission queue `qid` (0 for a bad qid).
    #[inline]
    pub fn sq_free(&self, qid: u16) -> u32 {
        match self.sqs.get(qid as usize) {
            Some(sq) => self.sq_depth - sq.len() as u32,
            None => 0,
        }
    }

    /// Whether any submission queue holds commands the controller has not fetched.
    pub fn has_backlog(&self) -> bool {
        self.arbiter.any()
    }

    /// The device's counters.
    #[inline]
    pub fn stats(&self) -> &DeviceStats {
        &self.stats
    }

    /// Change the arbitration at run time, as the NVMe Set Features "Arbitration"
    /// command does (D2FQ retunes its WRR weights this way). Commands already fetched
    /// are unaffected; later fetches follow the new settings. With the same kind the
    /// weighted round in progress continues (credits capped by the new weights).
    /// [`NvmeSsd::profile`] reports the new arbitration afterwards.
    pub fn set_arbitration(&mut self, arbitration: Arbitration) -> Result<(), ProfileError> {
        arbitration.validate("set_arbitration")?;
        let same_kind = arbitration.kind == self.profile.arbitration.kind;
        self.profile.arbitration = arbitration;
        self.arbiter.reconfigure(&arbitration, self.cores);
        if !same_kind {
            for qid in 0..self.queues {
                if !self.sqs[qid as usize].is_empty() {
                    self.arbiter.mark_nonempty(qid);
                }
            }
        }
        Ok(())
    }

    /// Inject seeded command faults from now on (see [`crate::faults`]); `seed` is used
    /// unless the configuration names its own. A configuration with no fault turns
    /// them off.
    pub fn set_faults(&mut self, cfg: FaultConfig, seed: u64) {
        self.faults = cfg.is_active().then(|| Faults::new(cfg, seed));
    }

    /// Seed the device's own random streams (the media-time variation of the profile's
    /// `[service]` section) with the run's seed; a device not seeded uses seed 0. Call
    /// before the first command: the same seed and call sequence give the same times.
    pub fn set_seed(&mut self, seed: u64) {
        if let Some(s) = &mut self.service {
            s.reseed(seed);
        }
    }

    /// The faults in force, if any.
    pub fn faults(&self) -> Option<&FaultConfig> {
        self.faults.as_ref().map(|f| f.config())
    }

    /// The profile the device was built from (with any later [`NvmeSsd::set_arbitration`]).
    pub fn profile(&self) -> &DeviceProfile {
        &self.profile
    }

    #[inline]
    fn account(&mut self, t: Nanos) {
        let st = &mut self.stats;
        if t > st.area_until_ns {
            st.inflight_area += self.inflight as u128 * (t - st.area_until_ns) as u128;
            st.area_until_ns = t;
        }
    }

    /// Flash-management counters (write amplification, GC), for a profile with
    /// `[flash]`.
    pub fn flash_stats(&self) -> Option<FlashStats> {
        self.flash.as_ref().map(|f| f.ftl.stats)
    }

    /// A media operation's time: its nominal cost, varied per the profile's `[service]`.
    #[inline]
    fn vary(&mut self, nominal_ns: Nanos, write: bool) -> Nanos {
        match &mut self.service {
            Some(s) => s.draw(nominal_ns, write),
            None => nominal_ns,
        }
    }

    /// When a media operation that could start at `start` does, through the profile's
    /// stalls (`[service] stall_*`; none: `start`).
    #[inline]
    fn stall_start(&mut self, start: Nanos, write: bool) -> Nanos {
        match &mut self.service {
            Some(s) => s.stall_start(start, write),
            None => start,
        }
    }

    #[inline]
    fn push_event(&mut self, time: Nanos, id: u32, bytes: u32) {
        self.seq += 1;
        self.events.push(Event {
            time,
            seq: self.seq,
            id,
            bytes,
        });
    }

    /// Take `p` from `qid` into a controller slot at `now` and book its service.
    #[inline]
    fn fetch(&mut self, now: Nanos, qid: u16, p: Pending) {
        let slot = self.free_slots.pop().expect("fetch without a free slot");
        self.stats.fetched_per_class[(qid & 3) as usize] += 1;
        let op = match p.cmd.op {
            Op::Read => OP_READ,
            Op::Write => OP_WRITE,
            Op::Flush => OP_FLUSH,
            Op::Trim => OP_TRIM,
        };
        let mut fault = match &mut self.faults {
            None => Fault::None,
            Some(f) => f.draw(),
        };
        let mut unwritten = false;
        if let Some(z) = self.zones.as_mut() {
            // The zone checks happen in fetch order: the controller takes a zone's
            // writes in the order it fetches them (the host keeps one in flight per
            // zone, so that is the order it wrote them in).
            let c = &p.cmd;
            let refused = match c.op {
                Op::Write => z.write(c.offset, c.len as u64).is_err(),
                Op::Trim => z.reset(c.offset, c.len as u64).is_err(),
                Op::Read => {
                    unwritten = z.unwritten(c.offset, c.len as u64);
                    false
                }
                Op::Flush => false,
            };
            if refused {
                fault = Fault::Zone;
            }
        }
        self.slots[slot as usize] = Slot {
            tag: p.cmd.tag,
            qid,
            op,
            fault,
            len: p.cmd.len,
            submit_ns: p.submit_ns,
            fetch_ns: now,
        };
        if fault == Fault::Timeout {
            // The command hangs in its controller slot (no media time) until the host's
            // timeout aborts it.
            let timeout = self.faults.as_ref().expect("drawn").config().timeout_ns;
            self.push_event(now.max(p.submit_ns + timeout), slot, 0);
            return;
        }
        if fault == Fault::Zone || unwritten {
            // Refused, or a read of nothing written: the controller answers after
            // processing the command, without media time.
            let done = self.answer_without_media(now, op == OP_WRITE);
            self.push_event(done + self.complete_ns, slot, 0);
            return;
        }
        if let Some(done) = self.service(now, slot, &p.cmd) {
            self.push_event(done + self.complete_ns, slot, 0);
        }
    }

    /// The zoned namespace (`None` for a conventional one).
    pub fn zones(&self) -> Option<&crate::zns::Zones> {
        self.zones.as_ref()
    }
}
