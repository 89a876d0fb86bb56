//! Turning a job section's collected options (a [`Draft`]) into a checked [`JobSpec`].

#[allow(unused_imports)]
use super::*;

impl Draft {
    /// Record an option accepted without action (the last value of an option wins).
    pub(super) fn record(&mut self, key: &str, value: Option<&str>) {
        let v = value.unwrap_or("1").to_string();
        self.passthrough.retain(|(n, _)| n != key);
        self.passthrough.push((key.to_string(), v));
    }

    pub(super) fn apply(
        &mut self,
        key: &str,
        value: Option<&str>,
        at: &Loc,
    ) -> Result<(), ApplyError> {
        match key {
            "name" => self.name = Some(need(key, value)?.to_string()),
            "rw" | "readwrite" => self.rw = Some(parse_rw(need(key, value)?)?),
            "rwmixread" => self.rwmixread = Some(small_uint(need(key, value)?, "70", 0, 100)?),
            "rwmixwrite" => {
                let w: u8 = small_uint(need(key, value)?, "30", 0, 100)?;
                self.rwmixread = Some(100 - w);
            }
            "bs" | "blocksize" => {
                let (parts, _) = split_dirs(key, need(key, value)?)?;
                for (dir, part) in parts.iter().enumerate() {
                    if let Some(p) = part {
                        self.bs[dir] = Some((parse_bs(p)?, at.clone()));
                        // A later bs overrides an inherited bssplit/bsrange for that direction.
                        self.bssplit[dir] = None;
                    }
                }
            }
            "bssplit" | "bsrange" | "blocksize_range" => {
                let (parts, _) = split_dirs(key, need(key, value)?)?;
                let name = if key == "bssplit" {
                    "bssplit"
                } else {
                    "bsrange"
                };
                for (dir, part) in parts.iter().enumerate() {
                    if let Some(p) = part {
                        let t = if key == "bssplit" {
                            parse_bssplit(p)?
                        } else {
                            parse_bsrange(p)?
                        };
                        self.bssplit[dir] = Some((t, name, at.clone()));
                    }
                }
            }
            "size" => {
                let v = need(key, value)?;
                if v.trim().ends_with('%') {
                    return Err(ApplyError::Bad(format!(
                        "'{v}': a size in percent of the device is not supported; give bytes, e.g. size=1g"
                    )));
                }
                self.size = Some((parse_positive_size(v)?, at.clone()))
            }
            "filesize" => {
                let v = need(key, value)?;
                if v.contains('-') || v.contains(':') {
                    return Err(ApplyError::Bad(format!(
                        "'{v}': a range of file sizes is not supported; give one size, e.g. filesize=64m"
                    )));
                }
                self.filesize = Some((parse_positive_size(v)?, at.clone()))
            }
            "nrfiles" | "nr_files" => {
                self.nrfiles = Some((small_uint(need(key, value)?, "4", 1, 1 << 20)?, at.clone()))
            }
            "file_service_type" => self.file_service = Some(parse_file_service(need(key, value)?)?),
            "io_size" | "io_limit" => {
                let v = need(key, value)?;
                if v.trim().ends_with('%') {
                    return Err(ApplyError::Bad(format!(
                        "'{v}': io_size in percent is not supported; give bytes, e.g. io_size=10g"
                    )));
                }
                self.io_size = Some((parse_positive_size(v)?, at.clone()))
            }
            "loops" => self.loops = Some(small_uint(need(key, value)?, "3", 1, u32::MAX as u64)?),
            "number_ios" => {
                let n = parse_uint(need(key, value)?, "100000")?;
                self.number_ios = (n > 0).then_some(n);
            }
            "offset" => {
                let v = need(key, value)?;
                if v.trim().ends_with('%') {
                    return Err(ApplyError::Bad(format!(
                        "'{v}': an offset in percent of the device is not supported; give bytes, e.g. offset=1g"
                    )));
                }
                self.offset = Some((parse_size(v)?, at.clone()))
            }
            "iodepth" => self.iodepth = Some(small_uint(need(key, value)?, "32", 1, 65535)?),
            "numjobs" => self.numjobs = Some(small_uint(need(key, value)?, "4", 1, 65535)?),
            "runtime" | "timeout" => {
                let t = parse_time(need(key, value)?, TimeUnit::Seconds)?;
                self.runtime_ns = (t > 0).then_some(t);
            }
            "time_based" => self.time_based = parse_bool(value)?,
            "ramp_time" => self.ramp_ns = parse_time(need(key, value)?, TimeUnit::Seconds)?,
            "startdelay" => self.startdelay_ns = parse_time(need(key, value)?, TimeUnit::Seconds)?,
            "thinktime" => self.thinktime_ns = parse_time(need(key, value)?, TimeUnit::Micros)?,
            "rate" | "rate_iops" => {
                let (parts, single) = split_dirs(key, need(key, value)?)?;
                let mut out = [None; 2];
                for (dir, part) in parts.iter().enumerate() {
                    if let Some(p) = part {
                        let n = if key == "rate" {
                            parse_size(p)?
                        } else {
                            parse_uint(p, "1000")?
                        };
                        out[dir] = (n > 0).then_some(n);
                    }
                }
                if key == "rate" {
                    self.rate_bytes = out;
                    self.rate_bytes_total = single;
                } else {
                    self.rate_iops = out;
                    self.rate_iops_total = single;
                }
            }
            "rate_process" => {
                self.rate_process = Some(
                    match need(key, value)?.trim().to_ascii_lowercase().as_str() {
                        "linear" => RateProcess::Linear,
                        "poisson" => RateProcess::Poisson,
                        v => {
                            return Err(ApplyError::Bad(format!(
                                "cannot read '{v}' as a rate process; use linear or poisson"
                            )))
                        }
                    },
                )
            }
            "randseed" => self.randseed = Some(parse_uint(need(key, value)?, "42")?),
            "random_distribution" => {
                self.distribution = Some((parse_distribution(need(key, value)?)?, at.clone()))
            }
            "percentage_random" => {
                let (parts, _) = split_dirs(key, need(key, value)?)?;
                let mut p = self.percentage_random.as_ref().map_or([100, 100], |x| x.0);
                for (dir, part) in parts.iter().enumerate() {
                    if let Some(v) = part {
                        p[dir] = small_uint(v, "80", 0, 100)?;
                    }
                }
                self.percentage_random = Some((p, at.clone()));
            }
            "prio" => self.prio = Some(small_uint(need(key, value)?, "4", 0, 7)?),
            "prioclass" => self.prioclass = Some(small_uint(need(key, value)?, "2", 0, 3)?),
            "stonewall" | "wait_for_previous" => self.stonewall = parse_bool(value)?,
            "exitall" => self.exitall = parse_bool(value)?,
            "direct" => self.buffered = !parse_bool(value)?,
            "buffered" => self.buffered = parse_bool(value)?,
            "fsync" => self.fsync = small_uint(need(key, value)?, "32", 0, u32::MAX as u64)?,
            "fdatasync" => {
                self.fdatasync = small_uint(need(key, value)?, "32", 0, u32::MAX as u64)?
            }
            "end_fsync" => self.end_fsync |= parse_bool(value)?,
            "fsync_on_close" => {
                self.fsync_on_close = parse_bool(value)?;
                self.end_fsync |= self.fsync_on_close;
            }
            "create_on_open" => self.create_on_open = parse_bool(value)?,
            "verify" => {
                self.verify = Some((parse_verify_kind(need(key, value)?)?, at.clone()));
            }
            "verify_pattern" => self.verify_pattern = Some(parse_pattern(need(key, value)?)?),
            "write_bw_log" | "write_lat_log" | "write_iops_log" => {
                let prefix = match value.map(str::trim) {
                    None | Some("") => None,
                    Some(v) => Some(v.to_string()),
                };
                match key {
                    "write_bw_log" => self.log_bw = Some(prefix),
                    "write_lat_log" => self.log_lat = Some(prefix),
                    _ => self.log_iops = Some(prefix),
                }
            }
            "log_avg_msec" => self.log_avg_msec = parse_uint(need(key, value)?, "1000")?,
            "per_job_logs" => self.per_job_logs = Some(parse_bool(value)?),
            "steadystate" | "ss" => {
                self.ss = Some((parse_steadystate(need(key, value)?)?, at.clone()))
            }
            "steadystate_duration" | "ss_dur" => {
                self.ss_dur = Some((
                    parse_time(need(key, value)?, TimeUnit::Seconds)?,
                    at.clone(),
                ))
            }
            "steadystate_ramp_time" | "ss_ramp" => {
                self.ss_ramp = parse_time(need(key, value)?, TimeUnit::Seconds)?
            }
            "steadystate_check_interval" | "ss_interval" => {
                let t = parse_time(need(key, value)?, TimeUnit::Seconds)?;
                if t < 1_000_000 {
                    return Err(ApplyError::Bad(format!(
                        "'{}' is shorter than 1 ms; give e.g. 1s or 500ms",
                        need(key, value)?
                    )));
                }
                self.ss_interval = Some((t, at.clone()))
            }
            "do_verify" => self.do_verify = Some(parse_bool(value)?),
            "verify_fatal" => self.verify_fatal = parse_bool(value)?,
            "verify_backlog" => {
                let n = parse_uint(need(key, value)?, "1024")?;
                self.verify_backlog = (n > 0).then_some(n);
            }
            "filename" => {
                let v = need(key, value)?;
                let files = split_paths(v);
                match files.len() {
                    0 => return Err(ApplyError::Bad(format!("needs a value, e.g. {}", example(key)))),
                    1 => self.filename = Some((files[0].clone(), at.clone())),
                    n => {
                        return Err(ApplyError::Bad(format!(
                            "'{v}' names {n} files; sluice takes one file per job (write '\\:' for a colon in a name). \
                             Give each file its own job with filename=, or use nrfiles for several files per thread"
                        )))
                    }
                }
            }
            "filename_format" => {
                self.filename_format = Some((need(key, value)?.to_string(), at.clone()))
            }
            "directory" => {
                let dirs = split_paths(need(key, value)?);
                if dirs.is_empty() {
                    return Err(ApplyError::Bad(format!(
                        "needs a value, e.g. {}",
                        example(key)
                    )));
                }
                self.directory = Some((dirs, at.clone()));
            }
            "ioengine" | "description" => self.record(key, Some(need(key, value)?)),
            "sluice_critical" => {
                self.critical = match value.map(str::trim) {
                    Some("1") | None => true,
                    Some("0") => false,
                    Some(v) => {
                        return Err(ApplyError::Bad(format!(
                    "cannot read '{v}'; write sluice_critical=1 (critical) or sluice_critical=0"
                )))
                    }
                }
            }
            "sluice_weight" => {
                self.weight = Some(small_uint(need(key, value)?, "8", 1, u32::MAX as u64)?)
            }
            "sluice_flow" => self.flow = Some(need(key, value)?.to_string()),
            _ => return Err(ApplyError::Unknown),
        }
        Ok(())
    }
}
