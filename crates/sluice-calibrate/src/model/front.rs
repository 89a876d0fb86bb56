//! Which front end the device has (`controller.front_end`, see `sluice-device`): the
//! size sweep at the knee depth, where the front end is the bottleneck, says how a
//! request's cost grows with its size. `1 / IOPS` against the size `len` is fitted three
//! ways, each direction apart (reads; in-place writes — a buffered write's sweep is its
//! destage rate's):
//!
//! * **additive**, `a + b · len`: least relative squares of `1 / IOPS` against `len`
//!   (the command is processed, then its data moved: `cmd = a`, `bus = 1 / b`);
//! * **max**, `max(cmd, b · len)`: flat, then bandwidth bound; for each split of the
//!   sorted sizes into a command-bound and a bus-bound part, `cmd` is the geometric
//!   mean of the first part's `1 / IOPS` and `b` that of the second part's
//!   `1 / (IOPS · len)` (each part's least squares of log ratios), and the split whose
//!   model has the smallest error over all the sizes wins;
//! * **additive_capped**, `max(a + b · len, c · len)`: a line under a bandwidth
//!   ceiling (`cmd = a`, `link = 1 / b`, `bus = 1 / c`). For each split of the sorted
//!   sizes into a line part (the smaller sizes, at least two) and a ceiling part (the
//!   larger, at least [`MIN_CEILING_SIZES`]), the line is the least relative squares of
//!   `1 / IOPS` over the first part and `c` the geometric mean of the second part's
//!   `1 / (IOPS · len)`; splits whose model is not a front end (`a`, `b` positive,
//!   `c > b`) are skipped, and the split with the smallest error over all the sizes
//!   wins. It needs four sizes.
//!
//! The lines are least squares of the *relative* error, `Σ ((a + b·len − y) / y)²`
//! (weights `1 / y²`), so a small size counts as much as a large one, as in the
//! scoring below; ordinary least squares let the largest sizes' microseconds decide
//! the line (run 7 in docs/calibrate.md: 16 KiB reads 11 % too cheap on the line, and
//! their simulated IOPS at the knee 24 % too high). Only the
//! sweep's steady points take part when at least [`MIN_SIZES`] settled (the summary
//! leaves the others out and the derivation names them).
//!
//! All are scored alike: the root-mean-square of `ln(model / measured)` over the
//! sizes (reported as `e^rms − 1`, %). The additive front end is chosen when its
//! summed squared error over the fitted directions is smaller than max's and every
//! fitted line is a front end (positive intercept and slope); otherwise `max`, the
//! default. The capped form then replaces the one chosen when every fitted direction
//! has a capped fit, and its rms error is smaller by more than [`CAPPED_MARGIN_PCT`]
//! (it has one parameter more, so on a device of either other form it can always
//! match a size or two more closely by chance). Sizes below 4 KiB are left out: below
//! the minimum efficient size a device serves them at the 4 KiB cost, which no form
//! describes.

use super::*;
use crate::analysis::relative_line;
use sluice_device::FrontEnd;

/// Fewest sizes a direction's sweep needs to take part.
pub const MIN_SIZES: usize = 3;

/// Fewest sizes on the capped form's ceiling (one size alone would be matched exactly
/// by any ceiling through it).
pub const MIN_CEILING_SIZES: usize = 2;

/// How much smaller (percentage points of rms error over all the fitted sizes) the
/// capped form's error must be than the other form's to be chosen.
pub const CAPPED_MARGIN_PCT: f64 = 1.0;

/// One form's fit of `1 / IOPS` against the size.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SizeFit {
    /// Command time, ns: the line's intercept (additive, capped) or the flat part (max).
    pub cmd_ns: f64,
    /// Transfer time per byte, ns/B (`1 / bus`; the capped form's ceiling).
    pub ns_per_byte: f64,
    /// The capped form's line slope, ns/B (`1 / link`); 0 for the other forms.
    pub link_ns_per_byte: f64,
    /// Sum of `ln(model / measured)²` over the sizes.
    pub sse: f64,
    /// Sizes fitted.
    pub points: usize,
}

impl SizeFit {
    /// The form's `1 / IOPS` of `len`-byte requests, ns.
    pub fn ns(&self, front_end: FrontEnd, len: f64) -> f64 {
        front_end.combine_f64(
            self.cmd_ns,
            self.ns_per_byte * len,
            self.link_ns_per_byte * len,
        )
    }

    /// Root-mean-square relative error, % (`e^rms − 1` of the log ratios).
    pub fn rms_pct(&self) -> f64 {
        rms_pct(self.sse, self.points)
    }

    /// Whether the line is a front end (the additive form needs both parts positive;
    /// the capped form's line slope, when it has one, is below its ceiling's).
    pub fn is_front_end(&self) -> bool {
        self.cmd_ns >= MIN_STAGE_NS
            && self.ns_per_byte > 0.0
            && self.link_ns_per_byte >= 0.0
            && self.link_ns_per_byte < self.ns_per_byte
    }

    /// The size where the capped form's ceiling takes over from its line, bytes.
    pub fn break_bytes(&self) -> f64 {
        self.cmd_ns / (self.ns_per_byte - self.link_ns_per_byte)
    }
}

fn rms_pct(sse: f64, n: usize) -> f64 {
    ((sse / n.max(1) as f64).sqrt().exp() - 1.0) * 100.0
}

/// The forms' fits of one direction's size sweep.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DirFits {
    /// `a + b · len`.
    pub additive: SizeFit,
    /// `max(cmd, b · len)`.
    pub max: SizeFit,
    /// `max(a + b · len, c · len)` (`None`: fewer than four sizes, or no split of
    /// them is a front end).
    pub capped: Option<SizeFit>,
    /// Smallest and largest size fitted, bytes.
    pub sizes: (u32, u32),
}

/// The front end chosen and the fits that chose it.
#[derive(Clone, Debug, PartialEq)]
pub struct FrontChoice {
    /// The form of `controller.front_end`.
    pub front_end: FrontEnd,
    /// Reads' fits (`None`: fewer than [`MIN_SIZES`] sizes).
    pub read: Option<DirFits>,
    /// In-place writes' fits (`None`: buffered, or too few sizes).
    pub write: Option<DirFits>,
    /// Sizes of each direction's sweep (reads, writes) left out as not steady, bytes.
    pub left_out: [Vec<u32>; 2],
}

impl FrontChoice {
    /// The fits of reads or writes.
    pub fn of(&self, write: bool) -> Option<&DirFits> {
        if write {
            self.write.as_ref()
        } else {
            self.read.as_ref()
        }
    }

    /// The line of reads or writes when the additive or capped front end is chosen
    /// (the command time, bus and link of that direction come from it).
    pub fn line(&self, write: bool) -> Option<SizeFit> {
        let d = self.of(write)?;
        match self.front_end {
            FrontEnd::Max => None,
            FrontEnd::Additive => Some(d.additive),
            FrontEnd::AdditiveCapped => d.capped,
        }
    }

    /// The summed squared errors of (additive, max) over the fitted directions, and
    /// the points.
    fn totals(&self) -> (f64, f64, usize) {
        [&self.read, &self.write]
            .into_iter()
            .flatten()
            .fold((0.0, 0.0, 0), |(a, m, n), d| {
                (a + d.additive.sse, m + d.max.sse, n + d.additive.points)
            })
    }

    /// The capped form's summed squared error over the fitted directions, when every
    /// one of them (reads at least) has a capped fit that is a front end.
    fn capped_total(&self) -> Option<f64> {
        self.read.as_ref()?;
        [&self.read, &self.write]
            .into_iter()
            .flatten()
            .map(|d| d.capped.filter(SizeFit::is_front_end).map(|c| c.sse))
            .sum()
    }

    /// The derivation's lines: each direction's two fits, and the verdict.
    pub fn lines(&self) -> Vec<String> {
        let mut v = Vec::new();
        for (what, d, left) in [
            ("reads", &self.read, &self.left_out[0]),
            ("writes", &self.write, &self.left_out[1]),
        ] {
            let Some(d) = d else {
                v.push(format!(
                    "front end, {what}: no size sweep to fit ({}, or fewer than {MIN_SIZES} sizes of 4 KiB and up at the knee)",
                    if what == "writes" { "buffered" } else { "none measured" }
                ));
                continue;
            };
            let left = match left.is_empty() {
                true => String::new(),
                false => format!(
                    "; left out, not steady: {} KiB",
                    left.iter()
                        .map(|s| format!("{}", s / 1024))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
            v.push(format!(
                "front end, {what}: 1 / IOPS of the size sweep at the knee depth ({}–{} KiB, {} sizes{left}): additive a + b·len = {:.2} µs + {:.4} ns/B, rms error {:.1} %; max(cmd, len / bus) = max({:.2} µs, {:.4} ns/B · len), rms error {:.1} %",
                d.sizes.0 / 1024,
                d.sizes.1 / 1024,
                d.additive.points,
                d.additive.cmd_ns / 1e3,
                d.additive.ns_per_byte,
                d.additive.rms_pct(),
                d.max.cmd_ns / 1e3,
                d.max.ns_per_byte,
                d.max.rms_pct()
            ));
            v.push(match d.capped {
                Some(c) => format!(
                    "front end, {what}: additive_capped max(a + b·len, c·len) = max({:.2} µs + {:.4} ns/B · len, {:.4} ns/B · len) (link {:.0} MB/s, ceiling {:.0} MB/s, break at {:.1} KiB), rms error {:.1} %",
                    c.cmd_ns / 1e3,
                    c.link_ns_per_byte,
                    c.ns_per_byte,
                    1e3 / c.link_ns_per_byte,
                    1e3 / c.ns_per_byte,
                    c.break_bytes() / 1024.0,
                    c.rms_pct()
                ),
                None => format!(
                    "front end, {what}: additive_capped not fitted (fewer than {} sizes, or no split of them a front end)",
                    MIN_SIZES.max(2 + MIN_CEILING_SIZES)
                ),
            });
        }
        let (a, m, n) = self.totals();
        let capped = self.capped_total().map_or("not fitted".to_string(), |c| {
            format!("{:.1} %", rms_pct(c, n))
        });
        v.push(match (n, self.front_end) {
            (0, _) => "controller.front_end = max (the default): no size sweep to choose by".into(),
            (_, FrontEnd::AdditiveCapped) => format!(
                "controller.front_end = additive_capped: max(a + b·len, c·len) fits the size sweeps best ({capped} rms against {:.1} % for additive and {:.1} % for max over {n} points, below the better by more than the margin of {CAPPED_MARGIN_PCT} %); cmd, link and bus from the line and the ceiling",
                rms_pct(a, n),
                rms_pct(m, n)
            ),
            (_, FrontEnd::Additive) => format!(
                "controller.front_end = additive: a + b·len fits the size sweeps better ({:.1} % rms against {:.1} % for max over {n} points; additive_capped {capped}, not better by more than the margin of {CAPPED_MARGIN_PCT} %); cmd and bus from the line",
                rms_pct(a, n),
                rms_pct(m, n)
            ),
            (_, FrontEnd::Max) => format!(
                "controller.front_end = max: max(cmd, len / bus) fits the size sweeps {} ({:.1} % rms against {:.1} % for additive over {n} points; additive_capped {capped}, not better by more than the margin of {CAPPED_MARGIN_PCT} %)",
                if self.additive_is_front_end() { "as well or better" } else { "(the additive line is not a front end: an intercept or slope not positive)" },
                rms_pct(m, n),
                rms_pct(a, n)
            ),
        });
        v
    }

    fn additive_is_front_end(&self) -> bool {
        [&self.read, &self.write]
            .into_iter()
            .flatten()
            .all(|d| d.additive.is_front_end())
    }
}

/// The additive fit: least squares of `1 / IOPS` (ns) against the size, scored by
/// the log ratios. `None` for fewer than [`MIN_SIZES`] sizes.
pub fn fit_additive(sweep: &[(u32, f64)]) -> Option<SizeFit> {
    let pts = usable(sweep);
    if pts.len() < MIN_SIZES {
        return None;
    }
    let (a, b) = relative_line(&pts)?;
    let fit = SizeFit {
        cmd_ns: a,
        ns_per_byte: b,
        link_ns_per_byte: 0.0,
        sse: 0.0,
        points: pts.len(),
    };
    Some(SizeFit {
        sse: sse(&pts, |s| fit.ns(FrontEnd::Additive, s)),
        ..fit
    })
}

/// The max fit: the best split of the sorted sizes into a command-bound and a
/// bus-bound part (module docs). `None` for fewer than [`MIN_SIZES`] sizes.
pub fn fit_max(sweep: &[(u32, f64)]) -> Option<SizeFit> {
    let mut pts = usable(sweep);
    if pts.len() < MIN_SIZES {
        return None;
    }
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    let n = pts.len();
    let mut best: Option<SizeFit> = None;
    for k in 0..=n {
        // k = 0: all bus bound (cmd at most the smallest transfer); k = n: all command
        // bound (the bus just fast enough for the largest size).
        let b = if k < n {
            gmean(&mut pts[k..].iter().map(|p| p.1 / p.0))
        } else {
            gmean(&mut pts.iter().map(|p| p.1)) / pts[n - 1].0
        };
        let cmd = if k > 0 {
            gmean(&mut pts[..k].iter().map(|p| p.1))
        } else {
            b * pts[0].0
        };
        let fit = SizeFit {
            cmd_ns: cmd,
            ns_per_byte: b,
            link_ns_per_byte: 0.0,
            sse: sse(&pts, |s| FrontEnd::Max.combine_f64(cmd, b * s, 0.0)),
            points: n,
        };
        if best.is_none_or(|x| fit.sse < x.sse - 1e-15) {
            best = Some(fit);
        }
    }
    best
}

/// The capped fit: the best split of the sorted sizes into a line part and a ceiling
/// part (module docs). `None` for fewer than four sizes or when no split is a front
/// end.
pub fn fit_capped(sweep: &[(u32, f64)]) -> Option<SizeFit> {
    let mut pts = usable(sweep);
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    let n = pts.len();
    let mut best: Option<SizeFit> = None;
    // k: the sizes on the line (at least two, for a slope).
    for k in 2..=n.saturating_sub(MIN_CEILING_SIZES) {
        let Some((a, b)) = relative_line(&pts[..k]) else {
            continue;
        };
        let c = gmean(&mut pts[k..].iter().map(|p| p.1 / p.0));
        let fit = SizeFit {
            cmd_ns: a,
            ns_per_byte: c,
            link_ns_per_byte: b,
            sse: sse(&pts, |s| {
                FrontEnd::AdditiveCapped.combine_f64(a, c * s, b * s)
            }),
            points: n,
        };
        if b > 0.0 && fit.is_front_end() && best.is_none_or(|x| fit.sse < x.sse - 1e-15) {
            best = Some(fit);
        }
    }
    best
}

/// The geometric mean of positive numbers.
fn gmean(it: &mut dyn Iterator<Item = f64>) -> f64 {
    let (s, k) = it.fold((0.0, 0usize), |(s, k), x| (s + x.ln(), k + 1));
    (s / k.max(1) as f64).exp()
}

/// All fits of one direction's sweep.
pub fn fit_dir(sweep: &[(u32, f64)]) -> Option<DirFits> {
    let additive = fit_additive(sweep)?;
    let max = fit_max(sweep)?;
    let capped = fit_capped(sweep);
    let pts = usable(sweep);
    let lo = pts.iter().map(|p| p.0).fold(f64::INFINITY, f64::min) as u32;
    let hi = pts.iter().map(|p| p.0).fold(0.0, f64::max) as u32;
    Some(DirFits {
        additive,
        max,
        capped,
        sizes: (lo, hi),
    })
}

/// Choose the front end from the anchors' size sweeps (module docs); `buffered`
/// leaves the writes' sweep out.
pub fn choose_front_end(a: &Anchors, buffered: bool) -> FrontChoice {
    let mut c = FrontChoice {
        front_end: FrontEnd::Max,
        read: fit_dir(&a.read_size_curve),
        write: if buffered {
            None
        } else {
            fit_dir(&a.write_size_curve)
        },
        left_out: [a.read_size_left_out.clone(), a.write_size_left_out.clone()],
    };
    let (add, max, n) = c.totals();
    if n > 0 && c.additive_is_front_end() && add < max {
        c.front_end = FrontEnd::Additive;
    }
    if let Some(capped) = c.capped_total() {
        let other = if c.front_end == FrontEnd::Additive {
            add
        } else {
            max
        };
        if rms_pct(capped, n) + CAPPED_MARGIN_PCT < rms_pct(other, n) {
            c.front_end = FrontEnd::AdditiveCapped;
        }
    }
    c
}

/// The sweep's points of 4 KiB and up with a positive IOPS, as (bytes, ns per I/O).
fn usable(sweep: &[(u32, f64)]) -> Vec<(f64, f64)> {
    sweep
        .iter()
        .filter(|p| p.0 >= SMALL as u32 && p.1 > 0.0 && p.1.is_finite())
        .map(|&(s, iops)| (s as f64, 1e9 / iops))
        .collect()
}

fn sse(pts: &[(f64, f64)], model: impl Fn(f64) -> f64) -> f64 {
    pts.iter()
        .map(|&(s, y)| {
            let m = model(s);
            if m > 0.0 {
                (m / y).ln().powi(2)
            } else {
                // A line that reaches zero or below explains nothing there.
                f64::INFINITY
            }
        })
        .sum()
}

#[cfg(test)]
mod tests;
