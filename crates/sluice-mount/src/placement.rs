//! Where the daemon's work runs on the stack's cores — one rule for both transports.
//!
//! With two or more cores, **core 0 is the critical callers'**: their worker tasks run
//! there (beside the dispatcher, which does little), and nothing else the daemon does
//! in bulk — the non-critical callers' workers, the FUSE ring queues' tasks, the page
//! cache's flusher — is put on it. So a critical request never waits for its core
//! behind a round of bulk writers' tasks (their 128 KiB copies, completions and
//! dispatches) nor for that core's thread to get a CPU while it works for them
//! (measured in docs/mount.md, "Where the time went").
//!
//! * `/dev/fuse`: a request's worker is on [`worker_core`]'s core: 0 for critical
//!   callers, the others dealt round robin over 1..N.
//! * FUSE over io_uring: queue `q`'s task is on [`ring_queue_core`] (1..N); a request
//!   is served by a worker on its queue's core (no thread hop), except a critical
//!   caller's, which goes to core 0 ([`ring_request_core`]): the only cross-core wake
//!   on the ring's path, and only for critical requests.
//! * The page cache's flusher (non-critical, flow `writeback`) on [`flusher_core`]: the
//!   last core.
//!
//! With one core everything is on core 0.
//!
//! `SLUICE_MOUNT_PLACEMENT=per-queue` (read once at start) gives the rule this one
//! replaced, for measuring one against the other with the same binary: ring queue `q`
//! on core `q mod N` with every request of the queue served there, the flusher on core
//! 0 (the `/dev/fuse` rule is the same in both).

use sluice_core::IoClass;

/// The placement rules.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Placement {
    /// Core 0 for the critical callers only (the default).
    #[default]
    Split,
    /// The earlier rule (`SLUICE_MOUNT_PLACEMENT=per-queue`).
    PerQueue,
}

impl Placement {
    /// From `SLUICE_MOUNT_PLACEMENT` (`per-queue`; anything else or unset: the default).
    pub fn from_env() -> Placement {
        match std::env::var("SLUICE_MOUNT_PLACEMENT").as_deref() {
            Ok("per-queue") => Placement::PerQueue,
            _ => Placement::Split,
        }
    }
}

/// The core a new worker of class `class` runs on, with `cores` cores: with two or
/// more, the critical callers' workers have core 0 to themselves and every other worker
/// is dealt round robin over cores 1..N (`*next` counts them).
pub(crate) fn worker_core(class: IoClass, cores: u16, next: &mut u16) -> u16 {
    if cores < 2 {
        return 0;
    }
    if class == IoClass::Critical {
        return 0;
    }
    let c = 1 + *next % (cores - 1);
    *next = next.wrapping_add(1);
    c
}

/// The core of FUSE ring queue `q`'s task: over cores 1..N with two or more cores.
pub(crate) fn ring_queue_core(p: Placement, q: usize, cores: u16) -> u16 {
    let cores = cores.max(1) as usize;
    match p {
        Placement::Split if cores >= 2 => (1 + q % (cores - 1)) as u16,
        _ => (q % cores) as u16,
    }
}

/// The core whose worker serves a request of class `class` that came through a ring
/// queue owned by core `queue_core`: `None` (the workers [`worker_core`] places: core
/// 0) for a critical caller, else the queue's own core.
pub(crate) fn ring_request_core(p: Placement, class: IoClass, queue_core: u16) -> Option<u16> {
    match p {
        Placement::Split if class == IoClass::Critical => None,
        _ => Some(queue_core),
    }
}

/// The page cache flusher's core: the last one (not core 0) with two or more cores.
pub fn flusher_core(p: Placement, cores: u16) -> u16 {
    match p {
        Placement::Split => cores.max(1) - 1,
        Placement::PerQueue => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Critical workers have core 0 to themselves once there are two cores; the others
    /// are dealt over the rest; one core takes everyone.
    #[test]
    fn critical_workers_get_their_own_core() {
        let mut next = 0;
        assert_eq!(worker_core(IoClass::Critical, 1, &mut next), 0);
        assert_eq!(worker_core(IoClass::Idle, 1, &mut next), 0);
        assert_eq!(worker_core(IoClass::Critical, 3, &mut next), 0);
        let dealt: Vec<u16> = (0..4)
            .map(|i| {
                let class = if i % 2 == 0 {
                    IoClass::Idle
                } else {
                    IoClass::Normal
                };
                worker_core(class, 3, &mut next)
            })
            .collect();
        assert_eq!(dealt, [1, 2, 1, 2]);
        assert_eq!(worker_core(IoClass::Critical, 3, &mut next), 0);
    }

    /// Over the ring the same rule: no queue's task, no non-critical request and not
    /// the flusher on core 0 with two or more cores; critical requests go there.
    #[test]
    fn the_ring_and_the_flusher_keep_off_the_critical_core() {
        let s = Placement::Split;
        let queues: Vec<u16> = (0..4).map(|q| ring_queue_core(s, q, 2)).collect();
        assert_eq!(queues, [1, 1, 1, 1]);
        let queues: Vec<u16> = (0..4).map(|q| ring_queue_core(s, q, 3)).collect();
        assert_eq!(queues, [1, 2, 1, 2]);
        assert_eq!(ring_queue_core(s, 3, 1), 0);
        assert_eq!(ring_request_core(s, IoClass::Critical, 1), None);
        assert_eq!(ring_request_core(s, IoClass::Normal, 2), Some(2));
        assert_eq!(ring_request_core(s, IoClass::Idle, 1), Some(1));
        assert_eq!(
            (flusher_core(s, 1), flusher_core(s, 2), flusher_core(s, 4)),
            (0, 1, 3)
        );
        // The rule it replaced.
        let o = Placement::PerQueue;
        let queues: Vec<u16> = (0..4).map(|q| ring_queue_core(o, q, 2)).collect();
        assert_eq!(queues, [0, 1, 0, 1]);
        assert_eq!(ring_request_core(o, IoClass::Critical, 1), Some(1));
        assert_eq!(flusher_core(o, 4), 0);
    }
}
