//! Device profiles: the data that parameterises [`NvmeSsd`](crate::NvmeSsd).
//!
//! A profile is a TOML file (see `crates/sluice-device/profiles/` for the shipped ones).
//! Every section rejects unknown keys, so a typo is an error that names the line.

use crate::ftl::FlashConfig;
use crate::service::ServiceVariation;
use crate::zns::ZonedConfig;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

mod arbitration;
mod load;
mod transfer;
mod validate;
pub use arbitration::{Arbitration, ArbitrationKind, Burst};
pub use load::MAX_PROFILE_BYTES;
pub use transfer::Transfer;

/// Errors from loading, parsing or validating a [`DeviceProfile`]. Each message says
/// what is wrong, where (file or builtin name, line or field) and how to fix it.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// The profile file could not be read.
    #[error("cannot read device profile `{}`: {source}; check the path (profiles are TOML files, e.g. crates/sluice-device/profiles/zssd.toml)", path.display())]
    Io {
        /// The path that was read.
        path: PathBuf,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The TOML text is malformed, or a field has the wrong type, is missing or unknown.
    #[error("cannot parse device profile `{origin}` at line {line}, column {column}: {message}; fix the TOML there (the shipped profiles in crates/sluice-device/profiles/ list every field)")]
    Parse {
        /// File path or builtin name.
        origin: String,
        /// 1-based line of the error (0 when the parser gave no position).
        line: usize,
        /// 1-based column of the error (0 when the parser gave no position).
        column: usize,
        /// The parser's message.
        message: String,
    },
    /// The profile parsed but a value is out of range.
    #[error("invalid device profile `{origin}`: field `{field}` {problem}")]
    Invalid {
        /// File path or profile name.
        origin: String,
        /// Dotted field name, e.g. `media.units`.
        field: String,
        /// What is wrong and how to fix it.
        problem: String,
    },
    /// [`DeviceProfile::resolve`] was given a name that is neither builtin nor a `.toml` path.
    #[error("unknown device profile `{name}`: the builtin profiles are {}; or give the path of a profile file ending in .toml", builtins.join(", "))]
    UnknownName {
        /// The name given.
        name: String,
        /// The builtin profile names.
        builtins: Vec<String>,
    },
    /// An arbitration override string (see [`Arbitration::from_str`]) is malformed.
    #[error("bad arbitration `{text}`: {problem}; write `rr`, `rr:BURST`, `wrr` (D2FQ default weights 252,126,42, burst 8), `wrr:HPW,MPW,LPW` or `wrr:HPW,MPW,LPW,BURST` (weights 1..=256, burst a power of two up to 128 or `unlimited`)")]
    BadArbitration {
        /// The text given.
        text: String,
        /// What is wrong.
        problem: String,
    },
}

/// A device profile: what the simulated SSD looks like. See the crate docs for the model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceProfile {
    /// Short name (`ull`, `zssd`, `nand`, or a user's own).
    pub name: String,
    /// One-line description of what the profile models.
    pub description: String,
    /// The figures the profile promises (checked by the crate's tests).
    pub nominal: Nominal,
    /// How the controller picks the next submission queue to fetch from.
    pub arbitration: Arbitration,
    /// Controller resources and fixed overheads.
    pub controller: Controller,
    /// Parallel media units and transfer limits.
    pub media: Media,
    /// A DRAM write buffer, where the device has one.
    #[serde(default)]
    pub write_buffer: Option<WriteBuffer>,
    /// Per-operation variation of media times (`[service]`; none when absent), see
    /// [`crate::service`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<ServiceVariation>,
    /// Flash management (`[flash]`: mapping, over-provisioning, garbage collection,
    /// channel buses, reads from the write buffer; none when absent), see
    /// [`crate::ftl`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flash: Option<FlashConfig>,
    /// Zoned namespace (`[zoned]`: sequential-write-required zones with write
    /// pointers and open/active limits; none when absent: a conventional namespace),
    /// see [`crate::zns`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zoned: Option<ZonedConfig>,
}

/// The figures a profile promises for 4 KB random I/O. They are not inputs of the model:
/// tests check that the model reproduces them, and docs quote them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Nominal {
    /// Mean 4 KB random read latency at queue depth 1, ns.
    pub read_lat_qd1_ns: u64,
    /// Saturated 4 KB random read IOPS.
    pub read_iops: u64,
    /// Mean 4 KB random write latency at queue depth 1, ns.
    pub write_lat_qd1_ns: u64,
    /// Saturated (sustained, write buffer full where there is one) 4 KB random write IOPS.
    pub write_iops: u64,
    /// Queue depth near which read IOPS saturates.
    pub knee_qd: u32,
    /// Large-request bandwidth, bytes per second, where the profile states one.
    #[serde(default)]
    pub bandwidth_bytes: Option<u64>,
}

fn default_sq_depth() -> u32 {
    1024
}

/// Controller resources and fixed overheads.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Controller {
    /// Commands the controller holds internally (fetched and not yet completed). Commands
    /// beyond this wait in their submission queue, where arbitration orders them.
    pub max_outstanding: u32,
    /// Entries per submission queue (default 1024, at most 65536).
    #[serde(default = "default_sq_depth")]
    pub sq_depth: u32,
    /// Latency from fetch until the command reaches the front end (doorbell, SQE fetch
    /// over PCIe, decode). Adds latency, occupies nothing.
    pub fetch_ns: u64,
    /// Latency from the end of service until the completion is visible to the host (CQE
    /// post, interrupt). Adds latency, occupies nothing.
    pub complete_ns: u64,
    /// Per-command occupancy of the shared front end (controller processing) for reads
    /// and flushes; the front end is a single FIFO stage whose service time is
    /// `max(cmd_ns, len / media.bus_bandwidth_bytes)`, or their sum with
    /// `front_end = "additive"`, or `max(cmd_ns + len / media.link_bandwidth_bytes,
    /// len / media.bus_bandwidth_bytes)` with `front_end = "additive_capped"`.
    pub read_cmd_ns: u64,
    /// Per-command occupancy of the shared front end for writes.
    pub write_cmd_ns: u64,
    /// How the front end combines command processing and host transfer (default
    /// `"max"`; left out of the TOML when it is the default, so profiles written
    /// before it load and write back unchanged). See [`FrontEnd`].
    #[serde(
        default,
        skip_serializing_if = "FrontEnd::is_max",
        deserialize_with = "de_front_end"
    )]
    pub front_end: FrontEnd,
    /// How the commands held share the front end's transfer (default `"fifo"`; left
    /// out of the TOML when it is the default). See [`Transfer`].
    #[serde(
        default,
        skip_serializing_if = "Transfer::is_fifo",
        deserialize_with = "transfer::de_transfer"
    )]
    pub transfer: Transfer,
    /// Batched service (`None`, the default: off; left out of the TOML then). The front
    /// end serves the commands waiting for it in *batches*: a command that finds it
    /// idle begins a batch at once, one that finds it busy begins the next batch (which
    /// starts when the front end's work ends), and a batch takes every command that
    /// arrives until its `batch_ns` is over. Each batch costs `batch_ns` once (varied as
    /// the media time of the command that began it), ahead of its commands' own
    /// front-end times. A host that serves a virtual disk works so (one
    /// notification, one trip to its backend and one completion pass per batch of
    /// requests, whatever their number), and a closed loop of `n` commands then runs
    /// in batches of `n`: `1 / IOPS = batch_ns / n + cmd + len / bus`, the depth
    /// amortising the batch and the size costing the same at every depth — the form
    /// `sluice calibrate` measured on this machine's disk (`docs/calibrate.md`,
    /// "Batches"). Needs `transfer = "fifo"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_ns: Option<u64>,
    /// The largest write the device never tears at a power failure, bytes: NVMe's
    /// Atomic Write Unit Power Fail (AWUPF, or the namespace's NAWUPF), which Linux
    /// reports as `atomic_write_unit_max_bytes` and `RWF_ATOMIC` writes (fio's
    /// `atomic=1`) must fit. Absent: [`DEFAULT_ATOMIC_WRITE_BYTES`] (left out of the
    /// TOML then). A power of two from 512 (one logical block) up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub atomic_write_bytes: Option<u32>,
}

/// The atomic write unit of a profile that gives none (`controller.atomic_write_bytes`):
/// 4 KiB, the NVMe AWUPF of 7 at sluice's 512-byte logical blocks — one mapping unit
/// of the modelled FTLs (`[flash] page_bytes`-sized updates are mapped and programmed
/// whole), and what common NVMe SSDs report (most give AWUPF so that one 4 KiB block
/// is atomic). Linux's smallest atomic write is one logical block (512 bytes).
pub const DEFAULT_ATOMIC_WRITE_BYTES: u32 = 4096;

/// The smallest atomic write: one logical block (Linux's `atomic_write_unit_min_bytes`).
pub const ATOMIC_WRITE_MIN_BYTES: u32 = 512;

/// How the shared front end combines a command's processing time (`read_cmd_ns` |
/// `write_cmd_ns`) with its host transfer (`len / bus`).
///
/// `max` (the default, every shipped profile): the two overlap — the controller
/// processes the next command while its DMA engine moves data — so small requests are
/// bounded by command processing and large ones by bandwidth, and saturated IOPS is
/// `1 / max(cmd, len / bus)`. `additive`: the controller processes the command, then
/// moves its data, serially (a controller whose DMA does not overlap command
/// processing), so a request of `len` bytes occupies the front end `cmd + len / bus`
/// and saturated IOPS is `1 / (cmd + len / bus)`. Why it exists: `sluice calibrate`
/// found a disk (`docs/calibrate.md`, "This machine") whose 1 / IOPS at depth is
/// additive in the size — `8.4 µs + 0.81 ns/B` from 4 to 128 KiB within 5 % — which
/// `max` cannot follow (its 16 KiB reads at depth came out 33 % too fast); the
/// calibration picks the form whose fit of the measured size sweep is better.
///
/// `additive_capped`: additive under a bandwidth ceiling. The command is processed,
/// then its data moved over a link of `media.link_bandwidth_bytes` that overlaps
/// nothing (`cmd + len / link`), but the front end as a whole moves no more than
/// `media.bus_bandwidth_bytes`: a request occupies it
/// `max(cmd + len / link, len / bus)`. With `link > bus` small requests follow the
/// additive line (slope `1 / link`) and large ones the ceiling, the break at
/// `len = cmd / (1 / bus − 1 / link)`. Why it exists: the same disk's reads are
/// additive up to 32–64 KiB and then flatten into a bandwidth ceiling
/// (`docs/calibrate.md`, "This machine"), which neither `max` nor `additive` follows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FrontEnd {
    /// `max(cmd, len / bus)`: command processing and transfer overlap.
    #[default]
    Max,
    /// `cmd + len / bus`: the command is processed, then its data moved.
    Additive,
    /// `max(cmd + len / link, len / bus)`: additive over the link, under the bus's
    /// bandwidth ceiling.
    AdditiveCapped,
}

impl FrontEnd {
    /// The TOML names, in the order the error messages give them.
    pub const NAMES: [&'static str; 3] = ["max", "additive", "additive_capped"];

    /// Whether this is the default `max` (serde leaves it out of the TOML then).
    pub fn is_max(&self) -> bool {
        *self == FrontEnd::Max
    }

    /// The front end's occupancy of a command with processing time `cmd_ns`, transfer
    /// time over the bus `xfer_ns` and over the link `link_ns` (`len / link`; only
    /// `additive_capped` uses it).
    #[inline]
    pub fn combine(self, cmd_ns: u64, xfer_ns: u64, link_ns: u64) -> u64 {
        self.combine_any(cmd_ns, xfer_ns, link_ns)
    }

    /// [`FrontEnd::combine`] on real numbers (the calibration's closed forms).
    pub fn combine_f64(self, cmd_ns: f64, xfer_ns: f64, link_ns: f64) -> f64 {
        self.combine_any(cmd_ns, xfer_ns, link_ns)
    }

    /// The one formula behind both.
    #[inline]
    fn combine_any<T>(self, cmd: T, xfer: T, link: T) -> T
    where
        T: Copy + PartialOrd + std::ops::Add<Output = T>,
    {
        let max = |a: T, b: T| if b > a { b } else { a };
        match self {
            FrontEnd::Max => max(cmd, xfer),
            FrontEnd::Additive => cmd + xfer,
            FrontEnd::AdditiveCapped => max(cmd + link, xfer),
        }
    }

    /// Whether the form has a link (`media.link_bandwidth_bytes`).
    pub fn has_link(self) -> bool {
        self == FrontEnd::AdditiveCapped
    }

    /// The TOML name.
    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

/// `controller.front_end` from any TOML value, or an error that names the key and the
/// accepted values (serde's own message for an unknown variant names neither the key
/// nor, for a non-string, the values).
fn de_front_end<'de, D: serde::Deserializer<'de>>(d: D) -> Result<FrontEnd, D::Error> {
    let v = toml::Value::deserialize(d)?;
    let accepted = "it must be \"max\" (command processing and transfer overlap: max(cmd_ns, len / bus), the default), \"additive\" (processed, then transferred: cmd_ns + len / bus) or \"additive_capped\" (additive over a link, under the bus's ceiling: max(cmd_ns + len / media.link_bandwidth_bytes, len / bus))";
    match v.as_str() {
        Some("max") => Ok(FrontEnd::Max),
        Some("additive") => Ok(FrontEnd::Additive),
        Some("additive_capped") => Ok(FrontEnd::AdditiveCapped),
        Some(s) => Err(serde::de::Error::custom(format!(
            "`controller.front_end` is \"{s}\"; {accepted}"
        ))),
        None => Err(serde::de::Error::custom(format!(
            "`controller.front_end` is {v} ({}); {accepted}",
            v.type_str()
        ))),
    }
}

/// Where a write's data is placed on the units.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WritePlacement {
    /// In place: the same LBA striping as reads (phase-change / 3D XPoint media).
    Lba,
    /// Out of place: each written stripe goes to the next unit in turn (a flash FTL's
    /// write pointer striped over dies).
    RoundRobin,
}

fn default_placement() -> WritePlacement {
    WritePlacement::Lba
}

/// Optional physical geometry of flash media (documentation, and a check that
/// `units = channels × chips_per_channel × dies_per_chip`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Geometry {
    /// Flash channels.
    pub channels: u32,
    /// Chips per channel.
    pub chips_per_channel: u32,
    /// Dies per chip.
    pub dies_per_chip: u32,
    /// Planes per die (multi-plane programs write `planes × page` bytes at once; see
    /// `write_buffer.program_bytes`).
    pub planes_per_die: u32,
}

/// The media: parallel units with per-operation service times and transfer limits.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Media {
    /// Independent units that serve commands in parallel (dies, or Optane partitions).
    pub units: u32,
    /// Physical layout, for flash profiles.
    #[serde(default)]
    pub geometry: Option<Geometry>,
    /// Striping unit (page), bytes: stripe `offset / stripe_bytes` lives on unit
    /// `(offset / stripe_bytes) % units`; a command spanning stripes uses several units.
    pub stripe_bytes: u32,
    /// Fixed unit time of reading one stripe (array read, tR), ns.
    pub read_ns: u64,
    /// Fixed unit time of writing one stripe (program), ns. With a write buffer this is
    /// the time of one program of `write_buffer.program_bytes`.
    pub write_ns: u64,
    /// Block erase time, ns: the cost of a garbage-collection erase with `[flash]`
    /// (documentation only without it).
    #[serde(default)]
    pub erase_ns: Option<u64>,
    /// Per-unit transfer rate (channel), bytes per second: a piece of `b` bytes adds
    /// `b / unit_bandwidth_bytes` to its unit time.
    pub unit_bandwidth_bytes: u64,
    /// Shared host transfer limit (PCIe / controller datapath), bytes per second.
    pub bus_bandwidth_bytes: u64,
    /// Per-unit transfer rate of writes (a program's data into its unit), bytes per
    /// second; default `unit_bandwidth_bytes` (one rate for both, the meaning before
    /// reads and writes were fitted apart).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_unit_bandwidth_bytes: Option<u64>,
    /// Host transfer limit of writes (the controller pulling write data from host
    /// memory), bytes per second; default `bus_bandwidth_bytes`. The front end serves
    /// a write in `max(write_cmd_ns, len / write_bus_bandwidth_bytes)` (their sum with
    /// `controller.front_end = "additive"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_bus_bandwidth_bytes: Option<u64>,
    /// The per-byte rate of the front end's transfer that overlaps no command
    /// processing, bytes per second: with `controller.front_end = "additive_capped"`
    /// (and only then; required there) a read occupies the front end
    /// `max(read_cmd_ns + len / link_bandwidth_bytes, len / bus_bandwidth_bytes)`.
    /// Greater than `bus_bandwidth_bytes` for the ceiling to matter. See [`FrontEnd`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_bandwidth_bytes: Option<u64>,
    /// The link rate of writes, bytes per second; default `link_bandwidth_bytes`. Only
    /// with `controller.front_end = "additive_capped"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_link_bandwidth_bytes: Option<u64>,
    /// Units that serve writes — in-place write pieces and destage programs — (the
    /// first `write_parallel_units` of `units`); default all `units`. A device whose
    /// writes reach less parallelism than its reads (measured by `sluice calibrate`
    /// from the two queue-depth curves) gets fewer. Must be a multiple of
    /// `write_units`; with `[flash]` it must be `units`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_parallel_units: Option<u32>,
    /// Units that serve reads (the first `read_parallel_units` of `units`); default
    /// all `units`. For a device whose reads reach less parallelism than its writes;
    /// with `[flash]` it must be `units` (reads go to the die that holds the data).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_parallel_units: Option<u32>,
    /// Read/write interference beyond the shared units (opt-in; absent or 0: off):
    /// for this many ns after a write ends on a unit — an in-place write piece or a
    /// destage program — a read on that unit does not start. Writes do not wait for
    /// it. The textbook cause: a NAND die acknowledges a program's data from its page
    /// (cache) register while its array keeps programming; the next write's data can
    /// load into the register meanwhile (cache programming), but a read needs the
    /// array and waits. So pure reads and pure writes keep their figures and only a
    /// mix slows — what `sluice calibrate` fits from its mixed points.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "de_read_block"
    )]
    pub read_block_after_write_ns: Option<u64>,
    /// Load-dependent media time of reads (opt-in; absent: off): an array read booked
    /// while `n` commands are in the device (submitted and not completed, itself
    /// included) takes `read_ns · n^β`, β this exponent in `(0, 1)`. With enough units
    /// that reads rarely collide, IOPS then grows as `n^(1 − β)` below the front end's
    /// ceiling and the latency as `n^β` — the curve of a virtual disk whose host serves
    /// concurrent requests with a shared resource (its I/O threads, the image file's
    /// own file system, a network), which neither fixed units (IOPS linear in depth
    /// until they collide) nor a front end (flat latency until it saturates) shows.
    /// Empirical: not a model of an SSD's internals (not with `[flash]`). At QD1 it
    /// changes nothing (`n = 1`). `sluice calibrate` fits it from the queue-depth sweep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_load_exponent: Option<f64>,
    /// The same for the program time (`write_ns`) of an unbuffered write piece.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_load_exponent: Option<f64>,
    /// Where writes go (default `lba`).
    #[serde(default = "default_placement")]
    pub write_placement: WritePlacement,
    /// One shared queue in front of interchangeable units (default false): every
    /// piece of a read or of an unbuffered write goes to the unit (of those that serve
    /// its direction) that is free first, not to the unit its LBA stripes to. For a
    /// device whose layout is hidden — a virtual disk whose host serves any request
    /// with any of its parallel resources — where striping by LBA would make random
    /// requests collide on a unit while others idle, and widen the latency at depth
    /// the device does not show. `sluice calibrate` writes it. Not with `[flash]`
    /// (a read goes to the die that holds its data), a write buffer (its destage has
    /// `write_placement`) or `write_units` above 1.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pool: bool,
    /// Units one unbuffered write stripe occupies for its whole program (default 1).
    /// Units form aligned groups of this size; a write piece goes to the group of the
    /// unit it is placed on (the write pointer then advances by a whole group) and
    /// starts when every unit of the group is free. With `write_units = units` a
    /// program blocks the whole device — reads queue behind it and writes never
    /// overlap — as on FIOS's X25-M, Mtron and CompactFlash. Must divide `units`;
    /// only for profiles without a write buffer.
    #[serde(default = "default_write_units")]
    pub write_units: u32,
}

fn default_write_units() -> u32 {
    1
}

/// A whole number of nanoseconds in `0..=10 s` from any TOML value, or an error that
/// names `key` and the valid range (serde's own message for a negative number, a
/// fraction or `nan` names only the type).
pub(crate) fn whole_ns(v: toml::Value, key: &str) -> Result<u64, String> {
    let range = format!("it must be a whole number of nanoseconds in 0..={MAX_NS}");
    match v {
        toml::Value::Integer(i) if (0..=MAX_NS as i64).contains(&i) => Ok(i as u64),
        toml::Value::Integer(i) => Err(format!("`{key}` is {i}; {range}")),
        toml::Value::Float(f) if f.fract() == 0.0 && (0.0..=MAX_NS as f64).contains(&f) => {
            Ok(f as u64)
        }
        toml::Value::Float(f) => Err(format!("`{key}` is {f}; {range}")),
        other => Err(format!(
            "`{key}` is {} ({}); {range}",
            other,
            other.type_str()
        )),
    }
}

fn de_read_block<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    let v = toml::Value::deserialize(d)?;
    whole_ns(v, "media.read_block_after_write_ns")
        .map(Some)
        .map_err(serde::de::Error::custom)
}

/// The longest time a profile may give (service, command, latency): 10 s.
pub(crate) const MAX_NS: u64 = 10_000_000_000;

/// A DRAM write buffer: writes are acknowledged once buffered and destaged by programs;
/// when the buffer is full a write waits until destaging frees room.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteBuffer {
    /// Buffer size, bytes.
    pub capacity_bytes: u64,
    /// Time to copy a write into the buffer and acknowledge it, ns.
    pub ack_ns: u64,
    /// Bytes written by one program of `media.write_ns` (page × planes). The buffer
    /// coalesces writes, so a destaged piece of `b` bytes costs
    /// `write_ns · b / program_bytes` of unit time (plus its transfer).
    pub program_bytes: u32,
    /// Whether the buffer loses its contents on power loss (NVMe "Volatile Write
    /// Cache" present; default `true`). A buffer with power-loss protection (`false`)
    /// makes every acknowledged write durable; a volatile one keeps only what a FLUSH
    /// or a FUA write made durable when the power goes (see `durability`).
    #[serde(default = "default_volatile")]
    pub volatile: bool,
}

fn default_volatile() -> bool {
    true
}

impl DeviceProfile {
    /// The bytes the host can address, when the profile says: the flash translation
    /// layer's `logical_bytes`, or a zoned device's `zones × zone_size_bytes`. A
    /// profile with neither has no end (its device never runs out of space).
    pub fn capacity_bytes(&self) -> Option<u64> {
        if let Some(f) = &self.flash {
            return Some(f.logical_bytes);
        }
        self.zoned
            .as_ref()
            .map(|z| z.zone_size_bytes.saturating_mul(z.zones as u64))
    }

    /// The NVMe Flexible Data Placement reclaim unit handles the device offers (its
    /// placement identifiers are `0..n`, one reclaim group); 0 when it has no FDP
    /// (no `[flash]`, or `[flash] fdp_ruhs` absent or 0). See [`crate::ftl`].
    pub fn fdp_ruhs(&self) -> u32 {
        self.flash.as_ref().map_or(0, |f| f.fdp_ruhs)
    }

    /// The device's atomic write unit, bytes: the sizes an atomic (untorn, `RWF_ATOMIC`)
    /// write may have, `(min, max)` — one logical block up to
    /// `controller.atomic_write_bytes` ([`DEFAULT_ATOMIC_WRITE_BYTES`] when absent).
    pub fn atomic_write_unit(&self) -> (u32, u32) {
        (
            ATOMIC_WRITE_MIN_BYTES,
            self.controller
                .atomic_write_bytes
                .unwrap_or(DEFAULT_ATOMIC_WRITE_BYTES),
        )
    }

    /// The same profile with a different arbitration (e.g. from a `--arbitration`
    /// override parsed by [`Arbitration::from_str`]).
    pub fn with_arbitration(mut self, arbitration: Arbitration) -> DeviceProfile {
        self.arbitration = arbitration;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::load::line_col;
    use super::*;

    #[test]
    fn d2fq_default_weights() {
        let a = Arbitration::d2fq(6, Burst::Limited(8));
        assert_eq!((a.hpw, a.mpw, a.lpw), (252, 126, 42));
    }

    #[test]
    fn arbitration_override_parses() {
        let a: Arbitration = "wrr:16,4,1,unlimited".parse().unwrap();
        assert_eq!((a.hpw, a.mpw, a.lpw, a.burst), (16, 4, 1, Burst::Unlimited));
        let a: Arbitration = "rr:2".parse().unwrap();
        assert_eq!(a.kind, ArbitrationKind::Rr);
        assert!("wrr:0,1,1".parse::<Arbitration>().is_err());
        assert!("wrr:1,1,1,3".parse::<Arbitration>().is_err());
        assert!("fifo".parse::<Arbitration>().is_err());
    }

    #[test]
    fn line_col_counts() {
        assert_eq!(line_col("ab\ncd", 4), (2, 2));
        assert_eq!(line_col("ab", 0), (1, 1));
    }
}
