//! A section's zone options joined, as fio's `fixup_options` and `zbd_setup_files`
//! do: the default `zonemode`, `zonerange`, sizes counted in zones.

#[allow(unused_imports)]
use super::*;

impl Parser<'_> {
    /// Settle `d.job.zone` and turn sizes in zones (`size=8z`) into bytes.
    pub(super) fn zones_of(
        &self,
        name: &str,
        d: &mut Draft,
        header: &Loc,
    ) -> Result<(), WorkloadError> {
        let z = &mut d.job.zone;
        let err = |at: &Loc, opt: &str, m: String| self.option_err_at(at, opt, m);
        match d.zonemode {
            Some(ZoneMode::None) if z.size > 0 => {
                return Err(err(
                    header,
                    "zonesize",
                    format!("job '{name}' has zonemode=none and a zonesize, which fio refuses as incompatible; remove one"),
                ));
            }
            Some(ZoneMode::Strided) if z.size == 0 => {
                return Err(err(
                    header,
                    "zonemode",
                    format!("job '{name}' has zonemode=strided without zonesize; give the bytes per zone, e.g. zonesize=256m"),
                ));
            }
            Some(m) => z.mode = m,
            None => {
                z.mode = if z.size > 0 {
                    ZoneMode::Strided
                } else {
                    ZoneMode::None
                };
            }
        }
        let nrfiles = d.nrfiles.as_ref().map_or(1, |n| n.0);
        if z.mode == ZoneMode::Strided && nrfiles > 1 {
            // fio: "strided zone mode only really works with 1 file".
            z.mode = ZoneMode::None;
        }
        if z.mode == ZoneMode::Strided && z.range == 0 {
            z.range = z.size;
        }
        if z.mode == ZoneMode::Zbd {
            if z.skip > 0 || d.nz.skip.is_some() {
                return Err(err(
                    header,
                    "zoneskip",
                    format!("job '{name}' has zonemode=zbd and a zoneskip; fio's documentation requires 0 there and sluice does not skip zones in zbd mode; remove zoneskip"),
                ));
            }
            if z.capacity > 0 && z.size > 0 && z.capacity > z.size {
                return Err(err(
                    header,
                    "zonecapacity",
                    format!("job '{name}': zonecapacity {} is larger than zonesize {}; a zone's capacity is at most its size", z.capacity, z.size),
                ));
            }
        }
        // Sizes in zones: the zone size times the count (fio's `*_nz`).
        let zs = z.size;
        let mode = z.mode;
        let nz = std::mem::take(&mut d.nz);
        let counted = [
            ("size", nz.size),
            ("io_size", nz.io_size),
            ("offset", nz.offset),
            ("offset_increment", nz.offset_increment),
            ("zoneskip", nz.skip),
        ];
        for (opt, v) in counted {
            let Some((n, at)) = v else { continue };
            if zs == 0 || mode == ZoneMode::None {
                return Err(err(
                    &at,
                    opt,
                    format!("'{n}z' counts zones, but job '{name}' has no zone size; give zonemode=zbd or strided and zonesize= (e.g. zonesize=256m)"),
                ));
            }
            let bytes = n.checked_mul(zs).ok_or_else(|| {
                err(
                    &at,
                    opt,
                    format!("{n} zones of {zs} bytes overflow 64 bits; use fewer zones"),
                )
            })?;
            match opt {
                "size" => d.size = Some((bytes, at)),
                "io_size" => d.io_size = Some((bytes, at)),
                "offset" => d.offset = Some((bytes, at)),
                "offset_increment" => d.job.offset_increment = bytes,
                _ => d.job.zone.skip = bytes,
            }
            if bytes == 0 && matches!(opt, "size" | "io_size") {
                return Err(self.option_err_at(
                    d.size.as_ref().map_or(header, |s| &s.1),
                    opt,
                    format!("{opt}=0z in job '{name}': give at least one zone"),
                ));
            }
        }
        Ok(())
    }
}
