//! fio's token-based flow control (`flow`, `flow_id`, `flow_sleep`): the threads of
//! the jobs with the same `flow_id` keep their I/O counts in the ratio of their `flow`
//! weights. As fio's `flow_threshold_exceeded`: before each I/O a thread compares its
//! share of the flow's I/Os (its count / the flow's count) with its share of the
//! weight (its `flow` / the flow's total weight, every thread of every job of that
//! `flow_id` counted); above it, the thread issues nothing — with `flow_sleep` it waits
//! for its I/Os in flight to complete and sleeps that long, without it it tries again
//! when another thread of the flow has issued. Otherwise both counts go up by one.

use sluice_workload::JobSpec;

/// The token flows of a run: one per distinct `flow_id` among jobs with `flow` > 0,
/// with fio's two numbers each: the count of I/Os (starting at 1, as fio's) and the
/// total weight of the threads running (a thread adds its `flow` when it starts and
/// takes it and its count away when it is done, fio's `flow_init_job`/`flow_put`).
#[derive(Debug, Clone, Default)]
pub struct TokenFlows {
    /// Each flow's `flow_id`, in ascending order.
    ids: Vec<u32>,
    /// `(count, total weight)` per flow.
    state: Vec<(u64, u64)>,
}

impl TokenFlows {
    /// The token flows of `specs`.
    pub fn new(specs: &[JobSpec]) -> TokenFlows {
        let mut ids: Vec<u32> = specs
            .iter()
            .filter(|s| s.token_flow > 0)
            .map(|s| s.token_flow_id)
            .collect();
        ids.sort_unstable();
        ids.dedup();
        let state = vec![(1, 0); ids.len()];
        TokenFlows { ids, state }
    }

    /// How many flows there are (the engine shares one state per flow).
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The flow of a job, if it takes part.
    pub fn of(&self, spec: &JobSpec) -> Option<usize> {
        (spec.token_flow > 0)
            .then(|| self.ids.binary_search(&spec.token_flow_id).ok())
            .flatten()
    }

    /// Add `d_count` I/Os and `d_weight` weight to flow `f`; its `(count, total)` after.
    pub fn apply(&mut self, f: usize, d_count: i64, d_weight: i64) -> (u64, u64) {
        let s = &mut self.state[f];
        s.0 = s.0.saturating_add_signed(d_count);
        s.1 = s.1.saturating_add_signed(d_weight);
        *s
    }

    /// fio's check: a thread of weight `weight` that issued `mine` I/Os is over its
    /// share of a flow at `(count, total)`: mine / count > weight / total.
    pub fn exceeded(weight: u32, mine: u64, (count, total): (u64, u64)) -> bool {
        count > 0 && (mine as u128) * (total as u128) > (weight as u128) * (count as u128)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_follow_the_weights() {
        let a = JobSpec {
            token_flow: 3,
            ..JobSpec::default()
        };
        let b = JobSpec {
            token_flow: 1,
            numjobs: 2,
            ..JobSpec::default()
        };
        let mut flows = TokenFlows::new(&[a.clone(), b.clone(), JobSpec::default()]);
        assert_eq!(flows.len(), 1);
        assert_eq!(flows.of(&a), Some(0));
        assert_eq!(flows.of(&JobSpec::default()), None);
        flows.apply(0, 0, 3);
        flows.apply(0, 0, 1);
        let st = flows.apply(0, 4, 1);
        assert_eq!(st, (5, 5), "the count starts at 1");
        // Total 3 + 2 × 1 = 5: a may have 3/5 of the I/Os.
        assert!(!TokenFlows::exceeded(3, 3, st));
        assert!(TokenFlows::exceeded(3, 4, st));
        assert!(TokenFlows::exceeded(1, 2, st));
        // b's thread done with its 2 I/Os: the others' shares grow.
        assert_eq!(flows.apply(0, -2, -1), (3, 4));
    }
}
