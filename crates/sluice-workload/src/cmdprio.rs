//! fio's per-I/O priorities (`cmdprio_percentage`, `cmdprio_bssplit`, `cmdprio_class`,
//! `cmdprio`): some of a job's I/Os carry their own I/O priority, the others the
//! job's. In sluice a request's priority is its [`IoClass`]: an I/O drawn high gets
//! the class of its priority (real time → critical, best effort → normal, idle →
//! idle), as Linux's mq-deadline reads a request's own `ioprio` class. The level
//! (0–7) has no per-request meaning in sluice (its weights are per flow, like
//! mq-deadline, which orders by class only); it is kept for the report.
//!
//! The draw is fio's `fio_cmdprio_set_ioprio`: `r` uniform in 0..=99 from the
//! thread's own priority stream; with `cmdprio_percentage=P` the I/O is high when
//! `r < P`; with `cmdprio_bssplit` the entries for the I/O's block size are taken in
//! order and the first whose running sum of percentages exceeds `r` gives the
//! priority (none when `r` is at least their total).

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use sluice_core::{IoClass, Op};

/// One priority of `cmdprio_bssplit` (or of `cmdprio_percentage`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrioEntry {
    /// Block size the entry applies to (0 for `cmdprio_percentage`: every size).
    pub bs: u32,
    /// Percent of the I/Os of that size (0..=100).
    pub pct: u8,
    /// ioprio class: 1 real time, 2 best effort, 3 idle (fio's default: 1, the highest).
    pub class: u8,
    /// ioprio level 0 (highest) … 7.
    pub level: u8,
    /// fio's priority hint (the 5th field; command duration limits), kept for the record.
    pub hint: u16,
}

impl PrioEntry {
    /// The sluice class of an I/O with this priority (`job`: the job's own class, for
    /// class 0, "none").
    pub fn io_class(&self, job: IoClass) -> IoClass {
        class_of_ioprio(self.class, job)
    }
}

/// The class of an ioprio class number: 1 (real time) critical, 2 (best effort)
/// normal, 3 (idle) idle, 0 (none) the job's own.
pub fn class_of_ioprio(class: u8, job: IoClass) -> IoClass {
    match class {
        1 => IoClass::Critical,
        2 => IoClass::Normal,
        3 => IoClass::Idle,
        _ => job,
    }
}

/// A job's per-I/O priorities, per direction `[reads, writes]`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CmdPrio {
    /// Entries of each direction: one entry with `bs` 0 for `cmdprio_percentage`, the
    /// `cmdprio_bssplit` table (in the order written) otherwise; empty: none.
    pub dirs: [Vec<PrioEntry>; 2],
}

impl CmdPrio {
    /// Whether any I/O can be drawn high.
    pub fn active(&self) -> bool {
        self.dirs.iter().flatten().any(|e| e.pct > 0)
    }
}

/// One thread's draws: its own seeded stream, so the I/O stream (offsets, sizes)
/// is the same with and without per-I/O priorities.
#[derive(Clone, Debug)]
pub struct PrioDraw {
    prio: CmdPrio,
    rng: Xoshiro256PlusPlus,
}

impl PrioDraw {
    /// The draws of a thread whose I/O stream is seeded with `stream_seed`; `None` when
    /// the job has no per-I/O priorities.
    pub fn new(prio: &CmdPrio, stream_seed: u64) -> Option<PrioDraw> {
        prio.active().then(|| PrioDraw {
            prio: prio.clone(),
            rng: Xoshiro256PlusPlus::seed_from_u64(stream_seed ^ 0xC0DE_5EED_9210_0001),
        })
    }

    /// The priority of an I/O of `op` and `len` bytes: `Some` when it is drawn high.
    /// Flushes carry the job's priority.
    pub fn draw(&mut self, op: Op, len: u32) -> Option<PrioEntry> {
        let dir = match op {
            Op::Read => 0,
            Op::Write => 1,
            _ => return None,
        };
        let entries = &self.prio.dirs[dir];
        let total: u32 = entries
            .iter()
            .filter(|e| e.bs == 0 || e.bs == len)
            .map(|e| e.pct as u32)
            .sum();
        if total == 0 {
            return None;
        }
        let r = self.rng.random_range(0..100u32);
        if r >= total {
            return None;
        }
        let mut acc = 0;
        for e in entries.iter().filter(|e| e.bs == 0 || e.bs == len) {
            acc += e.pct as u32;
            if r < acc {
                return Some(*e);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(bs: u32, pct: u8, class: u8) -> PrioEntry {
        PrioEntry {
            bs,
            pct,
            class,
            level: 0,
            hint: 0,
        }
    }

    #[test]
    fn percentage_draws_about_that_share() {
        let p = CmdPrio {
            dirs: [vec![entry(0, 20, 1)], vec![]],
        };
        let mut d = PrioDraw::new(&p, 7).unwrap();
        let high = (0..10_000)
            .filter(|_| d.draw(Op::Read, 4096).is_some())
            .count();
        assert!((1_800..2_200).contains(&high), "{high} of 10000 drawn high");
        assert!((0..100).all(|_| d.draw(Op::Write, 4096).is_none()));
    }

    #[test]
    fn bssplit_takes_entries_of_the_size_in_order() {
        // 64k: 25 % class 1, 75 % class 3; 1m: none.
        let p = CmdPrio {
            dirs: [
                vec![
                    entry(65536, 25, 1),
                    entry(65536, 75, 3),
                    entry(1 << 20, 0, 1),
                ],
                vec![],
            ],
        };
        let mut d = PrioDraw::new(&p, 1).unwrap();
        let mut counts = [0u32; 4];
        for _ in 0..10_000 {
            counts[d.draw(Op::Read, 65536).map_or(0, |e| e.class) as usize] += 1;
        }
        assert_eq!(
            counts[0], 0,
            "every 64k I/O has a priority (25 + 75 = 100 %)"
        );
        assert!((2_200..2_800).contains(&counts[1]), "{counts:?}");
        assert!((0..100).all(|_| d.draw(Op::Read, 1 << 20).is_none()));
        assert!(d.draw(Op::Read, 4096).is_none(), "no entry for 4k");
    }

    #[test]
    fn classes() {
        assert_eq!(entry(0, 1, 1).io_class(IoClass::Idle), IoClass::Critical);
        assert_eq!(entry(0, 1, 2).io_class(IoClass::Idle), IoClass::Normal);
        assert_eq!(entry(0, 1, 3).io_class(IoClass::Normal), IoClass::Idle);
        assert_eq!(entry(0, 1, 0).io_class(IoClass::Idle), IoClass::Idle);
        assert!(PrioDraw::new(&CmdPrio::default(), 1).is_none());
    }
}
