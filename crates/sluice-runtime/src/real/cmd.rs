//! A task's own io_uring commands on its core's ring: 128-byte SQEs (`IORING_OP_URING_CMD`
//! with an 80-byte argument, as FUSE over io_uring's `REGISTER` and `COMMIT_AND_FETCH`)
//! written with the core's I/O and submitted by the core's one `io_uring_enter` per
//! turn, their completions handed to the [`CmdSink`] that asked, on the core's thread.
//! So a source of work that talks through io_uring — a FUSE queue — needs no ring of
//! its own: one enter commits its replies, fetches its requests and submits the
//! backing I/O, and its requests arrive with the core's own completions (on a ring
//! with deferred task work: when the core waits, as many as are ready at once).
//!
//! A command in the ring takes no SQE once submitted, only a CQE when it completes: a
//! core may hold more of them than its ring's entries (the kernel keeps completions
//! past a full queue, `IORING_FEAT_NODROP`, and an enter that reaps flushes them).
//!
//! The stack's rings take 128-byte SQEs only when asked for
//! ([`crate::StackBuilder::uring_commands`]); [`commands`] refuses otherwise. The real
//! world only: in simulation there is no ring.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use io_uring::squeue::Entry128;

/// Where a command's completion goes.
pub trait CmdSink: Send + Sync {
    /// Command `key` completed with `res` (the CQE's result). Called on the core's
    /// thread after its ring's enter, outside the runtime's lock and outside any task:
    /// it may wake tasks and submit commands ([`Commands::submit`]), not await.
    fn done(&self, key: u32, res: i32);
}

/// The commands of this thread's core.
pub(crate) struct CmdState {
    /// This core ring's identity (a [`Commands`] of another ring is refused).
    pub id: u64,
    /// Whether the ring takes 128-byte SQEs.
    pub big: bool,
    /// Sinks asked for since the core last took them (it keeps them, by index, as long
    /// as its ring: their commands' buffers stay alive until the ring is gone).
    pub new_sinks: Vec<Arc<dyn CmdSink>>,
    /// Sinks in all (taken or not): the next index.
    pub sinks: u32,
    /// Commands not yet written to the ring: the SQE, its sink and key.
    pub pending: Vec<(Entry128, u32, u32)>,
    /// Commands in the ring (written, no completion yet).
    pub in_ring: u32,
}

thread_local! {
    /// This thread's core's commands; `None` on a thread that is no core of a real stack.
    pub(crate) static CMDS: RefCell<Option<CmdState>> = const { RefCell::new(None) };
}

static RING_IDS: AtomicU64 = AtomicU64::new(1);

impl CmdState {
    pub(crate) fn new(big: bool) -> CmdState {
        CmdState {
            id: RING_IDS.fetch_add(1, Ordering::Relaxed),
            big,
            new_sinks: Vec::new(),
            sinks: 0,
            pending: Vec::new(),
            in_ring: 0,
        }
    }
}

/// A sink's commands on the ring of the core that made it ([`commands`]).
#[derive(Clone, Copy, Debug)]
pub struct Commands {
    ring: u64,
    sink: u32,
    core: u16,
}

/// Commands on this core's ring whose completions go to `sink` (called by a task, or
/// on a core's thread). Refused when this thread is no core of a real stack, or its
/// stack's rings take 64-byte SQEs (`StackBuilder::uring_commands`).
pub fn commands(sink: Arc<dyn CmdSink>) -> std::io::Result<Commands> {
    let core = crate::exec::my_core();
    CMDS.with(|c| match &mut *c.borrow_mut() {
        Some(st) if st.big => {
            let sink_id = st.sinks;
            st.sinks += 1;
            st.new_sinks.push(sink);
            Ok(Commands {
                ring: st.id,
                sink: sink_id,
                core,
            })
        }
        Some(_) => Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "io_uring commands: the stack's rings take 64-byte SQEs (build it with \
             StackBuilder::uring_commands(true))",
        )),
        None => Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "io_uring commands: not on a core of a real stack",
        )),
    })
}

impl Commands {
    /// The core whose ring takes these commands.
    pub fn core(&self) -> u16 {
        self.core
    }

    /// Whether this thread is that core's (where [`Commands::submit`] may be called).
    pub fn here(&self) -> bool {
        CMDS.with(|c| c.borrow().as_ref().is_some_and(|st| st.id == self.ring))
    }

    /// Queue `sqe` (its `user_data` is the core's) for the ring: it is written with the
    /// core's next turn and submitted by that turn's enter; its completion goes to the
    /// sink as `key`. Refused on any thread but the core's ([`Commands::here`]).
    ///
    /// # Safety
    /// What `sqe` points at stays valid until its completion reached the sink, or the
    /// ring is gone (the core keeps the sink, and with it whatever it owns, that long).
    pub unsafe fn submit(&self, sqe: Entry128, key: u32) -> std::io::Result<()> {
        CMDS.with(|c| match &mut *c.borrow_mut() {
            Some(st) if st.id == self.ring => {
                st.pending.push((sqe, self.sink, key));
                Ok(())
            }
            _ => Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "io_uring commands: submitted from a thread other than their core's",
            )),
        })
    }
}
