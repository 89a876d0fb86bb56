//! The page cache's 4 KiB frames, carved from 2 MiB chunks mapped with
//! `MAP_POPULATE`: one system call faults a chunk's 512 pages in together, where a
//! fresh page from the heap costs a page fault of its own on first touch (the largest
//! part of a buffered write's CPU time before, `perf` said: a write of a page not yet
//! cached allocates its frame). A dropped frame goes back to the chunk's free list,
//! zeroed when it is handed out again; the chunks are unmapped when the last frame and
//! the allocator are gone. Runs of several pages (a read's or a writeback's buffer)
//! stay ordinary page-aligned allocations.

use std::sync::{Arc, Mutex};

use crate::buf::{AlignedBuf, BUF_ALIGN};

/// Bytes of one chunk.
const CHUNK: usize = 2 << 20;

#[derive(Debug, Default)]
pub(crate) struct Chunks {
    /// Mapped chunks (their addresses).
    mapped: Vec<usize>,
    /// Frames free for reuse (their addresses), and the unused rest of the last chunk.
    free: Vec<usize>,
    next: usize,
    end: usize,
}

impl Drop for Chunks {
    fn drop(&mut self) {
        for &c in &self.mapped {
            // SAFETY: each was mapped by `Slab::frame` with length CHUNK, and no frame
            // of it is alive (each holds the `Arc` this is inside of).
            unsafe { libc::munmap(c as *mut libc::c_void, CHUNK) };
        }
    }
}

/// The frames' source, shared by the frames it gave out.
#[derive(Debug, Clone, Default)]
pub(crate) struct Slab {
    chunks: Arc<Mutex<Chunks>>,
}

impl Slab {
    /// A zeroed 4 KiB frame, or `None` if no chunk could be mapped (the caller falls
    /// back to the heap).
    fn frame(&self) -> Option<CacheBuf> {
        let mut c = self.chunks.lock().unwrap_or_else(|e| e.into_inner());
        let addr = if let Some(a) = c.free.pop() {
            // SAFETY: a returned frame of a live chunk, owned by no buffer now.
            unsafe { std::ptr::write_bytes(a as *mut u8, 0, BUF_ALIGN) };
            a
        } else {
            if c.next == c.end {
                // SAFETY: an anonymous private mapping; checked below.
                let p = unsafe {
                    libc::mmap(
                        std::ptr::null_mut(),
                        CHUNK,
                        libc::PROT_READ | libc::PROT_WRITE,
                        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
                        -1,
                        0,
                    )
                };
                if p == libc::MAP_FAILED {
                    return None;
                }
                c.mapped.push(p as usize);
                c.next = p as usize;
                c.end = p as usize + CHUNK;
            }
            let a = c.next;
            c.next += BUF_ALIGN;
            a
        };
        Some(CacheBuf::Frame {
            addr,
            slab: self.chunks.clone(),
        })
    }

    /// A zeroed page-aligned buffer of `len` bytes: a frame for one page, else the
    /// heap's.
    pub(crate) fn buf(&self, len: usize) -> CacheBuf {
        if len == BUF_ALIGN {
            if let Some(f) = self.frame() {
                return f;
            }
        }
        CacheBuf::Heap(AlignedBuf::new(len))
    }
}

/// A buffer of the page cache: a slab frame or a heap run.
#[derive(Debug)]
pub(crate) enum CacheBuf {
    Frame {
        addr: usize,
        slab: Arc<Mutex<Chunks>>,
    },
    Heap(AlignedBuf),
}

impl Drop for CacheBuf {
    fn drop(&mut self) {
        if let CacheBuf::Frame { addr, slab } = self {
            slab.lock()
                .unwrap_or_else(|e| e.into_inner())
                .free
                .push(*addr);
        }
    }
}

impl AsRef<[u8]> for CacheBuf {
    fn as_ref(&self) -> &[u8] {
        match self {
            // SAFETY: the frame's 4 KiB lie in a chunk kept mapped while it lives, and
            // only this value uses them.
            CacheBuf::Frame { addr, .. } => unsafe {
                std::slice::from_raw_parts(*addr as *const u8, BUF_ALIGN)
            },
            CacheBuf::Heap(b) => b.as_ref(),
        }
    }
}

impl AsMut<[u8]> for CacheBuf {
    fn as_mut(&mut self) -> &mut [u8] {
        match self {
            // SAFETY: as in `as_ref`, and `&mut self` makes the use exclusive.
            CacheBuf::Frame { addr, .. } => unsafe {
                std::slice::from_raw_parts_mut(*addr as *mut u8, BUF_ALIGN)
            },
            CacheBuf::Heap(b) => b.as_mut(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_zeroed_page_aligned_and_reused() {
        let slab = Slab::default();
        let mut a = slab.buf(BUF_ALIGN);
        assert_eq!(a.as_ref().len(), BUF_ALIGN);
        assert_eq!(a.as_mut().as_mut_ptr() as usize % BUF_ALIGN, 0);
        assert!(a.as_ref().iter().all(|&b| b == 0));
        a.as_mut().fill(7);
        let at = a.as_mut().as_mut_ptr() as usize;
        drop(a);
        let mut b = slab.buf(BUF_ALIGN);
        assert_eq!(
            b.as_mut().as_mut_ptr() as usize,
            at,
            "the freed frame is handed out again"
        );
        assert!(b.as_ref().iter().all(|&x| x == 0), "and zeroed");
        let mut run = slab.buf(3 * BUF_ALIGN);
        assert!(matches!(run, CacheBuf::Heap(_)));
        assert_eq!(run.as_mut().len(), 3 * BUF_ALIGN);
        // More frames than one chunk holds: a second chunk.
        let many: Vec<CacheBuf> = (0..CHUNK / BUF_ALIGN + 1)
            .map(|_| slab.buf(BUF_ALIGN))
            .collect();
        assert_eq!(slab.chunks.lock().unwrap().mapped.len(), 2);
        drop(many);
        drop(b);
        drop(slab);
    }
}
