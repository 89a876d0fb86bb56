//! Parsing and checking single option values (sizes, modes, splits) and typo hints.

#[allow(unused_imports)]
use super::*;

/// The closest known option name, if one is close enough to be a likely typo.
pub(super) fn suggest(key: &str) -> Option<&'static str> {
    let key = key.to_ascii_lowercase();
    let (name, dist) = option_table()
        .iter()
        .flat_map(|o| std::iter::once(o.name).chain(o.aliases.iter().copied()))
        .map(|n| (n, edit_distance(&key, n)))
        .min_by_key(|&(_, d)| d)?;
    (dist <= 2.max(key.len() / 4) && dist < key.len()).then_some(name)
}

/// Levenshtein distance (option names are short).
pub(super) fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

pub(super) fn example(key: &str) -> &'static str {
    lookup(key).map_or("key=value", |o| o.example)
}

pub(super) fn need<'v>(key: &str, value: Option<&'v str>) -> Result<&'v str, String> {
    match value {
        Some(v) if !v.is_empty() => Ok(v),
        _ => Err(format!("needs a value, e.g. {}", example(key))),
    }
}

/// Split `read,write[,trim]` into its read and write parts. A single value applies to
/// both directions (second result true); an empty part leaves that direction unset;
/// a trim part is accepted and ignored.
pub(super) fn split_dirs(key: &str, v: &str) -> Result<([Option<String>; 2], bool), String> {
    let parts: Vec<&str> = v.split(',').map(str::trim).collect();
    if parts.len() > 3 {
        return Err(format!(
            "'{v}' has more than three comma-separated values; write one value, or read,write (e.g. {key}=4k,64k)"
        ));
    }
    let opt = |s: &str| (!s.is_empty()).then(|| s.to_string());
    if parts.len() == 1 {
        return Ok(([opt(parts[0]), opt(parts[0])], true));
    }
    Ok(([opt(parts[0]), opt(parts[1])], false))
}

/// fio's `bs=read,write,trim`: the trim part. "A value not terminated in a comma
/// applies to subsequent types": `bs=8k,32k` trims with 32k, `bs=8k,32k,` with the
/// default; a single value applies to all three.
pub(super) fn trim_part(v: &str) -> Option<String> {
    let parts: Vec<&str> = v.split(',').map(str::trim).collect();
    let p = match parts.len() {
        3 => parts[2],
        n => parts[n - 1],
    };
    (!p.is_empty()).then(|| p.to_string())
}

pub(super) fn parse_bs(s: &str) -> Result<u32, String> {
    let n = parse_positive_size(s)?;
    u32::try_from(n).map_err(|_| format!("block size '{s}' is too large; at most 4GiB - 1"))
}

pub(super) fn show_pct(ppm: u64) -> String {
    let s = format!("{:.4}", ppm as f64 / 10_000.0);
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Parse one `bssplit` table: `size/percent:size/percent:…`; an entry with an empty
/// percentage (`64k/` or `64k`) gets an equal part of the rest.
pub(super) fn parse_bssplit(s: &str) -> Result<Vec<BsEntry>, String> {
    let mut entries = Vec::new();
    let mut empties = Vec::new();
    let mut sum: u64 = 0;
    for item in s.split(':') {
        let item = item.trim();
        if item.is_empty() {
            return Err(format!(
                "'{s}' has an empty entry; write size/percent entries separated by ':' (e.g. 4k/50:64k/50)"
            ));
        }
        let (size, pct) = match item.split_once('/') {
            Some((a, b)) => (a.trim(), b.trim()),
            None => (item, ""),
        };
        let len = parse_bs(size)?;
        if pct.is_empty() {
            empties.push(entries.len());
            entries.push(BsEntry { len, ppm: 0 });
        } else {
            let ppm = parse_percent_ppm(pct)?;
            sum += ppm as u64;
            entries.push(BsEntry { len, ppm });
        }
    }
    if sum > PPM as u64 {
        return Err(format!(
            "the percentages in '{s}' add up to {}, more than 100; make them add up to 100",
            show_pct(sum)
        ));
    }
    let rest = PPM as u64 - sum;
    if empties.is_empty() {
        if rest != 0 {
            return Err(format!(
                "the percentages in '{s}' add up to {}, not 100; fix them, or leave one empty (e.g. 64k/) to take the rest",
                show_pct(sum)
            ));
        }
    } else {
        if rest == 0 {
            return Err(format!(
                "in '{s}' the other entries already add up to 100, so those with an empty percentage would never be used; remove them"
            ));
        }
        let n = empties.len() as u64;
        for (k, &i) in empties.iter().enumerate() {
            let share = rest / n + u64::from((k as u64) < rest % n);
            entries[i].ppm = share as u32;
        }
    }
    Ok(entries)
}

/// `rw=MODE[:N]`: the mode and fio's offset modifier — for a sequential mode `N` bytes
/// added after each I/O (negative: backwards), for a random one a new random offset
/// every `N` I/Os.
pub(super) fn parse_rw(v: &str) -> Result<(RwMode, RwModifier), String> {
    const LIST: &str = "read, write, randread, randwrite, rw (or readwrite), randrw, trim, randtrim, trimwrite, randtrimwrite";
    let lower = v.to_ascii_lowercase();
    let (base, modifier) = match lower.split_once(':') {
        Some((b, m)) => (b.trim(), Some(m.trim())),
        None => (lower.trim(), None),
    };
    let mode = match base {
        "read" => RwMode::Read,
        "write" => RwMode::Write,
        "randread" => RwMode::RandRead,
        "randwrite" => RwMode::RandWrite,
        "rw" | "readwrite" => RwMode::ReadWrite,
        "randrw" => RwMode::RandRw,
        "trim" => RwMode::Trim,
        "randtrim" => RwMode::RandTrim,
        "trimwrite" => RwMode::TrimWrite,
        "randtrimwrite" => RwMode::RandTrimWrite,
        _ => {
            return Err(format!(
                "cannot read '{v}' as an I/O pattern; use one of {LIST}"
            ))
        }
    };
    let Some(m) = modifier else {
        return Ok((mode, RwModifier::None));
    };
    if mode.is_random() {
        let n = parse_uint(m, "8")
            .ok()
            .filter(|&n| n > 0 && n <= u32::MAX as u64);
        let Some(n) = n else {
            return Err(format!(
                "cannot read '{m}' in '{v}' as a count of I/Os per random offset; write e.g. rw={}:8",
                mode.name()
            ));
        };
        return Ok((mode, RwModifier::RandEvery(n as u32)));
    }
    let (neg, mag) = match m.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, m),
    };
    let n = parse_size(mag).map_err(|e| {
        format!(
            "cannot read '{m}' in '{v}' as bytes to skip ({e}); write e.g. rw={}:4k or {}:-8k",
            mode.name(),
            mode.name()
        )
    })?;
    let n = i64::try_from(n).map_err(|_| format!("'{m}' in '{v}' is too large"))?;
    Ok((mode, RwModifier::SeqAdd(if neg { -n } else { n })))
}

pub(super) fn small_uint<T: TryFrom<u64>>(
    v: &str,
    ex: &str,
    lo: u64,
    hi: u64,
) -> Result<T, String> {
    let n = parse_uint(v, ex)?;
    if n < lo || n > hi {
        return Err(format!(
            "{n} is out of range; use a value from {lo} to {hi}"
        ));
    }
    T::try_from(n).map_err(|_| format!("{n} is out of range"))
}
