//! Seeded command faults: a media error or a timeout per command, drawn when the
//! controller fetches it, so the error paths of every layer above (a policy giving a
//! token back on an error completion, a split parent whose piece failed, a report that
//! counts errors) run under a seed and replay exactly.
//!
//! # The model
//! * **media error** (probability `media` per command): the command is serviced as
//!   usual (same front-end, bus and media time) and completes with `ok = false` — an
//!   NVMe "Unrecovered Read Error" / "Write Fault" status;
//! * **timeout** (probability `timeout`): the controller never completes the command
//!   on its own; it keeps its controller slot (but no media unit) until the host's
//!   timeout fires `timeout_ns` after submission, when the host aborts it and it
//!   completes with `ok = false` (Linux's NVMe driver: `io_timeout`, 30 s by default,
//!   then an abort; the default here is 30 ms so that simulated runs see it).
//!
//! One uniform draw per fetched command from a xoshiro256++ stream seeded by `seed`
//! decides (`u < media` → media error, `u < media + timeout` → timeout). With both
//! probabilities 0 nothing is drawn and the device behaves exactly as without faults.

use std::fmt;

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use sluice_core::Nanos;

/// Default host timeout before a hung command is aborted: 30 ms (simulated).
pub const DEFAULT_TIMEOUT_NS: Nanos = 30_000_000;

/// Which faults the device injects (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FaultConfig {
    /// Probability that a command completes with a media error, in [0, 1].
    pub media_error: f64,
    /// Probability that a command hangs until the host's timeout, in [0, 1].
    pub timeout: f64,
    /// The host's timeout, ns (> 0).
    pub timeout_ns: Nanos,
    /// Seed of the fault draws (`None`: the run's seed).
    pub seed: Option<u64>,
}

impl Default for FaultConfig {
    fn default() -> Self {
        FaultConfig::none()
    }
}

/// A bad `--faults` specification.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FaultSpecError {
    /// An entry without `=`, or an empty entry.
    #[error(
        "--faults: entry '{0}' is not key=value (e.g. media=0.001,timeout=0.0001,timeout_ms=30)"
    )]
    Entry(String),
    /// A key that does not exist.
    #[error(
        "--faults: unknown key '{0}'; known keys: media, timeout, timeout_ms, timeout_us, seed"
    )]
    Key(String),
    /// A value that is not a number in range.
    #[error("--faults: {key}={value}: {why}")]
    Value {
        /// The key.
        key: String,
        /// Its value as given.
        value: String,
        /// The accepted range.
        why: &'static str,
    },
}

impl FaultConfig {
    /// No faults.
    pub const fn none() -> Self {
        FaultConfig {
            media_error: 0.0,
            timeout: 0.0,
            timeout_ns: DEFAULT_TIMEOUT_NS,
            seed: None,
        }
    }

    /// Whether any fault can happen.
    pub fn is_active(&self) -> bool {
        self.media_error > 0.0 || self.timeout > 0.0
    }

    /// Parse `media=P,timeout=P,timeout_ms=N|timeout_us=N,seed=N` (every key optional;
    /// an empty string is no faults).
    pub fn parse(spec: &str) -> Result<FaultConfig, FaultSpecError> {
        let mut cfg = FaultConfig::none();
        if spec.trim().is_empty() {
            return Ok(cfg);
        }
        for entry in spec.split(',') {
            let Some((k, v)) = entry.split_once('=') else {
                return Err(FaultSpecError::Entry(entry.to_string()));
            };
            let (k, v) = (k.trim(), v.trim());
            let bad = |why| FaultSpecError::Value {
                key: k.to_string(),
                value: v.to_string(),
                why,
            };
            let prob = || -> Result<f64, FaultSpecError> {
                let p: f64 = v.parse().map_err(|_| bad("give a probability in [0, 1]"))?;
                if !(0.0..=1.0).contains(&p) {
                    return Err(bad("give a probability in [0, 1]"));
                }
                Ok(p)
            };
            // A whole number of `unit_ns` from 1 up to a day.
            let positive = |unit_ns: u64| -> Result<u64, FaultSpecError> {
                const DAY_NS: u64 = 86_400 * 1_000_000_000;
                match v.parse::<u64>() {
                    Ok(n) if n >= 1 && n <= DAY_NS / unit_ns => Ok(n * unit_ns),
                    _ => Err(bad("give a whole number from 1 up to a day")),
                }
            };
            match k {
                "media" => cfg.media_error = prob()?,
                "timeout" => cfg.timeout = prob()?,
                "timeout_ms" => cfg.timeout_ns = positive(1_000_000)?,
                "timeout_us" => cfg.timeout_ns = positive(1_000)?,
                "seed" => cfg.seed = Some(v.parse().map_err(|_| bad("give a whole number ≥ 0"))?),
                _ => return Err(FaultSpecError::Key(k.to_string())),
            }
        }
        if cfg.media_error + cfg.timeout > 1.0 {
            return Err(FaultSpecError::Value {
                key: "media+timeout".into(),
                value: format!("{}", cfg.media_error + cfg.timeout),
                why: "the two probabilities must add up to at most 1",
            });
        }
        Ok(cfg)
    }
}

impl fmt::Display for FaultConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "media={},timeout={},timeout_us={}",
            self.media_error,
            self.timeout,
            self.timeout_ns / 1_000
        )?;
        if let Some(s) = self.seed {
            write!(f, ",seed={s}")?;
        }
        Ok(())
    }
}

/// What happens to one command.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Fault {
    /// Served and completed normally.
    #[default]
    None,
    /// Served, completes with an error.
    Media,
    /// Hangs until the host's timeout aborts it.
    Timeout,
    /// Refused by the zoned namespace's checks (a write not at the write pointer, a
    /// reset of a partial zone, …): completes with an error after its processing,
    /// without media time. Never drawn; set by the zone checks.
    Zone,
}

/// The device's fault stream.
#[derive(Debug)]
pub(crate) struct Faults {
    cfg: FaultConfig,
    rng: Xoshiro256PlusPlus,
}

impl Faults {
    pub(crate) fn new(cfg: FaultConfig, seed: u64) -> Faults {
        Faults {
            cfg,
            rng: Xoshiro256PlusPlus::seed_from_u64(cfg.seed.unwrap_or(seed) ^ 0xFA17_5EED),
        }
    }

    pub(crate) fn config(&self) -> &FaultConfig {
        &self.cfg
    }

    /// The fault of the next fetched command.
    #[inline]
    pub(crate) fn draw(&mut self) -> Fault {
        let u: f64 = self.rng.random();
        if u < self.cfg.media_error {
            Fault::Media
        } else if u < self.cfg.media_error + self.cfg.timeout {
            Fault::Timeout
        } else {
            Fault::None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_key_and_refuses_what_is_wrong() {
        let c = FaultConfig::parse("media=0.01, timeout=0.001,timeout_ms=5,seed=7").unwrap();
        assert_eq!(c.media_error, 0.01);
        assert_eq!(c.timeout, 0.001);
        assert_eq!(c.timeout_ns, 5_000_000);
        assert_eq!(c.seed, Some(7));
        assert!(c.is_active());
        assert_eq!(
            FaultConfig::parse("timeout_us=250").unwrap().timeout_ns,
            250_000
        );
        assert!(!FaultConfig::parse("").unwrap().is_active());
        let day = FaultConfig::parse("timeout_ms=86400000").unwrap();
        assert_eq!(day.timeout_ns, 86_400 * 1_000_000_000);
        for (bad, needle) in [
            ("media=0.1,,timeout=0", "entry ''"),
            ("media", "not key=value"),
            ("speed=1", "unknown key 'speed'"),
            ("media=2", "probability in [0, 1]"),
            ("media=NaN", "probability in [0, 1]"),
            ("media=-0.1", "probability in [0, 1]"),
            ("timeout_ms=0", "from 1 up to a day"),
            ("timeout_ms=x", "from 1 up to a day"),
            // A day and a millisecond (1000 days were accepted).
            ("timeout_ms=86400001", "from 1 up to a day"),
            ("timeout_us=86400000001", "from 1 up to a day"),
            ("media=0.7,timeout=0.5", "add up to at most 1"),
            ("seed=-1", "whole number"),
        ] {
            let e = FaultConfig::parse(bad).unwrap_err().to_string();
            assert!(e.contains(needle), "{bad}: {e}");
            assert!(e.starts_with("--faults"), "{bad}: {e}");
        }
    }

    #[test]
    fn draws_follow_the_probabilities_and_the_seed() {
        let cfg = FaultConfig::parse("media=0.1,timeout=0.05").unwrap();
        let mut f = Faults::new(cfg, 1);
        let n = 100_000;
        let mut media = 0;
        let mut timeout = 0;
        let mut seq = Vec::new();
        for _ in 0..n {
            let d = f.draw();
            match d {
                Fault::Media => media += 1,
                Fault::Timeout => timeout += 1,
                Fault::None | Fault::Zone => {}
            }
            seq.push(d);
        }
        assert!((9_400..10_600).contains(&media), "{media}");
        assert!((4_600..5_400).contains(&timeout), "{timeout}");
        let mut again = Faults::new(cfg, 1);
        assert!(seq.iter().all(|d| *d == again.draw()));
        let mut other = Faults::new(cfg, 2);
        assert!(seq.iter().any(|d| *d != other.draw()));
    }
}
