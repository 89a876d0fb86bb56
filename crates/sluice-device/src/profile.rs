//! Device profiles: the data that parameterises [`NvmeSsd`](crate::NvmeSsd).
//!
//! A profile is a TOML file (see `crates/sluice-device/profiles/` for the shipped ones).
//! Every section rejects unknown keys, so a typo is an error that names the line.

use crate::ftl::FlashConfig;
use crate::service::ServiceVariation;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

mod arbitration;
pub use arbitration::{Arbitration, ArbitrationKind, Burst};

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
    /// `max(cmd_ns, len / media.bus_bandwidth_bytes)`.
    pub read_cmd_ns: u64,
    /// Per-command occupancy of the shared front end for writes.
    pub write_cmd_ns: u64,
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
    /// a write in `max(write_cmd_ns, len / write_bus_bandwidth_bytes)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_bus_bandwidth_bytes: Option<u64>,
    /// Units that serve writes — in-place write pieces and destage programs — (the
    /// first `write_parallel_units` of `units`; reads use all of them); default all
    /// `units`. A device whose writes reach less parallelism than its reads (measured
    /// by `sluice calibrate` from the two queue-depth curves) gets fewer. Must be a
    /// multiple of `write_units`; with `[flash]` it must be `units`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_parallel_units: Option<u32>,
    /// Where writes go (default `lba`).
    #[serde(default = "default_placement")]
    pub write_placement: WritePlacement,
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

fn invalid(origin: &str, field: &str, problem: String) -> ProfileError {
    ProfileError::Invalid {
        origin: origin.to_string(),
        field: field.to_string(),
        problem,
    }
}

const ULL_TOML: &str = include_str!("../profiles/ull.toml");
const ZSSD_TOML: &str = include_str!("../profiles/zssd.toml");
const NAND_TOML: &str = include_str!("../profiles/nand.toml");
const X25M_TOML: &str = include_str!("../profiles/x25m.toml");
const MTRON_TOML: &str = include_str!("../profiles/mtron.toml");
const VERTEX_TOML: &str = include_str!("../profiles/vertex.toml");
const CF_TOML: &str = include_str!("../profiles/cf.toml");

impl DeviceProfile {
    /// Names of the builtin profiles.
    pub const BUILTIN: &'static [&'static str] =
        &["ull", "zssd", "nand", "x25m", "mtron", "vertex", "cf"];

    /// A builtin profile by name (`None` for other names).
    pub fn builtin(name: &str) -> Option<DeviceProfile> {
        let text = match name {
            "ull" => ULL_TOML,
            "zssd" => ZSSD_TOML,
            "nand" => NAND_TOML,
            "x25m" => X25M_TOML,
            "mtron" => MTRON_TOML,
            "vertex" => VERTEX_TOML,
            "cf" => CF_TOML,
            _ => return None,
        };
        Some(
            DeviceProfile::from_toml_str(text, &format!("builtin:{name}"))
                .expect("builtin profiles are valid (checked by tests)"),
        )
    }

    /// Parse and validate a profile from TOML text; `origin` (a path or name) appears
    /// in error messages.
    pub fn from_toml_str(text: &str, origin: &str) -> Result<DeviceProfile, ProfileError> {
        let profile: DeviceProfile = toml::from_str(text).map_err(|e| {
            let (line, column) = match e.span() {
                Some(span) => line_col(text, span.start),
                None => (0, 0),
            };
            ProfileError::Parse {
                origin: origin.to_string(),
                line,
                column,
                message: e.message().trim().to_string(),
            }
        })?;
        profile.validate().map_err(|e| match e {
            ProfileError::Invalid { field, problem, .. } => ProfileError::Invalid {
                origin: origin.to_string(),
                field,
                problem,
            },
            other => other,
        })?;
        Ok(profile)
    }

    /// Read, parse and validate a profile file.
    pub fn load(path: &Path) -> Result<DeviceProfile, ProfileError> {
        let text = std::fs::read_to_string(path).map_err(|source| ProfileError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        DeviceProfile::from_toml_str(&text, &path.display().to_string())
    }

    /// A builtin profile by name, else a profile file (a path ending in `.toml`).
    pub fn resolve(name_or_path: &str) -> Result<DeviceProfile, ProfileError> {
        if let Some(p) = DeviceProfile::builtin(name_or_path) {
            return Ok(p);
        }
        if name_or_path.ends_with(".toml") {
            return DeviceProfile::load(Path::new(name_or_path));
        }
        Err(ProfileError::UnknownName {
            name: name_or_path.to_string(),
            builtins: DeviceProfile::BUILTIN
                .iter()
                .map(|s| s.to_string())
                .collect(),
        })
    }

    /// The same profile with a different arbitration (e.g. from a `--arbitration`
    /// override parsed by [`Arbitration::from_str`]).
    pub fn with_arbitration(mut self, arbitration: Arbitration) -> DeviceProfile {
        self.arbitration = arbitration;
        self
    }

    /// Check every value's range. Errors name the field and say how to fix it.
    pub fn validate(&self) -> Result<(), ProfileError> {
        let o = self.name.as_str();
        // Every number must be positive and below a bound that keeps the model's sums
        // far from wrapping (a service time of 2^64 − 1 ns once "overflowed" into a
        // device faster than `ull`).
        let positive = |field: &str, v: u64, what: &str| -> Result<(), ProfileError> {
            let (max, unit) = max_of(field);
            if v == 0 {
                Err(invalid(
                    o,
                    field,
                    format!("is 0; it must be positive ({what})"),
                ))
            } else if v > max {
                Err(invalid(
                    o,
                    field,
                    format!("is {v}; it must be at most {max} {unit} ({what})"),
                ))
            } else {
                Ok(())
            }
        };
        let c = &self.controller;
        for (field, v) in [
            ("controller.fetch_ns", c.fetch_ns),
            ("controller.complete_ns", c.complete_ns),
            ("controller.read_cmd_ns", c.read_cmd_ns),
            ("controller.write_cmd_ns", c.write_cmd_ns),
        ] {
            if v > MAX_NS {
                return Err(invalid(
                    o,
                    field,
                    format!("is {v}; it must be at most {MAX_NS} nanoseconds (10 s)"),
                ));
            }
        }
        if self.name.trim().is_empty() {
            return Err(invalid(
                o,
                "name",
                "is empty; give the profile a short name".into(),
            ));
        }
        let n = &self.nominal;
        positive("nominal.read_lat_qd1_ns", n.read_lat_qd1_ns, "nanoseconds")?;
        positive("nominal.read_iops", n.read_iops, "I/Os per second")?;
        positive(
            "nominal.write_lat_qd1_ns",
            n.write_lat_qd1_ns,
            "nanoseconds",
        )?;
        positive("nominal.write_iops", n.write_iops, "I/Os per second")?;
        positive("nominal.knee_qd", n.knee_qd as u64, "a queue depth")?;
        if let Some(b) = n.bandwidth_bytes {
            positive("nominal.bandwidth_bytes", b, "bytes per second")?;
        }
        self.arbitration.validate(o)?;
        let c = &self.controller;
        positive(
            "controller.max_outstanding",
            c.max_outstanding as u64,
            "commands the controller holds, e.g. 128",
        )?;
        if c.max_outstanding > 1 << 20 {
            return Err(invalid(
                o,
                "controller.max_outstanding",
                format!(
                    "is {}; at most 1048576 commands are supported",
                    c.max_outstanding
                ),
            ));
        }
        if c.sq_depth == 0 || c.sq_depth > 65536 {
            return Err(invalid(
                o,
                "controller.sq_depth",
                format!(
                    "is {}; a submission queue holds 1..=65536 entries (default 1024)",
                    c.sq_depth
                ),
            ));
        }
        let m = &self.media;
        positive(
            "media.units",
            m.units as u64,
            "the number of parallel units, e.g. channels × dies",
        )?;
        if m.units > 1 << 20 {
            return Err(invalid(
                o,
                "media.units",
                format!("is {}; at most 1048576 units are supported", m.units),
            ));
        }
        positive(
            "media.stripe_bytes",
            m.stripe_bytes as u64,
            "bytes, e.g. 4096",
        )?;
        positive(
            "media.read_ns",
            m.read_ns,
            "nanoseconds of unit time per read",
        )?;
        positive(
            "media.write_ns",
            m.write_ns,
            "nanoseconds of unit time per write",
        )?;
        positive(
            "media.unit_bandwidth_bytes",
            m.unit_bandwidth_bytes,
            "bytes per second",
        )?;
        positive(
            "media.bus_bandwidth_bytes",
            m.bus_bandwidth_bytes,
            "bytes per second",
        )?;
        if m.write_units == 0 || m.write_units > m.units || !m.units.is_multiple_of(m.write_units) {
            return Err(invalid(
                o,
                "media.write_units",
                format!(
                    "is {} with {} units; it must be a divisor of media.units (1 = a write occupies one unit, {} = the whole device)",
                    m.write_units, m.units, m.units
                ),
            ));
        }
        for (field, v) in [
            (
                "media.write_unit_bandwidth_bytes",
                m.write_unit_bandwidth_bytes,
            ),
            ("media.write_bus_bandwidth_bytes", m.write_bus_bandwidth_bytes),
        ] {
            if let Some(v) = v {
                positive(field, v, "bytes per second (omit it to use the read figure)")?;
            }
        }
        if let Some(w) = m.write_parallel_units {
            if w == 0 || w > m.units || !w.is_multiple_of(m.write_units) {
                return Err(invalid(
                    o,
                    "media.write_parallel_units",
                    format!(
                        "is {w} with {} units and write_units = {}; it must be in 1..={} and a multiple of media.write_units (omit it for all units)",
                        m.units, m.write_units, m.units
                    ),
                ));
            }
            if self.flash.is_some() && w != m.units {
                return Err(invalid(
                    o,
                    "media.write_parallel_units",
                    format!(
                        "is {w} but [flash] places writes on all {} dies; omit it or set it to media.units",
                        m.units
                    ),
                ));
            }
        }
        if m.write_units > 1 && self.write_buffer.is_some() {
            return Err(invalid(
                o,
                "media.write_units",
                format!(
                    "is {} but the profile has a write buffer, whose destage programs occupy one unit each; use 1, or remove [write_buffer]",
                    m.write_units
                ),
            ));
        }
        if let Some(g) = &m.geometry {
            positive("media.geometry.channels", g.channels as u64, "a count")?;
            positive(
                "media.geometry.chips_per_channel",
                g.chips_per_channel as u64,
                "a count",
            )?;
            positive(
                "media.geometry.dies_per_chip",
                g.dies_per_chip as u64,
                "a count",
            )?;
            positive(
                "media.geometry.planes_per_die",
                g.planes_per_die as u64,
                "a count",
            )?;
            let dies = g.channels as u64 * g.chips_per_channel as u64 * g.dies_per_chip as u64;
            if dies != m.units as u64 {
                return Err(invalid(
                    o,
                    "media.units",
                    format!(
                        "is {} but the geometry has {dies} dies (channels × chips_per_channel × dies_per_chip); make them agree",
                        m.units
                    ),
                ));
            }
        }
        if let Some(w) = &self.write_buffer {
            positive(
                "write_buffer.capacity_bytes",
                w.capacity_bytes,
                "bytes, e.g. 33554432",
            )?;
            positive(
                "write_buffer.ack_ns",
                w.ack_ns,
                "nanoseconds to buffer and acknowledge a write",
            )?;
            positive(
                "write_buffer.program_bytes",
                w.program_bytes as u64,
                "bytes written by one program, e.g. page × planes",
            )?;
        }
        if let Some(v) = &self.service {
            v.validate(o)?;
        }
        if let Some(f) = &self.flash {
            f.validate(
                o,
                m.units,
                self.write_buffer.is_some(),
                m.erase_ns.is_some(),
                m.write_placement == WritePlacement::RoundRobin,
                m.geometry.is_some(),
            )?;
        }
        Ok(())
    }
}

/// 1-based (line, column) of byte `pos` in `text`.
fn line_col(text: &str, pos: usize) -> (usize, usize) {
    let pos = pos.min(text.len());
    let before = &text.as_bytes()[..pos];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let col = pos
        - before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |p| p + 1)
        + 1;
    (line, col)
}

/// The longest time a profile may give (service, command, latency): 10 s.
const MAX_NS: u64 = 10_000_000_000;

/// The bound and unit of a profile number, by its field name.
fn max_of(field: &str) -> (u64, &'static str) {
    if field.ends_with("_ns") {
        (MAX_NS, "nanoseconds (10 s)")
    } else if field.contains("bandwidth") {
        (1_000_000_000_000, "bytes per second (1 TB/s)")
    } else if field.ends_with("iops") {
        (1_000_000_000, "I/Os per second")
    } else if field.ends_with("_bytes") {
        (1 << 40, "bytes (1 TiB)")
    } else {
        (1 << 20, "")
    }
}

#[cfg(test)]
mod tests {
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
