//! The names of the figures policies report ([`Policy::counters`](super::Policy::counters)).
//!
//! One enum for every policy, so a reader of a report (a repro suite, a test, a
//! plot) names a counter by a variant: renaming one is a compile error everywhere it
//! is read, never a silent zero. [`Counter::name`] is its `snake_case` name in JSON.

macro_rules! counters {
    ($($(#[doc = $doc:expr])* $v:ident => $n:literal,)*) => {
        /// A policy counter (see the module documentation).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Counter {
            $($(#[doc = $doc])* $v,)*
            /// A counter of a policy outside sluice (an embedder's own), by name.
            Custom(&'static str),
        }

        impl Counter {
            /// Every built-in counter, in declaration order.
            pub const ALL: &'static [Counter] = &[$(Counter::$v,)*];

            /// The counter's `snake_case` name (its key in JSON reports).
            pub fn name(self) -> &'static str {
                match self {
                    $(Counter::$v => $n,)*
                    Counter::Custom(n) => n,
                }
            }

            /// The built-in counter with this name.
            pub fn from_name(name: &str) -> Option<Counter> {
                Counter::ALL.iter().copied().find(|c| c.name() == name)
            }
        }
    };
}

counters! {
    /// `active_flows`.
    ActiveFlows => "active_flows",
    /// `antic_hits`.
    AnticHits => "antic_hits",
    /// `antic_idle_ms`.
    AnticIdleMs => "antic_idle_ms",
    /// `antic_timeouts`.
    AnticTimeouts => "antic_timeouts",
    /// `anticipations`.
    Anticipations => "anticipations",
    /// `be_outstanding`.
    BeOutstanding => "be_outstanding",
    /// `critical_slots_held`.
    CriticalSlotsHeld => "critical_slots_held",
    /// `depth_adjustments`.
    DepthAdjustments => "depth_adjustments",
    /// `dispatch_high`.
    DispatchHigh => "dispatch_high",
    /// `dispatch_low`.
    DispatchLow => "dispatch_low",
    /// `dispatch_medium`.
    DispatchMedium => "dispatch_medium",
    /// `epochs`.
    Epochs => "epochs",
    /// `expired_budget_exhausted`.
    ExpiredBudgetExhausted => "expired_budget_exhausted",
    /// `expired_budget_timeout`.
    ExpiredBudgetTimeout => "expired_budget_timeout",
    /// `expired_no_more_requests`.
    ExpiredNoMoreRequests => "expired_no_more_requests",
    /// `expired_preempted`.
    ExpiredPreempted => "expired_preempted",
    /// `expired_too_idle`.
    ExpiredTooIdle => "expired_too_idle",
    /// `free_tokens`.
    FreeTokens => "free_tokens",
    /// `gvt`.
    Gvt => "gvt",
    /// `hl_adjustments`.
    HlAdjustments => "hl_adjustments",
    /// `hl_ratio`.
    HlRatio => "hl_ratio",
    /// `idle_outstanding`.
    IdleOutstanding => "idle_outstanding",
    /// `idle_timers`.
    IdleTimers => "idle_timers",
    /// `in_service_flow`.
    InServiceFlow => "in_service_flow",
    /// `inflight`.
    Inflight => "inflight",
    /// `max_budget_sectors`.
    MaxBudgetSectors => "max_budget_sectors",
    /// `noncritical_inflight`.
    NoncriticalInflight => "noncritical_inflight",
    /// `noncritical_slots_held`.
    NoncriticalSlotsHeld => "noncritical_slots_held",
    /// `promotions`.
    Promotions => "promotions",
    /// `quanta`.
    Quanta => "quanta",
    /// `read_depth`.
    ReadDepth => "read_depth",
    /// `read_service_ns`.
    ReadServiceNs => "read_service_ns",
    /// `rt_outstanding`.
    RtOutstanding => "rt_outstanding",
    /// `split_requests`.
    SplitRequests => "split_requests",
    /// `staged`.
    Staged => "staged",
    /// `starvation_dispatches`.
    StarvationDispatches => "starvation_dispatches",
    /// `switches`.
    Switches => "switches",
    /// `throttled_turns`.
    ThrottledTurns => "throttled_turns",
    /// `virtual_time`.
    VirtualTime => "virtual_time",
    /// `virtual_time_sectors`.
    VirtualTimeSectors => "virtual_time_sectors",
    /// `write_depth`.
    WriteDepth => "write_depth",
    /// `write_service_ns`.
    WriteServiceNs => "write_service_ns",
}
