//! This crate's integration tests as one test binary (one link, not one per file):
//! each `tests/NAME.rs` is the module `NAME` here, its tests named `NAME::test`.
//! `autotests = false` in Cargo.toml, so a new file in tests/ runs only once it is
//! listed below (the root package's `tests/layout.rs` checks that none is left out).

mod atomic;
mod docs;
mod fio_options;
mod gen;
mod io_options;
mod offset_increment;
mod parse;
mod randommap;
mod trim;
mod zones;
