//! `sluice repro fios` passes every goal (FIOS, FAST '12, Figs. 5–8 in simulation).

#[test]
fn fios_suite_passes_its_goals() {
    let suite = sluice_repro::suite("fios").expect("the fios suite is registered");
    let ctx = sluice_repro::Ctx {
        seed: 1,
        on_run: &|_| {},
        on_note: &|_| {},
        plot_dir: None,
    };
    let mut goals = Vec::new();
    for e in suite.experiments {
        goals.extend((e.run)(&ctx).unwrap_or_else(|err| panic!("{}: {err}", e.id)));
    }
    let table = sluice_repro::format_table(&goals);
    eprintln!("{table}");
    assert!(!goals.is_empty());
    assert!(goals.iter().all(|g| g.pass), "failed goals:\n{table}");
}
