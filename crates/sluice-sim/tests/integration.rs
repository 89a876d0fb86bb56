//! This crate's integration tests as one test binary (one link, not one per file):
//! each `tests/NAME.rs` is the module `NAME` here, its tests named `NAME::test`.
//! `autotests = false` in Cargo.toml, so a new file in tests/ runs only once it is
//! listed below (the root package's `tests/layout.rs` checks that none is left out).

mod atomic;
mod buffered;
mod faults;
mod fill;
mod sim;
mod steadystate;
mod threads;
mod zoned;
