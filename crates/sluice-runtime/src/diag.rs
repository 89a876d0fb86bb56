//! Figures for tests of the runtime's own costs (not part of the stable API).

/// How many times the stacks of this process have taken their runtime's lock (its one
/// mutex over the shared state) so far.
pub fn locks_taken() -> u64 {
    crate::exec::shared_locks()
}

/// Called by a task of a real stack: the SQEs its core's thread wrote in the current
/// turn and has not submitted to the kernel yet — what an I/O issued in the last round
/// would still wait behind while this task runs (0: the turn submitted before its
/// round). 0 outside a real stack.
pub fn unsubmitted_sqes() -> usize {
    crate::exec::cores::unsubmitted_sqes()
}
