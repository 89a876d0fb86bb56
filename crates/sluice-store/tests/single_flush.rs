//! Single-flush commits (`FEATURE_SINGLE_FLUSH`, `journal::Claims`): a commit's data,
//! journal blocks and commit record go out before one FLUSH; recovery drops a last
//! record the crash cut, and a block such a record vouches for is sealed before it is
//! written again.

use crate::common;

use std::rc::Rc;

use common::{crash_after, recover, IMG};
use sluice_runtime::{set_class, CrashSpec, DiskImage, File, IoClass, Stack};
use sluice_store::{CommitMode, Geometry, Store, StoreStats};

/// Mount `image` and read file `name` whole (`None`: no such file), with the stats.
fn recovered(image: DiskImage, name: &'static str) -> (Option<Vec<u8>>, StoreStats) {
    recover(
        CommitMode::Compound,
        image,
        move |s: Rc<Store>| async move {
            let data = match s.open(name) {
                Ok(h) => {
                    let mut v = vec![0u8; s.stat(h).unwrap().size as usize];
                    s.read(h, 0, &mut v).await.unwrap();
                    Some(v)
                }
                Err(_) => None,
            };
            (data, s.stats())
        },
    )
}

/// A file of `blocks` blocks fsynced, then overwritten and fdatasynced: the first
/// 100 bytes of each block, one write per block (`whole` false), or all of it in one
/// write. The fsync's commit vouched for the blocks' first
/// contents and nothing later claims it durable, so the overwrite must not change them
/// at home before a seal — else, after the crash, the commit would look cut (its data
/// tags no longer match) and be dropped, losing a file whose fsync returned. One or two
/// blocks move to new blocks instead (`redirected`); more are sealed once. Returns the
/// stats before the crash; checks the recovered file for each seed and mode.
fn overwrite_after_fsync(blocks: usize, whole: bool) -> Vec<StoreStats> {
    let mut out = Vec::new();
    for seed in 1..=4 {
        for mode in [CommitMode::Compound, CommitMode::FileLevel] {
            let stats = Rc::new(std::cell::Cell::new(StoreStats::default()));
            let st = stats.clone();
            let image = crash_after(mode, Geometry::new(4096), seed, move |s| async move {
                let h = s.create("f").unwrap();
                // Its name durable (an f-transaction carries the file's inode only).
                s.sync().await.unwrap();
                set_class(IoClass::Critical);
                s.write(h, 0, &vec![1; 4096 * blocks]).await.unwrap();
                s.fsync(h).await.unwrap();
                match whole {
                    true => s.write(h, 0, &vec![2; 4096 * blocks]).await.unwrap(),
                    false => {
                        for k in 0..blocks as u64 {
                            s.write(h, k * 4096, &[2; 100]).await.unwrap();
                        }
                        0
                    }
                };
                s.fdatasync(h).await.unwrap();
                st.set(s.stats());
            });
            out.push(stats.get());
            let (data, _) = recovered(image, "f");
            let data = data.unwrap_or_else(|| panic!("seed {seed}, {mode:?}: fsynced file lost"));
            assert_eq!(data.len(), 4096 * blocks, "seed {seed}, {mode:?}");
            let new = if whole { 4096 } else { 100 };
            for (k, block) in data.chunks(4096).enumerate() {
                assert!(
                    block[..new].iter().all(|&b| b == 2),
                    "seed {seed}, {mode:?}, block {k}: fdatasynced overwrite"
                );
                assert!(
                    block[new..].iter().all(|&b| b == 1),
                    "seed {seed}, {mode:?}"
                );
            }
        }
    }
    out
}

#[test]
fn an_overwrite_of_a_block_a_tentative_commit_vouches_for_is_sealed_first() {
    for st in overwrite_after_fsync(1, false) {
        assert_eq!((st.redirected, st.seals), (0, 1), "{st:?}");
    }
}

/// A log appended in records smaller than a block, fsynced after each, rewrites its
/// last block right after the commit that vouched for it: the block moves to a new
/// one (no seal, one FLUSH per fsync), and the log survives the crash whole.
#[test]
fn small_appends_after_fsyncs_move_their_block_instead_of_sealing() {
    for mode in [CommitMode::Compound, CommitMode::FileLevel] {
        let stats = Rc::new(std::cell::Cell::new(StoreStats::default()));
        let st = stats.clone();
        let image = crash_after(mode, Geometry::new(4096), 1, move |s| async move {
            let h = s.create("log").unwrap();
            s.sync().await.unwrap();
            set_class(IoClass::Critical);
            for i in 0..20u64 {
                s.write_buffered(h, i * 512, &[i as u8 + 1; 512])
                    .await
                    .unwrap();
                s.fsync(h).await.unwrap();
            }
            st.set(s.stats());
            // The cost: the log's three blocks each moved on, away from the one before.
            assert_eq!(s.stat(h).unwrap().extents, 3, "{mode:?}");
        });
        let st = stats.get();
        // Each record after the first of a block rewrites it: 17 of 20.
        assert_eq!((st.redirected, st.seals), (17, 0), "{mode:?}: {st:?}");
        let (data, _) = recovered(image, "log");
        let data = data.expect("the log");
        assert_eq!(data.len(), 20 * 512, "{mode:?}");
        for (i, rec) in data.chunks(512).enumerate() {
            assert!(
                rec.iter().all(|&b| b == i as u8 + 1),
                "{mode:?}: record {i}"
            );
        }
    }
}

#[test]
fn a_larger_overwrite_of_blocks_a_tentative_commit_vouches_for_is_sealed_first() {
    for st in overwrite_after_fsync(3, true) {
        assert_eq!((st.redirected, st.seals), (0, 1), "{st:?}");
    }
}

/// Appends each make a new block: no seal, one FLUSH per commit.
#[test]
fn appends_need_no_seal() {
    crash_after(
        CommitMode::FileLevel,
        Geometry::new(4096),
        1,
        |s| async move {
            set_class(IoClass::Critical);
            let h = s.create("log").unwrap();
            for i in 0..20u64 {
                s.write_buffered(h, i * 4096, &[i as u8; 4096])
                    .await
                    .unwrap();
                s.fsync(h).await.unwrap();
            }
            let st = s.stats();
            assert_eq!((st.seals, st.two_flush, st.ftxns), (0, 0, 20));
        },
    );
}

/// An empty store's image.
fn empty_store() -> DiskImage {
    Stack::builder()
        .device("nand")
        .build()
        .unwrap()
        .run_until_crash(
            u64::MAX,
            CrashSpec {
                seed: 0,
                torn: false,
            },
            || async {
                let f = File::create(IMG).await.unwrap();
                Store::mkfs(&f, Geometry::new(4096)).await.unwrap();
            },
        )
        .unwrap()
        .image
}

/// The crash comes while a commit is going out: of the seeds' crashes, some leave its
/// commit record with data that never landed — recovery drops that commit (counted),
/// and never shows the file with data it was not written.
#[test]
fn a_commit_whose_data_the_crash_lost_is_dropped() {
    let empty = empty_store();
    let mut dropped = 0;
    for seed in 0..60 {
        let out = Stack::builder()
            .device("nand")
            .image(empty.clone())
            .build()
            .unwrap()
            .run_until_crash(
                // Spread over the two commits: the mount ends near 7.4 ms, each
                // commit takes about 0.5 ms on `nand`.
                7_400_000 + seed * 17_000,
                CrashSpec { seed, torn: true },
                || async {
                    let f = File::open(IMG).await.unwrap();
                    let s = Store::mount(&f, CommitMode::Compound).await.unwrap();
                    for name in ["a", "b"] {
                        let h = s.create(name).unwrap();
                        s.write_buffered(h, 0, &[7; 64 << 10]).await.unwrap();
                        s.fsync(h).await.unwrap();
                    }
                },
            )
            .unwrap();
        let (data, stats) = recovered(out.image, "b");
        dropped += stats.discarded;
        if let Some(d) = data {
            assert!(
                d.iter().all(|&b| b == 7),
                "seed {seed}: 'b' shows data never written"
            );
        }
    }
    assert!(
        dropped > 0,
        "no crash cut a commit after its record: move the instants"
    );
}
