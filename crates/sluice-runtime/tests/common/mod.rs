//! Helpers the runtime's real-file tests share.

use sluice_runtime::RuntimeError;

/// Whether `e` says io_uring cannot be set up here (the test then says so and returns).
pub fn skip(e: &RuntimeError) -> bool {
    let m = e.to_string();
    if m.contains("cannot create an io_uring") || m.contains("file table") {
        eprintln!("io_uring unavailable, test skipped: {m}");
        return true;
    }
    false
}
