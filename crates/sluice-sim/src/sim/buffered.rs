//! Buffered jobs (`direct=0`) in the simulator: their I/Os go to the page cache's
//! buffered front ([`sluice_fio::front`]), the same state machine the real engine
//! drives, which reads, writes back and flushes through the one block layer. Pages
//! carry no data here (the simulator models time, not bytes).

use sluice_block::{Finished, NewRequest};
use sluice_core::{FlowId, IoClass, Nanos, Op};
use sluice_fio::front::{
    Front, FrontConfig, FrontDone, FrontFile, FrontIo, FrontOp, FrontStats, NoAlloc,
};
use sluice_workload::{IoSpec, JobSpec};

use super::World;
use crate::config::SimError;

/// A buffered job's I/O in the page cache.
#[derive(Clone, Copy, Debug)]
struct JobIo {
    thread: u32,
    submit_ns: Nanos,
    op: Op,
    len: u32,
    class: IoClass,
}

/// The page cache of a simulation's buffered jobs and their I/Os in flight.
pub(super) struct Buffered {
    front: Front<(), NoAlloc>,
    /// Job I/Os in the front, by id.
    ios: Vec<Option<JobIo>>,
    free: Vec<u32>,
    done: Vec<FrontDone>,
    /// Completed job I/Os in their copy, by id.
    ready: Vec<Option<FrontDone>>,
}

impl Buffered {
    /// The cache, if any job is buffered; `files`: (base, flow) of each file.
    pub(super) fn for_jobs(
        specs: &[JobSpec],
        cfg: &FrontConfig,
        files: &[(u64, FlowId, u16)],
    ) -> Result<Option<Buffered>, SimError> {
        if !specs.iter().any(|s| s.buffered) {
            return Ok(None);
        }
        cfg.cache
            .validate()
            .map_err(|e| SimError::PageCache(e.to_string()))?;
        for s in specs.iter().filter(|s| s.buffered) {
            let max_io = s.bs.read.max_len().max(s.bs.write.max_len());
            sluice_fio::front::check_job(cfg, &s.name, max_io, s.end_of_threads())
                .map_err(SimError::PageCache)?;
        }
        let files = files
            .iter()
            .map(|&(base, flow, hwq)| FrontFile {
                base,
                flow,
                hwq,
                open_on: 0,
            })
            .collect();
        Ok(Some(Buffered {
            front: Front::new(*cfg, files, NoAlloc),
            ios: Vec::new(),
            free: Vec::new(),
            done: Vec::new(),
            ready: Vec::new(),
        }))
    }

    /// The cache's counters.
    pub(super) fn stats(&self) -> FrontStats {
        self.front.stats()
    }
}

impl World<'_> {
    /// Thread `t` of a buffered job issues `io` (`req`: its request, for the class and
    /// the flow; counted in the system already).
    pub(super) fn submit_buffered(&mut self, t: u32, req: NewRequest, io: IoSpec) {
        let file = self.thread_file[t as usize];
        let b = self
            .buffered
            .as_mut()
            .expect("a buffered job has the cache");
        let rec = Some(JobIo {
            thread: t,
            submit_ns: self.now,
            op: io.op,
            len: io.len,
            class: req.class,
        });
        let id = match b.free.pop() {
            Some(i) => {
                b.ios[i as usize] = rec;
                i
            }
            None => {
                b.ios.push(rec);
                b.ready.push(None);
                (b.ios.len() - 1) as u32
            }
        };
        let op = match io.op {
            Op::Read => FrontOp::Read,
            Op::Write => FrontOp::Write,
            Op::Flush => FrontOp::Fsync,
            Op::Trim => FrontOp::Trim,
        };
        let fio = FrontIo {
            id: id as u64,
            file,
            op,
            offset: io.offset,
            len: io.len,
            class: req.class,
            flow: req.flow,
            task: t as u64,
            data: (),
        };
        b.front.submit(self.now, fio, &mut self.block, &mut b.done);
        self.buffered_done();
    }

    /// One of the cache's device requests finished.
    pub(super) fn front_finished(&mut self, f: Finished) {
        let b = self
            .buffered
            .as_mut()
            .expect("front requests come from the cache");
        b.front.finished(self.now, &f, &mut self.block, &mut b.done);
        self.buffered_done();
    }

    /// The page cache's timer event: the pauses at dirty limits that ended now.
    pub(super) fn front_timer(&mut self) {
        if self.front_timer_armed != Some(self.now) {
            return;
        }
        self.front_timer_armed = None;
        let b = self.buffered.as_mut().expect("the cache armed it");
        b.front.fire_timer(self.now, &mut self.block, &mut b.done);
        self.buffered_done();
    }

    /// The job I/Os the cache completed reach their threads after the system call's
    /// copy ([`copy_ns`]: a cache hit is not free, and a thread whose reads all hit
    /// must not issue without end at one instant); then keep one timer event armed for
    /// the cache's next pause end.
    fn buffered_done(&mut self) {
        let b = self.buffered.as_mut().expect("the cache");
        for d in b.done.drain(..) {
            let io = b.ios[d.id as usize].expect("a job I/O in flight");
            b.ready[d.id as usize] = Some(d);
            self.events.push(
                self.now + copy_ns(io.op, io.len),
                crate::events::Event::BufferedDone(d.id as u32),
            );
        }
        let want = b.front.next_timer_ns();
        self.events.arm(
            &mut self.front_timer_armed,
            want,
            self.now,
            crate::events::Event::FrontTimer,
        );
    }

    /// Job I/O `id`'s copy ended: its thread and its completion, for the runner.
    pub(super) fn buffered_delivered(&mut self, id: u32) -> (u32, Finished) {
        let b = self.buffered.as_mut().expect("the cache");
        let d = b.ready[id as usize].take().expect("a completed job I/O");
        let io = b.ios[d.id as usize].take().expect("a job I/O in flight");
        b.free.push(d.id as u32);
        let f = Finished {
            id: sluice_core::ReqId(u64::MAX),
            token: io.thread as u64,
            op: io.op,
            len: io.len,
            offset: 0,
            class: io.class,
            submit_ns: io.submit_ns,
            admit_ns: d.admit_ns,
            dispatch_ns: d.dispatch_ns,
            device_done_ns: d.device_done_ns,
            ok: d.ok,
        };
        (io.thread, f)
    }
}

/// A system call's CPU (entry, exit, the page cache's lookups).
const SYSCALL_NS: Nanos = 1_000;
/// Copying between the page cache and the job's buffer, picoseconds per byte (10 GB/s).
const COPY_PS_PER_BYTE: u64 = 100;

/// The host time a buffered job I/O takes beyond its device I/O: the system call and,
/// for a read or a write, the copy of its bytes (fio's buffered `pread`/`pwrite` on
/// Linux: about 1.4 µs for 4 KiB from the page cache).
fn copy_ns(op: Op, len: u32) -> Nanos {
    match op {
        Op::Flush => SYSCALL_NS,
        _ => SYSCALL_NS + len as u64 * COPY_PS_PER_BYTE / 1000,
    }
}
