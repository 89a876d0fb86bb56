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
//! * FUSE over io_uring: queue `q`'s entries are registered by a task on core `q mod N`
//!   ([`ring_queue_core`]: the kernel delivers a request to the thread that registered
//!   the entry it took, of the queue of the CPU its caller runs on), and every request
//!   is served by a worker on that core, a critical caller's too
//!   ([`ring_request_core`]): no thread hop. Handing a critical caller's request to
//!   core 0 (one cross-core wake, critical requests only) was measured and made the
//!   critical reader's p99 worse beside bulk writers (its reply goes back to the
//!   entry's core to be committed: two wakes across cores instead of none), so the
//!   ring keeps the core that received the request. Dealing every queue's entries over
//!   all the cores (`spread`, below) served one busy caller's requests on every core
//!   and gained IOPS at QD32, but made the critical reader's tail worse beside bulk
//!   writers: not the default.
//! * The page cache's flusher (non-critical, flow `writeback`) on [`flusher_core`]: the
//!   last core.
//!
//! With one core everything is on core 0.
//!
//! `SLUICE_MOUNT_PLACEMENT` (read once at start) gives the other rules measured, with
//! the same binary (docs/mount.md): `spread`, every queue's entries dealt over all
//! the cores ([`ring_entry_cores`]); `per-queue`, the rule this one replaced (the
//! flusher on core 0); `critical-core-0` (a critical caller's ring request served on
//! core 0); `queues-off-0` (that, and the ring queues' tasks kept off core 0, on cores
//! 1..N: every request then reaches the daemon through a bulk core). These two made the critical reader's p99 worse. `pinned` and `cross`
//! pin the cores' threads to the allowed CPUs ([`core_cpus`]) and put queue `q` on the
//! core of CPU `q` (libfuse's rule) or of the next CPU (a caller never shares its CPU
//! with the core serving it); neither gained IOPS at QD32, `cross` lost 12 %. The
//! `/dev/fuse` rule is the same in all.

use sluice_core::IoClass;

/// The placement rules.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Placement {
    /// The flusher off core 0; ring requests on their queue's core (the default).
    #[default]
    Split,
    /// [`Placement::Split`] with every ring queue's entries dealt over all the cores, a
    /// ring request served on the core of the entry it came in
    /// (`SLUICE_MOUNT_PLACEMENT=spread`: more IOPS from one busy caller, a worse tail
    /// for a critical caller beside bulk ones; measured in docs/mount.md).
    Spread,
    /// [`Placement::Split`] with a critical caller's ring request served on core 0
    /// (`SLUICE_MOUNT_PLACEMENT=critical-core-0`; measured worse).
    CriticalCore0,
    /// [`Placement::CriticalCore0`] with the ring queues' tasks off core 0 too
    /// (`SLUICE_MOUNT_PLACEMENT=queues-off-0`; measured worse).
    QueuesOff0,
    /// The earlier rule (`SLUICE_MOUNT_PLACEMENT=per-queue`).
    PerQueue,
    /// [`Placement::Split`] with core `c`'s thread pinned to the process's `c`-th allowed
    /// CPU and ring queue `q` (the callers on CPU `q`) owned by the core pinned to CPU
    /// `q`, as libfuse pins each queue's thread to its CPU
    /// (`SLUICE_MOUNT_PLACEMENT=pinned`).
    Pinned,
    /// The cores pinned as [`Placement::Pinned`], and ring queue `q` owned by the core
    /// pinned to the *next* allowed CPU — never the CPU of the queue's callers, so a
    /// caller and the core serving it run side by side instead of taking turns on one
    /// CPU (`SLUICE_MOUNT_PLACEMENT=cross`).
    Cross,
}

impl Placement {
    /// From `SLUICE_MOUNT_PLACEMENT` (`per-queue`; anything else or unset: the default).
    pub fn from_env() -> Placement {
        match std::env::var("SLUICE_MOUNT_PLACEMENT").as_deref() {
            Ok("per-queue") => Placement::PerQueue,
            Ok("queues-off-0") => Placement::QueuesOff0,
            Ok("critical-core-0") => Placement::CriticalCore0,
            Ok("spread") => Placement::Spread,
            Ok("pinned") => Placement::Pinned,
            Ok("cross") => Placement::Cross,
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

/// The CPUs the cores' threads are pinned to (core `c` on `cpus[c % len]`): with
/// [`Placement::Pinned`] and [`Placement::Cross`] the CPUs the process may run on
/// (`allowed`, ascending); empty (not pinned) with the other rules.
pub fn core_cpus(p: Placement, allowed: &[usize]) -> Vec<usize> {
    match p {
        Placement::Pinned | Placement::Cross => allowed.to_vec(),
        _ => Vec::new(),
    }
}

/// The CPUs the calling thread may run on, ascending (empty when they cannot be read).
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain bits; the call writes only the given set.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

/// The core of FUSE ring queue `q`'s task: `q mod N` (over cores 1..N with
/// [`Placement::QueuesOff0`]). With the cores pinned (`cpus`, [`core_cpus`]): the core
/// pinned to CPU `q` ([`Placement::Pinned`]; `q mod N` when no core is), or to the
/// allowed CPU after it ([`Placement::Cross`]: with two or more cores never the CPU
/// of the queue's callers).
pub(crate) fn ring_queue_core(p: Placement, q: usize, cores: u16, cpus: &[usize]) -> u16 {
    let cores = cores.max(1) as usize;
    // The position of CPU q among the pinned CPUs (cores 0..min(N, P) own one each).
    let pinned = cores.min(cpus.len()).max(1);
    let at = cpus.iter().position(|&c| c == q).unwrap_or(q);
    match p {
        Placement::QueuesOff0 if cores >= 2 => (1 + q % (cores - 1)) as u16,
        Placement::Pinned if !cpus.is_empty() => (at % pinned) as u16,
        // at + 1 (mod the pinned cores) is another core's CPU: when at < pinned it
        // differs from at (pinned >= 2), and when at >= pinned no core is on CPU q.
        Placement::Cross if !cpus.is_empty() => ((at + 1) % pinned) as u16,
        _ => (q % cores) as u16,
    }
}

/// The cores that own entries of FUSE ring queue `q`, each with a task and an io_uring
/// of its own: the one core [`ring_queue_core`], or with [`Placement::Spread`] every
/// core (the kernel gives a request to the first free entry of its caller's CPU's
/// queue and delivers it to the thread that registered that entry, so one queue's
/// requests are served on every core with no hand-over between them).
pub(crate) fn ring_entry_cores(p: Placement, q: usize, cores: u16, cpus: &[usize]) -> Vec<u16> {
    match p {
        Placement::Spread => (0..cores.max(1)).collect(),
        _ => vec![ring_queue_core(p, q, cores, cpus)],
    }
}

/// The core whose worker serves a request of class `class` that came through a ring
/// queue owned by core `queue_core`: the queue's own core (with
/// [`Placement::CriticalCore0`] and [`Placement::QueuesOff0`], `None` for a critical
/// caller: the workers [`worker_core`] places, core 0).
pub(crate) fn ring_request_core(p: Placement, class: IoClass, queue_core: u16) -> Option<u16> {
    match p {
        Placement::CriticalCore0 | Placement::QueuesOff0 if class == IoClass::Critical => None,
        _ => Some(queue_core),
    }
}

/// The page cache flusher's core: the last one (not core 0) with two or more cores.
pub fn flusher_core(p: Placement, cores: u16) -> u16 {
    match p {
        Placement::Split
        | Placement::Spread
        | Placement::CriticalCore0
        | Placement::QueuesOff0
        | Placement::Pinned
        | Placement::Cross => cores.max(1) - 1,
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

    /// Over the ring a request stays on its queue's core (but under the variants that
    /// were measured); the flusher is not on core 0 with two or more cores.
    #[test]
    fn the_ring_and_the_flusher_keep_off_the_critical_core() {
        let s = Placement::Split;
        let queues: Vec<u16> = (0..4).map(|q| ring_queue_core(s, q, 2, &[])).collect();
        assert_eq!(queues, [0, 1, 0, 1]);
        assert_eq!(ring_request_core(s, IoClass::Critical, 1), Some(1));
        let c0 = Placement::CriticalCore0;
        assert_eq!(ring_queue_core(c0, 1, 2, &[]), 1);
        assert_eq!(ring_request_core(c0, IoClass::Critical, 1), None);
        assert_eq!(ring_request_core(c0, IoClass::Normal, 1), Some(1));
        let off0 = Placement::QueuesOff0;
        let queues: Vec<u16> = (0..4).map(|q| ring_queue_core(off0, q, 2, &[])).collect();
        assert_eq!(queues, [1, 1, 1, 1]);
        let queues: Vec<u16> = (0..4).map(|q| ring_queue_core(off0, q, 3, &[])).collect();
        assert_eq!(queues, [1, 2, 1, 2]);
        assert_eq!(ring_queue_core(off0, 3, 1, &[]), 0);
        assert_eq!(ring_request_core(off0, IoClass::Critical, 1), None);
        assert_eq!(ring_request_core(off0, IoClass::Normal, 2), Some(2));
        assert_eq!(ring_request_core(s, IoClass::Idle, 1), Some(1));
        assert_eq!(
            (flusher_core(s, 1), flusher_core(s, 2), flusher_core(s, 4)),
            (0, 1, 3)
        );
        // A queue's entries on its one core; on every core with `spread`.
        assert_eq!(ring_entry_cores(s, 1, 2, &[]), [1]);
        assert_eq!(ring_entry_cores(s, 2, 2, &[]), [0]);
        let sp = Placement::Spread;
        assert_eq!(ring_entry_cores(sp, 1, 2, &[]), [0, 1]);
        assert_eq!(ring_entry_cores(sp, 0, 1, &[]), [0]);
        assert_eq!(ring_request_core(sp, IoClass::Critical, 1), Some(1));
        assert_eq!(flusher_core(sp, 2), 1);
        assert_eq!(ring_entry_cores(off0, 0, 2, &[]), [1]);
        // The rule it replaced.
        let o = Placement::PerQueue;
        let queues: Vec<u16> = (0..4).map(|q| ring_queue_core(o, q, 2, &[])).collect();
        assert_eq!(queues, [0, 1, 0, 1]);
        assert_eq!(ring_request_core(o, IoClass::Critical, 1), Some(1));
        assert_eq!(flusher_core(o, 4), 0);
    }

    /// Pinned cores: `pinned` puts queue q on the core of CPU q (libfuse's rule),
    /// `cross` on the core of another CPU than the queue's callers'; the other rules
    /// pin nothing and ignore the CPUs.
    #[test]
    fn pinned_cores_serve_their_cpu_or_the_next() {
        let cpus = [0, 1];
        assert_eq!(core_cpus(Placement::Split, &cpus), Vec::<usize>::new());
        assert_eq!(core_cpus(Placement::Cross, &cpus), vec![0, 1]);
        assert_eq!(core_cpus(Placement::Pinned, &cpus), vec![0, 1]);
        let p = Placement::Pinned;
        let cx = Placement::Cross;
        let on = |pl, cores, cpus: &[usize]| -> Vec<u16> {
            (0..4)
                .map(|q| ring_queue_core(pl, q, cores, cpus))
                .collect()
        };
        assert_eq!(on(p, 2, &cpus), [0, 1, 0, 1]);
        assert_eq!(on(cx, 2, &cpus), [1, 0, 1, 0]);
        // Every queue of a CPU a core is pinned to is served from another CPU.
        for q in 0..2 {
            let core = ring_queue_core(cx, q, 2, &cpus) as usize;
            assert_ne!(cpus[core], q);
        }
        // Allowed CPUs 2, 5, 7 and three cores: CPU 5's queue on core 1 (pinned) or 2
        // (cross: CPU 7), CPU 7's on core 0 (CPU 2); a CPU no core has (0) anywhere.
        let odd = [2, 5, 7];
        assert_eq!(ring_queue_core(p, 5, 3, &odd), 1);
        assert_eq!(ring_queue_core(cx, 5, 3, &odd), 2);
        assert_eq!(ring_queue_core(cx, 7, 3, &odd), 0);
        assert_eq!(ring_queue_core(cx, 2, 3, &odd), 1);
        // Fewer cores than CPUs: two cores on CPUs 2 and 5; CPU 7's queue on a core of
        // another CPU either way, CPU 5's never on core 1 with cross.
        assert_eq!(ring_queue_core(cx, 5, 2, &odd), 0);
        assert_eq!(ring_queue_core(cx, 2, 2, &odd), 1);
        assert!(ring_queue_core(cx, 7, 2, &odd) < 2);
        // One core: everything on it.
        assert_eq!(ring_queue_core(cx, 1, 1, &cpus), 0);
        // Not pinned: the CPUs are not looked at.
        assert_eq!(on(Placement::Split, 2, &cpus), [0, 1, 0, 1]);
        assert_eq!(ring_entry_cores(cx, 0, 2, &cpus), [1]);
        assert_eq!(flusher_core(cx, 2), 1);
    }
}
