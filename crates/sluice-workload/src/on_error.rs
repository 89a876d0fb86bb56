//! fio's `continue_on_error`: which failed I/Os end a job's thread.
//!
//! fio (`HOWTO`, "continue_on_error") ends a job on the first error it sees; the option
//! names the kinds of error the job goes on after instead — `none` (the default),
//! `read`, `write`, `io` (both), `verify`, `all`, and `0`/`1` for `none`/`all`. fio
//! sorts an error by the I/O's direction (`td_error_type`: a read's is a read error,
//! any other direction's — a write, a trim, a sync — a write error) and a failed check
//! of read-back data (`EILSEQ`) as a verify error. fio goes on only after a
//! *non-fatal* error (`EIO`, `EILSEQ`, or an `ignore_error` list's); sluice's failed
//! I/Os carry no errno through its block layer (a piece is done or failed), so every
//! failure is taken as `EIO` — which is what a device's media error or an aborted
//! command gives a Linux caller — and `ignore_error` is accepted with no effect.

/// The kinds of error a job goes on after (`continue_on_error`); the default stops at
/// every error, as fio's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ContinueOn {
    /// After a failed read.
    pub read: bool,
    /// After a failed write, trim or sync.
    pub write: bool,
    /// After a block whose read-back data failed its check.
    pub verify: bool,
}

impl ContinueOn {
    /// fio's value: `none`, `read`, `write`, `io`, `verify`, `all`, `0`, `1`.
    pub fn parse(v: &str) -> Result<ContinueOn, String> {
        let (read, write, verify) = match v.trim().to_ascii_lowercase().as_str() {
            "none" | "0" => (false, false, false),
            "read" => (true, false, false),
            "write" => (false, true, false),
            "io" => (true, true, false),
            "verify" => (false, false, true),
            "all" | "1" => (true, true, true),
            other => {
                return Err(format!(
                    "cannot read '{other}' as the errors to continue on; \
                     use none, read, write, io, verify or all (0 and 1: none and all)"
                ))
            }
        };
        Ok(ContinueOn {
            read,
            write,
            verify,
        })
    }

    /// Whether a failed I/O in direction `op` lets the thread go on.
    pub fn after_io(&self, op: sluice_core::Op) -> bool {
        match op {
            sluice_core::Op::Read => self.read,
            _ => self.write,
        }
    }

    /// Whether any kind of error lets the thread go on (fio then reports `total_err`
    /// and `first_error`).
    pub fn any(&self) -> bool {
        self.read || self.write || self.verify
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_core::Op;

    #[test]
    fn fios_values_and_directions() {
        let none = ContinueOn::parse("none").unwrap();
        assert_eq!(none, ContinueOn::default());
        assert_eq!(ContinueOn::parse("0").unwrap(), none);
        let all = ContinueOn::parse("ALL").unwrap();
        assert_eq!(ContinueOn::parse("1").unwrap(), all);
        assert!(all.read && all.write && all.verify);
        let w = ContinueOn::parse("write").unwrap();
        assert!(w.after_io(Op::Write) && w.after_io(Op::Flush) && !w.after_io(Op::Read));
        let io = ContinueOn::parse("io").unwrap();
        assert!(io.after_io(Op::Read) && io.after_io(Op::Write) && !io.verify);
        assert!(ContinueOn::parse("verify").unwrap().verify);
        assert!(!none.any() && w.any());
        let e = ContinueOn::parse("sometimes").unwrap_err();
        assert!(
            e.contains("sometimes") && e.contains("none, read, write, io"),
            "{e}"
        );
    }
}
