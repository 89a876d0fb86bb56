//! The page cache options `sim` and `run` share, and `sluice run`'s host-sized default.

use super::CliError;

/// The page cache of buffered jobs (`direct=0`), options `sim` and `run` share.
#[derive(clap::Args, Debug, Clone)]
pub struct CacheArgs {
    /// Size of sluice's page cache for buffered jobs (`direct=0`), e.g. `64m`, `1g`.
    /// Default: 64m under `sluice sim` (a simulated host's, the same on every machine);
    /// under `sluice run` a quarter of this machine's available memory (MemAvailable),
    /// since Linux's page cache, which fio's buffered jobs use, grows into free memory.
    /// Its pages are allocated as they are first used. (The journaled store's read
    /// cache, `--fs`, keeps 64m.)
    #[arg(long, value_name = "SIZE")]
    pub page_cache: Option<String>,
    /// Dirty ratios of the page cache: `NORMAL,CRITICAL` (RCP's class-aware limits:
    /// non-critical writers may dirty up to NORMAL of the cache, critical ones up to
    /// CRITICAL), in percent.
    #[arg(long, value_name = "N%,C%", default_value = CacheArgs::DIRTY_RATIO)]
    pub dirty_ratio: String,
    /// One dirty limit for every writer, as Linux: the baseline of RCP's class-aware
    /// limits. Under `sluice run` (without `--dirty-ratio`) the limit and the start of
    /// background writeback are this machine's kernel's (`vm.dirty_ratio` and
    /// `vm.dirty_background_ratio` of its dirtyable memory, or `vm.dirty_bytes` and
    /// `vm.dirty_background_bytes`), at most the cache; otherwise the CRITICAL ratio of
    /// the cache, writeback from half of it.
    #[arg(long)]
    pub single_dirty_limit: bool,
}

impl Default for CacheArgs {
    /// The command line's defaults.
    fn default() -> Self {
        CacheArgs {
            page_cache: None,
            dirty_ratio: Self::DIRTY_RATIO.into(),
            single_dirty_limit: false,
        }
    }
}

impl CacheArgs {
    /// `--page-cache`'s default under `sluice sim`.
    pub const PAGE_CACHE: &'static str = "64m";
    /// `--dirty-ratio`'s default.
    pub const DIRTY_RATIO: &'static str = "1%,20%";

    /// The options as given on a command line, those left at their defaults left out.
    pub fn to_args(&self) -> Vec<String> {
        let mut a = Vec::new();
        if let Some(size) = &self.page_cache {
            a.extend(["--page-cache".to_string(), size.clone()]);
        }
        if self.dirty_ratio != Self::DIRTY_RATIO {
            a.extend(["--dirty-ratio".to_string(), self.dirty_ratio.clone()]);
        }
        if self.single_dirty_limit {
            a.push("--single-dirty-limit".into());
        }
        a
    }

    /// The buffered front's settings for the simulator (`--page-cache` or 64m).
    pub fn front_config(&self) -> Result<sluice_fio::front::FrontConfig, CliError> {
        let size = self.page_cache.as_deref().unwrap_or(Self::PAGE_CACHE);
        let bytes = sluice_workload::units::parse_size(size)
            .map_err(|e| CliError::Usage(format!("--page-cache {size}: {e}")))?;
        self.config_of(bytes)
    }

    /// The buffered front's settings on this machine (`sluice run`): `--page-cache`,
    /// or a quarter of the available memory ([`host_page_cache`]). The second value is
    /// the size taken by default, to say so.
    pub fn front_config_on_host(
        &self,
    ) -> Result<(sluice_fio::front::FrontConfig, Option<u64>), CliError> {
        let meminfo = std::fs::read_to_string("/proc/meminfo").ok();
        let (mut cfg, default) = match self.page_cache {
            Some(_) => (self.front_config()?, None),
            None => {
                let bytes = host_page_cache(meminfo.clone());
                (self.config_of(bytes)?, Some(bytes))
            }
        };
        if self.single_dirty_limit && self.dirty_ratio == Self::DIRTY_RATIO {
            let vm = |name: &str| {
                std::fs::read_to_string(format!("/proc/sys/vm/{name}"))
                    .ok()
                    .and_then(|t| t.trim().parse::<u64>().ok())
            };
            let knobs = VmDirty {
                ratio: vm("dirty_ratio").unwrap_or(20),
                background_ratio: vm("dirty_background_ratio").unwrap_or(10),
                bytes: vm("dirty_bytes").unwrap_or(0),
                background_bytes: vm("dirty_background_bytes").unwrap_or(0),
            };
            if let Some(t) = meminfo
                .as_deref()
                .and_then(|m| kernel_dirty_thresholds(m, knobs))
            {
                t.apply(&mut cfg.cache);
            }
        }
        Ok((cfg, default))
    }

    fn config_of(&self, bytes: u64) -> Result<sluice_fio::front::FrontConfig, CliError> {
        let pct = |s: &str| -> Result<f64, CliError> {
            let v = s.trim().trim_end_matches('%');
            v.parse::<f64>().map(|x| x / 100.0).map_err(|_| {
                CliError::Usage(format!(
                    "--dirty-ratio {}: cannot read '{s}' as a percentage; write e.g. 1%,20%",
                    self.dirty_ratio
                ))
            })
        };
        let (n, c) = self.dirty_ratio.split_once(',').ok_or_else(|| {
            CliError::Usage(format!(
                "--dirty-ratio {}: give two ratios NORMAL,CRITICAL, e.g. 1%,20%",
                self.dirty_ratio
            ))
        })?;
        let mut cfg = sluice_fio::front::FrontConfig::default();
        cfg.cache.pages = (bytes / sluice_cache::PAGE) as usize;
        cfg.cache.dirty_ratio_normal = pct(n)?;
        cfg.cache.dirty_ratio_critical = pct(c)?;
        cfg.cache.class_limits = !self.single_dirty_limit;
        cfg.cache
            .validate()
            .map_err(|e| CliError::Usage(format!("--page-cache/--dirty-ratio: {e}")))?;
        Ok(cfg)
    }

    /// The journaled store's read cache for the jobs on `--fs`, in 4 KiB blocks:
    /// `--page-cache`'s size, as raw files' buffered jobs get a page cache of it. The
    /// dirty ratios are refused there: the store's buffer has its own limits (`+rcp`).
    pub fn store_read_cache(&self) -> Result<usize, CliError> {
        if self.dirty_ratio != Self::DIRTY_RATIO || self.single_dirty_limit {
            return Err(CliError::Usage(
                "--dirty-ratio/--single-dirty-limit with --fs: the store's buffer has its own \
                 limits of buffered data (add +rcp to --fs for RCP's class-aware ones); drop \
                 them, or run without --fs (raw files)"
                    .into(),
            ));
        }
        Ok(self.front_config()?.cache.pages)
    }
}

/// The value of field `name` of `/proc/meminfo`'s text (`MemAvailable:   23477892 kB`),
/// in KiB; `None` when it is missing or unreadable.
fn meminfo_kib(meminfo: &str, name: &str) -> Option<u64> {
    meminfo
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
}

/// `sluice run`'s page cache when `--page-cache` is not given: a quarter of the
/// machine's available memory (`MemAvailable` of `/proc/meminfo`, the text given), in
/// whole MiB, at least 64 MiB (also when the text is missing or unreadable). Linux's
/// page cache takes what memory is free and its writers are throttled at 20 % of it
/// (`vm.dirty_ratio`); sluice's cache cannot give memory back under pressure, hence a
/// quarter.
pub fn host_page_cache(meminfo: Option<String>) -> u64 {
    let floor = 64 << 20;
    match meminfo
        .as_deref()
        .and_then(|t| meminfo_kib(t, "MemAvailable"))
    {
        Some(kib) => ((kib * 1024 / 4) >> 20 << 20).max(floor),
        None => floor,
    }
}

/// The kernel's dirty-memory knobs (`/proc/sys/vm`): percentages, and byte counts that
/// replace them when not 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VmDirty {
    /// `vm.dirty_ratio`, %.
    pub ratio: u64,
    /// `vm.dirty_background_ratio`, %.
    pub background_ratio: u64,
    /// `vm.dirty_bytes` (0: the ratio counts).
    pub bytes: u64,
    /// `vm.dirty_background_bytes` (0: the ratio counts).
    pub background_bytes: u64,
}

/// The kernel's global dirty thresholds, bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DirtyThresholds {
    /// Writers are throttled up to it (`dirty_thresh`).
    pub limit: u64,
    /// Background writeback starts above it (`bg_thresh`).
    pub background: u64,
}

impl DirtyThresholds {
    /// A page cache with Linux's one limit at these thresholds: the limit at most the
    /// whole cache, background writeback from the background threshold's share of the
    /// limit (a limit cut to the cache keeps the kernel's proportion: half, by default).
    pub fn apply(&self, cache: &mut sluice_cache::CacheConfig) {
        let size = cache.pages as u64 * sluice_cache::PAGE;
        let limit = self.limit.clamp(sluice_cache::PAGE, size);
        cache.class_limits = false;
        cache.dirty_ratio_critical = limit as f64 / size as f64;
        cache.background = (self.background.max(1) as f64 / self.limit.max(1) as f64).min(1.0);
    }
}

/// The kernel's global dirty thresholds (`mm/page-writeback.c`, `domain_dirty_limits`)
/// from `/proc/meminfo`'s text and the knobs: of the *dirtyable memory* —
/// `global_dirtyable_memory`: free pages plus the file LRU pages (`MemFree +
/// Active(file) + Inactive(file)`; the kernel also subtracts its reserves, the zones'
/// high watermarks, which meminfo does not show) — `thresh = dirty_ratio %`, `bg_thresh
/// = dirty_background_ratio %`, each replaced by its `_bytes` knob when that is set;
/// a background threshold at or above the limit becomes half of it. `None` when the
/// text lacks a field.
pub fn kernel_dirty_thresholds(meminfo: &str, vm: VmDirty) -> Option<DirtyThresholds> {
    let kib = |name: &str| meminfo_kib(meminfo, name);
    let dirtyable = (kib("MemFree")? + kib("Active(file)")? + kib("Inactive(file)")?) * 1024;
    let of = |bytes: u64, ratio: u64| {
        if bytes > 0 {
            bytes
        } else {
            dirtyable * ratio / 100
        }
    };
    let limit = of(vm.bytes, vm.ratio);
    let mut background = of(vm.background_bytes, vm.background_ratio);
    if background >= limit {
        background = limit / 2;
    }
    Some(DirtyThresholds { limit, background })
}
