//! The `[flash]` section of a profile and its checks.

use super::{Geometry, NONE};
use crate::profile::ProfileError;
use serde::{Deserialize, Serialize};

/// The `[flash]` section: flash management for profiles that opt in (needs a
/// `[write_buffer]`, `media.erase_ns`, `write_placement = "round_robin"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlashConfig {
    /// Size of the simulated logical space, bytes (a multiple of `map_bytes`; offsets
    /// wrap modulo it). The mapping table is sized by it.
    pub logical_bytes: u64,
    /// Mapping unit, bytes (4096: the usual 4 KiB page-level map).
    #[serde(default = "default_map_bytes")]
    pub map_bytes: u32,
    /// Mapping units per erase block (pages per block × page / map_bytes).
    pub block_units: u32,
    /// Spare physical space as a fraction of the logical space (0.07 = 7 %).
    pub over_provisioning: f64,
    /// Garbage collection runs on a die while it has fewer free blocks than this.
    #[serde(default = "default_gc_free_blocks")]
    pub gc_free_blocks: u32,
    /// Start as after a sequential fill of the whole logical space (default true).
    #[serde(default = "yes")]
    pub precondition: bool,
    /// The dies of a channel share its bus (`media.geometry.channels` buses, unit `u` on
    /// channel `u mod channels`; default true).
    #[serde(default = "yes")]
    pub channel_bus: bool,
    /// Reads whose data is still in the write buffer are served from DRAM (default
    /// true).
    #[serde(default = "yes")]
    pub buffer_reads: bool,
    /// NVMe Flexible Data Placement: the reclaim unit handles (write points per die)
    /// the device offers, 1..=128; 0 (the default): no FDP, one write point per die.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub fdp_ruhs: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// The most reclaim unit handles a profile may offer: fio's limit on placement IDs
/// (`FIO_MAX_DP_IDS`), and what a request's one-byte placement field holds.
pub const MAX_RUHS: u32 = 128;

fn default_map_bytes() -> u32 {
    4096
}
fn default_gc_free_blocks() -> u32 {
    2
}
fn yes() -> bool {
    true
}

/// The largest logical space a profile may simulate: 64 GiB (≈ 150 MiB of tables at
/// 4 KiB units).
const MAX_LOGICAL_BYTES: u64 = 64 << 30;

/// The most the FTL's tables may take, bytes (512 MiB): the forward and reverse maps
/// (4 B per logical and per physical unit), the buffered counts (1 B per logical unit)
/// and per erase block its valid count and free-stack entry (8 B). The shipped `nand`
/// takes ≈ 19 MiB.
pub const MAX_TABLE_BYTES: u64 = 512 << 20;

impl FlashConfig {
    /// Check the ranges and what `[flash]` needs from the rest of the profile.
    pub(crate) fn validate(
        &self,
        origin: &str,
        media: &crate::profile::Media,
        has_buffer: bool,
    ) -> Result<(), ProfileError> {
        let units = media.units;
        let has_erase = media.erase_ns.is_some();
        let round_robin = media.write_placement == crate::profile::WritePlacement::RoundRobin;
        let has_geometry = media.geometry.is_some();
        let stripe_bytes = media.stripe_bytes;
        let bad = |field: &str, problem: String| ProfileError::Invalid {
            origin: origin.to_string(),
            field: field.to_string(),
            problem,
        };
        if !has_buffer {
            return Err(bad("flash", "needs a [write_buffer] section: host writes reach flash through its destage programs".into()));
        }
        if !has_erase {
            return Err(bad(
                "media.erase_ns",
                "is missing; [flash] needs the block erase time".into(),
            ));
        }
        if !round_robin {
            return Err(bad(
                "media.write_placement",
                "must be \"round_robin\" with [flash] (the FTL writes out of place)".into(),
            ));
        }
        if self.channel_bus && !has_geometry {
            return Err(bad("flash.channel_bus", "is true but the profile has no [media.geometry] giving the channels; add it or set channel_bus = false".into()));
        }
        if self.map_bytes < 512 || !self.map_bytes.is_power_of_two() {
            return Err(bad(
                "flash.map_bytes",
                format!(
                    "is {}; use a power of two of at least 512 (4096 is usual)",
                    self.map_bytes
                ),
            ));
        }
        let m = self.map_bytes as u64;
        if self.logical_bytes == 0
            || self.logical_bytes > MAX_LOGICAL_BYTES
            || !self.logical_bytes.is_multiple_of(m)
        {
            return Err(bad(
                "flash.logical_bytes",
                format!(
                    "is {}; give a multiple of map_bytes ({m}) up to {MAX_LOGICAL_BYTES} (64 GiB), e.g. 8589934592",
                    self.logical_bytes
                ),
            ));
        }
        if self.block_units == 0 || self.block_units > 1 << 16 {
            return Err(bad(
                "flash.block_units",
                format!(
                    "is {}; give the mapping units per erase block, 1..=65536 (e.g. 256 pages of 8 KiB / 4 KiB = 512)",
                    self.block_units
                ),
            ));
        }
        if !(0.0..=1.0).contains(&self.over_provisioning) {
            return Err(bad(
                "flash.over_provisioning",
                format!(
                    "is {}; give the spare fraction in 0..=1 (0.07 = 7 %)",
                    self.over_provisioning
                ),
            ));
        }
        if self.fdp_ruhs > MAX_RUHS {
            return Err(bad(
                "flash.fdp_ruhs",
                format!(
                    "is {}; give 1..={MAX_RUHS} reclaim unit handles (0 or absent: no FDP)",
                    self.fdp_ruhs
                ),
            ));
        }
        if self.gc_free_blocks == 0 {
            return Err(bad(
                "flash.gc_free_blocks",
                "is 0; garbage collection needs at least one free block (2 is usual)".into(),
            ));
        }
        let g = Geometry::of(self, units);
        let blocks = g.blocks_per_die as u64 * units as u64;
        let ppns = blocks * self.block_units as u64;
        let table = 4 * g.lpns + 4 * ppns + g.lpns + 8 * blocks;
        if table > MAX_TABLE_BYTES || ppns >= NONE as u64 {
            return Err(bad(
                "flash.map_bytes",
                format!(
                    "{} with logical_bytes = {}, over_provisioning = {} and block_units = {} \
                     gives {} MiB of mapping tables ({ppns} physical units); the limit is \
                     {} MiB: raise map_bytes or block_units, or lower logical_bytes",
                    self.map_bytes,
                    self.logical_bytes,
                    self.over_provisioning,
                    self.block_units,
                    table >> 20,
                    MAX_TABLE_BYTES >> 20
                ),
            ));
        }
        let spare = g.blocks_per_die as u64 * units as u64 * self.block_units as u64 - g.lpns;
        // Every handle's open block may be part full, besides GC's free blocks.
        let open = self.fdp_ruhs.max(1) as u64;
        let need = (self.gc_free_blocks as u64 + 1 + open) * units as u64 * self.block_units as u64;
        if spare < need {
            let what = if self.fdp_ruhs > 1 {
                "(gc_free_blocks + 1 + fdp_ruhs)"
            } else {
                "(gc_free_blocks + 2)"
            };
            return Err(bad(
                "flash.over_provisioning",
                format!(
                    "is {} but leaves {spare} spare mapping units; garbage collection needs at least {what} blocks per die = {need}: raise it, or logical_bytes, or lower block_units{}",
                    self.over_provisioning,
                    if self.fdp_ruhs > 1 { " or fdp_ruhs" } else { "" }
                ),
            ));
        }
        if self.precondition {
            // The fill places `media.stripe_bytes` of consecutive units per die in turn
            // (as LBA striping): with stripes large against the logical space, the
            // first dies get more than their share, and each die needs its own spare.
            let per = (stripe_bytes / self.map_bytes).max(1) as u64;
            let stripes = g.lpns.div_ceil(per);
            let busiest = (stripes.div_ceil(units as u64) * per).min(g.lpns);
            let room = g.blocks_per_die as u64 * self.block_units as u64;
            let need = (self.gc_free_blocks as u64 + 1 + open) * self.block_units as u64;
            if busiest + need > room {
                return Err(bad(
                    "media.stripe_bytes",
                    format!(
                        "is {stripe_bytes}: a preconditioned fill of {} bytes in stripes of \
                         that size over {units} units puts {busiest} mapping units on the \
                         first die, which holds {room} and needs {need} of them spare for \
                         garbage collection; lower stripe_bytes (a page, e.g. 8192), raise \
                         logical_bytes or over_provisioning, or set precondition = false",
                        self.logical_bytes
                    ),
                ));
            }
        }
        Ok(())
    }
}
