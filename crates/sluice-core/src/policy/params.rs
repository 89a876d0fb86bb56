//! Policy specifications on the command line: `NAME[:key=value,...]`.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

/// A parameter problem, with what to do about it.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ParamError {
    /// `key=value` was malformed.
    #[error("malformed parameter '{0}': expected key=value")]
    Malformed(String),
    /// The same key twice.
    #[error("parameter '{0}' given twice")]
    Duplicate(String),
    /// A value did not parse.
    #[error("parameter '{key}': cannot read '{value}' as {expected}")]
    BadValue {
        /// Key.
        key: String,
        /// Value given.
        value: String,
        /// What was expected (e.g. "a positive integer").
        expected: &'static str,
    },
    /// A value is out of range.
    #[error("parameter '{key}' = {value}: {why}")]
    OutOfRange {
        /// Key.
        key: String,
        /// Value given.
        value: String,
        /// The allowed range in words.
        why: String,
    },
    /// Keys the policy does not know.
    #[error("unknown parameter(s) {0}")]
    Unknown(String),
    /// The policy name is empty.
    #[error("empty policy name")]
    EmptyName,
}

/// Key/value parameters of a policy. A policy takes the keys it knows with the typed
/// getters; [`Params::finish`] then reports any key nobody took, so a typo is an error,
/// never silently ignored.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Params {
    map: BTreeMap<String, String>,
    /// The keys the policy asked for (its valid ones), for the error naming a typo.
    asked: Vec<String>,
}

impl Params {
    /// Parse `key=value,key=value`.
    pub fn parse(s: &str) -> Result<Self, ParamError> {
        let mut map = BTreeMap::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| ParamError::Malformed(part.to_string()))?;
            let (k, v) = (k.trim(), v.trim());
            if k.is_empty() {
                return Err(ParamError::Malformed(part.to_string()));
            }
            if map.insert(k.to_string(), v.to_string()).is_some() {
                return Err(ParamError::Duplicate(k.to_string()));
            }
        }
        Ok(Params {
            map,
            asked: Vec::new(),
        })
    }

    /// Whether no parameters are left.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Take `key` as a `T`, or `default` when absent.
    pub fn take<T: FromStr>(
        &mut self,
        key: &str,
        default: T,
        expected: &'static str,
    ) -> Result<T, ParamError> {
        if !self.asked.iter().any(|k| k == key) {
            self.asked.push(key.to_string());
        }
        match self.map.remove(key) {
            None => Ok(default),
            Some(v) => v.parse().map_err(|_| ParamError::BadValue {
                key: key.to_string(),
                value: v,
                expected,
            }),
        }
    }

    /// Take a `u64` in `[min, max]`.
    pub fn take_u64_in(
        &mut self,
        key: &str,
        default: u64,
        min: u64,
        max: u64,
    ) -> Result<u64, ParamError> {
        let v: u64 = self.take(key, default, "a non-negative integer")?;
        if v < min || v > max {
            return Err(ParamError::OutOfRange {
                key: key.to_string(),
                value: v.to_string(),
                why: format!("must be between {min} and {max}"),
            });
        }
        Ok(v)
    }

    /// Error if any key was not taken.
    pub fn finish(&mut self) -> Result<(), ParamError> {
        if self.map.is_empty() {
            return Ok(());
        }
        let keys: Vec<String> = self.map.keys().map(|k| format!("'{k}'")).collect();
        let valid = if self.asked.is_empty() {
            "it takes no parameters".to_string()
        } else {
            format!("it takes {}", self.asked.join(", "))
        };
        Err(ParamError::Unknown(format!("{}; {valid}", keys.join(", "))))
    }
}

/// A policy as named on the command line: `NAME[:key=value,...]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicySpec {
    /// Policy name.
    pub name: String,
    /// Its parameters.
    pub params: Params,
    /// The text it was parsed from (used as the run's label).
    pub text: String,
}

impl FromStr for PolicySpec {
    type Err = ParamError;
    fn from_str(s: &str) -> Result<Self, ParamError> {
        let s = s.trim();
        let (name, rest) = s.split_once(':').unwrap_or((s, ""));
        let name = name.trim();
        if name.is_empty() {
            return Err(ParamError::EmptyName);
        }
        if name.contains('=') {
            return Err(ParamError::Malformed(format!(
                "{s} (parameters follow the policy name after ':', e.g. d2fq:mode=static)"
            )));
        }
        Ok(PolicySpec {
            name: name.to_string(),
            params: Params::parse(rest)?,
            text: s.to_string(),
        })
    }
}

impl fmt::Display for PolicySpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_name_and_params() {
        let s: PolicySpec = "d2fq:mode=static,hl=4".parse().unwrap();
        assert_eq!(s.name, "d2fq");
        let mut p = s.params.clone();
        assert_eq!(p.take("hl", 1u32, "int").unwrap(), 4);
        assert!(p.finish().is_err(), "mode was not taken");
    }

    #[test]
    fn rejects_malformed() {
        assert_eq!(
            "x:a".parse::<PolicySpec>().unwrap_err(),
            ParamError::Malformed("a".into())
        );
        assert_eq!(
            ":a=1".parse::<PolicySpec>().unwrap_err(),
            ParamError::EmptyName
        );
        assert!(matches!(
            "x:a=1,a=2".parse::<PolicySpec>().unwrap_err(),
            ParamError::Duplicate(_)
        ));
    }

    #[test]
    fn range_checked() {
        let mut p = Params::parse("tokens=0").unwrap();
        assert!(matches!(
            p.take_u64_in("tokens", 8, 1, 1024),
            Err(ParamError::OutOfRange { .. })
        ));
        let mut p = Params::parse("tokens=abc").unwrap();
        assert!(matches!(
            p.take_u64_in("tokens", 8, 1, 1024),
            Err(ParamError::BadValue { .. })
        ));
    }
}
