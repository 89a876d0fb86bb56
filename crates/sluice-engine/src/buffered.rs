//! Buffered jobs (`direct=0`) on the real engine: their I/Os go to the page cache's
//! buffered front ([`sluice_fio::front`]) — the same state machine the simulator
//! drives — which lives beside the block layer in the device state, under the same
//! lock. Its page and device-I/O buffers are page-aligned (the files are open with
//! `O_DIRECT`); a job I/O's data is its request slot's buffer, copied into or out of
//! the cache under the device lock (by whichever worker holds it when the I/O can go
//! on: the slot's owner does not touch the buffer while the I/O is outstanding, as
//! with the kernel's DMA). A job I/O's id is `worker << 32 | slot`; a completion for
//! another worker goes to its box and rings its doorbell.

use sluice_fio::front::{Alloc, Front, FrontConfig, FrontDone, FrontFile, IoBuf};

use std::os::unix::fs::FileExt;

use crate::files::FileSet;
use crate::slab::{CacheBuf, Slab};
use crate::EngineError;

/// A job I/O's data: its slot buffer.
#[derive(Debug)]
pub(crate) struct SlotData {
    pub ptr: usize,
    pub len: usize,
}

impl IoBuf for SlotData {
    fn bytes(&mut self) -> Option<&mut [u8]> {
        // SAFETY: the slot's buffer (len ≤ slot_len bytes inside the worker's region,
        // which outlives the device state's use of it: workers end before the front
        // is dropped) is not touched by its owner while the I/O is outstanding, and the
        // front uses it only under the device lock.
        Some(unsafe { std::slice::from_raw_parts_mut(self.ptr as *mut u8, self.len) })
    }
}

/// Page-aligned buffers for the cache: its frames from a slab of pre-faulted chunks
/// ([`crate::slab`]), runs of pages from the heap.
#[derive(Debug, Default)]
pub(crate) struct DmaAlloc {
    slab: Slab,
}

impl Alloc for DmaAlloc {
    type Buf = CacheBuf;
    fn alloc(&mut self, len: usize) -> CacheBuf {
        self.slab.buf(len)
    }
}

/// The front and the workers' boxes of completed job I/Os.
#[derive(Debug)]
pub(crate) struct EngineFront {
    pub front: Front<SlotData, DmaAlloc>,
    /// Completions found by one call, to route.
    pub done: Vec<FrontDone>,
    /// Per worker: its completed job I/Os, not yet taken.
    pub boxes: Vec<Vec<FrontDone>>,
}

impl EngineFront {
    pub(crate) fn new(cfg: FrontConfig, files: Vec<FrontFile>, workers: usize) -> EngineFront {
        EngineFront {
            front: Front::new(cfg, files, DmaAlloc::default()),
            done: Vec::new(),
            boxes: vec![Vec::new(); workers],
        }
    }

    /// Give `done` to their workers: `me`'s into `mine`, the others' into their boxes
    /// (and name them in `wake`).
    pub(crate) fn route(&mut self, me: usize, mine: &mut Vec<FrontDone>, wake: &mut Vec<usize>) {
        for d in self.done.drain(..) {
            let w = (d.id >> 32) as usize;
            if w == me {
                mine.push(d);
            } else {
                self.boxes[w].push(d);
                if !wake.contains(&w) {
                    wake.push(w);
                }
            }
        }
        mine.append(&mut self.boxes[me]);
    }
}

/// After the run: the pages still dirty in the cache, written to their files (see
/// [`Front::write_out`]; the page runs are page-aligned, as `O_DIRECT` needs).
pub(crate) fn write_out(ef: &mut EngineFront, files: &FileSet) -> Result<(), EngineError> {
    ef.front.write_out(|f, offset, bytes| {
        let (i, planned) = files
            .plan()
            .files
            .iter()
            .enumerate()
            .find(|(_, p)| p.base == f.base)
            .expect("a cached file is a planned file");
        files
            .file(i)
            .write_all_at(bytes, offset - planned.base)
            .map_err(|source| EngineError::WriteOut {
                path: planned.path.clone(),
                source,
            })
    })
}
