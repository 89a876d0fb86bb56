//! The real backend's registered buffer pool: one page-aligned region cut into equal
//! slots, registered with every core's ring (io_uring's fixed buffers), so I/O on a
//! [`crate::DmaBuffer`] from it goes as `READ_FIXED`/`WRITE_FIXED` and the kernel does not
//! pin and map its pages per I/O (AIOS's "buffers prepared off the critical path",
//! ATC '19 §3.2; the engine's slot buffers do the same).
//!
//! [`crate::DmaBuffer::new`] inside a real stack takes a free slot when the length fits
//! one (and gives it back when dropped); a longer buffer, or one asked for when every
//! slot is taken, comes from the heap and goes as plain `READ`/`WRITE`. Taking and
//! giving back a slot takes the pool's free-list lock: once per buffer, not per I/O (a
//! buffer is reused for many I/Os, as the examples do).

use std::sync::Mutex;

use sluice_uring::AlignedBuf;

/// Alignment of the region and of every slot.
pub const POOL_ALIGN: usize = sluice_uring::BUF_ALIGN;
/// Most slots (the kernel's limit on registered buffers is 16 384).
pub const MAX_SLOTS: u32 = 16_384;
/// Most bytes in the pool.
pub const MAX_POOL_BYTES: usize = 1 << 30;

/// The pool: `count` slots of `slot_len` bytes.
pub(crate) struct BufferPool {
    /// The region (the io_uring layer's page-aligned memory, which never moves).
    region: AlignedBuf,
    pub slot_len: usize,
    pub(crate) count: u32,
    free: Mutex<Vec<u32>>,
}

// SAFETY: the region is plain memory owned by the pool and only reached through the
// slots' addresses; a slot is used by one `DmaBuffer` at a time (the free list hands
// it out once until it is given back), and the free list is behind a mutex.
unsafe impl Sync for BufferPool {}

impl std::fmt::Debug for BufferPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BufferPool")
            .field("slots", &self.count)
            .field("slot_len", &self.slot_len)
            .finish()
    }
}

/// Check a pool's size: `count` slots of `slot_len` bytes.
pub(crate) fn check(count: u32, slot_len: usize) -> Result<(), String> {
    if count == 0 && slot_len == 0 {
        return Ok(());
    }
    if count == 0 || count > MAX_SLOTS {
        return Err(format!(
            "buffer_pool: {count} slots: give 1 to {MAX_SLOTS} (or buffer_pool(0, 0) for none)"
        ));
    }
    if slot_len == 0 || !slot_len.is_multiple_of(POOL_ALIGN) {
        return Err(format!(
            "buffer_pool: slots of {slot_len} bytes: give a multiple of {POOL_ALIGN}"
        ));
    }
    if (count as usize).saturating_mul(slot_len) > MAX_POOL_BYTES {
        return Err(format!(
            "buffer_pool: {count} × {slot_len} bytes is more than {MAX_POOL_BYTES} bytes"
        ));
    }
    Ok(())
}

impl BufferPool {
    /// A pool of `count` slots of `slot_len` bytes (checked by [`check`]).
    pub(crate) fn new(count: u32, slot_len: usize) -> BufferPool {
        BufferPool {
            region: AlignedBuf::new(count as usize * slot_len),
            slot_len,
            count,
            // Handed out from the end: slot 0 first.
            free: Mutex::new((0..count).rev().collect()),
        }
    }

    /// Register the slots as `ring`'s fixed buffers (slot `i` is buffer index `i`).
    ///
    /// # Safety
    /// The pool must outlive the ring's use of the registration.
    pub(crate) unsafe fn register<S: io_uring::squeue::EntryMarker>(
        &self,
        ring: &io_uring::IoUring<S>,
    ) -> std::io::Result<usize> {
        // SAFETY: the caller keeps the pool, and so its region, alive that long.
        unsafe { sluice_uring::register_slots(ring, &self.region, self.slot_len) }
    }

    /// A free slot (its index and address), if any.
    pub(crate) fn take(&self) -> Option<(u32, *mut u8)> {
        let i = self.free.lock().unwrap_or_else(|e| e.into_inner()).pop()?;
        // SAFETY: inside the region.
        Some((i, unsafe {
            self.region.as_mut_ptr().add(i as usize * self.slot_len)
        }))
    }

    /// Slot `i` is free again.
    pub(crate) fn give(&self, i: u32) {
        self.free.lock().unwrap_or_else(|e| e.into_inner()).push(i);
    }
}
