//! truncate and fdatasync: what they change, what they commit, and what a crash leaves.

use crate::common;

use common::{crash_after, recover, IMG};

use sluice_runtime::{File, Stack};
use sluice_store::{CommitMode, Geometry, Store, StoreError};

const MODES: [CommitMode; 2] = [CommitMode::Compound, CommitMode::FileLevel];

fn pattern(n: usize, salt: u8) -> Vec<u8> {
    (0..n).map(|i| (i * 7 + salt as usize) as u8 | 1).collect()
}

async fn contents(s: &Store, name: &str) -> Vec<u8> {
    let f = s.open(name).unwrap();
    let mut v = vec![0u8; s.len(f).unwrap() as usize];
    s.read(f, 0, &mut v).await.unwrap();
    v
}

#[test]
fn truncate_shrinks_grows_with_zeros_and_survives_a_crash() {
    for mode in MODES {
        for seed in 0..4 {
            let image = crash_after(mode, Geometry::new(4096), seed, |s| async move {
                let f = s.create("a").unwrap();
                // 200 KiB: direct blocks and the indirect block.
                s.write_buffered(f, 0, &pattern(200 << 10, 1))
                    .await
                    .unwrap();
                s.fsync(f).await.unwrap();
                // The name is durable with a normal commit.
                s.sync().await.unwrap();
                assert_eq!(s.stat(f).unwrap().blocks, 51);
                // Allocated in order, the indirect block (taken when the 25th data
                // block was mapped) where a walk of the file meets it: one run.
                assert_eq!(s.stat(f).unwrap().extents, 1);
                s.truncate(f, 10_000).await.unwrap();
                assert_eq!((s.len(f).unwrap(), s.stat(f).unwrap().blocks), (10_000, 3));
                assert_eq!(s.stat(f).unwrap().extents, 1);
                // Growing again shows zeros where the old data was, in the old last
                // block too.
                s.truncate(f, 50_000).await.unwrap();
                let v = contents(&s, "a").await;
                assert_eq!(v[..10_000], pattern(10_000, 1)[..]);
                assert!(v[10_000..].iter().all(|&b| b == 0));
                // A write past the end leaves zeros before it.
                s.truncate(f, 5_000).await.unwrap();
                s.write(f, 9_000, &[9u8; 100]).await.unwrap();
                let v = contents(&s, "a").await;
                assert!(v[5_000..9_000].iter().all(|&b| b == 0));
                assert_eq!(s.check(), Vec::<String>::new());
                s.fsync(f).await.unwrap();
            });
            let v = recover(mode, image, |s| async move { contents(&s, "a").await });
            assert_eq!(v.len(), 9_100, "{mode:?} seed {seed}");
            assert_eq!(v[..5_000], pattern(5_000, 1)[..]);
            assert!(v[5_000..9_000].iter().all(|&b| b == 0));
            assert!(v[9_000..].iter().all(|&b| b == 9));
        }
    }
}

#[test]
fn freed_blocks_wait_for_the_commit_and_indirect_blocks_for_a_checkpoint() {
    // 30 data blocks in all.
    let blocks = Geometry::new(1000).data_start() + 30;
    for mode in MODES {
        Stack::builder()
            .device("ull")
            .build()
            .unwrap()
            .run(move || async move {
                let img = File::create(IMG).await.unwrap();
                Store::mkfs(&img, Geometry::new(blocks)).await.unwrap();
                let s = Store::mount(&img, mode).await.unwrap();
                let (a, b) = (s.create("a").unwrap(), s.create("b").unwrap());
                // 26 data blocks and the indirect block.
                s.write(a, 0, &pattern(26 << 12, 2)).await.unwrap();
                s.sync().await.unwrap();
                s.truncate(a, 0).await.unwrap();
                // Not committed: the blocks still belong to `a` on the device.
                let full = s.write(b, 0, &pattern(5 << 12, 3)).await;
                assert!(matches!(full, Err(StoreError::NoSpace(_))), "{full:?}");
                s.sync().await.unwrap();
                // Committed: the data blocks are free, the indirect block is held
                // until a checkpoint (29 data blocks need an indirect block: 30).
                let held = s.write(b, 0, &pattern(29 << 12, 3)).await;
                assert!(matches!(held, Err(StoreError::NoSpace(_))), "{held:?}");
                let c = s.create("c").unwrap();
                s.truncate(b, 0).await.unwrap();
                while s.stats().checkpoints == 0 {
                    s.write(c, 0, &[1]).await.unwrap();
                    s.sync().await.unwrap();
                }
                s.truncate(c, 0).await.unwrap();
                s.sync().await.unwrap();
                s.write(b, 0, &pattern(29 << 12, 3)).await.unwrap();
                assert_eq!(s.check(), Vec::<String>::new());
            })
            .unwrap();
    }
}

#[test]
fn fdatasync_skips_the_commit_when_only_the_change_counter_moved() {
    for mode in MODES {
        for seed in 0..4 {
            let image = crash_after(mode, Geometry::new(4096), seed, move |s| async move {
                let f = s.create("a").unwrap();
                s.write_buffered(f, 0, &pattern(8192, 4)).await.unwrap();
                s.fsync(f).await.unwrap();
                s.sync().await.unwrap();
                let journal = |s: &Store| s.stats().commits + s.stats().ftxns;
                let before = (journal(&s), s.stats().data_syncs);
                // An overwrite inside the file: data and a FLUSH, no journal write.
                s.write_buffered(f, 100, &[7u8; 3000]).await.unwrap();
                s.fdatasync(f).await.unwrap();
                assert_eq!(
                    (journal(&s), s.stats().data_syncs),
                    (before.0, before.1 + 1)
                );
                // fsync commits the change counter.
                s.fsync(f).await.unwrap();
                assert_eq!(journal(&s), before.0 + 1);
                let change = s.stat(f).unwrap().change;
                // An overwrite and a direct one, fdatasync'd: the data survives, the
                // counter may not.
                s.write_buffered(f, 5000, &[8u8; 100]).await.unwrap();
                s.write(f, 0, &[6u8; 4096]).await.unwrap();
                s.fdatasync(f).await.unwrap();
                assert_eq!(journal(&s), before.0 + 1);
                // Appending changes the size: fdatasync commits.
                s.write_buffered(f, 8192, &[5u8; 10]).await.unwrap();
                s.fdatasync(f).await.unwrap();
                assert_eq!(journal(&s), before.0 + 2);
                assert!(s.stat(f).unwrap().change >= change + 3);
            });
            let (v, change) = recover(mode, image, |s| async move {
                let f = s.open("a").unwrap();
                (contents(&s, "a").await, s.stat(f).unwrap().change)
            });
            let mut want = pattern(8192, 4);
            want[100..3100].fill(7);
            want[5000..5100].fill(8);
            want[..4096].fill(6);
            want.extend_from_slice(&[5u8; 10]);
            assert_eq!(v, want, "{mode:?} seed {seed}");
            // The counter is at least the fsynced one (the append's fdatasync
            // committed the inode with a later one).
            assert!(change >= 3, "{mode:?} seed {seed}: change {change}");
        }
    }
}

/// A task of `class` buffers `mib` MiB in 256 KiB writes (no fsync) while a critical
/// task appends 4 KiB records to a log, class-aware limits on or off; returns the
/// store's counters.
fn buffered_beside_a_log(
    mode: CommitMode,
    limits: bool,
    class: sluice_runtime::IoClass,
    mib: u64,
) -> sluice_store::StoreStats {
    use sluice_runtime::{sleep, spawn, TaskCtx};
    Stack::builder()
        .device("nand")
        .build()
        .unwrap()
        .run(move || async move {
            let f = File::create(IMG).await.unwrap();
            Store::mkfs(&f, Geometry::new(16384)).await.unwrap();
            let s = Store::mount(&f, mode).await.unwrap();
            s.set_class_limits(limits);
            let (s1, s2) = (s.clone(), s.clone());
            let bulk = spawn(TaskCtx::new("bulk").class(class), async move {
                let h = s1.create("bulk").unwrap();
                let chunk = vec![5u8; 256 << 10];
                for k in 0..mib * 4 {
                    s1.write_buffered(h, k * (256 << 10), &chunk).await.unwrap();
                }
            });
            let log = spawn(TaskCtx::new("log").critical(), async move {
                let h = s2.create("log").unwrap();
                for k in 0..50u64 {
                    s2.write_buffered(h, k * 4096, &[7u8; 4096]).await.unwrap();
                    sleep(20_000).await;
                }
            });
            bulk.await;
            log.await;
            s.stats()
        })
        .unwrap()
        .value
}

#[test]
fn a_background_writer_is_held_to_its_class_limit_of_buffered_data() {
    // RCP §4.3 in the store's buffer (`Store::set_class_limits`): a non-critical writer
    // may buffer up to 1.6 MiB (1 % against the 20 % whose role the 32 MiB a critical
    // writer may buffer plays); over it, it pauses (Linux's IO-less throttling) while
    // the store's flusher writes the buffer home; a critical writer of the same 8 MiB
    // is not held.
    use sluice_runtime::IoClass;
    for mode in MODES {
        let bg = buffered_beside_a_log(mode, true, IoClass::Normal, 8);
        assert!(
            bg.throttled > 0 && bg.data_by_flusher > 0,
            "{mode:?}: {bg:?}"
        );
        assert_eq!(
            bg.data_by_limit, 0,
            "{mode:?}: the writer paused, the flusher wrote"
        );
        assert!(
            bg.buffered_peak <= (1600 << 10) + (512 << 10),
            "{mode:?}: {} bytes buffered at the peak",
            bg.buffered_peak
        );
        let fg = buffered_beside_a_log(mode, true, IoClass::Critical, 8);
        assert_eq!((fg.throttled, fg.data_by_limit), (0, 0), "{mode:?}: {fg:?}");
        assert!(fg.buffered_peak >= 8 << 20, "{mode:?}: {fg:?}");
        // Off (the default: one limit, 32 MiB), the background writer is not held.
        let off = buffered_beside_a_log(mode, false, IoClass::Normal, 8);
        assert_eq!(
            (off.throttled, off.data_by_limit),
            (0, 0),
            "{mode:?}: {off:?}"
        );
        assert!(off.buffered_peak >= 8 << 20, "{mode:?}: {off:?}");
    }
}

/// A compound store on `nand`, set up by `configure`, under one writer (normal class)
/// buffering 8 MiB in 256 KiB writes; the store's counters after it.
fn bulk_writer_stats(configure: impl FnOnce(&Store) + 'static) -> sluice_store::StoreStats {
    Stack::builder()
        .device("nand")
        .build()
        .unwrap()
        .run(move || async move {
            let f = File::create(IMG).await.unwrap();
            Store::mkfs(&f, Geometry::new(16384)).await.unwrap();
            let s = Store::mount(&f, CommitMode::Compound).await.unwrap();
            configure(&s);
            let h = s.create("bulk").unwrap();
            for k in 0..32u64 {
                s.write_buffered(h, k << 18, &[5u8; 1 << 18]).await.unwrap();
            }
            s.stats()
        })
        .unwrap()
        .value
}

#[test]
fn the_buffer_limit_is_a_setting() {
    // 8 MiB of buffered writes against a 1 MiB buffer (no class limits): the writer
    // writes the buffer home whenever it passes 1 MiB.
    let stats = bulk_writer_stats(|s| s.set_buffer_limit(1 << 20));
    assert!(stats.data_by_limit > 0, "{stats:?}");
    assert!(stats.buffered_peak <= (1 << 20) + (256 << 10), "{stats:?}");
}

/// The peak of buffered data while a non-critical writer buffers 8 MiB under RCP's
/// class-aware limits, an 8 MiB buffer limit and, if given, its own limit.
fn peak_of_a_bulk_writer(class_limit: Option<u64>) -> u64 {
    bulk_writer_stats(move |s| {
        s.set_class_limits(true);
        s.set_buffer_limit(8 << 20);
        if let Some(b) = class_limit {
            s.set_class_buffer_limit(b);
        }
    })
    .buffered_peak
}

#[test]
fn the_non_critical_limit_is_a_setting() {
    // By default a non-critical writer is held to 1/20 of the buffer limit (410 KiB
    // of 8 MiB); given 2 MiB, it buffers up to that (one 256 KiB write past it).
    let default = peak_of_a_bulk_writer(None);
    assert!(default <= (410 << 10) + (256 << 10), "default: {default} B");
    let set = peak_of_a_bulk_writer(Some(2 << 20));
    assert!(
        set > (1 << 20) && set <= (2 << 20) + (256 << 10),
        "2 MiB set: {set} B"
    );
}

/// RCP §4.4 on the store's buffer: a background writer paused at its limit while it
/// holds a lock a critical task wants is woken and judged by the critical limit when
/// inheritance is on; off, the critical task waits out the pause (at least a jiffy).
/// Returns the critical task's longest wait for the lock, ns.
fn lock_wait_behind_a_paused_writer(inherit: sluice_runtime::Inherit) -> u64 {
    use sluice_runtime::{now, sleep, spawn, Mutex, TaskCtx};
    use std::rc::Rc;
    Stack::builder()
        .device("nand")
        .inherit(inherit)
        .build()
        .unwrap()
        .run(move || async move {
            let f = File::create(IMG).await.unwrap();
            Store::mkfs(&f, Geometry::new(16384)).await.unwrap();
            let s = Store::mount(&f, CommitMode::Compound).await.unwrap();
            s.set_class_limits(true);
            let lock = Rc::new(Mutex::new(()));
            let (s1, l1) = (s.clone(), lock.clone());
            let bulk = spawn(TaskCtx::new("bulk"), async move {
                let h = s1.create("bulk").unwrap();
                let chunk = vec![5u8; 256 << 10];
                for k in 0..32u64 {
                    // Each write under the lock, as PostgreSQL's checkpointer writes a
                    // page holding its buffer lock.
                    let _g = l1.lock().await;
                    s1.write_buffered(h, k * (256 << 10), &chunk).await.unwrap();
                }
            });
            let l2 = lock.clone();
            let fg = spawn(TaskCtx::new("fg").critical(), async move {
                let mut worst = 0;
                for _ in 0..40 {
                    sleep(500_000).await;
                    let t0 = now();
                    drop(l2.lock().await);
                    worst = worst.max(now() - t0);
                }
                worst
            });
            bulk.await;
            fg.await
        })
        .unwrap()
        .value
}

#[test]
fn a_paused_writer_holding_a_lock_a_critical_task_wants_is_woken() {
    let on = lock_wait_behind_a_paused_writer(sluice_runtime::Inherit::ON);
    let off = lock_wait_behind_a_paused_writer(sluice_runtime::Inherit::OFF);
    // Off: the writer sleeps its pause out (a jiffy, 4 ms, at least) holding the lock.
    assert!(off >= 4_000_000, "off: {off} ns");
    // On: the pause ends when the critical task blocks; the writer, critical now, is
    // under its limit, writes and lets go — far below a jiffy.
    assert!(on * 4 < off, "on: {on} ns, off: {off} ns");
}

/// Two files grown side by side, a block at a time each (a log and a table written
/// together), each stay in a few runs of blocks: a file's next block goes after its
/// last one, in a window of its own once it has grown past another file's blocks, as
/// ext4's goal-directed allocation does.
#[test]
fn files_grown_side_by_side_each_stay_in_few_runs() {
    for mode in MODES {
        let image = crash_after(mode, Geometry::new(4096), 1, move |s| async move {
            let (a, b) = (s.create("a").unwrap(), s.create("b").unwrap());
            for i in 0..200u64 {
                s.write_buffered(a, i * 4096, &pattern(4096, 1))
                    .await
                    .unwrap();
                s.write_buffered(b, i * 4096, &pattern(4096, 2))
                    .await
                    .unwrap();
                if i % 10 == 9 {
                    s.fsync(a).await.unwrap();
                    s.fsync(b).await.unwrap();
                }
            }
            let (ea, eb) = (s.stat(a).unwrap().extents, s.stat(b).unwrap().extents);
            // The first blocks packed side by side (a small file's place), then the
            // rest (the indirect block among them) in windows of 32.
            assert_eq!((ea, eb), (8, 8), "{mode:?}: runs of 200 blocks");
        });
        drop(image);
    }
}
