//! From measured anchors to the parameters of sluice's simulated NVMe SSD (the model of
//! `sluice-device`, see `docs/devices.md`): a [`DeviceProfile`] value ([`Model::to_profile`]),
//! written by serde with the derivation as a comment header ([`profile_text`]).
//!
//! ## The derivation
//!
//! The simulated device serves a command in stages: `fetch_ns` (latency only), a shared
//! front end occupied `max(cmd_ns, len / bus)` — or `cmd_ns + len / bus` with the
//! additive front end, or `max(cmd_ns + len / link, len / bus)` with the capped one
//! (`controller.front_end`, chosen from the size sweep: [`front`]) —
//! a media unit occupied
//! `read_ns | write_ns + piece / unit_bandwidth`, then `complete_ns` (latency only).
//! Its QD1 latency is the sum of the stages and its saturated IOPS is the rate of the
//! bottleneck stage. From the measured anchors — QD1 4 KB latency `L`, saturated 4 KB
//! IOPS `I`, saturated bandwidth `B`, the QD1 cost-model slope `c` (ns per byte) of
//! reads and writes — the parameters follow:
//!
//! Reads and writes are derived apart, each from its own anchors:
//!
//! * The front end's form ([`front::choose_front_end`]): `1 / IOPS` of each
//!   direction's size sweep at the knee depth is fitted by `a + b·len` and by
//!   `max(cmd, b·len)` and by `max(a + b·len, c·len)`; the additive front end when the
//!   line fits better, the capped one when it fits better than both by a margin.
//! * `bus_bandwidth = B_read`, `write_bus_bandwidth = B_write`: large requests are
//!   front-end (bus) bound, as measured. Additive: `bus = 1 / b`, the line's slope.
//!   Capped: `bus = 1 / c`, the ceiling, and `link = 1 / b`, the line's slope.
//! * `read_cmd = 1 s / I_read`, `write_cmd = 1 s / I_write`: small requests are
//!   command bound at the measured IOPS; with enough units the front end is the only
//!   bottleneck, so the model's IOPS against queue depth is `min(QD / L, I)` and its
//!   knee is near `I · L`. Additive: `cmd = a`, the line's intercept (at most
//!   `1 s / I − 4096 / bus`, so 4 KiB requests keep the measured IOPS as their
//!   ceiling), and the queue-depth fit keeps the front end's 4 KiB time `a + 4096 b`
//!   (its share of `1 / I` is measured, not fitted). A direction without a line (a
//!   buffered write) keeps the front end's 4 KiB time the max form would give it,
//!   `cmd` being that less the 4 KiB transfer. Capped: as additive, with the 4 KiB
//!   transfer over the link in place of the bus's.
//! * Per-byte time: a QD1 request of `s` bytes above `cmd · B` (any size, additive)
//!   spends `s / B` in the front end, so the unit gets the rest of the slope:
//!   `1 / unit_bandwidth = c_read − 1 / B_read`, and for in-place writes
//!   `1 / write_unit_bandwidth = c_write − 1 / B_write` (at least 1e-4 ns/B). Capped:
//!   the front end's chord from 4 to 128 KiB in place of `1 / B`.
//! * Latency-only time: the model cannot tell time spent in flight (fetch, completion,
//!   the host's system calls and interrupts) from time a unit is busy, as both only add
//!   to QD1 latency. `LATENCY_ONLY_SHARE` (10 %) of the smaller QD1 latency goes to each
//!   of `fetch_ns` and `complete_ns`; the rest is unit time:
//!   `read_ns = L_read − fetch − complete − front(4096) − 4096 / unit_bandwidth`, the
//!   front end's 4 KiB time `front(4096)` being `max(read_cmd, 4096 / B)` or, additive,
//!   `read_cmd + 4096 / B`, or, capped, `max(read_cmd + 4096 / link, 4096 / B)`.
//! * Writes: if they are much faster than reads at QD1 (`L_write < WRITE_BUFFER_RATIO ·
//!   L_read`, a device or host write cache), a write buffer: a write is acknowledged
//!   `ack_ns = L_write − fetch − complete − front(4096)` after the front end, and
//!   programs of 4 KiB destage it at the sustained rate, `write_ns = units / I_write −
//!   4096 / write_unit_bandwidth`, with the front end at twice the sustained rate; the
//!   buffer's size is the measured write-burst knee ([`crate::buffer`]), else
//!   `WRITE_BUFFER_BYTES` with a caveat. Otherwise in place like reads:
//!   `write_ns = L_write − fetch − complete − front(4096) − 4096 / write_unit_bandwidth`.
//! * `units` = enough that no unit is the bottleneck: `UNIT_HEADROOM` (3) times the
//!   busy units at the measured 4 KB IOPS and at the measured bandwidth, so random
//!   placement rarely queues two commands on one unit; `stripe_bytes` = 1 MiB, so a
//!   request up to 128 KB is one piece on one unit and its per-byte time is not split.
//!   With queue-depth curves, `units` is fitted to the read curve and the in-place
//!   writes' own parallelism (`write_parallel_units`) to the write curve
//!   ([`fit_shape`]).
//! * Arbitration round robin (a host-side device offers no NVMe WRR), 1024 controller
//!   slots (queue depth is the host's, not a device limit that was measured).
//!
//! * Spread ([`Model::with_spread`]): the `[service]` log-normal σ of reads and of
//!   writes is solved from each one's measured QD1 median and p99 so that the varied
//!   part of a request (reads: `read_ns`; writes: the front end, plus `write_ns` in
//!   place) reproduces `p99 − median`:
//!   `p99 − p50 = varied_ns · e^(−σ²/2) · (e^(2.326σ) − 1)` (bisection on σ ∈ [0, 2]).
//!
//! The tail at depth (`[service] tail_prob`, `tail_mean_ns`) and the read/write
//! interference (`media.read_block_after_write_ns`) are fitted afterwards by
//! simulating the grid's points ([`crate::simfit`]). Left out (not measurable from
//! outside, or not in the model): garbage collection, and the tail beyond p99 (a
//! 99.999 % figure needs far longer runs than the grid's windows).

use super::analysis::LinearFit;
use sluice_device::{
    Arbitration, Burst, Controller, DeviceProfile, FrontEnd, Media, Nominal, OpVariation,
    ServiceVariation, Transfer, WriteBuffer, WritePlacement,
};

mod derive;
mod fit;
pub mod front;
pub use derive::derive;
pub use fit::{fit_shape, fit_shape_with, fit_sigma, mva_iops, Shape};
pub use front::{choose_front_end, FrontChoice};

/// Fraction of the smaller QD1 latency given to each of `fetch_ns` and `complete_ns`.
pub const LATENCY_ONLY_SHARE: f64 = 0.1;
/// Writes faster than this fraction of the read latency at QD1 get a write buffer.
pub const WRITE_BUFFER_RATIO: f64 = 0.5;
/// Unit capacity over the busiest measured load.
pub const UNIT_HEADROOM: f64 = 3.0;
/// Stripe size of the derived profiles (1 MiB: a request up to 128 KB stays on one unit).
pub const STRIPE_BYTES: u32 = 1 << 20;
/// Write-buffer size of derived profiles with a buffer (not measured).
pub const WRITE_BUFFER_BYTES: u64 = 8 << 20;
/// Smallest stage time the derivation produces, ns.
pub(crate) const MIN_STAGE_NS: f64 = 100.0;
const SMALL: f64 = 4096.0;

/// The measured figures a profile is derived from (4 KB random I/O unless named).
#[derive(Clone, Debug, PartialEq)]
pub struct Anchors {
    /// Mean QD1 4 KB random read latency, ns.
    pub read_lat_qd1_ns: f64,
    /// Mean QD1 4 KB random write latency, ns.
    pub write_lat_qd1_ns: f64,
    /// Saturated 4 KB random read IOPS (best of the queue-depth sweep).
    pub read_iops: f64,
    /// Saturated 4 KB random write IOPS (steady state).
    pub write_iops: f64,
    /// Knee queue depth of reads.
    pub knee_qd: u32,
    /// Best random read bandwidth of the size sweep, bytes/s.
    pub read_bw_bytes: f64,
    /// Best random write bandwidth of the size sweep, bytes/s.
    pub write_bw_bytes: f64,
    /// QD1 read cost model (ns against bytes).
    pub read_fit: Option<LinearFit>,
    /// QD1 write cost model (ns against bytes).
    pub write_fit: Option<LinearFit>,
    /// 4 KB random read IOPS against queue depth.
    pub read_curve: Vec<(u32, f64)>,
    /// 4 KB random write IOPS against queue depth.
    pub write_curve: Vec<(u32, f64)>,
    /// Random read IOPS against request size (bytes) at the reads' knee depth (the
    /// size sweep; sizes below 4 KiB are not used): the front end's form.
    pub read_size_curve: Vec<(u32, f64)>,
    /// The same for writes at the writes' knee depth.
    pub write_size_curve: Vec<(u32, f64)>,
    /// Sizes of the reads' size sweep left out of `read_size_curve` because they did
    /// not settle (their windows disagree, so their figures mix states of the device;
    /// the fits that simulate leave such points out too), bytes.
    pub read_size_left_out: Vec<u32>,
    /// The same for writes.
    pub write_size_left_out: Vec<u32>,
    /// The measured write-buffer size, bytes (`None`: not measured or no knee found;
    /// a buffered profile then assumes [`WRITE_BUFFER_BYTES`]).
    pub write_buffer_bytes: Option<u64>,
}

/// A write buffer of a derived profile.
#[derive(Clone, Debug, PartialEq)]
pub struct BufferParams {
    /// `write_buffer.capacity_bytes`.
    pub capacity_bytes: u64,
    /// `write_buffer.ack_ns`.
    pub ack_ns: u64,
    /// `write_buffer.program_bytes`.
    pub program_bytes: u32,
}

/// Where commands meet the units: a structure of the device the grid decides
/// ([`Model::with_placement`]), since a device's layout is hidden.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Reads and writes on the unit their LBA stripes to (`write_placement = "lba"`):
    /// random commands collide on units while others idle — media written in place.
    Striped,
    /// Reads on the unit their LBA stripes to, writes on the next unit in turn
    /// (`write_placement = "round_robin"`): a flash FTL's write pointer, which
    /// places new data wherever it writes next, while a read must go where its data
    /// lives — so reads collide at depth and writes do not.
    WritePointer,
    /// One queue in front of interchangeable units (`media.pool`): a virtual disk
    /// whose host serves any request with any of its parallel resources.
    Pool,
}

impl Placement {
    /// Every structure, in the order the fit tries them.
    pub const ALL: [Placement; 3] = [Placement::Striped, Placement::WritePointer, Placement::Pool];

    /// The name in the header and the JSON file.
    pub fn name(self) -> &'static str {
        match self {
            Placement::Striped => "striped",
            Placement::WritePointer => "write_pointer",
            Placement::Pool => "pool",
        }
    }
}

/// The derived device parameters (the fields of a profile, by the profile's names).
#[derive(Clone, Debug, PartialEq)]
pub struct Model {
    /// The anchors, rounded, for `[nominal]`.
    pub anchors: Anchors,
    /// `controller.max_outstanding`.
    pub max_outstanding: u32,
    /// `controller.fetch_ns`.
    pub fetch_ns: u64,
    /// `controller.complete_ns`.
    pub complete_ns: u64,
    /// `controller.read_cmd_ns`.
    pub read_cmd_ns: u64,
    /// `controller.write_cmd_ns`.
    pub write_cmd_ns: u64,
    /// `controller.front_end`.
    pub front_end: FrontEnd,
    /// `controller.batch_ns` (`None`: no batches; set by the batch fit,
    /// [`Model::with_load`]).
    pub batch_ns: Option<u64>,
    /// The size-sweep fits that chose [`Model::front_end`].
    pub front_choice: FrontChoice,
    /// `media.units`.
    pub units: u32,
    /// `media.stripe_bytes`.
    pub stripe_bytes: u32,
    /// `media.read_ns`.
    pub read_ns: u64,
    /// `media.write_ns`.
    pub write_ns: u64,
    /// `media.unit_bandwidth_bytes`.
    pub unit_bandwidth_bytes: u64,
    /// `media.bus_bandwidth_bytes`.
    pub bus_bandwidth_bytes: u64,
    /// `media.write_unit_bandwidth_bytes` (`None`: the read figure).
    pub write_unit_bandwidth_bytes: Option<u64>,
    /// `media.write_bus_bandwidth_bytes` (`None`: the read figure).
    pub write_bus_bandwidth_bytes: Option<u64>,
    /// `media.link_bandwidth_bytes` (`Some` exactly with the capped front end).
    pub link_bandwidth_bytes: Option<u64>,
    /// `media.write_link_bandwidth_bytes` (`None`: the read figure).
    pub write_link_bandwidth_bytes: Option<u64>,
    /// `media.write_parallel_units` (`None`: all units).
    pub write_parallel_units: Option<u32>,
    /// `media.read_parallel_units` (`None`: all units).
    pub read_parallel_units: Option<u32>,
    /// `[write_buffer]`, when writes are buffered.
    pub write_buffer: Option<BufferParams>,
    /// `[service]`: the spread fitted by [`Model::with_spread`] and the tails fitted by
    /// [`Model::with_tails`], if any.
    pub service: Option<ServiceVariation>,
    /// `media.read_block_after_write_ns`, fitted by [`Model::with_read_block`] (`None`:
    /// off).
    pub read_block_after_write_ns: Option<u64>,
    /// Where commands meet the units (`media.pool`, `media.write_placement`), chosen by
    /// [`Model::with_placement`].
    pub placement: Placement,
    /// `media.read_load_exponent` and `media.write_load_exponent`, fitted by
    /// [`Model::with_load`] (`None`: off).
    pub read_load_exponent: Option<f64>,
    /// See [`Model::read_load_exponent`].
    pub write_load_exponent: Option<f64>,
    /// The fits that simulate the grid's points ([`crate::simfit`]), as run.
    pub sim_fits: Vec<crate::simfit::FitReport>,
    /// How each figure was derived, with the numbers (for the profile's header).
    pub derivation: Vec<String>,
    /// Where the model cannot follow the measurement (also in the header).
    pub caveats: Vec<String>,
}

pub(crate) fn round(x: f64) -> u64 {
    if x.is_finite() && x > 0.0 {
        x.round() as u64
    } else {
        0
    }
}

/// The profile as TOML: `header` lines as comments (when, where, how it was measured),
/// the derivation and the caveats, then the profile as serde writes it.
pub fn profile_text(
    profile: &DeviceProfile,
    model: &Model,
    header: &[String],
) -> Result<String, toml::ser::Error> {
    let mut t = String::new();
    let mut comment = |line: &str| {
        if line.is_empty() {
            t.push_str("#\n");
        } else {
            t.push_str("# ");
            t.push_str(line);
            t.push('\n');
        }
    };
    for line in header {
        comment(line);
    }
    comment("");
    comment("Derivation (sluice-calibrate model):");
    for line in &model.derivation {
        comment(&format!("  {line}"));
    }
    if !model.caveats.is_empty() {
        comment("Where the model cannot follow the measurement:");
        for line in &model.caveats {
            comment(&format!("  {line}"));
        }
    }
    t.push('\n');
    t.push_str(&toml::to_string(profile)?);
    Ok(t)
}

impl Model {
    /// The simulated device's profile: `[nominal]` from the anchors, round-robin
    /// arbitration, the derived controller, media and write buffer, the fitted spread.
    pub fn to_profile(&self, name: &str, description: &str) -> DeviceProfile {
        let a = &self.anchors;
        DeviceProfile {
            name: name.to_string(),
            description: description.to_string(),
            nominal: Nominal {
                read_lat_qd1_ns: round(a.read_lat_qd1_ns).max(1),
                read_iops: round(a.read_iops).max(1),
                write_lat_qd1_ns: round(a.write_lat_qd1_ns).max(1),
                write_iops: round(a.write_iops).max(1),
                knee_qd: a.knee_qd.max(1),
                bandwidth_bytes: Some(self.bus_bandwidth_bytes),
            },
            arbitration: Arbitration::rr(Burst::Limited(8)),
            controller: Controller {
                max_outstanding: self.max_outstanding,
                sq_depth: 1024,
                fetch_ns: self.fetch_ns,
                complete_ns: self.complete_ns,
                read_cmd_ns: self.read_cmd_ns,
                write_cmd_ns: self.write_cmd_ns,
                front_end: self.front_end,
                // The fitted closed forms are those of one command at a time.
                transfer: Transfer::Fifo,
                batch_ns: self.batch_ns,
                // Not measured (calibration times I/O; it does not read the device's
                // atomic write unit): the default.
                atomic_write_bytes: None,
            },
            media: Media {
                units: self.units,
                geometry: None,
                stripe_bytes: self.stripe_bytes,
                read_ns: self.read_ns,
                write_ns: self.write_ns,
                erase_ns: None,
                unit_bandwidth_bytes: self.unit_bandwidth_bytes,
                bus_bandwidth_bytes: self.bus_bandwidth_bytes,
                write_placement: if self.write_buffer.is_some()
                    || self.placement == Placement::WritePointer
                {
                    WritePlacement::RoundRobin
                } else {
                    WritePlacement::Lba
                },
                write_units: 1,
                pool: self.placement == Placement::Pool,
                read_load_exponent: self.read_load_exponent,
                write_load_exponent: self.write_load_exponent,
                write_unit_bandwidth_bytes: self.write_unit_bandwidth_bytes,
                write_bus_bandwidth_bytes: self.write_bus_bandwidth_bytes,
                link_bandwidth_bytes: self.link_bandwidth_bytes,
                write_link_bandwidth_bytes: self.write_link_bandwidth_bytes,
                write_parallel_units: self.write_parallel_units,
                read_parallel_units: self.read_parallel_units,
                read_block_after_write_ns: self.read_block_after_write_ns,
            },
            write_buffer: self.write_buffer.as_ref().map(|w| WriteBuffer {
                capacity_bytes: w.capacity_bytes,
                ack_ns: w.ack_ns,
                program_bytes: w.program_bytes,
                // Not measured: the profile default (a cache without power-loss
                // protection).
                volatile: true,
            }),
            service: self.service.clone(),
            flash: None,
            zoned: None,
        }
    }

    /// Add the spread of the measured QD1 latencies (`(median, p99)` of 4 KiB reads and
    /// writes, ns) as `[service]` σs (see the module docs). A write's varied stages are
    /// its front end (the simulator varies a write's front-end time with the write
    /// body) and, in place, its unit time: σ is fitted on their sum as if one
    /// log-normal (an approximation: two independent draws spread a little less). A
    /// buffered write's only varied stage on its path is the front end.
    pub fn with_spread(mut self, read: (f64, f64), write: (f64, f64)) -> Model {
        let xfer = SMALL * 1e9 / self.unit_bandwidth_bytes as f64;
        let r_media = self.read_ns as f64 + xfer;
        let sr = fit_sigma(read.1 - read.0, self.read_ns as f64);
        self.derivation.push(format!(
            "service.read.sigma = {sr:.3}: QD1 read p99 {:.1} µs − median {:.1} µs on read_ns {:.1} µs (media part {:.1} µs)",
            read.1 / 1e3,
            read.0 / 1e3,
            self.read_ns as f64 / 1e3,
            r_media / 1e3
        ));
        let front_w = self.front_ns(true, SMALL as u32);
        let (varied, what) = if self.write_buffer.is_some() {
            (front_w, "front end (buffered: no media time on the path)")
        } else {
            (front_w + self.write_ns as f64, "front end + write_ns")
        };
        let sw = fit_sigma(write.1 - write.0, varied);
        self.derivation.push(format!(
            "service.write.sigma = {sw:.3}: QD1 write p99 {:.1} µs − median {:.1} µs on the {what} {:.1} µs",
            write.1 / 1e3,
            write.0 / 1e3,
            varied / 1e3
        ));
        if sr > 0.0 || sw > 0.0 {
            let v = |sigma: f64| OpVariation {
                sigma: (sigma * 1000.0).round() / 1000.0,
                ..OpVariation::default()
            };
            self.service = Some(ServiceVariation {
                read: v(sr),
                write: v(sw),
            });
        }
        self
    }

    /// The (bus, unit) bandwidths of reads or writes, bytes/s.
    fn rates(&self, write: bool) -> (f64, f64) {
        if write {
            (
                self.write_bus_bandwidth_bytes
                    .unwrap_or(self.bus_bandwidth_bytes) as f64,
                self.write_unit_bandwidth_bytes
                    .unwrap_or(self.unit_bandwidth_bytes) as f64,
            )
        } else {
            (
                self.bus_bandwidth_bytes as f64,
                self.unit_bandwidth_bytes as f64,
            )
        }
    }

    /// The front end's time of one request of `len` bytes, ns: `max(cmd, len / bus)`,
    /// `cmd + len / bus` with the additive front end, or
    /// `max(cmd + len / link, len / bus)` with the capped one.
    pub fn front_ns(&self, write: bool, len: u32) -> f64 {
        let xfer = len as f64 * 1e9 / self.rates(write).0;
        let link = if write {
            self.write_link_bandwidth_bytes
                .or(self.link_bandwidth_bytes)
        } else {
            self.link_bandwidth_bytes
        };
        let link_ns = link.map_or(0.0, |l| len as f64 * 1e9 / l as f64);
        let cmd = if write {
            self.write_cmd_ns
        } else {
            self.read_cmd_ns
        } as f64;
        self.front_end.combine_f64(cmd, xfer, link_ns)
    }

    /// The model's QD1 latency of one request of `len` bytes (no queueing), ns: the sum
    /// of its stages (the front end's as [`Model::front_ns`]).
    pub fn qd1_latency_ns(&self, write: bool, len: u32) -> f64 {
        let front = self.front_ns(write, len);
        let unit = len as f64 * 1e9 / self.rates(write).1;
        // A command alone is a batch of its own (`controller.batch_ns`).
        let lat = (self.fetch_ns + self.complete_ns + self.batch_ns.unwrap_or(0)) as f64;
        match (write, &self.write_buffer) {
            (false, _) => lat + front + self.read_ns as f64 + unit,
            (true, Some(w)) => lat + front + w.ack_ns as f64,
            (true, None) => lat + front + self.write_ns as f64 + unit,
        }
    }

    /// The model's saturated IOPS of `len`-byte requests when the front end is the
    /// bottleneck (the derivation gives the units headroom so that it is):
    /// `1 / max(cmd, len / bus)`, `1 / (cmd + len / bus)` with the additive front end,
    /// or `1 / max(cmd + len / link, len / bus)` with the capped one.
    pub fn saturated_iops(&self, write: bool, len: u32) -> f64 {
        1e9 / self.front_ns(write, len)
    }
}

#[cfg(test)]
mod tests;
