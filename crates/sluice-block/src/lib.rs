//! # sluice-block — the one block layer
//!
//! Everything between "an application submits a request" and "a command reaches a
//! device queue", written once and driven by either world:
//!
//! ```text
//!   client (fio job runner, application runtime)
//!      │ submit(now, NewRequest, token) ─► ReqId
//!      ▼
//!   ┌──────────────────────── BlockLayer ─────────────────────────────┐
//!   │ admission: Policy::admit; refused → wait list, FIFO *within a   │
//!   │   class* (a request parks without asking while one of its own   │
//!   │   class waits); asked again after every completion batch, timer │
//!   │   and promotion (in `pump`)                                     │
//!   │ policy pump: Policy::dispatch(DeviceView) until None, the view  │
//!   │   is full, or the port has no room (then the dispatch is held   │
//!   │   and offered first next time)                                  │
//!   │ pieces: each dispatch gets a tag (piece slot); a split request  │
//!   │   completes when its last piece does (`Request::parts`); an     │
//!   │   atomic write (`Request::atomic`, REQ_ATOMIC) is never split,  │
//!   │   and nothing merges requests                                   │
//!   │ promotion: admission-waiting → class raised, asked again;       │
//!   │   queued → Policy::promote (RCP's I/O priority inheritance)     │
//!   │ WRR: Policy::wrr_weights polled after every pump and pushed to  │
//!   │   the port when it changes (D2FQ's dynamic H/L)                 │
//!   │ samples: submit/admit/dispatch/device-done times per request    │
//!   └────────────────────────────┬───────────────────────────▲────────┘
//!               DevicePort::try_submit(tag, dispatch)  piece_done(now, tag, ok)
//!                                ▼                           │
//!        simulated NvmeSsd (sluice-sim)  |  io_uring rings + software WRR arbiter
//!                                            (sluice-engine)
//! ```
//!
//! The layer never reads a clock, sleeps or spawns threads: every call is given `now`,
//! and the layer says when it next wants its policy's timer fired
//! ([`BlockLayer::next_timer_ns`]). The simulator owns one `BlockLayer` per simulated
//! device; the engine owns one per real device, shared by its workers under one lock
//! (the kernel's elevator lock), so device-wide policy state — D2FQ's global virtual
//! time, LD's one token pool, MQFQ's V, RCP's admission slots — is one state whatever
//! the worker count.
//!
//! Policy calls can be measured by a [`Meter`] (the engine times them with the TSC); the
//! simulator uses [`NoMeter`], which compiles to nothing.
#![warn(missing_docs, missing_debug_implementations)]

mod layer;
mod meter;
mod port;
mod stats;
mod zonelock;

pub use layer::{BlockLayer, Finished, NewRequest, Piece, ReqState, Stall};
pub use meter::{Meter, NoMeter, PolicyCall};
pub use port::DevicePort;
pub use stats::{BlockStats, CounterSeries, MAX_ROWS};
