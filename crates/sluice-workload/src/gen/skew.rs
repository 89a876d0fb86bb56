//! fio's `random_distribution`s as offset skews: zipf, pareto, normal (gauss), zoned and
//! zoned_abs, as fio computes them.

use super::*;

/// fio caps the number of terms of Zipf's normalising sum at 10 million.
const ZIPF_MAX_GEN: u64 = 10_000_000;

/// Σ_{i=1..k} i^-θ: exactly for the first terms, by Euler–Maclaurin beyond (the
/// error is far below f64 precision of the sum for the terms left).
fn zeta(k: u64, theta: f64) -> f64 {
    const EXACT: u64 = 1 << 14;
    let m = k.min(EXACT);
    let mut sum: f64 = (1..=m).map(|i| (i as f64).powf(-theta)).sum();
    if k > m {
        let (a, b) = (m as f64, k as f64);
        let f = |x: f64| x.powf(-theta);
        let df = |x: f64| -theta * x.powf(-theta - 1.0);
        let integral = if (theta - 1.0).abs() < 1e-12 {
            (b / a).ln()
        } else {
            (b.powf(1.0 - theta) - a.powf(1.0 - theta)) / (1.0 - theta)
        };
        // Σ_{i=a..b} f(i) ≈ ∫ + (f(a)+f(b))/2 + (f'(b)-f'(a))/12; minus f(a), counted above.
        sum += integral + (f(b) - f(a)) / 2.0 + (df(b) - df(a)) / 12.0;
    }
    sum
}

/// A non-uniform offset distribution over a file of `n` blocks (fio's
/// `random_distribution`), computed as fio computes it.
#[derive(Clone, Debug)]
pub(super) enum Skew {
    Zipf {
        n: u64,
        theta: f64,
        zetan: f64,
        alpha: f64,
        eta: f64,
        off: u64,
    },
    Pareto {
        n: u64,
        pow: f64,
        off: u64,
    },
    Normal {
        n: u64,
        stddev: u64,
        off: u64,
    },
    /// Zones as (first block, blocks), and for every v in 1..=100 its zone.
    Zoned {
        zones: Vec<(u64, u64)>,
        pick: [u8; 100],
    },
    /// fio's `sequence`: block indices (of `unit` bytes, the direction's smallest
    /// block size) taken in turn; `stride`: each round shifted by the list's length.
    Sequence {
        idx: Vec<u64>,
        stride: bool,
        unit: u64,
    },
}

impl Skew {
    /// `n` blocks of `unit` bytes in a file of `file_size` bytes.
    pub(super) fn new(
        d: &Distribution,
        n: u64,
        unit: u64,
        rng: &mut Xoshiro256PlusPlus,
    ) -> Option<Skew> {
        let n = n.max(1);
        // A random offset for the hot spot unless a centre is given (fio's rand_off).
        let off = |center: Option<f64>, rng: &mut Xoshiro256PlusPlus| match center {
            Some(c) => ((n as f64 * c) as u64) % n,
            None => rng.random::<u32>() as u64 % n,
        };
        match d {
            Distribution::Uniform => None,
            // Its stride and unit are set by the generator (see `IoGen::new`).
            Distribution::Sequence(idx) => Some(Skew::Sequence {
                idx: idx.clone(),
                stride: false,
                unit,
            }),
            Distribution::Zipf { theta, center } => {
                let theta = *theta;
                let zetan = zeta(n.min(ZIPF_MAX_GEN), theta);
                let zeta2 = 1.0 + 0.5f64.powf(theta);
                let alpha = 1.0 / (1.0 - theta);
                let eta = (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan);
                Some(Skew::Zipf {
                    n,
                    theta,
                    zetan,
                    alpha,
                    eta,
                    off: off(*center, rng),
                })
            }
            Distribution::Pareto { h, center } => Some(Skew::Pareto {
                n,
                pow: h.ln() / (1.0 - h).ln(),
                off: off(*center, rng),
            }),
            Distribution::Normal { dev_pct, center } => {
                let stddev = if *dev_pct > 0.0 {
                    ((n as f64 * dev_pct / 100.0).ceil() as u64).min(n / 2)
                } else {
                    0
                };
                let off = match center {
                    Some(c) => (((n as f64) * (c - 0.5)) as i128).rem_euclid(n as i128) as u64,
                    None => 0,
                };
                Some(Skew::Normal { n, stddev, off })
            }
            Distribution::Zoned(zones) | Distribution::ZonedAbs(zones) => {
                let abs = matches!(d, Distribution::ZonedAbs(_));
                let mut out = Vec::with_capacity(zones.len());
                let mut pick = [0u8; 100];
                let (mut acc, mut prev) = (0usize, 0u64);
                for (i, z) in zones.iter().enumerate() {
                    let (start, len) = if abs {
                        let end = prev.saturating_add(z.size);
                        let r = (prev / unit, end / unit - prev / unit);
                        prev = end;
                        r
                    } else {
                        let end = prev + z.size;
                        let r = (prev * n / 100, n * (end - prev) / 100);
                        prev = end;
                        r
                    };
                    out.push((start.min(n - 1), len));
                    for slot in pick.iter_mut().skip(acc).take(z.access_pct as usize) {
                        *slot = i as u8;
                    }
                    acc += z.access_pct as usize;
                }
                Some(Skew::Zoned { zones: out, pick })
            }
        }
    }

    /// A block index in `[0, n)`.
    #[inline]
    pub(super) fn next(&self, rng: &mut Xoshiro256PlusPlus) -> u64 {
        let scatter =
            |v: u64, off: u64, n: u64| v.wrapping_mul(GOLDEN_RATIO_64).wrapping_add(off) % n;
        match self {
            Skew::Zipf {
                n,
                theta,
                zetan,
                alpha,
                eta,
                off,
            } => {
                let u: f64 = rng.random();
                let z = u * zetan;
                let v = if z < 1.0 {
                    1
                } else if z < 1.0 + 0.5f64.powf(*theta) {
                    2
                } else {
                    1 + (*n as f64 * (eta * u - eta + 1.0).powf(*alpha)) as u64
                };
                scatter(v - 1, *off, *n)
            }
            Skew::Pareto { n, pow, off } => {
                let u: f64 = rng.random();
                let v = ((n - 1) as f64 * u.powf(*pow)) as u64;
                scatter(v, *off, *n)
            }
            Skew::Normal { n, stddev, off } => {
                let mut sum: u64 = 0;
                for _ in 0..12 {
                    sum += rng.random_range(0..=*n);
                }
                let mut sum = sum.div_ceil(12) as i128;
                if *stddev > 0 {
                    let s = *stddev as i128;
                    let mut dev = (s as f64 * rng.random::<f64>()) as i128 - s / 2;
                    while dev != 0 && (sum + dev >= *n as i128 || sum + dev < 0) {
                        dev /= 2;
                    }
                    sum += dev;
                }
                scatter(sum as u64, *off, *n)
            }
            // Drawn by the generator, which counts each direction's I/Os.
            Skew::Sequence { idx, .. } => idx[0],
            Skew::Zoned { zones, pick } => {
                let (start, len) = zones[pick[rng.random_range(0..100usize)] as usize];
                if len > 1 {
                    start + rng.random_range(0..len)
                } else {
                    start
                }
            }
        }
    }
}
