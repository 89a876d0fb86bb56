//! What the suite tests share: run one experiment of a suite at seed 1.

use sluice_repro::{format_table, suite, Ctx, Goal};

/// Experiment `id` of suite `name`, run at seed 1: its goals and their table (for
/// assertion messages).
pub fn run(name: &str, id: &str) -> (Vec<Goal>, String) {
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
    let goals = (e.run)(&ctx).expect("runs");
    let table = format_table(&goals);
    (goals, table)
}
