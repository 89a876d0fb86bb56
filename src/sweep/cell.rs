//! One cell of a sweep run: on raw simulated files (`sluice sim`'s path) or on the
//! journaled store (`sluice sim --fs`'s path), and the `--fs` axis's values.

use sluice_metrics::RunReport;
use sluice_runtime::Stack;
use sluice_sim::SimConfig;
use sluice_store::fio::{self, FioPlan};
use sluice_store::FsConfig;
use sluice_workload::JobSpec;

use super::lists::{no_duplicates, split_list};
use super::{Cell, Sweep};
use crate::cli::CliError;

/// The file systems `--fs` takes, as `sluice sim --fs` and `sluice run --fs` name them.
pub(crate) const FS_NAMES: [&str; 9] = [
    "raw",
    "compound",
    "fjournal",
    "compound+async",
    "fjournal+async",
    "compound+rcp",
    "fjournal+rcp",
    "compound+async+rcp",
    "fjournal+async+rcp",
];

/// Read `--fs` values (comma lists): the names, and the store each names (`None`: raw
/// files). Empty: `raw` alone.
pub(crate) fn parse_fs(
    values: &[String],
) -> Result<(Vec<String>, Vec<Option<FsConfig>>), CliError> {
    let mut names = Vec::new();
    for v in values {
        names.extend(split_list("--fs", v)?);
    }
    if names.is_empty() {
        names.push("raw".into());
    }
    no_duplicates("--fs", &names)?;
    let mut stores = Vec::with_capacity(names.len());
    for n in &names {
        if !FS_NAMES.contains(&n.as_str()) {
            return Err(CliError::Usage(format!(
                "--fs '{n}': not a file system of the sweep; give {} (comma-separated)",
                FS_NAMES.join(", ")
            )));
        }
        stores.push(match n.as_str() {
            "raw" => None,
            t => Some(fio::store_config(t)?),
        });
    }
    Ok((names, stores))
}

impl Sweep {
    /// Whether the sweep runs only on raw files (no `--fs`, or `--fs raw`).
    pub(crate) fn raw_only(&self) -> bool {
        self.stores.iter().all(Option::is_none)
    }

    /// The store plan of `jobs` on file system `fs` (a store): the jobs checked for
    /// the store path, which refuses what it cannot do.
    pub(crate) fn store_plan(&self, jobs: &[JobSpec], fs: usize) -> Result<FioPlan, CliError> {
        let store = self.stores[fs].as_ref().expect("a store");
        fio::check(jobs, store)
            .and_then(|p| p.check_simulated().map(|()| p))
            .map_err(|e| CliError::Usage(format!("--fs {}: {e}", self.fs[fs])))
    }

    /// Run cell `c` (its jobs `jobs`): the simulator on raw files, or the fio runner on
    /// a store of a simulated stack — each exactly as its replay command runs it.
    pub(crate) fn run_cell(&self, c: &Cell, jobs: &[JobSpec]) -> Result<RunReport, CliError> {
        let profile = &self.profiles[c.device];
        let spec = &self.policies[c.policy];
        if self.stores[c.fs].is_none() {
            let cfg = SimConfig {
                seed: c.seed,
                cores: self.cores,
                page_cache: self.page_cache,
                ..SimConfig::default()
            };
            let out = crate::cli::simulate(jobs, profile, spec, &cfg, &mut |_| {})?;
            return Ok(out.report);
        }
        let plan = self.store_plan(jobs, c.fs)?;
        let stack = Stack::builder()
            .device_profile(profile.clone())
            .policy(&spec.text)
            .seed(c.seed)
            .cores(self.cores)
            .build()
            .map_err(|e| CliError::Usage(e.to_string()))?;
        let mut report = fio::run(stack, &plan, c.seed, None)?.report;
        report.policy = spec.text.clone();
        Ok(report)
    }
}
