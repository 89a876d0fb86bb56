//! NVMe Flexible Data Placement (FDP) for a job's writes, as fio's `fdp`,
//! `dataplacement`, `plids`/`fdp_pli` and `plid_select`/`fdp_pli_select` ask for it,
//! and the end-to-end protection options (`md_per_io_size`, `pi_act`, `pi_chk`,
//! `apptag`, `apptag_mask`), which sluice parses and refuses.
//!
//! # Placement (fio's `dataplacement.c`)
//!
//! An FDP device offers reclaim unit handles (RUHs); `nvme fdp status` lists their
//! placement identifiers (PIDs). A job's `plids` are *indices* into that list (sorted,
//! fio's `str_fdp_pli_cb`); without `plids` a job may use every one (at most 128,
//! fio's `FIO_MAX_DP_IDS`). Each write (fio: `DDIR_WRITE` only, not trims) carries
//! one: the next in turn (`roundrobin`, the default: `plis[pli_loc++]`, wrapping) or one
//! drawn uniformly (`random`). An index not below the device's handle count is an
//! error (fio: "PID index N must be smaller than M"). On sluice's simulated devices
//! one reclaim group holds every handle, so the PID of index `i` is `i`.

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// fio's limit on the placement IDs a job lists (`FIO_MAX_DP_IDS`).
pub const MAX_PLIDS: usize = 128;

/// How the next placement ID is chosen (`plid_select`, `fdp_pli_select`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PlidSelect {
    /// In turn over the job's IDs (fio's default).
    #[default]
    RoundRobin,
    /// Uniformly at random.
    Random,
}

/// A job's data placement options.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PlacementSpec {
    /// FDP directives on writes (`fdp=1` or `dataplacement=fdp`).
    pub fdp: bool,
    /// `plid_select`.
    pub select: PlidSelect,
    /// `plids`/`fdp_pli`: placement ID indices, sorted (empty: all the device's).
    pub ids: Vec<u16>,
}

/// Parse `plids`/`fdp_pli`: a comma-separated list of indices and ranges
/// (`1,2-4,5`), as fio's `str_fdp_pli_cb` (numbers in C's bases: `0x10`, `010`),
/// sorted; at most 128 IDs, each at most 0xFFFF.
pub fn parse_plids(v: &str) -> Result<Vec<u16>, String> {
    let mut ids = Vec::new();
    for part in v.trim().split(',') {
        let part = part.trim();
        if part.is_empty() {
            // fio stops at an empty element.
            break;
        }
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (num(a)?, num(b)?),
            None => {
                let n = num(part)?;
                (n, n)
            }
        };
        if a > b {
            return Err(format!(
                "'{part}': a range's start is above its end; write it low-high, e.g. 2-4"
            ));
        }
        for id in a..=b {
            if ids.len() >= MAX_PLIDS {
                return Err(format!("'{v}': at most {MAX_PLIDS} placement IDs, as fio"));
            }
            if id > 0xFFFF {
                return Err(format!("'{v}': placement IDs cannot exceed 0xFFFF"));
            }
            ids.push(id as u16);
        }
    }
    if ids.is_empty() {
        return Err(format!(
            "'{v}' lists no placement ID index; give e.g. plids=0,2-4"
        ));
    }
    ids.sort_unstable();
    Ok(ids)
}

/// A number as C's `strtoull(s, NULL, 0)` reads it: decimal, `0x` hexadecimal, `0`
/// octal.
pub(crate) fn num(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let r = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u64::from_str_radix(h, 16)
    } else if t.len() > 1 && t.starts_with('0') {
        u64::from_str_radix(&t[1..], 8)
    } else {
        t.parse()
    };
    r.map_err(|_| {
        format!("cannot read '{s}' as a whole number (decimal, 0x… hexadecimal or 0… octal)")
    })
}

/// `plid_select`/`fdp_pli_select`'s value.
pub fn parse_plid_select(v: &str) -> Result<PlidSelect, String> {
    match v.trim() {
        "roundrobin" => Ok(PlidSelect::RoundRobin),
        "random" => Ok(PlidSelect::Random),
        "scheme" => Err("'scheme' (placement by offset from a dp_scheme file) is not supported; use roundrobin or random".into()),
        o => Err(format!("'{o}': give roundrobin (the default) or random")),
    }
}

/// A thread's choice of placement ID per write (fio's `dp_fill_dspec_data`).
#[derive(Clone, Debug)]
pub struct PlacementDraw {
    plis: Vec<u8>,
    loc: usize,
    select: PlidSelect,
    rng: Xoshiro256PlusPlus,
}

impl PlacementDraw {
    /// The draw of a thread whose job has `spec`, on a device with `handles` reclaim
    /// unit handles (PIDs `0..handles`), its stream seeded with `stream_seed`.
    /// `Ok(None)` when the job asks for no placement; an error (one sentence, without
    /// the job's name) when an index is not below `handles` or the device has none.
    pub fn new(
        spec: &PlacementSpec,
        handles: u32,
        stream_seed: u64,
    ) -> Result<Option<PlacementDraw>, String> {
        if !spec.fdp {
            return Ok(None);
        }
        if handles == 0 {
            return Err("fdp=1 needs a device with Flexible Data Placement".into());
        }
        let plis: Vec<u8> = if spec.ids.is_empty() {
            (0..handles.min(MAX_PLIDS as u32))
                .map(|i| i as u8)
                .collect()
        } else {
            if let Some(&bad) = spec.ids.iter().find(|&&i| i as u32 >= handles) {
                return Err(format!(
                    "placement ID index {bad} must be smaller than {handles}, the device's reclaim unit handles"
                ));
            }
            spec.ids.iter().map(|&i| i as u8).collect()
        };
        Ok(Some(PlacementDraw {
            plis,
            loc: 0,
            select: spec.select,
            rng: Xoshiro256PlusPlus::seed_from_u64(stream_seed ^ 0xFD9_5EED_0000_0001),
        }))
    }

    /// The placement ID of the thread's next write.
    pub fn draw(&mut self) -> u8 {
        match self.select {
            PlidSelect::RoundRobin => {
                if self.loc >= self.plis.len() {
                    self.loc = 0;
                }
                let p = self.plis[self.loc];
                self.loc += 1;
                p
            }
            PlidSelect::Random => {
                self.loc = self.rng.random_range(0..self.plis.len());
                self.plis[self.loc]
            }
        }
    }
}

/// The end-to-end protection options of fio's `io_uring_cmd`/`xnvme` engines. They
/// need a namespace formatted with separate metadata or protection information,
/// which neither sluice's simulated devices nor `sluice run`'s files and block I/O
/// have: a job that asks for metadata or PI is refused ([`PiSpec::needs_metadata`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PiSpec {
    /// `md_per_io_size`: bytes of separate metadata buffer per I/O (default 0).
    pub md_per_io_size: u64,
    /// `pi_act` (default 1: the controller generates and strips PI; 0: fio does).
    pub pi_act: bool,
    /// `pi_chk`: GUARD, REFTAG, APPTAG checks (bits 0, 1, 2).
    pub pi_chk: u8,
    /// `apptag` (default 0x1234).
    pub apptag: u16,
    /// `apptag_mask` (default 0xffff).
    pub apptag_mask: u16,
}

impl Default for PiSpec {
    fn default() -> Self {
        PiSpec {
            md_per_io_size: 0,
            pi_act: true,
            pi_chk: 0,
            apptag: 0x1234,
            apptag_mask: 0xffff,
        }
    }
}

impl PiSpec {
    /// The option that asks for a metadata or PI format, if any: a metadata buffer,
    /// PI generated by fio (`pi_act=0`), or checks.
    pub fn needs_metadata(&self) -> Option<&'static str> {
        if self.md_per_io_size > 0 {
            Some("md_per_io_size")
        } else if self.pi_chk != 0 {
            Some("pi_chk")
        } else if !self.pi_act {
            Some("pi_act")
        } else {
            None
        }
    }
}

/// The refusal of the first job of `jobs` that asks for metadata or protection
/// information, one line naming the job, the option and why `world` (what it lacks,
/// e.g. "sluice's simulated devices have no such format") cannot do it.
pub fn metadata_refusal(jobs: &[crate::JobSpec], world: &str) -> Option<String> {
    jobs.iter().find_map(|j| {
        j.pi.needs_metadata().map(|opt| {
            format!(
                "job '{}': end-to-end protection ({opt}) needs an NVMe namespace formatted with metadata/PI; {world}: remove md_per_io_size, pi_chk, pi_act=0",
                j.name
            )
        })
    })
}

/// `pi_chk`'s value: a comma-separated list of GUARD, REFTAG and APPTAG.
pub fn parse_pi_chk(v: &str) -> Result<u8, String> {
    let mut bits = 0;
    for part in v.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        bits |= match part {
            "GUARD" => 1,
            "REFTAG" => 2,
            "APPTAG" => 4,
            o => {
                return Err(format!(
                    "'{o}': give GUARD, REFTAG and/or APPTAG, comma-separated (upper case, as fio)"
                ))
            }
        };
    }
    Ok(bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plids_are_lists_and_ranges_sorted() {
        assert_eq!(parse_plids("4,5").unwrap(), vec![4, 5]);
        assert_eq!(parse_plids("6-8,1,0x2").unwrap(), vec![1, 2, 6, 7, 8]);
        assert!(parse_plids("5-3").unwrap_err().contains("low-high"));
        assert!(parse_plids("0-200").unwrap_err().contains("128"));
        assert!(parse_plids("70000").unwrap_err().contains("0xFFFF"));
        assert!(parse_plids("x").is_err());
        assert!(parse_plids("").is_err());
    }

    #[test]
    fn round_robin_cycles_and_random_stays_in_the_list() {
        let spec = PlacementSpec {
            fdp: true,
            select: PlidSelect::RoundRobin,
            ids: vec![4, 5],
        };
        let mut d = PlacementDraw::new(&spec, 8, 1).unwrap().unwrap();
        let got: Vec<u8> = (0..5).map(|_| d.draw()).collect();
        assert_eq!(got, [4, 5, 4, 5, 4]);
        let all = PlacementSpec {
            ids: vec![],
            ..spec.clone()
        };
        let mut d = PlacementDraw::new(&all, 3, 1).unwrap().unwrap();
        assert_eq!((0..4).map(|_| d.draw()).collect::<Vec<_>>(), [0, 1, 2, 0]);
        let rnd = PlacementSpec {
            select: PlidSelect::Random,
            ..spec.clone()
        };
        let mut d = PlacementDraw::new(&rnd, 8, 7).unwrap().unwrap();
        let got: Vec<u8> = (0..200).map(|_| d.draw()).collect();
        assert!(got.iter().all(|&p| p == 4 || p == 5));
        assert!(got.contains(&4) && got.contains(&5));
        let e = PlacementDraw::new(&spec, 4, 1).unwrap_err();
        assert!(e.contains("index 4 must be smaller than 4"), "{e}");
        assert!(PlacementDraw::new(&spec, 0, 1).is_err());
        assert!(PlacementDraw::new(&PlacementSpec::default(), 0, 1)
            .unwrap()
            .is_none());
    }

    #[test]
    fn pi_checks_parse_and_ask_for_metadata() {
        assert_eq!(parse_pi_chk("GUARD,APPTAG,REFTAG").unwrap(), 7);
        assert!(parse_pi_chk("guard").is_err());
        assert_eq!(PiSpec::default().needs_metadata(), None);
        let md = PiSpec {
            md_per_io_size: 64,
            ..PiSpec::default()
        };
        assert_eq!(md.needs_metadata(), Some("md_per_io_size"));
    }
}
