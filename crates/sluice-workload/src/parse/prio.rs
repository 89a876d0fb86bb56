//! fio's per-I/O priority options (`cmdprio_percentage`, `cmdprio_bssplit`,
//! `cmdprio_class`, `cmdprio`, `cmdprio_hint`): read into the draft, joined at the end
//! of the section into the job's [`CmdPrio`].

use super::*;
use crate::cmdprio::{CmdPrio, PrioEntry};

/// One `cmdprio_bssplit` entry as written: size, percent and, in fio's second and
/// third forms, class, level and hint (else `cmdprio_class`/`cmdprio`/`cmdprio_hint`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct SplitRaw {
    bs: u32,
    pct: u8,
    class: Option<u8>,
    level: Option<u8>,
    hint: Option<u16>,
}

/// The per-I/O priority options of a section, per direction `[reads, writes]`.
#[derive(Clone, Debug, Default)]
pub(crate) struct PrioDraft {
    pct: [Option<u8>; 2],
    class: [Option<u8>; 2],
    level: [Option<u8>; 2],
    hint: [Option<u16>; 2],
    split: [Option<Vec<SplitRaw>>; 2],
    /// Where `cmdprio_percentage` and `cmdprio_bssplit` were set.
    pct_at: Option<Loc>,
    split_at: Option<Loc>,
}

/// `cmdprio_percentage`, `cmdprio_class`, `cmdprio`, `cmdprio_hint`: a number per
/// direction.
fn per_dir<T: Copy + TryFrom<u64>>(
    a: &Arg,
    ex: &str,
    lo: u64,
    hi: u64,
    slot: &mut [Option<T>; 2],
) -> Result<(), String> {
    let (parts, _) = a.dirs()?;
    for (dir, part) in parts.iter().enumerate() {
        if let Some(p) = part {
            slot[dir] = Some(small_uint(p, ex, lo, hi)?);
        }
    }
    Ok(())
}

pub(super) fn set_pct(d: &mut Draft, a: &Arg) -> Result<(), String> {
    per_dir(a, "20", 0, 100, &mut d.prio.pct)?;
    d.prio.pct_at = Some(a.at.clone());
    Ok(())
}

pub(super) fn set_class(d: &mut Draft, a: &Arg) -> Result<(), String> {
    per_dir(a, "1", 0, 3, &mut d.prio.class)
}

pub(super) fn set_level(d: &mut Draft, a: &Arg) -> Result<(), String> {
    per_dir(a, "0", 0, 7, &mut d.prio.level)
}

pub(super) fn set_hint(d: &mut Draft, a: &Arg) -> Result<(), String> {
    per_dir(a, "1", 0, 7, &mut d.prio.hint)
}

pub(super) fn set_bssplit(d: &mut Draft, a: &Arg) -> Result<(), String> {
    let (parts, _) = a.dirs()?;
    for (dir, part) in parts.iter().enumerate() {
        if let Some(p) = part {
            d.prio.split[dir] = Some(parse_split(p)?);
        }
    }
    d.prio.split_at = Some(a.at.clone());
    Ok(())
}

/// `bs/pct[/class/level[/hint]]:…`, fio's three forms.
fn parse_split(s: &str) -> Result<Vec<SplitRaw>, String> {
    let mut out = Vec::new();
    for item in s.split(':').map(str::trim) {
        let f: Vec<&str> = item.split('/').map(str::trim).collect();
        if !matches!(f.len(), 2 | 4 | 5) || f.iter().any(|x| x.is_empty()) {
            return Err(format!(
                "cannot read entry '{item}' of '{s}'; write size/percent, size/percent/class/level \
                 or size/percent/class/level/hint (e.g. cmdprio_bssplit=64k/25/1/0:1m/0)"
            ));
        }
        out.push(SplitRaw {
            bs: parse_bs(f[0])?,
            pct: small_uint(f[1], "25", 0, 100)?,
            class: f.get(2).map(|c| small_uint(c, "1", 0, 3)).transpose()?,
            level: f.get(3).map(|l| small_uint(l, "0", 0, 7)).transpose()?,
            hint: f.get(4).map(|h| small_uint(h, "1", 0, 7)).transpose()?,
        });
    }
    Ok(out)
}

impl Parser<'_> {
    /// The job's per-I/O priorities: `cmdprio_percentage` or `cmdprio_bssplit` (not
    /// both, as fio), each entry with its own class/level or `cmdprio_class` (default 1,
    /// real time) and `cmdprio` (default 0).
    pub(super) fn cmdprio_of(&mut self, name: &str, d: &Draft) -> Result<CmdPrio, WorkloadError> {
        let p = &d.prio;
        let has_pct = p.pct.iter().any(|x| x.is_some_and(|v| v > 0));
        let has_split = p.split.iter().any(Option::is_some);
        if has_pct && has_split {
            let at = p.split_at.clone().expect("set with the split");
            return Err(self.option_err_at(
                &at,
                "cmdprio_bssplit",
                format!(
                    "job '{name}' gives both cmdprio_percentage and cmdprio_bssplit; fio takes one \
                     or the other: remove one"
                ),
            ));
        }
        let mut out = CmdPrio::default();
        for dir in 0..2 {
            let class = p.class[dir].unwrap_or(1);
            let level = p.level[dir].unwrap_or(0);
            let hint = p.hint[dir].unwrap_or(0);
            if let Some(pct) = p.pct[dir].filter(|&v| v > 0) {
                out.dirs[dir].push(PrioEntry {
                    bs: 0,
                    pct,
                    class,
                    level,
                    hint,
                });
            }
            if let Some(split) = &p.split[dir] {
                for e in split {
                    out.dirs[dir].push(PrioEntry {
                        bs: e.bs,
                        pct: e.pct,
                        class: e.class.unwrap_or(class),
                        level: e.level.unwrap_or(level),
                        hint: e.hint.unwrap_or(hint),
                    });
                }
                let mut sizes: Vec<u32> = split.iter().map(|e| e.bs).collect();
                sizes.dedup();
                for bs in sizes {
                    let total: u32 = split
                        .iter()
                        .filter(|e| e.bs == bs)
                        .map(|e| e.pct as u32)
                        .sum();
                    if total > 100 {
                        let at = p.split_at.clone().expect("set with the split");
                        return Err(self.option_err_at(
                            &at,
                            "cmdprio_bssplit",
                            format!(
                                "the percentages for block size {} add up to {total} in job \
                                 '{name}'; at most 100",
                                show_size(bs as u64)
                            ),
                        ));
                    }
                }
            }
        }
        if out.dirs.iter().flatten().any(|e| e.hint > 0) {
            let at = p.split_at.as_ref().or(p.pct_at.as_ref()).expect("set");
            self.warnings.push(format!(
                "{}:{}: job '{name}': cmdprio hints (command duration limits) have no effect in \
                 sluice; the I/Os still get their priority class",
                at.origin, at.line
            ));
        }
        Ok(out)
    }
}
