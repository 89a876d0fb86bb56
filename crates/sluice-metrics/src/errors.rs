//! fio's error accounting of a job: which errno ended a thread (`error`), how many
//! errors it went on after and the first of them (`total_err`, `first_error`).
//!
//! fio (`io_u.c`, `verify.c`, `libfio.c` `update_error_count`): an error the job's
//! `continue_on_error` names is *non-fatal* — it is counted in `total_err_count`, the
//! first one's errno kept as `first_error`, and the thread's error cleared, so it goes
//! on; any other error stays the thread's `error` and ends it. A job's report
//! (`stat.c` `sum_thread_stats`) gives as `error` the first thread error it finds, or,
//! with `continue_on_error` and no thread error, the first continued one; `total_err`
//! and `first_error` appear only when the job has `continue_on_error`. fio's exit
//! status counts the threads that ended on an error.
//!
//! sluice's block layer carries ok/failed only, so the errno is the failure's kind:
//! [`EIO`] for a failed I/O (what a media error gives a Linux caller), [`EILSEQ`] for
//! read-back data that failed its check, [`ETIMEDOUT`] for a latency-target search whose
//! depth 1 missed the target, [`EINVAL`] for a zoned write larger than a zone. The
//! values are Linux's.

use sluice_core::Op;
use sluice_workload::ContinueOn;

/// Linux's `EIO`: a failed I/O.
pub const EIO: i32 = 5;
/// Linux's `EINVAL`: fio's zoned write larger than the zone (`zbd_adjust_block`).
pub const EINVAL: i32 = 22;
/// Linux's `EILSEQ`: fio's failed verify check.
pub const EILSEQ: i32 = 84;
/// Linux's `ETIMEDOUT`: fio's latency target missed at depth 1.
pub const ETIMEDOUT: i32 = 110;

/// The name of an errno sluice reports (`EIO`, …), or the number.
pub fn errno_name(e: i32) -> String {
    match e {
        EIO => "EIO (Input/output error)".into(),
        EINVAL => "EINVAL (Invalid argument)".into(),
        EILSEQ => "EILSEQ (a block failed its verify check)".into(),
        ETIMEDOUT => "ETIMEDOUT (latency target missed)".into(),
        other => format!("errno {other}"),
    }
}

/// The errors of one thread, or of the threads a report entry sums.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Errors {
    /// Every failed I/O and failed check, continued or not (sluice's `failed_ios`).
    pub failed: u64,
    /// The errors the thread went on after (fio's `total_err_count`).
    pub continued: u64,
    /// The errno of the first of them, 0 for none (fio's `first_error`).
    pub first_continued: i32,
    /// The errno of the first error that ended a thread, 0 for none (fio's thread
    /// `error`).
    pub fatal: i32,
}

impl Errors {
    /// Count one error of kind `errno` of an I/O in direction `op`, sorted by
    /// `continue_on` as fio sorts it (`td_non_fatal_error`): `EIO` by the I/O's
    /// direction, `EILSEQ` as a verify error, anything else ends the thread.
    pub fn add(&mut self, errno: i32, op: Op, continue_on: &ContinueOn) {
        self.failed += 1;
        let goes_on = match errno {
            EIO => continue_on.after_io(op),
            EILSEQ => continue_on.verify,
            _ => false,
        };
        if goes_on {
            self.continued += 1;
            if self.first_continued == 0 {
                self.first_continued = errno;
            }
        } else if self.fatal == 0 {
            self.fatal = errno;
        }
    }

    /// Add `o`'s (another thread's of the same entry); the first errnos found are kept.
    pub fn merge(&mut self, o: &Errors) {
        self.failed += o.failed;
        self.continued += o.continued;
        if self.first_continued == 0 {
            self.first_continued = o.first_continued;
        }
        if self.fatal == 0 {
            self.fatal = o.fatal;
        }
    }

    /// fio's `error` of an entry: the error that ended a thread, else — for a job with
    /// `continue_on_error` — the first it went on after.
    pub fn error(&self, continue_on_error: bool) -> i32 {
        if self.fatal != 0 || !continue_on_error {
            self.fatal
        } else {
            self.first_continued
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fios_rule_for_error_total_err_and_first_error() {
        // Without continue_on_error the first failure ends the thread: error = EIO,
        // nothing continued.
        let none = ContinueOn::default();
        let mut e = Errors::default();
        e.add(EIO, Op::Write, &none);
        e.add(EIO, Op::Write, &none); // one in flight when it stopped
        assert_eq!(
            (e.failed, e.continued, e.fatal, e.error(false)),
            (2, 0, EIO, EIO)
        );

        // continue_on_error=read: read errors are counted and go on; a verify failure
        // ends the thread, and it is the entry's error.
        let read = ContinueOn::parse("read").unwrap();
        let mut e = Errors::default();
        e.add(EIO, Op::Read, &read);
        e.add(EIO, Op::Read, &read);
        assert_eq!(
            (e.continued, e.first_continued, e.error(true)),
            (2, EIO, EIO)
        );
        assert_eq!(e.fatal, 0);
        e.add(EILSEQ, Op::Read, &read);
        assert_eq!((e.fatal, e.error(true), e.failed), (EILSEQ, EILSEQ, 3));

        // continue_on_error=verify: a failed check is continued, a latency miss is not.
        let verify = ContinueOn::parse("verify").unwrap();
        let mut e = Errors::default();
        e.add(EILSEQ, Op::Read, &verify);
        assert_eq!(
            (e.fatal, e.first_continued, e.error(true)),
            (0, EILSEQ, EILSEQ)
        );
        e.add(ETIMEDOUT, Op::Read, &verify);
        assert_eq!(e.error(true), ETIMEDOUT);

        // Merging keeps the first errnos found and sums the counts.
        let mut a = Errors::default();
        let mut b = Errors::default();
        b.add(EINVAL, Op::Write, &ContinueOn::parse("all").unwrap());
        a.merge(&b);
        assert_eq!((a.failed, a.fatal, a.continued), (1, EINVAL, 0));
    }
}
