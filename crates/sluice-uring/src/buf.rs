//! Page-aligned memory for O_DIRECT transfers and for the rings' registered buffers:
//! the engine's slot region and pre-fill buffer, the runtime's buffer pool.

use std::alloc::{self, Layout};

/// Alignment of every buffer: a page, which satisfies any device's DMA alignment.
pub const BUF_ALIGN: usize = 4096;

/// A zero-initialised, page-aligned byte region. It never moves and is freed on drop,
/// so its address can be registered with a ring.
#[derive(Debug)]
pub struct AlignedBuf {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the region is plain memory owned by this value; moving the owner between
// threads moves no data and the kernel only touches it while I/O on it is in flight,
// which the owning worker tracks.
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    /// A region of `len` bytes (rounded up to a whole page, at least one page).
    pub fn new(len: usize) -> AlignedBuf {
        let len = len.max(1).div_ceil(BUF_ALIGN) * BUF_ALIGN;
        let layout = Layout::from_size_align(len, BUF_ALIGN).expect("page-aligned layout");
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            alloc::handle_alloc_error(layout);
        }
        AlignedBuf { ptr, len }
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it is empty (never: at least one page).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The region cut into `slot_len`-byte slots (`slot_len` a multiple of
    /// [`BUF_ALIGN`]), as a ring registers them as its fixed buffers: slot `i` is
    /// buffer index `i`.
    pub fn iovecs(&self, slot_len: usize) -> Vec<libc::iovec> {
        assert!(
            slot_len > 0 && slot_len.is_multiple_of(BUF_ALIGN),
            "slots of whole pages"
        );
        (0..self.len / slot_len)
            .map(|i| libc::iovec {
                // SAFETY: inside the region.
                iov_base: unsafe { self.ptr.add(i * slot_len) } as *mut libc::c_void,
                iov_len: slot_len,
            })
            .collect()
    }

    /// Its start address.
    pub fn as_mut_ptr(&self) -> *mut u8 {
        self.ptr
    }

    /// The region as a byte slice.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: ptr is valid for len bytes and uniquely borrowed through &mut self.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }

    /// The region as a read-only byte slice.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr is valid for len bytes.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// Fill with pseudo-random bytes (xorshift64*), so written data neither compresses
    /// nor deduplicates, as fio's default buffers.
    pub fn fill_random(&mut self, seed: u64) {
        let mut x = seed | 1;
        for chunk in self.as_mut_slice().chunks_exact_mut(8) {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            chunk.copy_from_slice(&x.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
        }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        let layout = Layout::from_size_align(self.len, BUF_ALIGN).expect("page-aligned layout");
        // SAFETY: allocated in `new` with this very layout.
        unsafe { alloc::dealloc(self.ptr, layout) };
    }
}

impl AsRef<[u8]> for AlignedBuf {
    fn as_ref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl AsMut<[u8]> for AlignedBuf {
    fn as_mut(&mut self) -> &mut [u8] {
        self.as_mut_slice()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_and_rounded() {
        let mut b = AlignedBuf::new(5000);
        assert_eq!(b.len(), 8192);
        assert_eq!(b.as_mut_ptr() as usize % BUF_ALIGN, 0);
        b.fill_random(7);
        assert!(b.as_slice().iter().any(|&x| x != 0));
        let first = &b.as_slice()[..4096];
        let second = &b.as_slice()[4096..];
        assert_ne!(first, second);
    }

    #[test]
    fn slots_cover_the_region_in_order() {
        let b = AlignedBuf::new(3 * 8192);
        let iov = b.iovecs(8192);
        assert_eq!(iov.len(), 3);
        for (i, v) in iov.iter().enumerate() {
            assert_eq!(v.iov_base as usize, b.as_mut_ptr() as usize + i * 8192);
            assert_eq!(v.iov_len, 8192);
        }
    }
}
