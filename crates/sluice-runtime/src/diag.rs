//! Figures for tests of the runtime's own costs (not part of the stable API).

/// How many times the stacks of this process have taken their runtime's lock (its one
/// mutex over the shared state) so far.
pub fn locks_taken() -> u64 {
    crate::exec::shared_locks()
}
