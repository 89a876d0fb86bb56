//! A sweep's results: one row per cell (its parameters, the headline figures of each
//! job and class, the command that replays it), the JSON file that holds them, and the
//! merge of cell files written by separate processes.

use std::collections::BTreeMap;
use std::path::Path;

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sluice_metrics::{DirReport, LatReport, RunReport};

use crate::cli::CliError;

/// The headline figures of one job direction or one class.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Headline {
    /// I/Os per second.
    pub iops: f64,
    /// Bytes per second.
    pub bw_bytes: u64,
    /// Mean completion latency (submit → reaped).
    pub lat_mean_ns: f64,
    /// Its median.
    pub lat_p50_ns: u64,
    /// Its 99th percentile.
    pub lat_p99_ns: u64,
    /// Its 99.9th percentile.
    pub lat_p99_9_ns: u64,
}

impl Headline {
    fn of(iops: f64, bw_bytes: u64, lat: &LatReport) -> Headline {
        let p = |q: f64| lat.percentile.get(q).unwrap_or(0);
        Headline {
            iops,
            bw_bytes,
            lat_mean_ns: lat.mean,
            lat_p50_ns: p(50.0),
            lat_p99_ns: p(99.0),
            lat_p99_9_ns: p(99.9),
        }
    }
}

/// One direction of one job.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobRow {
    /// The job's name.
    pub job: String,
    /// `read`, `write` or `sync` (fio's sync section: fsyncs and fdatasyncs).
    pub dir: String,
    /// Its figures.
    #[serde(flatten)]
    pub m: Headline,
}

/// One class of requests (critical, normal, idle).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClassRow {
    /// The class's name.
    pub class: String,
    /// Its figures.
    #[serde(flatten)]
    pub m: Headline,
}

/// The `--set` values of a cell, in the order of the sweep's axes (a JSON object that
/// keeps that order).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Settings(pub Vec<(String, String)>);

impl Serialize for Settings {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for Settings {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Settings, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Settings;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object of option → value strings")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Settings, A::Error> {
                let mut v = Vec::new();
                while let Some(e) = a.next_entry::<String, String>()? {
                    v.push(e);
                }
                Ok(Settings(v))
            }
        }
        d.deserialize_map(V)
    }
}

/// One cell of a sweep: its parameters, figures and replay command.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CellRow {
    /// Its index in the sweep (cross-product order).
    pub cell: usize,
    /// The simulated device (`--device`).
    pub device: String,
    /// The file system (`--fs`: `raw`, or the store's commit mode); `raw` in files
    /// written before sweeps had it.
    #[serde(default = "raw")]
    pub fs: String,
    /// The policy (`--policy`).
    pub policy: String,
    /// The seed (`--seed`).
    pub seed: u64,
    /// The job options set (`--set`).
    pub set: Settings,
    /// Each job's directions that did I/O, in job order (read before write).
    pub jobs: Vec<JobRow>,
    /// Each class that did I/O.
    pub classes: Vec<ClassRow>,
    /// Jain's fairness index over the active flows' bandwidth / weight.
    pub jain_index: f64,
    /// The `sluice sim` command that runs this cell alone and prints its full report.
    pub command: String,
}

fn raw() -> String {
    "raw".into()
}

impl CellRow {
    /// The headline figures of `report` (directions and classes without I/O left out).
    pub fn figures(report: &RunReport) -> (Vec<JobRow>, Vec<ClassRow>, f64) {
        let mut jobs = Vec::new();
        for j in &report.jobs {
            // fio's sync section: the job's fsyncs and fdatasyncs (on the store, or
            // `fsync=N` on raw files), each one latency.
            for (dir, d) in [("read", &j.read), ("write", &j.write), ("sync", &j.sync)] {
                if d.total_ios > 0 {
                    jobs.push(JobRow {
                        job: j.jobname.clone(),
                        dir: dir.to_string(),
                        m: dir_headline(d),
                    });
                }
            }
        }
        let classes = report
            .classes
            .iter()
            .filter(|c| c.ios > 0)
            .map(|c| ClassRow {
                class: c.class.name().to_string(),
                m: Headline::of(c.iops, c.bw_bytes, &c.lat_ns),
            })
            .collect();
        (jobs, classes, report.fairness.jain_index)
    }
}

fn dir_headline(d: &DirReport) -> Headline {
    Headline::of(d.iops, d.bw_bytes, &d.lat_ns)
}

/// Which sweep the cells belong to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepInfo {
    /// The command that runs the whole sweep.
    pub command: String,
    /// How many cells the sweep has.
    pub cells: usize,
    /// CRC-32C of the job file's text, hex: cells run after the file was edited are
    /// from another sweep. Absent in files written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_crc32c: Option<String>,
    /// The axes, to check that each cell is the point its index names. Absent in
    /// files written before they were recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub axes: Option<AxesInfo>,
}

/// A sweep's axes as its files record them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AxesInfo {
    /// `--device` values.
    pub devices: Vec<String>,
    /// `--fs` values.
    pub fs: Vec<String>,
    /// Each `--set` axis: its target and its values.
    pub sets: Vec<(String, Vec<String>)>,
    /// `--policy` values.
    pub policies: Vec<String>,
    /// `--seed` values.
    pub seeds: Vec<u64>,
}

/// Cell `index`'s coordinates over axes of lengths `lens` (the fastest-varying
/// axis first): the one mixed-radix split of a cell's index (cross-product order).
pub fn split_index(index: usize, lens: &[usize]) -> Vec<usize> {
    let mut rest = index;
    lens.iter()
        .map(|&k| {
            let v = rest % k.max(1);
            rest /= k.max(1);
            v
        })
        .collect()
}

impl AxesInfo {
    /// The lengths of the axes, fastest-varying first: seeds, policies, the `--set`
    /// axes from the last, file systems, devices.
    pub fn lens(&self) -> Vec<usize> {
        let mut l = vec![self.seeds.len(), self.policies.len()];
        l.extend(self.sets.iter().rev().map(|(_, v)| v.len()));
        l.extend([self.fs.len(), self.devices.len()]);
        l
    }

    /// What in `row` contradicts the point its index names, if anything.
    fn contradiction(&self, row: &CellRow) -> Option<String> {
        let c = split_index(row.cell, &self.lens());
        let n = self.sets.len();
        let mut want = vec![
            ("device", self.devices[c[n + 3]].clone(), row.device.clone()),
            ("fs", self.fs[c[n + 2]].clone(), row.fs.clone()),
            ("policy", self.policies[c[1]].clone(), row.policy.clone()),
            ("seed", self.seeds[c[0]].to_string(), row.seed.to_string()),
        ];
        for (k, (target, values)) in self.sets.iter().enumerate() {
            let got = row
                .set
                .0
                .iter()
                .find(|(t, _)| t == target)
                .map_or(String::new(), |(_, v)| v.clone());
            want.push(("--set", values[c[n + 1 - k]].clone(), got));
        }
        want.into_iter()
            .find(|(_, w, g)| w != g)
            .map(|(what, w, g)| format!("its {what} is {g} where cell {} has {w}", row.cell))
    }
}

/// A sweep's JSON file (`--json`): the whole sweep, or some of its cells (`--cell N`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepFile {
    /// The sweep.
    pub sweep: SweepInfo,
    /// Its cells, in index order.
    pub cells: Vec<CellRow>,
}

impl SweepFile {
    /// The file's bytes: pretty JSON and a final newline.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut b = serde_json::to_vec_pretty(self).expect("a sweep file serializes");
        b.push(b'\n');
        b
    }

    /// Read a file written by `--json`.
    pub fn read(path: &Path) -> Result<SweepFile, CliError> {
        let bytes = std::fs::read(path).map_err(|e| {
            CliError::Usage(format!(
                "{}: cannot read the sweep file: {e}",
                path.display()
            ))
        })?;
        serde_json::from_slice(&bytes).map_err(|e| {
            CliError::Usage(format!(
                "{}: not a sweep file (written by `sluice sweep --json`): {e}",
                path.display()
            ))
        })
    }
}

/// Merge the cells of `files` (read from `names`) into one sweep file. They must come
/// from one sweep (the same command); a cell in two files is an error. Missing cells
/// are an error unless `partial`, when they are named in the returned warning.
pub fn merge(
    files: Vec<SweepFile>,
    names: &[String],
    partial: bool,
) -> Result<(SweepFile, Option<String>), CliError> {
    let Some(first) = files.first() else {
        return Err(CliError::Usage(
            "sweep merge: no files given; give the cells' JSON files".into(),
        ));
    };
    let sweep = first.sweep.clone();
    let mut by_index: BTreeMap<usize, (CellRow, &str)> = BTreeMap::new();
    for (f, name) in files.into_iter().zip(names) {
        if f.sweep != sweep {
            return Err(CliError::Usage(format!(
                "sweep merge: {name} is from another sweep ({} cells of `{}`) than {} \
                 ({} cells of `{}`)",
                f.sweep.cells, f.sweep.command, names[0], sweep.cells, sweep.command
            )));
        }
        for c in f.cells {
            if c.cell >= sweep.cells {
                return Err(CliError::Usage(format!(
                    "sweep merge: {name}: cell {} is past the sweep's {} cells",
                    c.cell, sweep.cells
                )));
            }
            if let Some(why) = sweep.axes.as_ref().and_then(|a| a.contradiction(&c)) {
                return Err(CliError::Usage(format!(
                    "sweep merge: {name}: cell {}: {why}; the file was edited or is not this \
                     sweep's — run the cell again",
                    c.cell
                )));
            }
            if let Some((_, other)) = by_index.get(&c.cell) {
                return Err(CliError::Usage(format!(
                    "sweep merge: cell {} is in both {other} and {name}; give each cell once",
                    c.cell
                )));
            }
            by_index.insert(c.cell, (c, name));
        }
    }
    let missing: Vec<usize> = (0..sweep.cells)
        .filter(|i| !by_index.contains_key(i))
        .collect();
    let note = (!missing.is_empty()).then(|| {
        let shown: Vec<String> = missing.iter().take(20).map(|i| i.to_string()).collect();
        format!(
            "{} of {} cells missing: {}{}",
            missing.len(),
            sweep.cells,
            shown.join(", "),
            if missing.len() > shown.len() {
                ", …"
            } else {
                ""
            }
        )
    });
    if let (Some(n), false) = (&note, partial) {
        return Err(CliError::Usage(format!(
            "sweep merge: {n}; run them (see `sluice sweep --list`) or merge with --partial"
        )));
    }
    let cells = by_index.into_values().map(|(c, _)| c).collect();
    Ok((SweepFile { sweep, cells }, note))
}
