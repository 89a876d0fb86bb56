//! The `d2fq` repro suite: every goal but the known failures passes over seeds 1–5 (the
//! same judgement as `sluice repro d2fq`).

use crate::common;
use sluice_repro::Ctx;

#[test]
fn d2fq_suite_meets_its_goals_over_seeds() {
    let (goals, table) = common::judged("d2fq", &["fig11a", "fig11b", "fig11c", "fig6", "fig15"]);
    // Fig. 6: Eq. 2's first step lands at 18–19, not the paper's 22 (the simulated
    // medium class takes part of the low class's need; docs/policies/d2fq.md).
    // Fig. 15: the dynamic ratio is bimodal over seeds (about one seed in four
    // stays at H/L 10-15 in phase 3 with event/base near 4; docs/policies/d2fq.md);
    // seeds 1-5 draw three such seeds since fio's random map changed the offsets, so
    // two goals fail there. Recorded as failures, the goals unchanged.
    common::assert_verdicts(
        &goals,
        &table,
        &[
            ("fig6", "dynamic H/L's Eq. 2 step"),
            ("fig15", "dynamic: every weight-3 flow within 10 %"),
            ("fig15", "dynamic H/L at the end of phase 3"),
        ],
    );
    // Every figure of the suite is checked.
    for id in ["fig11a", "fig11b", "fig11c", "fig6", "fig15"] {
        assert!(goals.iter().any(|g| g.experiment == id), "no goal for {id}");
    }
}

/// Fig. 5, 7, 8, 13 and 14 over seeds 1–5 (Fig. 8's τl = 1 MB, an edge where the 4 KB
/// flow leaves the high queues or not, passes since fio's random map: 4 seeds of 5).
/// Known failures, each for what the model
/// lacks (docs/policies/d2fq.md, "Fig. 5, 7, 8, 13, 14"): Fig. 5's throttled flow has
/// the same tail at H/L 16 as at 3 (it sits on the medium class, ⌈√16⌉ = 4 of high's
/// 16); Fig. 7's dynamic ratio falls to 3–4 before τl = 1 GB is crossed and rising again
/// needs the gap beyond τw = 2 GB; Fig. 13's means are equal across policies (no
/// scheduling CPU cost in the simulator: a saturated device at fixed depth has the same
/// mean by Little's law); Fig. 14's MQFQ is one exact instance (no slots traded across
/// cores, the cause the paper gives for its fluctuation).
#[test]
fn d2fq_tuning_and_latency_figures_over_seeds() {
    let ids = ["fig5", "fig7", "fig8", "fig13", "fig14"];
    let (goals, table) = common::judged("d2fq", &ids);
    common::assert_verdicts(
        &goals,
        &table,
        &[
            ("fig5", "fb's p99 at H/L 3 / its lowest"),
            ("fig7", "every τl, 1 GB too"),
            ("fig13", "11a: none's mean"),
            ("fig13", "11b: none's mean"),
            ("fig13", "11c: none's mean"),
            ("fig13", "11a: bfq's mean"),
            ("fig13", "11b: bfq's mean"),
            ("fig13", "11c: bfq's mean"),
            ("fig14", "mqfq fluctuates more"),
        ],
    );
    for id in ids {
        assert!(goals.iter().any(|g| g.experiment == id), "no goal for {id}");
    }
    // What passes: Fig. 5's tail grows with the ratio and fb's high-queue use with it;
    // Fig. 7's τl 1 MB is fair from the first bin and 1 GB not before 1 s; Fig. 8's
    // 1 MB tail 3.7 × or more of 100 MB's, 10 MB's near it; Fig. 13's throttled flows slower, d2fq ≈ mqfq;
    // Fig. 14's d2fq even in ≥ 95 % of its 10 ms bins.
    assert_eq!(
        goals.iter().filter(|g| g.pass).count(),
        goals.len() - 9,
        "{table}"
    );
}

/// The H/L ratio D2FQ chooses reaches the simulated device's WRR arbiter
/// (`Policy::wrr_weights` → `NvmeSsd::set_arbitration`), and is harmless on a
/// round-robin device.
#[test]
fn d2fq_programs_the_device_wrr_weights() {
    use sluice_core::policy::d2fq_wrr_weights;
    let ctx = Ctx {
        seed: 1,
        on_run: &|_| {},
        on_note: &|_| {},
        plot_dir: None,
    };
    let text = "[global]\nrw=randread\nsize=1g\niodepth=64\nnumjobs=2\ntime_based\n\
                runtime=50ms\n[a]\nsluice_weight=1\n[b]\nsluice_weight=4\n";
    let jobs = ctx.jobs("inline.fio", text).unwrap();
    let zssd = ctx.device("zssd").unwrap();
    let out = ctx.sim(&jobs, &zssd, "d2fq:mode=static,hl=4").unwrap();
    let applied = out.report.extra.sim.as_ref().unwrap().device_wrr_weights;
    assert_eq!(applied, Some(d2fq_wrr_weights(4)));
    // The low class was used and fetched less often than the high class.
    let f = out.stats.fetched_per_class;
    assert!(f[3] > 0 && f[1] > f[3], "fetched per class {f:?}");
    let ull = ctx.device("ull").unwrap();
    let out = ctx.sim(&jobs, &ull, "d2fq").unwrap();
    assert!(out.report.flows.iter().all(|f| f.ios > 0));
}
