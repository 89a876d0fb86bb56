//! From measured anchors to the parameters of sluice's simulated NVMe SSD (the model of
//! `sluice-device`, see `docs/devices.md`): a [`DeviceProfile`] value ([`Model::to_profile`]),
//! written by serde with the derivation as a comment header ([`profile_text`]).
//!
//! ## The derivation
//!
//! The simulated device serves a command in stages: `fetch_ns` (latency only), a shared
//! front end occupied `max(cmd_ns, len / bus)`, a media unit occupied
//! `read_ns | write_ns + piece / unit_bandwidth`, then `complete_ns` (latency only).
//! Its QD1 latency is the sum of the stages and its saturated IOPS is the rate of the
//! bottleneck stage. From the measured anchors — QD1 4 KB latency `L`, saturated 4 KB
//! IOPS `I`, saturated bandwidth `B`, the QD1 cost-model slope `c` (ns per byte) of
//! reads and writes — the parameters follow:
//!
//! * `bus_bandwidth = B` (the larger of the read and write bandwidths): large requests
//!   are front-end (bus) bound, as measured.
//! * `read_cmd = 1 s / I_read`, `write_cmd = 1 s / I_write`: small requests are
//!   command bound at the measured IOPS; with enough units the front end is the only
//!   bottleneck, so the model's IOPS against queue depth is `min(QD / L, I)` and its
//!   knee is near `I · L`.
//! * Per-byte time: a QD1 request of `s` bytes above `cmd · B` spends `s / B` in the
//!   front end, so the unit gets the rest of the read slope:
//!   `1 / unit_bandwidth = c_read − 1 / B` (at least 1e-4 ns/B).
//! * Latency-only time: the model cannot tell time spent in flight (fetch, completion,
//!   the host's system calls and interrupts) from time a unit is busy, as both only add
//!   to QD1 latency. `LATENCY_ONLY_SHARE` (10 %) of the smaller QD1 latency goes to each
//!   of `fetch_ns` and `complete_ns`; the rest is unit time:
//!   `read_ns = L_read − fetch − complete − read_cmd − 4096 / unit_bandwidth`.
//! * Writes: if they are much faster than reads at QD1 (`L_write < WRITE_BUFFER_RATIO ·
//!   L_read`, a device or host write cache), a write buffer: a write is acknowledged
//!   `ack_ns = L_write − fetch − complete − write_cmd` after the front end, and
//!   programs of 4 KiB destage it at the sustained rate, `write_ns = units / I_write −
//!   4096 / unit_bandwidth`, with the front end at twice the sustained rate. Otherwise
//!   in place like reads: `write_ns = L_write − fetch − complete − write_cmd − 4096 /
//!   unit_bandwidth`.
//! * `units` = enough that no unit is the bottleneck: `UNIT_HEADROOM` (3) times the
//!   busy units at the measured 4 KB IOPS and at the measured bandwidth, so random
//!   placement rarely queues two commands on one unit; `stripe_bytes` = 1 MiB, so a
//!   request up to 128 KB is one piece on one unit and its per-byte time is not split.
//! * Arbitration round robin (a host-side device offers no NVMe WRR), 1024 controller
//!   slots (queue depth is the host's, not a device limit that was measured).
//!
//! * Spread ([`Model::with_spread`]): the `[service]` log-normal σ of reads (and of
//!   in-place writes) is solved from the measured QD1 median and p99 so that the media
//!   part of a request reproduces `p99 − median`:
//!   `p99 − p50 = media_ns · e^(−σ²/2) · (e^(2.326σ) − 1)` (bisection on σ ∈ [0, 2]).
//!
//! Left out (not measurable from outside, or not in the model): the write-buffer size
//! (set to 8 MiB: the device's cache is not measured), garbage collection, the rare
//! tail (a 99.999 % figure needs far longer runs than the grid's windows), and separate
//! read and write buses and parallelism (the device model has one of each).

use super::analysis::LinearFit;
use sluice_device::{
    Arbitration, Burst, Controller, DeviceProfile, Media, Nominal, OpVariation, ServiceVariation,
    WriteBuffer, WritePlacement,
};

mod fit;
pub use fit::{fit_shape, fit_sigma, mva_iops, Shape};

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
const MIN_STAGE_NS: f64 = 100.0;
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
    /// `media.write_parallel_units` (`None`: all units).
    pub write_parallel_units: Option<u32>,
    /// `[write_buffer]`, when writes are buffered.
    pub write_buffer: Option<BufferParams>,
    /// `[service]`: the spread fitted by [`Model::with_spread`], if any.
    pub service: Option<ServiceVariation>,
    /// How each figure was derived, with the numbers (for the profile's header).
    pub derivation: Vec<String>,
    /// Where the model cannot follow the measurement (also in the header).
    pub caveats: Vec<String>,
}

fn round(x: f64) -> u64 {
    if x.is_finite() && x > 0.0 {
        x.round() as u64
    } else {
        0
    }
}

/// Derive the device parameters from measured anchors (see the module doc). Every
/// figure is clamped into the profile's valid range, so the result always validates;
/// where a clamp changes what the model reproduces, `caveats` says so.
pub fn derive(a: &Anchors) -> Model {
    let mut caveats = Vec::new();
    let mut d = Vec::new();
    let lr = a.read_lat_qd1_ns.max(1000.0);
    let lw = a.write_lat_qd1_ns.max(1000.0);
    let ir = a.read_iops.max(1.0);
    let iw = a.write_iops.max(1.0);

    // Bus: the best bandwidth, at least what 4 KB requests move at their IOPS.
    let b_meas = a.read_bw_bytes.max(a.write_bw_bytes);
    let bus = b_meas.max(SMALL * ir.max(iw) * 1.01);
    if bus > b_meas * 1.001 {
        caveats.push(format!(
            "bus bandwidth raised from the measured {:.0} MB/s to {:.0} MB/s so that 4 KB requests are command bound",
            b_meas / 1e6,
            bus / 1e6
        ));
    }
    let ns_per_byte_bus = 1e9 / bus;
    d.push(format!(
        "bus_bandwidth = best measured bandwidth = {:.1} MB/s",
        bus / 1e6
    ));

    // Per-byte unit time from the read slope.
    let c_read = a.read_fit.map_or(0.0, |f| f.slope);
    let u = (c_read - ns_per_byte_bus).max(1e-4);
    // At most the profile bound (1 TB/s) so the profile validates.
    let unit_bw = (1e9 / u).min(1e12);
    let t_small = SMALL * 1e9 / unit_bw;
    d.push(format!(
        "1 / unit_bandwidth = read cost slope {:.4} ns/B − 1 / bus {:.4} ns/B = {:.4} ns/B ({:.1} MB/s)",
        c_read,
        ns_per_byte_bus,
        u,
        unit_bw / 1e6
    ));

    let mut read_cmd = 1e9 / ir;
    let front_r = read_cmd.max(SMALL * ns_per_byte_bus);
    d.push(format!("read_cmd = 1 s / {ir:.0} IOPS = {read_cmd:.0} ns"));
    let buffered = lw < WRITE_BUFFER_RATIO * lr;
    let write_cmd = if buffered {
        (0.5e9 / iw).min(0.5 * lw)
    } else {
        1e9 / iw
    };
    let front_w = write_cmd.max(SMALL * ns_per_byte_bus);
    d.push(if buffered {
        format!(
            "writes at QD1 ({:.1} µs) are under {:.0} % of reads ({:.1} µs): buffered; write_cmd = min(0.5 s / {iw:.0} IOPS, L_write / 2) = {write_cmd:.0} ns",
            lw / 1e3,
            WRITE_BUFFER_RATIO * 100.0,
            lr / 1e3
        )
    } else {
        format!("write_cmd = 1 s / {iw:.0} IOPS = {write_cmd:.0} ns (writes in place)")
    });

    // The shape of the queue-depth curves: units, latency-only time and front-end
    // share fitted by mean-value analysis (see `fit_shape`); without curves, a front
    // end capped at the measured IOPS over units with headroom.
    let read_unit_min = t_small + MIN_STAGE_NS;
    let shape = fit_shape(a, buffered, read_unit_min);
    let (f, kr, kw, fitted_units) = match &shape {
        Some(sh) => {
            d.push(format!(
                "queue-depth curves fitted by mean-value analysis (rms error {:.1} % of IOPS over {} points): {} units, fetch = complete = {:.0} ns, read_cmd = {:.2} / IOPS, write_cmd = {:.2} / IOPS",
                sh.rms_pct, sh.points, sh.units, sh.fetch_ns, sh.read_cmd_share, sh.write_cmd_share
            ));
            (
                sh.fetch_ns,
                sh.read_cmd_share,
                sh.write_cmd_share,
                Some(sh.units),
            )
        }
        None => {
            let slack_r = lr - front_r - t_small - MIN_STAGE_NS;
            let slack_w = if buffered {
                lw - front_w - MIN_STAGE_NS
            } else {
                lw - front_w - t_small - MIN_STAGE_NS
            };
            let f = (LATENCY_ONLY_SHARE * lr.min(lw))
                .min(slack_r / 2.0)
                .min(slack_w / 2.0)
                .max(0.0);
            d.push(format!(
                "no queue-depth curve to fit: fetch = complete = {f:.0} ns (latency only), front end at the measured IOPS"
            ));
            (f, 1.0, 1.0, None)
        }
    };
    read_cmd *= kr;
    let front_r = read_cmd.max(SMALL * ns_per_byte_bus);
    let write_cmd = write_cmd * kw;
    let front_w = write_cmd.max(SMALL * ns_per_byte_bus);
    // Both QD1 latencies must hold the latency-only time (a buffered write's too).
    let room_w = if buffered {
        lw - front_w
    } else {
        lw - front_w - t_small
    };
    let f = f
        .min((lr - front_r - t_small - MIN_STAGE_NS) / 2.0)
        .min((room_w - MIN_STAGE_NS) / 2.0)
        .max(0.0);
    d.push(format!("fetch = complete = {f:.0} ns (latency only); read_cmd = {read_cmd:.0} ns; write_cmd = {write_cmd:.0} ns"));

    let mut read_ns = lr - 2.0 * f - front_r - t_small;
    if read_ns < MIN_STAGE_NS {
        // QD1 already saturates the device (L · I ≈ 1): the front end takes it all.
        read_ns = MIN_STAGE_NS;
        read_cmd = (lr - 2.0 * f - t_small - MIN_STAGE_NS).max(MIN_STAGE_NS);
        caveats.push(format!(
            "QD1 read latency {:.1} µs leaves no unit time beside 1 s / IOPS: read_cmd lowered to {read_cmd:.0} ns (the model's saturated read IOPS is {:.0})",
            lr / 1e3,
            1e9 / read_cmd
        ));
    }
    d.push(format!(
        "read_ns = L_read {lr:.0} − 2·{f:.0} − front {front_r:.0} − 4096 B unit transfer {t_small:.0} = {read_ns:.0} ns"
    ));

    // Units: fitted, or headroom over the busiest load (4 KB reads at I, large reads at B).
    let busy_small_r = ir * (read_ns + t_small) / 1e9;
    let big = 131072.0;
    let busy_big_r = a.read_bw_bytes / big * (read_ns + big * u) / 1e9;
    let mut busy = busy_small_r.max(busy_big_r);
    let mut write_ns;
    let mut write_cmd = write_cmd;
    let write_buffer;
    if buffered {
        let mut ack = lw - 2.0 * f - front_w;
        if ack < MIN_STAGE_NS {
            ack = MIN_STAGE_NS;
            caveats.push(format!(
                "QD1 write latency {:.1} µs leaves no acknowledgement time: ack_ns = {MIN_STAGE_NS:.0}",
                lw / 1e3
            ));
        }
        d.push(format!(
            "ack_ns = L_write {lw:.0} − 2·{f:.0} − front {front_w:.0} = {ack:.0} ns; 4 KiB programs destage at {iw:.0} IOPS over the units (write_ns below)"
        ));
        write_ns = 0.0; // set once the units are known
        write_buffer = Some(BufferParams {
            capacity_bytes: WRITE_BUFFER_BYTES,
            ack_ns: round(ack),
            program_bytes: SMALL as u32,
        });
    } else {
        write_ns = lw - 2.0 * f - front_w - t_small;
        if write_ns < MIN_STAGE_NS {
            write_ns = MIN_STAGE_NS;
            write_cmd = (lw - 2.0 * f - t_small - MIN_STAGE_NS).max(MIN_STAGE_NS);
            caveats.push(format!(
                "QD1 write latency {:.1} µs leaves no unit time beside 1 s / IOPS: write_cmd lowered to {write_cmd:.0} ns (the model's saturated write IOPS is {:.0})",
                lw / 1e3,
                1e9 / write_cmd
            ));
        }
        d.push(format!(
            "write_ns = L_write {lw:.0} − 2·{f:.0} − front {front_w:.0} − {t_small:.0} = {write_ns:.0} ns"
        ));
        let busy_small_w = iw * (write_ns + t_small) / 1e9;
        let busy_big_w = a.write_bw_bytes / big * (write_ns + big * u) / 1e9;
        busy = busy.max(busy_small_w).max(busy_big_w);
        write_buffer = None;
    }
    // With a buffer, programs of 4 KiB must be able to destage I_write with room.
    let destage_min = if write_buffer.is_some() {
        (2.0 * iw * (t_small + MIN_STAGE_NS) / 1e9)
            .ceil()
            .clamp(1.0, 4096.0) as u32
    } else {
        1
    };
    let units = match fitted_units {
        Some(n) => {
            let n = n.max(destage_min);
            d.push(format!("units = {n} (fitted)"));
            n
        }
        None => {
            let n = ((UNIT_HEADROOM * busy).ceil().clamp(1.0, 4096.0) as u32).max(destage_min);
            d.push(format!(
                "units = ⌈{UNIT_HEADROOM} × {busy:.2} busy units at the measured IOPS and bandwidth⌉ = {n}"
            ));
            n
        }
    };
    if write_buffer.is_some() {
        write_ns = (units as f64 * 1e9 / iw - t_small).max(MIN_STAGE_NS);
        d.push(format!(
            "write_ns = {units} units / {iw:.0} IOPS − {t_small:.0} = {write_ns:.0} ns per 4 KiB program"
        ));
    }

    if let Some(wf) = a.write_fit {
        let model_slope = if buffered {
            ns_per_byte_bus
        } else {
            ns_per_byte_bus + u
        };
        if (wf.slope - model_slope).abs() > 0.25 * wf.slope.abs().max(model_slope) {
            caveats.push(format!(
                "the write cost slope ({:.4} ns/B) differs from the model's ({model_slope:.4} ns/B, shared with reads): large-write QD1 latency is off by up to {:.0} µs at 128 KB",
                wf.slope,
                (wf.slope - model_slope).abs() * big / 1e3
            ));
        }
    }
    if a.write_bw_bytes > 0.0 && a.read_bw_bytes > 0.0 {
        let ratio = a.write_bw_bytes / a.read_bw_bytes;
        if !(0.8..=1.25).contains(&ratio) {
            caveats.push(format!(
                "read and write bandwidths differ ({:.0} vs {:.0} MB/s) but the model has one bus: the smaller is over-estimated",
                a.read_bw_bytes / 1e6,
                a.write_bw_bytes / 1e6
            ));
        }
    }

    let mut anchors = a.clone();
    anchors.read_lat_qd1_ns = lr.round();
    anchors.write_lat_qd1_ns = lw.round();
    anchors.read_iops = ir.round();
    anchors.write_iops = iw.round();
    Model {
        service: None,
        anchors,
        max_outstanding: 1024,
        fetch_ns: round(f),
        complete_ns: round(f),
        read_cmd_ns: round(read_cmd).max(1),
        write_cmd_ns: round(write_cmd).max(1),
        units,
        stripe_bytes: STRIPE_BYTES,
        read_ns: round(read_ns).max(1),
        write_ns: round(write_ns).max(1),
        unit_bandwidth_bytes: round(unit_bw).max(1),
        bus_bandwidth_bytes: round(bus).max(1),
        write_unit_bandwidth_bytes: None,
        write_bus_bandwidth_bytes: None,
        write_parallel_units: None,
        write_buffer,
        derivation: d,
        caveats,
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
                write_placement: if self.write_buffer.is_some() {
                    WritePlacement::RoundRobin
                } else {
                    WritePlacement::Lba
                },
                write_units: 1,
                write_unit_bandwidth_bytes: self.write_unit_bandwidth_bytes,
                write_bus_bandwidth_bytes: self.write_bus_bandwidth_bytes,
                write_parallel_units: self.write_parallel_units,
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
        }
    }

    /// Add the spread of the measured QD1 latencies (`(median, p99)` of 4 KiB reads and
    /// writes, ns) as `[service]` σs (see the module docs). Writes into a buffer are
    /// acknowledged before any media time, so their spread cannot be put on the media:
    /// a caveat says so.
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
        let sw = if self.write_buffer.is_some() {
            self.caveats.push(format!(
                "QD1 write spread (p99 {:.1} µs, median {:.1} µs) not reproduced: buffered writes complete before any media time",
                write.1 / 1e3,
                write.0 / 1e3
            ));
            0.0
        } else {
            let s = fit_sigma(write.1 - write.0, self.write_ns as f64);
            self.derivation.push(format!(
                "service.write.sigma = {s:.3}: QD1 write p99 {:.1} µs − median {:.1} µs on write_ns {:.1} µs",
                write.1 / 1e3,
                write.0 / 1e3,
                self.write_ns as f64 / 1e3
            ));
            s
        };
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

    /// The model's QD1 latency of one request of `len` bytes (no queueing), ns: the sum
    /// of its stages.
    pub fn qd1_latency_ns(&self, write: bool, len: u32) -> f64 {
        let len = len as f64;
        let xfer = len * 1e9 / self.bus_bandwidth_bytes as f64;
        let unit = len * 1e9 / self.unit_bandwidth_bytes as f64;
        let lat = (self.fetch_ns + self.complete_ns) as f64;
        match (write, &self.write_buffer) {
            (false, _) => lat + (self.read_cmd_ns as f64).max(xfer) + self.read_ns as f64 + unit,
            (true, Some(w)) => lat + (self.write_cmd_ns as f64).max(xfer) + w.ack_ns as f64,
            (true, None) => {
                lat + (self.write_cmd_ns as f64).max(xfer) + self.write_ns as f64 + unit
            }
        }
    }

    /// The model's saturated IOPS of `len`-byte requests when the front end is the
    /// bottleneck (the derivation gives the units headroom so that it is).
    pub fn saturated_iops(&self, write: bool, len: u32) -> f64 {
        let xfer = len as f64 * 1e9 / self.bus_bandwidth_bytes as f64;
        let cmd = if write {
            self.write_cmd_ns
        } else {
            self.read_cmd_ns
        } as f64;
        1e9 / cmd.max(xfer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn anchors() -> Anchors {
        Anchors {
            read_lat_qd1_ns: 100_000.0,
            write_lat_qd1_ns: 80_000.0,
            read_iops: 60_000.0,
            write_iops: 45_000.0,
            knee_qd: 8,
            read_bw_bytes: 1.0e9,
            write_bw_bytes: 0.9e9,
            read_fit: Some(LinearFit {
                offset: 96_000.0,
                slope: 1.5,
                r2: 0.99,
                n: 6,
            }),
            write_fit: Some(LinearFit {
                offset: 76_000.0,
                slope: 1.6,
                r2: 0.98,
                n: 6,
            }),
            read_curve: Vec::new(),
            write_curve: Vec::new(),
        }
    }

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs()
    }

    #[test]
    fn the_model_reproduces_its_anchors() {
        let a = anchors();
        let m = derive(&a);
        assert!(m.write_buffer.is_none(), "80 µs is not < 50 % of 100 µs");
        assert!(
            close(m.qd1_latency_ns(false, 4096), 100_000.0, 0.01),
            "{m:?}"
        );
        assert!(close(m.qd1_latency_ns(true, 4096), 80_000.0, 0.01), "{m:?}");
        assert!(close(m.saturated_iops(false, 4096), 60_000.0, 0.01));
        assert!(close(m.saturated_iops(true, 4096), 45_000.0, 0.01));
        assert_eq!(m.bus_bandwidth_bytes, 1_000_000_000);
        // The QD1 slope at large sizes is the read cost slope.
        let slope = (m.qd1_latency_ns(false, 131072) - m.qd1_latency_ns(false, 65536)) / 65536.0;
        assert!(close(slope, 1.5, 0.01), "{slope}");
        // Units: 3 × the busiest load; at least one unit per command in flight at the
        // knee would be busy otherwise.
        let busy =
            60_000.0 * (m.read_ns as f64 + 4096.0 * 1e9 / m.unit_bandwidth_bytes as f64) / 1e9;
        assert!(m.units as f64 >= 3.0 * busy - 1.0, "{} vs {busy}", m.units);
        assert_eq!(m.fetch_ns, 8_000);
        assert!(m.caveats.is_empty(), "{:?}", m.caveats);
    }

    #[test]
    fn fast_writes_get_a_buffer() {
        let mut a = anchors();
        a.write_lat_qd1_ns = 20_000.0;
        a.write_iops = 30_000.0;
        let m = derive(&a);
        let w = m.write_buffer.as_ref().expect("buffered");
        assert!(close(m.qd1_latency_ns(true, 4096), 20_000.0, 0.01), "{m:?}");
        assert!(w.ack_ns > 0);
        // Sustained = units programs of 4 KiB at write_ns + transfer each.
        let per = m.write_ns as f64 + 4096.0 * 1e9 / m.unit_bandwidth_bytes as f64;
        let sustained = m.units as f64 * 1e9 / per;
        assert!(close(sustained, 30_000.0, 0.01), "{sustained} {m:?}");
        assert!(m.saturated_iops(true, 4096) > 30_000.0 * 1.9);
    }

    #[test]
    fn degenerate_measurements_are_clamped_with_a_caveat() {
        // QD1 latency × IOPS < 1 cannot be (IOPS at QD1 ≥ 1 / latency); the clamps keep
        // every stage positive and say what was changed.
        let mut a = anchors();
        a.read_iops = 5_000.0; // 200 µs per command, more than the 100 µs latency
        a.read_fit = None;
        a.write_fit = None;
        let m = derive(&a);
        assert!(m.read_ns >= 100 && m.read_cmd_ns < 100_000, "{m:?}");
        assert!(!m.caveats.is_empty());
        let p = m.to_profile("x", "y \"quoted\"");
        let toml = profile_text(&p, &m, &["line one".into(), String::new()]).unwrap();
        assert!(toml.starts_with("# line one\n#\n"), "{toml}");
        assert!(toml.contains("[nominal]") && toml.contains("[media]"));
        // serde quotes the description; the text loads back as the same profile.
        let back = DeviceProfile::from_toml_str(&toml, "x").unwrap();
        assert_eq!(back, p);
        assert_eq!(back.description, "y \"quoted\"");
    }

    #[test]
    fn the_spread_fit_inverts_the_log_normal_body() {
        for sigma in [0.05, 0.2, 0.6, 1.2] {
            let media = 50_000.0;
            let spread = media * (-sigma * sigma / 2.0f64).exp() * ((2.326 * sigma).exp() - 1.0);
            let got = fit_sigma(spread, media);
            assert!((got - sigma).abs() < 1e-6, "{got} vs {sigma}");
        }
        assert_eq!(fit_sigma(0.0, 1000.0), 0.0);
        assert_eq!(
            fit_sigma(1e12, 1000.0),
            2.0,
            "clamped to the profile's range"
        );
        // A model with spread writes it into [service], and the profile validates.
        let m = derive(&anchors()).with_spread((100_000.0, 130_000.0), (60_000.0, 60_000.0));
        let p = m.to_profile("x", "y");
        p.validate().unwrap();
        let v = p.service.expect("read spread");
        assert!(v.read.sigma > 0.0);
    }

    #[test]
    fn mva_has_the_right_limits() {
        // One delay-only job: X = 1 / L.
        let x = mva_iops(64, 50_000.0, 10_000.0, 40_000.0, 8);
        assert!(close(x[0], 1e9 / 100_000.0, 1e-9));
        // Increasing, and bounded by the bottleneck: min(1 / cmd, units / unit).
        assert!(x.windows(2).all(|w| w[1] >= w[0] - 1e-9));
        // Front end 100K/s, units 8 / 40 µs = 200K/s: the front end binds.
        assert!(x[63] <= 1e9 / 10_000.0 * 1.0001);
        assert!(x[63] > 0.9 * 100_000.0, "{}", x[63]);
        // A sharp front-end cap: many units, cmd = 1 / 60K.
        let y = mva_iops(64, 0.0, 16_667.0, 83_333.0, 256);
        assert!(close(y[3], 4.0 * 1e9 / 100_000.0, 0.1), "{}", y[3]);
        assert!(close(y[63], 60_000.0, 0.01), "{}", y[63]);
    }

    #[test]
    fn the_fit_recovers_a_soft_knee() {
        // A device with 6 units of 120 µs, 20 µs in flight and an 8 µs front end: its
        // curve bends early (units collide), not at min(QD / L, I).
        let qds = [1u32, 2, 4, 8, 16, 32, 64];
        let truth = mva_iops(64, 2.0 * 10_000.0, 8_000.0, 120_000.0, 6);
        let curve: Vec<(u32, f64)> = qds.iter().map(|&q| (q, truth[q as usize - 1])).collect();
        let mut a = anchors();
        a.read_lat_qd1_ns = 148_000.0;
        a.read_iops = truth[63];
        a.read_curve = curve.clone();
        a.write_lat_qd1_ns = 148_000.0;
        a.write_iops = truth[63];
        a.write_curve = curve.clone();
        let sh = fit_shape(&a, false, 1_000.0).expect("curves given");
        assert!(sh.rms_pct < 3.0, "{sh:?}");
        assert!((4..=9).contains(&sh.units), "{sh:?}");
        let m = derive(&a);
        assert_eq!(m.units, sh.units);
        // The derived model's own curve follows the measured one.
        let unit = m.read_ns as f64 + 4096.0 * 1e9 / m.unit_bandwidth_bytes as f64;
        let x = mva_iops(
            64,
            (m.fetch_ns + m.complete_ns) as f64,
            m.read_cmd_ns as f64,
            unit,
            m.units,
        );
        for &(q, want) in &curve {
            assert!(
                close(x[q as usize - 1], want, 0.06),
                "qd {q}: {} vs {want}",
                x[q as usize - 1]
            );
        }
        // The sharp-knee model (front end at the best IOPS) is far off at QD4 here.
        let sharp = (4.0f64 * 1e9 / 148_000.0).min(truth[63]);
        assert!(!close(sharp, curve[2].1, 0.1), "{sharp} vs {}", curve[2].1);
    }
}
