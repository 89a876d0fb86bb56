//! Crash consistency with seeded crashes (the harness is `sluice_store::crashtest`,
//! shared with `sluice crashtest`): tasks create, write, truncate, rename, unlink,
//! fsync, fdatasync and sync; the power goes at a seeded instant; recovery must leave
//! a consistent store that agrees with the model, and a second recovery must change
//! nothing. In one seed of eight a task's main file grows past 4 MiB (a double-indirect
//! block), and task's scratch files removed while open are written and synced on
//! before their close. 250 seeds for each commit mode and fsync path (1 000 in all);
//! `STORE_CRASH_SEED=N cargo test -p sluice-store --test integration crash::` replays seed N in each
//! (`sluice crashtest --seeds 1 --start N --mode M --fsync P` replays one).

use sluice_store::crashtest::{Config, Harness};
use sluice_store::{CommitMode, FsyncPath};

const SEEDS: u64 = 250;

fn run(config: Config) {
    let h = Harness::new(config).unwrap_or_else(|f| panic!("{f}"));
    let only: Option<u64> = std::env::var("STORE_CRASH_SEED")
        .ok()
        .map(|v| v.parse().expect("STORE_CRASH_SEED: give a whole number"));
    let seeds: Vec<u64> = match only {
        Some(s) => vec![s],
        None => (0..SEEDS).collect(),
    };
    let (mut syncs, mut mid_run, mut big, mut orphans) = (0, 0, 0, 0);
    for seed in seeds {
        let out = h.run(seed).unwrap_or_else(|f| panic!("{f}"));
        syncs += out.syncs;
        mid_run += out.mid_run as u64;
        big += out.big_files;
        orphans += out.orphans;
    }
    // The checks had something to check: crashes inside the workload, after syncs,
    // files with a double-indirect block after recovery, and files removed while open
    // that the recovery freed.
    assert!(
        syncs > 0 && (only.is_some() || mid_run > SEEDS / 2 && big >= 10 && orphans >= 10),
        "{syncs} {mid_run} {big} {orphans}"
    );
}

#[test]
fn compound_sync_survives_seeded_crashes() {
    run(Config::new(CommitMode::Compound, FsyncPath::Sync));
}

#[test]
fn compound_async_survives_seeded_crashes() {
    run(Config::new(CommitMode::Compound, FsyncPath::Async));
}

#[test]
fn fjournal_sync_survives_seeded_crashes() {
    run(Config::new(CommitMode::FileLevel, FsyncPath::Sync));
}

#[test]
fn fjournal_async_survives_seeded_crashes() {
    run(Config::new(CommitMode::FileLevel, FsyncPath::Async));
}
