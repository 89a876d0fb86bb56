//! fio's terse output, version 3 (`--output-format=terse`): one line of semicolon
//! separated fields per job, in the order fio's manual gives ("TERSE OUTPUT"):
//!
//! `3; fio version; jobname; groupid; error;` then for READ and WRITE: total KiB,
//! bandwidth KiB/s, IOPS, runtime ms; submission latency min, max, mean, stdev (µs);
//! completion latency min, max, mean, stdev (µs); 20 completion-latency percentiles
//! (`P%=µs`, unused slots `0%=0`); total latency min, max, mean, stdev (µs); bandwidth
//! min, max, aggregate percent, mean, stdev (KiB/s); then CPU user %, system %, context
//! switches, major and minor faults; I/O depth distribution (7 fields); latency
//! distribution in µs (10) and ms (12). Version 3 has no trim section; sluice writes no
//! disk-utilisation fields (it reads no disk statistics) and, as it does not count the
//! depth each I/O was issued at, the depth distribution is all `0.0%`. A job with
//! `continue_on_error` ends its line with `total_err;first_error`, as fio's.

use crate::report::{DirReport, JobReport, LatReport, RunReport};
use std::fmt::Write as _;

/// fio's terse slots for completion-latency percentiles.
const PCT_SLOTS: usize = 20;

fn lat_us(out: &mut String, l: &LatReport) {
    let _ = write!(
        out,
        ";{};{};{:.6};{:.6}",
        l.min / 1000,
        l.max / 1000,
        l.mean / 1000.0,
        l.stddev / 1000.0
    );
}

fn dir(out: &mut String, d: &DirReport) {
    let _ = write!(
        out,
        ";{};{};{};{}",
        d.io_kbytes,
        d.bw,
        d.iops.round() as u64,
        d.runtime
    );
    lat_us(out, &d.slat_ns);
    lat_us(out, &d.clat_ns);
    for i in 0..PCT_SLOTS {
        match d.clat_ns.percentile.0.get(i) {
            Some((p, v)) => {
                let _ = write!(out, ";{p:.6}%={}", v / 1000);
            }
            None => out.push_str(";0%=0"),
        }
    }
    lat_us(out, &d.lat_ns);
    let _ = write!(
        out,
        ";{};{};{:.6}%;{:.6};{:.6}",
        d.bw_min, d.bw_max, d.bw_agg, d.bw_mean, d.bw_dev
    );
}

fn job_line(out: &mut String, groupid: usize, j: &JobReport) {
    let _ = write!(
        out,
        "3;{};{};{};{}",
        crate::report::VERSION,
        j.jobname,
        groupid,
        j.error
    );
    dir(out, &j.read);
    dir(out, &j.write);
    let _ = write!(
        out,
        ";{:.6}%;{:.6}%;{};{};{}",
        j.usr_cpu, j.sys_cpu, j.ctx, j.majf, j.minf
    );
    for _ in 0..7 {
        out.push_str(";0.0%");
    }
    for b in [&j.latency_us, &j.latency_ms] {
        for (_, p) in &b.0 {
            let _ = write!(out, ";{p:.2}%");
        }
    }
    // fio adds the errors it went on after, for a job with `continue_on_error`.
    if let (Some(total), Some(first)) = (j.total_err, j.first_error) {
        let _ = write!(out, ";{total};{first}");
    }
    out.push('\n');
}

/// Every job of every run as fio's terse v3 lines (`groupid`: the run's index, as in
/// the JSON document).
pub fn terse(runs: &[RunReport]) -> String {
    let mut out = String::new();
    for (g, r) in runs.iter().enumerate() {
        for j in &r.entries {
            job_line(&mut out, g, j);
        }
    }
    out
}
