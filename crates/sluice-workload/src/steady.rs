//! fio's steady-state detection (`steadystate`, `ss_dur`, `ss_ramp`,
//! `steadystate_check_interval`) as an early end of a job, in both worlds: the
//! simulator calls [`SteadyState::check`] from virtual time, the real engine from its
//! clock — the detector itself reads no clock.
//!
//! # fio's rule
//! Every check interval `I` (default 1 s) the job's rate over the interval is taken:
//! IOPS, or bandwidth in bytes/s. Recording starts at the first check (with `ss_ramp=R`,
//! at the first check at least `R + I` after the job's start). The last
//! `n = ss_dur / I` rates form the window; once it is full, each check computes
//! * `iops` / `bw` (deviation): `d = max |yᵢ − ȳ|`; criterion `d`, or `100·d/ȳ` with a
//!   `%` limit;
//! * `lat` / `lat_slope`: the same on the interval's mean completion latency (ns,
//!   the completion latencies of the I/Os completed in the interval over their count);
//! * `iops_slope` / `bw_slope`: the least-squares slope over `x = 0 … n−1`,
//!   `s = (Σxy − Σx·Σy/n) / (Σx² − (Σx)²/n)`; criterion `s`, or `100·s/ȳ` with `%`;
//!
//! and the job ends when `|criterion| < limit`. sluice applies it to a job's threads
//! together (fio, to each thread unless `group_reporting`).

use std::collections::VecDeque;

use sluice_core::Nanos;

/// What steady state is judged on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SteadyMetric {
    /// I/Os per second.
    Iops,
    /// Bytes per second.
    Bw,
    /// Mean completion latency of the interval's I/Os, ns (fio's `lat`, `lat_slope`).
    Lat,
}

/// A job's steady-state settings.
#[derive(Clone, Debug, PartialEq)]
pub struct SteadySpec {
    /// IOPS or bandwidth.
    pub metric: SteadyMetric,
    /// Slope criterion (`*_slope`), else maximum deviation from the mean.
    pub slope: bool,
    /// The limit (percent of the mean when [`SteadySpec::percent`]).
    pub limit: f64,
    /// The limit is in percent of the window's mean.
    pub percent: bool,
    /// `ss_dur`: the window, ns.
    pub dur_ns: Nanos,
    /// `ss_ramp`: no data is recorded before this (plus one interval), ns.
    pub ramp_ns: Nanos,
    /// `steadystate_check_interval` (default 1 s), ns.
    pub interval_ns: Nanos,
}

impl SteadySpec {
    /// fio's name of the criterion and limit, e.g. `iops_slope:0.01%`.
    pub fn describe(&self) -> String {
        let m = match self.metric {
            SteadyMetric::Iops => "iops",
            SteadyMetric::Bw => "bw",
            SteadyMetric::Lat => "lat",
        };
        format!(
            "{m}{}:{}{}",
            if self.slope { "_slope" } else { "" },
            self.limit,
            if self.percent { "%" } else { "" }
        )
    }

    /// Rates in the window.
    pub fn intervals(&self) -> usize {
        (self.dur_ns / self.interval_ns.max(1)) as usize
    }
}

/// Read a `steadystate=` value: the criterion and limit (`iops_slope:0.1%`,
/// `bw:10m`, `iops:2`). `None` for the criterion's fio default limit is not
/// accepted (fio needs one too).
pub(crate) fn parse_steadystate(v: &str) -> Result<(SteadyMetric, bool, f64, bool), String> {
    let v = v.trim();
    let (name, limit) = v.split_once(':').ok_or_else(|| {
        format!("'{v}' has no limit; write criterion:limit, e.g. iops_slope:0.1% or bw:5%")
    })?;
    let (metric, slope) = match name.trim().to_ascii_lowercase().as_str() {
        "iops" => (SteadyMetric::Iops, false),
        "iops_slope" => (SteadyMetric::Iops, true),
        "bw" => (SteadyMetric::Bw, false),
        "bw_slope" => (SteadyMetric::Bw, true),
        "lat" => (SteadyMetric::Lat, false),
        "lat_slope" => (SteadyMetric::Lat, true),
        other => {
            return Err(format!(
                "'{other}' is not a steady-state criterion; use iops, iops_slope, bw, bw_slope, lat or lat_slope"
            ))
        }
    };
    let limit = limit.trim();
    let (num, percent) = match limit.strip_suffix('%') {
        Some(n) => (n.trim(), true),
        None => (limit, false),
    };
    let value = if metric == SteadyMetric::Lat && !percent && num.ends_with('s') {
        // A latency limit with a unit (`lat:100us`), else ns as fio's.
        crate::units::parse_time(num, crate::units::TimeUnit::Micros)
            .ok()
            .map(|ns| ns as f64)
    } else if percent || metric != SteadyMetric::Bw {
        num.parse::<f64>()
            .ok()
            .filter(|x| x.is_finite() && *x >= 0.0)
    } else {
        crate::units::parse_size(num).ok().map(|b| b as f64)
    };
    let value = value.ok_or_else(|| {
        format!("cannot read the limit '{limit}' (e.g. 0.1%, 2 for IOPS, 10m for bytes/s, 5000 ns for lat)")
    })?;
    Ok((metric, slope, value, percent))
}

/// The detector of one job.
#[derive(Clone, Debug)]
pub struct SteadyState {
    spec: SteadySpec,
    window: VecDeque<f64>,
    prev: Option<(Nanos, u64, u64, u64)>,
    recording: bool,
}

/// A check that found the job steady.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Attained {
    /// The criterion's value (percent with a `%` limit).
    pub criterion: f64,
    /// The window's mean rate.
    pub mean: f64,
}

impl SteadyState {
    /// A detector for `spec`.
    pub fn new(spec: &SteadySpec) -> SteadyState {
        SteadyState {
            spec: spec.clone(),
            // Grown as intervals pass (a long window need not be paid for up front;
            // parsing bounds it by `MAX_STEADY_INTERVALS`).
            window: VecDeque::with_capacity(spec.intervals().min(1024)),
            prev: None,
            recording: spec.ramp_ns == 0,
        }
    }

    /// The settings.
    pub fn spec(&self) -> &SteadySpec {
        &self.spec
    }

    /// A check at `elapsed_ns` since the job's start, with the job's I/Os and bytes
    /// completed so far; `Some` when the job is steady (it should end now).
    pub fn check(&mut self, elapsed_ns: Nanos, ios: u64, bytes: u64) -> Option<Attained> {
        self.check_lat(elapsed_ns, ios, bytes, 0)
    }

    /// [`SteadyState::check`] with the sum of the completed I/Os' completion
    /// latencies so far, ns (for the `lat` criteria).
    pub fn check_lat(
        &mut self,
        elapsed_ns: Nanos,
        ios: u64,
        bytes: u64,
        lat_ns: u64,
    ) -> Option<Attained> {
        let prev = self.prev.replace((elapsed_ns, ios, bytes, lat_ns));
        if !self.recording && elapsed_ns >= self.spec.ramp_ns + self.spec.interval_ns {
            self.recording = true;
        }
        let (t0, i0, b0, l0) = prev.unwrap_or((0, 0, 0, 0));
        let dt = elapsed_ns.saturating_sub(t0);
        if !self.recording || dt == 0 {
            return None;
        }
        let rate = match self.spec.metric {
            // fio keeps whole numbers per second.
            SteadyMetric::Iops => (ios.saturating_sub(i0) as f64 * 1e9 / dt as f64).floor(),
            SteadyMetric::Bw => (bytes.saturating_sub(b0) as f64 * 1e9 / dt as f64).floor(),
            // fio's group_lat: the interval's latency sum over its samples, whole ns.
            SteadyMetric::Lat => match ios.saturating_sub(i0) {
                0 => 0.0,
                n => (lat_ns.saturating_sub(l0) as f64 / n as f64).floor(),
            },
        };
        let n = self.spec.intervals();
        if self.window.len() == n {
            self.window.pop_front();
        }
        self.window.push_back(rate);
        if self.window.len() < n || n == 0 {
            return None;
        }
        let nf = n as f64;
        let mean = self.window.iter().sum::<f64>() / nf;
        let raw = if self.spec.slope {
            let sum_x = nf * (nf - 1.0) / 2.0;
            let sum_x2 = (nf - 1.0) * nf * (2.0 * nf - 1.0) / 6.0;
            let sum_y: f64 = self.window.iter().sum();
            let sum_xy: f64 = self
                .window
                .iter()
                .enumerate()
                .map(|(i, y)| i as f64 * y)
                .sum();
            (sum_xy - sum_x * sum_y / nf) / (sum_x2 - sum_x * sum_x / nf)
        } else {
            self.window
                .iter()
                .map(|y| (y - mean).abs())
                .fold(0.0, f64::max)
        };
        let criterion = if self.spec.percent {
            100.0 * raw / mean
        } else {
            raw
        };
        (criterion.abs() < self.spec.limit).then_some(Attained { criterion, mean })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Nanos = 1_000_000_000;

    fn spec(slope: bool, limit: f64, percent: bool, dur_s: u64) -> SteadySpec {
        SteadySpec {
            metric: SteadyMetric::Iops,
            slope,
            limit,
            percent,
            dur_ns: dur_s * S,
            ramp_ns: 0,
            interval_ns: S,
        }
    }

    #[test]
    fn parse_criteria() {
        assert_eq!(
            parse_steadystate("iops_slope:0.1%").unwrap(),
            (SteadyMetric::Iops, true, 0.1, true)
        );
        assert_eq!(
            parse_steadystate("bw:1m").unwrap(),
            (SteadyMetric::Bw, false, 1048576.0, false)
        );
        assert_eq!(
            parse_steadystate("lat:5%").unwrap(),
            (SteadyMetric::Lat, false, 5.0, true)
        );
        assert!(parse_steadystate("clat:1").is_err());
        assert_eq!(parse_steadystate("lat:1ms").unwrap().2, 1e6);
        assert_eq!(parse_steadystate("lat:2500").unwrap().2, 2500.0);
        assert!(parse_steadystate("iops").unwrap_err().contains("no limit"));
        assert!(parse_steadystate("iops:x").unwrap_err().contains("limit"));
    }

    #[test]
    fn deviation_waits_for_a_full_window_then_ends_when_within_the_limit() {
        let mut s = SteadyState::new(&spec(false, 5.0, true, 3));
        // Rates 1000, 2000 (still ramping up), then 2000, 2010, 1990.
        let mut ios = 0;
        let mut got = Vec::new();
        for (k, r) in [1000u64, 2000, 2000, 2010, 1990].iter().enumerate() {
            ios += r;
            got.push(s.check((k as u64 + 1) * S, ios, 0).is_some());
        }
        // Window [1000,2000,2000]: max deviation 667 of 1667 = 40 %; then within 5 %.
        assert_eq!(got, [false, false, false, true, true]);
        let a = {
            let mut s = SteadyState::new(&spec(false, 5.0, true, 3));
            s.check(S, 100, 0);
            s.check(2 * S, 200, 0);
            s.check(3 * S, 304, 0).unwrap()
        };
        // Rates 100, 100, 104: mean 101.33, max deviation 2.67 → 2.63 %.
        assert!((a.criterion - 2.631).abs() < 0.01, "{a:?}");
    }

    #[test]
    fn slope_is_least_squares_over_the_window() {
        // Rates 100, 110, 120: slope 10 per interval, 10 % of the mean 110.
        let mut s = SteadyState::new(&spec(true, 9.0, true, 3));
        assert_eq!(s.check(S, 100, 0), None);
        assert_eq!(s.check(2 * S, 210, 0), None);
        assert_eq!(
            s.check(3 * S, 330, 0),
            None,
            "10/110 = 9.1 % is not below 9 %"
        );
        // Then 125: window 110,120,125, slope 7.5 → 6.4 % of 118.3.
        let a = s.check(4 * S, 455, 0).unwrap();
        assert!((a.criterion - 6.338).abs() < 0.01, "{a:?}");
        // An absolute limit on a falling rate: |slope| counts.
        let mut s = SteadyState::new(&spec(true, 6.0, false, 2));
        s.check(S, 100, 0);
        assert!(s.check(2 * S, 195, 0).is_some(), "slope −5");
    }

    #[test]
    fn lat_takes_the_intervals_mean_completion_latency() {
        let mut sp = spec(false, 5.0, true, 3);
        sp.metric = SteadyMetric::Lat;
        let mut s = SteadyState::new(&sp);
        // 100 I/Os per second; mean latencies 100, 104, 98 µs: within 5 % of 100.67.
        assert_eq!(s.check_lat(S, 100, 0, 100 * 100_000), None);
        assert_eq!(s.check_lat(2 * S, 200, 0, 100 * 204_000), None);
        let a = s.check_lat(3 * S, 300, 0, 100 * 302_000).unwrap();
        assert!((a.mean - 100_666.0).abs() < 1.0, "{a:?}");
        // A jump to 200 µs is not steady.
        assert_eq!(s.check_lat(4 * S, 400, 0, 100 * 502_000), None);
    }

    #[test]
    fn ramp_delays_recording_by_one_interval_more() {
        let mut sp = spec(false, 1.0, true, 2);
        sp.ramp_ns = 2 * S;
        let mut s = SteadyState::new(&sp);
        // Checks at 1, 2 s: not recording; 3 s: first rate; 4 s: window full.
        let r: Vec<bool> = (1..=4)
            .map(|k| s.check(k * S, k * 100, 0).is_some())
            .collect();
        assert_eq!(r, [false, false, false, true]);
    }
}

/// A job's detector with its counts and outcome, as both worlds drive it: count each
/// completed I/O, call [`SteadyTrack::check`] every interval.
#[derive(Clone, Debug)]
pub struct SteadyTrack {
    det: SteadyState,
    ios: u64,
    bytes: u64,
    lat_ns: u64,
    /// When (ns since the job's start) and how the job became steady.
    pub attained: Option<(Nanos, Attained)>,
}

impl SteadyTrack {
    /// A tracker for `spec`.
    pub fn new(spec: &SteadySpec) -> SteadyTrack {
        SteadyTrack {
            det: SteadyState::new(spec),
            ios: 0,
            bytes: 0,
            lat_ns: 0,
            attained: None,
        }
    }

    /// The settings.
    pub fn spec(&self) -> &SteadySpec {
        self.det.spec()
    }

    /// Count completed I/O: `ios` I/Os of `bytes` bytes whose completion latencies
    /// add up to `lat_ns`.
    #[inline]
    pub fn count(&mut self, ios: u64, bytes: u64, lat_ns: u64) {
        self.ios += ios;
        self.bytes += bytes;
        self.lat_ns += lat_ns;
    }

    /// The check at `elapsed_ns` since the job's start; true when the job is steady
    /// now (the first time).
    pub fn check(&mut self, elapsed_ns: Nanos) -> bool {
        if self.attained.is_some() {
            return false;
        }
        match self
            .det
            .check_lat(elapsed_ns, self.ios, self.bytes, self.lat_ns)
        {
            Some(a) => {
                self.attained = Some((elapsed_ns, a));
                true
            }
            None => false,
        }
    }
}
