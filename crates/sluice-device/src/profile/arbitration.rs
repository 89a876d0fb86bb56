//! The profile's arbitration section: NVMe round robin or weighted round robin with an
//! urgent class, its burst, its checks and its `--arbitration` text form.

use super::validate::invalid;
use super::ProfileError;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The arbitration mechanism (NVMe base spec, "Arbitration Mechanisms").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ArbitrationKind {
    /// Round robin over all non-empty submission queues; queue classes are ignored.
    Rr,
    /// Weighted round robin with urgent priority class.
    Wrr,
}

/// The arbitration burst: the most commands fetched from one submission queue per turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "BurstRepr", into = "BurstRepr")]
pub enum Burst {
    /// At most this many (a power of two, 1..=128).
    Limited(u32),
    /// No limit (the spec's value 111b).
    Unlimited,
}

impl Burst {
    /// The limit as a count (`u32::MAX` when unlimited).
    pub fn count(self) -> u32 {
        match self {
            Burst::Limited(n) => n,
            Burst::Unlimited => u32::MAX,
        }
    }
}

impl fmt::Display for Burst {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Burst::Limited(n) => write!(f, "{n}"),
            Burst::Unlimited => f.write_str("unlimited"),
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(untagged)]
enum BurstRepr {
    N(u32),
    S(String),
}

impl TryFrom<BurstRepr> for Burst {
    type Error = String;
    fn try_from(r: BurstRepr) -> Result<Self, String> {
        match r {
            BurstRepr::N(n) => Ok(Burst::Limited(n)),
            BurstRepr::S(s) if s == "unlimited" => Ok(Burst::Unlimited),
            BurstRepr::S(s) => Err(format!(
                "arbitration burst `{s}` is not a number or \"unlimited\""
            )),
        }
    }
}

impl From<Burst> for BurstRepr {
    fn from(b: Burst) -> Self {
        match b {
            Burst::Limited(n) => BurstRepr::N(n),
            Burst::Unlimited => BurstRepr::S("unlimited".into()),
        }
    }
}

fn default_weight() -> u32 {
    1
}
fn default_burst() -> Burst {
    Burst::Limited(1)
}

/// Arbitration settings. Weights are *counts* of commands per round (the spec's
/// register value plus one), 1..=256.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Arbitration {
    /// `rr` or `wrr`.
    pub kind: ArbitrationKind,
    /// High-priority weight (commands per round), used by `wrr`.
    #[serde(default = "default_weight")]
    pub hpw: u32,
    /// Medium-priority weight, used by `wrr`.
    #[serde(default = "default_weight")]
    pub mpw: u32,
    /// Low-priority weight, used by `wrr`.
    #[serde(default = "default_weight")]
    pub lpw: u32,
    /// Arbitration burst: a power of two 1..=128, or `"unlimited"`.
    #[serde(default = "default_burst")]
    pub burst: Burst,
}

impl Arbitration {
    /// Round robin with the given burst.
    pub fn rr(burst: Burst) -> Arbitration {
        Arbitration {
            kind: ArbitrationKind::Rr,
            hpw: 1,
            mpw: 1,
            lpw: 1,
            burst,
        }
    }

    /// Weighted round robin with urgent class and explicit weights (counts).
    pub fn wrr(hpw: u32, mpw: u32, lpw: u32, burst: Burst) -> Arbitration {
        Arbitration {
            kind: ArbitrationKind::Wrr,
            hpw,
            mpw,
            lpw,
            burst,
        }
    }

    /// WRR weights from D2FQ's base `b` (authors' code; 3..=256, default 6):
    /// L = 256/b, M = L·⌈√b⌉, H = L·b (each clamped to 1..=256).
    pub fn d2fq(base: u32, burst: Burst) -> Arbitration {
        let b = base.max(1);
        let l = (256 / b).max(1);
        let mut root = 1u32;
        while root * root < b {
            root += 1;
        }
        let m = (l * root).min(256);
        let h = (l * b).min(256);
        Arbitration::wrr(h, m, l, burst)
    }

    /// Check ranges; `origin` names the profile in the error.
    pub(crate) fn validate(&self, origin: &str) -> Result<(), ProfileError> {
        for (field, w) in [
            ("arbitration.hpw", self.hpw),
            ("arbitration.mpw", self.mpw),
            ("arbitration.lpw", self.lpw),
        ] {
            if !(1..=256).contains(&w) {
                return Err(invalid(
                    origin,
                    field,
                    format!("is {w}; a weight is a count of commands per round, 1..=256 (the NVMe register value plus one)"),
                ));
            }
        }
        if let Burst::Limited(n) = self.burst {
            if !(1..=128).contains(&n) || !n.is_power_of_two() {
                return Err(invalid(
                    origin,
                    "arbitration.burst",
                    format!("is {n}; use a power of two 1, 2, 4, … 128, or \"unlimited\""),
                ));
            }
        }
        Ok(())
    }
}

impl FromStr for Arbitration {
    type Err = ProfileError;

    /// Parse an override: `rr`, `rr:BURST`, `wrr` (D2FQ default: base 6 → 252,126,42,
    /// burst 8), `wrr:HPW,MPW,LPW` (burst 8) or `wrr:HPW,MPW,LPW,BURST`.
    fn from_str(text: &str) -> Result<Self, ProfileError> {
        let bad = |problem: &str| ProfileError::BadArbitration {
            text: text.to_string(),
            problem: problem.to_string(),
        };
        let burst_of = |s: &str| -> Result<Burst, ProfileError> {
            if s == "unlimited" {
                Ok(Burst::Unlimited)
            } else {
                s.trim()
                    .parse::<u32>()
                    .map(Burst::Limited)
                    .map_err(|_| bad("the burst is not a number"))
            }
        };
        let (kind, rest) = match text.split_once(':') {
            Some((k, r)) => (k.trim(), Some(r)),
            None => (text.trim(), None),
        };
        let arb = match (kind, rest) {
            ("rr", None) => Arbitration::rr(Burst::Limited(8)),
            ("rr", Some(b)) => Arbitration::rr(burst_of(b)?),
            ("wrr", None) => Arbitration::d2fq(6, Burst::Limited(8)),
            ("wrr", Some(list)) => {
                let parts: Vec<&str> = list.split(',').map(str::trim).collect();
                if parts.len() != 3 && parts.len() != 4 {
                    return Err(bad("expected three weights and an optional burst"));
                }
                let w = |s: &str| {
                    s.parse::<u32>()
                        .map_err(|_| bad("a weight is not a number"))
                };
                let burst = match parts.get(3) {
                    Some(b) => burst_of(b)?,
                    None => Burst::Limited(8),
                };
                Arbitration::wrr(w(parts[0])?, w(parts[1])?, w(parts[2])?, burst)
            }
            _ => return Err(bad("the kind must be `rr` or `wrr`")),
        };
        arb.validate("arbitration override").map_err(|e| match e {
            ProfileError::Invalid { field, problem, .. } => bad(&format!("{field} {problem}")),
            other => other,
        })?;
        Ok(arb)
    }
}
