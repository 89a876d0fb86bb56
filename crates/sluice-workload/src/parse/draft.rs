//! Collecting a section's options into its [`Draft`]: each through its row's setter.

#[allow(unused_imports)]
use super::*;

impl Draft {
    /// Record an option accepted without action (the last value of an option wins).
    pub(super) fn record(&mut self, key: &str, value: Option<&str>) {
        let v = value.unwrap_or("1").to_string();
        self.job.passthrough.retain(|(n, _)| n != key);
        self.job.passthrough.push((key.to_string(), v));
    }

    /// Apply one option through its row's setter; `Unknown` when no row acts on it.
    pub(super) fn apply(
        &mut self,
        key: &str,
        value: Option<&str>,
        at: &Loc,
    ) -> Result<(), ApplyError> {
        let Some(set) = lookup(key).and_then(|o| o.set) else {
            return Err(ApplyError::Unknown);
        };
        Ok(set(self, &Arg { key, value, at })?)
    }
}

impl Arg<'_> {
    /// The value, which must be given.
    pub(super) fn need(&self) -> Result<&str, String> {
        need(self.key, self.value)
    }

    /// A flag: bare, or `=0`/`=1` (and fio's other spellings).
    pub(super) fn flag(&self) -> Result<bool, String> {
        parse_bool(self.value)
    }

    /// A whole number from `lo` to `hi` (`ex`: an example for the message).
    pub(super) fn uint<T: TryFrom<u64>>(&self, ex: &str, lo: u64, hi: u64) -> Result<T, String> {
        small_uint(self.need()?, ex, lo, hi)
    }

    /// A whole number where 0 means none.
    pub(super) fn some_uint(&self, ex: &str) -> Result<Option<u64>, String> {
        let n = parse_uint(self.need()?, ex)?;
        Ok((n > 0).then_some(n))
    }

    /// A time, a bare number in `unit`.
    pub(super) fn time(&self, unit: TimeUnit) -> Result<u64, String> {
        parse_time(self.need()?, unit)
    }

    /// `read,write[,trim]` parts (see [`split_dirs`]).
    pub(super) fn dirs(&self) -> Result<([Option<String>; 2], bool), String> {
        split_dirs(self.key, self.need()?)
    }
}
