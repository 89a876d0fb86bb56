//! The collector's latency histogram: HdrHistogram's bucket layout at 3 significant
//! digits (the layout `hdrhistogram::Histogram::new(3)` uses: lowest discernible value 1,
//! 2048 sub-buckets, auto-resizing), with only what the collector needs — recording,
//! percentiles and the recorded buckets — so recording one value is an index computation
//! and an increment.
//!
//! The figures are the ones HdrHistogram gives for the same values: a percentile is the
//! highest value equivalent to the first bucket whose cumulative count reaches
//! `⌈q · total⌉` (`value_at_percentile`), and the recorded buckets come in value order,
//! each named by its highest equivalent value (`iter_recorded`). The tests check both
//! against the `hdrhistogram` crate.

/// log2 of half the sub-bucket count (2048 sub-buckets for 3 significant digits:
/// single-unit resolution up to 2 · 10³, rounded up to a power of two).
const HALF_MAG: u32 = 10;
const HALF: u64 = 1 << HALF_MAG;
/// The largest value of bucket 0 (its sub-bucket mask).
const SUB_MASK: u64 = 2 * HALF - 1;
/// 64 − log2(sub-bucket count): leading zeros of the largest value in bucket 0.
const LZ_BASE: u32 = 64 - (HALF_MAG + 1);

/// The bucket (power of two above bucket 0) that holds `v`.
#[inline]
fn bucket_of(v: u64) -> u32 {
    LZ_BASE - (v | SUB_MASK).leading_zeros()
}

/// The counts index of `v`.
#[inline]
fn index_of(v: u64) -> usize {
    let b = bucket_of(v);
    // (b + 1)·HALF + (v >> b) − HALF: bucket 0 uses all 2048 sub-buckets, later buckets
    // their upper half.
    (((b as u64) << HALF_MAG) + (v >> b)) as usize
}

/// The lowest value counted at index `i`.
fn value_of(i: usize) -> u64 {
    let i = i as u64;
    let bucket = (i >> HALF_MAG) as i64 - 1;
    let sub = (i & (HALF - 1)) + HALF;
    if bucket < 0 {
        sub - HALF
    } else {
        sub << bucket
    }
}

/// The highest value counted with `v`.
fn highest_equivalent(v: u64) -> u64 {
    let b = bucket_of(v);
    ((v >> b) << b) + (1u64 << b) - 1
}

/// Counts of latency values in HdrHistogram's buckets (3 significant digits).
#[derive(Clone, Debug, Default)]
pub(crate) struct LatHist {
    /// Count per index; grows (a bucket at a time) to the largest value recorded.
    counts: Vec<u64>,
    total: u64,
}

impl LatHist {
    /// Count one value.
    #[inline]
    pub(crate) fn record(&mut self, v: u64) {
        let i = index_of(v);
        if i >= self.counts.len() {
            self.grow(i);
        }
        self.counts[i] += 1;
        self.total += 1;
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self, i: usize) {
        // To the end of the half-bucket that holds index i.
        let len = ((i >> HALF_MAG) + 1) << HALF_MAG;
        self.counts.resize(len, 0);
    }

    /// Add `other`'s counts.
    pub(crate) fn merge(&mut self, other: &LatHist) {
        if other.counts.len() > self.counts.len() {
            self.counts.resize(other.counts.len(), 0);
        }
        for (c, o) in self.counts.iter_mut().zip(&other.counts) {
            *c += o;
        }
        self.total += other.total;
    }

    /// How many values were recorded.
    pub(crate) fn len(&self) -> u64 {
        self.total
    }

    /// The values at `percentiles` (0..=100), ascending, as HdrHistogram's
    /// `value_at_percentile` gives them; one pass over the counts.
    pub(crate) fn values_at_percentiles(&self, percentiles: &[f64]) -> Vec<u64> {
        let mut out = Vec::with_capacity(percentiles.len());
        let mut i = 0;
        let mut cum = 0u64;
        let mut prev = f64::NEG_INFINITY;
        for &p in percentiles {
            let q = (p / 100.0).min(1.0);
            if q < prev {
                // Not ascending: start the walk again.
                i = 0;
                cum = 0;
            }
            prev = q;
            let target = ((q * self.total as f64).ceil() as u64).max(1);
            let v = loop {
                if cum >= target && i > 0 {
                    // The previous index already reached the target.
                    break Some(i - 1);
                }
                if i == self.counts.len() {
                    break None;
                }
                cum += self.counts[i];
                i += 1;
            };
            out.push(match v {
                None => 0,
                Some(idx) if q == 0.0 => value_of(idx),
                Some(idx) => highest_equivalent(value_of(idx)),
            });
        }
        out
    }

    /// The recorded buckets in value order: (highest equivalent value, count).
    pub(crate) fn recorded(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(i, c)| (highest_equivalent(value_of(i)), *c))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::FIO_PERCENTILES;
    use hdrhistogram::Histogram;
    use proptest::prelude::*;

    fn both(values: &[u64]) -> (LatHist, Histogram<u64>) {
        let mut mine = LatHist::default();
        let mut hdr = Histogram::<u64>::new(3).unwrap();
        for &v in values {
            mine.record(v);
            hdr.record(v).unwrap();
        }
        (mine, hdr)
    }

    fn check_same(values: &[u64]) {
        let (mine, hdr) = both(values);
        assert_eq!(mine.len(), hdr.len());
        let mut ps: Vec<f64> = vec![0.0];
        ps.extend(FIO_PERCENTILES);
        ps.extend([99.999, 100.0, 50.0, 1.0]);
        let got = mine.values_at_percentiles(&ps);
        for (p, v) in ps.iter().zip(&got) {
            assert_eq!(*v, hdr.value_at_percentile(*p), "percentile {p}");
        }
        let theirs: Vec<(u64, u64)> = hdr
            .iter_recorded()
            .map(|it| (it.value_iterated_to(), it.count_at_value()))
            .collect();
        assert_eq!(mine.recorded().collect::<Vec<_>>(), theirs);
    }

    #[test]
    fn layout_matches_hdrhistogram() {
        let h = Histogram::<u64>::new(3).unwrap();
        for v in [
            0,
            1,
            2047,
            2048,
            2049,
            4095,
            4096,
            1 << 20,
            465_123,
            3_600_000_000_000,
        ] {
            assert_eq!(highest_equivalent(v), h.highest_equivalent(v), "{v}");
            assert_eq!(value_of(index_of(v)), h.lowest_equivalent(v), "{v}");
        }
    }

    #[test]
    fn merged_counts_are_the_counts_of_all_values() {
        let (a, b) = ([5, 3000, 465_000], [7, 5, 9_000_000]);
        let (mut merged, _) = both(&a);
        merged.merge(&both(&b).0);
        let (all, _) = both(&[a, b].concat());
        assert_eq!(merged.len(), all.len());
        assert_eq!(
            merged.recorded().collect::<Vec<_>>(),
            all.recorded().collect::<Vec<_>>()
        );
        let mut other_way = both(&b).0;
        other_way.merge(&both(&a).0);
        assert_eq!(
            other_way.values_at_percentiles(&FIO_PERCENTILES),
            all.values_at_percentiles(&FIO_PERCENTILES)
        );
    }

    #[test]
    fn same_figures_as_hdrhistogram() {
        check_same(&[]);
        check_same(&[0]);
        check_same(&[0, 0, 0]);
        check_same(&[7]);
        check_same(&[465_000, 465_100, 470_000, 3_600_000_000_000]);
        check_same(&(0..5000).map(|i| i * 997 % 10_007).collect::<Vec<_>>());
    }

    proptest! {
        #[test]
        fn same_figures_as_hdrhistogram_for_any_values(
            values in proptest::collection::vec(
                prop_oneof![0u64..3000, 0u64..2_000_000, 0u64..3_600_000_000_000],
                0..400,
            )
        ) {
            check_same(&values);
        }
    }
}
