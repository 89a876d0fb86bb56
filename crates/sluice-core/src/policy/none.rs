//! `none`: dispatch in arrival order at once, like blk-mq's `none` elevator.
//!
//! Invariant: a request is never held while the device has room — the queue is
//! non-empty only when the engine stopped offering dispatch opportunities because the
//! device's submission queues are full. Every request goes to the medium queue class
//! (the class ordinary submissions use when the controller does plain round robin).

use std::collections::VecDeque;

use super::{DeviceView, Dispatch, Policy};
use crate::types::{Nanos, Request};

/// FIFO pass-through policy.
#[derive(Debug, Default)]
pub struct NonePolicy {
    fifo: VecDeque<Request>,
}

impl NonePolicy {
    /// A new, empty FIFO.
    pub fn new() -> Self {
        NonePolicy {
            fifo: VecDeque::with_capacity(1024),
        }
    }
}

impl Policy for NonePolicy {
    fn name(&self) -> &'static str {
        "none"
    }

    fn enqueue(&mut self, _now_ns: Nanos, req: Request) {
        self.fifo.push_back(req);
    }

    fn dispatch(&mut self, _now_ns: Nanos, _view: &DeviceView) -> Option<Dispatch> {
        self.fifo.pop_front().map(Dispatch::medium)
    }

    fn queued(&self) -> usize {
        self.fifo.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{FlowId, IoClass, Op, ReqId};

    fn req(id: u64) -> Request {
        Request {
            id: ReqId(id),
            flow: FlowId(0),
            op: Op::Read,
            offset: id * 4096,
            len: 4096,
            class: IoClass::Normal,
            submit_ns: id,
            hwq: 0,
            parts: 1,
            fua: false,
            placement: 0,
            atomic: false,
        }
    }

    #[test]
    fn dispatches_in_arrival_order() {
        let mut p = NonePolicy::new();
        for i in [3, 1, 2] {
            p.enqueue(i, req(i));
        }
        assert_eq!(p.queued(), 3);
        let v = DeviceView::default();
        let order: Vec<u64> =
            std::iter::from_fn(|| p.dispatch(10, &v).map(|d| d.req.id.0)).collect();
        assert_eq!(order, vec![3, 1, 2]);
        assert_eq!(p.queued(), 0);
    }
}
