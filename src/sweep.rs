//! `sluice sweep`: one job file run over the cross product of devices, file systems
//! (`--fs`), `--set` job options, policies and seeds, the cells side by side on all
//! cores.
//!
//! Every cell is one `sluice sim` run — the same path ([`crate::cli::simulate`], or on
//! the journaled store [`sluice_store::fio::run`], as `sluice sim --fs`) with one
//! device, one file system, one policy, one seed and the cell's `--set` options — so a
//! cell's row carries the `sluice sim` command that replays it alone, with its full
//! report.
//!
//! Cells are numbered in cross-product order: devices, then file systems, then each
//! `--set` axis in the order given, then policies, then seeds, the last varying
//! fastest. For sweeps larger
//! than one machine each cell is also one plain command ([`Sweep::cell_command`]:
//! `sluice sweep … --cell N --json FILE`), and [`rows::merge`] joins the cells' files
//! into the output of an in-process sweep.

mod cell;
mod lists;
pub mod rows;
pub mod table;

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use sluice_core::policy::PolicySpec;
use sluice_device::DeviceProfile;
use sluice_fio::front::FrontConfig;
use sluice_workload::{JobSpec, ParseOptions, WorkloadError};

use crate::cli::{CacheArgs, CliError, DEFAULT_JOB, DEFAULT_JOB_NAME};
use crate::jobset::{parse_with_sets, JobSet};
pub use lists::shell_word;
use lists::{no_duplicates, parse_seeds, seeds_text, split_list};
use rows::{CellRow, Settings, SweepInfo};

/// The most cells one sweep may have.
pub const MAX_CELLS: usize = 100_000;

/// The simulated host cores when `--cores` is not given (as `sluice sim`).
pub const DEFAULT_CORES: u16 = 8;

/// What `sluice sweep` was given, before it is checked.
#[derive(Clone, Debug, Default)]
pub struct SweepInput {
    /// The job file; `None`: the embedded default job.
    pub job: Option<PathBuf>,
    /// `--device` values (comma lists); empty: `ull`.
    pub devices: Vec<String>,
    /// `--policy` values (comma lists, as `sluice sim`); empty: as `sluice sim`.
    pub policies: Vec<String>,
    /// `--seed` values (comma lists of N or A..B); empty: 1.
    pub seeds: Vec<String>,
    /// `--set [JOB.]KEY=V1,V2,...` values (`\,` for a comma inside a value).
    pub sets: Vec<String>,
    /// `--fs` values (comma lists of `raw`, `compound`, `fjournal`, `compound+async`,
    /// `fjournal+async`); empty: `raw`.
    pub fs: Vec<String>,
    /// `--cores`.
    pub cores: u16,
    /// `--ignore-unknown`.
    pub ignore_unknown: bool,
    /// The page cache of buffered jobs (`--page-cache`, `--dirty-ratio`,
    /// `--single-dirty-limit`), as `sluice sim` takes it.
    pub cache: CacheArgs,
}

/// One `--set` axis: an option (for every job or one) and the values it takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetAxis {
    /// `KEY` or `JOB.KEY`.
    pub target: String,
    /// Each value as a checked assignment.
    pub values: Vec<JobSet>,
}

/// A cell: one point of the cross product.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cell {
    /// Its index, in cross-product order.
    pub index: usize,
    /// Index into the devices.
    pub device: usize,
    /// Index into the file systems (`--fs`).
    pub fs: usize,
    /// Index into each `--set` axis's values.
    pub values: Vec<usize>,
    /// Index into the policies.
    pub policy: usize,
    /// The seed.
    pub seed: u64,
}

/// Each `--set` combination's jobs, by [`Sweep::combo`]'s number.
type ParsedJobs = BTreeMap<usize, Vec<JobSpec>>;

/// A checked sweep: its axes, the job text and the device profiles.
#[derive(Debug)]
pub struct Sweep {
    job: Option<PathBuf>,
    text: String,
    origin: String,
    devices: Vec<String>,
    profiles: Vec<DeviceProfile>,
    /// `--fs` names, and the store each names (`None`: raw files).
    fs: Vec<String>,
    stores: Vec<Option<sluice_store::FsConfig>>,
    policies: Vec<PolicySpec>,
    seeds: Vec<u64>,
    axes: Vec<SetAxis>,
    cores: u16,
    ignore_unknown: bool,
    cache: CacheArgs,
    page_cache: FrontConfig,
}

impl Sweep {
    /// Check `input`: read the job file, resolve the devices, build each policy once,
    /// read the seeds and `--set` axes. Each value of an axis is checked as an option
    /// here; whether the job file takes it is checked by [`Sweep::jobs`].
    pub fn new(input: &SweepInput) -> Result<Sweep, CliError> {
        let (text, origin) = match &input.job {
            Some(p) => (
                sluice_workload::read_text(p).map_err(|source| WorkloadError::Io {
                    path: p.clone(),
                    source,
                })?,
                p.display().to_string(),
            ),
            None => (DEFAULT_JOB.to_string(), DEFAULT_JOB_NAME.to_string()),
        };
        let mut devices = Vec::new();
        for v in &input.devices {
            devices.extend(split_list("--device", v)?);
        }
        if devices.is_empty() {
            devices.push("ull".into());
        }
        no_duplicates("--device", &devices)?;
        let profiles = devices
            .iter()
            .map(|d| DeviceProfile::resolve(d))
            .collect::<Result<Vec<_>, _>>()?;
        let default_policy = if input.job.is_none() {
            "none,ld,rcp"
        } else {
            "none"
        };
        let policies = if input.policies.is_empty() {
            crate::cli::parse_policy_list(&[default_policy.to_string()])?
        } else {
            crate::cli::parse_policy_list(&input.policies)?
        };
        for p in &policies {
            sluice_core::policy::build(p)?;
        }
        let texts: Vec<&str> = policies.iter().map(|p| p.text.as_str()).collect();
        no_duplicates("--policy", &texts)?;
        let seeds = parse_seeds(&input.seeds)?;
        let mut axes: Vec<SetAxis> = Vec::new();
        for s in &input.sets {
            let (target, list) = s.split_once('=').ok_or_else(|| {
                CliError::Usage(format!(
                    "--set '{s}': no '='; write KEY=V1,V2,... (an fio option and its values, \
                     e.g. iodepth=1,4,32) or JOB.KEY=V1,V2,..."
                ))
            })?;
            let target = target.trim().to_string();
            if axes.iter().any(|a| a.target == target) {
                return Err(CliError::Usage(format!(
                    "--set {target} is given twice; give all its values in one --set {target}=V1,V2,..."
                )));
            }
            let items = split_list(&format!("--set {target}"), list)?;
            no_duplicates(&format!("--set {target}"), &items)?;
            let values = items
                .iter()
                .map(|v| JobSet::parse(&format!("{target}={v}")))
                .collect::<Result<Vec<_>, _>>()?;
            axes.push(SetAxis { target, values });
        }
        let (fs, mut stores) = cell::parse_fs(&input.fs)?;
        if stores.iter().any(Option::is_some) {
            // Buffered reads on a store go through its read cache of --page-cache's size.
            let blocks = input.cache.store_read_cache()?;
            for s in stores.iter_mut().flatten() {
                *s = s.clone().with_read_cache(blocks);
            }
        }
        if input.cores == 0 {
            return Err(CliError::Usage("--cores must be at least 1".into()));
        }
        let page_cache = input.cache.front_config()?;
        let sweep = Sweep {
            job: input.job.clone(),
            text,
            origin,
            devices,
            profiles,
            fs,
            stores,
            policies,
            seeds,
            axes,
            cores: input.cores,
            ignore_unknown: input.ignore_unknown,
            cache: input.cache.clone(),
            page_cache,
        };
        sweep.checked_len()?;
        Ok(sweep)
    }

    /// The number of cells, refused past [`MAX_CELLS`].
    fn checked_len(&self) -> Result<usize, CliError> {
        let sizes = [
            self.devices.len(),
            self.fs.len(),
            self.policies.len(),
            self.seeds.len(),
        ];
        let mut n: usize = 1;
        for k in sizes
            .into_iter()
            .chain(self.axes.iter().map(|a| a.values.len()))
        {
            n = n.saturating_mul(k);
        }
        if n > MAX_CELLS {
            return Err(CliError::Usage(format!(
                "the sweep has {n} cells, more than {MAX_CELLS}; split it (e.g. one sweep per device)"
            )));
        }
        Ok(n)
    }

    /// The number of cells.
    pub fn len(&self) -> usize {
        self.checked_len().expect("checked when made")
    }

    /// Whether the sweep has no cells (never: every axis has a value).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Cell `index` (`index < len()`).
    pub fn cell(&self, index: usize) -> Cell {
        let axes = self.axes_info();
        let c = rows::split_index(index, &axes.lens());
        let n = self.axes.len();
        let mut values: Vec<usize> = c[2..2 + n].to_vec();
        values.reverse();
        Cell {
            index,
            device: c[n + 3],
            fs: c[n + 2],
            values,
            policy: c[1],
            seed: self.seeds[c[0]],
        }
    }

    /// The axes as the sweep's files record them.
    fn axes_info(&self) -> rows::AxesInfo {
        rows::AxesInfo {
            devices: self.devices.clone(),
            fs: self.fs.clone(),
            sets: self
                .axes
                .iter()
                .map(|a| {
                    (
                        a.target.clone(),
                        a.values.iter().map(|v| v.value.clone()).collect(),
                    )
                })
                .collect(),
            policies: self.policies.iter().map(|p| p.text.clone()).collect(),
            seeds: self.seeds.clone(),
        }
    }

    fn sets(&self, cell: &Cell) -> Vec<JobSet> {
        self.axes
            .iter()
            .zip(&cell.values)
            .map(|(a, &v)| a.values[v].clone())
            .collect()
    }

    /// The jobs of `cell` (its `--set` options applied) and the parser's warnings.
    pub fn jobs(&self, cell: &Cell) -> Result<(Vec<JobSpec>, Vec<String>), CliError> {
        let opts = ParseOptions {
            ignore_unknown: self.ignore_unknown,
            ..ParseOptions::default()
        };
        parse_with_sets(&self.text, &self.origin, &opts, &self.sets(cell))
    }

    /// The number that tells cells' `--set` combinations apart (cells with the same one
    /// share their parsed jobs).
    fn combo(&self, cell: &Cell) -> usize {
        self.axes
            .iter()
            .zip(&cell.values)
            .fold(0, |acc, (a, &v)| acc * a.values.len() + v)
    }

    /// The jobs of each `--set` combination of `cells`, parsed once each (by
    /// [`Sweep::combo`]), and the parser's warnings, each once.
    fn parse(&self, cells: &[Cell]) -> Result<(ParsedJobs, Vec<String>), CliError> {
        let mut parsed = BTreeMap::new();
        let mut warnings: Vec<String> = Vec::new();
        let mut add = |w: Vec<String>| {
            for w in w {
                if !warnings.contains(&w) {
                    warnings.push(w);
                }
            }
        };
        let mut checked = BTreeSet::new();
        for c in cells {
            let combo = self.combo(c);
            if let Entry::Vacant(e) = parsed.entry(combo) {
                let (jobs, w) = self.jobs(c)?;
                add(w);
                e.insert(jobs);
            }
            // Raw files' warnings, or the store path's check (what it refuses stops
            // the sweep here) and warnings, once per combination and file system.
            if checked.insert((combo, c.fs)) {
                let jobs = &parsed[&combo];
                add(match self.stores[c.fs] {
                    None => crate::cli::raw_file_warnings(jobs),
                    Some(_) => self.store_plan(jobs, c.fs)?.warnings,
                });
            }
        }
        Ok((parsed, warnings))
    }

    /// Check that the job file takes every cell's `--set` values (each combination is
    /// parsed once) and that the store takes the jobs of every `--fs` store, without
    /// running anything; returns the warnings.
    pub fn check(&self) -> Result<Vec<String>, CliError> {
        let mut firsts: Vec<Cell> = Vec::new();
        let mut seen = BTreeSet::new();
        for i in 0..self.len() {
            let c = self.cell(i);
            if seen.insert((self.combo(&c), c.fs)) {
                firsts.push(c);
            }
        }
        Ok(self.parse(&firsts)?.1)
    }

    /// The options that every command of this sweep shares after the job file.
    fn common_args(&self) -> Vec<String> {
        let mut a = Vec::new();
        if self.cores != DEFAULT_CORES {
            a.extend(["--cores".to_string(), self.cores.to_string()]);
        }
        if self.ignore_unknown {
            a.push("--ignore-unknown".into());
        }
        a.extend(self.cache.to_args().iter().map(|w| shell_word(w)));
        a
    }

    fn job_arg(&self) -> Vec<String> {
        self.job
            .iter()
            .map(|p| shell_word(&p.display().to_string()))
            .collect()
    }

    /// The command that runs the whole sweep (canonical: every axis written out).
    pub fn command(&self) -> String {
        let mut w = vec!["sluice".to_string(), "sweep".to_string()];
        w.extend(self.job_arg());
        let policies: Vec<&str> = self.policies.iter().map(|p| p.text.as_str()).collect();
        w.extend(["--device".into(), shell_word(&self.devices.join(","))]);
        // Written when it is not the default (raw files only): a sweep's command, and
        // so its cells' files, stay as they were before `--fs`.
        if !self.raw_only() {
            w.extend(["--fs".into(), shell_word(&self.fs.join(","))]);
        }
        w.extend([
            "--policy".into(),
            shell_word(&policies.join(",")),
            "--seed".into(),
            seeds_text(&self.seeds),
        ]);
        for a in &self.axes {
            let values: Vec<String> = a
                .values
                .iter()
                .map(|v| v.value.replace(',', "\\,"))
                .collect();
            w.push("--set".into());
            w.push(shell_word(&format!("{}={}", a.target, values.join(","))));
        }
        w.extend(self.common_args());
        w.join(" ")
    }

    /// The plain command that runs cell `index` alone and writes its file `json`.
    pub fn cell_command(&self, index: usize, json: &Path) -> String {
        format!(
            "{} --cell {index} --json {} --quiet",
            self.command(),
            shell_word(&json.display().to_string())
        )
    }

    /// The `sluice sim` command that replays `cell` and prints its full report.
    pub fn replay_command(&self, cell: &Cell) -> String {
        let mut w = vec!["sluice".to_string(), "sim".to_string()];
        w.extend(self.job_arg());
        w.extend([
            "--device".into(),
            shell_word(&self.devices[cell.device]),
            "--policy".into(),
            shell_word(&self.policies[cell.policy].text),
            "--seed".into(),
            cell.seed.to_string(),
        ]);
        if self.stores[cell.fs].is_some() {
            w.extend(["--fs".into(), shell_word(&self.fs[cell.fs])]);
        }
        w.extend(self.common_args());
        for s in self.sets(cell) {
            w.push("--set".into());
            w.push(shell_word(&s.to_string()));
        }
        w.join(" ")
    }

    /// Which sweep this is, for its files.
    pub fn info(&self) -> SweepInfo {
        SweepInfo {
            command: self.command(),
            cells: self.len(),
            job_crc32c: self
                .job
                .is_some()
                .then(|| format!("{:08x}", crc32c::crc32c(self.text.as_bytes()))),
            axes: Some(self.axes_info()),
        }
    }

    /// Run the cells `which` on `threads` threads; their rows in the order of `which`,
    /// or the error of the first failing cell in that order (with the command that
    /// replays it). Every cell's jobs are parsed first, so a `--set` value a job file
    /// refuses stops the sweep before anything runs. `done(n, total, row)` is called as
    /// each cell ends, from the thread that ran it. Returns the rows and the parser's
    /// warnings (each once).
    pub fn run(
        &self,
        which: &[usize],
        threads: usize,
        done: &(dyn Fn(usize, usize, &CellRow) + Sync),
    ) -> Result<(Vec<CellRow>, Vec<String>), CliError> {
        let cells: Vec<Cell> = which.iter().map(|&i| self.cell(i)).collect();
        let (parsed, warnings) = self.parse(&cells)?;
        let finished = AtomicUsize::new(0);
        let one = |k: usize| -> Result<CellRow, CliError> {
            let c = &cells[k];
            let command = self.replay_command(c);
            let report = self
                .run_cell(c, &parsed[&self.combo(c)])
                .map_err(|e| CliError::Cell {
                    cell: c.index,
                    command: command.clone(),
                    source: Box::new(e),
                })?;
            let (jobs, classes, jain_index) = CellRow::figures(&report);
            let row = CellRow {
                cell: c.index,
                device: self.devices[c.device].clone(),
                fs: self.fs[c.fs].clone(),
                policy: self.policies[c.policy].text.clone(),
                seed: c.seed,
                set: Settings(
                    self.sets(c)
                        .into_iter()
                        .map(|s| (s.target(), s.value))
                        .collect(),
                ),
                jobs,
                classes,
                jain_index,
                command,
            };
            done(
                finished.fetch_add(1, Ordering::SeqCst) + 1,
                cells.len(),
                &row,
            );
            Ok(row)
        };
        let rows = sluice_repro::runner::run_ordered(cells.len(), threads, &one)?;
        Ok((rows, warnings))
    }
}
