//! FIO-like 4 KiB random write + fsync on the journaled store, 1 to N threads: AIOS's
//! fsync path (Lee et al., ATC '19, §3.3, Fig. 11). Each thread (a critical task) owns
//! a file and repeats: a buffered 4 KiB write at a random block, then `fsync`. The
//! store's synchronous commit path (data, then journal blocks) is the baseline; its
//! asynchronous path ([`FsyncPath::Async`]) sends the journal blocks while the data is
//! in flight, so the fsync's I/O overlaps instead of queueing. With more threads the
//! fsyncs overlap each other anyway and the gain shrinks (the paper's trend).

use serde::Deserialize;
use sluice_runtime::{now, spawn, File, IoClass, Stack, TaskCtx};
use sluice_store::{CommitMode, FsyncPath, Geometry, Store};

const FILE_BLOCKS: u64 = 256;

/// The workload's parameters (a TOML table; every key optional).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct WriteFsyncConfig {
    /// Thread counts to run (one run each).
    pub threads: Vec<u32>,
    /// Write + fsync operations per thread.
    pub ops: u32,
    /// Bytes per write.
    pub block: u32,
    /// Simulated device profile.
    pub device: String,
    /// Seed.
    pub seed: u64,
}

impl Default for WriteFsyncConfig {
    fn default() -> Self {
        WriteFsyncConfig {
            threads: vec![1, 2, 4, 8],
            ops: 300,
            block: 4096,
            device: "ull".into(),
            seed: 1,
        }
    }
}

impl WriteFsyncConfig {
    /// Parse a TOML table of these keys.
    pub fn from_toml(text: &str) -> Result<WriteFsyncConfig, String> {
        let c: WriteFsyncConfig = toml::from_str(text).map_err(|e| e.to_string())?;
        if c.threads.is_empty() || c.threads.contains(&0) || c.ops == 0 {
            return Err("give threads (a list of counts ≥ 1) and ops ≥ 1".into());
        }
        if c.block == 0 || c.block as u64 > FILE_BLOCKS * 4096 {
            return Err(format!(
                "block = {}: give 1 to {} bytes",
                c.block,
                FILE_BLOCKS * 4096
            ));
        }
        Ok(c)
    }
}

/// Mean latency of one write + fsync (ns) and operations per second, over all threads.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WriteFsyncResult {
    /// Mean write + fsync latency, ns.
    pub mean_ns: f64,
    /// Operations per second over all threads.
    pub iops: f64,
}

/// Run `threads` writers with fsync path `path` (compound, ordered-mode commits) on
/// simulated `cfg.device`, or in a store file under `real`.
pub fn run(
    cfg: &WriteFsyncConfig,
    threads: u32,
    path: FsyncPath,
    real: Option<&std::path::Path>,
) -> Result<WriteFsyncResult, String> {
    let mut b = Stack::builder()
        .device(&cfg.device)
        .policy("none")
        .seed(cfg.seed);
    if let Some(dir) = real {
        b = b.directory(dir).cores(1);
    }
    let cfg = cfg.clone();
    let out = b
        .build()
        .map_err(|e| e.to_string())?
        .run(move || async move {
            let err = |e: sluice_store::StoreError| e.to_string();
            let img = File::create("store.img").await.map_err(|e| e.to_string())?;
            let blocks = FILE_BLOCKS * 2 * threads as u64 + 8192;
            Store::mkfs(&img, Geometry::new(blocks))
                .await
                .map_err(err)?;
            let s = Store::mount(&img, CommitMode::Compound)
                .await
                .map_err(err)?;
            s.set_fsync_path(path);
            let t0 = now();
            let mut tasks = Vec::new();
            for t in 0..threads {
                let f = s.create(&format!("f{t}")).map_err(err)?;
                let (s, cfg) = (s.clone(), cfg.clone());
                tasks.push(spawn(
                    TaskCtx::new(format!("writer{t}"))
                        .flow("writers")
                        .class(IoClass::Critical),
                    async move {
                        let mut rng = crate::Xorshift::from_seed(cfg.seed ^ (t as u64 + 1));
                        let buf = vec![t as u8; cfg.block as usize];
                        let mut sum = 0u64;
                        for _ in 0..cfg.ops {
                            let blk =
                                rng.next() % (FILE_BLOCKS - (cfg.block as u64).div_ceil(4096));
                            let t1 = now();
                            s.write_buffered(f, blk * 4096, &buf)
                                .await
                                .map_err(|e| e.to_string())?;
                            s.fsync(f).await.map_err(|e| e.to_string())?;
                            sum += now() - t1;
                        }
                        Ok::<u64, String>(sum)
                    },
                ));
            }
            let mut total = 0u64;
            for t in tasks {
                total += t.await?;
            }
            let ops = threads as u64 * cfg.ops as u64;
            Ok::<WriteFsyncResult, String>(WriteFsyncResult {
                mean_ns: total as f64 / ops as f64,
                iops: ops as f64 / ((now() - t0).max(1) as f64 / 1e9),
            })
        })
        .map_err(|e| e.to_string())?;
    out.value
}
