//! # sluice-sim — the deterministic discrete-event simulator
//!
//! Drives fio-style jobs ([`sluice_workload`]) through the one block layer
//! ([`sluice_block::BlockLayer`], the very component the io_uring engine drives, with its
//! scheduling policy) onto a
//! simulated NVMe SSD ([`sluice_device::NvmeSsd`]) in virtual nanoseconds.
//!
//! * **Virtual clock**: time only moves when the next event is taken; nothing reads the
//!   wall clock.
//! * **Event queue**: a heap ordered by (time, sequence number) — same-time events fire
//!   in scheduling order ([`events`]); the device keeps its own internal events and the
//!   loop always takes the earlier of the two (device first on a tie).
//! * **Seeded randomness**: every thread's I/O stream comes from the run's seed, the job's
//!   `randseed` and the thread's index. Same inputs and seed give byte-identical output.
//!
//! ## How one request flows
//! ```text
//! thread (IoGen, iodepth, pacer, thinktime)
//!   └─ BlockLayer::submit ─► policy.admit ─► policy.enqueue ─► pump: policy.dispatch(view)
//!        └─ NvmeSsd.submit(qid = core·4 + queue class) ─► controller fetch (arbitration)
//!             └─ media (parallel units) ─► completion ─► policy.complete
//!                  └─ parent complete when all pieces are ─► metrics ─► thread reissues
//! ```
//! The simulator has no host CPU model: the "after device" part of the latency
//! breakdown (completion → application) is zero here; the real engine measures it.
#![warn(missing_docs, missing_debug_implementations)]

mod config;
pub mod estimate;
pub mod events;
mod port;
mod sim;

pub use config::{LittleCheck, SimConfig, SimError, SimOutput, SimStats, ZoneStats};
pub use port::{flash_facts, SimPort};
pub use sim::run;
