//! What the suite tests share: run experiments of a suite over the seeds `sluice repro`
//! uses by default and judge their goals as it does (median over the seeds, at most
//! one seed in five missing).

use sluice_repro::runner::{default_jobs, pick, run, RunOptions};
use sluice_repro::{format_verdicts, suite, Ctx, Goal, Verdict};

/// The seeds the tests judge over: `sluice repro`'s default, 1–5.
pub const SEEDS: [u64; 5] = [1, 2, 3, 4, 5];

/// The experiments of suite `name` whose id is one of `ids` (all when empty), run at
/// [`SEEDS`] side by side: their verdicts and table (for assertion messages).
pub fn judged(name: &str, ids: &[&str]) -> (Vec<Verdict>, String) {
    let s = suite(name).expect("registered");
    let picked: Vec<_> = pick(&[s], None)
        .into_iter()
        .filter(|p| ids.is_empty() || ids.contains(&p.experiment.id))
        .collect();
    assert!(
        ids.is_empty() || picked.len() == ids.len(),
        "{name} lacks one of {ids:?}"
    );
    let opts = RunOptions {
        seeds: SEEDS.to_vec(),
        plot_dir: None,
        jobs: default_jobs(),
    };
    let verdicts = run(&picked, &opts, &|_| {}).unwrap_or_else(|e| panic!("{name}: {e}"));
    let table = format_verdicts(&verdicts);
    (verdicts, table)
}

/// Every verdict passes, except those whose goal starts with one of `known_failures`,
/// which must fail (what the model lacks for them is in docs/whole-stack.md and the
/// experiments' notes; when a model change makes one pass, this says so).
pub fn assert_verdicts(verdicts: &[Verdict], table: &str, known_failures: &[(&str, &str)]) {
    assert!(!verdicts.is_empty(), "no goal judged");
    for v in verdicts {
        let known = known_failures
            .iter()
            .any(|(e, g)| v.experiment == *e && v.goal.starts_with(g));
        if known {
            assert!(
                !v.pass,
                "{} — '{}' passes now: take it off the known failures\n{table}",
                v.experiment, v.goal
            );
        } else {
            assert!(v.pass, "{} — '{}' fails\n{table}", v.experiment, v.goal);
        }
    }
}

/// Experiment `id` of suite `name`, run at seed 1 only (for tests of an experiment's
/// shape, not of its goals).
#[allow(dead_code)]
pub fn run_once(name: &str, id: &str) -> Vec<Goal> {
    let s = suite(name).expect("registered");
    let ctx = Ctx {
        seed: 1,
        on_run: &|_| {},
        on_note: &|_| {},
        plot_dir: None,
    };
    let e = s
        .experiments
        .iter()
        .find(|e| e.id == id)
        .unwrap_or_else(|| panic!("{name} has no experiment {id}"));
    (e.run)(&ctx).expect("runs")
}
