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
pub fn derive(a: &Anchors) -> Model {
    let mut caveats = Vec::new();
    let mut d = Vec::new();
    let lr = a.read_lat_qd1_ns.max(1000.0);
    let lw = a.write_lat_qd1_ns.max(1000.0);
    let ir = a.read_iops.max(1.0);
    let iw = a.write_iops.max(1.0);
    let buffered = lw < WRITE_BUFFER_RATIO * lr;

    // The front end's form, from the size sweeps.
    let choice = choose_front_end(a, buffered);
    d.extend(choice.lines());
    let fe = choice.front_end;
    // Additive or capped: the command and (part of) the transfer in series.
    let additive = fe != FrontEnd::Max;
    let (line_r, line_w) = (choice.line(false), choice.line(true));
    // The capped form's links: from each direction's line (a write without one, e.g.
    // buffered, takes the reads'); ns per byte, 0 for the other forms.
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
        d.push(format!(
            "links (the transfer in series with the command) = 1 / the lines' slopes: reads {:.1} MB/s, writes {:.1} MB/s{}",
            1e3 / nl_r,
            1e3 / nl_w,
            if line_w.is_none() { " (the reads')" } else { "" }
        ));
    }

    // Buses, one per direction (a buffered write's front end runs at twice the
    // sustained rate, below).
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
    let bus = match line_r {
        Some(l) => bus_of_line(l, meas_r, "read", &mut d),
        None => bus_of(meas_r, ir, "read", &mut d, &mut caveats),
    };
    let w_rate = if buffered { 2.0 * iw } else { iw };
    let bus_w = match line_w {
        Some(l) => bus_of_line(l, meas_w, "write", &mut d),
        None => bus_of(meas_w, w_rate, "write", &mut d, &mut caveats),
    };
    let ns_per_byte_bus = 1e9 / bus;
    let ns_per_byte_bus_w = 1e9 / bus_w;
    // The front end's per-byte slope at QD1 from 4 to 128 KiB: 1 / bus, or with the
    // capped form the chord of max(cmd + len / link, len / bus) (the link's slope
    // below the break, the ceiling's above).
    let capped = fe == FrontEnd::AdditiveCapped;
    let chord = |l: Option<SizeFit>, nb: f64, nl: f64| match l {
        Some(l) if capped => {
            let f = |s: f64| fe.combine_f64(l.cmd_ns, nb * s, nl * s);
            (f(131072.0) - f(SMALL)) / (131072.0 - SMALL)
        }
        _ => nb,
    };
    let (slope_r, slope_w) = (
        chord(line_r, ns_per_byte_bus, nl_r),
        chord(line_w, ns_per_byte_bus_w, nl_w),
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
    let t_small = SMALL * 1e9 / unit_bw;
    d.push(format!(
        "1 / unit_bandwidth = read cost slope {:.4} ns/B − {by_r} {:.4} ns/B = {:.4} ns/B ({:.1} MB/s)",
        c_read,
        slope_r,
        u,
        unit_bw / 1e6
    ));
    // A buffered write's QD1 cost is its front end alone: its slope says nothing of
    // the programs, which then move data at the read rate.
    let (u_w, unit_bw_w) = match a.write_fit {
        Some(wf) if !buffered => {
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
    let t_small_w = SMALL * 1e9 / unit_bw_w;

    let xr = SMALL * ns_per_byte_bus;
    let xw = SMALL * ns_per_byte_bus_w;
    // The 4 KiB links' times, and the 4 KiB transfers in series with the command.
    let (lkr, lkw) = (SMALL * nl_r, SMALL * nl_w);
    let (sr, sw) = match fe {
        FrontEnd::Max => (0.0, 0.0),
        FrontEnd::Additive => (xr, xw),
        FrontEnd::AdditiveCapped => (lkr, lkw),
    };
    let front_r4 = |cmd: f64| fe.combine_f64(cmd, xr, lkr);
    let front_w4 = |cmd: f64| fe.combine_f64(cmd, xw, lkw);
    let mut read_cmd = 1e9 / ir;
    let mut read_share = None;
    match line_r {
        Some(l) => {
            read_cmd = cmd_of_line(l, ir, sr, "read", &mut d);
            read_share = Some(front_r4(read_cmd) * ir / 1e9);
        }
        None => d.push(format!("read_cmd = 1 s / {ir:.0} IOPS = {read_cmd:.0} ns")),
    }
    // The 4 KiB front end before the queue-depth fit: a direction without a line
    // keeps the max form's (converted below).
    let front_r = if line_r.is_some() {
        front_r4(read_cmd)
    } else {
        read_cmd.max(xr)
    };
    let mut write_cmd = if buffered {
        (0.5e9 / iw).min(0.5 * lw)
    } else {
        1e9 / iw
    };
    let mut write_share = None;
    if let Some(l) = line_w {
        write_cmd = cmd_of_line(l, iw, sw, "write", &mut d);
        write_share = Some(front_w4(write_cmd) * iw / 1e9);
    }
    let front_w = if line_w.is_some() {
        front_w4(write_cmd)
    } else {
        write_cmd.max(xw)
    };
    if buffered {
        d.push(format!(
            "writes at QD1 ({:.1} µs) are under {:.0} % of reads ({:.1} µs): buffered; write_cmd = min(0.5 s / {iw:.0} IOPS, L_write / 2) = {write_cmd:.0} ns",
            lw / 1e3,
            WRITE_BUFFER_RATIO * 100.0,
            lr / 1e3
        ));
    } else if line_w.is_none() {
        d.push(format!(
            "write_cmd = 1 s / {iw:.0} IOPS = {write_cmd:.0} ns (writes in place)"
        ));
    }

    // The shape of the queue-depth curves: units (reads' and in-place writes' apart),
    // latency-only time and front-end shares fitted by mean-value analysis (see
    // `fit_shape`); without curves, a front end capped at the measured IOPS over units
    // with headroom.
    let shape = fit_shape_with(
        a,
        buffered,
        t_small + MIN_STAGE_NS,
        t_small_w + MIN_STAGE_NS,
        [read_share, write_share],
    );
    let (f, kr, kw, fitted_units, fitted_write_units) = match &shape {
        Some(sh) => {
            d.push(format!(
                "queue-depth curves fitted by mean-value analysis (rms error {:.1} % of IOPS over {} points): reads on {} units{}, fetch = complete = {:.0} ns, {} = {:.2} / IOPS, {} = {:.2} / IOPS",
                sh.rms_pct,
                sh.points,
                sh.units,
                sh.write_units
                    .map_or(String::new(), |w| format!(", writes on {w}")),
                sh.fetch_ns,
                if additive { "the reads' 4 KiB front end" } else { "read_cmd" },
                sh.read_cmd_share,
                if additive { "the writes' 4 KiB front end" } else { "write_cmd" },
                sh.write_cmd_share
            ));
            (
                sh.fetch_ns,
                sh.read_cmd_share,
                sh.write_cmd_share,
                Some(sh.units),
                sh.write_units,
            )
        }
        None => {
            let slack_r = lr - front_r - t_small - MIN_STAGE_NS;
            let slack_w = if buffered {
                lw - front_w - MIN_STAGE_NS
            } else {
                lw - front_w - t_small_w - MIN_STAGE_NS
            };
            let f = (LATENCY_ONLY_SHARE * lr.min(lw))
                .min(slack_r / 2.0)
                .min(slack_w / 2.0)
                .max(0.0);
            d.push(format!(
                "no queue-depth curve to fit: fetch = complete = {f:.0} ns (latency only), front end at the measured IOPS"
            ));
            (f, 1.0, 1.0, None, None)
        }
    };
    // With a line the share was the line's (the command time stands); otherwise the
    // fitted share scales the command, and under the additive front end the command
    // is what is left of the max form's 4 KiB front end beside the transfer.
    if line_r.is_none() {
        read_cmd *= kr;
        if additive {
            read_cmd = additive_cmd_without_line(read_cmd, sr);
        }
    }
    if line_w.is_none() {
        write_cmd *= kw;
        if additive {
            write_cmd = additive_cmd_without_line(write_cmd, sw);
        }
    }
    let front_r = front_r4(read_cmd);
    let front_w = front_w4(write_cmd);
    // Both QD1 latencies must hold the latency-only time (a buffered write's too).
    let room_w = if buffered {
        lw - front_w
    } else {
        lw - front_w - t_small_w
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
        read_cmd = (lr - 2.0 * f - t_small - MIN_STAGE_NS - sr).max(MIN_STAGE_NS);
        caveats.push(format!(
            "QD1 read latency {:.1} µs leaves no unit time beside 1 s / IOPS: read_cmd lowered to {read_cmd:.0} ns (the model's saturated read IOPS is {:.0})",
            lr / 1e3,
            1e9 / front_r4(read_cmd)
        ));
    }
    d.push(format!(
        "read_ns = L_read {lr:.0} − 2·{f:.0} − front {front_r:.0} − 4096 B unit transfer {t_small:.0} = {read_ns:.0} ns"
    ));

    // Units: fitted, or headroom over the busiest load (4 KB and large requests).
    let busy_small_r = ir * (read_ns + t_small) / 1e9;
    let big = 131072.0;
    let busy_big_r = a.read_bw_bytes / big * (read_ns + big * u) / 1e9;
    let mut busy = busy_small_r.max(busy_big_r);
    let mut write_ns;
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
        match a.write_buffer_bytes {
            Some(b) => d.push(format!(
                "write_buffer.capacity = {:.0} MiB (measured: the write-burst knee)",
                b as f64 / (1u64 << 20) as f64
            )),
            None => caveats.push(format!(
                "write buffer size not measured (no write-burst knee): {} MiB assumed",
                WRITE_BUFFER_BYTES >> 20
            )),
        }
        write_ns = 0.0; // set once the units are known
        write_buffer = Some(BufferParams {
            capacity_bytes: a.write_buffer_bytes.unwrap_or(WRITE_BUFFER_BYTES),
            ack_ns: round(ack),
            program_bytes: SMALL as u32,
        });
    } else {
        write_ns = lw - 2.0 * f - front_w - t_small_w;
        if write_ns < MIN_STAGE_NS {
            write_ns = MIN_STAGE_NS;
            write_cmd = (lw - 2.0 * f - t_small_w - MIN_STAGE_NS - sw).max(MIN_STAGE_NS);
            caveats.push(format!(
                "QD1 write latency {:.1} µs leaves no unit time beside 1 s / IOPS: write_cmd lowered to {write_cmd:.0} ns (the model's saturated write IOPS is {:.0})",
                lw / 1e3,
                1e9 / front_w4(write_cmd)
            ));
        }
        d.push(format!(
            "write_ns = L_write {lw:.0} − 2·{f:.0} − front {front_w:.0} − {t_small_w:.0} = {write_ns:.0} ns"
        ));
        let busy_small_w = iw * (write_ns + t_small_w) / 1e9;
        let busy_big_w = a.write_bw_bytes / big * (write_ns + big * u_w) / 1e9;
        busy = busy.max(busy_small_w).max(busy_big_w);
        write_buffer = None;
    }
    // With a buffer, programs of 4 KiB must be able to destage I_write with room.
    let destage_min = if write_buffer.is_some() {
        (2.0 * iw * (t_small_w + MIN_STAGE_NS) / 1e9)
            .ceil()
            .clamp(1.0, 4096.0) as u32
    } else {
        1
    };
    // Units: fitted (reads and in-place writes apart: the device gets the larger count,
    // the other direction its own first units), or headroom over the busiest load.
    let (units, read_parallel_units, write_parallel_units) = match fitted_units {
        Some(ur) => {
            let ur = ur.max(destage_min);
            let uw = fitted_write_units.unwrap_or(ur);
            let n = ur.max(uw);
            d.push(format!(
                "units = {n}: reads fitted to {ur} units, {}",
                match fitted_write_units {
                    Some(w) => format!("in-place writes to {w}"),
                    None => "buffered writes destage on all of them".into(),
                }
            ));
            (n, (ur < n).then_some(ur), (uw < n).then_some(uw))
        }
        None => {
            let n = ((UNIT_HEADROOM * busy).ceil().clamp(1.0, 4096.0) as u32).max(destage_min);
            d.push(format!(
                "units = ⌈{UNIT_HEADROOM} × {busy:.2} busy units at the measured IOPS and bandwidth⌉ = {n}"
            ));
            (n, None, None)
        }
    };
    if write_buffer.is_some() {
        write_ns = (units as f64 * 1e9 / iw - t_small_w).max(MIN_STAGE_NS);
        d.push(format!(
            "write_ns = {units} units / {iw:.0} IOPS − {t_small_w:.0} = {write_ns:.0} ns per 4 KiB program"
        ));
    }

    if let Some(rf) = a.read_fit {
        let model_slope = slope_r + u;
        if (rf.slope - model_slope).abs() > 0.25 * rf.slope.abs().max(model_slope) {
            caveats.push(format!(
                "the read cost slope ({:.4} ns/B) differs from the model's ({model_slope:.4} ns/B: the front end's transfer at least): large-read QD1 latency is off by up to {:.0} µs at 128 KB",
                rf.slope,
                (rf.slope - model_slope).abs() * big / 1e3
            ));
        }
    }
    if let Some(wf) = a.write_fit {
        let model_slope = if buffered { slope_w } else { slope_w + u_w };
        if (wf.slope - model_slope).abs() > 0.25 * wf.slope.abs().max(model_slope) {
            caveats.push(format!(
                "the write cost slope ({:.4} ns/B) differs from the model's ({model_slope:.4} ns/B): large-write QD1 latency is off by up to {:.0} µs at 128 KB",
                wf.slope,
                (wf.slope - model_slope).abs() * big / 1e3
            ));
        }
    }

    let mut anchors = a.clone();
    anchors.read_lat_qd1_ns = lr.round();
    anchors.write_lat_qd1_ns = lw.round();
    anchors.read_iops = ir.round();
    anchors.write_iops = iw.round();
    let bus_bytes = round(bus).max(1);
    let bus_w_bytes = round(bus_w).max(1);
    let unit_bytes = round(unit_bw).max(1);
    let unit_w_bytes = round(unit_bw_w).max(1);
    let (link_bytes, link_w_bytes) = if nl_r > 0.0 {
        let l = round((1e9 / nl_r).min(1e12)).max(1);
        let lw = round((1e9 / nl_w).min(1e12)).max(1);
        (Some(l), (lw != l).then_some(lw))
    } else {
        (None, None)
    };
    Model {
        service: None,
        read_block_after_write_ns: None,
        placement: super::Placement::Striped,
        read_load_exponent: None,
        write_load_exponent: None,
        sim_fits: Vec::new(),
        anchors,
        max_outstanding: 1024,
        fetch_ns: round(f),
        complete_ns: round(f),
        read_cmd_ns: round(read_cmd).max(1),
        write_cmd_ns: round(write_cmd).max(1),
        front_end: fe,
        batch_ns: None,
        front_choice: choice,
        units,
        stripe_bytes: STRIPE_BYTES,
        read_ns: round(read_ns).max(1),
        write_ns: round(write_ns).max(1),
        unit_bandwidth_bytes: unit_bytes,
        bus_bandwidth_bytes: bus_bytes,
        write_unit_bandwidth_bytes: (unit_w_bytes != unit_bytes).then_some(unit_w_bytes),
        write_bus_bandwidth_bytes: (bus_w_bytes != bus_bytes).then_some(bus_w_bytes),
        link_bandwidth_bytes: link_bytes,
        write_link_bandwidth_bytes: link_w_bytes,
        write_parallel_units,
        read_parallel_units,
        write_buffer,
        derivation: d,
        caveats,
    }
}
