//! Ring set-up: the one io_uring layer's (`sluice-uring`), with its errors as the
//! engine's ([`EngineError::Ring`](crate::EngineError::Ring)).

pub(crate) use sluice_uring::{new_ring, ring_entries};
