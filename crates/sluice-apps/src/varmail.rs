//! Filebench's varmail, the mail-server workload both FastResponse (ICS '22) and AIOS
//! (ATC '19 §4.3.2, Fig. 17) report: metadata- and fsync-heavy, small files.
//!
//! A file set of `files` slots (Filebench: 1 000), `prealloc` % of them made at the
//! start; each of `threads` tasks (Filebench: 16) repeats Filebench's four flows on
//! files it picks at random (a picked file is held by that task until the flow ends, as
//! Filebench's fileset does):
//!
//! 1. delete a file;
//! 2. create a file, append to it, fsync it, close it;
//! 3. open a file, read it whole, append to it, fsync it, close it;
//! 4. open a file, read it whole, close it.
//!
//! (The closes are real on the stack's own files: on real files a closed file gives back
//! its slot of the rings' table of registered files, so a run can make any number of
//! files; in simulation they cost nothing.)
//!
//! That is 13 Filebench operations per loop (opening and closing count, as Filebench
//! counts its flowops); the figure is operations per second over all tasks. File sizes
//! are drawn uniformly from 1 byte to twice `mean_file` and appends from 1 byte to
//! `mean_append` (Filebench: a gamma(1.5) file size of mean 16 KiB, random appends of up
//! to 16 KiB); a file that has grown past 1 MiB is not appended to any more (mail
//! files stay small). Reads and appends go through the buffered
//! path: the runtime's page cache on the stack's own files, the store's buffer on the
//! store ([`sluice_store::Fs`]: the program is the same on both).

use std::cell::RefCell;
use std::rc::Rc;

use serde::Deserialize;
use sluice_runtime::{now, spawn, CacheConfig, IoClass, ReadPath, Stack, TaskCtx};
use sluice_store::{Fs, FsConfig, FsFile};

/// Files stop growing past this size.
const GROWTH_CAP: u64 = 1 << 20;
/// Filebench operations per loop of the four flows.
pub const OPS_PER_LOOP: u64 = 13;

/// The workload's parameters (a TOML table; every key optional).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct VarmailConfig {
    /// Thread counts to run (one run each).
    pub threads: Vec<u32>,
    /// Loops of the four flows per thread.
    pub loops: u32,
    /// File slots in the set.
    pub files: u32,
    /// Percent of the slots made before the run.
    pub prealloc: u32,
    /// Mean file size at creation, bytes.
    pub mean_file: u32,
    /// Largest append, bytes (the mean is about half).
    pub mean_append: u32,
    /// Simulated host cores.
    pub cores: u16,
    /// Simulated device profile.
    pub device: String,
    /// Seed.
    pub seed: u64,
}

impl Default for VarmailConfig {
    fn default() -> Self {
        VarmailConfig {
            threads: vec![1, 2, 4, 8, 16],
            loops: 100,
            files: 1000,
            prealloc: 80,
            mean_file: 16 << 10,
            mean_append: 16 << 10,
            cores: 4,
            device: "ull".into(),
            seed: 1,
        }
    }
}

impl VarmailConfig {
    /// Parse a TOML table of these keys (unknown keys are errors).
    pub fn from_toml(text: &str) -> Result<VarmailConfig, String> {
        let c: VarmailConfig = toml::from_str(text).map_err(|e| e.to_string())?;
        c.check()?;
        Ok(c)
    }

    /// Check the values.
    pub fn check(&self) -> Result<(), String> {
        if self.threads.is_empty() || self.threads.contains(&0) || self.loops == 0 {
            return Err("give threads (a list of counts ≥ 1) and loops ≥ 1".into());
        }
        if !(2..=1000).contains(&self.files) || !(1..=90).contains(&self.prealloc) {
            return Err(format!(
                "files = {}, prealloc = {}: give 2 to 1000 files (the store has 1 024 inodes) and 1 to 90 %",
                self.files, self.prealloc
            ));
        }
        let most = *self.threads.iter().max().expect("checked");
        if most as u64 * 2 > self.files as u64 {
            return Err(format!(
                "{most} threads for {} files: give at least two files per thread",
                self.files
            ));
        }
        if self.mean_file == 0 || self.mean_file > 256 << 10 || self.mean_append == 0 {
            return Err("mean_file: give 1 byte to 256 KiB; mean_append at least 1".into());
        }
        if self.cores == 0 {
            return Err("cores must be at least 1".into());
        }
        Ok(())
    }
}

/// What one run measured.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VarmailResult {
    /// Filebench operations per second over all threads.
    pub ops_per_sec: f64,
    /// Mean time of one loop of the four flows, ns.
    pub loop_ns: f64,
}

/// The file set: which slots hold a file, and which a task holds.
struct FileSet {
    exists: Vec<bool>,
    busy: Vec<bool>,
}

impl FileSet {
    /// A random slot, not held, whose existence is `exists` (held from now on).
    fn pick(&mut self, rng: &mut crate::Xorshift, exists: bool) -> Option<usize> {
        let n = self.exists.len();
        let start = (rng.next() % n as u64) as usize;
        let k = (0..n)
            .map(|i| (start + i) % n)
            .find(|&k| self.exists[k] == exists && !self.busy[k])?;
        self.busy[k] = true;
        Some(k)
    }
}

/// Run varmail with `threads` tasks on `fs` with the stack's read path `read_path`
/// (AIOS's for its whole scheme, with `fs`'s asynchronous fsync path), on simulated
/// `cfg.device` or files in `real`.
pub fn run(
    cfg: &VarmailConfig,
    threads: u32,
    fs: &FsConfig,
    read_path: ReadPath,
    real: Option<&std::path::Path>,
) -> Result<VarmailResult, String> {
    cfg.check()?;
    let mut b = Stack::builder()
        .device(&cfg.device)
        .policy("none")
        .read_path(read_path)
        .cores(cfg.cores)
        .seed(cfg.seed);
    if let Some(dir) = real {
        b = b.directory(dir).cores(1);
    }
    if matches!(fs, FsConfig::Host) {
        b = b.cache(CacheConfig::default());
    }
    let (cfg, fs) = (cfg.clone(), fs.clone());
    let out = b
        .build()
        .map_err(|e| e.to_string())?
        .run(move || workload(cfg, threads, fs))
        .map_err(|e| e.to_string())?;
    out.value
}

fn name(k: usize) -> String {
    format!("mail{k:04}")
}

async fn workload(cfg: VarmailConfig, threads: u32, fs: FsConfig) -> Result<VarmailResult, String> {
    let e = |e: std::io::Error| e.to_string();
    let files = Fs::mount(&fs).await.map_err(e)?;
    let n = cfg.files as usize;
    let set = Rc::new(RefCell::new(FileSet {
        exists: vec![false; n],
        busy: vec![false; n],
    }));
    let mut rng = crate::Xorshift::from_seed(cfg.seed);
    for k in 0..n * cfg.prealloc as usize / 100 {
        let f = files.create(&name(k)).await.map_err(e)?;
        let size = 1 + rng.next() % (2 * cfg.mean_file as u64);
        f.write_buffered(0, &vec![k as u8; size as usize])
            .await
            .map_err(e)?;
        f.close().await.map_err(e)?;
        set.borrow_mut().exists[k] = true;
    }
    files.sync().await.map_err(e)?;
    let t0 = now();
    let mut hs = Vec::new();
    for t in 0..threads {
        let (files, set, cfg) = (files.clone(), set.clone(), cfg.clone());
        let seed = cfg.seed ^ ((t as u64 + 1) << 20);
        hs.push(spawn(
            TaskCtx::new(format!("varmail{t}"))
                .flow("varmail")
                .class(IoClass::Normal),
            async move { thread(files, set, cfg, seed).await.map_err(e) },
        ));
    }
    for h in hs {
        h.await?;
    }
    let elapsed = (now() - t0).max(1) as f64;
    let loops = threads as f64 * cfg.loops as f64;
    Ok(VarmailResult {
        ops_per_sec: loops * OPS_PER_LOOP as f64 / (elapsed / 1e9),
        loop_ns: elapsed * threads as f64 / loops,
    })
}

/// One thread: `cfg.loops` loops of the four flows.
async fn thread(
    files: Fs,
    set: Rc<RefCell<FileSet>>,
    cfg: VarmailConfig,
    seed: u64,
) -> std::io::Result<()> {
    let mut rng = crate::Xorshift::from_seed(seed);
    let mut buf = Vec::new();
    for _ in 0..cfg.loops {
        // 1. deletefile.
        let picked = set.borrow_mut().pick(&mut rng, true);
        if let Some(k) = picked {
            files.unlink(&name(k)).await?;
            let mut s = set.borrow_mut();
            (s.exists[k], s.busy[k]) = (false, false);
        }
        // 2. createfile, appendfilerand, fsyncfile, closefile.
        let picked = set.borrow_mut().pick(&mut rng, false);
        if let Some(k) = picked {
            let f = files.create(&name(k)).await?;
            append(&f, &mut rng, cfg.mean_append).await?;
            f.fsync().await?;
            f.close().await?;
            let mut s = set.borrow_mut();
            (s.exists[k], s.busy[k]) = (true, false);
        }
        // 3. openfile, readwholefile, appendfilerand, fsyncfile, closefile.
        let picked = set.borrow_mut().pick(&mut rng, true);
        if let Some(k) = picked {
            let f = files.open(&name(k)).await?;
            read_whole(&f, &mut buf).await?;
            append(&f, &mut rng, cfg.mean_append).await?;
            f.fsync().await?;
            f.close().await?;
            set.borrow_mut().busy[k] = false;
        }
        // 4. openfile, readwholefile, closefile.
        let picked = set.borrow_mut().pick(&mut rng, true);
        if let Some(k) = picked {
            let f = files.open(&name(k)).await?;
            read_whole(&f, &mut buf).await?;
            f.close().await?;
            set.borrow_mut().busy[k] = false;
        }
    }
    Ok(())
}

async fn append(f: &FsFile, rng: &mut crate::Xorshift, most: u32) -> std::io::Result<()> {
    let at = f.len();
    if at >= GROWTH_CAP {
        return Ok(());
    }
    let n = 1 + rng.next() % most as u64;
    f.write_buffered(at, &vec![0x6d; n as usize]).await?;
    Ok(())
}

async fn read_whole(f: &FsFile, buf: &mut Vec<u8>) -> std::io::Result<()> {
    buf.resize(f.len() as usize, 0);
    let mut at = 0;
    while at < buf.len() {
        let n = f.read_buffered(at as u64, &mut buf[at..]).await?;
        if n == 0 {
            break;
        }
        at += n;
    }
    Ok(())
}
