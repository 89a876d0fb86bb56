//! The derivation of a [`Model`] from measured [`Anchors`] (the steps are listed in the
//! module documentation of [`crate::model`]).

use super::*;

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
