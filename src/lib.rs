//! # sluice
//!
//! A userspace I/O scheduling stack for fast SSDs. The crates of the workspace, by
//! layer (see `ARCHITECTURE.md`):
//!
//! * [`core`] — the vocabulary (requests, flows, classes) and the policy interface;
//! * [`block`] — the one block layer (admission, policy pump, pieces, promotion) both
//!   worlds drive;
//! * [`runtime`] — async application tasks with classes, critical wakeup and
//!   priority-inheriting locks over the block layer (simulated backend);
//! * [`device`] — device models: the simulated NVMe SSD and its profiles;
//! * [`workload`] — fio job files and deterministic I/O generators;
//! * [`sim`] — the deterministic discrete-event simulator;
//! * [`engine`] — the real engine: the same policies on files and devices through io_uring;
//! * [`calibrate`] — measuring a real device and deriving its simulated profile;
//! * [`metrics`] — latency histograms with breakdown, shares, fairness, JSON, plots;
//! * [`repro`] — paper experiments with goals (`sluice repro`);
//! * [`cli`] — the parts of the `sluice` command that are worth testing as a library;
//!   [`jobset`] (`--set KEY=VALUE` on a job file) and [`sweep`] (`sluice sweep`: the
//!   cross product of policies, devices, seeds and job options, run side by side).
#![warn(missing_docs, missing_debug_implementations)]

pub use sluice_apps as apps;
pub use sluice_block as block;
pub use sluice_cache as cache;
pub use sluice_calibrate as calibrate;
pub use sluice_core as core;
pub use sluice_device as device;
pub use sluice_engine as engine;
pub use sluice_metrics as metrics;
pub use sluice_repro as repro;
pub use sluice_runtime as runtime;
pub use sluice_sim as sim;
pub use sluice_store as store;
pub use sluice_workload as workload;

pub mod cli;
pub mod cmdline_job;
pub mod jobset;
pub mod sweep;
