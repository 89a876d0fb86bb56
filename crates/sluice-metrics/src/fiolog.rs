//! fio's log files (`write_bw_log`, `write_lat_log`, `write_iops_log`, `log_avg_msec`,
//! `per_job_logs`), built from the collector's samples in both worlds — from virtual
//! time in the simulator, so the same inputs give the same files.
//!
//! # Format (fio's default columns)
//! One line per entry: `time, value, direction, block size, priority`, where `time`
//! is in ms since the job's start (after `ramp_time`, as fio resets its epoch),
//! `direction` is 0 for reads and 1 for writes (flushes are not logged, as in fio), and
//! `priority` is 1 for a real-time job (`prioclass=1`), else 0 (fio's default column
//! without `log_prio`). fio's tools (`fio2gnuplot`, `fiologparser`) read these files.
//!
//! # Values
//! * `clat` = reaped − dispatch, `slat` = dispatch − submit, `lat` = reaped − submit
//!   (ns; `slat + clat = lat`, as fio's);
//! * without `log_avg_msec`, an entry per I/O at its completion: the latencies; for
//!   `bw`, the I/O's bytes over its `lat`, `bytes × 10⁶ / lat_ns` (fio's per-I/O rate);
//!   for `iops`, 1;
//! * with `log_avg_msec=W`, an entry per window of W ms and direction, stamped with the
//!   window's end (the job's end for the last one; fio stamps it with the time of the
//!   I/O that closes the window): latencies average the window's I/Os (rounded, block
//!   size column 0, windows without I/O left out, as fio); `bw` is the window's KiB/s
//!   and `iops` its I/Os per second (block size column: the direction's smallest block
//!   size), 0 for a window without I/O in a direction the job does.
//!
//! # Files
//! `PREFIX_bw.N.log`, `PREFIX_iops.N.log`, `PREFIX_clat.N.log`, `PREFIX_slat.N.log`,
//! `PREFIX_lat.N.log`, where `N` is fio's thread number of the job's first thread
//! (1-based over the run); with `per_job_logs=0`, `PREFIX_bw.log` … for every job with
//! that prefix. The threads of one job share its file (fio writes one per thread).
//! A run keeps at most [`MAX_LOG_ENTRIES`] entries; past that the logs are cut and say
//! so ([`FioLogFile::truncated`]).

use std::io::Write;
use std::path::{Path, PathBuf};

use sluice_core::{Nanos, Op};
use sluice_workload::JobSpec;

use crate::{MetricsError, Sample};

/// Entries a run keeps over all its logs.
pub const MAX_LOG_ENTRIES: usize = 1 << 24;

/// One log line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogEntry {
    /// ms since the job's start.
    pub time_ms: u64,
    /// The value (ns, KiB/s or I/Os).
    pub value: u64,
    /// 0 read, 1 write.
    pub ddir: u8,
    /// Block size column.
    pub bs: u64,
    /// Priority column (1: real-time job).
    pub prio: u8,
}

/// One log file's name and lines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FioLogFile {
    /// The path, as fio names it (relative to the current directory unless the
    /// prefix is absolute).
    pub path: String,
    /// The lines, in time order.
    pub entries: Vec<LogEntry>,
    /// Entries were left out: the run reached [`MAX_LOG_ENTRIES`].
    pub truncated: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Bw,
    Iops,
    Clat,
    Slat,
    Lat,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Bw => "bw",
            Kind::Iops => "iops",
            Kind::Clat => "clat",
            Kind::Slat => "slat",
            Kind::Lat => "lat",
        }
    }
}

/// Window sums per direction: (sum of values or bytes, count).
type Windows = [Vec<(u128, u64)>; 3];

#[derive(Clone, Debug)]
struct Series {
    kind: Kind,
    prefix: String,
    /// Per-I/O entries (without averaging).
    entries: Vec<LogEntry>,
    windows: Windows,
}

#[derive(Clone, Debug)]
struct JobLogs {
    series: Vec<Series>,
    avg_ms: u64,
    per_job: bool,
    file_no: u32,
    prio: u8,
    /// Directions the job issues, and their smallest block sizes.
    dirs: [Option<u64>; 3],
}

/// The logs of one run.
#[derive(Clone, Debug)]
pub(crate) struct FioLogs {
    jobs: Vec<Option<JobLogs>>,
    kept: usize,
    truncated: bool,
}

impl FioLogs {
    /// The logs `jobs` ask for; `None` when none does.
    pub(crate) fn for_jobs(jobs: &[JobSpec]) -> Option<FioLogs> {
        if !jobs.iter().any(|j| j.logs.any()) {
            return None;
        }
        let mut thread_no = 1u32;
        let plans = jobs
            .iter()
            .map(|j| {
                let file_no = thread_no;
                thread_no += j.numjobs;
                if !j.logs.any() {
                    return None;
                }
                let mut series = Vec::new();
                let mut add = |kind, prefix: &Option<String>| {
                    if let Some(p) = prefix {
                        series.push(Series {
                            kind,
                            prefix: p.clone(),
                            entries: Vec::new(),
                            windows: [Vec::new(), Vec::new(), Vec::new()],
                        });
                    }
                };
                add(Kind::Bw, &j.logs.bw);
                add(Kind::Iops, &j.logs.iops);
                add(Kind::Clat, &j.logs.lat);
                add(Kind::Slat, &j.logs.lat);
                add(Kind::Lat, &j.logs.lat);
                Some(JobLogs {
                    series,
                    avg_ms: j.logs.avg_msec,
                    per_job: j.logs.per_job,
                    file_no,
                    prio: u8::from(j.prioclass == Some(1)),
                    dirs: [
                        j.rw.reads().then(|| j.bs.read.min_len() as u64),
                        j.rw.writes().then(|| j.bs.write.min_len() as u64),
                        j.rw.trims().then(|| j.bs.trim.min_len() as u64),
                    ],
                })
            })
            .collect();
        Some(FioLogs {
            jobs: plans,
            kept: 0,
            truncated: false,
        })
    }

    /// Log one counted sample of its job, whose window started at `start_ns`.
    #[inline]
    pub(crate) fn record(&mut self, s: &Sample, start_ns: Nanos) {
        let Some(Some(j)) = self.jobs.get_mut(s.job) else {
            return;
        };
        let ddir = match s.op {
            Op::Read => 0u8,
            Op::Write => 1,
            // fio's DDIR_TRIM.
            Op::Trim => 2,
            Op::Flush => return,
        };
        let t_ms = s.reaped_ns.saturating_sub(start_ns) / 1_000_000;
        let lat = s.reaped_ns.saturating_sub(s.submit_ns);
        for se in &mut j.series {
            let value = match se.kind {
                Kind::Clat => s.reaped_ns.saturating_sub(s.dispatch_ns),
                Kind::Slat => s.dispatch_ns.saturating_sub(s.submit_ns),
                Kind::Lat => lat,
                Kind::Bw if j.avg_ms > 0 => s.bytes as u64,
                Kind::Bw => (s.bytes as u64 * 1_000_000).checked_div(lat).unwrap_or(0),
                Kind::Iops => 1,
            };
            if let Some(w) = t_ms.checked_div(j.avg_ms) {
                // Averaged: the window of this completion.
                let w = w as usize;
                let v = &mut se.windows[ddir as usize];
                if w >= v.len() {
                    if self.kept + (w + 1 - v.len()) > MAX_LOG_ENTRIES {
                        self.truncated = true;
                        continue;
                    }
                    self.kept += w + 1 - v.len();
                    v.resize(w + 1, (0, 0));
                }
                v[w].0 += value as u128;
                v[w].1 += 1;
            } else {
                if self.kept >= MAX_LOG_ENTRIES {
                    self.truncated = true;
                    continue;
                }
                self.kept += 1;
                se.entries.push(LogEntry {
                    time_ms: t_ms,
                    value,
                    ddir,
                    bs: s.bytes as u64,
                    prio: j.prio,
                });
            }
        }
    }

    /// The files, given each job's length in ns (its window start to its end).
    pub(crate) fn finish(self, job_len_ns: &[Nanos]) -> Vec<FioLogFile> {
        let mut files: Vec<FioLogFile> = Vec::new();
        for (ji, j) in self.jobs.into_iter().enumerate() {
            let Some(j) = j else { continue };
            let len_ms = job_len_ns.get(ji).copied().unwrap_or(0) / 1_000_000;
            let mut j = j;
            let series = std::mem::take(&mut j.series);
            for se in series {
                let mut entries = if j.avg_ms > 0 {
                    windows_to_entries(&se, &j, len_ms)
                } else {
                    let mut e = se.entries;
                    // Workers hand samples over in batches: put them in time order.
                    e.sort_by_key(|x| x.time_ms);
                    e
                };
                let path = if j.per_job {
                    format!("{}_{}.{}.log", se.prefix, se.kind.name(), j.file_no)
                } else {
                    format!("{}_{}.log", se.prefix, se.kind.name())
                };
                match files.iter_mut().find(|f| f.path == path) {
                    // per_job_logs=0: the jobs of one prefix append to one file.
                    Some(f) => f.entries.append(&mut entries),
                    None => files.push(FioLogFile {
                        path,
                        entries,
                        truncated: self.truncated,
                    }),
                }
            }
        }
        files
    }
}

fn windows_to_entries(se: &Series, j: &JobLogs, len_ms: u64) -> Vec<LogEntry> {
    let avg = j.avg_ms;
    let n_windows = len_ms
        .div_ceil(avg)
        .max(se.windows.iter().map(|w| w.len() as u64).max().unwrap_or(0));
    let mut out = Vec::new();
    for w in 0..n_windows as usize {
        let end_ms = ((w as u64 + 1) * avg).min(len_ms.max(w as u64 * avg + 1));
        let span_ms = end_ms - w as u64 * avg;
        for ddir in 0..3 {
            let (sum, n) = se.windows[ddir].get(w).copied().unwrap_or((0, 0));
            let entry = |value: u64, bs: u64| LogEntry {
                time_ms: end_ms,
                value,
                ddir: ddir as u8,
                bs,
                prio: j.prio,
            };
            match se.kind {
                Kind::Clat | Kind::Slat | Kind::Lat => {
                    if n > 0 {
                        out.push(entry(((sum + n as u128 / 2) / n as u128) as u64, 0));
                    }
                }
                Kind::Bw | Kind::Iops => {
                    let Some(bs) = j.dirs[ddir] else { continue };
                    let value = if se.kind == Kind::Bw {
                        sum * 1000 / span_ms as u128 / 1024
                    } else {
                        n as u128 * 1000 / span_ms as u128
                    };
                    out.push(entry(value as u64, bs));
                }
            }
        }
    }
    out
}

/// Write the log files (fio's format); with `suffix`, `.SUFFIX` goes before `.log`
/// (several policies in one command). Returns the paths written.
pub fn write_fio_logs(
    files: &[FioLogFile],
    suffix: Option<&str>,
) -> Result<Vec<PathBuf>, MetricsError> {
    let mut written = Vec::new();
    for f in files {
        let path = match suffix {
            Some(s) => {
                let stem = f.path.strip_suffix(".log").unwrap_or(&f.path);
                PathBuf::from(format!("{stem}.{s}.log"))
            }
            None => PathBuf::from(&f.path),
        };
        let write_err = |source| MetricsError::Write {
            path: path.clone(),
            source,
        };
        let mut out = std::io::BufWriter::new(std::fs::File::create(&path).map_err(write_err)?);
        for e in &f.entries {
            writeln!(out, "{}", format_entry(e)).map_err(write_err)?;
        }
        out.flush().map_err(write_err)?;
        written.push(path);
    }
    Ok(written)
}

/// One line of a log file, as fio writes it.
pub fn format_entry(e: &LogEntry) -> String {
    format!(
        "{}, {}, {}, {}, {}",
        e.time_ms, e.value, e.ddir, e.bs, e.prio
    )
}

/// The directory a log prefix writes into (`.` for a bare prefix).
pub fn log_dir(prefix: &str) -> &Path {
    match Path::new(prefix).parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Collector, RunSetup};
    use sluice_core::IoClass;
    use sluice_workload::{flows_of, parse_str, ParseOptions};

    const MS: u64 = 1_000_000;

    fn sample(job: usize, op: Op, bytes: u32, submit: u64, dispatch: u64, reaped: u64) -> Sample {
        Sample {
            job,
            thread: 0,
            op,
            class: IoClass::Normal,
            bytes,
            submit_ns: submit,
            admit_ns: submit,
            dispatch_ns: dispatch,
            device_done_ns: reaped,
            reaped_ns: reaped,
            ok: true,
        }
    }

    fn collector(text: &str) -> Collector {
        let jobs = parse_str(text, "t.fio", &ParseOptions::default())
            .unwrap()
            .jobs;
        let (flows, job_flow) = flows_of(&jobs).unwrap();
        Collector::new(RunSetup::for_jobs(&jobs, &flows, &job_flow, None)).with_fio_logs(&jobs)
    }

    fn lines(f: &FioLogFile) -> Vec<String> {
        f.entries.iter().map(format_entry).collect()
    }

    #[test]
    fn an_entry_per_io_in_fios_columns() {
        let mut c = collector(
            "[a]\nnumjobs=2\n[b]\nrw=randwrite\nprioclass=1\nwrite_lat_log=x/b\nwrite_bw_log\nwrite_iops_log=i\n",
        );
        // Job b, fio's thread 3 (job a has threads 1 and 2).
        c.record(&sample(1, Op::Write, 4096, 0, 10_000, 50_000));
        c.record(&sample(
            1,
            Op::Write,
            8192,
            2 * MS,
            2 * MS + 5_000,
            2 * MS + 105_000,
        ));
        c.record(&sample(1, Op::Flush, 0, 3 * MS, 3 * MS, 3 * MS + 10));
        c.record(&sample(0, Op::Read, 4096, 0, 0, 10));
        let r = c.finish(4 * MS, "none");
        let names: Vec<&str> = r.logs.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            names,
            [
                "b_bw.3.log",
                "i_iops.3.log",
                "x/b_clat.3.log",
                "x/b_slat.3.log",
                "x/b_lat.3.log"
            ]
        );
        // time ms, value, direction (1: write), block size, priority (1: real time).
        assert_eq!(
            lines(&r.logs[2]),
            ["0, 40000, 1, 4096, 1", "2, 100000, 1, 8192, 1"]
        );
        assert_eq!(
            lines(&r.logs[3]),
            ["0, 10000, 1, 4096, 1", "2, 5000, 1, 8192, 1"]
        );
        assert_eq!(
            lines(&r.logs[4]),
            ["0, 50000, 1, 4096, 1", "2, 105000, 1, 8192, 1"]
        );
        // bw: bytes × 10⁶ / lat ns (4096 B in 50 µs: 81920 KB/s); iops: 1 per I/O.
        assert_eq!(
            lines(&r.logs[0]),
            ["0, 81920, 1, 4096, 1", "2, 78019, 1, 8192, 1"]
        );
        assert_eq!(lines(&r.logs[1]), ["0, 1, 1, 4096, 1", "2, 1, 1, 8192, 1"]);
    }

    #[test]
    fn averaged_windows_and_one_file_for_all_jobs() {
        let mut c = collector(
            "[global]\nlog_avg_msec=10\nper_job_logs=0\nwrite_bw_log=all\nwrite_lat_log=all\nbs=4k\n\
             [a]\n[b]\nrw=randrw\nbs=4k,64k\n",
        );
        // Job a: two reads in window 0 (lat 10 and 21 µs), none in window 1, one in 2.
        c.record(&sample(0, Op::Read, 4096, MS, MS, MS + 10_000));
        c.record(&sample(0, Op::Read, 4096, 2 * MS, 2 * MS, 2 * MS + 21_000));
        c.record(&sample(
            0,
            Op::Read,
            4096,
            21 * MS,
            21 * MS,
            21 * MS + 30_000,
        ));
        c.record(&sample(1, Op::Write, 65536, MS, MS, 2 * MS));
        c.job_done(0, 25 * MS);
        c.job_done(1, 10 * MS);
        let r = c.finish(25 * MS, "none");
        let bw = r.logs.iter().find(|f| f.path == "all_bw.log").unwrap();
        // Job a: 8 KiB in 10 ms = 800 KiB/s, 0, then 4 KiB over the last 5 ms; job b
        // appends its one window with both its directions (reads at 0).
        assert_eq!(
            lines(bw),
            [
                "10, 800, 0, 4096, 0",
                "20, 0, 0, 4096, 0",
                "25, 800, 0, 4096, 0",
                "10, 0, 0, 4096, 0",
                "10, 6400, 1, 65536, 0",
            ]
        );
        let lat = r.logs.iter().find(|f| f.path == "all_lat.log").unwrap();
        // Means rounded as fio; windows without I/O left out; block size 0.
        assert_eq!(
            lines(lat)[..2],
            ["10, 15500, 0, 0, 0", "25, 30000, 0, 0, 0"]
        );
    }
}
