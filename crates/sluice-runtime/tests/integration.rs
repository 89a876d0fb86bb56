//! This crate's integration tests as one test binary (one link, not one per file):
//! each `tests/NAME.rs` is the module `NAME` here, its tests named `NAME::test`.
//! `autotests = false` in Cargo.toml, so a new file in tests/ runs only once it is
//! listed below (the root package's `tests/layout.rs` checks that none is left out).

mod common;

mod atomic;
mod cache;
mod crash;
mod deadlock_real;
mod file_slots;
mod inherit_prop;
mod names;
mod range_lock;
mod real;
mod real_cores;
mod runtime;
mod waits;
