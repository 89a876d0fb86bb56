//! The device port: where dispatched pieces go.

use sluice_core::policy::Dispatch;
use sluice_core::Nanos;

/// What a world offers the block layer as its device: the simulated `NvmeSsd`'s
/// submission queues, or the engine's io_uring rings behind its software WRR arbiter.
///
/// The block layer gives each dispatched piece a tag (its piece slot, unique among the
/// pieces in flight) and hands it over with [`DevicePort::try_submit`]; the world reports
/// the piece's completion back with `BlockLayer::piece_done(now, tag, ok)`.
pub trait DevicePort {
    /// How many commands can be outstanding at the device at most (the
    /// `DeviceView::max_inflight` the policy sees); no dispatch is offered beyond it.
    fn max_inflight(&self) -> u32;

    /// Accept piece `tag`, or refuse it (`false`) when its submission queue is full:
    /// the block layer then holds the dispatch and offers it first at the next pump
    /// (after a completion frees room), under the same tag.
    fn try_submit(&mut self, now_ns: Nanos, tag: u32, d: &Dispatch) -> bool;

    /// The policy asks for new NVMe weighted-round-robin weights `[high, medium, low]`
    /// (D2FQ's dynamic H/L ratio). Called when the wanted weights change. A port whose
    /// device arbitrates round robin ignores it.
    fn set_wrr_weights(&mut self, weights: [u32; 3]);
}
