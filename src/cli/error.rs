//! The one error type of the `sluice` subcommands, which knows its exit code, and
//! fio's exit rule for a run whose jobs had errors ([`jobs_ended`]).

use sluice_core::policy::{ParamError, PolicyError};
use sluice_workload::WorkloadError;

/// Everything that can stop a command. Bad input exits with 2, a failed run with 1.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The job file is wrong or unreadable.
    #[error("{0}")]
    Workload(#[from] WorkloadError),
    /// The device profile is wrong or unknown.
    #[error("{0}")]
    Device(#[from] sluice_device::ProfileError),
    /// A `--policy` value is malformed.
    #[error("--policy: {0}")]
    PolicySpec(#[from] ParamError),
    /// A policy name or parameter is wrong.
    #[error("--policy: {0}")]
    Policy(#[from] PolicyError),
    /// The simulation could not run.
    #[error("{0}")]
    Sim(#[from] sluice_sim::SimError),
    /// Writing results failed.
    #[error("{0}")]
    Metrics(#[from] sluice_metrics::MetricsError),
    /// A repro experiment could not run.
    #[error("{0}")]
    Repro(#[from] sluice_repro::ReproError),
    /// Repro goals were missed.
    #[error("{0} goal(s) failed")]
    GoalsFailed(usize),
    /// FIOS figures could not be computed.
    #[error("--alone: {0}")]
    Fios(#[from] sluice_metrics::FiosMetricError),
    /// Writing to stdout failed.
    #[error("output: {0}")]
    Io(#[from] std::io::Error),
    /// The real engine refused the run or failed (`sluice run`).
    #[error("{0}")]
    Engine(#[from] sluice_engine::EngineError),
    /// `sluice calibrate` refused its input or failed.
    #[error("{0}")]
    Calibrate(#[from] sluice_calibrate::CalibrateError),
    /// A command-line value is malformed (what, and how to write it).
    #[error("{0}")]
    Usage(String),
    /// `sluice run`: blocks failed their `verify` check (described above the table).
    #[error("{0} block(s) failed verification; the first failure of each job is described above")]
    VerifyFailed(u64),
    /// `sluice run`: I/Os failed (each job's count and first error printed above).
    #[error(
        "{0} I/O error(s); each job's count and first error are printed above (fio, too, \
         exits non-zero when a job had errors)"
    )]
    IoErrors(u64),
    /// A job's thread ended on an error (fio's exit status; [`jobs_ended`]).
    #[error(
        "{count} job report(s) had a thread end on an error (first: job '{job}', policy {policy}: \
         {errno}); fio, too, exits non-zero then — give the job continue_on_error= to go on \
         after errors"
    )]
    JobsEnded {
        /// Report entries with a thread error.
        count: usize,
        /// The first one's job.
        job: String,
        /// Its run's policy.
        policy: String,
        /// Its errno, named.
        errno: String,
    },
    /// `sluice crashtest`: seeds failed (each printed with its replay command).
    #[error("{0} crash seed(s) failed; each is printed above with the command that replays it")]
    CrashtestFailed(usize),
    /// A cell of `sluice sweep` could not run (named with the command that replays it).
    #[error("cell {cell} (`{command}`): {source}")]
    Cell {
        /// The cell's index.
        cell: usize,
        /// The `sluice sim` command that runs it alone.
        command: String,
        /// Why it failed.
        #[source]
        source: Box<CliError>,
    },
    /// The job set cannot run on the journaled store, or its run failed (`--fs`).
    #[error("--fs: {0}")]
    Store(#[from] sluice_store::fio::FioError),
    /// Stopped by Ctrl-C; the results so far were printed.
    #[error("interrupted; the results above cover the run until the stop")]
    Interrupted,
    /// Stopped by Ctrl-C before any run started (while laying out files).
    #[error("interrupted before anything ran: {0}; nothing was measured")]
    InterruptedBefore(String),
    /// `sluice fsck`: the store is damaged or inconsistent.
    #[error("{0}")]
    Fsck(String),
}

impl CliError {
    /// The process exit code: 2 for bad input (job, device, policy), 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Workload(_)
            | CliError::Device(_)
            | CliError::PolicySpec(_)
            | CliError::Policy(_) => 2,
            CliError::Sim(e) => match e {
                sluice_sim::SimError::NoJobs
                | sluice_sim::SimError::NoCores
                | sluice_sim::SimError::WeightConflict(_)
                | sluice_sim::SimError::TooManyThreads(_)
                | sluice_sim::SimError::Limit(_)
                | sluice_sim::SimError::Zones(_)
                | sluice_sim::SimError::Placement(_) => 2,
                _ => 1,
            },
            CliError::Repro(sluice_repro::ReproError::UnknownSuite { .. }) => 2,
            CliError::Repro(_) | CliError::GoalsFailed(_) => 1,
            CliError::Metrics(_) | CliError::Io(_) | CliError::Fios(_) => 1,
            CliError::Engine(e) => e.exit_code(),
            CliError::Calibrate(e) => e.exit_code(),
            CliError::Usage(_) => 2,
            CliError::VerifyFailed(_)
            | CliError::CrashtestFailed(_)
            | CliError::IoErrors(_)
            | CliError::JobsEnded { .. } => 1,
            CliError::Cell { source, .. } => source.exit_code(),
            CliError::Store(e) if e.is_input() => 2,
            CliError::Store(_) => 1,
            CliError::Interrupted | CliError::InterruptedBefore(_) => 130,
            CliError::Fsck(_) => 1,
        }
    }
}

impl CliError {
    /// Writing to stdout failed because its reader went away (`sluice sim … | head`):
    /// the command ends quietly with status 0, as fio does.
    pub fn is_broken_pipe(&self) -> bool {
        fn io_of(e: &CliError) -> Option<&std::io::Error> {
            match e {
                CliError::Io(e) => Some(e),
                CliError::Metrics(sluice_metrics::MetricsError::Write { source, .. }) => {
                    Some(source)
                }
                CliError::Cell { source, .. } => io_of(source),
                _ => None,
            }
        }
        io_of(self).is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    }
}

/// fio's exit status: a failure when a job's thread ended on an error (an error its
/// `continue_on_error` does not name); errors the jobs went on after do not count.
pub fn jobs_ended(reports: &[sluice_metrics::RunReport]) -> Result<(), CliError> {
    let ended: Vec<_> = reports
        .iter()
        .flat_map(|r| r.entries.iter().map(move |j| (r, j)))
        .filter(|(_, j)| j.thread_error != 0)
        .collect();
    match ended.first() {
        None => Ok(()),
        Some((r, j)) => Err(CliError::JobsEnded {
            count: ended.len(),
            job: j.jobname.clone(),
            policy: r.policy.clone(),
            errno: sluice_metrics::errors::errno_name(j.thread_error),
        }),
    }
}
