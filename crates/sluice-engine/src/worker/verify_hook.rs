//! A verify job's completions (see `crate::verify`): recording written blocks and
//! checking the blocks read back.

#[allow(unused_imports)]
use super::*;

impl Worker<'_> {
    /// A request of a verify job finished: record a written block, or check a block
    /// read (before the slot and its buffer go back to the pool). A failed check
    /// counts as an error of the job (as fio's), and ends the job with `verify_fatal`.
    pub(super) fn verify_done(&mut self, t: usize, slot: u32, f: &Finished) {
        let th = &mut self.threads[t];
        let job = th.job as usize;
        let off = self.slot_offset[slot as usize] - th.file_base;
        let v = th.verify.as_mut().expect("a verify job");
        if f.op == Op::Write && f.ok {
            v.written(off, f.len);
            return;
        }
        if f.op != Op::Read || !self.slot_check[slot as usize] {
            return;
        }
        if !v.checks_every_read() {
            v.read_back_done();
        }
        if !f.ok {
            return;
        }
        // SAFETY: the slot's request completed; its buffer (len ≤ slot_len bytes) is
        // not in the kernel's hands and is not reused before the slot is freed.
        let buf = unsafe {
            std::slice::from_raw_parts(
                self.region_ptr.add(slot as usize * self.slot_len),
                f.len as usize,
            )
        };
        let result = v.check(buf, off);
        let failed = result.is_err();
        v.record(result, off, f.len);
        if failed {
            self.sh
                .collector
                .lock()
                .expect("collector lock")
                .record_error(job, Op::Read);
            if v.fatal() && !self.jobs[job].ended {
                let now = self.now;
                self.end_job(job, now);
            }
        }
    }
}
