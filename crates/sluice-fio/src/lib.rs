//! # sluice-fio — the one fio job runner
//!
//! Every world that runs fio job files — the simulator (`sluice sim`), the io_uring
//! engine (`sluice run`) and, later, other front ends — drives this one runner, as
//! fio's engines give `queue`/`commit`/`getevents` to its one `do_io` loop. The
//! runner owns what a job file means:
//!
//! * [`plan`]: one plan of the jobs' address space and files (which thread uses which
//!   file, where each file sits in the address space the policies see);
//! * [`Runner`]: the job threads and their state — issuing as far as `iodepth`, the
//!   pacer and the size allow ([`sluice_workload::IoSource`]), `thinktime`, the
//!   `runtime` end, `exitall`, stonewall groups, steady state (`ss_dur`), the verify
//!   hooks ([`verify`]) and one sample per completed I/O, its class taken from the
//!   block layer's completion;
//! * [`front`]: the buffered front — fio's buffered jobs (`direct=0`) through the page
//!   cache, between the job threads and the block layer;
//! * [`Owner`]: who a block-layer request belongs to (a job or the front), the one
//!   encoding of the block layer's token the worlds route completions by.
//!
//! Like the block layer it is clock-free: the world gives it the time and a [`Port`]
//! (submit a request, wake a thread at an instant, end a job at an instant, take a
//! sample) and hands it the completions. It never reads a clock, sleeps or spawns.
#![warn(missing_docs, missing_debug_implementations)]

pub mod fill;
pub mod front;
pub mod latency;
mod owner;
pub mod plan;
mod runner;
pub mod tokens;
pub mod verify;
pub mod zbd;

pub use owner::Owner;
pub use plan::{AddressPlan, PlannedThread};
pub use runner::{Port, Runner, Scope, Submit, ThreadSetup, VerifyDone, WAIT_POLL_NS};
pub use tokens::TokenFlows;
pub use verify::Verifier;
pub use zbd::ZoneGeometry;
