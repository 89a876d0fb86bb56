//! fio's `json+` latency bins (`clat_ns.bins`), so tools written for fio's json+ output
//! (fio's `fio_jsonplus_clat2csv`, and others that read the same field) read sluice's.
//!
//! # fio's log-linear buckets
//! fio keeps every completion latency (ns) in one of `FIO_IO_U_PLAT_NR` = 29 × 64 =
//! 1856 buckets. With `B` = 6 bits (64 buckets per group):
//! * a value below 2·64 = 128 has its own bucket: index = value;
//! * otherwise, with `m` the index of its most significant bit, `e = m − B` low
//!   "error" bits are dropped: index = `(e + 1)·64 + ((v >> e) & 63)`, capped at 1855.
//!   Group `g ≥ 2` thus spans `[2^(g+5), 2^(g+6))` in 64 buckets of `2^(g−1)` ns.
//!
//! json+ names a bucket by its middle value: for an index `i ≥ 128`, `e = i/64 − 1`,
//! value = `2^(e+6) + (i mod 64 + ½)·2^e`, rounded down; below 128 the index itself.
//! `bins` maps that value (a string key) to the bucket's count, non-empty buckets only.

use std::collections::BTreeMap;

/// Bits of a group's bucket number (fio's `FIO_IO_U_PLAT_BITS`).
pub const PLAT_BITS: u32 = 6;
/// Buckets per group (`FIO_IO_U_PLAT_VAL`).
pub const PLAT_VAL: u64 = 1 << PLAT_BITS;
/// Groups (`FIO_IO_U_PLAT_GROUP_NR`).
pub const PLAT_GROUPS: usize = 29;
/// Buckets in all (`FIO_IO_U_PLAT_NR`).
pub const PLAT_NR: usize = PLAT_GROUPS * PLAT_VAL as usize;

/// The bucket of a latency of `v` ns.
pub fn plat_index(v: u64) -> usize {
    if v < 2 * PLAT_VAL {
        return v as usize;
    }
    let msb = 63 - v.leading_zeros();
    let error_bits = msb - PLAT_BITS;
    let base = ((error_bits + 1) as u64) << PLAT_BITS;
    let offset = (v >> error_bits) & (PLAT_VAL - 1);
    ((base + offset) as usize).min(PLAT_NR - 1)
}

/// The value json+ names bucket `i` by (the middle of its range, rounded down).
pub fn plat_value(i: usize) -> u64 {
    assert!(i < PLAT_NR, "bucket {i} out of range");
    let i = i as u64;
    if i < 2 * PLAT_VAL {
        return i;
    }
    let error_bits = (i >> PLAT_BITS) - 1;
    let base = 1u64 << (error_bits + PLAT_BITS as u64);
    let k = i % PLAT_VAL;
    // base + (k + 0.5) · 2^e, in integers: (2k + 1) · 2^e / 2.
    base + (((2 * k + 1) << error_bits) >> 1)
}

/// Counts per fio bucket, kept for the range of buckets seen only (in whole groups of
/// [`PLAT_VAL`]): a run of many threads reported one by one keeps one per thread and
/// direction, and a thread's latencies span a few groups of the 29.
#[derive(Clone, Debug)]
pub(crate) struct PlatHist {
    /// The bucket of `counts[0]`.
    base: usize,
    counts: Vec<u64>,
}

impl PlatHist {
    pub(crate) fn new() -> PlatHist {
        PlatHist {
            base: 0,
            counts: Vec::new(),
        }
    }

    /// Make the counts cover buckets `lo..hi`.
    fn cover(&mut self, lo: usize, hi: usize) {
        let g = PLAT_VAL as usize;
        let lo = lo / g * g;
        let hi = hi.div_ceil(g) * g;
        if self.counts.is_empty() {
            self.base = lo;
            self.counts = vec![0; hi - lo];
            return;
        }
        if lo < self.base {
            let mut v = vec![0; self.base - lo];
            v.extend_from_slice(&self.counts);
            self.counts = v;
            self.base = lo;
        }
        if hi > self.base + self.counts.len() {
            self.counts.resize(hi - self.base, 0);
        }
    }

    #[inline]
    pub(crate) fn add(&mut self, v: u64) {
        let i = plat_index(v);
        if i < self.base || i >= self.base + self.counts.len() {
            self.cover(i, i + 1);
        }
        self.counts[i - self.base] += 1;
    }

    /// Add `o`'s counts.
    pub(crate) fn merge(&mut self, o: &PlatHist) {
        if o.counts.is_empty() {
            return;
        }
        self.cover(o.base, o.base + o.counts.len());
        let at = o.base - self.base;
        for (a, b) in self.counts[at..].iter_mut().zip(&o.counts) {
            *a += b;
        }
    }

    /// json+'s `bins`: bucket value → count, non-empty buckets.
    pub(crate) fn bins(&self) -> BTreeMap<u64, u64> {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(i, c)| (plat_value(self.base + i), *c))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_arithmetic() {
        // One bucket per value below 128.
        assert_eq!(plat_index(0), 0);
        assert_eq!(plat_index(127), 127);
        assert_eq!(plat_value(127), 127);
        // 128..256: group 2, buckets of 2 ns, named by their middle.
        assert_eq!(plat_index(128), 128);
        assert_eq!(plat_index(129), 128);
        assert_eq!(plat_index(130), 129);
        // Named by the middle: 128 + ½·2 and 128 + 1½·2.
        assert_eq!(plat_value(128), 129);
        assert_eq!(plat_value(129), 131);
        assert_eq!(plat_index(255), 191);
        // 256..512: buckets of 4 ns.
        assert_eq!(plat_index(256), 192);
        assert_eq!(plat_value(192), 258);
        assert_eq!(plat_value(plat_index(1000)), 1004);
        // 1 ms = 1_000_000 ns: msb 19, e = 13, index (14 << 6) + ((1e6 >> 13) & 63).
        assert_eq!(
            plat_index(1_000_000),
            14 * 64 + ((1_000_000u64 >> 13) & 63) as usize
        );
        assert_eq!(plat_index(1_000_000), 954);
        // Its value lies in the bucket's range, and maps back to the same bucket.
        let v = plat_value(954);
        assert_eq!(v, (1 << 19) + ((2 * 58 + 1) << 13) / 2);
        assert_eq!(plat_index(v), 954);
        // Beyond the last group: the last bucket.
        assert_eq!(plat_index(u64::MAX), PLAT_NR - 1);
        assert_eq!(plat_index(1 << 40), PLAT_NR - 1);
    }

    #[test]
    fn counts_kept_for_the_range_seen_give_the_bins_of_all() {
        let vals = [5u64, 700, 90_000, 3, 2_000_000_000, 1 << 40, 700];
        let (mut a, mut b, mut all) = (PlatHist::new(), PlatHist::new(), PlatHist::new());
        for (k, &v) in vals.iter().enumerate() {
            if k % 2 == 0 {
                a.add(v)
            } else {
                b.add(v)
            }
            all.add(v);
        }
        assert!(a.counts.len() < PLAT_NR);
        let mut m = b.clone();
        m.merge(&a);
        assert_eq!(m.bins(), all.bins());
        assert_eq!(all.bins().values().sum::<u64>(), vals.len() as u64);
        assert_eq!(all.bins()[&plat_value(plat_index(700))], 2);
    }

    #[test]
    fn every_bucket_value_falls_in_its_own_bucket_and_values_rise() {
        let mut last = None;
        for i in 0..PLAT_NR - 1 {
            let v = plat_value(i);
            assert_eq!(plat_index(v), i, "bucket {i} value {v}");
            if let Some(l) = last {
                assert!(v > l);
            }
            last = Some(v);
        }
    }

    #[test]
    fn bins_count_samples_by_bucket() {
        let mut h = PlatHist::new();
        for v in [5, 5, 129, 128, 1_000_000] {
            h.add(v);
        }
        let b = h.bins();
        assert_eq!(b.get(&5), Some(&2));
        // 128 and 129 share the bucket named 129.
        assert_eq!(b.get(&129), Some(&2));
        assert_eq!(b.get(&plat_value(954)), Some(&1));
        assert_eq!(b.values().sum::<u64>(), 5);
    }
}
