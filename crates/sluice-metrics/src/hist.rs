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

/// The highest value counted with `v` (as HdrHistogram: capped at `u64::MAX`, and one
/// below it in the last bucket).
fn highest_equivalent(v: u64) -> u64 {
    if v == u64::MAX {
        return u64::MAX;
    }
    let b = bucket_of(v);
    ((v >> b) << b).saturating_add(1u64 << b) - 1
}

/// The largest counts index (of `u64::MAX`).
const MAX_INDEX: usize = ((LZ_BASE as usize) << HALF_MAG) + (u64::MAX >> LZ_BASE) as usize;

/// Counts are kept in spans of whole chunks of indices.
const CHUNK: usize = 64;

/// A histogram starts as a short list of (index, count) and becomes a span at its
/// [`FEW`]-th distinct index or its [`FEW_VALUES`]-th value: a run of many threads
/// reported one by one keeps one per thread and latency part, most with a few values
/// over a wide span.
const FEW: usize = 16;
const FEW_VALUES: u64 = 1024;

/// Counts of latency values in HdrHistogram's buckets (3 significant digits).
///
/// Only the span of indices between the smallest and the largest value recorded is
/// kept (widened, doubling, when a value falls outside): a run's latencies usually
/// cover a few hundred of the 56 320 indices, so the histogram stays small — its
/// memory, the pages it touches at the start, the walks of its report.
#[derive(Clone, Debug, Default)]
pub(crate) struct LatHist {
    /// The index of `counts[0]`.
    base: usize,
    /// Counts of the indices `base..base + counts.len()`.
    counts: Vec<u64>,
    total: u64,
    /// Before the span: (index, count), by index ([`FEW`]).
    few: Vec<(u32, u64)>,
}

impl LatHist {
    /// Count one value.
    #[inline]
    pub(crate) fn record(&mut self, v: u64) {
        let i = index_of(v);
        let j = i.wrapping_sub(self.base);
        if j < self.counts.len() {
            self.counts[j] += 1;
            self.total += 1;
        } else {
            self.add_n(i, 1);
        }
    }

    /// Count `n` values of index `i`: in the list while it is one, else in the span.
    #[cold]
    #[inline(never)]
    fn add_n(&mut self, i: usize, n: u64) {
        if self.counts.is_empty() {
            if self.few_add(i, n) {
                return;
            }
            self.make_span();
        }
        let mut j = i.wrapping_sub(self.base);
        if j >= self.counts.len() {
            j = self.widen(i);
        }
        self.counts[j] += n;
        self.total += n;
    }

    /// Count `n` values of index `i` in the list, if it stays short; whether it did.
    fn few_add(&mut self, i: usize, n: u64) -> bool {
        if self.total + n >= FEW_VALUES {
            return false;
        }
        match self.few.binary_search_by_key(&(i as u32), |e| e.0) {
            Ok(k) => self.few[k].1 += n,
            Err(_) if self.few.len() >= FEW => return false,
            Err(k) => self.few.insert(k, (i as u32, n)),
        }
        self.total += n;
        true
    }

    /// The list becomes the span (nothing to do in a span already).
    fn make_span(&mut self) {
        let (Some(first), Some(last)) = (self.few.first(), self.few.last()) else {
            return;
        };
        self.cover(first.0 as usize, last.0 as usize + 1);
        for &(i, c) in &self.few {
            self.counts[i as usize - self.base] += c;
        }
        self.few = Vec::new();
    }

    /// This histogram as a span (a copy while it is a list).
    fn spanned(&self) -> std::borrow::Cow<'_, LatHist> {
        if self.few.is_empty() {
            std::borrow::Cow::Borrowed(self)
        } else {
            let mut h = self.clone();
            h.make_span();
            std::borrow::Cow::Owned(h)
        }
    }

    /// Widen the span to index `i`, doubling it on that side; returns `i`'s place.
    #[cold]
    #[inline(never)]
    fn widen(&mut self, i: usize) -> usize {
        let (lo, hi) = if self.counts.is_empty() {
            (i, i + 1)
        } else {
            let (lo, hi) = (self.base, self.base + self.counts.len());
            let span = hi - lo;
            if i < lo {
                (i.min(lo.saturating_sub(span)), hi)
            } else {
                (lo, (i + 1).max(hi + span))
            }
        };
        self.cover(lo, hi);
        i - self.base
    }

    /// Make the span cover the indices `lo..hi` (whole chunks, within the index range).
    fn cover(&mut self, lo: usize, hi: usize) {
        let lo = lo / CHUNK * CHUNK;
        let hi = hi.div_ceil(CHUNK).saturating_mul(CHUNK).min(MAX_INDEX + 1);
        let (lo, hi) = if self.counts.is_empty() {
            (lo, hi)
        } else {
            (lo.min(self.base), hi.max(self.base + self.counts.len()))
        };
        if lo == self.base && hi - lo == self.counts.len() {
            return;
        }
        let mut counts = vec![0; hi - lo];
        let at = self.base.saturating_sub(lo);
        counts[at..at + self.counts.len()].copy_from_slice(&self.counts);
        self.base = lo;
        self.counts = counts;
    }

    /// Add `other`'s counts.
    pub(crate) fn merge(&mut self, other: &LatHist) {
        if !other.few.is_empty() {
            for &(i, c) in &other.few {
                self.add_n(i as usize, c);
            }
            return;
        }
        if !other.counts.is_empty() {
            self.make_span();
            self.cover(other.base, other.base + other.counts.len());
            let at = other.base - self.base;
            for (c, o) in self.counts[at..].iter_mut().zip(&other.counts) {
                *c += o;
            }
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
        let h = self.spanned();
        let (base, counts, total) = (h.base, &h.counts, h.total);
        let mut out = Vec::with_capacity(percentiles.len());
        // The walk: `cum` counts the values at the indices below `base + j`.
        let mut j = 0;
        let mut cum = 0u64;
        let mut prev = f64::NEG_INFINITY;
        for &p in percentiles {
            let q = (p / 100.0).min(1.0);
            if q < prev {
                // Not ascending: start the walk again.
                j = 0;
                cum = 0;
            }
            prev = q;
            let target = ((q * total as f64).ceil() as u64).max(1);
            let at = loop {
                if cum >= target && j > 0 {
                    // The previous index already reached the target.
                    break Some(base + j - 1);
                }
                if j == counts.len() {
                    break None;
                }
                cum += counts[j];
                j += 1;
            };
            out.push(match at {
                None => 0,
                Some(idx) if q == 0.0 => value_of(idx),
                Some(idx) => highest_equivalent(value_of(idx)),
            });
        }
        out
    }

    /// The recorded buckets in value order: (highest equivalent value, count).
    pub(crate) fn recorded(&self) -> impl Iterator<Item = (u64, u64)> {
        let h = self.spanned();
        h.counts
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(j, c)| (highest_equivalent(value_of(h.base + j)), *c))
            .collect::<Vec<_>>()
            .into_iter()
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
    fn the_span_follows_the_values_and_stays_small() {
        assert_eq!(MAX_INDEX, index_of(u64::MAX));
        let mut h = LatHist::default();
        for v in [465_000, 466_000, 470_000, 460_000] {
            h.record(v);
        }
        // A few values: a list, whatever their span.
        assert_eq!((h.few.len(), h.counts.len()), (4, 0));
        h.record(0);
        h.record(u64::MAX);
        assert_eq!((h.few.len(), h.counts.len()), (6, 0));
        assert_eq!(h.values_at_percentiles(&[50.0]), [465_151]);
        // More distinct values: the span, over the list's values.
        for k in 0..FEW as u64 {
            h.record(466_000 + 1000 * k);
        }
        assert!(h.few.is_empty());
        assert_eq!((h.base, h.base + h.counts.len()), (0, MAX_INDEX + 1));
        assert_eq!(h.recorded().map(|(_, c)| c).sum::<u64>(), 6 + FEW as u64);
        let mut h = LatHist::default();
        for v in [465_000, 466_000, 470_000, 460_000] {
            for _ in 0..FEW_VALUES / 4 {
                h.record(v);
            }
        }
        assert!(h.few.is_empty(), "many values: the span");
        assert!(h.counts.len() <= 2 * CHUNK, "{}", h.counts.len());
        // Far below and far above: the span widens both ways, within the index range.
        h.record(0);
        h.record(u64::MAX);
        assert_eq!((h.base, h.base + h.counts.len()), (0, MAX_INDEX + 1));
        assert_eq!(h.recorded().map(|(_, c)| c).sum::<u64>(), FEW_VALUES + 2);
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
            u64::MAX - (1 << 52),
            u64::MAX - 1,
            u64::MAX,
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
        fn merging_is_recording_both(
            a in proptest::collection::vec(0u64..5_000_000, 0..100),
            b in proptest::collection::vec(0u64..3_600_000_000_000, 0..100),
        ) {
            let (mut merged, _) = both(&a);
            merged.merge(&both(&b).0);
            let (all, _) = both(&[a, b].concat());
            prop_assert_eq!(merged.len(), all.len());
            prop_assert_eq!(merged.recorded().collect::<Vec<_>>(), all.recorded().collect::<Vec<_>>());
        }

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
