//! A direction's `(bytes, I/Os)` per bandwidth bin, kept for the bins that saw a
//! sample only: a run of many threads reported one by one keeps one per thread and
//! direction, and a thread with a few I/Os in a long run touches a few bins.

/// `(bin, bytes, I/Os)` of the bins with samples, in bin order.
#[derive(Debug, Clone, Default)]
pub(super) struct Bins(Vec<(u32, u64, u64)>);

impl Bins {
    /// Add `bytes` of one I/O to bin `bin`. O(1) for samples in time order (the
    /// simulator's; a real world's batches are nearly so).
    #[inline]
    pub(super) fn add(&mut self, bin: usize, bytes: u64) {
        let b = bin as u32;
        match self.0.last_mut() {
            Some(l) if l.0 == b => {
                l.1 += bytes;
                l.2 += 1;
            }
            Some(l) if l.0 > b => self.add_earlier(b, bytes, 1),
            _ => self.0.push((b, bytes, 1)),
        }
    }

    #[cold]
    fn add_earlier(&mut self, b: u32, bytes: u64, ios: u64) {
        match self.0.binary_search_by_key(&b, |e| e.0) {
            Ok(i) => {
                self.0[i].1 += bytes;
                self.0[i].2 += ios;
            }
            Err(i) => self.0.insert(i, (b, bytes, ios)),
        }
    }

    /// Add `o`'s counts.
    pub(super) fn merge(&mut self, o: &Bins) {
        let mut out = Vec::with_capacity(self.0.len().max(o.0.len()));
        let (mut i, mut j) = (0, 0);
        while i < self.0.len() || j < o.0.len() {
            match (self.0.get(i), o.0.get(j)) {
                (Some(a), Some(b)) if a.0 == b.0 => {
                    out.push((a.0, a.1 + b.1, a.2 + b.2));
                    i += 1;
                    j += 1;
                }
                (Some(a), Some(b)) if a.0 < b.0 => {
                    out.push(*a);
                    i += 1;
                }
                (Some(a), None) => {
                    out.push(*a);
                    i += 1;
                }
                (_, Some(b)) => {
                    out.push(*b);
                    j += 1;
                }
                (None, None) => unreachable!("the loop's condition"),
            }
        }
        self.0 = out;
    }

    /// `(bytes, I/Os)` of each bin of `first..last`, 0 where none came.
    pub(super) fn dense(&self, first: usize, last: usize) -> Vec<(u64, u64)> {
        let mut v = vec![(0, 0); last.saturating_sub(first)];
        for &(b, bytes, ios) in &self.0 {
            let b = b as usize;
            if (first..last).contains(&b) {
                v[b - first] = (bytes, ios);
            }
        }
        v
    }

    /// Bins twice as wide: bin `b` becomes `b / 2`.
    pub(super) fn coarsen(&mut self) {
        let mut out: Vec<(u32, u64, u64)> = Vec::with_capacity(self.0.len());
        for &(b, bytes, ios) in &self.0 {
            match out.last_mut() {
                Some(l) if l.0 == b / 2 => {
                    l.1 += bytes;
                    l.2 += ios;
                }
                _ => out.push((b / 2, bytes, ios)),
            }
        }
        self.0 = out;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparse_bins_are_the_dense_ones() {
        let mut a = Bins::default();
        for (b, bytes) in [(3, 10), (3, 5), (7, 1), (1, 2), (7, 4), (4000, 9)] {
            a.add(b, bytes);
        }
        assert_eq!(
            a.dense(0, 9),
            [
                (0, 0),
                (2, 1),
                (0, 0),
                (15, 2),
                (0, 0),
                (0, 0),
                (0, 0),
                (5, 2),
                (0, 0)
            ]
        );
        let mut b = Bins::default();
        b.add(3, 1);
        b.add(8, 1);
        b.merge(&a);
        assert_eq!(
            b.dense(3, 9),
            [(16, 3), (0, 0), (0, 0), (0, 0), (5, 2), (1, 1)]
        );
        b.coarsen();
        assert_eq!(b.dense(0, 5), [(2, 1), (16, 3), (0, 0), (5, 2), (1, 1)]);
        assert_eq!(b.dense(2000, 2001), [(9, 1)]);
    }
}
