//! Reading numbers with units: sizes, times, percentages, flags.
//!
//! A size, time or whole number that starts with `(` is one of fio's arithmetic
//! expressions, e.g. `((1+2)*4k)` (see the crate documentation).
//!
//! Every function returns the problem as a sentence (what is wrong and how to write it
//! instead); the parser puts the file, line and option in front of it.

use sluice_core::Nanos;

/// Unit in which a bare time number is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeUnit {
    /// Seconds (fio's default for `runtime`, `ramp_time`, `startdelay`).
    Seconds,
    /// Microseconds (fio's default for `thinktime`).
    Micros,
}

impl TimeUnit {
    fn ns(self) -> u64 {
        match self {
            TimeUnit::Seconds => 1_000_000_000,
            TimeUnit::Micros => 1_000,
        }
    }
}

/// Split `s` into its leading ASCII digits and the rest.
fn split_digits(s: &str) -> (&str, &str) {
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    s.split_at(end)
}

/// Read a size in bytes: a whole number with an optional base-2 suffix (`k`, `KiB`,
/// `kb`, `KB`, `m`, `g`, `t`, `p`, all multiples of 1024 as fio's default
/// `kb_base=1024`), an optional `b`/`B` for bytes, or a `0x` hex number.
/// Zero is accepted here; callers that need a positive size check it.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let s = s.trim();
    if s.starts_with('(') {
        return crate::expr::eval(s, crate::expr::ExprKind::Size);
    }
    let bad = || format!("cannot read '{s}' as a size (e.g. 4k, 128KiB, 1g)");
    if s.starts_with('-') {
        return Err(format!(
            "'{s}' is negative; sizes must be positive (e.g. 4k)"
        ));
    }
    if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        return u64::from_str_radix(hex, 16).map_err(|_| bad());
    }
    let (digits, suffix) = split_digits(s);
    if digits.is_empty() {
        return Err(bad());
    }
    let shift = match suffix.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        "p" | "pb" | "pib" => 50,
        _ => return Err(bad()),
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("'{s}' is too large for a size"))?;
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| format!("'{s}' is too large for a size"))
}

/// Read a size that must be positive (not zero, not negative).
pub fn parse_positive_size(s: &str) -> Result<u64, String> {
    match parse_size(s)? {
        0 => Err(format!(
            "'{}' is zero; sizes must be positive (e.g. 4k)",
            s.trim()
        )),
        n => Ok(n),
    }
}

/// Read a duration: a whole number with an optional unit (`ns`, `us`/`usec`,
/// `ms`/`msec`, `s`/`sec`, `m`/`min`, `h`/`hour`, `d`/`day`); a bare number is in
/// `default_unit`.
pub fn parse_time(s: &str, default_unit: TimeUnit) -> Result<Nanos, String> {
    let s = s.trim();
    if s.starts_with('(') {
        return crate::expr::eval(s, crate::expr::ExprKind::Time);
    }
    let example = match default_unit {
        TimeUnit::Seconds => "e.g. 30, 250ms, 10s, 1h",
        TimeUnit::Micros => "e.g. 100 (microseconds), 250us, 2ms",
    };
    if s.starts_with('-') {
        return Err(format!(
            "'{s}' is negative; times cannot be negative ({example})"
        ));
    }
    let (digits, suffix) = split_digits(s);
    if digits.is_empty() {
        return Err(format!("cannot read '{s}' as a time ({example})"));
    }
    let unit: u64 = match suffix.to_ascii_lowercase().as_str() {
        "" => default_unit.ns(),
        "ns" | "nsec" => 1,
        "us" | "usec" => 1_000,
        "ms" | "msec" => 1_000_000,
        "s" | "sec" => 1_000_000_000,
        "m" | "min" => 60_000_000_000,
        "h" | "hour" => 3_600_000_000_000,
        "d" | "day" => 86_400_000_000_000,
        _ => return Err(format!("cannot read '{s}' as a time ({example})")),
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("'{s}' is too long a time"))?;
    n.checked_mul(unit)
        .ok_or_else(|| format!("'{s}' is too long a time"))
}

/// Read a whole number (no suffix).
pub fn parse_uint(s: &str, example: &str) -> Result<u64, String> {
    let s = s.trim();
    if s.starts_with('(') {
        return crate::expr::eval(s, crate::expr::ExprKind::Plain);
    }
    if s.starts_with('-') {
        return Err(format!(
            "'{s}' is negative; expected a whole number (e.g. {example})"
        ));
    }
    s.parse::<u64>()
        .map_err(|_| format!("cannot read '{s}' as a whole number (e.g. {example})"))
}

/// Parts per million in 100 %.
pub const PPM: u32 = 1_000_000;

/// Read a percentage between 0 and 100 with up to four decimals, as parts per million.
pub fn parse_percent_ppm(s: &str) -> Result<u32, String> {
    let s = s.trim();
    let bad = || format!("cannot read '{s}' as a percentage (a number from 0 to 100, e.g. 30)");
    let (int, frac) = match s.split_once('.') {
        Some((i, f)) => (i, f),
        None => (s, ""),
    };
    if int.is_empty()
        || !int.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
        || frac.len() > 4
        || (s.contains('.') && frac.is_empty())
    {
        return Err(bad());
    }
    let int: u64 = int.parse().map_err(|_| bad())?;
    let mut frac_ppm: u64 = 0;
    let mut scale = 1_000;
    for b in frac.bytes() {
        frac_ppm += (b - b'0') as u64 * scale;
        scale /= 10;
    }
    let ppm = int
        .checked_mul(10_000)
        .and_then(|v| v.checked_add(frac_ppm))
        .ok_or_else(bad)?;
    if ppm > PPM as u64 {
        return Err(format!("'{s}' is more than 100 percent"));
    }
    Ok(ppm as u32)
}

/// Read a flag's value: absent (bare flag) or `1`/`true`/`yes`/`on` is true,
/// `0`/`false`/`no`/`off` is false.
pub fn parse_bool(value: Option<&str>) -> Result<bool, String> {
    match value.map(|v| v.trim().to_ascii_lowercase()) {
        None => Ok(true),
        Some(v) => match v.as_str() {
            "1" | "true" | "yes" | "on" => Ok(true),
            "0" | "false" | "no" | "off" => Ok(false),
            _ => Err(format!(
                "cannot read '{v}' as a flag; write 0 or 1, or the bare option name for 1"
            )),
        },
    }
}

/// Human-readable size for messages: `64KiB`, `1MiB`, `1536B`.
pub fn show_size(n: u64) -> String {
    const UNITS: [(&str, u32); 5] = [
        ("PiB", 50),
        ("TiB", 40),
        ("GiB", 30),
        ("MiB", 20),
        ("KiB", 10),
    ];
    for (name, shift) in UNITS {
        if n >= 1 << shift && n & ((1u64 << shift) - 1) == 0 {
            return format!("{}{name}", n >> shift);
        }
    }
    format!("{n}B")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("4k"), Ok(4096));
        assert_eq!(parse_size("4K"), Ok(4096));
        assert_eq!(parse_size("4kb"), Ok(4096));
        assert_eq!(parse_size("4KB"), Ok(4096));
        assert_eq!(parse_size("128KiB"), Ok(128 << 10));
        assert_eq!(parse_size("2m"), Ok(2 << 20));
        assert_eq!(parse_size("1g"), Ok(1 << 30));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("3t"), Ok(3 << 40));
        assert_eq!(parse_size("512b"), Ok(512));
        assert_eq!(parse_size("0x1000"), Ok(4096));
        assert!(parse_size("x4k")
            .unwrap_err()
            .contains("cannot read 'x4k' as a size"));
        assert!(parse_size("4q").is_err());
        assert!(parse_size("").is_err());
        assert!(parse_size("-4k").unwrap_err().contains("negative"));
        assert!(parse_size("99999999999999p")
            .unwrap_err()
            .contains("too large"));
        assert!(parse_positive_size("0").unwrap_err().contains("zero"));
    }

    #[test]
    fn times() {
        let s = TimeUnit::Seconds;
        assert_eq!(parse_time("30", s), Ok(30_000_000_000));
        assert_eq!(parse_time("250ms", s), Ok(250_000_000));
        assert_eq!(parse_time("1h", s), Ok(3_600_000_000_000));
        assert_eq!(parse_time("2m", s), Ok(120_000_000_000));
        assert_eq!(parse_time("10s", s), Ok(10_000_000_000));
        assert_eq!(parse_time("15us", s), Ok(15_000));
        assert_eq!(parse_time("100", TimeUnit::Micros), Ok(100_000));
        assert_eq!(parse_time("2ms", TimeUnit::Micros), Ok(2_000_000));
        assert!(parse_time("ten", s).is_err());
        assert!(parse_time("5parsecs", s).is_err());
        assert!(parse_time("-1", s).is_err());
    }

    #[test]
    fn percents() {
        assert_eq!(parse_percent_ppm("50"), Ok(500_000));
        assert_eq!(parse_percent_ppm("100"), Ok(PPM));
        assert_eq!(parse_percent_ppm("0"), Ok(0));
        assert_eq!(parse_percent_ppm("12.5"), Ok(125_000));
        assert_eq!(parse_percent_ppm("0.0001"), Ok(1));
        assert!(parse_percent_ppm("101").is_err());
        assert!(parse_percent_ppm("-5").is_err());
        assert!(parse_percent_ppm("5.").is_err());
        assert!(parse_percent_ppm("abc").is_err());
    }

    #[test]
    fn flags_and_show() {
        assert_eq!(parse_bool(None), Ok(true));
        assert_eq!(parse_bool(Some("0")), Ok(false));
        assert!(parse_bool(Some("2")).is_err());
        assert_eq!(show_size(65536), "64KiB");
        assert_eq!(show_size(1 << 30), "1GiB");
        assert_eq!(show_size(1536), "1536B");
    }
}
