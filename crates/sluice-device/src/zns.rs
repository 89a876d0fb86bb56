//! Zoned namespaces (NVMe ZNS, the Linux zoned block device model): the device's
//! address space is cut into zones of `zone_size_bytes`; every zone is *sequential
//! write required*. A zone has a write pointer (WP) and a condition:
//!
//! ```text
//!  empty ──write──▶ implicitly open ──WP reaches capacity──▶ full
//!    ▲                 │  ▲   (an open zone over max_open is closed implicitly)
//!    │                 ▼  │
//!    │               closed (still active: holds written data, takes writes)
//!    └──────── reset (any condition) ────────────────────────────┘
//! ```
//!
//! A write must start exactly at its zone's WP and end within the zone's capacity
//! (`zone_capacity_bytes`, at most the zone size); it opens the zone implicitly. At most
//! `max_open` zones are open (implicitly or explicitly) and at most `max_active` are
//! open or closed: a write that would open a zone over `max_open` first closes an
//! implicitly open zone (NVMe's implicit close), and one over `max_active` fails ("Too
//! Many Active Zones"). A zone reset (sluice maps a trim covering whole zones to it, as
//! fio and Linux's `BLKRESETZONE` do) moves the WP back to the zone's start and makes
//! it empty. Reads may cross the WP: what lies beyond it was never written, so the
//! device answers without touching the media (fio's `read_beyond_wp` warns of this).
//!
//! The model is the NVMe ZNS command set's zone state machine (TP 4053), reduced to
//! the conditions a host can observe through reads, writes and resets.

use serde::{Deserialize, Serialize};

/// The `[zoned]` section of a device profile.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ZonedConfig {
    /// Bytes per zone (the zone's span of addresses; a power of two in real devices).
    pub zone_size_bytes: u64,
    /// Bytes of a zone that can be written (NVMe's ZCAP, at most the zone size).
    pub zone_capacity_bytes: u64,
    /// Number of zones (the device's capacity is `zones × zone_size_bytes`).
    pub zones: u32,
    /// Most zones open at once (implicitly or explicitly; 0: no limit).
    pub max_open: u32,
    /// Most zones open or closed at once (0: no limit).
    pub max_active: u32,
}

/// A zone's condition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZoneCond {
    /// WP at the start, nothing written.
    Empty,
    /// Opened by a write.
    ImplicitOpen,
    /// Opened by an open command (sluice's hosts never send one; kept for the model).
    ExplicitOpen,
    /// Written in part, not open: still active.
    Closed,
    /// WP at the capacity.
    Full,
}

/// Why a zoned command failed (NVMe status codes of the ZNS command set).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZoneError {
    /// A write not at the zone's WP ("Zone Invalid Write").
    NotAtWritePointer,
    /// A write past the zone's capacity or across its end ("Zone Boundary Error").
    Boundary,
    /// A write to a full zone ("Zone Is Full").
    Full,
    /// Opening the zone would pass `max_active` ("Too Many Active Zones").
    TooManyActive,
    /// A trim (reset) that does not cover whole zones, or past the last zone.
    BadRange,
}

/// One zone's state.
#[derive(Clone, Copy, Debug)]
struct Zone {
    wp: u64,
    cond: ZoneCond,
    /// When it was last opened (for choosing the implicitly open zone to close: the
    /// least recently opened, deterministic).
    opened: u64,
}

/// The zones of a device.
#[derive(Clone, Debug)]
pub struct Zones {
    cfg: ZonedConfig,
    zones: Vec<Zone>,
    open: u32,
    active: u32,
    opens: u64,
    /// Counters: resets done, zones closed implicitly, commands refused.
    pub resets: u64,
    /// Zones closed implicitly to open another.
    pub implicit_closes: u64,
    /// Commands refused by the zone checks.
    pub errors: u64,
    /// The most zones open, and active, at once.
    pub peak_open: u32,
    /// See `peak_open`.
    pub peak_active: u32,
}

impl Zones {
    /// All zones empty.
    pub fn new(cfg: &ZonedConfig) -> Zones {
        Zones {
            cfg: cfg.clone(),
            zones: vec![
                Zone {
                    wp: 0,
                    cond: ZoneCond::Empty,
                    opened: 0,
                };
                cfg.zones as usize
            ],
            open: 0,
            active: 0,
            opens: 0,
            resets: 0,
            implicit_closes: 0,
            errors: 0,
            peak_open: 0,
            peak_active: 0,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &ZonedConfig {
        &self.cfg
    }

    /// The zone holding byte `offset` (`None` past the last zone).
    pub fn zone_of(&self, offset: u64) -> Option<usize> {
        let z = (offset / self.cfg.zone_size_bytes) as usize;
        (z < self.zones.len()).then_some(z)
    }

    /// Zone `z`'s write pointer (an absolute byte address).
    pub fn write_pointer(&self, z: usize) -> u64 {
        z as u64 * self.cfg.zone_size_bytes + self.zones[z].wp
    }

    /// Zone `z`'s condition.
    pub fn cond(&self, z: usize) -> ZoneCond {
        self.zones[z].cond
    }

    /// Zones open (implicitly or explicitly) and active (open or closed).
    pub fn open_active(&self) -> (u32, u32) {
        (self.open, self.active)
    }

    /// A write of `len` bytes at `offset`: checks it against the zone's WP, capacity
    /// and the open/active limits, then advances the WP (the zone opens implicitly,
    /// and is full when the WP reaches its capacity).
    pub fn write(&mut self, offset: u64, len: u64) -> Result<(), ZoneError> {
        let r = self.try_write(offset, len);
        if r.is_err() {
            self.errors += 1;
        }
        r
    }

    fn try_write(&mut self, offset: u64, len: u64) -> Result<(), ZoneError> {
        let Some(z) = self.zone_of(offset) else {
            return Err(ZoneError::Boundary);
        };
        let rel = offset - z as u64 * self.cfg.zone_size_bytes;
        let zone = self.zones[z];
        if zone.cond == ZoneCond::Full {
            return Err(ZoneError::Full);
        }
        if rel != zone.wp {
            return Err(ZoneError::NotAtWritePointer);
        }
        if rel + len > self.cfg.zone_capacity_bytes {
            return Err(ZoneError::Boundary);
        }
        match zone.cond {
            ZoneCond::Empty | ZoneCond::Closed => {
                if zone.cond == ZoneCond::Empty {
                    if self.cfg.max_active > 0 && self.active >= self.cfg.max_active {
                        return Err(ZoneError::TooManyActive);
                    }
                    self.active += 1;
                }
                if self.cfg.max_open > 0 && self.open >= self.cfg.max_open {
                    self.close_one();
                }
                self.open += 1;
                self.opens += 1;
                self.peak_open = self.peak_open.max(self.open);
                self.peak_active = self.peak_active.max(self.active);
                let zone = &mut self.zones[z];
                zone.cond = ZoneCond::ImplicitOpen;
                zone.opened = self.opens;
            }
            _ => {}
        }
        let zone = &mut self.zones[z];
        zone.wp += len;
        if zone.wp >= self.cfg.zone_capacity_bytes {
            zone.cond = ZoneCond::Full;
            self.open -= 1;
            self.active -= 1;
        }
        Ok(())
    }

    /// Close the implicitly open zone opened longest ago (NVMe: the controller closes
    /// an implicitly open zone to open another within `max_open`).
    fn close_one(&mut self) {
        let victim = self
            .zones
            .iter()
            .enumerate()
            .filter(|(_, z)| z.cond == ZoneCond::ImplicitOpen)
            .min_by_key(|(_, z)| z.opened)
            .map(|(i, _)| i);
        if let Some(i) = victim {
            self.zones[i].cond = ZoneCond::Closed;
            self.open -= 1;
            self.implicit_closes += 1;
        }
    }

    /// A trim of `len` bytes at `offset`: a reset of each zone it covers, which must be
    /// whole zones. Returns the zones reset.
    pub fn reset(&mut self, offset: u64, len: u64) -> Result<std::ops::Range<usize>, ZoneError> {
        let zs = self.cfg.zone_size_bytes;
        let bad = !offset.is_multiple_of(zs)
            || len == 0
            || !len.is_multiple_of(zs)
            || self.zone_of(offset + len - 1).is_none();
        if bad {
            self.errors += 1;
            return Err(ZoneError::BadRange);
        }
        let first = (offset / zs) as usize;
        let last = first + (len / zs) as usize;
        for z in first..last {
            let zone = &mut self.zones[z];
            match zone.cond {
                ZoneCond::ImplicitOpen | ZoneCond::ExplicitOpen => {
                    self.open -= 1;
                    self.active -= 1;
                }
                ZoneCond::Closed => self.active -= 1,
                ZoneCond::Empty | ZoneCond::Full => {}
            }
            zone.wp = 0;
            zone.cond = ZoneCond::Empty;
            self.resets += 1;
        }
        Ok(first..last)
    }

    /// Whether a read of `len` bytes at `offset` lies wholly at or beyond its zone's
    /// WP (or past the zones): nothing there was written, so the device answers
    /// without reading the media.
    pub fn unwritten(&self, offset: u64, len: u64) -> bool {
        let zs = self.cfg.zone_size_bytes;
        let end = offset + len.max(1);
        let mut z = offset / zs;
        while z * zs < end {
            let Some(zone) = self.zones.get(z as usize) else {
                return true;
            };
            let from = offset.max(z * zs) - z * zs;
            if from < zone.wp {
                return false;
            }
            z += 1;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> ZonedConfig {
        ZonedConfig {
            zone_size_bytes: 1 << 20,
            zone_capacity_bytes: 768 << 10,
            zones: 8,
            max_open: 2,
            max_active: 3,
        }
    }

    #[test]
    fn the_write_pointer_advances_and_a_write_elsewhere_fails() {
        let mut z = Zones::new(&cfg());
        assert_eq!(z.write(0, 4096), Ok(()));
        assert_eq!(z.write_pointer(0), 4096);
        assert_eq!(z.cond(0), ZoneCond::ImplicitOpen);
        assert_eq!(z.write(0, 4096), Err(ZoneError::NotAtWritePointer));
        assert_eq!(z.write(8192, 4096), Err(ZoneError::NotAtWritePointer));
        assert_eq!(z.write(4096, 768 << 10), Err(ZoneError::Boundary));
        assert_eq!(z.write(4096, (768 << 10) - 4096), Ok(()));
        assert_eq!(z.cond(0), ZoneCond::Full);
        assert_eq!(z.write(768 << 10, 4096), Err(ZoneError::Full));
        assert_eq!(z.open_active(), (0, 0));
        assert_eq!(z.errors, 4);
    }

    #[test]
    fn open_and_active_limits() {
        let mut z = Zones::new(&cfg());
        let zs = 1u64 << 20;
        z.write(0, 4096).unwrap();
        z.write(zs, 4096).unwrap();
        // A third open closes the oldest open zone implicitly.
        z.write(2 * zs, 4096).unwrap();
        assert_eq!(z.cond(0), ZoneCond::Closed);
        assert_eq!(z.open_active(), (2, 3));
        assert_eq!(z.implicit_closes, 1);
        // A fourth active zone is refused; writing the closed one reopens it.
        assert_eq!(z.write(3 * zs, 4096), Err(ZoneError::TooManyActive));
        z.write(4096, 4096).unwrap();
        assert_eq!(z.cond(0), ZoneCond::ImplicitOpen);
        assert_eq!(z.cond(1), ZoneCond::Closed);
        assert_eq!(z.open_active(), (2, 3));
    }

    #[test]
    fn reset_frees_whole_zones_only() {
        let mut z = Zones::new(&cfg());
        let zs = 1u64 << 20;
        z.write(0, 8192).unwrap();
        z.write(zs, 8192).unwrap();
        assert_eq!(z.reset(4096, zs), Err(ZoneError::BadRange));
        assert_eq!(z.reset(0, 2 * zs), Ok(0..2));
        assert_eq!(z.write_pointer(0), 0);
        assert_eq!(z.cond(1), ZoneCond::Empty);
        assert_eq!(z.open_active(), (0, 0));
        assert_eq!(z.reset(7 * zs, 2 * zs), Err(ZoneError::BadRange));
        z.write(0, 4096).unwrap();
        assert!(!z.unwritten(0, 8192));
        assert!(z.unwritten(4096, 4096));
        assert!(z.unwritten(zs, 4096));
    }
}
