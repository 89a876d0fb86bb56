//! Readers for the values of fio options with structure: `bsrange`,
//! `random_distribution`, `file_service_type`, `directory` and `filename` lists.
//! Each returns the problem as a sentence, as in [`crate::units`].

use crate::job::{BsEntry, Distribution, FileService, Zone};
use crate::units::{parse_positive_size, parse_size, parse_uint, show_size, PPM};

/// Most sizes a `bsrange` may expand to.
const MAX_RANGE_SIZES: u64 = 65_536;

/// Read one `bsrange` part, `MIN-MAX` or `MIN:MAX`, as fio draws from it: a length of
/// MIN plus a uniform draw below MAX, rounded down to a multiple of MIN and capped at
/// MAX. Returns `Ok(None)`-free tables: a fixed size is one entry of 100 %.
pub(crate) fn parse_bsrange(s: &str) -> Result<Vec<BsEntry>, String> {
    let (a, b) = s
        .split_once('-')
        .or_else(|| s.split_once(':'))
        .ok_or_else(|| {
            format!("cannot read '{s}' as a block-size range; write MIN-MAX, e.g. 4k-64k")
        })?;
    let bs = |t: &str| -> Result<u32, String> {
        let n = parse_positive_size(t)?;
        u32::try_from(n).map_err(|_| format!("block size '{t}' is too large; at most 4GiB - 1"))
    };
    let (min, max) = (bs(a.trim())?, bs(b.trim())?);
    if min > max {
        return Err(format!(
            "in '{s}' the smallest size {} is larger than the largest {}; write MIN-MAX",
            show_size(min as u64),
            show_size(max as u64)
        ));
    }
    let (min, max) = (min as u64, max as u64);
    let k = max.div_ceil(min);
    if k > MAX_RANGE_SIZES {
        return Err(format!(
            "'{s}' spans {k} sizes; sluice takes at most {MAX_RANGE_SIZES} (use a larger minimum, or bssplit)"
        ));
    }
    // Size i*min is drawn for draws in [(i-1)*min, i*min) below max; sizes past max
    // are capped at max.
    let mut out: Vec<BsEntry> = Vec::with_capacity(k as usize);
    let mut given: u64 = 0;
    for i in 1..=k {
        let lo = (i - 1) * min;
        let hi = (i * min).min(max);
        let len = (i * min).min(max) as u32;
        let ppm = ((hi - lo) as u128 * PPM as u128 / max as u128) as u64;
        given += ppm;
        match out.last_mut() {
            Some(e) if e.len == len => e.ppm += ppm as u32,
            _ => out.push(BsEntry {
                len,
                ppm: ppm as u32,
            }),
        }
    }
    // Rounding leftovers go to the largest size.
    if let Some(e) = out.last_mut() {
        e.ppm += (PPM as u64 - given) as u32;
    }
    out.retain(|e| e.ppm > 0);
    Ok(out)
}

fn parse_f64(s: &str, what: &str) -> Result<f64, String> {
    s.trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .ok_or_else(|| format!("cannot read '{s}' as a number ({what})"))
}

/// Read `random_distribution`: one distribution for both directions, or for the
/// zoned kinds `reads,writes` zone lists.
pub(crate) fn parse_distribution(v: &str) -> Result<[Distribution; 2], String> {
    const KINDS: &str =
        "random, zipf:θ, pareto:h, normal:σ, zoned:A/S:…, zoned_abs:A/SIZE:…, sequence:I,J,…";
    let lower = v.trim().to_ascii_lowercase();
    let (kind, rest) = match lower.find([':', '=']) {
        Some(i) => (&lower[..i], Some(&lower[i + 1..])),
        None => (lower.as_str(), None),
    };
    let center = |c: Option<&str>| -> Result<Option<f64>, String> {
        match c {
            None => Ok(None),
            Some(c) => {
                let x = parse_f64(c, "the centre, 0 to 1")?;
                if !(0.0..=1.0).contains(&x) {
                    return Err(format!(
                        "the centre {x} is out of range; use a value from 0 to 1"
                    ));
                }
                Ok(Some(x))
            }
        }
    };
    let mut params = rest.map(|r| r.splitn(2, ':')).into_iter().flatten();
    let (p1, p2) = (params.next(), params.next());
    let one = |d: Distribution| Ok([d.clone(), d]);
    match kind {
        "random" if rest.is_none() => one(Distribution::Uniform),
        "zipf" => {
            let theta = p1.map_or(Ok(1.1), |t| parse_f64(t, "Zipf's θ"))?;
            if theta <= 0.0 || theta == 1.0 {
                return Err(format!(
                    "Zipf's θ must be above 0 and other than 1 (got {theta}); e.g. zipf:1.2"
                ));
            }
            one(Distribution::Zipf {
                theta,
                center: center(p2)?,
            })
        }
        "pareto" => {
            let h = p1.map_or(Ok(0.2), |t| parse_f64(t, "Pareto's h"))?;
            if h <= 0.0 || h >= 1.0 {
                return Err(format!(
                    "Pareto's h must be between 0 and 1, both excluded (got {h}); e.g. pareto:0.2"
                ));
            }
            one(Distribution::Pareto {
                h,
                center: center(p2)?,
            })
        }
        "normal" | "gauss" => {
            let dev = p1.map_or(Ok(0.0), |t| parse_f64(t, "the deviation in percent"))?;
            if !(0.0..100.0).contains(&dev) {
                return Err(format!(
                    "the normal deviation must be from 0 to below 100 percent (got {dev}); e.g. normal:10"
                ));
            }
            one(Distribution::Normal {
                dev_pct: dev,
                center: center(p2)?,
            })
        }
        "zoned" | "zoned_abs" => {
            let abs = kind == "zoned_abs";
            let Some(rest) = rest.filter(|r| !r.trim().is_empty()) else {
                return Err(format!(
                    "'{v}' has no zones; write e.g. {kind}:60/{}:40/{}",
                    if abs { "1g" } else { "10" },
                    if abs { "4g" } else { "90" }
                ));
            };
            let parts: Vec<&str> = rest.split(',').map(str::trim).collect();
            if parts.len() > 3 {
                return Err(format!(
                    "'{v}' has more than three comma-separated zone lists; write reads,writes"
                ));
            }
            let read = parse_zones(parts[0], abs)?;
            let write = match parts.get(1) {
                Some(p) if !p.is_empty() => parse_zones(p, abs)?,
                _ => read.clone(),
            };
            let mk = |z| {
                if abs {
                    Distribution::ZonedAbs(z)
                } else {
                    Distribution::Zoned(z)
                }
            };
            Ok([mk(read), mk(write)])
        }
        "sequence" => {
            // fio's sequence: up to 64 block indices, taken in turn.
            let list = rest.unwrap_or("").trim();
            let idx: Vec<u64> = list
                .split(',')
                .map(|x| parse_uint(x.trim(), "2,0,1"))
                .collect::<Result<_, _>>()
                .map_err(|e| format!("'{v}': {e}; write block indices, e.g. sequence:2,0,1"))?;
            if list.is_empty() || idx.len() > 64 {
                return Err(format!(
                    "'{v}' needs 1 to 64 block indices, e.g. sequence:2,0,1"
                ));
            }
            one(Distribution::Sequence(idx))
        }
        _ => Err(format!(
            "cannot read '{v}' as a random distribution; use one of {KINDS}"
        )),
    }
}

/// `A/S:A/S:…`: access percentages (whole, adding up to 100) and sizes in percent of
/// the file (`zoned`, adding up to at most 100; an empty size shares what the others
/// leave, as in fio) or bytes (`zoned_abs`).
fn parse_zones(s: &str, abs: bool) -> Result<Vec<Zone>, String> {
    let mut zones = Vec::new();
    let mut missing = Vec::new();
    let (mut access, mut size_pct) = (0u64, 0u64);
    for item in s.split(':') {
        let item = item.trim();
        let Some((a, b)) = item.split_once('/') else {
            return Err(format!(
                "cannot read zone '{item}'; write ACCESS%/{} (e.g. 60/{})",
                if abs { "SIZE" } else { "SIZE%" },
                if abs { "1g" } else { "10" }
            ));
        };
        let a: u64 = a.trim().parse().map_err(|_| {
            format!("cannot read '{a}' in zone '{item}' as a whole percentage of accesses")
        })?;
        let b = b.trim();
        let size = if abs {
            let n = parse_size(b)?;
            if n == 0 {
                return Err(format!("zone '{item}' has size zero"));
            }
            n
        } else if b.is_empty() {
            missing.push(zones.len());
            0
        } else {
            let p: u64 = b.parse().map_err(|_| {
                format!("cannot read '{b}' in zone '{item}' as a whole percentage of the file")
            })?;
            size_pct += p;
            p
        };
        access += a;
        if zones.len() >= 256 {
            return Err("more than 256 zones; fio allows 256".to_string());
        }
        zones.push(Zone {
            access_pct: a.min(100) as u8,
            size,
        });
    }
    if access != 100 {
        return Err(format!(
            "the access percentages of '{s}' add up to {access}, not 100; make them add up to 100"
        ));
    }
    if size_pct > 100 {
        return Err(format!(
            "the zone sizes of '{s}' add up to {size_pct} percent of the file, more than 100"
        ));
    }
    let n = missing.len() as u64;
    for i in missing {
        zones[i].size = (100 - size_pct) / n;
    }
    Ok(zones)
}

/// Read `file_service_type`.
pub(crate) fn parse_file_service(v: &str) -> Result<FileService, String> {
    let lower = v.trim().to_ascii_lowercase();
    let (kind, arg) = match lower.split_once(':') {
        Some((k, a)) => (k, Some(a)),
        None => (lower.as_str(), None),
    };
    match (kind, arg) {
        ("roundrobin", None) => Ok(FileService::RoundRobin(1)),
        ("roundrobin", Some(n)) => n
            .trim()
            .parse::<u32>()
            .ok()
            .filter(|n| *n > 0)
            .map(FileService::RoundRobin)
            .ok_or_else(|| {
                format!("cannot read '{n}' as a number of I/Os per file; e.g. roundrobin:4")
            }),
        ("sequential", None) => Ok(FileService::Sequential),
        ("random", None) => Ok(FileService::Random),
        ("zipf" | "pareto" | "normal" | "gauss", _) => Err(format!(
            "'{v}' is not supported; use roundrobin[:N], sequential or random"
        )),
        _ => Err(format!(
            "cannot read '{v}' as a file service type; use roundrobin[:N], sequential or random"
        )),
    }
}

/// Split fio's `:`-separated path list (`directory`, `filename`), with `\:` for a colon
/// inside a name.
pub(crate) fn split_paths(v: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut chars = v.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&':') => {
                out.last_mut().expect("one").push(':');
                chars.next();
            }
            ':' => out.push(String::new()),
            c => out.last_mut().expect("one").push(c),
        }
    }
    out.into_iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ppm(t: &[BsEntry]) -> Vec<(u32, u32)> {
        t.iter().map(|e| (e.len, e.ppm)).collect()
    }

    #[test]
    fn bsrange_follows_fios_draw() {
        // 4k + U[0,16k) rounded down to 4k, capped at 16k: a quarter each.
        assert_eq!(
            ppm(&parse_bsrange("4k-16k").unwrap()),
            vec![
                (4096, 250_000),
                (8192, 250_000),
                (12288, 250_000),
                (16384, 250_000)
            ]
        );
        // 4k-10k: [0,4k) → 4k, [4k,8k) → 8k, [8k,10k) → 12k capped to 10k.
        assert_eq!(
            ppm(&parse_bsrange("4k:10k").unwrap()),
            vec![(4096, 400_000), (8192, 400_000), (10240, 200_000)]
        );
        assert_eq!(
            ppm(&parse_bsrange("8k-8k").unwrap()),
            vec![(8192, 1_000_000)]
        );
        let t = parse_bsrange("512-1m").unwrap();
        assert_eq!(t.len(), 2048);
        assert_eq!(t.iter().map(|e| e.ppm).sum::<u32>(), PPM);
        assert!(parse_bsrange("16k-4k").unwrap_err().contains("larger"));
        assert!(parse_bsrange("4k").unwrap_err().contains("MIN-MAX"));
        assert!(parse_bsrange("1-1g").unwrap_err().contains("at most"));
    }

    #[test]
    fn distributions() {
        assert_eq!(
            parse_distribution("random").unwrap()[0],
            Distribution::Uniform
        );
        assert_eq!(
            parse_distribution("zipf:1.2").unwrap()[1],
            Distribution::Zipf {
                theta: 1.2,
                center: None
            }
        );
        assert_eq!(
            parse_distribution("zipf").unwrap()[0],
            Distribution::Zipf {
                theta: 1.1,
                center: None
            }
        );
        assert_eq!(
            parse_distribution("pareto:0.3:0.25").unwrap()[0],
            Distribution::Pareto {
                h: 0.3,
                center: Some(0.25)
            }
        );
        assert_eq!(
            parse_distribution("gauss:5").unwrap()[0],
            Distribution::Normal {
                dev_pct: 5.0,
                center: None
            }
        );
        let [r, w] = parse_distribution("zoned:60/10:30/20:8/30:2/40").unwrap();
        assert_eq!(r, w);
        assert!(
            matches!(&r, Distribution::Zoned(z) if z.len() == 4 && z[0] == Zone { access_pct: 60, size: 10 })
        );
        let [r, _] = parse_distribution("zoned_abs=60/20g:30/100g:10/500g").unwrap();
        assert!(matches!(&r, Distribution::ZonedAbs(z) if z[1].size == 100 << 30));
        let [r, w] = parse_distribution("zoned:50/50:50/50,100/100").unwrap();
        assert_ne!(r, w);
        assert!(parse_distribution("zipf:1")
            .unwrap_err()
            .contains("other than 1"));
        assert!(parse_distribution("pareto:1.5")
            .unwrap_err()
            .contains("between 0 and 1"));
        assert!(parse_distribution("normal:100").is_err());
        assert!(parse_distribution("zipf:1.2:2")
            .unwrap_err()
            .contains("centre"));
        assert!(parse_distribution("zoned:60/10:30/20")
            .unwrap_err()
            .contains("add up to 90"));
        assert!(parse_distribution("zoned:50/60:50/60")
            .unwrap_err()
            .contains("more than 100"));
        assert!(parse_distribution("zoned")
            .unwrap_err()
            .contains("no zones"));
        assert_eq!(
            parse_distribution("sequence:2,0,1").unwrap()[0],
            Distribution::Sequence(vec![2, 0, 1])
        );
        assert!(parse_distribution("sequence:").is_err());
        assert!(parse_distribution("lognormal").is_err());
    }

    #[test]
    fn services_and_paths() {
        assert_eq!(
            parse_file_service("roundrobin"),
            Ok(FileService::RoundRobin(1))
        );
        assert_eq!(
            parse_file_service("roundrobin:4"),
            Ok(FileService::RoundRobin(4))
        );
        assert_eq!(
            parse_file_service("sequential"),
            Ok(FileService::Sequential)
        );
        assert!(parse_file_service("zipf:1.2").is_err());
        assert!(parse_file_service("roundrobin:0").is_err());
        assert_eq!(split_paths("/a:/b"), vec!["/a", "/b"]);
        assert_eq!(
            split_paths("/dev/dsk/foo@3,0\\:c"),
            vec!["/dev/dsk/foo@3,0:c"]
        );
        assert_eq!(split_paths("x"), vec!["x"]);
    }
}
