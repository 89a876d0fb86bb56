//! # sluice-uring
//!
//! The one io_uring layer of sluice: everything the real worlds — the engine's fio
//! workers (`sluice-engine`) and the application runtime's cores (`sluice-runtime`) —
//! need to reach a file through io_uring, written once so that the two measure the
//! same thing:
//!
//! * [`new_ring`] / [`ring_entries`]: ring set-up with the flags a single submitter
//!   wants (`SINGLE_ISSUER`, `COOP_TASKRUN`, `DEFER_TASKRUN`; plain on older kernels)
//!   and a size that never overflows ([`new_ring_of`]: 128-byte SQEs too, [`RingSqe`]); [`submit`] and [`submit_and_wait`], which tell a
//!   ring's failure from a wait that just ended;
//! * [`AlignedBuf`]: page-aligned memory that never moves, cut into the slots a ring
//!   registers as its fixed buffers ([`AlignedBuf::iovecs`]);
//! * [`Doorbell`] and [`doorbell_read`]: an owner's eventfd, whose read stays pending in
//!   its ring, so that work handed over by another thread wakes a waiting enter;
//! * [`RingPort`]: the block layer's port onto the rings — a device-wide cap, the NVMe
//!   arbiter in front of the rings (the simulated device's own [`sluice_device::Arbiter`]:
//!   urgent first, weighted round robin with its burst), an outbox per ring owner;
//! * [`sqe()`]: the one mapping from a block-layer piece to an SQE — FLUSH is
//!   `fdatasync`, FUA is `RWF_DSYNC` (module [`sqe`](mod@sqe) says why) — and
//!   [`inspect`] to read a built SQE back.
//!
//! ```text
//!  block layer (sluice-block) ── try_submit(tag, piece) ──► RingPort
//!     per (owner, class) queue → NVMe arbiter (cap) → outbox of the owner ─┐
//!                                        doorbell if another thread filled it
//!  owner's turn: sqe(piece) → its ring (registered file, fixed buffer) ◄──┘
//!  CQE (user_data = tag) → piece_done(tag) → RingPort::command_done
//! ```
#![warn(missing_docs, missing_debug_implementations)]

mod buf;
mod doorbell;
mod port;
mod ring;
pub mod sqe;

pub use buf::{AlignedBuf, BUF_ALIGN};
pub use doorbell::{doorbell_read, Doorbell, BELL};
pub use port::{RingPort, BURST, D2FQ_WEIGHTS};
pub use ring::{
    new_ring, new_ring_of, register_slots, ring_entries, ring_hint, submit, submit_and_wait, Ring,
    RingSqe,
};
pub use sqe::{inspect, meaning, sqe, Meaning, Piece, SqeView};

/// A ring or a doorbell could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum UringError {
    /// The io_uring instance could not be created.
    #[error("cannot create an io_uring with {entries} entries: {source}; {hint}")]
    Ring {
        /// Entries asked for.
        entries: u32,
        /// What the kernel said.
        #[source]
        source: std::io::Error,
        /// Why, and how to fix it.
        hint: &'static str,
    },
    /// An eventfd for a ring owner's wake-ups could not be created.
    #[error("cannot create an eventfd for a ring's wake-ups: {0}")]
    Doorbell(#[source] std::io::Error),
}
