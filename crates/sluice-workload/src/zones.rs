//! fio's zone options: `zonemode` (`none`, `strided`, `zbd`), `zonesize`, `zonerange`,
//! `zoneskip`, `zonecapacity`, `max_open_zones`, `job_max_open_zones`,
//! `ignore_zone_limits`, `zone_reset_threshold`, `zone_reset_frequency`,
//! `read_beyond_wp`, and sizes counted in zones (`size=8z`).
//!
//! `strided` is fio's `setup_strided_zone_mode`: a thread's I/O stays in a window of
//! `zonerange` bytes (random offsets are drawn inside it, sequential ones wrap in it)
//! until `zonesize` bytes were transferred, then the window moves on by `zonerange +
//! zoneskip`, back to the start past the end of the file. `zbd` is the zoned block
//! device mode, carried out by the job runner on a zoned device (`sluice_fio::zbd`).

/// `zonemode`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ZoneMode {
    /// No zones (the default without `zonesize`; with it, `strided`, as fio).
    #[default]
    None,
    /// fio's strided zones (see the module documentation).
    Strided,
    /// A zoned block device: writes at the zones' write pointers.
    Zbd,
}

/// A job's zone options.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ZoneSpec {
    /// `zonemode`.
    pub mode: ZoneMode,
    /// `zonesize`: bytes transferred per window (`strided`), the zone size (`zbd`; 0:
    /// the device's).
    pub size: u64,
    /// `zonerange`: the window (`strided`; `zonesize` when not given).
    pub range: u64,
    /// `zoneskip`: bytes skipped after each window (`strided`).
    pub skip: u64,
    /// `zonecapacity` (`zbd` on a device that does not say; 0: the zone size).
    pub capacity: u64,
    /// `max_open_zones` (`None`: the device's limit; `Some(0)`: no limit).
    pub max_open: Option<u32>,
    /// `job_max_open_zones` (0: no limit).
    pub job_max_open: u32,
    /// `ignore_zone_limits`.
    pub ignore_limits: bool,
    /// `zone_reset_threshold` (0..=1).
    pub reset_threshold: f64,
    /// `zone_reset_frequency` (0..=1; 0: off).
    pub reset_frequency: f64,
    /// `read_beyond_wp`.
    pub read_beyond_wp: bool,
}

impl Default for ZoneSpec {
    fn default() -> Self {
        ZoneSpec {
            mode: ZoneMode::None,
            size: 0,
            range: 0,
            skip: 0,
            capacity: 0,
            max_open: None,
            job_max_open: 0,
            ignore_limits: false,
            reset_threshold: 0.0,
            reset_frequency: 0.0,
            read_beyond_wp: false,
        }
    }
}

impl ZoneSpec {
    /// Whether the job runs in `zonemode=zbd`.
    pub fn zbd(&self) -> bool {
        self.mode == ZoneMode::Zbd
    }

    /// Whether the job runs in `zonemode=strided`.
    pub fn strided(&self) -> bool {
        self.mode == ZoneMode::Strided
    }
}

/// `zonemode=`.
pub(crate) fn parse_zone_mode(v: &str) -> Result<ZoneMode, String> {
    match v.trim().to_ascii_lowercase().as_str() {
        "none" => Ok(ZoneMode::None),
        "strided" => Ok(ZoneMode::Strided),
        "zbd" => Ok(ZoneMode::Zbd),
        _ => Err(format!(
            "'{v}' is not a zone mode; write none, strided or zbd"
        )),
    }
}

/// A size given in zones (`8z`, fio's `size_nz`): the count, or `None` for a size in
/// bytes.
pub(crate) fn zone_count(v: &str) -> Result<Option<u64>, String> {
    let t = v.trim();
    let Some(n) = t.strip_suffix('z').or_else(|| t.strip_suffix('Z')) else {
        return Ok(None);
    };
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("cannot read '{v}' as a number of zones (e.g. 8z)"));
    }
    n.parse::<u64>()
        .map(Some)
        .map_err(|_| format!("'{v}': too many zones"))
}

/// A ratio from 0 to 1 (`zone_reset_threshold`, `zone_reset_frequency`).
pub(crate) fn parse_ratio(v: &str, ex: &str) -> Result<f64, String> {
    match v.trim().parse::<f64>() {
        Ok(x) if (0.0..=1.0).contains(&x) => Ok(x),
        _ => Err(format!(
            "cannot read '{v}' as a number from 0 to 1 (e.g. {ex})"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values() {
        assert_eq!(parse_zone_mode("ZBD"), Ok(ZoneMode::Zbd));
        assert!(parse_zone_mode("zoned")
            .unwrap_err()
            .contains("none, strided or zbd"));
        assert_eq!(zone_count("524z"), Ok(Some(524)));
        assert_eq!(zone_count("1g"), Ok(None));
        assert!(zone_count("z").is_err());
        assert_eq!(parse_ratio("0.125", "0.1"), Ok(0.125));
        assert!(parse_ratio("1.5", "0.1").is_err());
    }
}

/// One thread's `zonemode=strided` window (fio's `td->zone_bytes` and the file's
/// moving `file_offset`), offsets relative to the file's start.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Strided {
    size: u64,
    range: u64,
    skip: u64,
    /// Where the window starts.
    window: u64,
    /// Bytes transferred in this window.
    bytes: u64,
}

impl Strided {
    /// The window of a strided job, `None` for other jobs.
    pub(crate) fn new(z: &ZoneSpec) -> Option<Strided> {
        z.strided().then_some(Strided {
            size: z.size.max(1),
            range: z.range.max(1),
            skip: z.skip,
            window: 0,
            bytes: 0,
        })
    }

    /// Before an I/O (fio's `setup_strided_zone_mode`): after `zonesize` bytes the
    /// window moves on by `zonerange + zoneskip` (back to the start past the file's
    /// end) and the sequential position `pos` goes to it; a position past the window
    /// goes back to its start. Returns the window `(start, length)` for random offsets.
    pub(crate) fn before(&mut self, file_size: u64, pos: &mut u64) -> (u64, u64) {
        if self.bytes >= self.size {
            self.bytes = 0;
            self.window = self.window.saturating_add(self.range + self.skip);
            if self.window >= file_size {
                self.window = 0;
            }
            *pos = self.window;
        }
        if *pos >= self.window.saturating_add(self.range) {
            *pos = self.window;
        }
        let len = self.range.min(file_size.saturating_sub(self.window));
        (self.window, len)
    }

    /// An I/O of `len` bytes was issued (fio's `td->zone_bytes += buflen`).
    pub(crate) fn issued(&mut self, len: u32) {
        self.bytes += len as u64;
    }
}
