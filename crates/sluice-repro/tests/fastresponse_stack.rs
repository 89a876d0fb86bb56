//! The `fastresponse` suite (fillsync beside Table 1's co-runners on the journaled
//! store): file-level journaling with LD and critical wakeup lowers the mean put
//! latency against vanilla beside every co-runner, by at least 50 % on average (paper:
//! 58 %), and the p99.9 by at least 60 % on average (paper: 74 %) — every goal of
//! Fig. 13 is asserted; see docs/whole-stack.md. Both of Fig. 15(b)'s breakdown goals
//! are asserted: no journal task to wake, and fjournal's data part below half of
//! BS-Opt's (the other files' data, T_D2, gone).

use crate::common;

#[test]
fn fig13_bsj_opt_cuts_the_mean_by_half_and_the_p999_by_60_percent() {
    let (goals, table) = common::judged("fastresponse", &["fig13"]);
    assert_eq!(goals.len(), 7, "{table}");
    assert!(goals.iter().any(|g| g.goal.contains("p99.9 cut")), "{table}");
    common::assert_verdicts(&goals, &table, &[]);
}

/// Fig. 15(b): beside Bayes, fjournal's f-transaction needs no journal task, so its
/// waiting parts vanish, and it writes its own file's data only (T_D2 gone).
#[test]
fn fig15_breakdown_shows_where_fjournal_helps() {
    let (goals, table) = common::judged("fastresponse", &["fig15"]);
    assert_eq!(goals.len(), 2, "{table}");
    common::assert_verdicts(&goals, &table, &[]);
}
