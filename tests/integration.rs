//! This crate's integration tests as one test binary (one link, not one per file):
//! each `tests/NAME.rs` is the module `NAME` here, its tests named `NAME::test`.
//! `autotests = false` in Cargo.toml, so a new file in tests/ runs only once it is
//! listed below (the root package's `tests/layout.rs` checks that none is left out).

mod common;

mod bad_input;
mod calibrate;
mod cli;
mod default_tails;
mod doc_commands;
mod fdp;
mod fio_compat;
mod fio_examples;
mod fs_store;
mod fuzz;
mod layout;
mod mount;
mod offset_increment;
mod run;
mod run_targets;
mod slurm;
mod sweep;
mod trim;
mod zoned;

// tests/mount/*.rs name their helpers from the crate root (`crate::support`,
// `crate::pattern`), as when tests/mount.rs was a test binary of its own.
use mount::{cstr, in_child, pattern, support};
