//! The device's internal state records: commands waiting and held, events, the write
//! buffer's and flash management's state, and the fixed-point transfer rate.

use crate::ftl::Ftl;
use crate::profile::DeviceProfile;
use sluice_core::Nanos;
use std::collections::VecDeque;

use super::{Command, Fault};

/// A command waiting in its submission queue.
#[derive(Clone, Copy, Debug)]
pub(super) struct Pending {
    pub(super) cmd: Command,
    pub(super) submit_ns: Nanos,
}

/// A command held by the controller.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Slot {
    pub(super) tag: u32,
    pub(super) qid: u16,
    pub(super) op: u8,
    pub(super) fault: Fault,
    pub(super) len: u32,
    pub(super) submit_ns: Nanos,
    pub(super) fetch_ns: Nanos,
}

/// An internal event, ordered by time, then creation sequence: a command completion
/// (`id` = slot), the end of a destage program (`id` = `PROGRAM | unit`, `bytes`) or a
/// change on the shared link (`id` = `LINK_EVENT`).
/// The derived order is that order (`seq` is unique).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Event {
    pub(super) time: Nanos,
    pub(super) seq: u64,
    pub(super) id: u32,
    pub(super) bytes: u32,
}

pub(super) const PROGRAM: u32 = 1 << 31;

/// The id of the shared link's event (see `link.rs`).
pub(super) const LINK_EVENT: u32 = 1 << 30;

/// Fixed-point "ns per byte" (×2³²) so transfer times cost one multiply.
#[derive(Clone, Copy, Debug)]
pub(super) struct PerByte(u128);

impl PerByte {
    pub(super) fn new(ns: u64, bytes: u64) -> PerByte {
        PerByte(((ns as u128) << 32) / bytes as u128)
    }
    pub(super) fn from_bandwidth(bytes_per_s: u64) -> PerByte {
        PerByte::new(1_000_000_000, bytes_per_s)
    }
    #[inline]
    pub(super) fn ns(self, bytes: u64) -> Nanos {
        ((bytes as u128 * self.0 + (1 << 31)) >> 32) as Nanos
    }
}

/// A buffered write waiting for buffer room.
#[derive(Clone, Copy, Debug)]
pub(super) struct BufferWaiter {
    pub(super) slot: u32,
    /// When its data reached the controller (end of the front end).
    pub(super) ready: Nanos,
    pub(super) offset: u64,
    pub(super) len: u32,
    /// Its placement handle (FDP; 0 without).
    pub(super) placement: u8,
}

/// A flush waiting for destaging.
#[derive(Clone, Copy, Debug)]
pub(super) struct FlushWaiter {
    pub(super) slot: u32,
    pub(super) ready: Nanos,
    /// Done when `destaged_bytes` reaches this.
    pub(super) target: u64,
}

/// Write-buffer state. Destage programs wait in per-unit queues and are started one at
/// a time per unit (event-driven), so reads arriving at a unit wait only for the
/// program in progress, not for the whole destage backlog.
#[derive(Clone, Debug)]
pub(super) struct BufferState {
    pub(super) capacity: u64,
    pub(super) used: u64,
    pub(super) ack_ns: Nanos,
    pub(super) program: PerByte,
    /// Writes waiting for room, FIFO.
    pub(super) waiters: VecDeque<BufferWaiter>,
    pub(super) flushes: VecDeque<FlushWaiter>,
    pub(super) admitted_bytes: u64,
    pub(super) destaged_bytes: u64,
    /// Per unit: pieces (ready time, offset, bytes, placement handle) waiting to be
    /// programmed.
    pub(super) pending: Vec<VecDeque<(Nanos, u64, u32, u8)>>,
    /// Per unit: a program is in progress (its end event is in the heap).
    pub(super) programming: Vec<bool>,
}

/// Flash management state: the FTL and the channel buses.
#[derive(Clone, Debug)]
pub(super) struct FlashState {
    pub(super) ftl: Ftl,
    /// Channel buses shared by their dies (0: each die transfers on its own).
    pub(super) channels: u32,
    /// Per channel: booked transfers (start, end), sorted and disjoint, pruned as time
    /// passes; a new transfer takes the first gap that fits (bounded by the commands
    /// and programs in flight).
    pub(super) chan_busy: Vec<VecDeque<(Nanos, Nanos)>>,
    pub(super) buffer_reads: bool,
    /// Per die: the piece (offset, bytes) its program in progress writes; it leaves the
    /// buffer when the program ends.
    pub(super) programming: Vec<(u64, u32)>,
    pub(super) map_bytes: u64,
    pub(super) erase_ns: Nanos,
    /// Program time per byte of GC copies (the buffer's coalesced program rate).
    pub(super) copy_program: PerByte,
}

impl FlashState {
    pub(super) fn new(p: &DeviceProfile) -> Option<FlashState> {
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
