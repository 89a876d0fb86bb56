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
        DmaBuffer::alloc(len, true)
    }

    /// A buffer outside the registered pool, for data held long (the page cache's
    /// pages), so it does not take the slots the I/O path needs.
    pub(crate) fn unpooled(len: usize) -> DmaBuffer {
        DmaBuffer::alloc(len, false)
    }

    fn alloc(len: usize, pooled: bool) -> DmaBuffer {
        let pool = pooled.then(crate::exec::current_pool).flatten();
        if let Some(pool) = pool.filter(|p| len <= p.slot_len) {
            if let Some((i, ptr)) = pool.take() {
                // SAFETY: the slot is `slot_len ≥ len` bytes, and ours until dropped.
                unsafe { std::ptr::write_bytes(ptr, 0, len) };
                return DmaBuffer {
                    ptr: std::ptr::NonNull::new(ptr).expect("inside the pool's region"),
                    len,
                    pool: Some((pool, i)),
                };
            }
        }
        let layout = std::alloc::Layout::from_size_align(len.max(1), 4096)
            .expect("buffer size fits a layout");
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
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
        let mut b = DmaBuffer::new(data.len());
        b.copy_from_slice(data);
        b
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
