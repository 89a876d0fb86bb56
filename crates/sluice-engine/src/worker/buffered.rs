//! A worker's side of the page cache (see [`crate::buffered`]): a buffered job's I/O
//! goes to the cache with its slot's buffer; its completion comes back through the
//! worker's box and is handled as a request's.

#[allow(unused_imports)]
use super::*;
use sluice_fio::front::FrontOp;

impl Worker<'_> {
    /// Thread I/O `r` (in slot `slot`, at byte `offset` of cache file `file`) of a
    /// buffered job, for the page cache at the next [`Worker::sync`].
    pub(super) fn issue_buffered(
        &mut self,
        slot: u32,
        file: u32,
        r: NewRequest,
        offset: u64,
        now: Nanos,
    ) {
        self.slot_io[slot as usize] = (r.op, r.len, now, r.class);
        let op = match r.op {
            Op::Read => FrontOp::Read,
            Op::Write => FrontOp::Write,
            Op::Flush => FrontOp::Fsync,
            Op::Trim => FrontOp::Trim,
        };
        // SAFETY: the slot's buffer is slot_len ≥ len bytes inside the region.
        let ptr = unsafe { self.region_ptr.add(slot as usize * self.slot_len) } as usize;
        self.new_front.push(FrontIo {
            id: (self.index as u64) << 32 | slot as u64,
            file,
            op,
            offset,
            len: r.len,
            class: r.class,
            flow: r.flow,
            // A job thread: this worker's thread index, the worker's index above it.
            task: (self.index as u64) << 32 | self.slot_thread[slot as usize] as u64,
            data: SlotData {
                ptr,
                len: r.len as usize,
            },
        });
    }

    /// Hand the buffered I/Os the page cache completed to their threads.
    pub(super) fn buffered_done(&mut self) {
        while let Some(d) = self.front_done.pop() {
            let slot = d.id as u32;
            let (op, len, submit_ns, class) = self.slot_io[slot as usize];
            self.request_done(sluice_block::Finished {
                id: sluice_core::ReqId(u64::MAX),
                token: slot as u64,
                op,
                len,
                offset: 0,
                class,
                submit_ns,
                admit_ns: d.admit_ns,
                dispatch_ns: d.dispatch_ns,
                device_done_ns: d.device_done_ns,
                ok: d.ok,
            });
        }
    }
}
