//! # sluice-device
//!
//! A simulated NVMe SSD for sluice's deterministic simulator: submission/completion
//! queue pairs per core, the NVMe arbitration mechanisms, a controller with a bounded
//! number of internal command slots, a shared front end, parallel media units and an
//! optional DRAM write buffer. Device profiles are data (TOML), see [`DeviceProfile`].
//!
//! The device is *passive*: it holds no clock, spawns no thread and uses no randomness.
//! The caller gives it the time ([`NvmeSsd::submit`] at `now_ns`, [`NvmeSsd::advance`]
//! to `now_ns`, [`NvmeSsd::next_event_ns`] to know when to come back). Identical call
//! sequences give identical completions.
//!
//! Units are in the names: `_ns` is simulated nanoseconds, `_bytes` is bytes (and
//! `*_bandwidth_bytes` is bytes per second), `len` and `offset` are bytes.
//!
//! ## The model
//!
//! 1. **Queues.** One submission queue (SQ) per (core, [`QueueClass`]):
//!    `qid = core * 4 + class.index()`, each `controller.sq_depth` entries
//!    ([`SubmitError::QueueFull`] beyond).
//! 2. **Fetch and arbitration.** The controller holds at most
//!    `controller.max_outstanding` commands. While it has a free slot a submitted command
//!    is fetched at once; otherwise commands wait in their SQ, and each completion frees
//!    a slot that is refilled by arbitration (NVMe base spec):
//!    * `rr`: round robin over all non-empty SQs, class ignored;
//!    * `wrr`: the urgent class with strict priority; then high, medium and low visited
//!      in weighted round robin — per round a class fetches up to its weight (`hpw`,
//!      `mpw`, `lpw`, counts 1..=256) commands, and a class found empty forfeits its
//!      turn for the round.
//!
//!    Within a class (or among all SQs for `rr`) SQs take turns, at most
//!    `arbitration.burst` commands per turn. Non-empty SQs are tracked in bitmasks, so
//!    a pick is O(1) amortised. Fetches per class are counted in
//!    [`DeviceStats::fetched_per_class`].
//! 3. **Front end.** A fetched command first waits `controller.fetch_ns` (SQE fetch,
//!    decode: latency only), then passes one shared FIFO stage — controller processing
//!    and host transfer — that it occupies for
//!    `max(read_cmd_ns | write_cmd_ns, len / media.bus_bandwidth_bytes)`. Small
//!    requests are thus bounded by command processing (IOPS), large ones by bandwidth.
//!    With `controller.front_end = "additive"` ([`FrontEnd`]) it occupies their sum
//!    instead — the command is processed, then its data moved — so every byte costs
//!    bus time on top of the command (what `sluice calibrate` measured on a virtio
//!    disk: 1 / IOPS at depth linear in the size). A multi-piece command's pieces
//!    then reach their units as the transfer that follows the command progresses.
//!    With `"additive_capped"` it occupies `max(cmd + len / media.link_bandwidth_bytes,
//!    len / media.bus_bandwidth_bytes)`: additive over a link that overlaps nothing,
//!    under the bus's bandwidth ceiling (the same disk's reads, which flatten into a
//!    ceiling above 32–64 KiB); pieces travel as with `"additive"`.
//! 4. **Media.** `media.units` units (dies; Optane partitions) serve pieces FIFO. A
//!    command is cut at `media.stripe_bytes` boundaries; stripe `s` lives on unit
//!    `s % units` (so the LBA matters), and writes with `write_placement =
//!    "round_robin"` go to the next unit in turn (a flash FTL's write pointer). A piece
//!    of `b` bytes costs its unit `read_ns` or `write_ns` plus `b /
//!    unit_bandwidth_bytes`. Pieces of a multi-stripe command reach their units as the
//!    front-end transfer progresses, and the command ends with its last piece. Reads
//!    and writes share the units, so a read queued behind a write or program waits
//!    (the read/write interference of FIOS's devices). With `media.write_units = k`
//!    an unbuffered write piece holds an aligned group of `k` units for its whole
//!    program (the write pointer moves group by group): `k = units` makes every
//!    program block the whole device, as on the X25-M, Mtron and CompactFlash FIOS
//!    measured (`x25m`, `mtron`, `cf`); `vertex` programs on 4 of 12 units. With
//!    `media.read_block_after_write_ns = t` (opt-in, off by default) a read on a unit
//!    also waits until `t` after the unit's last write (piece or destage program)
//!    ended, and writes do not: the die's array still programs data its register has
//!    acknowledged (cache programming), so only a mix of reads and writes slows.
//!    With `media.read_load_exponent = β` (opt-in; `write_load_exponent` for
//!    unbuffered write pieces) a piece's array time is `read_ns · n^β`, `n` the
//!    commands in the device when it is booked: an empirical form for a virtual
//!    disk whose host slows every request as more are in flight (IOPS growing as
//!    `n^(1 − β)`); not with `[flash]`.
//! 5. **Write buffer** (optional `[write_buffer]`). A write is admitted into the
//!    buffer when its data has passed the front end and there is room, and completes
//!    `ack_ns` later. Its pieces wait in per-unit destage queues (placed as above) and
//!    are programmed one at a time per unit; a piece of `b` bytes costs
//!    `write_ns · b / program_bytes` plus its transfer (the buffer coalesces small writes
//!    into full multi-plane programs), and frees its room when the program ends. When
//!    the buffer is full, writes wait FIFO for room, so sustained write IOPS is the
//!    destage rate. A read reaching a unit waits for the program in progress (and
//!    earlier reads) but not for the queued destage backlog — reads are preferred over
//!    queued programs, as flash controllers do. A flush completes once every byte
//!    admitted before it has been destaged.
//! 6. **Completion.** `controller.complete_ns` (CQE post, interrupt: latency only)
//!    after the service ends, the completion becomes visible and the slot is freed.
//!
//! A read's or unbuffered write's completion time is computed when it is fetched (its
//! stages are FIFO and fetches happen in time order), so it costs exactly one internal
//! event in a binary heap keyed by (time, creation sequence). A buffered write adds one
//! event per destage program. Nothing is allocated per command after warm-up:
//! controller slots are preallocated, SQs and destage queues are ring buffers that keep
//! their capacity (bounded by `sq_depth` and the buffer size), so memory stays flat.
//!
//! Latency rises with queue depth past the knee naturally: once the bottleneck stage
//! (front end, or the units) is saturated, additional commands queue, and by Little's
//! law mean latency ≈ QD / IOPS.
//!
//! 7. **Variation** (optional `[service]`, [`service`]): each media operation's time is
//!    drawn from a mean-preserving log-normal body plus a rare exponential tail, seeded
//!    by [`NvmeSsd::set_seed`]; a write's front-end time (the controller pulling its
//!    data from host memory) is multiplied by a draw of the write body.
//! 8. **Flash management** (optional `[flash]`, [`ftl`]): a page-level map, greedy
//!    garbage collection with copy and erase cost before destage programs, channel
//!    buses shared by their dies, reads served from the write buffer.
//!
//! ## Left out
//!
//! * Program/erase suspension, cache reads, wear levelling; variation of the read
//!   front end, fetch and completion stages.
//! * A unit's reads are booked when fetched, a few µs ahead of their arrival, so a
//!   destage program that ends in the meantime starts after them (a small gap).
//!
//! ## Profiles
//!
//! Builtin profiles ([`DeviceProfile::BUILTIN`]) are the files in
//! `crates/sluice-device/profiles/`, embedded at build time; each file's header says
//! what it models and derives its parameters from its anchor figures.
#![warn(missing_docs, missing_debug_implementations)]

pub mod arbiter;
pub mod durability;
pub mod faults;
pub mod ftl;
mod port;
mod profile;
pub mod service;
mod ssd;
pub mod zns;

pub use arbiter::{sq_id, Arbiter};
pub use durability::{Contents, ContentsStats, CrashReport, CrashSpec, FlushTicket};
pub use faults::{FaultConfig, FaultSpecError};
pub use ftl::{FlashConfig, FlashStats};
pub use port::SimPort;
pub use profile::{
    Arbitration, ArbitrationKind, Burst, Controller, DeviceProfile, FrontEnd, Geometry, Media,
    Nominal, ProfileError, Transfer, WriteBuffer, WritePlacement, ATOMIC_WRITE_MIN_BYTES,
    DEFAULT_ATOMIC_WRITE_BYTES, MAX_PROFILE_BYTES,
};
pub use service::{OpVariation, ServiceVariation};
pub use ssd::{Command, DeviceCompletion, DeviceStats, NvmeSsd, SubmitError};
pub use zns::{ZoneCond, ZoneError, ZonedConfig, Zones};

// Re-exported for convenience: the vocabulary the API uses.
pub use sluice_core::{Nanos, Op, QueueClass};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_parse_and_validate() {
        for name in DeviceProfile::BUILTIN {
            let p = DeviceProfile::builtin(name).expect("builtin");
            assert_eq!(&p.name, name);
            p.validate().unwrap();
        }
        assert!(DeviceProfile::builtin("nope").is_none());
    }

    #[test]
    fn qids_and_bad_queue() {
        let p = DeviceProfile::builtin("ull").unwrap();
        let mut d = NvmeSsd::new(&p, 2);
        assert_eq!(d.queue_id(1, QueueClass::Low), 7);
        let cmd = Command {
            tag: 1,
            op: Op::Read,
            offset: 0,
            len: 4096,
            fua: false,
            placement: 0,
        };
        assert!(matches!(d.submit(0, 8, cmd), Err(SubmitError::BadQueue)));
        assert_eq!(d.sq_free(8), 0);
        assert_eq!(d.sq_free(7), p.controller.sq_depth);
    }
}
