//! Fitting the queue-depth curves: the closed queueing network's throughput (MVA) and
//! the units, command and unit times that match the measured curves; the service-time
//! spread from the QD1 percentiles.

use super::*;

/// The fitted shape of the queue-depth curves.
#[derive(Clone, Debug, PartialEq)]
pub struct Shape {
    /// Media units (fitted to the read curve).
    pub units: u32,
    /// Units that serve in-place writes (fitted to the write curve; `None` for
    /// buffered writes, whose curve is the destage rate's).
    pub write_units: Option<u32>,
    /// `fetch_ns` = `complete_ns`, ns.
    pub fetch_ns: f64,
    /// `read_cmd_ns` · read IOPS (1: the front end alone caps reads at the measured IOPS).
    pub read_cmd_share: f64,
    /// The same for writes.
    pub write_cmd_share: f64,
    /// Root-mean-square relative error of the fitted IOPS, percent.
    pub rms_pct: f64,
    /// Points fitted.
    pub points: usize,
}

/// IOPS of the model's closed loop at queue depths 1..=`qmax` by mean-value analysis
/// (Reiser & Lavenberg): a delay `delay_ns` (fetch + complete), the front end (one FIFO
/// server, `cmd_ns` per command) and `units` FIFO units chosen uniformly at random
/// (`unit_ns` per command). Service times are fixed, so a job arriving at a busy server
/// waits for half a service on average for the one in service (the residual of a
/// deterministic service), not a whole one as in exponential MVA.
pub fn mva_iops(qmax: u32, delay_ns: f64, cmd_ns: f64, unit_ns: f64, units: u32) -> Vec<f64> {
    let u = units.max(1) as f64;
    let (mut q_fe, mut q_u, mut x) = (0.0f64, 0.0f64, 0.0f64);
    let mut out = Vec::with_capacity(qmax as usize);
    let cap = (1e9 / cmd_ns.max(1e-9)).min(u * 1e9 / unit_ns.max(1e-9));
    for n in 1..=qmax {
        let rho_fe = (x * cmd_ns / 1e9).min(1.0);
        let rho_u = (x * unit_ns / u / 1e9).min(1.0);
        let r_fe = cmd_ns * (1.0 + q_fe - 0.5 * rho_fe);
        let r_u = unit_ns * (1.0 + q_u - 0.5 * rho_u);
        let r = delay_ns + r_fe + r_u;
        // The residual approximation can overshoot the bottleneck; it never exceeds it.
        x = (n as f64 * 1e9 / r).min(cap);
        q_fe = x * r_fe / 1e9;
        q_u = x * r_u / u / 1e9;
        out.push(x);
    }
    out
}

/// Fit units, latency-only time and front-end shares to the measured queue-depth
/// curves (least squares of log IOPS), keeping each QD1 latency exact: for each
/// latency-only time, the read curve's units and share and the write curve's units and
/// share are chosen apart (reads and writes have their own parallelism), and the time
/// with the smallest sum of both errors wins. `None` when a curve has fewer than three
/// depths. Writes take part unless they are buffered. `read_unit_min_ns` and
/// `write_unit_min_ns` are the least unit times (the 4 KiB unit transfers).
pub fn fit_shape(
    a: &Anchors,
    buffered: bool,
    read_unit_min_ns: f64,
    write_unit_min_ns: f64,
) -> Option<Shape> {
    fit_shape_with(
        a,
        buffered,
        read_unit_min_ns,
        write_unit_min_ns,
        [None, None],
    )
}

/// [`fit_shape`] with the front-end shares of reads and writes given where they are
/// measured (`Some(share)`: the additive front end's 4 KiB time from the size sweep's
/// line, times the IOPS) instead of chosen among ¼, ½, ¾ and 1.
pub fn fit_shape_with(
    a: &Anchors,
    buffered: bool,
    read_unit_min_ns: f64,
    write_unit_min_ns: f64,
    fixed_shares: [Option<f64>; 2],
) -> Option<Shape> {
    if a.read_curve.len() < 3 || (!buffered && a.write_curve.len() < 3) {
        return None;
    }
    let qmax = a
        .read_curve
        .iter()
        .chain(if buffered {
            [].iter()
        } else {
            a.write_curve.iter()
        })
        .map(|p| p.0)
        .max()?;
    let lr = a.read_lat_qd1_ns;
    let lw = a.write_lat_qd1_ns;
    let err = |curve: &[(u32, f64)],
               l: f64,
               iops: f64,
               f: f64,
               k: f64,
               units: u32,
               unit_min: f64|
     -> Option<f64> {
        let cmd = k * 1e9 / iops.max(1.0);
        let unit = l - 2.0 * f - cmd;
        if unit < unit_min {
            return None;
        }
        let x = mva_iops(qmax, 2.0 * f, cmd, unit, units);
        Some(
            curve
                .iter()
                .filter(|p| p.1 > 0.0 && p.0 >= 1)
                .map(|&(q, m)| (x[q as usize - 1] / m).ln().powi(2))
                .sum(),
        )
    };
    const SHARES: [f64; 4] = [0.25, 0.5, 0.75, 1.0];
    // The best (error, units, share) of one curve at latency-only time `f`.
    let best_of =
        |curve: &[(u32, f64)], l: f64, iops: f64, f: f64, unit_min: f64, fixed: Option<f64>| {
            let one;
            let shares: &[f64] = match fixed {
                Some(k) => {
                    one = [k];
                    &one
                }
                None => &SHARES,
            };
            let mut best: Option<(f64, u32, f64)> = None;
            for units in 1..=256u32 {
                for &k in shares {
                    if let Some(e) = err(curve, l, iops, f, k, units, unit_min) {
                        if best.is_none_or(|b| e < b.0 - 1e-12) {
                            best = Some((e, units, k));
                        }
                    }
                }
            }
            best
        };
    let n = a.read_curve.len() + if buffered { 0 } else { a.write_curve.len() };
    let mut best: Option<(f64, Shape)> = None;
    for fi in 0..10 {
        let f = fi as f64 * 0.05 * lr.min(lw);
        let Some((er, ur, kr)) = best_of(
            &a.read_curve,
            lr,
            a.read_iops,
            f,
            read_unit_min_ns,
            fixed_shares[0],
        ) else {
            continue;
        };
        let (ew, uw, kw) = if buffered {
            (0.0, None, 1.0)
        } else {
            match best_of(
                &a.write_curve,
                lw,
                a.write_iops,
                f,
                write_unit_min_ns,
                fixed_shares[1],
            ) {
                Some((e, u, k)) => (e, Some(u), k),
                None => continue,
            }
        };
        let e = er + ew;
        if best.as_ref().is_none_or(|b| e < b.0 - 1e-12) {
            best = Some((
                e,
                Shape {
                    units: ur,
                    write_units: uw,
                    fetch_ns: f,
                    read_cmd_share: kr,
                    write_cmd_share: kw,
                    rms_pct: ((e / n as f64).sqrt().exp() - 1.0) * 100.0,
                    points: n,
                },
            ));
        }
    }
    best.map(|b| b.1)
}

/// σ of a mean-preserving log-normal on `media_ns` whose p99 lies `spread_ns` above
/// its median: `spread = media · e^(−σ²/2) · (e^(2.326σ) − 1)`, solved by bisection on
/// [0, 2] (the right side grows with σ there); 0 for no spread.
pub fn fit_sigma(spread_ns: f64, media_ns: f64) -> f64 {
    if spread_ns <= 0.0 || media_ns <= 0.0 {
        return 0.0;
    }
    let f = |s: f64| media_ns * (-s * s / 2.0).exp() * ((2.326 * s).exp() - 1.0);
    if f(2.0) <= spread_ns {
        return 2.0;
    }
    let (mut lo, mut hi) = (0.0, 2.0);
    for _ in 0..60 {
        let mid = (lo + hi) / 2.0;
        if f(mid) < spread_ns {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo + hi) / 2.0
}
