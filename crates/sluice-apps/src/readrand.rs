//! FIO-like buffered random reads, one thread, 4 to 128 KiB: AIOS's read path (Lee et
//! al., ATC '19 §3.2, Fig. 8). A task reads blocks of `block` bytes at random aligned
//! offsets of a file much larger than the page cache, through the cache
//! ([`sluice_runtime::File::read_buffered`]), one at a time; the figure is the mean
//! latency of a read. The stack's [`ReadPath`] is the variable: Linux's read path
//! (pages allocated, indexed and DMA-mapped before the bio, unmapped after it) against
//! AIOS's (the request submitted first through the lean block layer, the page work
//! overlapped with the device, lazy unmapping), with the simulated host's costs
//! (docs/runtime.md).

use serde::Deserialize;
use sluice_runtime::{now, spawn, CacheConfig, File, Stack, TaskCtx};

pub use sluice_runtime::ReadPath;

/// The workload's parameters (a TOML table; every key optional).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct ReadRandConfig {
    /// Block sizes to run, bytes (one run each).
    pub blocks: Vec<u32>,
    /// Reads per run.
    pub reads: u32,
    /// File size, MiB.
    pub file_mib: u64,
    /// Page cache, MiB.
    pub cache_mib: u64,
    /// Simulated device profile.
    pub device: String,
    /// Seed.
    pub seed: u64,
}

impl Default for ReadRandConfig {
    fn default() -> Self {
        ReadRandConfig {
            blocks: vec![4096, 8192, 16384, 32768, 65536, 131072],
            reads: 2000,
            file_mib: 4096,
            cache_mib: 64,
            device: "ull".into(),
            seed: 1,
        }
    }
}

impl ReadRandConfig {
    /// Parse a TOML table of these keys (unknown keys are errors).
    pub fn from_toml(text: &str) -> Result<ReadRandConfig, String> {
        let c: ReadRandConfig = toml::from_str(text).map_err(|e| e.to_string())?;
        c.check()?;
        Ok(c)
    }

    /// Check the values.
    pub fn check(&self) -> Result<(), String> {
        if self.blocks.is_empty() || self.reads == 0 {
            return Err("give blocks (a list of sizes) and reads ≥ 1".into());
        }
        if let Some(b) = self
            .blocks
            .iter()
            .find(|&&b| b == 0 || b % 4096 != 0 || b > 1 << 20)
        {
            return Err(format!(
                "block {b}: give multiples of 4096 bytes up to 1 MiB"
            ));
        }
        if self.cache_mib == 0 || self.file_mib < 4 * self.cache_mib {
            return Err(format!(
                "file_mib {} and cache_mib {}: the file must be at least 4 × the cache (reads should miss)",
                self.file_mib, self.cache_mib
            ));
        }
        Ok(())
    }
}

/// Mean latency of a read, ns, and the fraction of reads that found every page cached.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReadRandResult {
    /// Mean read latency, ns.
    pub mean_ns: f64,
    /// Cache hits over lookups in the run.
    pub hit_ratio: f64,
}

/// Run `reads` random reads of `block` bytes with read path `path` on simulated
/// `cfg.device`.
pub fn run(cfg: &ReadRandConfig, block: u32, path: ReadPath) -> Result<ReadRandResult, String> {
    cfg.check()?;
    let cache = CacheConfig {
        pages: (cfg.cache_mib << 20) as usize / 4096,
        ..CacheConfig::default()
    };
    let cfg = cfg.clone();
    let out = Stack::builder()
        .device(&cfg.device)
        .policy("none")
        .seed(cfg.seed)
        .cache(cache)
        .read_path(path)
        .build()
        .map_err(|e| e.to_string())?
        .run(move || async move {
            let f = File::create("data").await.map_err(|e| e.to_string())?;
            f.set_len(cfg.file_mib << 20)
                .await
                .map_err(|e| e.to_string())?;
            let reader = spawn(TaskCtx::new("fio-read"), async move {
                let mut rng = crate::Xorshift::from_seed(cfg.seed);
                let mut buf = vec![0u8; block as usize];
                let blocks = (cfg.file_mib << 20) / block as u64;
                let mut sum = 0u64;
                for _ in 0..cfg.reads {
                    let at = rng.next() % blocks * block as u64;
                    let t0 = now();
                    f.read_buffered(at, &mut buf)
                        .await
                        .map_err(|e| e.to_string())?;
                    sum += now() - t0;
                }
                Ok::<f64, String>(sum as f64 / cfg.reads as f64)
            });
            reader.await
        })
        .map_err(|e| e.to_string())?;
    let mean_ns = out.value?;
    let pc = out
        .report
        .extra
        .runtime
        .as_ref()
        .and_then(|r| r.cache.as_ref())
        .map(|c| c.hits as f64 / (c.hits + c.misses).max(1) as f64)
        .unwrap_or(0.0);
    Ok(ReadRandResult {
        mean_ns,
        hit_ratio: pc,
    })
}
