//! This crate's integration tests as one test binary (one link, not one per file):
//! each `tests/NAME.rs` is the module `NAME` here, its tests named `NAME::test`.
//! `autotests = false` in Cargo.toml, so a new file in tests/ runs only once it is
//! listed below (the root package's `tests/layout.rs` checks that none is left out).

mod common;

mod big_files;
mod corrupt;
mod crash;
mod damaged;
mod f_area;
mod file_ops;
mod fio;
mod fs;
mod fuzz_image;
mod inline;
mod inspect;
mod kill;
mod mkfs;
mod open_files;
mod read_cache;
mod read_path;
mod single_flush;
