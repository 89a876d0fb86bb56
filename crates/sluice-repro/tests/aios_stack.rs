//! The `aios` suite (4 KiB random write + fsync at 1–8 threads on the journaled store,
//! synchronous vs asynchronous fsync path, with the journal's preparation CPU charged
//! to the simulated host): the one-thread cut reaches the goal of 20 % and the gain
//! shrinks as threads grow (both asserted) — see docs/whole-stack.md.

use sluice_repro::{format_table, suite, Ctx};

#[test]
fn fig11_async_fsync_gains_most_with_one_thread() {
    let s = suite("aios").expect("registered");
    let ctx = Ctx {
        seed: 1,
        on_run: &|_| {},
        plot_dir: None,
    };
    let goals = (s.experiments[0].run)(&ctx).expect("runs");
    let table = format_table(&goals);
    assert_eq!(goals.len(), 2, "{table}");
    assert!(goals.iter().all(|g| g.pass), "{table}");
    // "1 threads: A → B µs (-G %)": the one-thread cut, as the goal reads it.
    let m = &goals[0].measured;
    let cut: f64 = m
        .split("(-")
        .nth(1)
        .and_then(|r| r.split(" %").next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no one-thread figure in: {m}"));
    assert!(cut >= 20.0, "{table}");
}
