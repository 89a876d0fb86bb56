//! One latency part's accumulator: exact count, sum, sum of squares, min and max, with
//! optional histograms for percentiles ([`LatHist`]) and for fio's json+ bins
//! ([`PlatHist`]).

use crate::fioplus::PlatHist;
use crate::hist::LatHist;
use crate::report::{LatReport, Percentiles, FIO_PERCENTILES};

/// Latencies are clamped at one hour before they go into a histogram, which bounds the
/// histograms' memory whatever an engine reports.
const MAX_LAT_NS: u64 = 3_600_000_000_000;

/// Exact count, sum, sum of squares, min and max of one latency part, with an optional
/// HdrHistogram-layout histogram for percentiles.
#[derive(Debug, Clone)]
pub(crate) struct Lat {
    n: u64,
    sum: u128,
    sum_sq: u128,
    min: u64,
    max: u64,
    /// Grows (a bounded number of times, values are clamped at one hour) to the largest
    /// value seen.
    hist: Option<LatHist>,
    /// fio's log-linear buckets, for json+ (`clat_ns.bins`).
    plat: Option<PlatHist>,
}

impl Lat {
    pub(crate) fn new(with_hist: bool) -> Lat {
        Lat {
            n: 0,
            sum: 0,
            sum_sq: 0,
            min: u64::MAX,
            max: 0,
            hist: with_hist.then(LatHist::default),
            plat: None,
        }
    }

    /// With a histogram and fio's json+ bins.
    pub(crate) fn with_plat() -> Lat {
        Lat {
            plat: Some(PlatHist::new()),
            ..Lat::new(true)
        }
    }

    #[inline(always)]
    pub(crate) fn add(&mut self, v: u64) {
        self.n += 1;
        self.sum += v as u128;
        self.sum_sq += (v as u128) * (v as u128);
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        if let Some(h) = &mut self.hist {
            h.record(v.min(MAX_LAT_NS));
        }
        if let Some(p) = &mut self.plat {
            p.add(v);
        }
    }

    /// Add `other`'s samples: exact sums, and the histogram if this one keeps one (then
    /// `other` must keep one too); the json+ bins when both keep them.
    pub(crate) fn merge(&mut self, other: &Lat) {
        self.n += other.n;
        self.sum += other.sum;
        self.sum_sq += other.sum_sq;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        if let Some(h) = &mut self.hist {
            h.merge(
                other
                    .hist
                    .as_ref()
                    .expect("merging into a histogram needs one"),
            );
        }
        if let (Some(p), Some(o)) = (&mut self.plat, &other.plat) {
            p.merge(o);
        }
    }

    pub(crate) fn report(&self) -> LatReport {
        if self.n == 0 {
            return LatReport::default();
        }
        let n = self.n as f64;
        let mean = self.sum as f64 / n;
        let stddev = if self.n > 1 {
            // Sample standard deviation, as fio reports it.
            let var = (self.sum_sq as f64 - (self.sum as f64) * mean) / (n - 1.0);
            var.max(0.0).sqrt()
        } else {
            0.0
        };
        let percentile = match &self.hist {
            Some(h) => Percentiles(
                FIO_PERCENTILES
                    .iter()
                    .zip(h.values_at_percentiles(&FIO_PERCENTILES))
                    // A histogram bucket reports its highest equivalent value, which
                    // can pass the largest sample: no percentile is above the max.
                    .map(|(&p, v)| (p, v.clamp(self.min, self.max)))
                    .collect(),
            ),
            None => Percentiles::default(),
        };
        LatReport {
            min: self.min,
            max: self.max,
            mean,
            stddev,
            n: self.n,
            percentile,
            bins: self.plat.as_ref().map(PlatHist::bins),
        }
    }

    /// `(latency, fraction of samples above it)` at every recorded histogram bucket, with
    /// `(min, 1.0)` in front.
    pub(crate) fn ccdf(&self) -> Vec<(u64, f64)> {
        let Some(h) = &self.hist else {
            return Vec::new();
        };
        if self.n == 0 {
            return Vec::new();
        }
        let total = h.len() as f64;
        let mut out = vec![(self.min, 1.0)];
        let mut seen = 0u64;
        for (value, count) in h.recorded() {
            seen += count;
            let above = (h.len() - seen) as f64 / total;
            out.push((value.max(self.min), above));
        }
        out
    }
}
