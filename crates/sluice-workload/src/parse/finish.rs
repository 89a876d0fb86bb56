//! The end of a job section: its draft checked and turned into a `JobSpec` (with its
//! verify and steady-state settings and its file name resolved).

use super::*;

/// A job's files: how many, how large, and what the message of a too-small size names.
struct Files {
    nrfiles: u32,
    /// Bytes of each file.
    file_size: u64,
    /// How messages name the file size (`size=1m on line 3`, …).
    size_where: String,
    /// Where the size was set (the section header for the default).
    size_at: Loc,
    /// Bytes of the thread's region: `nrfiles` × `file_size`.
    region: u64,
    /// `io_size`, or `size` when `filesize` gave the files' size (as fio).
    io_size: Option<u64>,
}

impl Parser<'_> {
    /// The job of a finished section: its draft's simple options as they are, the
    /// options that depend on others joined and checked.
    pub(super) fn finish_job(
        &mut self,
        section: String,
        line: usize,
        d: Draft,
    ) -> Result<JobSpec, WorkloadError> {
        let name = d.name.clone().unwrap_or(section);
        let header = self.loc(line);
        let mut d = d;
        self.zones_of(&name, &mut d, &header)?;
        let rw = d.job.rw;
        let files = self.files_of(&name, &d, &header)?;
        let bs = self.block_sizes(&name, &d, rw, &files)?;
        let offset = d.offset.as_ref().map_or(0, |o| o.0);
        let last_start = d
            .job
            .offset_increment
            .checked_mul(d.job.numjobs.max(1) as u64 - 1)
            .and_then(|x| x.checked_add(offset));
        if last_start
            .and_then(|s| s.checked_add(files.region))
            .is_none()
        {
            let at = d.offset.as_ref().map_or(&header, |o| &o.1);
            return Err(self.option_err_at(
                at,
                "offset",
                format!("offset + size overflows 64 bits in job '{name}'; use a smaller offset"),
            ));
        }
        let distribution = self.distribution_of(&name, &d, rw, &files, &bs)?;
        let percentage_random = self.percentage_random_of(&name, &d, rw);
        let filename = self.resolve_file(&name, &d)?;
        let verify = self.verify_of(&name, line, &d, &bs)?;
        let steadystate = self.steady_of(&name, line, &d)?;
        let class = self.class_of(&name, line, &d);
        let cmdprio = self.cmdprio_of(&name, &d)?;
        let wait_for = match &d.wait_for {
            None => None,
            Some((w, at)) => {
                let found: Vec<usize> = (0..self.jobs.len())
                    .filter(|&i| self.jobs[i].name == *w)
                    .collect();
                match found[..] {
                    [i] => Some(i),
                    [] => {
                        return Err(self.option_err_at(
                            at,
                            "wait_for",
                            format!(
                                "job '{name}' waits for '{w}', which is no earlier job; the \
                                 waitee must be defined before the waiter, as in fio"
                            ),
                        ))
                    }
                    _ => {
                        return Err(self.option_err_at(
                            at,
                            "wait_for",
                            format!(
                                "job '{name}' waits for '{w}', but {} jobs have that name; a \
                                 waitee must have a unique name, as in fio",
                                found.len()
                            ),
                        ))
                    }
                }
            }
        };
        if d.job.time_based && d.job.runtime_ns.is_none() {
            // fio (`fixup_options`): "time_based requires a runtime/timeout setting",
            // and the job runs as if time_based were not set (once over its size).
            self.warnings.push(format!(
                "{}:{line}: job '{name}' is time_based but has no runtime: time_based is \
                 ignored, as in fio (the job ends after its size); add runtime= (e.g. \
                 runtime=10s) to run for a time",
                self.origin
            ));
            d.job.time_based = false;
        }
        let log = |p: &Option<Option<String>>| p.clone().map(|p| p.unwrap_or_else(|| name.clone()));
        let (log_bw, log_lat, log_iops) = (log(&d.log_bw), log(&d.log_lat), log(&d.log_iops));
        let fdp = self.fdp_of(&name, &d)?;
        let mut job = d.job;
        job.placement.fdp = fdp;
        if fdp {
            // FDP writes are NVMe passthrough commands (fio's io_uring_cmd, xnvme):
            // no page cache sees them.
            job.buffered = false;
        }
        if let Some((true, _)) = d.atomic {
            job.atomic = true;
            // fio: "O_ATOMIC implies O_DIRECT"; a job that asked for buffered I/O is
            // refused below instead of silently changed.
            if !d.direct_given {
                job.buffered = false;
            }
        }
        self.engine_depth(&mut job, &name, line);
        job.logs.bw = log_bw;
        job.logs.lat = log_lat;
        job.logs.iops = log_iops;
        job.flow = d.flow.unwrap_or_else(|| name.clone());
        job.weight = d
            .weight
            .unwrap_or_else(|| weight_from_prio(job.prio, job.prioclass));
        job.name = name;
        job.line = line;
        job.class = class;
        job.cmdprio = cmdprio;
        job.wait_for = wait_for;
        job.bs = bs;
        job.size = files.region;
        job.size_given = d.size.is_some() || d.filesize.is_some();
        job.nrfiles = files.nrfiles;
        job.io_size = files.io_size;
        job.distribution = distribution;
        job.percentage_random = percentage_random;
        job.verify = verify;
        job.steadystate = steadystate;
        job.directory = d.directory.map(|x| x.0).unwrap_or_default();
        job.offset = offset;
        job.filename = filename;
        // fio syncs after every `fsync` writes and every `fdatasync` writes; a raw
        // file has no metadata, so the two are one sync here: the more frequent.
        job.fsync_every = match (d.fsync, d.fdatasync) {
            (0, n) | (n, 0) => n,
            (a, b) => a.min(b),
        };
        // fio checks fsync first: with equal counts the sync is an fsync.
        job.sync_data_only = d.fdatasync > 0 && (d.fsync == 0 || d.fdatasync < d.fsync);
        if let (Some((_, at)), Some(msg)) = (&d.atomic, crate::atomic::check_job(&job)) {
            return Err(self.option_err_at(at, "atomic", msg));
        }
        Ok(job)
    }

    /// The depth a job's `ioengine` gives it, as in fio: a synchronous engine (`sync`,
    /// `psync`, `vsync`, `pvsync`, `pvsync2`, `mmap`, `splice`) has one I/O in flight
    /// per thread whatever `iodepth` says ("increasing iodepth beyond 1 will not affect
    /// synchronous ioengines"), and so does `libaio` on buffered I/O (Linux queues
    /// `io_submit` only for `O_DIRECT`; a buffered one returns once the I/O is done).
    /// A job without `ioengine` keeps its `iodepth` (sluice's engine queues, as
    /// `io_uring`; fio's default `psync` would not). Said once per job when it lowers a
    /// given `iodepth`.
    fn engine_depth(&mut self, job: &mut JobSpec, name: &str, line: usize) {
        let Some(engine) = job
            .passthrough
            .iter()
            .rev()
            .find(|(k, _)| k == "ioengine")
            .map(|(_, v)| v.as_str())
        else {
            return;
        };
        let why = match engine {
            "sync" | "psync" | "vsync" | "pvsync" | "pvsync2" | "mmap" | "splice" => "synchronous",
            "libaio" if job.buffered => "synchronous on Linux for buffered I/O (direct=0)",
            _ => return,
        };
        if job.iodepth > 1 {
            self.warnings.push(format!(
                "{}:{line}: job '{name}' runs at iodepth=1, not {}: ioengine={engine} is {why}, \
                 as in fio (use ioengine=io_uring{} to queue)",
                self.origin,
                job.iodepth,
                if engine == "libaio" {
                    " or direct=1"
                } else {
                    ""
                }
            ));
            job.iodepth = 1;
        }
    }

    /// Whether the job's writes carry FDP placement IDs: `fdp=1` (not with an explicit
    /// `dataplacement=none`, as fio's `fixup_options`) or `dataplacement=fdp`.
    fn fdp_of(&self, name: &str, d: &Draft) -> Result<bool, WorkloadError> {
        match (&d.fdp, &d.dataplacement) {
            (Some((true, at)), Some((false, _))) => Err(self.option_err_at(
                at,
                "fdp",
                format!("job '{name}' has fdp=1 and dataplacement=none, which fio refuses as incompatible; remove one"),
            )),
            (Some((true, _)), _) | (_, Some((true, _))) => Ok(true),
            _ => Ok(false),
        }
    }

    /// Files: `nrfiles` × `filesize`, side by side; `size` then defaults `io_size`.
    /// Without `filesize`, `size` is split over the files.
    fn files_of(&self, name: &str, d: &Draft, header: &Loc) -> Result<Files, WorkloadError> {
        let default_size = JobSpec::default().size;
        let nrfiles = d.nrfiles.as_ref().map_or(1, |n| n.0);
        let (file_size, size_where, size_at) = match (&d.filesize, &d.size) {
            (Some((f, at)), _) => (
                *f,
                format!("filesize={} on {}", show_size(*f), self.where_(at)),
                at.clone(),
            ),
            (None, Some((s, at))) => {
                let per = s / nrfiles as u64;
                if per == 0 {
                    let n_at = d.nrfiles.as_ref().map_or(at, |n| &n.1);
                    return Err(self.option_err_at(
                        n_at,
                        "nrfiles",
                        format!(
                            "size={} split over nrfiles={nrfiles} leaves less than a byte per file in job '{name}'; \
                             use fewer files or a larger size",
                            show_size(*s)
                        ),
                    ));
                }
                let w = if nrfiles > 1 {
                    format!(
                        "the file size {} (size={} on {} over nrfiles={nrfiles})",
                        show_size(per),
                        show_size(*s),
                        self.where_(at)
                    )
                } else {
                    format!("size={} on {}", show_size(*s), self.where_(at))
                };
                (per, w, at.clone())
            }
            (None, None) => {
                let per = default_size / nrfiles as u64;
                let w = if nrfiles > 1 {
                    format!(
                        "the file size {} (the default size {} over nrfiles={nrfiles})",
                        show_size(per),
                        show_size(default_size)
                    )
                } else {
                    format!("the default size {}", show_size(default_size))
                };
                (per, w, header.clone())
            }
        };
        let region = file_size.checked_mul(nrfiles as u64).ok_or_else(|| {
            self.option_err_at(
                &size_at,
                "filesize",
                format!("nrfiles × filesize overflows 64 bits in job '{name}'; use smaller files"),
            )
        })?;
        let io_size = match (&d.io_size, &d.filesize, &d.size) {
            (Some((n, _)), _, _) => Some(*n),
            // fio: with filesize, size only sets how much I/O to do.
            (None, Some(_), Some((s, _))) => Some(*s),
            _ => None,
        };
        Ok(Files {
            nrfiles,
            file_size,
            size_where,
            size_at,
            region,
            io_size,
        })
    }

    /// Block sizes per direction: a `bssplit`/`bsrange` table over `bs`, 4 KiB by
    /// default; a direction the job uses must fit its largest size in a file.
    fn block_sizes(
        &self,
        name: &str,
        d: &Draft,
        rw: RwMode,
        f: &Files,
    ) -> Result<crate::job::BlockSizes, WorkloadError> {
        let mut sizes = [BlockSize::Fixed(4096), BlockSize::Fixed(4096)];
        for (dir, slot) in sizes.iter_mut().enumerate() {
            let used = if dir == 0 { rw.reads() } else { rw.writes() };
            let (table, option, set_at) = match (&d.bssplit[dir], &d.bs[dir]) {
                (Some((t, opt, at)), _) => (BlockSize::Split(t.clone()), *opt, Some(at)),
                (None, Some((b, at))) => (BlockSize::Fixed(*b), "bs", Some(at)),
                (None, None) => (BlockSize::Fixed(4096), "size", None),
            };
            let max = table.max_len() as u64;
            if used && max > f.file_size {
                let dir_name = if dir == 0 { "reads" } else { "writes" };
                let size_where = &f.size_where;
                return Err(match set_at {
                    Some(at) => self.option_err_at(
                        at,
                        option,
                        format!(
                            "block size {} for {dir_name} is larger than {size_where} in job '{name}'; \
                             use a smaller block size or a larger size",
                            show_size(max)
                        ),
                    ),
                    None => self.option_err_at(
                        &f.size_at,
                        if d.filesize.is_some() { "filesize" } else { "size" },
                        format!(
                            "{size_where} in job '{name}' is smaller than the default block size 4KiB; \
                             make it at least one block, or set bs"
                        ),
                    ),
                });
            }
            *slot = table;
        }
        let [read, write] = sizes;
        let trim = match &d.bs_trim {
            Some((b, at)) => {
                if rw.trims() && *b as u64 > f.file_size {
                    return Err(self.option_err_at(
                        at,
                        "bs",
                        format!(
                            "block size {} for trims is larger than {} in job '{name}'; \
                             use a smaller block size or a larger size",
                            show_size(*b as u64),
                            f.size_where
                        ),
                    ));
                }
                BlockSize::Fixed(*b)
            }
            None => BlockSize::Fixed(4096),
        };
        Ok(crate::job::BlockSizes { read, write, trim })
    }

    /// `random_distribution`: `zoned_abs` zones must fit in a file (fio stops on
    /// "sizes exceed file size"); a non-uniform one on a sequential job says it has no
    /// effect.
    fn distribution_of(
        &mut self,
        name: &str,
        d: &Draft,
        rw: RwMode,
        f: &Files,
        bs: &crate::BlockSizes,
    ) -> Result<[Distribution; 2], WorkloadError> {
        let Some((dist, at)) = d.distribution.clone() else {
            return Ok([Distribution::Uniform, Distribution::Uniform]);
        };
        for (dir, dd) in dist.iter().enumerate() {
            if let Distribution::Sequence(idx) = dd {
                let unit = if dir == 0 { &bs.read } else { &bs.write };
                let unit = unit.min_len().max(1) as u64;
                let blocks = f.file_size / unit;
                if let Some(b) = idx.iter().find(|&&b| b >= blocks) {
                    return Err(self.option_err_at(
                        &at,
                        "random_distribution",
                        format!(
                            "block {b} of the sequence is past the end of the file ({blocks} \
                             blocks of {} in job '{name}'); use indices below {blocks} or a \
                             larger file",
                            show_size(unit)
                        ),
                    ));
                }
            }
            if let Distribution::ZonedAbs(z) = dd {
                let total: u64 = z.iter().map(|z| z.size).fold(0, u64::saturating_add);
                if total > f.file_size {
                    return Err(self.option_err_at(
                        &at,
                        "random_distribution",
                        format!(
                            "the zones add up to {}, more than {} in job '{name}'; \
                             make the zones smaller or the file larger",
                            show_size(total),
                            f.size_where
                        ),
                    ));
                }
            }
        }
        if !rw.is_random() && dist.iter().any(|x| *x != Distribution::Uniform) {
            self.warnings.push(format!(
                "{}:{}: option 'random_distribution': no effect on the sequential rw={} of job '{name}'",
                at.origin, at.line, rw.name()
            ));
        }
        Ok(dist)
    }

    /// `percentage_random` (100 by default); other than 100 on a sequential job it
    /// says it has no effect.
    fn percentage_random_of(&mut self, name: &str, d: &Draft, rw: RwMode) -> [u8; 2] {
        let Some((p, at)) = d.percentage_random.clone() else {
            return [100, 100];
        };
        if !rw.is_random() && p != [100, 100] {
            self.warnings.push(format!(
                "{}:{}: option 'percentage_random': no effect on the sequential rw={} of job '{name}' (as in fio)",
                at.origin, at.line, rw.name()
            ));
        }
        p
    }

    /// The job's class: critical for `sluice_critical=1` or `prioclass=1` (critical
    /// wins over `prioclass=3`, with a warning), idle for `prioclass=3`.
    fn class_of(&mut self, name: &str, line: usize, d: &Draft) -> IoClass {
        let prioclass = d.job.prioclass;
        if d.critical || prioclass == Some(1) {
            if d.critical && prioclass == Some(3) {
                self.warnings.push(format!(
                    "{}:{line}: job '{name}' sets both sluice_critical=1 and prioclass=3 (idle); it is treated as critical",
                    self.origin
                ));
            }
            IoClass::Critical
        } else if prioclass == Some(3) {
            IoClass::Idle
        } else {
            IoClass::Normal
        }
    }

    /// The job's verification: `verify=` if given, else `pattern` when
    /// `verify_pattern` is given (as fio); the other verify options alone say they have
    /// no effect. `verify=pattern` without `verify_pattern` is refused: fio has no
    /// pattern to compare with then (fio 3.33 writes random data and then aborts on its
    /// own assertion `pattern_size != 0` when it reads it back), and comparing with an
    /// empty or made-up pattern would report every block as corrupt.
    pub(super) fn verify_of(
        &mut self,
        name: &str,
        line: usize,
        d: &Draft,
        bs: &crate::BlockSizes,
    ) -> Result<Option<VerifySpec>, WorkloadError> {
        let kind = match &d.verify {
            Some((Some(VerifyKind::Pattern), at)) if d.verify_pattern.is_none() => {
                return Err(WorkloadError::Option {
                    origin: at.origin.to_string(),
                    line: at.line,
                    option: "verify".into(),
                    message: format!(
                        "job '{name}' has verify=pattern but no verify_pattern, so there is no \
                         pattern to write or to check; add verify_pattern= (e.g. \
                         verify_pattern=0xdeadbeef) or use verify=crc32c"
                    ),
                });
            }
            Some((k, _)) => *k,
            None => d.verify_pattern.as_ref().map(|_| VerifyKind::Pattern),
        };
        let Some(kind) = kind else {
            if d.verify_fatal || d.verify_backlog.is_some() || d.do_verify == Some(true) {
                self.warnings.push(format!(
                    "{}:{line}: job '{name}' sets do_verify, verify_fatal or verify_backlog without verify; \
                     they have no effect (add verify=crc32c, md5 or pattern)",
                    self.origin
                ));
            }
            return Ok(None);
        };
        let interval = match &d.verify_interval {
            Some((n, at)) => {
                let sizes: Vec<u32> = [&bs.read, &bs.write]
                    .into_iter()
                    .flat_map(|b| match b {
                        crate::BlockSize::Fixed(n) => vec![*n],
                        crate::BlockSize::Split(t) => t.iter().map(|e| e.len).collect(),
                    })
                    .collect();
                if *n < 64 && kind != VerifyKind::Pattern {
                    return Err(self.option_err_at(
                        at,
                        "verify_interval",
                        format!(
                            "{n} bytes cannot hold a verify header (64 bytes) in job '{name}'; \
                             give at least verify_interval=64"
                        ),
                    ));
                }
                if let Some(b) = sizes.iter().find(|&&b| b % n != 0) {
                    return Err(self.option_err_at(
                        at,
                        "verify_interval",
                        format!(
                            "{n} does not divide the block size {b} of job '{name}'; give an \
                             interval that divides every block size, as fio asks"
                        ),
                    ));
                }
                Some(*n)
            }
            None => None,
        };
        Ok(Some(VerifySpec {
            kind,
            pattern: d.verify_pattern.clone().unwrap_or_default(),
            do_verify: d.do_verify.unwrap_or(true),
            backlog: d.verify_backlog,
            fatal: d.verify_fatal,
            interval,
        }))
    }

    /// The job's steady-state detection: on with `ss_dur` (fio's default criterion
    /// `iops_slope:0.01%`), with at least one interval in the window (two for a slope).
    pub(super) fn steady_of(
        &mut self,
        name: &str,
        line: usize,
        d: &Draft,
    ) -> Result<Option<SteadySpec>, WorkloadError> {
        let Some((dur_ns, dur_at)) = d.ss_dur.clone().filter(|x| x.0 > 0) else {
            if let Some((_, at)) = &d.ss {
                self.warnings.push(format!(
                    "{}:{}: option 'steadystate': no effect without ss_dur (steadystate_duration) in job '{name}', as in fio",
                    at.origin, at.line
                ));
            }
            return Ok(None);
        };
        let (metric, slope, limit, percent) =
            d.ss.as_ref()
                .map_or((SteadyMetric::Iops, true, 0.01, true), |x| x.0);
        let interval_ns = d.ss_interval.as_ref().map_or(1_000_000_000, |x| x.0);
        let spec = SteadySpec {
            metric,
            slope,
            limit,
            percent,
            dur_ns,
            ramp_ns: d.ss_ramp,
            interval_ns,
        };
        let need = if slope { 2 } else { 1 };
        if spec.intervals() as u64 > crate::MAX_STEADY_INTERVALS {
            return Err(self.option_err_at(
                &dur_at,
                "steadystate_duration",
                format!(
                    "ss_dur gives {} check intervals of {} ms in job '{name}'; the limit is {} \
                     (the window keeps a rate per interval): make ss_dur shorter or \
                     steadystate_check_interval longer",
                    spec.intervals(),
                    interval_ns / 1_000_000,
                    crate::MAX_STEADY_INTERVALS
                ),
            ));
        }
        if spec.intervals() < need {
            let _ = line;
            return Err(self.option_err_at(
                &dur_at,
                "steadystate_duration",
                format!(
                    "ss_dur gives {} check interval(s) of {} ms in job '{name}'; {} needs at least {need}: \
                     make ss_dur longer or steadystate_check_interval shorter",
                    spec.intervals(),
                    interval_ns / 1_000_000,
                    spec.describe()
                ),
            ));
        }
        Ok(Some(spec))
    }

    /// The job's shared file name, as fio resolves it: `filename` (in the first
    /// `directory` when relative), or a `filename_format` without `$jobnum` (every
    /// thread of the job uses the same files); `None` when each thread has its own.
    pub(super) fn resolve_file(
        &mut self,
        name: &str,
        d: &Draft,
    ) -> Result<Option<String>, WorkloadError> {
        let dir0 = d.directory.as_ref().and_then(|(v, _)| v.first().cloned());
        let join = |f: &str| match &dir0 {
            Some(dir) if !Path::new(f).is_absolute() => {
                Path::new(dir).join(f).display().to_string()
            }
            _ => f.to_string(),
        };
        if let Some((f, _)) = &d.filename {
            return Ok(Some(join(f)));
        }
        if let Some((fmt, at)) = &d.filename_format {
            let named = fmt
                .replace("$jobname", name)
                .replace("$clientuid", "")
                .replace("$filenum", "0");
            if !fmt.contains("$jobnum") {
                return Ok(Some(join(&named)));
            }
            if !fmt.contains("$jobname") {
                self.warnings.push(format!(
                    "{}:{}: option 'filename_format': '{fmt}' gives threads of different jobs the same file names; \
                     sluice gives each thread of job '{name}' its own region instead (files shared across jobs need filename=)",
                    at.origin, at.line
                ));
            }
            return Ok(None);
        }
        if let Some((_, at)) = &d.directory {
            self.warnings.push(format!(
                "{}:{}: option 'directory': job '{name}' names no file, so each thread gets its own region; \
                 the directory only places named files (`sluice run` creates generated files in --directory)",
                at.origin, at.line
            ));
        }
        Ok(None)
    }
}
