//! `sluice repro fios` over seeds 1–5 (FIOS, FAST '12, Figs. 5–8 in simulation): every
//! goal passes but the efficiency goal on the Vertex, where `none` is fair by the
//! paper's own test (every slowdown ≤ n) and more efficient than fios.

use crate::common;

#[test]
fn fios_suite_meets_its_goals_over_seeds() {
    let (goals, table) = common::judged("fios", &[]);
    eprintln!("{table}");
    common::assert_verdicts(
        &goals,
        &table,
        &[
            ("r1w1/vertex", "fios efficiency / best alternative"),
            ("r4w4-think/vertex", "fios efficiency / best alternative"),
        ],
    );
}
