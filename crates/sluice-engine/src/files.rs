//! The job's data files: planning and checking them (before anything is written), laying
//! them out as fio does, opening them for direct I/O, and removing the ones sluice
//! created.
//!
//! File names follow fio: thread `t` of job `name` uses `<name>.<t>.0` in the
//! directory; `filename=` names one file that every thread of every job naming it
//! shares (a relative name is taken inside the directory). The file must hold the
//! job's region, `offset + size` bytes.
//!
//! Rules: a file that does not exist is created and pre-filled with pseudo-random data
//! (fio's "laying out IO file"), and removed at the end unless kept. An existing file
//! is read as it is. One under fio's own name for a job's file (`<name>.<t>.0`, as fio
//! or `--keep-files` laid it out) is reused as fio reuses it — written too — when it
//! holds the job's region; any other existing file (`filename=`) is written only with
//! `allow_write_existing`. A block device is
//! used only with `allow_device`. Every check — directory, O_DIRECT support, logical
//! block size alignment, size, free space — runs before the first file is created.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use sluice_fio::AddressPlan;
use sluice_workload::{BlockSize, JobSpec};

use crate::buf::AlignedBuf;
use crate::error::EngineError;

mod kernel_dev;
pub use kernel_dev::KernelDev;

/// `f_type` of tmpfs in `statfs`.
const TMPFS_MAGIC: i64 = 0x0102_1994;
/// `f_type` of ramfs in `statfs`.
const RAMFS_MAGIC: i64 = 0x8584_58f6;

/// Logical block size assumed when the kernel does not report direct-I/O alignment.
const FALLBACK_ALIGN: u32 = 512;

/// Pre-fill chunk.
const FILL_CHUNK: usize = 1 << 20;

/// One file (or device) the jobs use.
#[derive(Clone, Debug)]
pub struct PlannedFile {
    /// Where it is.
    pub path: PathBuf,
    /// Bytes the jobs need (the largest `offset + size` of its users, rounded up to
    /// the logical block size).
    pub size: u64,
    /// Whether sluice creates (and later removes) it.
    pub create: bool,
    /// Whether it is a block device.
    pub device: bool,
    /// `/dev/null` or `/dev/zero` (`kernel_dev`): opened without O_DIRECT, no size.
    pub kernel_dev: Option<KernelDev>,
    /// Whether some job writes to it.
    pub writes: bool,
    /// Its logical block size (direct-I/O offset alignment), bytes.
    pub align: u32,
    /// Where its byte 0 sits in the address space the policies see: files are laid
    /// side by side, each starting on a MiB boundary, as the simulator lays regions.
    pub base: u64,
    /// The first job that uses it (for messages).
    pub first_job: String,
    /// A `fill_device` job writes it until its file system has no space: it is
    /// created empty (not pre-filled), its size is not asked of the free space, and
    /// an existing one may be smaller than its size (`crate::fill`).
    pub fill: bool,
}

/// Every file of a run and which thread uses which.
#[derive(Clone, Debug)]
pub struct FilePlan {
    /// The files, in order of first use.
    pub files: Vec<PlannedFile>,
    /// For every thread (jobs in order, then `numjobs` threads each), its file index.
    pub thread_file: Vec<u32>,
    /// Things worth telling the user that do not stop the run (e.g. files on a
    /// memory-backed file system that accepts O_DIRECT, as tmpfs does since Linux 6.6).
    pub warnings: Vec<String>,
}

/// Hint for a path that is a symbolic link to nothing.
const DANGLING: &str = "it is a symbolic link to a missing file; sluice neither follows nor \
                        replaces it: remove the link, or give another --directory or filename=";
/// Hint for a file that appeared between planning and creating it.
const APPEARED: &str = "the file appeared after sluice checked the directory (another run \
                        using the same directory?); sluice does not overwrite a file it did \
                        not create: wait for that run, or give another --directory";

fn path_err(path: &Path, job: &str, source: io::Error, hint: &'static str) -> EngineError {
    EngineError::Path {
        path: path.to_path_buf(),
        job: job.to_string(),
        source,
        hint,
    }
}

fn io_err(path: &Path, job: &str, e: io::Error) -> EngineError {
    let hint = hint_for(&e);
    path_err(path, job, e, hint)
}

fn hint_for(e: &io::Error) -> &'static str {
    match e.raw_os_error() {
        Some(libc::EACCES) | Some(libc::EPERM) => {
            "no permission: give a --directory you can write to"
        }
        Some(libc::EROFS) => "the file system is read-only: give another --directory",
        Some(libc::ENOENT) => "a parent directory is missing: create it first",
        Some(libc::ENOTDIR) => "a component of the path is not a directory",
        Some(libc::ENOSPC) => "the file system is full",
        _ => "check the path",
    }
}

fn cpath(p: &Path) -> CString {
    CString::new(p.as_os_str().as_bytes()).unwrap_or_else(|_| CString::new("/").expect("no nul"))
}

/// The name of the memory-backed file system holding `p` (tmpfs, ramfs), if it is one.
fn memory_fs(p: &Path) -> Option<&'static str> {
    let c = cpath(p);
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: c is a valid C string and st a valid out pointer.
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    match st.f_type as i64 {
        TMPFS_MAGIC => Some("tmpfs"),
        RAMFS_MAGIC => Some("ramfs"),
        _ => None,
    }
}

/// ", it is tmpfs" (or ramfs) for messages.
fn fs_note(p: &Path) -> String {
    memory_fs(p).map_or(String::new(), |fs| format!(", it is {fs}"))
}

/// Direct-I/O offset alignment of an open file from `statx(STATX_DIOALIGN)`, if the
/// kernel and file system report it.
fn dio_align(f: &File) -> Option<u32> {
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    let empty = CString::new("").expect("no nul");
    // SAFETY: valid fd, empty path with AT_EMPTY_PATH, valid out pointer.
    let rc = unsafe {
        libc::statx(
            f.as_raw_fd(),
            empty.as_ptr(),
            libc::AT_EMPTY_PATH,
            libc::STATX_DIOALIGN,
            &mut stx,
        )
    };
    if rc != 0 || stx.stx_mask & libc::STATX_DIOALIGN == 0 || stx.stx_dio_offset_align == 0 {
        return None;
    }
    Some(stx.stx_dio_offset_align)
}

/// Logical block size of a block device.
fn device_align(f: &File) -> io::Result<u32> {
    let mut sz: libc::c_int = 0;
    // SAFETY: BLKSSZGET writes one int.
    let rc = unsafe { libc::ioctl(f.as_raw_fd(), libc::BLKSSZGET, &mut sz) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(sz.max(1) as u32)
}

/// What `path` is, for a `zonemode=zbd` job: not there, a regular file, a block
/// device whose `queue/zoned` in sysfs says `none`, or a zoned one (which `sluice run`
/// does not drive: it would need the device's zone report and zone resets).
fn zoned_model(path: &Path) -> String {
    use std::os::unix::fs::MetadataExt;
    let m = match std::fs::metadata(path) {
        Err(_) => return "it does not exist (sluice run would create a regular file)".into(),
        Ok(m) => m,
    };
    if !m.file_type().is_block_device() {
        return "it is a regular file, not a zoned block device".into();
    }
    let (major, minor) = (libc::major(m.rdev()), libc::minor(m.rdev()));
    // A partition's queue is its disk's.
    let sys = format!("/sys/dev/block/{major}:{minor}");
    let model = ["queue/zoned", "../queue/zoned"]
        .iter()
        .find_map(|q| std::fs::read_to_string(format!("{sys}/{q}")).ok())
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "none".into());
    if model == "none" {
        format!("{sys}/queue/zoned says it is not zoned (none)")
    } else {
        format!(
            "it is zoned ({model}), which sluice run does not drive yet (no zone reports or resets)"
        )
    }
}

/// Open `path` for direct I/O, turning EINVAL (no O_DIRECT) into [`EngineError::NoDirectIo`].
fn open_direct(path: &Path, write: bool, job: &str) -> Result<File, EngineError> {
    OpenOptions::new()
        .read(true)
        .write(write)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() == Some(libc::EINVAL) {
                EngineError::NoDirectIo {
                    path: path.to_path_buf(),
                    fs: fs_note(path),
                }
            } else {
                io_err(path, job, e)
            }
        })
}

/// Check that files can be created in `dir` with O_DIRECT, by creating and removing a
/// probe file; returns the direct-I/O alignment there.
pub(crate) fn probe_dir(dir: &Path, job: &str) -> Result<u32, EngineError> {
    let probe = dir.join(format!(".sluice-probe-{}", std::process::id()));
    let f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_DIRECT)
        .mode(0o600)
        .open(&probe);
    match f {
        Ok(f) => {
            let align = dio_align(&f).unwrap_or(FALLBACK_ALIGN);
            drop(f);
            let _ = std::fs::remove_file(&probe);
            Ok(align)
        }
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            // Some kernels create the file before refusing O_DIRECT.
            let _ = std::fs::remove_file(&probe);
            Err(EngineError::NoDirectIo {
                path: dir.to_path_buf(),
                fs: fs_note(dir),
            })
        }
        Err(e) => {
            let hint = match e.raw_os_error() {
                Some(libc::EACCES) | Some(libc::EPERM) | Some(libc::EROFS) => hint_for(&e),
                Some(libc::ENOENT) if dir.is_dir() => {
                    "this directory exists but refuses new files (a pseudo file system such \
                     as /proc or /sys): give a --directory on a writable, disk-backed file \
                     system"
                }
                Some(libc::ENOENT) => {
                    "this directory does not exist: a filename= with a subdirectory needs \
                     that subdirectory to exist (sluice does not create directories); create \
                     it, or give a plain file name"
                }
                _ => {
                    "files cannot be created in this directory: give a --directory on a \
                      writable, disk-backed file system"
                }
            };
            Err(path_err(dir, job, e, hint))
        }
    }
}

/// Free bytes for an unprivileged user on the file system of `dir`.
pub fn free_bytes(dir: &Path) -> io::Result<u64> {
    let c = cpath(dir);
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: valid C string and out pointer.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
}

fn sizes(bs: &BlockSize) -> Vec<u32> {
    match bs {
        BlockSize::Fixed(n) => vec![*n],
        BlockSize::Split(t) => t.iter().map(|e| e.len).collect(),
    }
}

/// The file thread `t` of `job` uses: its `filename` (relative to `dir` unless
/// absolute), else fio's own name `<job>.<t>.0` in `dir`.
pub(crate) fn thread_path(job: &JobSpec, t: u32, dir: &Path) -> PathBuf {
    match &job.filename {
        Some(f) if Path::new(f).is_absolute() => PathBuf::from(f),
        Some(f) => dir.join(f),
        None => dir.join(format!("{}.{t}.0", job.name)),
    }
}

/// Plan the files of `jobs` in `dir` and check everything that can be checked without
/// writing: nothing is created (a probe file in each directory aside).
pub fn plan(
    jobs: &[JobSpec],
    dir: &Path,
    allow_device: bool,
    allow_write_existing: bool,
) -> Result<FilePlan, EngineError> {
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(EngineError::Directory {
                path: dir.to_path_buf(),
                reason: "not a directory".into(),
            })
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(EngineError::Directory {
                path: dir.to_path_buf(),
                reason: "no such directory".into(),
            })
        }
        Err(e) => {
            return Err(EngineError::Directory {
                path: dir.to_path_buf(),
                reason: e.to_string(),
            })
        }
    }

    // Which file each thread uses, and the bytes each file must hold: the one plan
    // of the address space every world uses (sluice-fio), keyed by the file's path.
    let mut paths: Vec<PathBuf> = Vec::new();
    // The paths under fio's own names (`<name>.<t>.0`): fio's layout files.
    let mut fio_named: std::collections::BTreeSet<PathBuf> = Default::default();
    let mut warnings: Vec<String> = Vec::new();
    for job in jobs {
        for t in 0..job.numjobs {
            if job.filename.is_none() {
                if job.name.contains('/') {
                    return Err(EngineError::BadJobName {
                        job: job.name.clone(),
                    });
                }
                fio_named.insert(thread_path(job, t, dir));
            }
            paths.push(thread_path(job, t, dir));
        }
    }
    let mut next = 0usize;
    let addr = AddressPlan::new(jobs, |_, _| {
        next += 1;
        paths[next - 1].clone()
    });
    let thread_file: Vec<u32> = addr.threads.iter().map(|t| t.file).collect();
    let mut files: Vec<PlannedFile> = addr
        .files
        .iter()
        .map(|f| PlannedFile {
            path: f.key.clone(),
            size: f.size,
            create: false,
            device: false,
            kernel_dev: None,
            writes: f.writes,
            align: FALLBACK_ALIGN,
            base: 0,
            first_job: jobs[f.users[0]].name.clone(),
            fill: f.users.iter().any(|&u| jobs[u].fill_device),
        })
        .collect();
    let users: Vec<Vec<usize>> = addr.files.iter().map(|f| f.users.clone()).collect();

    // Inspect existing files; find those to create.
    let mut create_dirs: BTreeMap<PathBuf, (u64, String)> = BTreeMap::new();
    for (i, f) in files.iter_mut().enumerate() {
        let job = f.first_job.clone();
        if let Some(&u) = users[i].iter().find(|&&u| jobs[u].zone.zbd()) {
            return Err(EngineError::NotZoned {
                path: f.path.clone(),
                job: jobs[u].name.clone(),
                what: zoned_model(&f.path),
            });
        }
        match std::fs::metadata(&f.path) {
            // A missing path among the devices is a device this machine lacks (/dev/shm
            // is a memory file system, where files may be created).
            Err(e)
                if e.kind() == io::ErrorKind::NotFound
                    && f.path.starts_with("/dev")
                    && !f.path.starts_with("/dev/shm") =>
            {
                return Err(EngineError::NoSuchDevice {
                    path: f.path.clone(),
                    job,
                });
            }
            // A symbolic link to nothing: creating the file would follow it (or fail);
            // it is not ours to replace.
            Err(e)
                if e.kind() == io::ErrorKind::NotFound
                    && std::fs::symlink_metadata(&f.path).is_ok() =>
            {
                return Err(path_err(&f.path, &job, e, DANGLING));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                f.create = true;
                let parent = f
                    .path
                    .parent()
                    .filter(|p| !p.as_os_str().is_empty())
                    .unwrap_or(Path::new("."))
                    .to_path_buf();
                create_dirs.entry(parent).or_insert((0, job));
            }
            Err(e) => return Err(io_err(&f.path, &job, e)),
            Ok(m) if KernelDev::of(&m).is_some() => {
                let dev = KernelDev::of(&m).expect("checked");
                for &u in &users[i] {
                    dev.check(&f.path, &jobs[u])?;
                }
                f.kernel_dev = Some(dev);
                warnings.push(format!(
                    "job '{job}': {} is the kernel's {} device, no storage: the run measures \
                     the kernel and sluice (opened without O_DIRECT, which it does not take)",
                    f.path.display(),
                    if dev == KernelDev::Null {
                        "null"
                    } else {
                        "zero"
                    },
                ));
            }
            Ok(m) => {
                let ft = m.file_type();
                if ft.is_block_device() {
                    if !allow_device {
                        return Err(EngineError::BlockDevice {
                            path: f.path.clone(),
                            job,
                        });
                    }
                    // A trim job's trims are the device's discards
                    // (`BLOCK_URING_CMD_DISCARD`, sluice-uring's sqe.rs).
                    f.device = true;
                } else if !ft.is_file() {
                    return Err(EngineError::NotAFile {
                        path: f.path.clone(),
                        job,
                    });
                } else if f.writes && !allow_write_existing && !fio_named.contains(&f.path) {
                    return Err(EngineError::WriteExisting {
                        path: f.path.clone(),
                        job,
                    });
                }
                let file = open_direct(&f.path, false, &job)?;
                let size = if f.device {
                    f.align = device_align(&file).map_err(|e| {
                        path_err(
                            &f.path,
                            &job,
                            e,
                            "cannot read the device's logical block size",
                        )
                    })?;
                    let mut end = &file;
                    io::Seek::seek(&mut end, io::SeekFrom::End(0))
                        .map_err(|e| path_err(&f.path, &job, e, "cannot read the device's size"))?
                } else {
                    f.align = dio_align(&file).unwrap_or(FALLBACK_ALIGN);
                    m.len()
                };
                if size < f.size && !f.fill {
                    return Err(EngineError::TooSmall {
                        path: f.path.clone(),
                        job,
                        size,
                        need: f.size,
                    });
                }
                if f.writes && !f.device && !allow_write_existing && fio_named.contains(&f.path) {
                    warnings.push(format!(
                        "job '{job}': reusing {} (a job file under fio's name, {size} bytes): \
                         its writes overwrite it, as fio's do; it is kept at the end",
                        f.path.display()
                    ));
                }
            }
        }
    }

    // Directories where files are created: writable, O_DIRECT, alignment, space.
    for (d, (_, job)) in create_dirs.iter_mut() {
        let align = probe_dir(d, job)?;
        for f in files
            .iter_mut()
            .filter(|f| f.create && f.path.parent() == Some(d.as_path()))
        {
            f.align = align;
            f.size = f.size.div_ceil(align as u64) * align as u64;
        }
    }
    // Space per file system, not per directory: two directories on one file system
    // share its free space. Keyed by the file system's device number.
    let mut per_fs: BTreeMap<u64, (u64, PathBuf)> = BTreeMap::new();
    for d in create_dirs.keys() {
        let need: u64 = files
            .iter()
            .filter(|f| f.create && !f.fill && f.path.parent() == Some(d.as_path()))
            .map(|f| f.size)
            .sum();
        let dev = std::fs::metadata(d)
            .map_err(|e| EngineError::Directory {
                path: d.clone(),
                reason: format!("cannot read it: {e}"),
            })?
            .dev();
        per_fs.entry(dev).or_insert((0, d.clone())).0 += need;
    }
    for (need, d) in per_fs.values() {
        let avail = free_bytes(d).map_err(|e| EngineError::Directory {
            path: d.clone(),
            reason: format!("cannot read free space: {e}"),
        })?;
        if *need > avail {
            return Err(EngineError::NoSpace {
                dir: d.clone(),
                need: *need,
                need_gib: *need as f64 / (1u64 << 30) as f64,
                avail,
                avail_gib: avail as f64 / (1u64 << 30) as f64,
            });
        }
    }

    // Alignment of every job against every file it uses.
    for (i, f) in files.iter().enumerate() {
        for &j in &users[i] {
            let job = &jobs[j];
            let a = f.align as u64;
            let mis = |what: String| EngineError::Misaligned {
                job: job.name.clone(),
                line: job.line,
                what,
                align: f.align,
                path: f.path.clone(),
            };
            if !job.offset.is_multiple_of(a) {
                return Err(mis(format!("offset={}", job.offset)));
            }
            if !job.offset_increment.is_multiple_of(a) {
                return Err(mis(format!("offset_increment={}", job.offset_increment)));
            }
            let mut lens = Vec::new();
            if job.rw.reads() {
                lens.extend(sizes(&job.bs.read));
            }
            if job.rw.writes() {
                lens.extend(sizes(&job.bs.write));
            }
            if job.rw.trims() {
                lens.extend(sizes(&job.bs.trim));
            }
            if let Some(&bad) = lens.iter().find(|&&l| !(l as u64).is_multiple_of(a)) {
                return Err(mis(format!("bs={bad}")));
            }
        }
    }

    for f in files.iter().filter(|f| f.kernel_dev.is_none()) {
        let at = if f.create {
            f.path.parent().unwrap_or(dir)
        } else {
            f.path.as_path()
        };
        if let Some(fs) = memory_fs(at) {
            warnings.push(format!(
                "{} is on {fs}, which is memory: the run measures memory, not a device",
                f.path.display()
            ));
        }
    }
    // Bases from the sizes rounded to each file's alignment (the same bases as the
    // plan's: files start on MiB boundaries).
    let mut addr = addr;
    for (a, f) in addr.files.iter_mut().zip(&files) {
        a.size = f.size;
    }
    addr.lay_out();
    for (f, a) in files.iter_mut().zip(&addr.files) {
        f.base = a.base;
    }
    Ok(FilePlan {
        files,
        thread_file,
        warnings,
    })
}

/// The files of a run, laid out and open for direct I/O. Dropping it removes the files
/// sluice created, unless they are kept.
#[derive(Debug)]
pub struct FileSet {
    plan: FilePlan,
    files: Vec<File>,
    created: Vec<PathBuf>,
    keep: bool,
}

impl FileSet {
    /// Create and pre-fill the planned files that do not exist, then open every file
    /// for direct I/O (read-write when a job writes to it). `progress` is told
    /// `(path, bytes written, bytes to write)` now and then; `stop` aborts the lay-out
    /// (the files created are removed).
    pub fn prepare(
        plan: FilePlan,
        keep: bool,
        stop: &AtomicBool,
        progress: &mut dyn FnMut(&Path, u64, u64),
    ) -> Result<FileSet, EngineError> {
        let mut set = FileSet {
            plan,
            files: Vec::new(),
            created: Vec::new(),
            keep,
        };
        let mut buf = AlignedBuf::new(FILL_CHUNK);
        buf.fill_random(0x5EED_F11E);
        let total: u64 = set
            .plan
            .files
            .iter()
            .filter(|f| f.create && !f.fill)
            .map(|f| f.size)
            .sum();
        let mut done = 0u64;
        for i in 0..set.plan.files.len() {
            let f = set.plan.files[i].clone();
            if !f.create {
                continue;
            }
            // create_new: a file that appeared since planning is not ours to clobber.
            let file = OpenOptions::new()
                .write(true)
                .create_new(true)
                .custom_flags(libc::O_DIRECT)
                .mode(0o644)
                .open(&f.path)
                .map_err(|e| {
                    if e.raw_os_error() == Some(libc::EEXIST) {
                        path_err(&f.path, &f.first_job, e, APPEARED)
                    } else {
                        io_err(&f.path, &f.first_job, e)
                    }
                })?;
            set.created.push(f.path.clone());
            if f.fill {
                // fill_device: its job writes it until the file system is full.
                continue;
            }
            let mut off = 0u64;
            let mut chunk_no = 0u64;
            while off < f.size {
                if stop.load(Ordering::Relaxed) {
                    return Err(EngineError::InterruptedPrefill);
                }
                let n = ((f.size - off) as usize).min(FILL_CHUNK);
                // Make every 4 KiB block of the file distinct.
                for (k, block) in buf.as_mut_slice().chunks_exact_mut(4096).enumerate() {
                    let tag = (chunk_no << 16 | k as u64) ^ (i as u64) << 48;
                    block[..8].copy_from_slice(&tag.to_le_bytes());
                }
                file.write_all_at(&buf.as_slice()[..n], off)
                    .map_err(|source| EngineError::Prefill {
                        path: f.path.clone(),
                        source,
                    })?;
                off += n as u64;
                done += n as u64;
                chunk_no += 1;
                if chunk_no.is_multiple_of(64) {
                    progress(&f.path, done, total);
                }
            }
            file.sync_all().map_err(|source| EngineError::Prefill {
                path: f.path.clone(),
                source,
            })?;
            progress(&f.path, done, total);
        }
        for f in &set.plan.files {
            let file = if f.kernel_dev.is_some() {
                kernel_dev::open(&f.path, f.writes).map_err(|e| io_err(&f.path, &f.first_job, e))?
            } else {
                open_direct(&f.path, f.writes, &f.first_job)?
            };
            set.files.push(file);
        }
        Ok(set)
    }

    /// The plan the set was made from.
    pub fn plan(&self) -> &FilePlan {
        &self.plan
    }

    /// The open file of index `i`.
    pub(crate) fn file(&self, i: usize) -> &File {
        &self.files[i]
    }

    /// The files sluice created (removed on drop unless kept).
    pub fn created(&self) -> &[PathBuf] {
        &self.created
    }
}

impl Drop for FileSet {
    fn drop(&mut self) {
        self.files.clear();
        if self.keep {
            return;
        }
        for p in &self.created {
            let _ = std::fs::remove_file(p);
        }
    }
}

#[cfg(test)]
mod tests;
