//! Ring set-up.

use io_uring::IoUring;

use crate::error::{ring_hint, EngineError};

/// Create a ring with `entries` SQEs (and twice as many CQEs). Tries the flags that
/// make a single-threaded submitter cheaper first (single issuer, deferred task
/// work), then plain set-up for older kernels.
pub fn new_ring(entries: u32) -> Result<IoUring, EngineError> {
    let lean = IoUring::builder()
        .setup_single_issuer()
        .setup_coop_taskrun()
        .setup_defer_taskrun()
        .build(entries);
    match lean {
        Ok(r) => Ok(r),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            IoUring::new(entries).map_err(|source| EngineError::Ring {
                entries,
                hint: ring_hint(&source),
                source,
            })
        }
        Err(source) => Err(EngineError::Ring {
            entries,
            hint: ring_hint(&source),
            source,
        }),
    }
}

/// Ring entries for a worker whose ring holds at most `cap` commands, plus the read of
/// its doorbell (eventfd) that is always pending.
pub fn ring_entries(cap: u32) -> u32 {
    (cap + 1).max(8).next_power_of_two()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ring_the_kernel_refuses_is_a_clear_set_up_error() {
        // More entries than io_uring allows (32768): the kernel says EINVAL.
        match new_ring(1 << 20) {
            Err(e @ EngineError::Ring { .. }) => {
                assert_eq!(e.exit_code(), 2);
                let msg = e.to_string();
                assert!(
                    msg.contains("cannot create an io_uring with 1048576 entries"),
                    "{msg}"
                );
            }
            Err(e) => panic!("unexpected error {e}"),
            Ok(_) => panic!("the kernel accepted a ring of 2^20 entries"),
        }
    }

    #[test]
    fn ring_entries_are_a_power_of_two_of_at_least_eight() {
        assert_eq!(ring_entries(1), 8);
        assert_eq!(ring_entries(31), 32);
        assert_eq!(ring_entries(32), 64);
    }
}
