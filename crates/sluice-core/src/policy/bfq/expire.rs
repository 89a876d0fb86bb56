//! BFQ's idling decisions (`bfq_better_to_idle`, `bfq_asymmetric_scenario`), budget
//! timeouts, expiry (`bfq_bfqq_expire`, with time charging for slow flows) and budget
//! feedback (`__bfq_bfqq_recalc_budget`): the formulas are in the parent module's
//! documentation.

#[allow(unused_imports)]
use super::*;

impl Bfq {
    // ---- idling decisions.

    pub(super) fn busy_flows(&self) -> usize {
        self.flows
            .iter()
            .filter(|q| matches!(q.state, State::Active | State::InService))
            .count()
    }

    /// Weights differ among flows that are busy or have requests in flight
    /// (`bfq_asymmetric_scenario`, the weight-counter tree).
    pub(super) fn asymmetric(&self) -> bool {
        let mut weights = self
            .flows
            .iter()
            .filter(|q| matches!(q.state, State::Active | State::InService) || q.dispatched > 0)
            .map(|q| q.weight);
        match weights.next() {
            None => false,
            Some(w0) => weights.any(|w| w != w0),
        }
    }

    /// `bfq_better_to_idle` for the in-service flow on a non-rotational device with
    /// command queueing: idling never boosts throughput there, so only the service
    /// guarantees count.
    pub(super) fn better_to_idle(&self) -> bool {
        if self.cfg.strict_guarantees {
            return true;
        }
        if self.cfg.slice_idle_ns == 0 {
            return false;
        }
        self.asymmetric() || self.busy_flows() == 1
    }

    pub(super) fn budget_timed_out(&self, now_ns: Nanos) -> bool {
        now_ns >= self.budget_timeout_ns
    }

    /// `bfq_may_expire_for_budg_timeout`.
    pub(super) fn may_expire_for_timeout(&self, now_ns: Nanos, i: usize) -> bool {
        let q = &self.flows[i];
        (!self.wait_request || q.budget - q.service >= q.budget / 3)
            && self.budget_timed_out(now_ns)
    }

    // ---- expiry.

    /// End the in-service flow's turn (`bfq_bfqq_expire`). `compensate`: the idle
    /// timer fired, so the turn is measured up to when idling began.
    pub(super) fn expire(&mut self, now_ns: Nanos, reason: Expiry, compensate: bool) {
        let i = self
            .in_service
            .take()
            .expect("an in-service flow to expire");
        self.wait_request = false;
        self.expiries[Expiry::ALL
            .iter()
            .position(|&r| r == reason)
            .expect("listed")] += 1;
        self.last_expiry = Some((FlowId(i as u32), reason));

        // Slow flows, and timed-out flows with a third of their budget left, are
        // charged for the time they held the device (bfq_bfqq_is_slow/charge_time).
        let end = if compensate {
            self.idling_start_ns
        } else {
            now_ns
        };
        let served_ns = end.saturating_sub(self.budget_start_ns);
        let seeky = self.flows[i].seek_history.count_ones() > SEEKY_HISTORY;
        let (slow, t_ns) = if served_ns < SLOW_SHORT_NS {
            (seeky, MIN_TT_NS)
        } else if served_ns > SLOW_LONG_NS {
            (self.flows[i].service < self.max_budget / 2, served_ns)
        } else {
            (seeky, served_ns)
        };
        let q = &self.flows[i];
        let left = q.budget - q.service;
        if slow || (reason == Expiry::BudgetTimeout && left >= q.budget / 3) {
            let t = t_ns.min(self.cfg.timeout_sync_ns);
            let for_time =
                (self.max_budget as u128 * t as u128 / self.cfg.timeout_sync_ns as u128) as u64;
            let total = for_time.max(q.service);
            let extra = total - q.service;
            if total > q.budget {
                self.flows[i].budget = total;
            }
            if extra > 0 {
                self.served(i, extra);
            }
        }

        self.recalc_budget(i, reason);

        // Requeue or deactivate (__bfq_bfqq_expire → __bfq_requeue_entity or
        // __bfq_deactivate_entity): the turn's tags use the service actually charged.
        let v = self.v;
        let q = &mut self.flows[i];
        let served_finish = q.start + vt_delta(q.service, q.weight);
        debug_assert!(served_finish >= q.start);
        if let Some(head) = q.queue.front() {
            q.budget = q.budget.max(sectors_of(head));
            q.start = served_finish;
            q.finish = q.start + vt_delta(q.budget, q.weight);
            q.state = State::Active;
        } else {
            q.finish = served_finish;
            if q.finish > v {
                q.state = State::Idle;
            } else {
                q.state = State::Forgotten;
                self.wsum -= q.weight;
            }
        }
        self.flows[i].service = 0;
    }

    /// Budget feedback (`__bfq_bfqq_recalc_budget`).
    pub(super) fn recalc_budget(&mut self, i: usize, reason: Expiry) {
        let (max_b, min_b) = (self.max_budget, self.min_budget());
        let q = &mut self.flows[i];
        let b = q.max_budget;
        let nb = match reason {
            Expiry::TooIdle if q.dispatched > 0 => (b * 2).min(max_b),
            Expiry::TooIdle if b > 5 * min_b => b - 4 * min_b,
            Expiry::TooIdle => min_b,
            Expiry::BudgetTimeout => (b * 2).min(max_b),
            Expiry::BudgetExhausted => (b * 4).min(max_b),
            Expiry::NoMoreRequests => q.service.max(min_b),
            Expiry::Preempted => return,
        };
        q.max_budget = nb.min(max_b).max(1);
        if let Some(head) = q.queue.front() {
            q.budget = q.max_budget.max(sectors_of(head));
        }
    }
}
