//! Checking a parsed profile: every value's range and the sections' agreement, with
//! errors that name the field and say how to fix it.

use super::*;

pub(super) fn invalid(origin: &str, field: &str, problem: String) -> ProfileError {
    ProfileError::Invalid {
        origin: origin.to_string(),
        field: field.to_string(),
        problem,
    }
}

impl DeviceProfile {
    /// Check every value's range. Errors name the field and say how to fix it; the
    /// checks run in this order and the first that fails is the error.
    pub fn validate(&self) -> Result<(), ProfileError> {
        let o = self.name.as_str();
        self.check_nominal(o)?;
        self.arbitration.validate(o)?;
        self.check_controller(o)?;
        self.check_media(o)?;
        self.check_front_end(o)?;
        self.check_parallel(o)?;
        self.check_parts(o)?;
        self.check_zoned(o)?;
        Ok(())
    }

    /// The profile's name, the controller's times and the nominal figures.
    fn check_nominal(&self, o: &str) -> Result<(), ProfileError> {
        let c = &self.controller;
        for (field, v) in [
            ("controller.fetch_ns", c.fetch_ns),
            ("controller.complete_ns", c.complete_ns),
            ("controller.read_cmd_ns", c.read_cmd_ns),
            ("controller.write_cmd_ns", c.write_cmd_ns),
        ] {
            if v > MAX_NS {
                return Err(invalid(
                    o,
                    field,
                    format!("is {v}; it must be at most {MAX_NS} nanoseconds (10 s)"),
                ));
            }
        }
        if self.name.trim().is_empty() {
            return Err(invalid(
                o,
                "name",
                "is empty; give the profile a short name".into(),
            ));
        }
        let n = &self.nominal;
        positive(
            o,
            "nominal.read_lat_qd1_ns",
            n.read_lat_qd1_ns,
            "nanoseconds",
        )?;
        positive(o, "nominal.read_iops", n.read_iops, "I/Os per second")?;
        positive(
            o,
            "nominal.write_lat_qd1_ns",
            n.write_lat_qd1_ns,
            "nanoseconds",
        )?;
        positive(o, "nominal.write_iops", n.write_iops, "I/Os per second")?;
        positive(o, "nominal.knee_qd", n.knee_qd as u64, "a queue depth")?;
        if let Some(b) = n.bandwidth_bytes {
            positive(o, "nominal.bandwidth_bytes", b, "bytes per second")?;
        }
        Ok(())
    }

    /// The controller's queues.
    fn check_controller(&self, o: &str) -> Result<(), ProfileError> {
        let c = &self.controller;
        if let Some(a) = c.atomic_write_bytes {
            if a < 512 || !a.is_power_of_two() {
                return Err(invalid(
                    o,
                    "controller.atomic_write_bytes",
                    format!(
                        "is {a}; the atomic write unit (NVMe AWUPF) is a power of two of at \
                         least 512 bytes (one logical block), e.g. 4096 or 16384"
                    ),
                ));
            }
        }
        positive(
            o,
            "controller.max_outstanding",
            c.max_outstanding as u64,
            "commands the controller holds, e.g. 128",
        )?;
        if c.max_outstanding > 1 << 20 {
            return Err(invalid(
                o,
                "controller.max_outstanding",
                format!(
                    "is {}; at most 1048576 commands are supported",
                    c.max_outstanding
                ),
            ));
        }
        if c.sq_depth == 0 || c.sq_depth > 65536 {
            return Err(invalid(
                o,
                "controller.sq_depth",
                format!(
                    "is {}; a submission queue holds 1..=65536 entries (default 1024)",
                    c.sq_depth
                ),
            ));
        }
        Ok(())
    }

    /// The media's units, stripe and times.
    fn check_media(&self, o: &str) -> Result<(), ProfileError> {
        let m = &self.media;
        positive(
            o,
            "media.units",
            m.units as u64,
            "the number of parallel units, e.g. channels × dies",
        )?;
        if m.units > 1 << 20 {
            return Err(invalid(
                o,
                "media.units",
                format!("is {}; at most 1048576 units are supported", m.units),
            ));
        }
        positive(
            o,
            "media.stripe_bytes",
            m.stripe_bytes as u64,
            "bytes, e.g. 4096",
        )?;
        positive(
            o,
            "media.read_ns",
            m.read_ns,
            "nanoseconds of unit time per read",
        )?;
        positive(
            o,
            "media.write_ns",
            m.write_ns,
            "nanoseconds of unit time per write",
        )?;
        if let Some(e) = m.erase_ns {
            positive(o, "media.erase_ns", e, "nanoseconds to erase a flash block")?;
        }
        positive(
            o,
            "media.unit_bandwidth_bytes",
            m.unit_bandwidth_bytes,
            "bytes per second",
        )?;
        positive(
            o,
            "media.bus_bandwidth_bytes",
            m.bus_bandwidth_bytes,
            "bytes per second",
        )?;
        if m.write_units == 0 || m.write_units > m.units || !m.units.is_multiple_of(m.write_units) {
            return Err(invalid(
                o,
                "media.write_units",
                format!(
                    "is {} with {} units; it must be a divisor of media.units (1 = a write occupies one unit, {} = the whole device)",
                    m.write_units, m.units, m.units
                ),
            ));
        }
        for (field, v) in [
            (
                "media.write_unit_bandwidth_bytes",
                m.write_unit_bandwidth_bytes,
            ),
            (
                "media.write_bus_bandwidth_bytes",
                m.write_bus_bandwidth_bytes,
            ),
        ] {
            if let Some(v) = v {
                positive(
                    o,
                    field,
                    v,
                    "bytes per second (omit it to use the read figure)",
                )?;
            }
        }
        Ok(())
    }

    /// The front end's form, batches and links.
    fn check_front_end(&self, o: &str) -> Result<(), ProfileError> {
        let m = &self.media;
        if let Some(b) = self.controller.batch_ns {
            if b == 0 || b > 1_000_000_000 {
                return Err(invalid(
                    o,
                    "controller.batch_ns",
                    format!("is {b}; give the cost of one batch in ns, 1..=1000000000 (omit it for no batching)"),
                ));
            }
            if self.controller.transfer == Transfer::Shared {
                return Err(invalid(
                    o,
                    "controller.batch_ns",
                    "is given with controller.transfer = \"shared\"; batches are served by the FIFO front end: remove batch_ns or set transfer = \"fifo\"".to_string(),
                ));
            }
        }
        let capped = self.controller.front_end.has_link();
        if capped && self.controller.transfer == Transfer::Shared {
            return Err(invalid(
                o,
                "controller.transfer",
                "is \"shared\" with controller.front_end = \"additive_capped\", which has no shared form (its per-command link under a shared ceiling); use front_end = \"max\" or \"additive\", or transfer = \"fifo\"".to_string(),
            ));
        }
        for (field, v) in [
            ("media.link_bandwidth_bytes", m.link_bandwidth_bytes),
            (
                "media.write_link_bandwidth_bytes",
                m.write_link_bandwidth_bytes,
            ),
        ] {
            match v {
                Some(_) if !capped => {
                    return Err(invalid(
                        o,
                        field,
                        format!(
                            "is given with controller.front_end = \"{}\"; only \"additive_capped\" has a link: remove it or set controller.front_end = \"additive_capped\"",
                            self.controller.front_end.name()
                        ),
                    ))
                }
                Some(v) => positive(
                    o,
                    field,
                    v,
                    "bytes per second (the front end's transfer that overlaps no command processing)",
                )?,
                None => {}
            }
        }
        if capped && m.link_bandwidth_bytes.is_none() {
            return Err(invalid(
                o,
                "media.link_bandwidth_bytes",
                "is missing; controller.front_end = \"additive_capped\" occupies the front end max(cmd_ns + len / media.link_bandwidth_bytes, len / media.bus_bandwidth_bytes), so give the link's rate in bytes per second (above media.bus_bandwidth_bytes for the ceiling to matter)".to_string(),
            ));
        }
        Ok(())
    }

    /// Parallel units, read-after-write blocking, load exponents and the pool.
    fn check_parallel(&self, o: &str) -> Result<(), ProfileError> {
        let m = &self.media;
        if let Some(w) = m.write_parallel_units {
            if w == 0 || w > m.units || !w.is_multiple_of(m.write_units) {
                return Err(invalid(
                    o,
                    "media.write_parallel_units",
                    format!(
                        "is {w} with {} units and write_units = {}; it must be in 1..={} and a multiple of media.write_units (omit it for all units)",
                        m.units, m.write_units, m.units
                    ),
                ));
            }
            if self.flash.is_some() && w != m.units {
                return Err(invalid(
                    o,
                    "media.write_parallel_units",
                    format!(
                        "is {w} but [flash] places writes on all {} dies; omit it or set it to media.units",
                        m.units
                    ),
                ));
            }
        }
        if let Some(r) = m.read_parallel_units {
            if r == 0 || r > m.units {
                return Err(invalid(
                    o,
                    "media.read_parallel_units",
                    format!(
                        "is {r} with {} units; it must be in 1..={} (omit it for all units)",
                        m.units, m.units
                    ),
                ));
            }
            if self.flash.is_some() && r != m.units {
                return Err(invalid(
                    o,
                    "media.read_parallel_units",
                    format!(
                        "is {r} but [flash] reads from the die that holds the data (any of {}); omit it or set it to media.units",
                        m.units
                    ),
                ));
            }
        }
        if let Some(b) = m.read_block_after_write_ns {
            if b > MAX_NS {
                return Err(invalid(
                    o,
                    "media.read_block_after_write_ns",
                    format!("is {b}; it must be in 0..={MAX_NS} nanoseconds (0 or absent: off)"),
                ));
            }
        }
        for (key, e) in [
            ("media.read_load_exponent", m.read_load_exponent),
            ("media.write_load_exponent", m.write_load_exponent),
        ] {
            let Some(e) = e else { continue };
            if !(e > 0.0 && e < 1.0) {
                return Err(invalid(
                    o,
                    key,
                    format!("is {e}; it must be in (0, 1) — 0.5: latency grows as the square root of the commands in the device (omit it for a load-independent media time)"),
                ));
            }
            if self.flash.is_some() {
                return Err(invalid(
                    o,
                    key,
                    "is set but [flash] models the dies themselves; remove it or [flash]".into(),
                ));
            }
        }
        if m.pool {
            let clash = if self.flash.is_some() {
                Some("[flash] places every read on the die that holds its data; remove pool or [flash]")
            } else if self.write_buffer.is_some() {
                Some("a write buffer destages by write_placement; remove pool or [write_buffer]")
            } else if m.write_units > 1 {
                Some("write_units above 1 ties a write to a group of units; remove pool or set write_units = 1")
            } else {
                None
            };
            if let Some(why) = clash {
                return Err(invalid(o, "media.pool", format!("is true but {why}")));
            }
        }
        if m.write_units > 1 && self.write_buffer.is_some() {
            return Err(invalid(
                o,
                "media.write_units",
                format!(
                    "is {} but the profile has a write buffer, whose destage programs occupy one unit each; use 1, or remove [write_buffer]",
                    m.write_units
                ),
            ));
        }
        Ok(())
    }

    /// The geometry, the write buffer, the service times and the flash model.
    fn check_parts(&self, o: &str) -> Result<(), ProfileError> {
        let m = &self.media;
        if let Some(g) = &m.geometry {
            positive(o, "media.geometry.channels", g.channels as u64, "a count")?;
            positive(
                o,
                "media.geometry.chips_per_channel",
                g.chips_per_channel as u64,
                "a count",
            )?;
            positive(
                o,
                "media.geometry.dies_per_chip",
                g.dies_per_chip as u64,
                "a count",
            )?;
            positive(
                o,
                "media.geometry.planes_per_die",
                g.planes_per_die as u64,
                "a count",
            )?;
            let dies = g.channels as u64 * g.chips_per_channel as u64 * g.dies_per_chip as u64;
            if dies != m.units as u64 {
                return Err(invalid(
                    o,
                    "media.units",
                    format!(
                        "is {} but the geometry has {dies} dies (channels × chips_per_channel × dies_per_chip); make them agree",
                        m.units
                    ),
                ));
            }
        }
        if let Some(w) = &self.write_buffer {
            positive(
                o,
                "write_buffer.capacity_bytes",
                w.capacity_bytes,
                "bytes, e.g. 33554432",
            )?;
            positive(
                o,
                "write_buffer.ack_ns",
                w.ack_ns,
                "nanoseconds to buffer and acknowledge a write",
            )?;
            positive(
                o,
                "write_buffer.program_bytes",
                w.program_bytes as u64,
                "bytes written by one program, e.g. page × planes",
            )?;
        }
        if let Some(v) = &self.service {
            v.validate(o)?;
        }
        if let Some(f) = &self.flash {
            f.validate(o, m, self.write_buffer.is_some())?;
        }
        Ok(())
    }

    /// The zones: a positive size, a capacity within it, a count, and an active
    /// limit not below the open one.
    fn check_zoned(&self, o: &str) -> Result<(), ProfileError> {
        let Some(z) = &self.zoned else {
            return Ok(());
        };
        positive(
            o,
            "zoned.zone_size_bytes",
            z.zone_size_bytes,
            "bytes per zone",
        )?;
        positive(
            o,
            "zoned.zone_capacity_bytes",
            z.zone_capacity_bytes,
            "writable bytes per zone",
        )?;
        positive(o, "zoned.zones", z.zones as u64, "a count")?;
        if z.zone_capacity_bytes > z.zone_size_bytes {
            return Err(invalid(
                o,
                "zoned.zone_capacity_bytes",
                format!(
                    "is {} but a zone is {} bytes; a zone's capacity is at most its size",
                    z.zone_capacity_bytes, z.zone_size_bytes
                ),
            ));
        }
        if z.max_active > 0 && z.max_open > z.max_active {
            return Err(invalid(
                o,
                "zoned.max_open",
                format!(
                    "is {} but max_active is {}; an open zone is active, so max_open is at most max_active (0: no limit)",
                    z.max_open, z.max_active
                ),
            ));
        }
        Ok(())
    }
}

/// Every number must be positive and below a bound that keeps the model's sums far
/// from wrapping (a service time of 2^64 − 1 ns once "overflowed" into a device
/// faster than `ull`).
fn positive(o: &str, field: &str, v: u64, what: &str) -> Result<(), ProfileError> {
    let (max, unit) = max_of(field);
    if v == 0 {
        Err(invalid(
            o,
            field,
            format!("is 0; it must be positive ({what})"),
        ))
    } else if v > max {
        Err(invalid(
            o,
            field,
            format!("is {v}; it must be at most {max} {unit} ({what})"),
        ))
    } else {
        Ok(())
    }
}

/// The bound and unit of a profile number, by its field name.
fn max_of(field: &str) -> (u64, &'static str) {
    if field.ends_with("_ns") {
        (MAX_NS, "nanoseconds (10 s)")
    } else if field.contains("bandwidth") {
        (1_000_000_000_000, "bytes per second (1 TB/s)")
    } else if field.ends_with("iops") {
        (1_000_000_000, "I/Os per second")
    } else if field.ends_with("_bytes") {
        (1 << 40, "bytes (1 TiB)")
    } else {
        (1 << 20, "")
    }
}
