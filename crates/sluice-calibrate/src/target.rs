//! The measured file ([`Target`]): a temporary file sluice creates, or an existing
//! file or device under the engine's safety rules.

use crate::{CalibrateError, PointSpec};
use sluice_core::policy::PolicySpec;
use sluice_core::Nanos;
use sluice_engine::{EngineConfig, FileSet};
use sluice_metrics::RunReport;
use sluice_workload::JobSpec;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// The measured file: created by sluice in a directory (and removed when dropped), or
/// an existing file or device.
#[derive(Debug)]
pub struct Target {
    files: FileSet,
    directory: PathBuf,
    filename: String,
    path: PathBuf,
    size_bytes: u64,
    align: u32,
    allow_device: bool,
    allow_write_existing: bool,
}

impl Target {
    /// Check `path` and prepare the file: a directory gets a new temporary file of
    /// `size_bytes` (laid out as `sluice run` does, removed at the end); a file or a
    /// block device is used in place — up to `size_bytes` of it — under the engine's
    /// rules (writing to an existing file needs `allow_write_existing`, a device
    /// `allow_device`). `progress` gets `(bytes written, bytes to write)` of the lay-out.
    pub fn open(
        path: &Path,
        size_bytes: u64,
        max_qd: u32,
        allow_device: bool,
        allow_write_existing: bool,
        stop: &AtomicBool,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<Target, CalibrateError> {
        use std::os::unix::fs::FileTypeExt;
        let (directory, filename, size) = match std::fs::metadata(path) {
            Ok(m) if m.is_dir() => (
                path.to_path_buf(),
                format!("sluice-calibrate.{}.dat", std::process::id()),
                size_bytes,
            ),
            Ok(m) if m.file_type().is_block_device() && !allow_device => {
                return Err(CalibrateError::BadInput(format!(
                    "{} is a block device: calibration writes to it and destroys its data; \
                     add --allow-device to allow that, or give a directory (sluice creates \
                     its own file there)",
                    path.display()
                )));
            }
            Ok(m) if !m.is_file() && !m.file_type().is_block_device() => {
                return Err(CalibrateError::BadInput(format!(
                    "{} is neither a directory, a regular file nor a block device; give a \
                     directory (sluice creates its own file there)",
                    path.display()
                )));
            }
            Ok(m) => {
                let len = if m.file_type().is_block_device() {
                    let f = std::fs::File::open(path).map_err(|e| {
                        CalibrateError::BadInput(format!("cannot open {}: {e}", path.display()))
                    })?;
                    let mut f = &f;
                    std::io::Seek::seek(&mut f, std::io::SeekFrom::End(0)).map_err(|e| {
                        CalibrateError::BadInput(format!(
                            "cannot read the size of {}: {e}",
                            path.display()
                        ))
                    })?
                } else {
                    m.len()
                };
                // Whole MiBs, at most what was asked; the engine refuses what is wrong
                // (a device without --allow-device, writing without --allow-write-existing).
                let size = size_bytes.min(len) >> 20 << 20;
                if size < (16 << 20) && (m.is_file() || m.file_type().is_block_device()) {
                    return Err(CalibrateError::BadInput(format!(
                        "{} holds {len} bytes; calibration needs at least 16 MiB of it",
                        path.display()
                    )));
                }
                (parent_of(path), abs_str(path)?, size)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // A missing path is refused, not created: measured as a new file, a
                // mistyped directory would have sluice measure whatever disk holds its
                // parent (docs/calibrate.md: missing directories are refused).
                return Err(CalibrateError::BadInput(format!(
                    "{} does not exist; give an existing directory (sluice creates its own \
                     file there and removes it), a file (with --allow-write-existing) or a \
                     block device (with --allow-device); sluice does not create directories",
                    path.display()
                )));
            }
            Err(e) => {
                return Err(CalibrateError::BadInput(format!(
                    "cannot read {}: {e}",
                    path.display()
                )))
            }
        };
        let spec = PointSpec {
            read_pct: 50,
            bs: 4096,
            qd: max_qd.max(1),
        };
        let job = spec.job(&filename, size, 1_000_000, 0, 1)?;
        let cfg = EngineConfig {
            directory: directory.clone(),
            workers: Some(1),
            allow_device,
            allow_write_existing,
            ..EngineConfig::default()
        };
        let files = sluice_engine::prepare(&[job], &cfg, stop, &mut |_, done, total| {
            progress(done, total)
        })?;
        let pf = &files.plan().files[0];
        let (path, align) = (pf.path.clone(), pf.align);
        Ok(Target {
            files,
            directory,
            filename,
            path,
            size_bytes: size,
            align,
            allow_device,
            allow_write_existing,
        })
    }

    /// The file measured.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes of it measured.
    pub fn size_bytes(&self) -> u64 {
        self.size_bytes
    }

    /// Its direct-I/O alignment, bytes.
    pub fn align(&self) -> u32 {
        self.align
    }

    /// Whether sluice created it (and removes it when the target is dropped).
    pub fn created(&self) -> bool {
        !self.files.created().is_empty()
    }

    /// Warnings of the engine's checks (e.g. a memory file system).
    pub fn warnings(&self) -> &[String] {
        &self.files.plan().warnings
    }

    /// The job of `spec` on this target.
    pub fn job(
        &self,
        spec: &PointSpec,
        runtime_ns: Nanos,
        ramp_ns: Nanos,
        seed: u64,
    ) -> Result<JobSpec, CalibrateError> {
        spec.job(&self.filename, self.size_bytes, runtime_ns, ramp_ns, seed)
    }

    /// Run `job` (one of [`Target::job`]'s) once with policy `none` on one worker; I/O
    /// errors and an empty window are errors.
    pub fn run_once(&self, job: JobSpec, stop: &AtomicBool) -> Result<RunReport, CalibrateError> {
        let cfg = EngineConfig {
            directory: self.directory.clone(),
            workers: Some(1),
            allow_device: self.allow_device,
            allow_write_existing: self.allow_write_existing,
            keep_files: true,
            seed: job.randseed.unwrap_or(1),
            interval_ns: job.runtime_ns,
            ..EngineConfig::default()
        };
        let none: PolicySpec = "none".parse().expect("`none` parses");
        let jobs = [job];
        let out = sluice_engine::run(&jobs, &self.files, &none, &cfg, stop, &mut |_| {})?;
        if out.stats.interrupted || stop.load(Ordering::Relaxed) {
            return Err(CalibrateError::Interrupted);
        }
        if let Some((job, count, first)) = out.stats.errors.first() {
            return Err(CalibrateError::IoErrors {
                job: job.clone(),
                count: *count,
                first: first.clone(),
            });
        }
        if out
            .report
            .jobs
            .iter()
            .all(|j| j.read.total_ios + j.write.total_ios == 0)
        {
            return Err(CalibrateError::NoIo(jobs[0].name.clone()));
        }
        Ok(out.report)
    }
}

fn parent_of(path: &Path) -> PathBuf {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_path_buf()
}

fn abs_str(path: &Path) -> Result<String, CalibrateError> {
    let abs = std::path::absolute(path)
        .map_err(|e| CalibrateError::BadInput(format!("{}: {e}", path.display())))?;
    abs.to_str().map(str::to_string).ok_or_else(|| {
        CalibrateError::BadInput(format!(
            "{}: the path is not valid UTF-8; use a path that is",
            path.display()
        ))
    })
}
