//! [`DmaBuffer`]: the I/O buffers applications hand to the runtime.

use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use crate::pool::BufferPool;

/// A buffer for I/O, aligned to 4 KiB (what `O_DIRECT` and DMA want).
///
/// ```
/// let mut b = sluice_runtime::DmaBuffer::new(8192);
/// b[0] = 7;
/// assert_eq!(b.len(), 8192);
/// assert_eq!(b.as_ptr() as usize % 4096, 0);
/// ```
///
/// Inside a real stack, a buffer that fits a slot of the stack's registered pool
/// ([`crate::StackBuilder::buffer_pool`]) is taken from it, and its I/O goes as io_uring
/// fixed-buffer reads and writes ([`DmaBuffer::is_registered`]).
pub struct DmaBuffer {
    ptr: std::ptr::NonNull<u8>,
    len: usize,
    /// The pool slot it occupies, if it is from the registered pool.
    pool: Option<(Arc<BufferPool>, u32)>,
}

impl DmaBuffer {
    /// A zeroed buffer of `len` bytes (at least 1 is allocated): from the running real
    /// stack's registered pool when it fits a free slot, from the heap otherwise.
    pub fn new(len: usize) -> DmaBuffer {
        DmaBuffer::alloc(len, true, true)
    }

    /// A buffer of `len` bytes holding `data` at byte `at` and zeros elsewhere, written
    /// once: the bytes `data` covers are copied, not zeroed first (a 128 KiB write's
    /// buffer costs one pass over its bytes, not two).
    ///
    /// ```
    /// let b = sluice_runtime::DmaBuffer::with_data(8192, 4000, &[7u8; 100]);
    /// assert_eq!((b[3999], b[4000], b[4099], b[4100]), (0, 7, 7, 0));
    /// ```
    ///
    /// # Panics
    /// If `data` does not fit at `at` (`at + data.len() > len`).
    pub fn with_data(len: usize, at: usize, data: &[u8]) -> DmaBuffer {
        let end = at
            .checked_add(data.len())
            .filter(|&e| e <= len)
            .expect("with_data: the data fits the buffer");
        let b = DmaBuffer::alloc(len, true, false);
        let p = b.ptr.as_ptr();
        // SAFETY: the buffer is `len` bytes and ours; `at ≤ end ≤ len`; `data` is not in
        // it (a new allocation). Every byte is written before the buffer is handed out.
        unsafe {
            std::ptr::write_bytes(p, 0, at);
            std::ptr::copy_nonoverlapping(data.as_ptr(), p.add(at), data.len());
            std::ptr::write_bytes(p.add(end), 0, len - end);
        }
        b
    }

    /// A buffer outside the registered pool, for data held long (the page cache's
    /// pages), so it does not take the slots the I/O path needs.
    pub(crate) fn unpooled(len: usize) -> DmaBuffer {
        DmaBuffer::alloc(len, false, true)
    }

    /// `len` bytes, zeroed when `zero` (else the caller writes every byte before the
    /// buffer is read: [`DmaBuffer::with_data`]).
    fn alloc(len: usize, pooled: bool, zero: bool) -> DmaBuffer {
        let pool = pooled.then(crate::exec::current_pool).flatten();
        if let Some(pool) = pool.filter(|p| len <= p.slot_len) {
            if let Some((i, ptr)) = pool.take() {
                if zero {
                    // SAFETY: the slot is `slot_len ≥ len` bytes, and ours until dropped.
                    unsafe { std::ptr::write_bytes(ptr, 0, len) };
                }
                return DmaBuffer {
                    ptr: std::ptr::NonNull::new(ptr).expect("inside the pool's region"),
                    len,
                    pool: Some((pool, i)),
                };
            }
        }
        let layout = std::alloc::Layout::from_size_align(len.max(1), 4096)
            .expect("buffer size fits a layout");
        // SAFETY: the layout has a non-zero size. Without `zero` the bytes are
        // uninitialised until the caller writes them, before any read of them.
        let ptr = unsafe {
            if zero {
                std::alloc::alloc_zeroed(layout)
            } else {
                std::alloc::alloc(layout)
            }
        };
        let ptr =
            std::ptr::NonNull::new(ptr).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        DmaBuffer {
            ptr,
            len,
            pool: None,
        }
    }

    /// Whether it is a slot of the stack's registered pool (its I/O uses fixed buffers).
    pub fn is_registered(&self) -> bool {
        self.pool.is_some()
    }

    /// Its pool's identity and its index among the pool's registered buffers, if it
    /// is from a pool.
    pub(crate) fn fixed_index(&self) -> Option<(usize, u32)> {
        self.pool
            .as_ref()
            .map(|p| (Arc::as_ptr(&p.0) as usize, p.1))
    }

    /// A buffer holding a copy of `data`.
    pub fn from_slice(data: &[u8]) -> DmaBuffer {
        DmaBuffer::with_data(data.len(), 0, data)
    }
}

impl Drop for DmaBuffer {
    fn drop(&mut self) {
        if let Some((pool, i)) = self.pool.take() {
            pool.give(i);
            return;
        }
        let layout =
            std::alloc::Layout::from_size_align(self.len.max(1), 4096).expect("as allocated");
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), layout) }
    }
}

impl Deref for DmaBuffer {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: `len` initialised bytes owned by the buffer.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl DerefMut for DmaBuffer {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in deref, and `&mut self` is unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl AsRef<[u8]> for DmaBuffer {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl AsMut<[u8]> for DmaBuffer {
    fn as_mut(&mut self) -> &mut [u8] {
        self
    }
}

impl std::fmt::Debug for DmaBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DmaBuffer")
            .field("len", &self.len)
            .field("registered", &self.pool.is_some())
            .finish()
    }
}

// SAFETY: the buffer owns its allocation like a Box<[u8]>.
unsafe impl Send for DmaBuffer {}
