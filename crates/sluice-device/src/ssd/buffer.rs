//! The DRAM write buffer's side of the SSD: admitting a write's data, destage
//! programs per unit, and what a finished program releases (waiting writes, flushes).

use super::{BufferState, NvmeSsd, WritePlacement, PROGRAM};
use sluice_core::Nanos;

impl NvmeSsd {
    /// Admit a write's data into the buffer at `at`: queue its pieces for destaging
    /// (each with the write's placement handle `ruh`) and return its acknowledgement
    /// time.
    pub(super) fn admit(&mut self, at: Nanos, offset: u64, len: u32, ruh: u8) -> Nanos {
        let mut b = self.buffer.take().expect("buffer");
        b.used += len as u64;
        b.admitted_bytes += len as u64;
        let round_robin = self.placement == WritePlacement::RoundRobin;
        if let Some(f) = &mut self.flash {
            f.ftl.buffer_in(offset, len as u64);
        }
        let mut pos = offset;
        let mut left = len as u64;
        loop {
            let piece = pos;
            let (unit, bytes) = self.next_piece(&mut pos, &mut left, round_robin, true);
            let u = unit as usize;
            b.pending[u].push_back((at, piece, bytes as u32, ruh));
            if !b.programming[u] {
                self.start_program(&mut b, u, at);
            }
            if left == 0 {
                break;
            }
        }
        let ack = at + b.ack_ns;
        self.buffer = Some(b);
        ack
    }

    /// Start the next pending program on unit `u` (not before `now`, its data, or the
    /// unit's committed work).
    pub(super) fn start_program(&mut self, b: &mut BufferState, u: usize, now: Nanos) {
        let Some((ready, offset, bytes, ruh)) = b.pending[u].pop_front() else {
            b.programming[u] = false;
            return;
        };
        let xfer = self.write_unit_xfer.ns(bytes as u64);
        let program = self.vary(b.program.ns(bytes as u64), true);
        let begin = now.max(ready).max(self.unit_free[u]);
        let mut start = begin;
        if self.flash.is_some() {
            start += self.collect_garbage(u as u32, offset, bytes, ruh);
        }
        // The data crosses the die's channel (shared with the other dies on it when
        // `[flash] channel_bus`), then the die programs it.
        let (_, xe) = self.channel(u as u32, now, start, xfer);
        let end = xe + program;
        let cost = end - begin;
        self.unit_free[u] = end;
        self.stats.unit_busy_ns[u] += cost;
        if self.read_block_ns != 0 {
            self.block_reads(u..u + 1, end);
        }
        b.programming[u] = true;
        self.push_event(end, PROGRAM | u as u32, bytes);
    }

    /// A destage program ended: free its room, admit waiting writes, wake flushes,
    /// start the unit's next program.
    pub(super) fn program_end(&mut self, t: Nanos, unit: u32, bytes: u32) {
        let mut b = self.buffer.take().expect("program without a buffer");
        if let Some(f) = &mut self.flash {
            let (offset, len) = f.programming[unit as usize];
            f.ftl.buffer_out(offset, len as u64);
        }
        b.used -= bytes as u64;
        b.destaged_bytes += bytes as u64;
        while let Some(f) = b.flushes.front() {
            if f.target > b.destaged_bytes {
                break;
            }
            let done = f.ready.max(t) + self.complete_ns;
            let slot = f.slot;
            b.flushes.pop_front();
            self.push_event(done, slot, 0);
        }
        self.start_program(&mut b, unit as usize, t);
        self.buffer = Some(b);
        loop {
            let b = self.buffer.as_mut().expect("buffer");
            let Some(&w) = b.waiters.front() else { break };
            if b.used + w.len as u64 > b.capacity && b.used > 0 {
                break;
            }
            b.waiters.pop_front();
            let at = w.ready.max(t);
            self.stats.buffer_full_waits += 1;
            self.stats.buffer_wait_ns += at - w.ready;
            let ack = self.admit(at, w.offset, w.len, w.placement);
            self.push_event(ack + self.complete_ns, w.slot, 0);
        }
    }
}
