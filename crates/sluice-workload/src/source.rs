//! One job thread's stream of I/Os with its pacing, as both engines consume it.

use sluice_core::Nanos;

use crate::{stream_seed, IoGen, IoSpec, JobSpec, Pacer};

/// What a thread does next (see [`IoSource::next`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NextIo {
    /// Issue this I/O now.
    Issue(IoSpec),
    /// The next I/O's pacer slot is at this time; ask again then.
    At(Nanos),
    /// The thread has issued all it should (size-based end).
    Exhausted,
    /// A sync (fio's `fsync=`/`fdatasync=`/`end_fsync`) is due and waits for the
    /// thread's I/Os in flight to complete, as fio quiesces before a sync; ask again
    /// after a completion.
    Drain,
}

/// A thread's [`IoGen`] and [`Pacer`] together: the next I/O is generated once, its
/// pacer slot taken once when it is generated, and the I/O held until that slot.
#[derive(Debug)]
pub struct IoSource {
    gen: IoGen,
    pacer: Option<Pacer>,
    /// The next I/O, generated but held until its pacer slot (the second field).
    pending: Option<(IoSpec, Nanos)>,
    /// `ramp_time`: when it has passed, pacing starts afresh from its end (as fio
    /// resets its rate accounting), so a backlog from the warm-up is not caught up.
    ramp_ns: Nanos,
    ramp_over: bool,
    /// fio's `fsync=N` / `fdatasync=N`: a sync after every N writes (0: none).
    sync_every: u32,
    writes_since_sync: u32,
    sync_due: bool,
    /// The offset of the last write issued (the periodic sync's file).
    last_write: u64,
    /// `end_fsync` / `fsync_on_close`: syncs still owed when the thread has issued all
    /// it should, one per file (fio syncs each of its files).
    end_syncs: u32,
    /// The thread's files in its address space: the first's start and each one's size
    /// (`nrfiles` files of `size / nrfiles` bytes side by side from `offset`).
    files: (u64, u64, u32),
    /// The job ended by its runtime (or was stopped): the stream issues nothing more.
    ended: bool,
}

impl IoSource {
    /// The source of thread `thread` of job `job` (index `job_index`), seeded as
    /// [`IoGen::new`].
    pub fn new(job: &JobSpec, job_index: usize, thread: u32, seed: u64) -> IoSource {
        IoSource {
            gen: IoGen::new(job, job_index, thread, seed),
            pacer: Pacer::seeded(job, stream_seed(seed, job.randseed, job_index, thread)),
            pending: None,
            ramp_ns: job.ramp_ns,
            ramp_over: job.ramp_ns == 0,
            sync_every: job.fsync_every,
            writes_since_sync: 0,
            sync_due: false,
            last_write: job.thread_offset(thread),
            end_syncs: if job.end_fsync { job.nrfiles.max(1) } else { 0 },
            files: (
                job.thread_offset(thread),
                (job.size.max(1) / job.nrfiles.max(1) as u64).max(1),
                job.nrfiles.max(1),
            ),
            ended: false,
        }
    }

    /// The job's runtime is over (or the run was stopped): the stream issues nothing
    /// more (an I/O held for its pacer slot is dropped, a periodic sync not yet issued
    /// is not). Returns whether the thread still owes its end sync (`end_fsync`,
    /// `fsync_on_close`): as fio syncs its files when its I/O loop ends, whatever
    /// ended it, [`IoSource::next_with`] then issues it once nothing is in flight, and
    /// [`NextIo::Exhausted`] after it.
    pub fn end_now(&mut self) -> bool {
        self.ended = true;
        self.pending = None;
        self.sync_due = false;
        self.end_syncs > 0
    }

    /// Whether the stream has nothing more to issue (its size is done, or it ended).
    fn exhausted(&self) -> bool {
        self.ended || self.gen.exhausted()
    }

    /// What to do at `now_ns`; pacer slots count from `pace_base_ns` (the job's start).
    /// For a thread with nothing in flight (see [`IoSource::next_with`]).
    pub fn next(&mut self, now_ns: Nanos, pace_base_ns: Nanos) -> NextIo {
        self.next_with(now_ns, pace_base_ns, 0)
    }

    /// What to do at `now_ns`, for a thread with `in_flight` I/Os outstanding: a sync
    /// (an [`IoSpec`] with [`sluice_core::Op::Flush`], not paced) comes after every
    /// `fsync_every` writes — of the file of the last write: its offset is that write's
    /// — and at the end with `end_fsync`, one per file (its offset the file's first
    /// byte), each once nothing is in flight ([`NextIo::Drain`] until then).
    pub fn next_with(&mut self, now_ns: Nanos, pace_base_ns: Nanos, in_flight: u32) -> NextIo {
        if self.sync_due || (self.end_syncs > 0 && self.pending.is_none() && self.exhausted()) {
            if in_flight > 0 {
                return NextIo::Drain;
            }
            let offset = if self.sync_due {
                self.last_write
            } else {
                let (start, size, n) = self.files;
                let f = n - self.end_syncs;
                self.end_syncs -= 1;
                start.saturating_add(f as u64 * size)
            };
            self.sync_due = false;
            return NextIo::Issue(IoSpec {
                op: sluice_core::Op::Flush,
                offset,
                len: 0,
            });
        }
        let mut pace_base_ns = pace_base_ns;
        if !self.ramp_over {
            if let Some(p) = self.pacer.as_mut() {
                let ramp_end = pace_base_ns.saturating_add(self.ramp_ns);
                if now_ns >= ramp_end {
                    // The warm-up is over: pace afresh from its end; an I/O held for a
                    // slot takes the first slot of the new count.
                    self.ramp_over = true;
                    p.restart();
                    if let Some((io, _)) = self.pending {
                        self.pending = Some((io, ramp_end + p.next_issue_ns(io.op, io.len)));
                    }
                }
            } else {
                self.ramp_over = true;
            }
        }
        if self.ramp_over && self.ramp_ns > 0 {
            pace_base_ns = pace_base_ns.saturating_add(self.ramp_ns);
        }
        let (io, at) = match self.pending {
            Some(p) => p,
            None => {
                if self.exhausted() {
                    return NextIo::Exhausted;
                }
                let io = self.gen.next_io();
                let at = self
                    .pacer
                    .as_mut()
                    .map_or(0, |p| pace_base_ns + p.next_issue_ns(io.op, io.len));
                self.pending = Some((io, at));
                (io, at)
            }
        };
        if at > now_ns {
            return NextIo::At(at);
        }
        self.pending = None;
        if io.op == sluice_core::Op::Write {
            self.last_write = io.offset;
        }
        if io.op == sluice_core::Op::Write && self.sync_every > 0 {
            self.writes_since_sync += 1;
            if self.writes_since_sync == self.sync_every {
                self.writes_since_sync = 0;
                self.sync_due = true;
            }
        }
        NextIo::Issue(io)
    }

    /// The runner moved the I/O `was` it took from the stream to `now` (see
    /// [`IoGen::moved`]).
    pub fn moved(&mut self, was: IoSpec, now: IoSpec) {
        self.gen.moved(was, now);
        if now.op == sluice_core::Op::Write {
            self.last_write = now.offset;
        }
    }

    /// Bytes generated so far (including an I/O held for its pacer slot).
    pub fn issued_bytes(&self) -> u64 {
        self.gen.issued_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_an_io_until_its_slot_and_takes_the_slot_once() {
        let job = JobSpec {
            rate_iops: [Some(1000), None],
            size: 1 << 20,
            ..JobSpec::default()
        };
        let mut s = IoSource::new(&job, 0, 0, 1);
        let first = match s.next(0, 0) {
            NextIo::Issue(io) => io,
            other => panic!("first I/O is due at once: {other:?}"),
        };
        // The second is due 1 ms after the first; asking early does not move it.
        assert_eq!(s.next(10, 0), NextIo::At(1_000_000));
        assert_eq!(s.next(500_000, 0), NextIo::At(1_000_000));
        let second = match s.next(1_000_000, 0) {
            NextIo::Issue(io) => io,
            other => panic!("second I/O due at 1 ms: {other:?}"),
        };
        assert_ne!(first, second);
        assert_eq!(s.next(1_000_000, 0), NextIo::At(2_000_000));
    }

    #[test]
    fn a_sync_after_every_n_writes_and_at_the_end_once_nothing_is_in_flight() {
        let job = JobSpec {
            rw: crate::RwMode::Write,
            size: 20 << 10,
            fsync_every: 2,
            end_fsync: true,
            ..JobSpec::default()
        };
        let mut s = IoSource::new(&job, 0, 0, 1);
        let mut ops = Vec::new();
        loop {
            match s.next_with(0, 0, 1) {
                NextIo::Issue(io) => ops.push(io.op),
                NextIo::Drain => match s.next_with(0, 0, 0) {
                    NextIo::Issue(io) => ops.push(io.op),
                    other => panic!("a drained sync goes: {other:?}"),
                },
                NextIo::Exhausted => break,
                NextIo::At(_) => panic!("not paced"),
            }
        }
        use sluice_core::Op::{Flush as F, Write as W};
        assert_eq!(ops, [W, W, F, W, W, F, W, F]);
    }

    #[test]
    fn size_based_end() {
        let job = JobSpec {
            size: 16 << 10,
            ..JobSpec::default()
        };
        let mut s = IoSource::new(&job, 0, 0, 1);
        for _ in 0..4 {
            assert!(matches!(s.next(0, 0), NextIo::Issue(_)));
        }
        assert_eq!(s.next(0, 0), NextIo::Exhausted);
        assert_eq!(s.issued_bytes(), 16 << 10);
    }

    #[test]
    fn a_job_ended_by_its_runtime_still_gives_its_end_sync() {
        let job = JobSpec {
            rw: crate::RwMode::Write,
            size: 1 << 30,
            fsync_every: 4,
            end_fsync: true,
            ..JobSpec::default()
        };
        let mut s = IoSource::new(&job, 0, 0, 1);
        for _ in 0..3 {
            assert!(matches!(s.next(0, 0), NextIo::Issue(_)));
        }
        // The runtime ends with two writes in flight: the sync waits for them, goes,
        // and the stream is done.
        assert!(s.end_now());
        assert_eq!(s.next_with(0, 0, 2), NextIo::Drain);
        assert!(matches!(
            s.next_with(0, 0, 0),
            NextIo::Issue(IoSpec {
                op: sluice_core::Op::Flush,
                ..
            })
        ));
        assert_eq!(s.next_with(0, 0, 1), NextIo::Exhausted);
        // Without end_fsync nothing is owed.
        let mut quiet = IoSource::new(
            &JobSpec {
                end_fsync: false,
                ..job
            },
            0,
            0,
            1,
        );
        assert!(matches!(quiet.next(0, 0), NextIo::Issue(_)));
        assert!(!quiet.end_now());
        assert_eq!(quiet.next(0, 0), NextIo::Exhausted);
    }
}
