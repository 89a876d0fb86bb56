//! A core's thread pinned to one CPU (`StackBuilder::pin_cores`).

/// Pin the calling thread to `cpu`; returns the CPU mask it had, or why not.
pub(super) fn pin_to(cpu: usize) -> Result<libc::cpu_set_t, String> {
    // SAFETY: cpu_set_t is plain bits; the calls read and write only the given set.
    unsafe {
        let mut before: libc::cpu_set_t = std::mem::zeroed();
        let size = std::mem::size_of::<libc::cpu_set_t>();
        if libc::sched_getaffinity(0, size, &mut before) != 0 {
            return Err(format!(
                "cannot read its CPU mask: {}",
                std::io::Error::last_os_error()
            ));
        }
        if cpu >= 8 * size {
            return Err(format!(
                "CPU {cpu} is past the largest CPU number a mask holds"
            ));
        }
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, size, &set) != 0 {
            return Err(format!(
                "cannot pin its thread to CPU {cpu}: {} (give CPUs the process may run on)",
                std::io::Error::last_os_error()
            ));
        }
        Ok(before)
    }
}

/// Give the calling thread the CPU mask `before` back.
pub(super) fn restore(before: &libc::cpu_set_t) {
    // SAFETY: as above.
    unsafe {
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), before);
    }
}
