//! Service-time variation: how long one media operation (an array read, a program)
//! really takes, drawn per operation from the profile's `[service]` section.
//!
//! # The distribution
//!
//! The media time of an operation whose nominal cost is `t` (the profile's `read_ns`
//! or `write_ns`, or a destage program's share of it) is
//!
//! ```text
//!   t' = t · exp(σ·Z − σ²/2)            the body: a mean-preserving log-normal, Z ~ N(0, 1)
//!      + (U < p_tail ? Exp(mean = tail_mean_ns) : 0)   the tail: rare slow operations
//! ```
//!
//! a two-component mixture. Why these two:
//!
//! * **Body — log-normal.** A flash or 3D XPoint array operation is the product of many
//!   small multiplicative effects (sense/verify loops of incremental-step programming,
//!   ECC decode iterations, cell temperature and wear), so its time is positive and
//!   right-skewed; the log-normal is the usual model of such products and has one shape
//!   parameter, σ. The location is chosen as `−σ²/2` so that `E[t'] = t`: the profile's
//!   means, IOPS and its `[nominal]` anchors do not move when variation is turned on.
//! * **Tail — a rare exponential delay.** Datasheet QoS figures (99.99 %, 99.999 %) lie
//!   far beyond what a body fitted to the median and the 99th percentile gives: a
//!   single log-normal wide enough to reach them would spread the body too. Those
//!   outliers are discrete events — a read retry with shifted read voltages, an ECC
//!   soft decode, an internal media-management operation — so they are a separate,
//!   rare component (probability `tail_prob`) adding an exponentially distributed delay
//!   (memoryless, one parameter: its mean). The tail's share of the mean is
//!   `tail_prob · tail_mean_ns` (a few ns on the shipped profiles).
//!
//! # Stalls
//!
//! A third, opt-in component reaches beyond the operation that draws it: a **stall**
//! (`stall_prob`, `stall_ns`). With probability `stall_prob` an operation, as it
//! starts on its unit, stalls the device for its kind for `stall_ns`: it and every
//! other operation of the kind that would start on any unit in that time start when
//! the stall ends (operations already in service finish as booked). The causes are
//! device-wide and triggered by the work itself — a flash controller's housekeeping
//! every so many operations (a mapping-table flush, a block erase that holds the
//! channel), or a virtual disk's host doing the same on its side — and so is the
//! effect: a stall holds the operations queued behind it on every unit, so the deeper
//! the queue, the more operations one stall catches (about the queue depth's worth:
//! the share of operations delayed grows as `stall_prob · QD`), which a per-operation
//! tail cannot give. At QD1 a stall is a slow operation of exactly `stall_ns`. Stalls
//! hold array reads and unbuffered write pieces; a write buffer's destage programs are
//! not held. (This
//! machine's virtual disk: a 4 KiB read p99 that jumps 3–8 × from QD32 to QD64, while
//! 128 KiB reads at QD8 show none of it — docs/calibrate.md.)
//!
//! With this mixture the percentiles of a quiet device (QD1, nothing else running)
//! follow from the profile: the body sets p50 … p99.9, the tail p99.99 and beyond
//! (`P(extra > x) = tail_prob · e^(−x / tail_mean)`, so the `1 − q` quantile of the
//! extra delay is `tail_mean · ln(tail_prob / q)` for `q < tail_prob`). Each shipped
//! profile's header derives its parameters from its datasheet anchors that way.
//!
//! # Determinism
//!
//! Draws come from one xoshiro256++ stream per device, seeded with the run's seed
//! ([`crate::NvmeSsd::set_seed`]); operations draw in the order the device books them,
//! which is a function of the call sequence alone. A profile without `[service]` draws
//! nothing and behaves exactly as before variation existed.

use crate::profile::ProfileError;
use rand::{Rng, SeedableRng};
use rand_distr::Exp1;
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};
use sluice_core::Nanos;

/// The `[service]` section: per-operation variation of media times (see the module
/// documentation for the distribution).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceVariation {
    /// Array reads (`media.read_ns`).
    #[serde(default)]
    pub read: OpVariation,
    /// Programs (`media.write_ns`, destage programs).
    #[serde(default)]
    pub write: OpVariation,
}

/// Variation of one operation kind: a log-normal body and a rare exponential tail.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpVariation {
    /// Shape σ of the log-normal body (the standard deviation of `ln t'`), 0..=2;
    /// 0 = no body variation. p99 of the body ≈ `t · exp(2.326σ − σ²/2)`.
    #[serde(default)]
    pub sigma: f64,
    /// Probability that an operation is a slow one (tail), 0..=0.5.
    #[serde(default)]
    pub tail_prob: f64,
    /// Mean extra time of a slow operation, ns (exponentially distributed).
    #[serde(default, deserialize_with = "de_tail_mean")]
    pub tail_mean_ns: u64,
    /// Probability that an operation stalls the device for its kind as it starts,
    /// 0..=0.5 (module docs, "Stalls"); 0 = no stalls.
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub stall_prob: f64,
    /// How long a stall holds every operation of the kind from starting, ns. Required
    /// with a positive `stall_prob`.
    #[serde(
        default,
        skip_serializing_if = "is_zero_u64",
        deserialize_with = "de_stall_ns"
    )]
    pub stall_ns: u64,
}

fn is_zero_f64(v: &f64) -> bool {
    *v == 0.0
}

fn is_zero_u64(v: &u64) -> bool {
    *v == 0
}

fn de_stall_ns<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    let v = toml::Value::deserialize(d)?;
    crate::profile::whole_ns(v, "stall_ns").map_err(serde::de::Error::custom)
}

fn de_tail_mean<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    let v = toml::Value::deserialize(d)?;
    crate::profile::whole_ns(v, "tail_mean_ns").map_err(serde::de::Error::custom)
}

impl OpVariation {
    fn validate(&self, origin: &str, op: &str) -> Result<(), ProfileError> {
        let bad = |field: &str, problem: String| ProfileError::Invalid {
            origin: origin.to_string(),
            field: format!("service.{op}.{field}"),
            problem,
        };
        if !(0.0..=2.0).contains(&self.sigma) {
            return Err(bad(
                "sigma",
                format!(
                    "is {}; the log-normal shape must be in 0..=2 (0.05–0.3 is typical: p99 ≈ median · e^(2.33σ))",
                    self.sigma
                ),
            ));
        }
        if !(0.0..=0.5).contains(&self.tail_prob) {
            return Err(bad(
                "tail_prob",
                format!(
                    "is {}; the probability of a slow operation must be in 0..=0.5 (e.g. 1e-4)",
                    self.tail_prob
                ),
            ));
        }
        if self.tail_mean_ns > 10_000_000_000 {
            return Err(bad(
                "tail_mean_ns",
                format!(
                    "is {}; it must be at most 10000000000 nanoseconds (10 s)",
                    self.tail_mean_ns
                ),
            ));
        }
        if self.tail_prob > 0.0 && self.tail_mean_ns == 0 {
            return Err(bad(
                "tail_mean_ns",
                "is 0 but tail_prob is positive; give the mean extra time of a slow operation in ns".into(),
            ));
        }
        if !(0.0..=0.5).contains(&self.stall_prob) {
            return Err(bad(
                "stall_prob",
                format!(
                    "is {}; the probability that an operation stalls the device must be in 0..=0.5 (e.g. 2e-4)",
                    self.stall_prob
                ),
            ));
        }
        if self.stall_ns > 10_000_000_000 {
            return Err(bad(
                "stall_ns",
                format!(
                    "is {}; it must be at most 10000000000 nanoseconds (10 s)",
                    self.stall_ns
                ),
            ));
        }
        if self.stall_prob > 0.0 && self.stall_ns == 0 {
            return Err(bad(
                "stall_ns",
                "is 0 but stall_prob is positive; give how long a stall lasts in ns (e.g. 2000000)"
                    .into(),
            ));
        }
        Ok(())
    }

    fn is_active(&self) -> bool {
        self.sigma > 0.0 || self.tail_prob > 0.0 || self.stalls()
    }

    /// Whether this kind of operation has stalls.
    fn stalls(&self) -> bool {
        self.stall_prob > 0.0 && self.stall_ns > 0
    }
}

impl ServiceVariation {
    /// Check the ranges; errors name the field (`service.read.sigma`, …).
    pub fn validate(&self, origin: &str) -> Result<(), ProfileError> {
        self.read.validate(origin, "read")?;
        self.write.validate(origin, "write")
    }
}

/// Cells of the body's quantile table (2¹², indexed by the top 12 bits of a draw).
const CELLS: usize = 4096;

/// Precomputed parameters of one operation kind.
#[derive(Clone, Debug)]
struct Params {
    active: bool,
    /// The body's multiplier `exp(σ·Φ⁻¹(u) − σ²/2)` at `u = i / CELLS`, `i = 0..=CELLS`
    /// (the ends at `u = 1/(2·CELLS)` and `1 − 1/(2·CELLS)`), interpolated linearly
    /// between cells: one uniform draw and a multiply per operation instead of a
    /// normal draw and an `exp` (the simulator's speed). The body beyond its
    /// 1 − 1/8192 quantile is clipped there; the tail component models the extremes.
    /// Empty when σ = 0.
    body: Vec<f64>,
    /// `tail_prob` as a threshold on a uniform u32 draw.
    tail_threshold: u32,
    tail_mean: f64,
    /// `stall_prob` as a threshold on a uniform u64 draw (0: no stalls).
    stall_threshold: u64,
    /// `stall_ns`.
    stall_ns: Nanos,
}

impl Params {
    fn new(v: &OpVariation) -> Params {
        let mu = -v.sigma * v.sigma / 2.0;
        let body = if v.sigma > 0.0 {
            let mut t: Vec<f64> = (0..=CELLS)
                .map(|i| {
                    let u = (i as f64 / CELLS as f64)
                        .clamp(0.5 / CELLS as f64, 1.0 - 0.5 / CELLS as f64);
                    (mu + v.sigma * inverse_normal_cdf(u)).exp()
                })
                .collect();
            // Renormalise so that the table's own mean (trapezoids) is exactly 1.
            let mean = t.windows(2).map(|w| (w[0] + w[1]) / 2.0).sum::<f64>() / CELLS as f64;
            t.iter_mut().for_each(|x| *x /= mean);
            t
        } else {
            Vec::new()
        };
        Params {
            active: v.is_active(),
            body,
            tail_threshold: (v.tail_prob * u32::MAX as f64) as u32,
            tail_mean: v.tail_mean_ns as f64,
            stall_threshold: if v.stalls() {
                ((v.stall_prob * u64::MAX as f64) as u64).max(1)
            } else {
                0
            },
            stall_ns: v.stall_ns,
        }
    }
}

/// Φ⁻¹(p), the standard normal quantile, by Acklam's rational approximation (relative
/// error below 1.2·10⁻⁹), for building the body's table once.
fn inverse_normal_cdf(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969683028665376e1,
        2.209460984245205e2,
        -2.759285104469687e2,
        1.38357751867269e2,
        -3.066479806614716e1,
        2.506628277459239,
    ];
    const B: [f64; 5] = [
        -5.447609879822406e1,
        1.615858368580409e2,
        -1.556989798598866e2,
        6.680131188771972e1,
        -1.328068155288572e1,
    ];
    const C: [f64; 6] = [
        -7.784894002430293e-3,
        -3.223964580411365e-1,
        -2.400758277161838,
        -2.549732539343734,
        4.374664141464968,
        2.938163982698783,
    ];
    const D: [f64; 4] = [
        7.784695709041462e-3,
        3.224671290700398e-1,
        2.445134137142996,
        3.754408661907416,
    ];
    let low = 0.02425;
    if p < low {
        let q = (-2.0 * p.ln()).sqrt();
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    } else if p <= 1.0 - low {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    } else {
        -inverse_normal_cdf(1.0 - p)
    }
}

/// The device's sampler of media times: the profile's variation and its seeded stream.
#[derive(Clone, Debug)]
pub(crate) struct Service {
    read: Params,
    write: Params,
    rng: Xoshiro256PlusPlus,
    /// The stall in force for reads and for writes: (from, until).
    stall: [(Nanos, Nanos); 2],
}

impl Service {
    /// `None` when the profile has no variation (nothing is ever drawn).
    pub(crate) fn new(v: Option<&ServiceVariation>, seed: u64) -> Option<Service> {
        let v = v?;
        if !v.read.is_active() && !v.write.is_active() {
            return None;
        }
        Some(Service {
            read: Params::new(&v.read),
            write: Params::new(&v.write),
            rng: Service::stream(seed),
            stall: [(0, 0); 2],
        })
    }

    /// Start the stream afresh from `seed` (the tables stay: they depend on the profile
    /// only).
    pub(crate) fn reseed(&mut self, seed: u64) {
        self.rng = Service::stream(seed);
        self.stall = [(0, 0); 2];
    }

    /// When an operation that could start on its unit at `start` does start, through
    /// the stalls of its kind (module docs, "Stalls"): after the stall in force, if
    /// `start` falls in it; and if the operation draws a stall of its own, after that
    /// one too (it stalls the device from its own start). Without stalls, `start`.
    #[inline]
    pub(crate) fn stall_start(&mut self, start: Nanos, write: bool) -> Nanos {
        let p = if write { &self.write } else { &self.read };
        if p.stall_threshold == 0 {
            return start;
        }
        let (threshold, len) = (p.stall_threshold, p.stall_ns);
        let k = write as usize;
        let (from, until) = self.stall[k];
        let start = if (from..until).contains(&start) {
            until
        } else {
            start
        };
        if self.rng.random::<u64>() < threshold {
            // A stall drawn from inside (or at the end of) the one in force extends it;
            // the operations it already holds stay held.
            self.stall[k] = if (from..=until).contains(&start) {
                (from, start + len)
            } else {
                (start, start + len)
            };
            return start + len;
        }
        start
    }

    fn stream(seed: u64) -> Xoshiro256PlusPlus {
        Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x5E41_1CE5_E41C_E000)
    }

    /// The time of a write's front-end stage (command processing and the controller
    /// pulling the data from host memory) whose nominal cost is `nominal_ns`: the write
    /// body's log-normal only, no tail (the tail models media events). See
    /// `docs/devices.md`, "Service-time variation", for why writes' transfers vary and
    /// reads' do not.
    #[inline]
    pub(crate) fn draw_transfer(&mut self, nominal_ns: Nanos) -> Nanos {
        let p = &self.write;
        if p.body.is_empty() || nominal_ns == 0 {
            return nominal_ns;
        }
        let hi = (self.rng.random::<u64>() >> 32) as u32;
        let i = (hi >> 20) as usize;
        let f = (hi & 0xF_FFFF) as f64 * (1.0 / 1_048_576.0);
        let (a, b) = (p.body[i], p.body[i + 1]);
        ((nominal_ns as f64 * (a + (b - a) * f) + 0.5) as Nanos).clamp(1, 10_000_000_000)
    }

    /// The time of one operation whose nominal cost is `nominal_ns`.
    #[inline]
    pub(crate) fn draw(&mut self, nominal_ns: Nanos, write: bool) -> Nanos {
        let p = if write { &self.write } else { &self.read };
        if !p.active || nominal_ns == 0 {
            return nominal_ns;
        }
        // One draw: its high 32 bits place the body, its low 32 bits decide the tail.
        let r: u64 = self.rng.random();
        let mut t = nominal_ns as f64;
        if !p.body.is_empty() {
            // The high 32 bits: a cell (top 12 bits) and the place in it (the next 20).
            let hi = (r >> 32) as u32;
            let i = (hi >> 20) as usize;
            let f = (hi & 0xF_FFFF) as f64 * (1.0 / 1_048_576.0);
            let (a, b) = (p.body[i], p.body[i + 1]);
            t *= a + (b - a) * f;
        }
        if (r as u32) < p.tail_threshold {
            let tail_mean = p.tail_mean;
            let e: f64 = self.rng.sample(Exp1);
            t += e * tail_mean;
        }
        // Rounded (t > 0), bounded by the profile's limits (10 s) so sums of times cannot
        // wrap.
        ((t + 0.5) as Nanos).clamp(1, 10_000_000_000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn var(sigma: f64, tail_prob: f64, tail_mean_ns: u64) -> ServiceVariation {
        let v = OpVariation {
            sigma,
            tail_prob,
            tail_mean_ns,
            ..Default::default()
        };
        ServiceVariation { read: v, write: v }
    }

    #[test]
    fn no_variation_draws_nothing() {
        assert!(Service::new(None, 1).is_none());
        assert!(Service::new(Some(&var(0.0, 0.0, 0)), 1).is_none());
    }

    #[test]
    fn body_keeps_the_mean_and_quantiles_follow_sigma() {
        let mut s = Service::new(Some(&var(0.2, 0.0, 0)), 7).unwrap();
        let n = 200_000;
        let mut v: Vec<u64> = (0..n).map(|_| s.draw(10_000, false)).collect();
        let mean = v.iter().sum::<u64>() as f64 / n as f64;
        assert!((mean / 10_000.0 - 1.0).abs() < 0.005, "mean {mean}");
        v.sort_unstable();
        // median = t·e^(−σ²/2), p99 = t·e^(−σ²/2 + 2.326σ)
        let med = v[n / 2] as f64;
        let p99 = v[n * 99 / 100] as f64;
        let want_med = 10_000.0 * (-0.02f64).exp();
        let want_p99 = 10_000.0 * (-0.02f64 + 2.326 * 0.2).exp();
        assert!(
            (med / want_med - 1.0).abs() < 0.01,
            "median {med} vs {want_med}"
        );
        assert!(
            (p99 / want_p99 - 1.0).abs() < 0.02,
            "p99 {p99} vs {want_p99}"
        );
    }

    #[test]
    fn tail_quantile_matches_the_formula() {
        // P(extra > x) = p · e^(−x/m): the 1 − p/10 quantile is m · ln 10.
        let (p, m) = (0.01, 50_000u64);
        let mut s = Service::new(Some(&var(0.0, p, m)), 3).unwrap();
        let n = 400_000;
        let mut v: Vec<u64> = (0..n).map(|_| s.draw(1_000, true)).collect();
        v.sort_unstable();
        let q = v[n - n / 1000] as f64 - 1_000.0;
        let want = m as f64 * 10f64.ln();
        assert!((q / want - 1.0).abs() < 0.1, "tail quantile {q} vs {want}");
        let slow = v.iter().filter(|&&t| t > 1_000).count() as f64 / n as f64;
        assert!((slow / p - 1.0).abs() < 0.05, "slow share {slow}");
    }

    #[test]
    fn same_seed_same_draws() {
        let v = var(0.3, 0.01, 10_000);
        let mut a = Service::new(Some(&v), 9).unwrap();
        let mut b = Service::new(Some(&v), 9).unwrap();
        let mut c = Service::new(Some(&v), 10).unwrap();
        let da: Vec<u64> = (0..100).map(|_| a.draw(5_000, false)).collect();
        let db: Vec<u64> = (0..100).map(|_| b.draw(5_000, false)).collect();
        let dc: Vec<u64> = (0..100).map(|_| c.draw(5_000, false)).collect();
        assert_eq!(da, db);
        assert_ne!(da, dc);
        // Reseeding is starting afresh.
        a.reseed(10);
        let again: Vec<u64> = (0..100).map(|_| a.draw(5_000, false)).collect();
        assert_eq!(again, dc);
    }

    /// A stall holds the operations that would start in it (the one that drew it
    /// included) and no others; its draws are seeded; writes keep their own.
    #[test]
    fn a_stall_holds_what_would_start_in_it() {
        let v = ServiceVariation {
            read: OpVariation {
                stall_prob: 0.001,
                stall_ns: 1_000_000,
                ..Default::default()
            },
            write: OpVariation::default(),
        };
        v.validate("x").unwrap();
        let mut s = Service::new(Some(&v), 5).unwrap();
        // Operations starting every 10 µs: about one in a thousand draws a stall.
        let (mut t, mut stalls, mut held) = (0u64, 0u64, 0u64);
        for _ in 0..100_000 {
            let before = s.stall[0];
            let start = s.stall_start(t, false);
            if s.stall[0] != before {
                // It drew one: it starts when its own stall ends.
                assert_eq!(start, s.stall[0].1);
                stalls += 1;
            } else if start > t {
                // Held by the stall in force, until its end.
                assert_eq!(start, s.stall[0].1);
                assert!(s.stall[0].0 <= t);
                held += 1;
            }
            assert_eq!(s.stall_start(t, true), t, "writes have no stalls");
            t += 10_000;
        }
        assert!((70..=130).contains(&stalls), "{stalls} stalls");
        // Each stall (1 ms) holds the operations that would start in it: 99 each (a
        // few more where a held one draws another and the stall grows).
        assert!(
            (stalls * 95..=stalls * 110).contains(&held),
            "{held} held by {stalls} stalls"
        );
        // Seeded: the same seed, the same starts.
        let mut a = Service::new(Some(&v), 9).unwrap();
        let mut b = Service::new(Some(&v), 9).unwrap();
        let sa: Vec<u64> = (0..5_000)
            .map(|i| a.stall_start(i * 1_000, false))
            .collect();
        let sb: Vec<u64> = (0..5_000)
            .map(|i| b.stall_start(i * 1_000, false))
            .collect();
        assert_eq!(sa, sb);
    }

    #[test]
    fn bad_values_name_the_field() {
        let e = var(3.0, 0.0, 0).validate("x").unwrap_err().to_string();
        assert!(e.contains("service.read.sigma"), "{e}");
        let e = var(0.1, 0.1, 0).validate("x").unwrap_err().to_string();
        assert!(e.contains("tail_mean_ns"), "{e}");
        let e = var(0.1, 0.9, 5).validate("x").unwrap_err().to_string();
        assert!(e.contains("tail_prob"), "{e}");
        let mut v = var(0.0, 0.0, 0);
        v.read.stall_prob = 0.01;
        let e = v.validate("x").unwrap_err().to_string();
        assert!(e.contains("service.read.stall_ns"), "{e}");
        v.read.stall_prob = 0.7;
        v.read.stall_ns = 1000;
        let e = v.validate("x").unwrap_err().to_string();
        assert!(e.contains("stall_prob"), "{e}");
    }
}
