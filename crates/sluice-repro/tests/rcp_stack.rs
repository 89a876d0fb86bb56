//! The `rcp` suite (RCP's whole-stack results on the OLTP stand-in): every goal is
//! asserted here. (The finer split of Fig. 10 by kind — locks, conditions, I/O — is
//! reported by `sluice repro rcp`, not a goal: inheritance through I/O alone does not
//! lose throughput on this model; docs/whole-stack.md.)

use sluice_apps::oltp::{OltpConfig, OltpResult, StackSetup};
use sluice_repro::{format_table, suite, Ctx, Goal};
use sluice_store::FsConfig;

fn goals(id: &str) -> Vec<Goal> {
    let s = suite("rcp").expect("registered");
    let e = s
        .experiments
        .iter()
        .find(|e| e.id == id)
        .expect("experiment");
    let ctx = Ctx {
        seed: 1,
        on_run: &|_| {},
        on_note: &|_| {},
        plot_dir: None,
    };
    (e.run)(&ctx).unwrap_or_else(|err| panic!("{id}: {err}"))
}

fn passes(goals: &[Goal], starts: &str) {
    let g = goals
        .iter()
        .find(|g| g.goal.starts_with(starts))
        .unwrap_or_else(|| panic!("no goal '{starts}'"));
    assert!(g.pass, "{}", format_table(goals));
}

#[test]
fn fig4_full_stack_beats_none_and_still_checkpoints() {
    let g = goals("fig4");
    assert_eq!(g.len(), 3, "{}", format_table(&g));
    passes(&g, "rcp throughput >= 1.15 x none's");
    passes(&g, "rcp checkpoints every interval");
    passes(&g, "rcp WAL bounded");
}

#[test]
fn fig6_full_stack_cuts_the_rate_controlled_tail() {
    let g = goals("fig6");
    assert_eq!(g.len(), 1, "{}", format_table(&g));
    passes(&g, "rcp p99 <= 0.1 x none's");
}

#[test]
fn fig10_each_of_the_papers_five_components_matters() {
    let g = goals("fig10");
    assert_eq!(g.len(), 5, "{}", format_table(&g));
    passes(&g, "no cache limits:");
    passes(&g, "no block layer:");
    passes(&g, "no kernel-level:");
    passes(&g, "no user-level:");
    passes(&g, "no transitivity:");
}

/// A short run of the full stack: 4 clients on an 8 MiB database.
fn small() -> OltpConfig {
    OltpConfig {
        clients: 4,
        data_mib: 8,
        run_ms: 200,
        warmup_ms: 50,
        checkpoint_ms: 60,
        ..OltpConfig::default()
    }
}

/// The full stack on `cfg`, run twice: the runs must agree (same seed, same result).
fn replayed(cfg: &OltpConfig) -> OltpResult {
    let a = StackSetup::full().run(cfg, "nand", None).unwrap();
    let b = StackSetup::full().run(cfg, "nand", None).unwrap();
    assert_eq!(a, b, "fs {}: the run replays from its seed", cfg.fs);
    a
}

#[test]
fn the_oltp_stand_in_replays_from_its_seed() {
    let a = replayed(&small());
    assert!(
        a.txns > 100 && a.checkpoints >= 2,
        "{} txns, {} checkpoints",
        a.txns,
        a.checkpoints
    );
    // The runtime's inheritance figures reach the result: clients wait on the
    // checkpointer's buffer locks and the WAL writer's condition.
    assert!(a.boosts > 0, "no task boosted: {}", a.summary());
    let bad = OltpConfig {
        updates: 9,
        ..OltpConfig::default()
    };
    let e = StackSetup::full().run(&bad, "nand", None).unwrap_err();
    assert!(e.contains("updates = 9 > reads = 8"), "{e}");
    // The dirty limits are percentages of the cache, checked before anything runs.
    for (text, key) in [
        ("dirty_normal_percent = 0", "dirty_normal_percent = 0"),
        (
            "dirty_critical_percent = 150",
            "dirty_critical_percent = 150",
        ),
    ] {
        let e = OltpConfig::from_toml(text).unwrap_err();
        assert!(e.contains(key) && e.contains("at most 100"), "{e}");
    }
    let c =
        OltpConfig::from_toml("dirty_normal_percent = 16\ndirty_critical_percent = 100").unwrap();
    assert_eq!(c.dirty_ratios(), (0.16, 1.0));
    assert_eq!(OltpConfig::default().dirty_ratios(), (0.01, 0.20));
    // On the store they are its limits of buffered data, in bytes of the page cache's
    // size (64 MiB × 40 %: 100 % and 16 % of it); given neither, the store keeps its
    // own.
    let on_store = |c: &OltpConfig| {
        let store = OltpConfig {
            fs: "compound".into(),
            ..c.clone()
        };
        match store.fs_config(true).unwrap() {
            FsConfig::Store { buffer_limits, .. } => buffer_limits,
            FsConfig::Host => panic!("a store"),
        }
    };
    let cache = (OltpConfig::default().cache_pages() * 4096) as f64;
    assert_eq!(on_store(&c), Some((cache as u64, (cache * 0.16) as u64)));
    assert_eq!(on_store(&OltpConfig::default()), None);
}

#[test]
fn the_oltp_stand_in_runs_on_the_journaled_store() {
    let cfg = OltpConfig {
        fs: "compound".into(),
        ..small()
    };
    let a = replayed(&cfg);
    assert!(
        a.txns > 50 && a.checkpoints >= 2,
        "{} txns, {} checkpoints",
        a.txns,
        a.checkpoints
    );
    // Every WAL fsync is a compound commit (data, journal blocks, FLUSH, commit
    // record): slower than the runtime's files' one FLUSH.
    let h = StackSetup::full().run(&small(), "nand", None).unwrap();
    assert!(a.txns < h.txns, "store {} vs host {} txns", a.txns, h.txns);
    let bad = OltpConfig {
        fs: "ext4".into(),
        ..cfg
    };
    let e = StackSetup::full().run(&bad, "nand", None).unwrap_err();
    assert!(e.contains("fs = \"ext4\"") && e.contains("compound"), "{e}");
}

#[test]
fn a_rate_controlled_run_serves_its_arrivals_and_counts_queueing() {
    let cfg = OltpConfig {
        rate_tps: 2000,
        ..small()
    };
    let r = StackSetup::full().run(&cfg, "nand", None).unwrap();
    // 2 000 arrivals per second for 200 ms: about 400 transactions, whatever the
    // clients could do at an unlimited rate.
    assert!((380..=420).contains(&r.txns), "{} txns", r.txns);
    // One client given arrivals faster than it can serve them: the backlog's waiting
    // time is in the latencies, far past one transaction's time at an unlimited rate.
    let closed = OltpConfig {
        clients: 1,
        rate_tps: 0,
        ..cfg.clone()
    };
    let swamped = OltpConfig {
        rate_tps: 50_000,
        ..closed.clone()
    };
    let alone = StackSetup::full().run(&closed, "nand", None).unwrap();
    let queued = StackSetup::full().run(&swamped, "nand", None).unwrap();
    assert!(
        queued.percentile(50.0) > 20 * alone.percentile(50.0),
        "p50 {} ns queued vs {} ns alone",
        queued.percentile(50.0),
        alone.percentile(50.0)
    );
    assert!(queued.percentile(99.0) > queued.percentile(1.0));
}
