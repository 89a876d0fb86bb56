//! Why a real run could not start or could not finish.

use std::io;
use std::path::PathBuf;

use sluice_core::policy::PolicyError;
use sluice_core::Nanos;

/// Why the engine refused a run or could not finish it. Every message says what is
/// wrong, where, and how to fix it. Set-up faults are found before any file is
/// created, so a refused run leaves nothing behind.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// A buffered job (`direct=0`) cannot run through the page cache as configured.
    #[error("{0}")]
    Buffered(String),
    /// `fill_device` jobs cannot fill their files as asked.
    #[error("{0}")]
    Fill(String),
    /// The job list was empty.
    #[error("no jobs to run")]
    NoJobs,
    /// A job asks for NVMe Flexible Data Placement (`fdp=1`), which needs write
    /// commands with a placement directive: NVMe passthrough, which `sluice run` does
    /// not issue.
    #[error(
        "job '{0}' has fdp=1: placement IDs need NVMe passthrough writes to an FDP \
         namespace (fio's io_uring_cmd, xnvme on /dev/ngXnY), which `sluice run` does \
         not issue; run it under `sluice sim --device nand`"
    )]
    Placement(String),
    /// An `atomic=1` job's writes do not fit its file's atomic write unit (none, or a
    /// size outside it; `statx` `STATX_WRITE_ATOMIC`).
    #[error("{0}")]
    Atomic(String),
    /// A job asks for metadata or protection information (`md_per_io_size`, …).
    #[error("{0}")]
    Metadata(String),
    /// `--workers 0`.
    #[error("--workers must be at least 1")]
    NoWorkers,
    /// More threads than the engine can index.
    #[error("too many threads ({0}); at most 65535 over all jobs")]
    TooManyThreads(u64),
    /// The run is larger than sluice's limits (docs/limits.md).
    #[error("{0}")]
    Limit(#[from] sluice_workload::LimitError),
    /// The I/O buffers would take too much memory.
    #[error(
        "worker {worker} would need {bytes} bytes of I/O buffers (its threads' iodepth × \
         the largest block); the limit is {limit} bytes: lower iodepth, numjobs or bs, or \
         use more --workers"
    )]
    BufferMemory {
        /// The worker.
        worker: usize,
        /// Bytes it would pin.
        bytes: u64,
        /// [`crate::MAX_BUFFER_BYTES`].
        limit: u64,
    },
    /// A policy could not be built.
    #[error("--policy: {0}")]
    Policy(#[from] PolicyError),
    /// Two jobs name the same flow with different weights.
    #[error("{0}")]
    WeightConflict(#[from] sluice_workload::FlowConflict),
    /// The job's name cannot be a file name.
    #[error("job '{job}': its name contains '/' and cannot name its data file; rename the job or give filename=")]
    BadJobName {
        /// The job.
        job: String,
    },
    /// The directory the files go to does not exist or is not a directory.
    #[error("{path}: {reason}; create it or give another --directory")]
    Directory {
        /// The directory.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A file could not be created, opened or inspected.
    #[error("{path} (job '{job}'): {source}; {hint}")]
    Path {
        /// The file or directory.
        path: PathBuf,
        /// The first job that uses it.
        job: String,
        /// What the system said.
        #[source]
        source: io::Error,
        /// How to fix it.
        hint: &'static str,
    },
    /// The file system refuses O_DIRECT (tmpfs, some FUSE and network file systems).
    #[error(
        "{path}: the file system does not support direct I/O (O_DIRECT){fs}; \
         sluice run measures the device, not the page cache: put the files on a \
         disk-backed file system with --directory"
    )]
    NoDirectIo {
        /// The file or directory.
        path: PathBuf,
        /// ", it is tmpfs" when known.
        fs: String,
    },
    /// Not enough free space for the files to create.
    #[error(
        "{dir}: the jobs need {need} bytes ({need_gib:.2} GiB) of new files on its file \
         system but only {avail} bytes ({avail_gib:.2} GiB) are free there; free space, shrink \
         size=, or give another --directory"
    )]
    NoSpace {
        /// The directory.
        dir: PathBuf,
        /// Bytes needed.
        need: u64,
        /// `need` in GiB.
        need_gib: f64,
        /// Bytes available to this user.
        avail: u64,
        /// `avail` in GiB.
        avail_gib: f64,
    },
    /// A block size or offset is not a multiple of the logical block size.
    #[error(
        "job '{job}' (line {line}): {what} is not a multiple of the logical block size {align} \
         of {path}; direct I/O needs aligned sizes and offsets: use a multiple of {align}"
    )]
    Misaligned {
        /// The job.
        job: String,
        /// Its section line.
        line: usize,
        /// `bs=1000`, `offset=100`, ….
        what: String,
        /// The logical block size.
        align: u32,
        /// The file or device.
        path: PathBuf,
    },
    /// A path under `/dev` that does not exist: a device this machine does not have
    /// (sluice creates no files among the devices).
    #[error(
        "{path} (job '{job}') names a device that does not exist on this machine; sluice run \
         creates no files in /dev. Give the device this machine has (with --allow-device), \
         or a file name (created in --directory)"
    )]
    NoSuchDevice {
        /// The path.
        path: PathBuf,
        /// The job.
        job: String,
    },
    /// A `zonemode=zbd` job's file is not a zoned block device, or is one (which
    /// `sluice run` does not drive yet).
    #[error(
        "{path} (job '{job}'): zonemode=zbd needs a zoned block device, and {what}; \
         use zonemode=none or strided here, or run the job under sluice sim --device zns"
    )]
    NotZoned {
        /// The file.
        path: PathBuf,
        /// The job.
        job: String,
        /// What the file is.
        what: String,
    },
    /// A block device was named without `--allow-device`.
    #[error(
        "{path} (job '{job}') is a block device; sluice run uses one only with --allow-device \
         (writes and trims destroy its data)"
    )]
    BlockDevice {
        /// The device.
        path: PathBuf,
        /// The job.
        job: String,
    },
    /// An existing file would be written without `--allow-write-existing`.
    #[error(
        "{path} exists and job '{job}' writes to it; sluice run writes only to files it \
         creates: remove the file, give another --directory, or pass --allow-write-existing"
    )]
    WriteExisting {
        /// The file.
        path: PathBuf,
        /// The job.
        job: String,
    },
    /// A job gives no size and its file cannot give one (`sluice_engine::resolve_sizes`).
    #[error("job '{job}' gives no size=, and {path} {reason}")]
    NoSize {
        /// The job.
        job: String,
        /// Its file.
        path: PathBuf,
        /// Why the file gives no size, and the fix.
        reason: String,
    },
    /// An existing file or device is smaller than the jobs' region.
    #[error(
        "{path} has {size} bytes but job '{job}' needs {need} (offset + size); remove the file \
         so that sluice creates it, or shrink size="
    )]
    TooSmall {
        /// The file.
        path: PathBuf,
        /// The job.
        job: String,
        /// Its size.
        size: u64,
        /// Bytes needed.
        need: u64,
    },
    /// Neither a regular file nor a block device (nor /dev/null, /dev/zero).
    #[error(
        "{path} (job '{job}') is neither a regular file nor a block device (of the character \
         devices only /dev/null and /dev/zero are taken)"
    )]
    NotAFile {
        /// The path.
        path: PathBuf,
        /// The job.
        job: String,
    },
    /// A job's I/O that /dev/null or /dev/zero cannot serve (`files::kernel_dev`).
    #[error("{path} (job '{job}'): {what}")]
    KernelDevice {
        /// The device.
        path: PathBuf,
        /// The job.
        job: String,
        /// Why, and what to do.
        what: &'static str,
    },
    /// The io_uring instance could not be created.
    #[error("cannot create an io_uring with {entries} entries: {source}; {hint}")]
    Ring {
        /// Entries asked for.
        entries: u32,
        /// What the kernel said.
        #[source]
        source: io::Error,
        /// Why, and how to fix it.
        hint: &'static str,
    },
    /// Writing a job file's initial contents failed.
    #[error("laying out {path}: {source}; the partly written file was removed")]
    Prefill {
        /// The file.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: io::Error,
    },
    /// Interrupted (Ctrl-C) while laying out the files; they were removed.
    #[error("interrupted while laying out the job files; the files created were removed")]
    InterruptedPrefill,
    /// A policy holds requests without dispatching them and without a timer.
    #[error(
        "run stalled at {now_ns} ns on worker {worker}: {queued} request(s) held by policy \
         '{policy}', {waiting} waiting for admission, nothing in flight and no timer — a policy bug"
    )]
    Stalled {
        /// Time since the run started.
        now_ns: Nanos,
        /// Worker index.
        worker: usize,
        /// Policy name.
        policy: String,
        /// Requests the policy holds.
        queued: usize,
        /// Requests refused admission.
        waiting: usize,
    },
    /// A worker's wake-up eventfd could not be created.
    #[error("cannot create an eventfd for a worker's wake-ups: {0}")]
    Doorbell(#[source] std::io::Error),
    /// The ring failed while running (not an I/O error of one request).
    #[error("io_uring failed on worker {worker}: {source}")]
    RingFailed {
        /// Worker index.
        worker: usize,
        /// What the kernel said.
        #[source]
        source: io::Error,
    },
    /// A worker thread panicked.
    #[error("worker {0} panicked: {1}")]
    WorkerPanic(usize, String),
    /// Writing the page cache's dirty pages to their file after the run failed.
    #[error(
        "writing the page cache's dirty pages to {path} after the run: {source}; the file \
         does not hold every write its buffered jobs made"
    )]
    WriteOut {
        /// The file.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: io::Error,
    },
}

impl EngineError {
    /// The process exit code: 2 for bad input and set-up faults (nothing was run),
    /// 1 for faults during a run.
    pub fn exit_code(&self) -> u8 {
        match self {
            EngineError::Stalled { .. }
            | EngineError::RingFailed { .. }
            | EngineError::WorkerPanic(..)
            | EngineError::WriteOut { .. } => 1,
            // As an interrupted run: 128 + SIGINT.
            EngineError::InterruptedPrefill => 130,
            _ => 2,
        }
    }
}

impl From<sluice_uring::UringError> for EngineError {
    /// The io_uring layer's set-up faults, as the engine reports them.
    fn from(e: sluice_uring::UringError) -> Self {
        match e {
            sluice_uring::UringError::Ring {
                entries,
                source,
                hint,
            } => EngineError::Ring {
                entries,
                source,
                hint,
            },
            sluice_uring::UringError::Doorbell(source) => EngineError::Doorbell(source),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ring_the_kernel_refuses_is_a_set_up_error_with_its_hint() {
        // More entries than io_uring allows (32768): the kernel says EINVAL.
        let e = EngineError::from(sluice_uring::new_ring(1 << 20).err().expect("refused"));
        assert_eq!(e.exit_code(), 2);
        let msg = e.to_string();
        assert!(
            msg.contains("cannot create an io_uring with 1048576 entries"),
            "{msg}"
        );
        assert!(msg.contains("smaller total iodepth"), "{msg}");
        let e = EngineError::Ring {
            entries: 8,
            source: io::Error::from_raw_os_error(libc::EPERM),
            hint: sluice_uring::ring_hint(&io::Error::from_raw_os_error(libc::EPERM)),
        };
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("io_uring_disabled"));
    }
}
