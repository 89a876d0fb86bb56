//! The simulated NVMe SSD: queue pairs, arbitration, front end, media units and
//! write buffer. See the crate docs for the model.

use crate::arbiter::Arbiter;
use crate::faults::{Fault, FaultConfig, Faults};
use crate::ftl::{FlashStats, Ftl};
use crate::profile::{Arbitration, DeviceProfile, ProfileError, WritePlacement};
use crate::service::Service;
use sluice_core::{Nanos, Op, QueueClass};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

mod buffer;
mod flash;

/// One NVMe command as the host submits it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Command {
    /// Host-chosen identifier returned in the completion (the NVMe command id).
    pub tag: u32,
    /// Read, write or flush.
    pub op: Op,
    /// Byte offset on the device.
    pub offset: u64,
    /// Length in bytes (0 for a flush).
    pub len: u32,
    /// Force unit access: a write bypasses the volatile write buffer and completes when
    /// its data is on the media (ignored for reads and flushes).
    pub fua: bool,
}

/// A completed command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceCompletion {
    /// The command's tag.
    pub tag: u32,
    /// The submission queue it was submitted to.
    pub qid: u16,
    /// When it was submitted (doorbell rung).
    pub submit_ns: Nanos,
    /// When the controller fetched it from its submission queue.
    pub fetch_ns: Nanos,
    /// When its completion became visible to the host.
    pub complete_ns: Nanos,
    /// Whether it succeeded (false: a seeded media error or timeout, see
    /// [`NvmeSsd::set_faults`]).
    pub ok: bool,
}

/// Why [`NvmeSsd::submit`] refused a command.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SubmitError {
    /// The submission queue has no free entry; complete some commands first.
    #[error("submission queue full")]
    QueueFull,
    /// No such submission queue (qid ≥ cores × 4).
    #[error("no such submission queue")]
    BadQueue,
}

/// Counters kept by the device. Times are simulated nanoseconds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeviceStats {
    /// Commands accepted by [`NvmeSsd::submit`].
    pub submitted: u64,
    /// Commands fetched by the controller, per queue class index (urgent, high,
    /// medium, low). With round robin the class is that of the queue fetched from.
    pub fetched_per_class: [u64; 4],
    /// Commands completed (successfully or not).
    pub completed: u64,
    /// Commands that completed with a (seeded) media error.
    pub media_errors: u64,
    /// Commands that hung until the host's timeout aborted them.
    pub timeouts: u64,
    /// Reads completed.
    pub completed_reads: u64,
    /// Writes completed.
    pub completed_writes: u64,
    /// Flushes completed.
    pub completed_flushes: u64,
    /// Bytes of completed reads.
    pub bytes_read: u64,
    /// Bytes of completed writes.
    pub bytes_written: u64,
    /// Total service time booked on the shared front end (controller + host transfer).
    pub front_busy_ns: u64,
    /// Total service time booked on each media unit (reads, unbuffered writes and
    /// destage programs).
    pub unit_busy_ns: Vec<u64>,
    /// Writes that found the write buffer full (or other writes waiting) and queued for
    /// room.
    pub buffer_full_waits: u64,
    /// Total time writes waited for buffer room.
    pub buffer_wait_ns: u64,
    /// ∫ inflight dt over `[0, area_until_ns]`, in command·ns (inflight = submitted and
    /// not completed, as [`NvmeSsd::inflight`]). Divided by elapsed time it is the mean
    /// number of commands in the device.
    pub inflight_area: u128,
    /// The time up to which `inflight_area` is integrated (the latest submit, event or
    /// advance time).
    pub area_until_ns: Nanos,
}

impl DeviceStats {
    /// Mean inflight over `[0, area_until_ns]` (0 before any time has passed).
    pub fn mean_inflight(&self) -> f64 {
        if self.area_until_ns == 0 {
            0.0
        } else {
            self.inflight_area as f64 / self.area_until_ns as f64
        }
    }

    /// Busy fraction of media unit `unit` over `elapsed_ns` (booked service / elapsed).
    pub fn unit_utilization(&self, unit: usize, elapsed_ns: Nanos) -> f64 {
        if elapsed_ns == 0 {
            0.0
        } else {
            self.unit_busy_ns[unit] as f64 / elapsed_ns as f64
        }
    }
}

/// A command waiting in its submission queue.
#[derive(Clone, Copy, Debug)]
struct Pending {
    cmd: Command,
    submit_ns: Nanos,
}

/// A command held by the controller.
#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    tag: u32,
    qid: u16,
    op: u8,
    fault: Fault,
    len: u32,
    submit_ns: Nanos,
    fetch_ns: Nanos,
}

/// An internal event, ordered by time, then creation sequence: a command completion
/// (`id` = slot) or the end of a destage program (`id` = `PROGRAM | unit`, `bytes`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Event {
    time: Nanos,
    seq: u64,
    id: u32,
    bytes: u32,
}

const PROGRAM: u32 = 1 << 31;

/// Fixed-point "ns per byte" (×2³²) so transfer times cost one multiply.
#[derive(Clone, Copy, Debug)]
struct PerByte(u128);

impl PerByte {
    fn new(ns: u64, bytes: u64) -> PerByte {
        PerByte(((ns as u128) << 32) / bytes as u128)
    }
    fn from_bandwidth(bytes_per_s: u64) -> PerByte {
        PerByte::new(1_000_000_000, bytes_per_s)
    }
    #[inline]
    fn ns(self, bytes: u64) -> Nanos {
        ((bytes as u128 * self.0 + (1 << 31)) >> 32) as Nanos
    }
}

/// A buffered write waiting for buffer room.
#[derive(Clone, Copy, Debug)]
struct BufferWaiter {
    slot: u32,
    /// When its data reached the controller (end of the front end).
    ready: Nanos,
    offset: u64,
    len: u32,
}

/// A flush waiting for destaging.
#[derive(Clone, Copy, Debug)]
struct FlushWaiter {
    slot: u32,
    ready: Nanos,
    /// Done when `destaged_bytes` reaches this.
    target: u64,
}

/// Write-buffer state. Destage programs wait in per-unit queues and are started one at
/// a time per unit (event-driven), so reads arriving at a unit wait only for the
/// program in progress, not for the whole destage backlog.
#[derive(Clone, Debug)]
struct BufferState {
    capacity: u64,
    used: u64,
    ack_ns: Nanos,
    program: PerByte,
    /// Writes waiting for room, FIFO.
    waiters: VecDeque<BufferWaiter>,
    flushes: VecDeque<FlushWaiter>,
    admitted_bytes: u64,
    destaged_bytes: u64,
    /// Per unit: pieces (ready time, offset, bytes) waiting to be programmed.
    pending: Vec<VecDeque<(Nanos, u64, u32)>>,
    /// Per unit: a program is in progress (its end event is in the heap).
    programming: Vec<bool>,
}

/// Flash management state: the FTL and the channel buses.
#[derive(Clone, Debug)]
struct FlashState {
    ftl: Ftl,
    /// Channel buses shared by their dies (0: each die transfers on its own).
    channels: u32,
    /// Per channel: booked transfers (start, end), sorted and disjoint, pruned as time
    /// passes; a new transfer takes the first gap that fits (bounded by the commands
    /// and programs in flight).
    chan_busy: Vec<VecDeque<(Nanos, Nanos)>>,
    buffer_reads: bool,
    /// Per die: the piece (offset, bytes) its program in progress writes; it leaves the
    /// buffer when the program ends.
    programming: Vec<(u64, u32)>,
    map_bytes: u64,
    erase_ns: Nanos,
    /// Program time per byte of GC copies (the buffer's coalesced program rate).
    copy_program: PerByte,
}

impl FlashState {
    fn new(p: &DeviceProfile) -> Option<FlashState> {
        let c = p.flash.as_ref()?;
        let m = &p.media;
        let channels = match (&m.geometry, c.channel_bus) {
            (Some(g), true) => g.channels,
            _ => 0,
        };
        let program_bytes = p
            .write_buffer
            .as_ref()
            .map_or(m.stripe_bytes, |w| w.program_bytes);
        Some(FlashState {
            ftl: Ftl::new(c, m.units, (m.stripe_bytes / c.map_bytes).max(1)),
            channels,
            chan_busy: (0..channels).map(|_| VecDeque::new()).collect(),
            buffer_reads: c.buffer_reads,
            programming: vec![(0, 0); m.units as usize],
            map_bytes: c.map_bytes as u64,
            erase_ns: m.erase_ns.unwrap_or(0),
            copy_program: PerByte::new(m.write_ns, program_bytes as u64),
        })
    }
}

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
    events: BinaryHeap<Reverse<Event>>,
    seq: u64,
    inflight: u32,
    // Front end and media state.
    fetch_ns: Nanos,
    complete_ns: Nanos,
    read_cmd_ns: Nanos,
    write_cmd_ns: Nanos,
    bus: PerByte,
    unit_xfer: PerByte,
    /// Writes' front-end transfer and unit transfer (the read figures unless the
    /// profile gives write ones).
    write_bus: PerByte,
    write_unit_xfer: PerByte,
    read_ns: Nanos,
    write_ns: Nanos,
    stripe: u64,
    units: u32,
    /// Units that serve writes (the first `write_parallel_units`; all by default).
    write_parallel: u32,
    /// Units one unbuffered write piece occupies (an aligned group; 1 = one unit).
    write_units: u32,
    placement: WritePlacement,
    front_free: Nanos,
    unit_free: Vec<Nanos>,
    write_ptr: u32,
    buffer: Option<BufferState>,
    faults: Option<Faults>,
    /// Per-operation media-time variation (`None`: the profile has none).
    service: Option<Service>,
    /// Flash management (`None`: the profile has no `[flash]`).
    flash: Option<FlashState>,
    stats: DeviceStats,
}

const OP_READ: u8 = 0;
const OP_WRITE: u8 = 1;
const OP_FLUSH: u8 = 2;

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
            events: BinaryHeap::with_capacity(max_out as usize + m.units as usize),
            seq: 0,
            inflight: 0,
            fetch_ns: c.fetch_ns,
            complete_ns: c.complete_ns,
            read_cmd_ns: c.read_cmd_ns,
            write_cmd_ns: c.write_cmd_ns,
            bus: PerByte::from_bandwidth(m.bus_bandwidth_bytes),
            unit_xfer: PerByte::from_bandwidth(m.unit_bandwidth_bytes),
            write_bus: PerByte::from_bandwidth(
                m.write_bus_bandwidth_bytes.unwrap_or(m.bus_bandwidth_bytes),
            ),
            write_unit_xfer: PerByte::from_bandwidth(
                m.write_unit_bandwidth_bytes.unwrap_or(m.unit_bandwidth_bytes),
            ),
            write_parallel: m.write_parallel_units.unwrap_or(m.units),
            read_ns: m.read_ns,
            write_ns: m.write_ns,
            stripe: m.stripe_bytes as u64,
            units: m.units,
            write_units: m.write_units,
            placement: m.write_placement,
            front_free: 0,
            unit_free: vec![0; m.units as usize],
            write_ptr: 0,
            buffer,
            faults: None,
            service: Service::new(profile.service.as_ref(), 0),
            flash: FlashState::new(profile),
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
        core * 4 + class.index() as u16
    }

    /// Number of cores (queue-pair groups) the device was built with.
    pub fn cores(&self) -> u16 {
        self.cores
    }

    /// Ring the doorbell of `qid` with `cmd` at `now_ns`. The controller fetches it at
    /// once if it has a free internal slot; otherwise it waits in the submission queue
    /// until arbitration picks it.
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

    /// The time of the earliest internal event (a completion, or the end of a destage
    /// program, which may admit waiting writes), if any.
    #[inline]
    pub fn next_event_ns(&self) -> Option<Nanos> {
        self.events.peek().map(|Reverse(e)| e.time)
    }

    /// Process every internal event with time ≤ `now_ns` in (time, creation order)
    /// order, pushing completions to `out` in completion order. Each completion frees a
    /// controller slot, which is refilled at once by arbitration from the submission
    /// queues.
    pub fn advance(&mut self, now_ns: Nanos, out: &mut Vec<DeviceCompletion>) {
        while let Some(&Reverse(ev)) = self.events.peek() {
            if ev.time > now_ns {
                break;
            }
            self.events.pop();
            if ev.id & PROGRAM != 0 {
                self.program_end(ev.time, ev.id & !PROGRAM, ev.bytes);
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
                (Fault::None, OP_READ) => {
                    st.completed_reads += 1;
                    st.bytes_read += s.len as u64;
                }
                (Fault::None, OP_WRITE) => {
                    st.completed_writes += 1;
                    st.bytes_written += s.len as u64;
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
        self.service = Service::new(self.profile.service.as_ref(), seed);
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

    #[inline]
    fn push_event(&mut self, time: Nanos, id: u32, bytes: u32) {
        self.seq += 1;
        self.events.push(Reverse(Event {
            time,
            seq: self.seq,
            id,
            bytes,
        }));
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
        };
        let fault = match &mut self.faults {
            None => Fault::None,
            Some(f) => f.draw(),
        };
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
        if let Some(done) = self.service(now, slot, &p.cmd) {
            self.push_event(done + self.complete_ns, slot, 0);
        }
    }

    /// Book the command on the front end and the media. Returns when its service ends,
    /// or `None` when it waits in the write buffer's queues (it is completed by a later
    /// destage event).
    fn service(&mut self, now: Nanos, slot: u32, cmd: &Command) -> Option<Nanos> {
        let arrive = now + self.fetch_ns;
        let len = cmd.len as u64;
        let (cmd_ns, bus) = if cmd.op == Op::Write {
            (self.write_cmd_ns, self.write_bus)
        } else {
            (self.read_cmd_ns, self.bus)
        };
        let mut svc = cmd_ns.max(bus.ns(len));
        if cmd.op == Op::Write {
            // A write's data is pulled from host memory by the controller (non-posted
            // PCIe reads, whose round trips vary); a read's is pushed (posted writes).
            // So a write's front-end time varies with the write body, a read's does not.
            if let Some(s) = &mut self.service {
                svc = s.draw_transfer(svc);
            }
        }
        let fs = arrive.max(self.front_free);
        let fe = fs + svc;
        self.front_free = fe;
        self.stats.front_busy_ns += svc;
        match cmd.op {
            Op::Read if self.read_from_buffer(cmd.offset, len) => {
                let ack = self.buffer.as_ref().expect("flash needs a buffer").ack_ns;
                Some(fe + ack)
            }
            Op::Read => Some(self.media(fs, fe, cmd.offset, len, false)),
            // A FUA write goes through to the media (write-through), as a device with a
            // volatile cache serves it.
            Op::Write if self.buffer.is_none() || cmd.fua => {
                Some(self.media(fs, fe, cmd.offset, len, true))
            }
            Op::Write => {
                let b = self.buffer.as_mut().expect("buffer");
                if b.waiters.is_empty() && (b.used + len <= b.capacity || b.used == 0) {
                    Some(self.admit(fe, cmd.offset, cmd.len))
                } else {
                    b.waiters.push_back(BufferWaiter {
                        slot,
                        ready: fe,
                        offset: cmd.offset,
                        len: cmd.len,
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
        }
    }

    /// The next piece of a command: its unit and length. Pieces are cut at stripe
    /// boundaries and placed by LBA, or, with `round_robin`, given whole stripes on
    /// successive units from the write pointer (which moves by a whole group of
    /// `write_units`; only writes are placed round robin). Writes use the first
    /// `write_parallel` units, reads all of them.
    #[inline]
    fn next_piece(
        &mut self,
        pos: &mut u64,
        left: &mut u64,
        round_robin: bool,
        write: bool,
    ) -> (u32, u64) {
        let stripe = self.stripe;
        let units = if write { self.write_parallel } else { self.units };
        let (unit, bytes) = if round_robin {
            let u = self.write_ptr;
            let next = u + self.write_units;
            self.write_ptr = if next >= units { 0 } else { next };
            (u, (*left).min(stripe))
        } else {
            let s = *pos / stripe;
            let room = (s + 1) * stripe - *pos;
            ((s % units as u64) as u32, (*left).min(room))
        };
        *pos += bytes;
        *left -= bytes;
        (unit, bytes)
    }

    /// Book a read or unbuffered write on the units, FIFO per unit. Piece `i` of `n`
    /// arrives at `fs + (fe - fs)(i + 1)/n` (the front-end transfer is pipelined with the
    /// media). A write piece holds the whole aligned group of `write_units` units around
    /// its unit, from when all of them are free. Returns when the last piece ends.
    fn media(&mut self, fs: Nanos, fe: Nanos, offset: u64, len: u64, write: bool) -> Nanos {
        let stripe = self.stripe;
        let round_robin = write && self.placement == WritePlacement::RoundRobin;
        let n = if len == 0 {
            1
        } else if round_robin {
            len.div_ceil(stripe)
        } else {
            (offset + len - 1) / stripe - offset / stripe + 1
        };
        let fixed = if write { self.write_ns } else { self.read_ns };
        let mut pos = offset;
        let mut left = len;
        let mut end = 0;
        for i in 0..n {
            let piece = pos;
            let (mut unit, bytes) = self.next_piece(&mut pos, &mut left, round_robin, write);
            if !write {
                if let Some(d) = self.flash.as_ref().and_then(|f| f.ftl.die_of(piece)) {
                    unit = d;
                }
            }
            let arrival = if n == 1 {
                fe
            } else {
                fs + (fe - fs) * (i + 1) / n
            };
            let array = self.vary(fixed, write);
            let xfer = if write {
                self.write_unit_xfer.ns(bytes)
            } else {
                self.unit_xfer.ns(bytes)
            };
            if !write && self.flash.as_ref().is_some_and(|f| f.channels > 0) {
                // Array read on the die, then the data out over the shared channel.
                let u = unit as usize;
                let start = arrival.max(self.unit_free[u]);
                let (_, e) = self.channel(unit, fs, start + array, xfer);
                self.unit_free[u] = e;
                self.stats.unit_busy_ns[u] += e - start;
                end = end.max(e);
                continue;
            }
            let cost = array + xfer;
            let span = if write { self.write_units as usize } else { 1 };
            let g0 = unit as usize / span * span;
            let group = g0..g0 + span;
            let free = self.unit_free[group.clone()]
                .iter()
                .copied()
                .max()
                .unwrap_or(0);
            let start = arrival.max(free);
            let e = start + cost;
            for u in group {
                self.unit_free[u] = e;
                self.stats.unit_busy_ns[u] += cost;
            }
            end = end.max(e);
        }
        end
    }
}
