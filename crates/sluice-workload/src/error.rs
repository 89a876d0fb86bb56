//! The crate's one error type.

use std::path::PathBuf;

/// Why a job file could not be used. Every variant's message names the file and, where
/// there is one, the line and the option, says what is wrong and how to fix it:
///
/// ```text
/// jobs/mix.fio:12: option 'bs': cannot read 'x4k' as a size (e.g. 4k, 128KiB, 1g)
/// ```
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    /// A line that is neither a section header, an option, a comment nor blank.
    #[error("{origin}:{line}: {message}")]
    Syntax {
        /// File name (or other origin) of the text.
        origin: String,
        /// 1-based line number.
        line: usize,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// An option that is unknown, misplaced, or has a value sluice cannot use.
    #[error("{origin}:{line}: option '{option}': {message}")]
    Option {
        /// File name (or other origin) of the text.
        origin: String,
        /// 1-based line number.
        line: usize,
        /// The option as written.
        option: String,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// The text has no job section (only `[global]`, or nothing).
    #[error("{origin}: no job sections; add at least one section such as [job1] (options under [global] only set defaults)")]
    NoJobs {
        /// File name (or other origin) of the text.
        origin: String,
    },
    /// fio's `--section` names no job section of the text.
    #[error("{origin}: --section {sections} names no job section of the file; give a section's name as in its [header]")]
    NoSection {
        /// File name (or other origin) of the text.
        origin: String,
        /// The names given, as the message lists them.
        sections: String,
    },
    /// The job file could not be read.
    #[error("{}: cannot read the job file: {source}", path.display())]
    Io {
        /// The path as given.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

impl WorkloadError {
    /// The line the error is about, if any.
    pub fn line(&self) -> Option<usize> {
        match self {
            WorkloadError::Syntax { line, .. } | WorkloadError::Option { line, .. } => Some(*line),
            _ => None,
        }
    }

    /// The option the error is about, if any.
    pub fn option(&self) -> Option<&str> {
        match self {
            WorkloadError::Option { option, .. } => Some(option),
            _ => None,
        }
    }
}
