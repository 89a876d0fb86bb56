//! The flash-management side of the SSD (profiles with `[flash]`): reads served from
//! the write buffer, the channel bus the dies on it share, and garbage collection.

use super::NvmeSsd;
use sluice_core::Nanos;

impl NvmeSsd {
    /// Whether a read is served from the write buffer (`[flash] buffer_reads` and all
    /// its data still buffered); counts it.
    #[inline]
    pub(super) fn read_from_buffer(&mut self, offset: u64, len: u64) -> bool {
        match &mut self.flash {
            Some(f) if f.buffer_reads && f.ftl.all_buffered(offset, len) => {
                f.ftl.stats.buffer_reads += 1;
                true
            }
            _ => false,
        }
    }

    /// Book a transfer of `xfer_ns` for unit `u` on its channel, in the first free gap
    /// at or after `at`, when channels are shared (else at once); `now` is the current
    /// time (transfers that ended before it are forgotten). Returns (start, end).
    #[inline]
    pub(super) fn channel(
        &mut self,
        u: u32,
        now: Nanos,
        at: Nanos,
        xfer_ns: Nanos,
    ) -> (Nanos, Nanos) {
        let Some(f) = self.flash.as_mut().filter(|f| f.channels > 0) else {
            return (at, at + xfer_ns);
        };
        let busy = &mut f.chan_busy[(u % f.channels) as usize];
        while busy.front().is_some_and(|&(_, e)| e <= now) {
            busy.pop_front();
        }
        let mut s = at;
        let mut pos = busy.len();
        for (i, &(bs, be)) in busy.iter().enumerate() {
            if be <= s {
                continue;
            }
            if bs >= s + xfer_ns {
                pos = i;
                break;
            }
            s = be;
        }
        busy.insert(pos, (s, s + xfer_ns));
        (s, s + xfer_ns)
    }

    /// Garbage-collect on die `u` before programming `[offset, offset + bytes)` there
    /// through placement handle `ruh`'s write point, and map the piece; returns the die time the collection takes (copy-back reads
    /// and programs, erases; see [`crate::ftl`]).
    pub(super) fn collect_garbage(&mut self, u: u32, offset: u64, bytes: u32, ruh: u8) -> Nanos {
        let f = self.flash.as_mut().expect("flash");
        f.programming[u as usize] = (offset, bytes);
        let w = f.ftl.program(u, offset, bytes as u64, ruh as u32);
        if w.copies == 0 && w.erases == 0 {
            return 0;
        }
        let pages = (w.copies * f.map_bytes).div_ceil(self.stripe);
        let (copy_prog, erase) = (f.copy_program.ns(w.copies * f.map_bytes), f.erase_ns);
        let reads = self.vary(pages * self.read_ns, false);
        let programs = self.vary(copy_prog, true);
        let gc = reads + programs + w.erases * erase;
        self.flash.as_mut().expect("flash").ftl.stats.gc_busy_ns += gc;
        gc
    }
}
