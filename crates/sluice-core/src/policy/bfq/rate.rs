//! BFQ's peak-rate estimation (`bfq_update_peak_rate`, `bfq_update_rate_reset`) and
//! the automatic `B_max` it gives (`bfq_calc_max_budget`).

#[allow(unused_imports)]
use super::*;

/// Peak-rate estimation: fixed point `BFQ_RATE_SHIFT` of sectors/µs, the initial rate
/// (2/3 of the non-rotational reference 33000), sample and interval bounds.
pub(super) const RATE_SHIFT: u32 = 16;
pub(super) const REF_RATE_NONROT: u64 = 33_000;
pub(super) const RATE_MIN_SAMPLES: u64 = 32;
pub(super) const RATE_MIN_INTERVAL_NS: u64 = 300_000_000;
pub(super) const RATE_REF_INTERVAL_NS: u64 = 1_000_000_000;
pub(super) const RATE_IDLE_RESET_NS: u64 = 100_000_000;
pub(super) const RATE_MAX: u64 = 20 << RATE_SHIFT;

/// Peak-rate estimation state (`bfq_update_peak_rate`).
#[derive(Debug, Default)]
pub(super) struct RateEstimator {
    /// Sectors/µs << RATE_SHIFT.
    pub(super) peak_rate: u64,
    pub(super) samples: u64,
    pub(super) sequential: u64,
    pub(super) sectors: u64,
    pub(super) first_dispatch_ns: Nanos,
    pub(super) last_dispatch_ns: Nanos,
    pub(super) last_completion_ns: Nanos,
    pub(super) delta_ns: u64,
    pub(super) last_pos: Option<u64>,
    pub(super) updates: u64,
}

impl Bfq {
    /// `bfq_update_peak_rate`, at each dispatch of `sectors` starting at `pos`.
    pub(super) fn update_peak_rate(&mut self, now_ns: Nanos, pos: u64, sectors: u64) {
        let r = &mut self.rate;
        let seeky = r
            .last_pos
            .is_none_or(|last| pos.abs_diff(last) > SEEK_THR && sectors < SECT_THR_NONROT);
        r.last_pos = Some(pos + sectors);
        if r.samples == 0 {
            self.reset_rate(now_ns, sectors);
            return;
        }
        if now_ns - r.last_dispatch_ns > RATE_IDLE_RESET_NS && self.inflight == 0 {
            self.update_rate_and_reset(now_ns, sectors);
            return;
        }
        r.samples += 1;
        if self.inflight > 0 && !seeky {
            r.sequential += 1;
        }
        r.sectors += sectors;
        r.delta_ns = now_ns - r.first_dispatch_ns;
        r.last_dispatch_ns = now_ns;
        if r.delta_ns >= RATE_REF_INTERVAL_NS {
            self.update_rate_and_reset(now_ns, sectors);
        }
    }

    pub(super) fn reset_rate(&mut self, now_ns: Nanos, sectors: u64) {
        let r = &mut self.rate;
        r.samples = 1;
        r.sequential = 0;
        r.sectors = sectors;
        r.first_dispatch_ns = now_ns;
        r.last_dispatch_ns = now_ns;
        r.delta_ns = 0;
    }

    /// `bfq_update_rate_reset`: fold the window's rate into the peak rate, then start a
    /// new window with this dispatch.
    pub(super) fn update_rate_and_reset(&mut self, now_ns: Nanos, sectors: u64) {
        let r = &mut self.rate;
        if r.samples >= RATE_MIN_SAMPLES && r.delta_ns >= RATE_MIN_INTERVAL_NS {
            let delta = r
                .delta_ns
                .max(r.last_completion_ns.saturating_sub(r.first_dispatch_ns));
            let delta_us = (delta / 1000).max(1);
            let rate = (r.sectors << RATE_SHIFT) / delta_us;
            let random = r.sequential < 3 * r.samples / 4;
            if !((random && rate <= r.peak_rate) || rate > RATE_MAX) {
                let weight = 9 * r.sequential / r.samples;
                let weight = (weight * delta / RATE_REF_INTERVAL_NS).min(8);
                let divisor = 10 - weight;
                r.peak_rate = (r.peak_rate * (divisor - 1) / divisor + rate / divisor).max(1);
                r.updates += 1;
                if self.cfg.max_budget == MaxBudget::Auto {
                    // bfq_calc_max_budget: sectors in one timeout at the peak rate.
                    let timeout_us = self.cfg.timeout_sync_ns / 1000;
                    self.max_budget = ((r.peak_rate * timeout_us) >> RATE_SHIFT).max(32);
                }
            }
        }
        self.reset_rate(now_ns, sectors);
    }
}
