//! Page-aligned memory: the io_uring layer's (`sluice-uring`), for the worker's
//! registered slot region, the pre-fill buffer and the page cache's buffers.

pub(crate) use sluice_uring::{AlignedBuf, BUF_ALIGN};
