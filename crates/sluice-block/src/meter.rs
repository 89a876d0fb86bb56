//! Measuring the policy's calls.

/// The kinds of policy calls the block layer makes, in report order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PolicyCall {
    /// `Policy::admit`.
    Admit = 0,
    /// `Policy::enqueue`.
    Enqueue = 1,
    /// `Policy::dispatch` (also the call that finds nothing).
    Dispatch = 2,
    /// `Policy::complete`.
    Complete = 3,
    /// `Policy::timer`.
    Timer = 4,
    /// `Policy::next_timer_ns`.
    NextTimer = 5,
}

impl PolicyCall {
    /// Every kind, in index order.
    pub const ALL: [PolicyCall; 6] = [
        PolicyCall::Admit,
        PolicyCall::Enqueue,
        PolicyCall::Dispatch,
        PolicyCall::Complete,
        PolicyCall::Timer,
        PolicyCall::NextTimer,
    ];

    /// Index into per-kind arrays.
    #[inline]
    pub fn index(self) -> usize {
        self as usize
    }

    /// The name used in reports.
    pub fn name(self) -> &'static str {
        [
            "admit",
            "enqueue",
            "dispatch",
            "complete",
            "timer",
            "next_timer",
        ][self.index()]
    }
}

/// Brackets every policy call the block layer makes. The engine's meter reads the
/// time-stamp counter around each call; the simulator's ([`NoMeter`]) does nothing.
pub trait Meter {
    /// Run `f`, one policy call of kind `call`, and account for it.
    fn time<R>(&mut self, call: PolicyCall, f: impl FnOnce() -> R) -> R;
}

/// A meter that measures nothing (and costs nothing).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoMeter;

impl Meter for NoMeter {
    #[inline(always)]
    fn time<R>(&mut self, _call: PolicyCall, f: impl FnOnce() -> R) -> R {
        f()
    }
}
