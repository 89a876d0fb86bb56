//! The derivation of a [`Model`] from measured [`Anchors`] (the steps are listed in the
//! module documentation of [`crate::model`]). Reads and writes are fitted apart: each
//! has its own bus (best bandwidth), unit transfer rate (QD1 cost slope), command time
//! (IOPS), unit time (QD1 latency) and, from its own queue-depth curve, parallelism.
//! The front end's form (max, additive or additive_capped) comes first, from the size
//! sweeps ([`super::front`]); with the additive form a direction's command time and
//! bus come from its sweep's line, with the capped form its command time and link from
//! the line and its bus from the ceiling.

use super::front::SizeFit;
use super::*;

mod stages;

/// The additive front end's rate for one direction: `1 / b` of its size sweep's line
/// (the capped front end's: `1 / c` of its ceiling).
fn bus_of_line(line: SizeFit, measured: f64, what: &str, d: &mut Vec<String>) -> f64 {
    let bus = (1e9 / line.ns_per_byte).min(1e12);
    d.push(format!(
        "{what} bus = 1 / the size sweep's {} {:.4} ns/B = {:.1} MB/s (best measured {what} bandwidth {:.1} MB/s)",
        if line.link_ns_per_byte > 0.0 { "ceiling" } else { "slope" },
        line.ns_per_byte,
        bus / 1e6,
        measured / 1e6
    ));
    bus
}

/// The additive (or capped) front end's command time for one direction from its line:
/// the intercept, at most what keeps the 4 KiB front end within `1 s / iops` (the
/// measured best IOPS stays the ceiling). `xfer_4k`: the 4 KiB transfer in series
/// with the command (over the bus, or the capped form's link).
fn cmd_of_line(line: SizeFit, iops: f64, xfer_4k: f64, what: &str, d: &mut Vec<String>) -> f64 {
    let cap = 1e9 / iops - xfer_4k;
    let cmd = line.cmd_ns.min(cap).max(MIN_STAGE_NS);
    d.push(if line.cmd_ns > cap {
        format!(
            "{what}_cmd = 1 s / {iops:.0} IOPS − 4096 B's transfer {xfer_4k:.0} = {cmd:.0} ns (the line's intercept {:.0} ns would put 4 KiB {what}s below the measured IOPS); the front end's 4 KiB time {:.0} ns is kept by the queue-depth fit",
            line.cmd_ns,
            cmd + xfer_4k
        )
    } else {
        format!(
            "{what}_cmd = the size sweep's intercept = {cmd:.0} ns; the front end's 4 KiB time {cmd:.0} + {xfer_4k:.0} = {:.0} ns ({:.2} / IOPS) is kept by the queue-depth fit",
            cmd + xfer_4k,
            (cmd + xfer_4k) * iops / 1e9
        )
    });
    cmd
}

/// A direction without a line under the additive (or capped) front end keeps the max
/// form's 4 KiB front-end time: its command time is that less the 4 KiB transfer in
/// series with it.
fn additive_cmd_without_line(cmd_max: f64, xfer_4k: f64) -> f64 {
    (cmd_max.max(xfer_4k) - xfer_4k).max(MIN_STAGE_NS)
}

/// The front end's rate for one direction: the best measured bandwidth, raised to what
/// 4 KiB requests move at `iops` (so small requests stay command bound).
fn bus_of(
    measured: f64,
    iops: f64,
    what: &str,
    d: &mut Vec<String>,
    caveats: &mut Vec<String>,
) -> f64 {
    let bus = measured.max(SMALL * iops * 1.01);
    if measured <= 0.0 {
        caveats.push(format!(
            "no {what} bandwidth measured: the {what} bus is set to {:.0} MB/s (4 KB requests at their IOPS)",
            bus / 1e6
        ));
    } else if bus > measured * 1.001 {
        caveats.push(format!(
            "{what} bus raised from the measured {:.0} MB/s to {:.0} MB/s so that 4 KB {what}s are command bound",
            measured / 1e6,
            bus / 1e6
        ));
    }
    d.push(format!(
        "{what} bus = best measured {what} bandwidth = {:.1} MB/s",
        bus / 1e6
    ));
    bus
}

/// Derive the device parameters from measured anchors (see the module doc). Every
/// figure is clamped into the profile's valid range, so the result always validates;
/// where a clamp changes what the model reproduces, `caveats` says so.
///
/// The steps, each a method of [`Deriv`] that appends its lines to the derivation in
/// order: the front end's form and links, the transfers (buses, slopes, unit
/// bandwidths), the command times, the queue-depth curves' shape, the latency-only
/// time, the unit (and acknowledgement) times, the units, the slope checks.
pub fn derive(a: &Anchors) -> Model {
    let mut cx = Deriv::new(a);
    let fr = cx.front_end();
    let tx = cx.transfers(&fr);
    let mut cmds = cx.commands(&fr, &tx);
    let shape = cx.shape(&fr, &tx, &cmds);
    let f = cx.latency_only(&fr, &tx, &mut cmds, &shape);
    let mut st = cx.stage_times(&tx, &mut cmds, f);
    let units = cx.units(&tx, &shape, &mut st);
    cx.slope_checks(&tx);
    cx.model(fr, &tx, &cmds, f, st, units)
}

/// The derivation's inputs and what it has said so far.
struct Deriv<'a> {
    a: &'a Anchors,
    /// The derivation's lines, in order.
    d: Vec<String>,
    caveats: Vec<String>,
    /// QD1 4 KiB latencies and best 4 KiB IOPS, bounded below.
    lr: f64,
    lw: f64,
    ir: f64,
    iw: f64,
    /// Writes acknowledged from a buffer (QD1 writes well under reads).
    buffered: bool,
}

/// The front end's form and each direction's line and link.
struct FrontPart {
    choice: FrontChoice,
    fe: FrontEnd,
    /// Additive or capped: the command and (part of) the transfer in series.
    additive: bool,
    line_r: Option<SizeFit>,
    line_w: Option<SizeFit>,
    /// The capped form's links, ns per byte (0 for the other forms).
    nl_r: f64,
    nl_w: f64,
}

/// Transfer rates and times.
struct Transfers {
    fe: FrontEnd,
    bus: f64,
    bus_w: f64,
    /// The front end's per-byte slopes at QD1 (4–128 KiB).
    slope_r: f64,
    slope_w: f64,
    /// Per-byte unit time and its bandwidth, reads and writes.
    u: f64,
    unit_bw: f64,
    u_w: f64,
    unit_bw_w: f64,
    /// A 4 KiB unit transfer.
    t_small: f64,
    t_small_w: f64,
    /// A 4 KiB bus transfer.
    xr: f64,
    xw: f64,
    /// A 4 KiB link transfer.
    lkr: f64,
    lkw: f64,
    /// The 4 KiB transfer in series with the command.
    sr: f64,
    sw: f64,
}

impl Transfers {
    /// The 4 KiB read front end with command time `cmd`.
    fn front_r4(&self, cmd: f64) -> f64 {
        self.fe.combine_f64(cmd, self.xr, self.lkr)
    }

    /// The 4 KiB write front end with command time `cmd`.
    fn front_w4(&self, cmd: f64) -> f64 {
        self.fe.combine_f64(cmd, self.xw, self.lkw)
    }
}

/// Command times and the 4 KiB front ends.
struct Commands {
    read_cmd: f64,
    write_cmd: f64,
    /// The front end's share of 1 / IOPS from a line, for the shape fit.
    read_share: Option<f64>,
    write_share: Option<f64>,
    /// The 4 KiB front end before the queue-depth fit.
    front_r: f64,
    front_w: f64,
}

/// The queue-depth curves' shape.
struct Shape {
    /// fetch = complete, ns.
    f: f64,
    /// Fitted shares scaling the command times without a line.
    kr: f64,
    kw: f64,
    units: Option<u32>,
    write_units: Option<u32>,
}

/// Unit (and acknowledgement) times.
struct Stages {
    read_ns: f64,
    write_ns: f64,
    write_buffer: Option<BufferParams>,
    /// Busy units at the measured IOPS and bandwidth (headroom without a fit).
    busy: f64,
}

/// The unit counts: the device's, and the directions' own when fewer.
struct Units {
    units: u32,
    read_parallel: Option<u32>,
    write_parallel: Option<u32>,
}

/// A 128 KiB request, the large size of the slope checks and the busy estimate.
const BIG: f64 = 131072.0;

impl<'a> Deriv<'a> {
    fn new(a: &'a Anchors) -> Self {
        let lr = a.read_lat_qd1_ns.max(1000.0);
        let lw = a.write_lat_qd1_ns.max(1000.0);
        Deriv {
            a,
            d: Vec::new(),
            caveats: Vec::new(),
            lr,
            lw,
            ir: a.read_iops.max(1.0),
            iw: a.write_iops.max(1.0),
            buffered: lw < WRITE_BUFFER_RATIO * lr,
        }
    }

    /// The front end's form, from the size sweeps, and the capped form's links.
    fn front_end(&mut self) -> FrontPart {
        let choice = choose_front_end(self.a, self.buffered);
        self.d.extend(choice.lines());
        let fe = choice.front_end;
        let (line_r, line_w) = (choice.line(false), choice.line(true));
        // The capped form's links: from each direction's line (a write without one,
        // e.g. buffered, takes the reads'); ns per byte, 0 for the other forms.
        let link_of = |l: Option<SizeFit>| {
            l.filter(|_| fe == FrontEnd::AdditiveCapped)
                .map_or(0.0, |l| l.link_ns_per_byte.max(1e-3))
        };
        let nl_r = link_of(line_r);
        let nl_w = match link_of(line_w) {
            x if x > 0.0 => x,
            _ => nl_r,
        };
        if nl_r > 0.0 {
            self.d.push(format!(
                "links (the transfer in series with the command) = 1 / the lines' slopes: reads {:.1} MB/s, writes {:.1} MB/s{}",
                1e3 / nl_r,
                1e3 / nl_w,
                if line_w.is_none() { " (the reads')" } else { "" }
            ));
        }
        FrontPart {
            choice,
            fe,
            additive: fe != FrontEnd::Max,
            line_r,
            line_w,
            nl_r,
            nl_w,
        }
    }

    /// Buses (one per direction; a buffered write's front end runs at twice the
    /// sustained rate), the front end's slopes and the units' transfer rates.
    fn transfers(&mut self, fr: &FrontPart) -> Transfers {
        let (a, d) = (self.a, &mut self.d);
        let meas_r = if a.read_bw_bytes > 0.0 {
            a.read_bw_bytes
        } else {
            a.write_bw_bytes
        };
        let meas_w = if a.write_bw_bytes > 0.0 {
            a.write_bw_bytes
        } else {
            meas_r
        };
        let bus = match fr.line_r {
            Some(l) => bus_of_line(l, meas_r, "read", d),
            None => bus_of(meas_r, self.ir, "read", d, &mut self.caveats),
        };
        let w_rate = if self.buffered {
            2.0 * self.iw
        } else {
            self.iw
        };
        let bus_w = match fr.line_w {
            Some(l) => bus_of_line(l, meas_w, "write", d),
            None => bus_of(meas_w, w_rate, "write", d, &mut self.caveats),
        };
        let ns_per_byte_bus = 1e9 / bus;
        let ns_per_byte_bus_w = 1e9 / bus_w;
        // The front end's per-byte slope at QD1 from 4 to 128 KiB: 1 / bus, or with
        // the capped form the chord of max(cmd + len / link, len / bus) (the link's
        // slope below the break, the ceiling's above).
        let fe = fr.fe;
        let capped = fe == FrontEnd::AdditiveCapped;
        let chord = |l: Option<SizeFit>, nb: f64, nl: f64| match l {
            Some(l) if capped => {
                let f = |s: f64| fe.combine_f64(l.cmd_ns, nb * s, nl * s);
                (f(BIG) - f(SMALL)) / (BIG - SMALL)
            }
            _ => nb,
        };
        let (slope_r, slope_w) = (
            chord(fr.line_r, ns_per_byte_bus, fr.nl_r),
            chord(fr.line_w, ns_per_byte_bus_w, fr.nl_w),
        );
        let (by_r, by_w) = if capped {
            (
                "the read front end's slope (4–128 KiB)",
                "the write front end's slope (4–128 KiB)",
            )
        } else {
            ("1 / read bus", "1 / write bus")
        };

        // Per-byte unit time from each cost slope: what the front end does not explain.
        let c_read = a.read_fit.map_or(0.0, |f| f.slope);
        let u = (c_read - slope_r).max(1e-4);
        // At most the profile bound (1 TB/s) so the profile validates.
        let unit_bw = (1e9 / u).min(1e12);
        d.push(format!(
            "1 / unit_bandwidth = read cost slope {:.4} ns/B − {by_r} {:.4} ns/B = {:.4} ns/B ({:.1} MB/s)",
            c_read,
            slope_r,
            u,
            unit_bw / 1e6
        ));
        // A buffered write's QD1 cost is its front end alone: its slope says nothing
        // of the programs, which then move data at the read rate.
        let (u_w, unit_bw_w) = match a.write_fit {
            Some(wf) if !self.buffered => {
                let uw = (wf.slope - slope_w).max(1e-4);
                d.push(format!(
                    "1 / write_unit_bandwidth = write cost slope {:.4} ns/B − {by_w} {:.4} ns/B = {:.4} ns/B ({:.1} MB/s)",
                    wf.slope,
                    slope_w,
                    uw,
                    (1e9 / uw).min(1e12) / 1e6
                ));
                (uw, (1e9 / uw).min(1e12))
            }
            _ => (u, unit_bw),
        };
        let xr = SMALL * ns_per_byte_bus;
        let xw = SMALL * ns_per_byte_bus_w;
        // The 4 KiB links' times, and the 4 KiB transfers in series with the command.
        let (lkr, lkw) = (SMALL * fr.nl_r, SMALL * fr.nl_w);
        let (sr, sw) = match fe {
            FrontEnd::Max => (0.0, 0.0),
            FrontEnd::Additive => (xr, xw),
            FrontEnd::AdditiveCapped => (lkr, lkw),
        };
        Transfers {
            fe,
            bus,
            bus_w,
            slope_r,
            slope_w,
            u,
            unit_bw,
            u_w,
            unit_bw_w,
            t_small: SMALL * 1e9 / unit_bw,
            t_small_w: SMALL * 1e9 / unit_bw_w,
            xr,
            xw,
            lkr,
            lkw,
            sr,
            sw,
        }
    }

    /// Command times: from a direction's line, else 1 s / IOPS (a buffered write's
    /// acknowledgement path: half of that, at most half its QD1 latency).
    fn commands(&mut self, fr: &FrontPart, tx: &Transfers) -> Commands {
        let (ir, iw, d) = (self.ir, self.iw, &mut self.d);
        let mut read_cmd = 1e9 / ir;
        let mut read_share = None;
        match fr.line_r {
            Some(l) => {
                read_cmd = cmd_of_line(l, ir, tx.sr, "read", d);
                read_share = Some(tx.front_r4(read_cmd) * ir / 1e9);
            }
            None => d.push(format!("read_cmd = 1 s / {ir:.0} IOPS = {read_cmd:.0} ns")),
        }
        // The 4 KiB front end before the queue-depth fit: a direction without a line
        // keeps the max form's (converted below).
        let front_r = if fr.line_r.is_some() {
            tx.front_r4(read_cmd)
        } else {
            read_cmd.max(tx.xr)
        };
        let mut write_cmd = if self.buffered {
            (0.5e9 / iw).min(0.5 * self.lw)
        } else {
            1e9 / iw
        };
        let mut write_share = None;
        if let Some(l) = fr.line_w {
            write_cmd = cmd_of_line(l, iw, tx.sw, "write", d);
            write_share = Some(tx.front_w4(write_cmd) * iw / 1e9);
        }
        let front_w = if fr.line_w.is_some() {
            tx.front_w4(write_cmd)
        } else {
            write_cmd.max(tx.xw)
        };
        if self.buffered {
            d.push(format!(
                "writes at QD1 ({:.1} µs) are under {:.0} % of reads ({:.1} µs): buffered; write_cmd = min(0.5 s / {iw:.0} IOPS, L_write / 2) = {write_cmd:.0} ns",
                self.lw / 1e3,
                WRITE_BUFFER_RATIO * 100.0,
                self.lr / 1e3
            ));
        } else if fr.line_w.is_none() {
            d.push(format!(
                "write_cmd = 1 s / {iw:.0} IOPS = {write_cmd:.0} ns (writes in place)"
            ));
        }
        Commands {
            read_cmd,
            write_cmd,
            read_share,
            write_share,
            front_r,
            front_w,
        }
    }
}
