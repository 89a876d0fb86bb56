//! # sluice-core
//!
//! The vocabulary every sluice layer shares ([`Request`], [`Flow`], [`IoClass`],
//! [`QueueClass`]) and the scheduling-policy interface ([`policy::Policy`]) that the
//! deterministic simulator and the io_uring engine both drive.
#![warn(missing_docs, missing_debug_implementations)]

pub mod policy;
mod types;

pub use types::{Flow, FlowId, IoClass, Nanos, Op, QueueClass, ReqId, Request};

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn req(len: u32, op: Op) -> Request {
        Request {
            id: ReqId(7),
            flow: FlowId(1),
            op,
            offset: 1 << 20,
            len,
            class: IoClass::Normal,
            submit_ns: 5,
            hwq: 0,
            parts: 1,
            fua: false,
            placement: 0,
            atomic: false,
        }
    }

    proptest! {
        /// Pieces tile the parent exactly, in LBA order, all carry the parent's id and
        /// the piece count, and none exceeds the split size.
        #[test]
        fn split_tiles_parent(len in 1u32..(4 << 20), piece in 512u32..(256 << 10)) {
            let parent = req(len, Op::Write);
            let pieces: Vec<Request> = parent.split(piece).collect();
            let n = pieces.len();
            prop_assert_eq!(n, len.div_ceil(piece) as usize);
            let mut next = parent.offset;
            for p in &pieces {
                prop_assert_eq!(p.offset, next);
                prop_assert!(p.len <= piece && p.len > 0);
                prop_assert_eq!(p.id, parent.id);
                prop_assert_eq!(p.parts as usize, n);
                next += p.len as u64;
            }
            prop_assert_eq!(next, parent.offset + len as u64);
        }
    }

    #[test]
    fn flush_is_never_split() {
        let f = req(0, Op::Flush);
        assert_eq!(f.split(4096).count(), 1);
    }

    /// An atomic write of 64 KiB stays whole where a plain one of the same size is cut
    /// into 4 KiB pieces (blk-mq's rule for `REQ_ATOMIC`); an atomic read is a read.
    #[test]
    fn an_atomic_write_is_never_split() {
        let plain = req(64 << 10, Op::Write);
        assert_eq!(plain.split(4096).count(), 16);
        let atomic = Request {
            atomic: true,
            ..plain
        };
        let pieces: Vec<Request> = atomic.split(4096).collect();
        assert_eq!(pieces, vec![atomic]);
        let read = Request {
            atomic: true,
            ..req(64 << 10, Op::Read)
        };
        assert_eq!(read.split(4096).count(), 16);
    }
}
