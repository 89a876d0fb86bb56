//! Experiments run side by side give the goals of a serial run, in the same order, and
//! every simulation of a parallel run is the one a serial run makes.

use std::sync::Mutex;

use sluice_repro::runner::{pick, run, Progress, RunOptions};
use sluice_repro::{format_verdicts, suite};

#[test]
fn parallel_goals_equal_serial_goals_in_order() {
    let suites = [suite("fios").unwrap(), suite("rcp-block").unwrap()];
    // FIOS's five experiments and RCP's admission one (four simulations side by side
    // through `Ctx::sim_each`); RCP's slower fig11 is left to the suite's own test.
    let picked: Vec<_> = pick(&suites, None)
        .into_iter()
        .filter(|p| p.experiment.id != "fig11")
        .collect();
    assert_eq!(picked.len(), 6);
    let go = |jobs: usize| {
        let sims = Mutex::new(Vec::new());
        let record = |p: Progress<'_>| {
            if let Progress::Sim {
                index, seed, label, ..
            } = p
            {
                sims.lock().unwrap().push((index, seed, label.to_string()));
            }
        };
        let opts = RunOptions {
            seeds: vec![3, 4],
            plot_dir: None,
            jobs,
        };
        let goals = run(&picked, &opts, &record).unwrap();
        let mut sims = sims.into_inner().unwrap();
        sims.sort();
        (goals, sims)
    };
    let (serial, serial_sims) = go(1);
    let (parallel, parallel_sims) = go(3);
    assert_eq!(format_verdicts(&serial), format_verdicts(&parallel));
    assert_eq!(serial, parallel);
    assert_eq!(serial_sims, parallel_sims);
    // In list order: FIOS's goals, then RCP's.
    assert!(serial.first().unwrap().experiment.starts_with("r1w1/"));
    assert!(serial.last().unwrap().experiment == "admission");
}
