//! The later steps of [`derive`](super::derive): the queue-depth curves' shape, the
//! latency-only time, the units' times, the units, the slope checks and the model.

use super::*;

impl Deriv<'_> {
    /// The shape of the queue-depth curves: units (reads' and in-place writes' apart),
    /// latency-only time and front-end shares fitted by mean-value analysis (see
    /// `fit_shape`); without curves, a front end capped at the measured IOPS over
    /// units with headroom.
    pub(super) fn shape(&mut self, fr: &FrontPart, tx: &Transfers, c: &Commands) -> Shape {
        let fitted = fit_shape_with(
            self.a,
            self.buffered,
            tx.t_small + MIN_STAGE_NS,
            tx.t_small_w + MIN_STAGE_NS,
            [c.read_share, c.write_share],
        );
        match &fitted {
            Some(sh) => {
                self.d.push(format!(
                    "queue-depth curves fitted by mean-value analysis (rms error {:.1} % of IOPS over {} points): reads on {} units{}, fetch = complete = {:.0} ns, {} = {:.2} / IOPS, {} = {:.2} / IOPS",
                    sh.rms_pct,
                    sh.points,
                    sh.units,
                    sh.write_units
                        .map_or(String::new(), |w| format!(", writes on {w}")),
                    sh.fetch_ns,
                    if fr.additive { "the reads' 4 KiB front end" } else { "read_cmd" },
                    sh.read_cmd_share,
                    if fr.additive { "the writes' 4 KiB front end" } else { "write_cmd" },
                    sh.write_cmd_share
                ));
                Shape {
                    f: sh.fetch_ns,
                    kr: sh.read_cmd_share,
                    kw: sh.write_cmd_share,
                    units: Some(sh.units),
                    write_units: sh.write_units,
                }
            }
            None => {
                let (lr, lw) = (self.lr, self.lw);
                let slack_r = lr - c.front_r - tx.t_small - MIN_STAGE_NS;
                let slack_w = if self.buffered {
                    lw - c.front_w - MIN_STAGE_NS
                } else {
                    lw - c.front_w - tx.t_small_w - MIN_STAGE_NS
                };
                let f = (LATENCY_ONLY_SHARE * lr.min(lw))
                    .min(slack_r / 2.0)
                    .min(slack_w / 2.0)
                    .max(0.0);
                self.d.push(format!(
                    "no queue-depth curve to fit: fetch = complete = {f:.0} ns (latency only), front end at the measured IOPS"
                ));
                Shape {
                    f,
                    kr: 1.0,
                    kw: 1.0,
                    units: None,
                    write_units: None,
                }
            }
        }
    }

    /// The command times the shape settles, and the latency-only time (fetch =
    /// complete) both QD1 latencies hold.
    pub(super) fn latency_only(
        &mut self,
        fr: &FrontPart,
        tx: &Transfers,
        c: &mut Commands,
        sh: &Shape,
    ) -> f64 {
        // With a line the share was the line's (the command time stands); otherwise
        // the fitted share scales the command, and under the additive front end the
        // command is what is left of the max form's 4 KiB front end beside the
        // transfer.
        if fr.line_r.is_none() {
            c.read_cmd *= sh.kr;
            if fr.additive {
                c.read_cmd = additive_cmd_without_line(c.read_cmd, tx.sr);
            }
        }
        if fr.line_w.is_none() {
            c.write_cmd *= sh.kw;
            if fr.additive {
                c.write_cmd = additive_cmd_without_line(c.write_cmd, tx.sw);
            }
        }
        c.front_r = tx.front_r4(c.read_cmd);
        c.front_w = tx.front_w4(c.write_cmd);
        // Both QD1 latencies must hold the latency-only time (a buffered write's too).
        let room_w = if self.buffered {
            self.lw - c.front_w
        } else {
            self.lw - c.front_w - tx.t_small_w
        };
        let f =
            sh.f.min((self.lr - c.front_r - tx.t_small - MIN_STAGE_NS) / 2.0)
                .min((room_w - MIN_STAGE_NS) / 2.0)
                .max(0.0);
        self.d.push(format!(
            "fetch = complete = {f:.0} ns (latency only); read_cmd = {:.0} ns; write_cmd = {:.0} ns",
            c.read_cmd, c.write_cmd
        ));
        f
    }

    /// The units' times: what the QD1 latencies leave beside the latency-only time,
    /// the front end and the transfer (a buffered write: its acknowledgement time; its
    /// programs' time comes with the units).
    pub(super) fn stage_times(&mut self, tx: &Transfers, c: &mut Commands, f: f64) -> Stages {
        let (a, lr, lw, ir, iw) = (self.a, self.lr, self.lw, self.ir, self.iw);
        let (t_small, t_small_w) = (tx.t_small, tx.t_small_w);
        let front_r = c.front_r;
        let front_w = c.front_w;
        let mut read_ns = lr - 2.0 * f - front_r - t_small;
        if read_ns < MIN_STAGE_NS {
            // QD1 already saturates the device (L · I ≈ 1): the front end takes it all.
            read_ns = MIN_STAGE_NS;
            c.read_cmd = (lr - 2.0 * f - t_small - MIN_STAGE_NS - tx.sr).max(MIN_STAGE_NS);
            self.caveats.push(format!(
                "QD1 read latency {:.1} µs leaves no unit time beside 1 s / IOPS: read_cmd lowered to {:.0} ns (the model's saturated read IOPS is {:.0})",
                lr / 1e3,
                c.read_cmd,
                1e9 / tx.front_r4(c.read_cmd)
            ));
        }
        self.d.push(format!(
            "read_ns = L_read {lr:.0} − 2·{f:.0} − front {front_r:.0} − 4096 B unit transfer {t_small:.0} = {read_ns:.0} ns"
        ));

        // Busy units at the measured load (4 KB and large requests).
        let busy_small_r = ir * (read_ns + t_small) / 1e9;
        let busy_big_r = a.read_bw_bytes / BIG * (read_ns + BIG * tx.u) / 1e9;
        let mut busy = busy_small_r.max(busy_big_r);
        let mut write_ns;
        let write_buffer;
        if self.buffered {
            let mut ack = lw - 2.0 * f - front_w;
            if ack < MIN_STAGE_NS {
                ack = MIN_STAGE_NS;
                self.caveats.push(format!(
                    "QD1 write latency {:.1} µs leaves no acknowledgement time: ack_ns = {MIN_STAGE_NS:.0}",
                    lw / 1e3
                ));
            }
            self.d.push(format!(
                "ack_ns = L_write {lw:.0} − 2·{f:.0} − front {front_w:.0} = {ack:.0} ns; 4 KiB programs destage at {iw:.0} IOPS over the units (write_ns below)"
            ));
            match a.write_buffer_bytes {
                Some(b) => self.d.push(format!(
                    "write_buffer.capacity = {:.0} MiB (measured: the write-burst knee)",
                    b as f64 / (1u64 << 20) as f64
                )),
                None => self.caveats.push(format!(
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
                c.write_cmd = (lw - 2.0 * f - t_small_w - MIN_STAGE_NS - tx.sw).max(MIN_STAGE_NS);
                self.caveats.push(format!(
                    "QD1 write latency {:.1} µs leaves no unit time beside 1 s / IOPS: write_cmd lowered to {:.0} ns (the model's saturated write IOPS is {:.0})",
                    lw / 1e3,
                    c.write_cmd,
                    1e9 / tx.front_w4(c.write_cmd)
                ));
            }
            self.d.push(format!(
                "write_ns = L_write {lw:.0} − 2·{f:.0} − front {front_w:.0} − {t_small_w:.0} = {write_ns:.0} ns"
            ));
            let busy_small_w = iw * (write_ns + t_small_w) / 1e9;
            let busy_big_w = a.write_bw_bytes / BIG * (write_ns + BIG * tx.u_w) / 1e9;
            busy = busy.max(busy_small_w).max(busy_big_w);
            write_buffer = None;
        }
        Stages {
            read_ns,
            write_ns,
            write_buffer,
            busy,
        }
    }

    /// Units: fitted (reads and in-place writes apart: the device gets the larger
    /// count, the other direction its own first units), or headroom over the busiest
    /// load; with a write buffer, the programs' time at the units.
    pub(super) fn units(&mut self, tx: &Transfers, sh: &Shape, st: &mut Stages) -> Units {
        let (iw, t_small_w) = (self.iw, tx.t_small_w);
        // With a buffer, programs of 4 KiB must be able to destage I_write with room.
        let destage_min = if st.write_buffer.is_some() {
            (2.0 * iw * (t_small_w + MIN_STAGE_NS) / 1e9)
                .ceil()
                .clamp(1.0, 4096.0) as u32
        } else {
            1
        };
        let u = match sh.units {
            Some(ur) => {
                let ur = ur.max(destage_min);
                let uw = sh.write_units.unwrap_or(ur);
                let n = ur.max(uw);
                self.d.push(format!(
                    "units = {n}: reads fitted to {ur} units, {}",
                    match sh.write_units {
                        Some(w) => format!("in-place writes to {w}"),
                        None => "buffered writes destage on all of them".into(),
                    }
                ));
                Units {
                    units: n,
                    read_parallel: (ur < n).then_some(ur),
                    write_parallel: (uw < n).then_some(uw),
                }
            }
            None => {
                let busy = st.busy;
                let n = ((UNIT_HEADROOM * busy).ceil().clamp(1.0, 4096.0) as u32).max(destage_min);
                self.d.push(format!(
                    "units = ⌈{UNIT_HEADROOM} × {busy:.2} busy units at the measured IOPS and bandwidth⌉ = {n}"
                ));
                Units {
                    units: n,
                    read_parallel: None,
                    write_parallel: None,
                }
            }
        };
        if st.write_buffer.is_some() {
            let units = u.units;
            st.write_ns = (units as f64 * 1e9 / iw - t_small_w).max(MIN_STAGE_NS);
            self.d.push(format!(
                "write_ns = {units} units / {iw:.0} IOPS − {t_small_w:.0} = {:.0} ns per 4 KiB program",
                st.write_ns
            ));
        }
        u
    }

    /// Caveats where the measured QD1 cost slopes and the model's disagree.
    pub(super) fn slope_checks(&mut self, tx: &Transfers) {
        if let Some(rf) = self.a.read_fit {
            let model_slope = tx.slope_r + tx.u;
            if (rf.slope - model_slope).abs() > 0.25 * rf.slope.abs().max(model_slope) {
                self.caveats.push(format!(
                    "the read cost slope ({:.4} ns/B) differs from the model's ({model_slope:.4} ns/B: the front end's transfer at least): large-read QD1 latency is off by up to {:.0} µs at 128 KB",
                    rf.slope,
                    (rf.slope - model_slope).abs() * BIG / 1e3
                ));
            }
        }
        if let Some(wf) = self.a.write_fit {
            let model_slope = if self.buffered {
                tx.slope_w
            } else {
                tx.slope_w + tx.u_w
            };
            if (wf.slope - model_slope).abs() > 0.25 * wf.slope.abs().max(model_slope) {
                self.caveats.push(format!(
                    "the write cost slope ({:.4} ns/B) differs from the model's ({model_slope:.4} ns/B): large-write QD1 latency is off by up to {:.0} µs at 128 KB",
                    wf.slope,
                    (wf.slope - model_slope).abs() * BIG / 1e3
                ));
            }
        }
    }

    /// The model, its figures rounded into the profile's units.
    pub(super) fn model(
        self,
        fr: FrontPart,
        tx: &Transfers,
        c: &Commands,
        f: f64,
        st: Stages,
        u: Units,
    ) -> Model {
        let mut anchors = self.a.clone();
        anchors.read_lat_qd1_ns = self.lr.round();
        anchors.write_lat_qd1_ns = self.lw.round();
        anchors.read_iops = self.ir.round();
        anchors.write_iops = self.iw.round();
        let bus_bytes = round(tx.bus).max(1);
        let bus_w_bytes = round(tx.bus_w).max(1);
        let unit_bytes = round(tx.unit_bw).max(1);
        let unit_w_bytes = round(tx.unit_bw_w).max(1);
        let (link_bytes, link_w_bytes) = if fr.nl_r > 0.0 {
            let l = round((1e9 / fr.nl_r).min(1e12)).max(1);
            let lw = round((1e9 / fr.nl_w).min(1e12)).max(1);
            (Some(l), (lw != l).then_some(lw))
        } else {
            (None, None)
        };
        Model {
            service: None,
            read_block_after_write_ns: None,
            placement: crate::model::Placement::Striped,
            read_load_exponent: None,
            write_load_exponent: None,
            sim_fits: Vec::new(),
            anchors,
            max_outstanding: 1024,
            fetch_ns: round(f),
            complete_ns: round(f),
            read_cmd_ns: round(c.read_cmd).max(1),
            write_cmd_ns: round(c.write_cmd).max(1),
            front_end: fr.fe,
            batch_ns: None,
            front_choice: fr.choice,
            units: u.units,
            stripe_bytes: STRIPE_BYTES,
            read_ns: round(st.read_ns).max(1),
            write_ns: round(st.write_ns).max(1),
            unit_bandwidth_bytes: unit_bytes,
            bus_bandwidth_bytes: bus_bytes,
            write_unit_bandwidth_bytes: (unit_w_bytes != unit_bytes).then_some(unit_w_bytes),
            write_bus_bandwidth_bytes: (bus_w_bytes != bus_bytes).then_some(bus_w_bytes),
            link_bandwidth_bytes: link_bytes,
            write_link_bandwidth_bytes: link_w_bytes,
            write_parallel_units: u.write_parallel,
            read_parallel_units: u.read_parallel,
            write_buffer: st.write_buffer,
            derivation: self.d,
            caveats: self.caveats,
        }
    }
}
