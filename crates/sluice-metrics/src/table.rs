//! The run report as text tables: jobs, classes, flows and fairness.

use crate::report::{DirReport, JobReport, LatReport, RunReport};
use std::collections::{HashMap, HashSet};
use std::io::{self, Write};

use crate::Table;

/// A latency in ns with a unit chosen for readability: `850ns`, `97.3µs`, `1.25ms`, `2.00s`.
pub fn fmt_ns(ns: f64) -> String {
    if !ns.is_finite() {
        return "-".into();
    }
    let (v, unit) = if ns < 1e3 {
        return format!("{ns:.0}ns");
    } else if ns < 1e6 {
        (ns / 1e3, "µs")
    } else if ns < 1e9 {
        (ns / 1e6, "ms")
    } else {
        (ns / 1e9, "s")
    };
    if v < 10.0 {
        format!("{v:.2}{unit}")
    } else if v < 100.0 {
        format!("{v:.1}{unit}")
    } else {
        format!("{v:.0}{unit}")
    }
}

/// A count with a readable unit, as the tables write IOPS: `9876`, `12.3k`, `12.35M`.
pub fn fmt_count(v: f64) -> String {
    if v < 10_000.0 {
        format!("{v:.0}")
    } else if v < 10_000_000.0 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{:.2}M", v / 1e6)
    }
}

/// Bytes per second as MiB/s, as the tables write bandwidth: `9.87`, `123.4`.
pub fn fmt_mib(bytes_per_s: f64) -> String {
    let v = bytes_per_s / (1024.0 * 1024.0);
    if v < 10.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.1}")
    }
}

fn fmt_pct(v: f64) -> String {
    format!("{:.1}%", v * 100.0)
}

fn pct(l: &LatReport, p: f64) -> String {
    l.percentile
        .get(p)
        .map(|v| fmt_ns(v as f64))
        .unwrap_or_else(|| "-".into())
}

fn lat_cells(l: &LatReport) -> Vec<String> {
    if l.n == 0 {
        return vec!["-".into(); 5];
    }
    vec![
        fmt_ns(l.mean),
        pct(l, 50.0),
        pct(l, 99.0),
        pct(l, 99.9),
        fmt_ns(l.max as f64),
    ]
}

fn mean_cell(l: &LatReport) -> String {
    if l.n == 0 {
        "-".into()
    } else {
        fmt_ns(l.mean)
    }
}

fn dir_cells(d: &DirReport) -> Vec<String> {
    let mut c = vec![fmt_count(d.iops), fmt_mib(d.bw_bytes as f64)];
    c.extend(lat_cells(&d.lat_ns));
    c.push(mean_cell(&d.sched_ns));
    c.push(mean_cell(&d.device_ns));
    c.push(mean_cell(&d.post_ns));
    c
}

/// Names in first-seen order over all runs.
fn union_names<'a>(lists: impl Iterator<Item = Vec<&'a str>>) -> Vec<&'a str> {
    let mut names: Vec<&str> = Vec::new();
    for list in lists {
        for n in list {
            if !names.contains(&n) {
                names.push(n);
            }
        }
    }
    names
}

/// Print the runs as aligned tables: jobs (per direction with I/O: IOPS, MiB/s, latency
/// mean/p50/p99/p99.9/max, and the mean scheduler/device/post-device parts), classes,
/// flows (weight, MiB/s, share, weight share, share error) and fairness. With several
/// runs every row is repeated once per policy, next to each other, so the policies
/// compare line by line.
pub fn print_table(runs: &[RunReport], out: &mut dyn Write) -> io::Result<()> {
    if runs.is_empty() {
        return writeln!(out, "(no runs)");
    }
    let multi = runs.len() > 1;
    for r in runs {
        writeln!(
            out,
            "policy {}: {:.3} s measured, {} jobs, {} flows",
            r.policy,
            r.duration_ns as f64 / 1e9,
            r.entries.len(),
            r.flows.len()
        )?;
    }
    writeln!(out)?;

    // Jobs.
    let mut cols: Vec<(&'static str, bool)> =
        vec![("job", false), ("class", false), ("dir", false)];
    if multi {
        cols.push(("policy", false));
    }
    cols.extend([
        ("IOPS", true),
        ("MiB/s", true),
        ("lat mean", true),
        ("p50", true),
        ("p99", true),
        ("p99.9", true),
        ("max", true),
        ("sched", true),
        ("device", true),
        ("post", true),
    ]);
    // Failed I/Os and checks (`failed_ios`: under `--faults`, or a real device's
    // errors; fio's `err=` gives the errno instead), a column only when a job has some.
    let errors = runs
        .iter()
        .any(|r| r.entries.iter().any(|j| j.failed_ios > 0));
    if errors {
        cols.push(("err", true));
    }
    let mut t = Table::new(&cols, multi);
    // fio's entries: a job's threads reported one by one share its name; the k-th
    // entry of a name in one run stands beside the k-th of it in another.
    let mut keys: Vec<(&str, usize)> = Vec::new();
    let mut known: HashSet<(&str, usize)> = HashSet::new();
    let mut by_key: Vec<HashMap<(&str, usize), &JobReport>> = Vec::new();
    for r in runs {
        let mut seen: HashMap<&str, usize> = HashMap::new();
        let mut m = HashMap::new();
        for j in &r.entries {
            let n = seen.entry(j.jobname.as_str()).or_default();
            let key = (j.jobname.as_str(), *n);
            *n += 1;
            m.insert(key, j);
            if known.insert(key) {
                keys.push(key);
            }
        }
        by_key.push(m);
    }
    for &(name, k) in &keys {
        let per_run: Vec<_> = runs
            .iter()
            .zip(&by_key)
            .map(|(r, m)| (r, m.get(&(name, k)).copied()))
            .collect();
        let class = per_run
            .iter()
            .find_map(|(_, j)| j.map(|j| j.class.name()))
            .unwrap_or("-");
        let mut dirs: Vec<&str> = ["read", "write", "trim", "sync"]
            .into_iter()
            .enumerate()
            .filter(|(i, _)| {
                per_run
                    .iter()
                    .any(|(_, j)| j.is_some_and(|j| j.dirs()[*i].1.total_ios > 0))
            })
            .map(|(_, d)| d)
            .collect();
        if dirs.is_empty() {
            dirs.push("read");
        }
        t.rule();
        for dir in dirs {
            for (r, j) in &per_run {
                let mut row = vec![name.to_string(), class.to_string(), dir.to_string()];
                if multi {
                    row.push(r.policy.clone());
                }
                match j {
                    Some(j) => {
                        let d = j.dirs().into_iter().find(|(n, _)| *n == dir).unwrap().1;
                        row.extend(dir_cells(d));
                        if errors {
                            row.push(j.failed_ios.to_string());
                        }
                    }
                    None => row.extend(vec!["-".to_string(); 10 + usize::from(errors)]),
                }
                t.row(row);
            }
        }
    }
    writeln!(
        out,
        "Jobs (latency = reaped - submit; sched/device/post = mean parts{})",
        if errors { "; err = failed I/Os" } else { "" }
    )?;
    t.write(out)?;
    writeln!(out)?;

    if classes_add_something(runs) {
        print_classes(runs, multi, out)?;
    }
    print_flows(runs, multi, out)?;
    print_fairness(runs, out)
}

/// Whether the Classes table says more than the Jobs table: a class holds several
/// jobs, or requests of another class than their job's (a promoted request).
fn classes_add_something(runs: &[RunReport]) -> bool {
    runs.iter().any(|r| {
        r.classes.iter().any(|c| {
            let jobs: Vec<_> = r.entries.iter().filter(|j| j.class == c.class).collect();
            let ios: u64 = jobs
                .iter()
                .flat_map(|j| j.dirs())
                .map(|(_, d)| d.total_ios)
                .sum();
            jobs.len() > 1 || ios != c.ios
        })
    })
}

fn print_classes(runs: &[RunReport], multi: bool, out: &mut dyn Write) -> io::Result<()> {
    let mut cols: Vec<(&'static str, bool)> = vec![("class", false)];
    if multi {
        cols.push(("policy", false));
    }
    cols.extend([
        ("IOPS", true),
        ("MiB/s", true),
        ("lat mean", true),
        ("p50", true),
        ("p99", true),
        ("p99.9", true),
        ("max", true),
        ("sched", true),
        ("device", true),
        ("post", true),
    ]);
    let mut t = Table::new(&cols, multi);
    for c in sluice_core::IoClass::ALL {
        if !runs.iter().any(|r| r.classes.iter().any(|k| k.class == c)) {
            continue;
        }
        t.rule();
        for r in runs {
            let mut row = vec![c.name().to_string()];
            if multi {
                row.push(r.policy.clone());
            }
            match r.classes.iter().find(|k| k.class == c) {
                Some(k) => {
                    row.push(fmt_count(k.iops));
                    row.push(fmt_mib(k.bw_bytes as f64));
                    row.extend(lat_cells(&k.lat_ns));
                    row.push(mean_cell(&k.sched_ns));
                    row.push(mean_cell(&k.device_ns));
                    row.push(mean_cell(&k.post_ns));
                }
                None => row.extend(vec!["-".to_string(); 10]),
            }
            t.row(row);
        }
    }
    writeln!(out, "Classes")?;
    t.write(out)?;
    writeln!(out)
}

/// The flows: those that share by weight first (their shares add up to 100 %), the
/// latency flows (every job critical) apart after them, with their part of all bytes.
fn print_flows(runs: &[RunReport], multi: bool, out: &mut dyn Write) -> io::Result<()> {
    let mut cols: Vec<(&'static str, bool)> = vec![("flow", false), ("weight", true)];
    if multi {
        cols.push(("policy", false));
    }
    cols.extend([
        ("IOPS", true),
        ("MiB/s", true),
        ("share", true),
        ("weight share", true),
        ("share error", true),
    ]);
    let mut t = Table::new(&cols, multi);
    let names = union_names(
        runs.iter()
            .map(|r| r.flows.iter().map(|f| f.name.as_str()).collect()),
    );
    let latency = |name: &str| {
        runs.iter()
            .any(|r| r.flows.iter().any(|f| f.name == name && f.latency_only))
    };
    let (latency_flows, sharing): (Vec<&str>, Vec<&str>) = names.iter().partition(|n| latency(n));
    for name in sharing.iter().chain(&latency_flows) {
        t.rule();
        for r in runs {
            let f = r.flows.iter().find(|f| f.name == *name);
            let mut row = vec![
                name.to_string(),
                f.map_or("-".into(), |f| f.weight.to_string()),
            ];
            if multi {
                row.push(r.policy.clone());
            }
            match f {
                Some(f) if f.active && f.latency_only => row.extend([
                    fmt_count(f.iops),
                    fmt_mib(f.bw_bytes as f64),
                    "-".into(),
                    "-".into(),
                    format!("latency ({} of all)", fmt_pct(f.bytes_fraction)),
                ]),
                Some(f) if f.active => row.extend([
                    fmt_count(f.iops),
                    fmt_mib(f.bw_bytes as f64),
                    fmt_pct(f.share),
                    fmt_pct(f.weight_share),
                    format!("{:+.1}%", f.share_error * 100.0),
                ]),
                Some(_) => row.extend([
                    "0".into(),
                    "0".into(),
                    "idle".into(),
                    "-".into(),
                    "-".into(),
                ]),
                None => row.extend(vec!["-".to_string(); 5]),
            }
            t.row(row);
        }
    }
    writeln!(
        out,
        "Flows (share of the bytes of the flows sharing by weight vs. their weight share; \
         latency flows apart)"
    )?;
    t.write(out)?;
    writeln!(out)
}

/// Jain's index per run, over the active flows that share by weight; left out when no
/// run has two of them (an index over one flow says nothing).
fn print_fairness(runs: &[RunReport], out: &mut dyn Write) -> io::Result<()> {
    if runs.iter().all(|r| r.fairness.active_flows < 2) {
        return Ok(());
    }
    let mut t = Table::new(
        &[
            ("policy", false),
            ("Jain index", true),
            ("active flows", true),
            ("max |share error|", true),
        ],
        false,
    );
    for r in runs {
        t.row(vec![
            r.policy.clone(),
            if r.fairness.active_flows < 2 {
                "-".into()
            } else {
                format!("{:.4}", r.fairness.jain_index)
            },
            r.fairness.active_flows.to_string(),
            fmt_pct(r.fairness.max_abs_share_error),
        ]);
    }
    writeln!(
        out,
        "Fairness (Jain's index over bw/weight of the active flows sharing by weight)"
    )?;
    t.write(out)
}
