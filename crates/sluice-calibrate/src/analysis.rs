//! What the measured points mean: steady-state detection, the knee of a throughput
//! curve, the minimum efficient I/O size and the FIOS linear cost model.
//!
//! Everything here is a pure function of numbers (no I/O, no clock), so it is tested
//! on synthetic curves.
//!
//! ## Definitions
//!
//! * **Steady state.** A point is measured in consecutive windows after a warm-up; it is
//!   *steady* when the last `agree` windows' IOPS lie within `tolerance` of each other:
//!   `(max − min) / mean ≤ tolerance` ([`agreeing_tail`]). Seastar's iotune reports the
//!   first burst; a device with a write buffer or a noisy host gives a different figure
//!   every time that way.
//! * **Knee queue depth** (the FastResponse observation, ICS '22 §3: "once the queue
//!   depth exceeds a certain value, the throughput does not increase any more, but the
//!   latency increases significantly"): the smallest measured queue depth whose IOPS
//!   reaches `KNEE_FRACTION` (90 %) of the largest IOPS of the sweep. Beyond it, latency
//!   grows (Little's law: ≈ QD / IOPS) for at most 10 % more throughput.
//! * **Knee size**: the smallest measured request size whose bandwidth reaches 90 % of
//!   the largest bandwidth of the size sweep (FastResponse: "approaches its maximum
//!   bandwidth when the request size increases to 32 KB").
//! * **Minimum efficient I/O size**: the smallest measured request size whose IOPS
//!   reaches 90 % of the best IOPS over all sizes (at the knee queue depth). Requests
//!   smaller than it are not served faster — a device with 4 KiB pages does a
//!   read-modify-write for a 512 B write — so an application gains nothing by issuing
//!   them. (iotune takes this size from sysfs' `minimum_io_size` instead of measuring
//!   it, and measures write IOPS with 512 B requests on drives that need 4 KiB.)
//! * **Cost model** (FIOS, FAST '12 §4.3): the elapsed time of a standalone request
//!   (queue depth 1) is `cost = offset + per_byte · len`, fitted per operation by least
//!   squares over the QD1 size sweep (FIOS calibrates two sizes, 4 KB and 128 KB; a fit
//!   over six sizes also says, by its R², whether the model is linear at all).

/// The fraction of the best throughput that counts as "reached" for the knees and the
/// minimum efficient size.
pub const KNEE_FRACTION: f64 = 0.9;

/// A least-squares line `y = offset + slope · x` with its coefficient of determination.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinearFit {
    /// Intercept (for the cost model: ns).
    pub offset: f64,
    /// Slope (for the cost model: ns per byte).
    pub slope: f64,
    /// R² = 1 − SS_res / SS_tot (1 when every y is equal and the fit is exact).
    pub r2: f64,
    /// Points fitted.
    pub n: usize,
}

impl LinearFit {
    /// The fitted value at `x`.
    pub fn at(&self, x: f64) -> f64 {
        self.offset + self.slope * x
    }
}

/// Ordinary least squares over `(x, y)` points. `None` with fewer than two points or
/// when every `x` is the same (no line is defined).
pub fn linear_fit(points: &[(f64, f64)]) -> Option<LinearFit> {
    let n = points.len();
    let (offset, slope, my) = weighted_line(points, |_| 1.0)?;
    let ss_tot: f64 = points.iter().map(|p| (p.1 - my) * (p.1 - my)).sum();
    let ss_res: f64 = points
        .iter()
        .map(|p| {
            let e = p.1 - (offset + slope * p.0);
            e * e
        })
        .sum();
    let r2 = if ss_tot > 0.0 {
        1.0 - ss_res / ss_tot
    } else {
        1.0
    };
    Some(LinearFit {
        offset,
        slope,
        r2,
        n,
    })
}

/// The line `a + b · x` of least relative squares through `(x, y)` points (`y > 0`):
/// it minimises `Σ ((a + b·x − y) / y)²`, weighted least squares with weights `1 / y²`,
/// so a small `y` counts as much as a large one — for fits scored by relative error
/// (the front end's size sweeps, the batch fit's `1 / IOPS` against `1 / QD`).
/// Returns `(a, b)`; `None` for fewer than two distinct `x`.
pub fn relative_line(pts: &[(f64, f64)]) -> Option<(f64, f64)> {
    weighted_line(pts, |y| 1.0 / (y * y)).map(|(a, b, _)| (a, b))
}

/// Weighted least squares `a + b · x` over `(x, y)` points, point weights `w(y)`:
/// `(a, b, weighted mean of y)`. `None` with fewer than two points or when every `x`
/// is the same.
fn weighted_line(pts: &[(f64, f64)], w: impl Fn(f64) -> f64) -> Option<(f64, f64, f64)> {
    if pts.len() < 2 {
        return None;
    }
    let sw: f64 = pts.iter().map(|p| w(p.1)).sum();
    let mx = pts.iter().map(|p| w(p.1) * p.0).sum::<f64>() / sw;
    let my = pts.iter().map(|p| w(p.1) * p.1).sum::<f64>() / sw;
    let sxx: f64 = pts.iter().map(|p| w(p.1) * ((p.0 - mx) * (p.0 - mx))).sum();
    let sxy: f64 = pts.iter().map(|p| w(p.1) * (p.0 - mx) * (p.1 - my)).sum();
    if sxx <= 0.0 || !sxx.is_finite() {
        return None;
    }
    let b = sxy / sxx;
    Some((my - b * mx, b, my))
}

/// The smallest `x` whose `y` reaches `frac` of the largest `y` (points in any order;
/// ties in `x` keep the best `y`). `None` when there are no points or no positive `y`.
pub fn first_reaching(points: &[(u32, f64)], frac: f64) -> Option<u32> {
    let max = points
        .iter()
        .map(|p| p.1)
        .filter(|y| y.is_finite())
        .fold(f64::NEG_INFINITY, f64::max);
    if max <= 0.0 || !max.is_finite() {
        return None;
    }
    points
        .iter()
        .filter(|p| p.1.is_finite() && p.1 >= frac * max)
        .map(|p| p.0)
        .min()
}

/// Knee queue depth from `(queue depth, IOPS)` points: the smallest queue depth that
/// reaches [`KNEE_FRACTION`] of the best IOPS.
pub fn knee_qd(points: &[(u32, f64)]) -> Option<u32> {
    first_reaching(points, KNEE_FRACTION)
}

/// Knee size from `(request size, bandwidth)` points: the smallest size that reaches
/// [`KNEE_FRACTION`] of the best bandwidth.
pub fn knee_size(points: &[(u32, f64)]) -> Option<u32> {
    first_reaching(points, KNEE_FRACTION)
}

/// Minimum efficient I/O size from `(request size, IOPS)` points: the smallest size that
/// reaches [`KNEE_FRACTION`] of the best IOPS over all sizes.
pub fn min_efficient_size(points: &[(u32, f64)]) -> Option<u32> {
    first_reaching(points, KNEE_FRACTION)
}

/// Whether the last `agree` values lie within `tolerance` of each other:
/// `(max − min) / mean ≤ tolerance`. `false` with fewer than `agree` values.
pub fn agreeing_tail(values: &[f64], agree: usize, tolerance: f64) -> bool {
    values.len() >= agree.max(1) && spread(values, agree).is_some_and(|s| s <= tolerance)
}

/// `(max − min) / mean` of the last `agree` values (of all values when there are
/// fewer); `None` when empty or the mean is not positive.
pub fn spread(values: &[f64], agree: usize) -> Option<f64> {
    let k = agree.max(1).min(values.len());
    if k == 0 {
        return None;
    }
    let tail = &values[values.len() - k..];
    let mean = tail.iter().sum::<f64>() / k as f64;
    if mean <= 0.0 || !mean.is_finite() {
        return None;
    }
    let max = tail.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let min = tail.iter().cloned().fold(f64::INFINITY, f64::min);
    Some((max - min) / mean)
}

/// The median of `values` (mean of the middle two for an even count); `None` when empty.
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v: Vec<f64> = values.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let m = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    })
}

/// The `q` quantile (0..1) of several windows' latencies pooled, from each window's
/// I/O count and completion-latency CCDF (`(latency, fraction of its I/Os slower)`,
/// ascending, as the metrics report it): the smallest listed latency above which at
/// most `1 − q` of all the I/Os lie. Unlike the median of the windows' own quantiles,
/// a window that met a burst of slow I/Os counts with its share. `None` without I/Os.
pub fn pooled_quantile(windows: &[(u64, &[(u64, f64)])], q: f64) -> Option<f64> {
    let total: u64 = windows
        .iter()
        .filter(|w| !w.1.is_empty())
        .map(|w| w.0)
        .sum();
    if total == 0 {
        return None;
    }
    let mut xs: Vec<u64> = windows
        .iter()
        .flat_map(|w| w.1.iter().map(|p| p.0))
        .collect();
    xs.sort_unstable();
    xs.dedup();
    // Fraction of window `w`'s I/Os slower than `x`: the last listed point at or below
    // `x` (all of them below its first latency).
    let above = |ccdf: &[(u64, f64)], x: u64| -> f64 {
        match ccdf.partition_point(|p| p.0 <= x) {
            0 => 1.0,
            i => ccdf[i - 1].1,
        }
    };
    let limit = (1.0 - q) * total as f64;
    xs.into_iter()
        .find(|&x| {
            let slower: f64 = windows
                .iter()
                .filter(|w| !w.1.is_empty())
                .map(|w| w.0 as f64 * above(w.1, x))
                .sum();
            slower <= limit + 1e-9
        })
        .map(|x| x as f64)
}

/// Relative error of `predicted` against `measured`, in percent (`+` = over).
pub fn error_pct(predicted: f64, measured: f64) -> f64 {
    if measured == 0.0 {
        return if predicted == 0.0 { 0.0 } else { f64::INFINITY };
    }
    (predicted - measured) / measured * 100.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_recovers_a_line_and_scores_noise() {
        // cost = 20 µs + 2 ns/B, exactly.
        let pts: Vec<(f64, f64)> = [4096u32, 8192, 16384, 32768, 65536, 131072]
            .iter()
            .map(|&s| (s as f64, 20_000.0 + 2.0 * s as f64))
            .collect();
        let f = linear_fit(&pts).unwrap();
        assert!((f.offset - 20_000.0).abs() < 1e-6, "{f:?}");
        assert!((f.slope - 2.0).abs() < 1e-9, "{f:?}");
        assert!((f.r2 - 1.0).abs() < 1e-12);
        assert_eq!(f.n, 6);
        assert!((f.at(1000.0) - 22_000.0).abs() < 1e-6);
        // Alternating ±5 µs noise: the fit stays close, R² drops below 1.
        let noisy: Vec<(f64, f64)> = pts
            .iter()
            .enumerate()
            .map(|(i, &(x, y))| (x, y + if i % 2 == 0 { 5_000.0 } else { -5_000.0 }))
            .collect();
        let g = linear_fit(&noisy).unwrap();
        assert!((g.slope - 2.0).abs() < 0.1, "{g:?}");
        assert!(g.r2 < 1.0 && g.r2 > 0.95, "{g:?}");
        // Pure noise around a constant: R² near 0.
        let flat = [(1.0, 10.0), (2.0, 12.0), (3.0, 10.0), (4.0, 12.0)];
        assert!(linear_fit(&flat).unwrap().r2 < 0.3);
        // Degenerate inputs.
        assert!(linear_fit(&[(1.0, 2.0)]).is_none());
        assert!(linear_fit(&[(1.0, 2.0), (1.0, 3.0)]).is_none());
    }

    /// IOPS of a device with QD1 latency `l` µs and a front end capped at `cap` IOPS:
    /// `min(qd / l, cap)` (the shape of the ull profile).
    fn capped(qd: u32, l_us: f64, cap: f64) -> f64 {
        (qd as f64 / (l_us * 1e-6)).min(cap)
    }

    #[test]
    fn knee_is_the_first_queue_depth_near_the_top() {
        let qds = [1u32, 2, 4, 8, 16, 32, 64];
        // 100 µs at QD1, capped at 60K IOPS: QD6 would reach the cap; QD8 is the first
        // measured depth at ≥ 90 % (QD4 gives 40K = 67 %).
        let pts: Vec<(u32, f64)> = qds
            .iter()
            .map(|&q| (q, capped(q, 100.0, 60_000.0)))
            .collect();
        assert_eq!(knee_qd(&pts), Some(8));
        // A soft curve: IOPS = cap · qd / (qd + 4): 90 % of the QD64 figure (0.941 cap)
        // is 0.847 cap, first reached at QD32 (0.889); QD16 gives 0.8.
        let soft: Vec<(u32, f64)> = qds
            .iter()
            .map(|&q| (q, q as f64 / (q as f64 + 4.0)))
            .collect();
        assert_eq!(knee_qd(&soft), Some(32));
        // Order does not matter, and a dip after the peak does not move the knee.
        let mut dip = pts.clone();
        dip.reverse();
        dip[0].1 = 50_000.0; // QD64 falls back (the device thrashes)
        assert_eq!(knee_qd(&dip), Some(8));
        assert_eq!(knee_qd(&[]), None);
        assert_eq!(knee_qd(&[(1, 0.0)]), None);
    }

    #[test]
    fn knee_size_and_minimum_efficient_size() {
        // Bandwidth = s / (20 µs + s / 2 GB/s): 90 % of the 128 KB figure first at 64 KB?
        let sizes = [4096u32, 8192, 16384, 32768, 65536, 131072];
        let bw = |s: u32| s as f64 / (20e-6 + s as f64 / 2e9);
        let pts: Vec<(u32, f64)> = sizes.iter().map(|&s| (s, bw(s))).collect();
        // bw(128K) = 1.53 GB/s; 0.9 × that = 1.38 GB/s; bw(64K) = 1.24, bw(128K) only.
        assert_eq!(knee_size(&pts), Some(131072));
        // A bus-capped device: s / max(10 µs, s / 1 GB/s) saturates at 16 KB (10.2 µs).
        let capped_bw = |s: u32| s as f64 / (10e-6f64).max(s as f64 / 1e9);
        let pts: Vec<(u32, f64)> = sizes.iter().map(|&s| (s, capped_bw(s))).collect();
        assert_eq!(knee_size(&pts), Some(16384));
        // IOPS against size: a 4 KiB-page device does a read-modify-write below 4 KiB,
        // so 512 B..2 KiB writes get half the IOPS; 4 KiB is the minimum efficient size.
        let iops = [
            (512u32, 30_000.0),
            (1024, 30_500.0),
            (2048, 31_000.0),
            (4096, 60_000.0),
            (8192, 58_000.0),
            (16384, 40_000.0),
        ];
        assert_eq!(min_efficient_size(&iops), Some(4096));
        // A device without penalty: the smallest size is already efficient.
        let flat = [(512u32, 61_000.0), (1024, 60_000.0), (4096, 60_000.0)];
        assert_eq!(min_efficient_size(&flat), Some(512));
    }

    #[test]
    fn steady_state_needs_agreeing_windows() {
        // A write buffer absorbing the first burst: 90K, 70K, then ~40K.
        let w = [90_000.0, 70_000.0, 41_000.0, 40_000.0, 40_500.0];
        assert!(!agreeing_tail(&w[..3], 3, 0.05));
        assert!(!agreeing_tail(&w[..4], 3, 0.05));
        assert!(agreeing_tail(&w, 3, 0.05));
        assert!(agreeing_tail(&w[..4], 2, 0.05));
        assert!(!agreeing_tail(&w[..2], 3, 0.5), "too few windows");
        let s = spread(&w, 3).unwrap();
        assert!((s - 1_000.0 / 40_500.0).abs() < 1e-9, "{s}");
        assert_eq!(spread(&[], 3), None);
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        assert!((error_pct(110.0, 100.0) - 10.0).abs() < 1e-12);
        assert!((error_pct(90.0, 100.0) + 10.0).abs() < 1e-12);
    }
}
