//! A sweep's rows as an aligned text table (stdout) and as CSV (`--csv`): one row per
//! cell, with a group of columns for each job direction that did I/O in any cell.

use std::io::{self, Write};

use sluice_metrics::{fmt_count, fmt_mib, fmt_ns};

use super::rows::{CellRow, Headline};

/// The column groups: each (job, direction) and each class met in `rows`, in the order
/// first met (cells in index order, jobs in file order).
fn groups(rows: &[CellRow]) -> (Vec<(String, String)>, Vec<String>) {
    let mut jobs: Vec<(String, String)> = Vec::new();
    let mut classes: Vec<String> = Vec::new();
    for r in rows {
        for j in &r.jobs {
            let key = (j.job.clone(), j.dir.clone());
            if !jobs.contains(&key) {
                jobs.push(key);
            }
        }
        for c in &r.classes {
            if !classes.contains(&c.class) {
                classes.push(c.class.clone());
            }
        }
    }
    (jobs, classes)
}

/// Whether the table shows the file system: some cell ran on the store (a sweep of raw
/// files alone keeps the table it always had; the CSV and JSON always carry it).
fn shows_fs(rows: &[CellRow]) -> bool {
    rows.iter().any(|r| r.fs != "raw")
}

/// The `--set` targets of the sweep (the same in every row).
fn set_keys(rows: &[CellRow]) -> Vec<String> {
    rows.first()
        .map(|r| r.set.0.iter().map(|(k, _)| k.clone()).collect())
        .unwrap_or_default()
}

fn job_figures<'a>(r: &'a CellRow, job: &str, dir: &str) -> Option<&'a Headline> {
    r.jobs
        .iter()
        .find(|j| j.job == job && j.dir == dir)
        .map(|j| &j.m)
}

const METRICS: [&str; 6] = ["IOPS", "MiB/s", "mean", "p50", "p99", "p99.9"];

fn cells_of(m: Option<&Headline>) -> Vec<String> {
    match m {
        Some(m) => vec![
            fmt_count(m.iops),
            fmt_mib(m.bw_bytes as f64),
            fmt_ns(m.lat_mean_ns),
            fmt_ns(m.lat_p50_ns as f64),
            fmt_ns(m.lat_p99_ns as f64),
            fmt_ns(m.lat_p99_9_ns as f64),
        ],
        None => vec!["-".to_string(); METRICS.len()],
    }
}

/// The table: the cell's parameters, then for each job direction its IOPS, MiB/s and
/// latency mean, p50, p99 and p99.9, under a line naming the job.
pub fn write_table(rows: &[CellRow], out: &mut dyn Write) -> io::Result<()> {
    let (jobs, _) = groups(rows);
    let keys = set_keys(rows);
    let fs = shows_fs(rows);
    let mut header: Vec<String> = ["cell", "device", "policy", "seed"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    if fs {
        header.insert(2, "fs".into());
    }
    // The seed's column (right-aligned, as the cell's).
    let seed_col = if fs { 4 } else { 3 };
    header.extend(keys.iter().cloned());
    let params = header.len();
    for _ in &jobs {
        header.extend(METRICS.iter().map(|s| s.to_string()));
    }
    let mut body: Vec<Vec<String>> = Vec::with_capacity(rows.len());
    for r in rows {
        let mut cells = vec![
            r.cell.to_string(),
            r.device.clone(),
            r.policy.clone(),
            r.seed.to_string(),
        ];
        if fs {
            cells.insert(2, r.fs.clone());
        }
        cells.extend(r.set.0.iter().map(|(_, v)| v.clone()));
        for (job, dir) in &jobs {
            cells.extend(cells_of(job_figures(r, job, dir)));
        }
        body.push(cells);
    }
    let width = |s: &str| s.chars().count();
    let mut w: Vec<usize> = header.iter().map(|h| width(h)).collect();
    for r in &body {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(width(c));
        }
    }
    // A group's label must fit over its columns: widen its first column if not.
    let labels: Vec<String> = jobs.iter().map(|(j, d)| format!("{j} ({d})")).collect();
    for (g, label) in labels.iter().enumerate() {
        let first = params + g * METRICS.len();
        let span: usize =
            w[first..first + METRICS.len()].iter().sum::<usize>() + 2 * (METRICS.len() - 1);
        if width(label) > span {
            w[first] += width(label) - span;
        }
    }
    let line = |cells: &[String], out: &mut dyn Write| -> io::Result<()> {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            let pad = " ".repeat(w[i] - width(c));
            // Parameters left-aligned (names), figures right-aligned.
            if i < params && i != 0 && i != seed_col {
                s.push_str(c);
                s.push_str(&pad);
            } else {
                s.push_str(&pad);
                s.push_str(c);
            }
        }
        writeln!(out, "{}", s.trim_end())
    };
    if !jobs.is_empty() {
        let lead: usize = w[..params].iter().sum::<usize>() + 2 * params;
        let mut s = " ".repeat(lead);
        for (g, label) in labels.iter().enumerate() {
            let first = params + g * METRICS.len();
            let span: usize =
                w[first..first + METRICS.len()].iter().sum::<usize>() + 2 * (METRICS.len() - 1);
            s.push_str(label);
            s.push_str(&" ".repeat(span - width(label) + 2));
        }
        writeln!(out, "{}", s.trim_end())?;
    }
    line(&header, out)?;
    let total: usize = w.iter().sum::<usize>() + 2 * (w.len().saturating_sub(1));
    writeln!(out, "{}", "-".repeat(total))?;
    for r in &body {
        line(r, out)?;
    }
    Ok(())
}

/// One CSV field, quoted when it holds a comma, a quote or a line break (RFC 4180).
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn headline_fields(m: Option<&Headline>) -> Vec<String> {
    match m {
        Some(m) => vec![
            m.iops.to_string(),
            m.bw_bytes.to_string(),
            m.lat_mean_ns.to_string(),
            m.lat_p50_ns.to_string(),
            m.lat_p99_ns.to_string(),
            m.lat_p99_9_ns.to_string(),
        ],
        None => vec![String::new(); 6],
    }
}

const CSV_METRICS: [&str; 6] = [
    "iops",
    "bw_bytes",
    "lat_mean_ns",
    "lat_p50_ns",
    "lat_p99_ns",
    "lat_p99_9_ns",
];

/// The CSV: `cell,device,fs,policy,seed`, `set.KEY` per `--set`, `JOB.DIR.FIGURE` per job
/// direction, `class.CLASS.FIGURE` per class, `jain_index`, `command`; figures in
/// plain units (I/O/s, bytes/s, ns), empty where a cell has no such job direction.
pub fn write_csv(rows: &[CellRow], out: &mut dyn Write) -> io::Result<()> {
    let (jobs, classes) = groups(rows);
    let mut header: Vec<String> = ["cell", "device", "fs", "policy", "seed"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    header.extend(set_keys(rows).iter().map(|k| format!("set.{k}")));
    for (j, d) in &jobs {
        header.extend(CSV_METRICS.iter().map(|m| format!("{j}.{d}.{m}")));
    }
    for c in &classes {
        header.extend(CSV_METRICS.iter().map(|m| format!("class.{c}.{m}")));
    }
    header.push("jain_index".into());
    header.push("command".into());
    let join = |v: Vec<String>| v.iter().map(|s| field(s)).collect::<Vec<_>>().join(",");
    writeln!(out, "{}", join(header))?;
    for r in rows {
        let mut f = vec![
            r.cell.to_string(),
            r.device.clone(),
            r.fs.clone(),
            r.policy.clone(),
            r.seed.to_string(),
        ];
        f.extend(r.set.0.iter().map(|(_, v)| v.clone()));
        for (j, d) in &jobs {
            f.extend(headline_fields(job_figures(r, j, d)));
        }
        for c in &classes {
            let m = r.classes.iter().find(|x| &x.class == c).map(|x| &x.m);
            f.extend(headline_fields(m));
        }
        f.push(r.jain_index.to_string());
        f.push(r.command.clone());
        writeln!(out, "{}", join(f))?;
    }
    Ok(())
}
