//! This crate's integration tests as one test binary (one link, not one per file):
//! each `tests/NAME.rs` is the module `NAME` here, its tests named `NAME::test`.
//! `autotests = false` in Cargo.toml, so a new file in tests/ runs only once it is
//! listed below (the root package's `tests/layout.rs` checks that none is left out).

mod common;

mod anchors;
mod arbitration;
mod batch;
mod faults;
mod fios_profiles;
mod flash;
mod front_end;
mod front_end_capped;
mod interference;
mod load;
mod model;
mod pool;
mod profiles;
mod shared_transfer;
mod stalls;
mod tails;
mod write_figures;
mod zns;
