//! BFQ's tunables ([`BfqConfig`]) and their `bfq:key=value` form.

#[allow(unused_imports)]
use super::*;

/// How `B_max` is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MaxBudget {
    /// From the estimated peak rate: sectors served in one budget timeout.
    Auto,
    /// A fixed number of sectors.
    Sectors(u64),
}

/// BFQ's tunables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BfqConfig {
    /// `slice_idle`, ns (0: never idle).
    pub slice_idle_ns: u64,
    /// `timeout_sync`, ns (> 0).
    pub timeout_sync_ns: u64,
    /// `max_budget`.
    pub max_budget: MaxBudget,
    /// `strict_guarantees`.
    pub strict_guarantees: bool,
    /// Requests in flight at most (≥ 1).
    pub depth: u32,
}

impl Default for BfqConfig {
    fn default() -> Self {
        BfqConfig {
            slice_idle_ns: 8_000_000,
            timeout_sync_ns: 125_000_000,
            max_budget: MaxBudget::Auto,
            strict_guarantees: false,
            depth: 64,
        }
    }
}

/// Take `key` as an integer in `0..=max` if it was given.
fn take_opt_u64(p: &mut Params, key: &str, max: u64) -> Result<Option<u64>, ParamError> {
    // NUL cannot come from a `key=value` list: it stands for "absent".
    let v: String = p.take(key, String::from("\0"), "a non-negative integer")?;
    if v == "\0" {
        return Ok(None);
    }
    let n: u64 = v.parse().map_err(|_| ParamError::BadValue {
        key: key.to_string(),
        value: v.clone(),
        expected: "a non-negative integer",
    })?;
    if n > max {
        return Err(ParamError::OutOfRange {
            key: key.to_string(),
            value: v,
            why: format!("must be between 0 and {max}"),
        });
    }
    Ok(Some(n))
}

impl Bfq {
    /// Build from `bfq:slice_idle=MS,timeout_sync=MS,max_budget=SECTORS|auto,...`.
    pub fn from_params(p: &mut Params) -> Result<Self, ParamError> {
        let d = BfqConfig::default();
        let ms = take_opt_u64(p, "slice_idle", 10_000)?;
        let us = take_opt_u64(p, "slice_idle_us", 10_000_000)?;
        let slice_idle_ns = match (ms, us) {
            (Some(_), Some(u)) => {
                return Err(ParamError::OutOfRange {
                    key: "slice_idle_us".into(),
                    value: u.to_string(),
                    why: "give slice_idle (ms) or slice_idle_us, not both".into(),
                })
            }
            (Some(ms), None) => ms * 1_000_000,
            (None, Some(us)) => us * 1000,
            (None, None) => d.slice_idle_ns,
        };
        let timeout_sync_ns = p.take_u64_in("timeout_sync", 125, 1, 60_000)? * 1_000_000;
        let max_budget = match p
            .take(
                "max_budget",
                String::from("auto"),
                "a number of sectors or auto",
            )?
            .as_str()
        {
            "auto" | "0" => MaxBudget::Auto,
            s => match s.parse::<u64>() {
                Ok(n) if n <= 1 << 32 => MaxBudget::Sectors(n),
                Ok(n) => {
                    return Err(ParamError::OutOfRange {
                        key: "max_budget".into(),
                        value: n.to_string(),
                        why: format!("must be at most {} sectors, or auto", 1u64 << 32),
                    })
                }
                Err(_) => {
                    return Err(ParamError::BadValue {
                        key: "max_budget".into(),
                        value: s.to_string(),
                        expected: "a number of sectors or auto",
                    })
                }
            },
        };
        let strict_guarantees = p.take_u64_in("strict_guarantees", 0, 0, 1)? == 1;
        let low_latency = p.take_u64_in("low_latency", 0, 0, 1)?;
        if low_latency != 0 {
            return Err(ParamError::OutOfRange {
                key: "low_latency".into(),
                value: low_latency.to_string(),
                why: "sluice's bfq has no weight raising; only 0 is accepted".into(),
            });
        }
        let depth = p.take_u64_in("depth", d.depth as u64, 1, 65536)? as u32;
        Ok(Bfq::new(BfqConfig {
            slice_idle_ns,
            timeout_sync_ns,
            max_budget,
            strict_guarantees,
            depth,
        }))
    }
}
