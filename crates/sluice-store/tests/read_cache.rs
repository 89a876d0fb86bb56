//! The store's read cache (`Store::set_read_cache`): clean copies of file blocks, so a
//! block read again, or written back, is served from memory; a change of the block at
//! home or of its mapping (direct write, truncation, unlink) never lets an old copy
//! show, even with reads in flight across it.

use crate::common;

use std::cell::RefCell;
use std::rc::Rc;

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use sluice_runtime::{spawn, CacheStats, DmaBuffer, File, Mutex, Stack, TaskCtx};
use sluice_store::{CommitMode, Geometry, Store, StoreFile};

const B: usize = 4096;

/// Run `work` on a fresh store on `ull` with a read cache of `cache` blocks; returns
/// its value and the device reads of flow "reader".
fn on_store<F, Fut, T>(cache: usize, work: F) -> (T, u64)
where
    F: FnOnce(Rc<Store>) -> Fut + 'static,
    Fut: std::future::Future<Output = T> + 'static,
    T: 'static,
{
    let out = Stack::builder()
        .device("ull")
        .build()
        .unwrap()
        .run(move || async move {
            let img = File::create("store.img").await.unwrap();
            Store::mkfs(&img, Geometry::new(8192)).await.unwrap();
            let s = Store::mount(&img, CommitMode::Compound).await.unwrap();
            s.set_read_cache(cache).unwrap();
            work(s).await
        })
        .unwrap();
    let reads = common::reads_of(&out.report, "reader");
    (out.value, reads)
}

/// Read `len` bytes of `f` at `off` from a task of flow "reader".
async fn read(s: &Rc<Store>, f: StoreFile, off: u64, len: usize) -> Vec<u8> {
    let s = s.clone();
    spawn(TaskCtx::new("reader").flow("reader"), async move {
        let mut out = vec![0u8; len];
        let n = s.read(f, off, &mut out).await.unwrap();
        out.truncate(n);
        out
    })
    .await
}

fn pattern(tag: u8, len: usize) -> Vec<u8> {
    (0..len).map(|i| tag ^ (i / B) as u8).collect()
}

#[test]
fn written_back_blocks_are_read_from_memory_and_a_direct_write_replaces_its_block() {
    let (ok, reads) = on_store(64, |s| async move {
        let f = s.create("a").unwrap();
        s.write_buffered(f, 0, &pattern(1, 16 * B)).await.unwrap();
        s.fsync(f).await.unwrap();
        // The fsync's writeback left the 16 blocks clean in the cache: no device read.
        assert_eq!(read(&s, f, 0, 16 * B).await, pattern(1, 16 * B));
        let hits = s.read_cache_stats().unwrap().hits;
        assert_eq!(hits, 16);
        // A direct write of block 3 goes around the cache: its old copy is dropped and
        // the next read fetches the block (one request), the others still hit.
        s.write(f, 3 * B as u64, &[0xAB; B]).await.unwrap();
        let mut want = pattern(1, 16 * B);
        want[3 * B..4 * B].fill(0xAB);
        assert_eq!(read(&s, f, 0, 16 * B).await, want);
        assert_eq!(s.read_cache_stats().unwrap().hits, hits + 15);
        // Read again: all 16 from memory now.
        assert_eq!(read(&s, f, 0, 16 * B).await, want);
        s.read_cache_stats().unwrap().hits == hits + 31
    });
    assert!(ok);
    assert_eq!(reads, 1, "only block 3, once, after its direct write");
}

#[test]
fn a_direct_read_goes_around_the_cache() {
    let (stats, reads) = on_store(64, |s| async move {
        let f = s.create("a").unwrap();
        s.write_buffered(f, 0, &pattern(1, 16 * B)).await.unwrap();
        s.fsync(f).await.unwrap();
        // The 16 blocks are cached, yet O_DIRECT-like reads go to the device each time
        // and leave the cache as it was.
        for _ in 0..2 {
            let s2 = s.clone();
            let got = spawn(TaskCtx::new("reader").flow("reader"), async move {
                let mut out = vec![0u8; 16 * B];
                s2.read_direct(f, 0, &mut out).await.unwrap();
                out
            })
            .await;
            assert_eq!(got, pattern(1, 16 * B));
        }
        s.read_cache_stats()
    });
    assert_eq!(reads, 2);
    let stats = stats.expect("a cache");
    assert_eq!((stats.hits, stats.misses), (0, 0));
}

#[test]
fn resizing_the_cache_with_reads_in_flight_is_safe() {
    let (got, _) = on_store(64, |s| async move {
        let f = s.create("a").unwrap();
        s.write(f, 0, &pattern(3, 8 * B)).await.unwrap();
        let r = {
            let s = s.clone();
            spawn(TaskCtx::new("reader").flow("reader"), async move {
                let mut out = vec![0u8; 8 * B];
                s.read(f, 0, &mut out).await.unwrap();
                out
            })
        };
        // 3 µs on: the read is at the device (a 32 KiB read on `ull` takes ~15 µs),
        // admitted by the cache now replaced.
        sluice_runtime::sleep(3_000).await;
        assert_eq!(s.read_cache_stats().unwrap().misses, 1, "the read began");
        s.set_read_cache(32).unwrap();
        let first = r.await;
        assert_eq!(s.read_cache_stats().unwrap().hits, 0, "a new, empty cache");
        assert_eq!(read(&s, f, 0, 8 * B).await, first);
        first
    });
    assert_eq!(got, pattern(3, 8 * B));
}

#[test]
fn without_a_cache_every_read_goes_to_the_device() {
    let (stats, reads) = on_store(0, |s| async move {
        let f = s.create("a").unwrap();
        s.write_buffered(f, 0, &pattern(1, 16 * B)).await.unwrap();
        s.fsync(f).await.unwrap();
        for _ in 0..3 {
            assert_eq!(read(&s, f, 0, 16 * B).await, pattern(1, 16 * B));
        }
        s.read_cache_stats()
    });
    assert_eq!(reads, 3, "one request per whole-file read");
    assert_eq!(stats, None, "no cache, no counters");
}

#[test]
fn truncation_and_a_reused_inode_never_show_old_cached_blocks() {
    let ((), _) = on_store(64, |s| async move {
        let f = s.create("a").unwrap();
        s.write(f, 0, &pattern(7, 8 * B)).await.unwrap();
        assert_eq!(read(&s, f, 0, 8 * B).await, pattern(7, 8 * B));
        // Shrink and grow again: the cut blocks read as zeros, not their cached copies.
        s.truncate(f, 2 * B as u64 + 100).await.unwrap();
        s.truncate(f, 8 * B as u64).await.unwrap();
        let got = read(&s, f, 0, 8 * B).await;
        assert_eq!(&got[..2 * B + 100], &pattern(7, 8 * B)[..2 * B + 100]);
        assert!(got[2 * B + 100..].iter().all(|&x| x == 0));
        // The file goes; a new one takes its inode: it must not see the old blocks.
        s.close(f).unwrap();
        s.unlink("a").unwrap();
        s.sync().await.unwrap();
        let g = s.create("b").unwrap();
        s.truncate(g, 8 * B as u64).await.unwrap();
        assert!(read(&s, g, 0, 8 * B).await.iter().all(|&x| x == 0));
    });
}

/// What [`race_behind_rcp`] saw: the cache's counters when the write returned, the
/// first byte the racing read got, the four blocks read again after both, and the
/// counters at the end.
type Race = (CacheStats, u8, Vec<u8>, CacheStats);

/// A reader and a direct writer of the same four blocks (holding 1s; the write puts
/// 2s) race while a bulk writer's request holds RCP's one non-critical slot, so the
/// one of the two that is critical goes first and the other waits in the block layer.
fn race_behind_rcp(critical_reader: bool) -> Race {
    let out = Stack::builder()
        .device("ull")
        .policy("rcp")
        .build()
        .unwrap()
        .run(move || async move {
            let img = File::create("store.img").await.unwrap();
            Store::mkfs(&img, Geometry::new(8192)).await.unwrap();
            let s = Store::mount(&img, CommitMode::Compound).await.unwrap();
            s.set_read_cache(64).unwrap();
            let f = s.create("a").unwrap();
            s.write(f, 0, &[1u8; 4 * B]).await.unwrap();
            let bulk = File::create("bulk").await.unwrap();
            let hog = spawn(TaskCtx::new("bulk"), async move {
                let (r, _) = bulk.write_at(DmaBuffer::new(8 << 20), 0).await;
                r.unwrap();
            });
            sluice_runtime::yield_now().await;
            let critical = |name: &str, yes: bool| match yes {
                true => TaskCtx::new(name).critical(),
                false => TaskCtx::new(name),
            };
            let r = {
                let s = s.clone();
                spawn(critical("reader", critical_reader), async move {
                    let mut out = vec![0u8; 4 * B];
                    s.read(f, 0, &mut out).await.unwrap();
                    out[0]
                })
            };
            let w = {
                let s = s.clone();
                spawn(critical("writer", !critical_reader), async move {
                    s.write(f, 0, &[2u8; 4 * B]).await.unwrap();
                })
            };
            w.await;
            let at_write = s.read_cache_stats().unwrap();
            let first = r.await;
            hog.await;
            let mut again = vec![0u8; 4 * B];
            s.read(f, 0, &mut again).await.unwrap();
            (at_write, first, again, s.read_cache_stats().unwrap())
        })
        .unwrap();
    out.value
}

#[test]
fn a_read_in_flight_across_a_direct_write_does_not_cache_its_older_data() {
    // The critical reader's read goes ahead of the (normal) writer's direct write and
    // completes first, with the old data, which it caches; the write, home after it,
    // must drop that copy. (Before 2026-11-26 the store forgot the blocks only when
    // the write was issued, and this order, which the store's flusher task made the
    // scheduler produce, left the old data cached.)
    let (_, first, again, _) = race_behind_rcp(true);
    assert_eq!(
        first, 1,
        "the read completed before the write (the case under test)"
    );
    assert!(
        again.iter().all(|&x| x == 2),
        "the direct write's data, not a stale copy"
    );
}

#[test]
fn a_read_still_in_flight_when_a_direct_write_lands_is_not_cached() {
    // The other order: the critical writer's direct write goes ahead and lands while
    // the (normal) reader's read waits. The read, still in flight then, is made stale:
    // on a real device it may carry the old data, so its completion must not cache it.
    // (The simulator hands a read the data as it completes — new here —, so the stale
    // count is what shows the rule.)
    let (at_write, first, again, end) = race_behind_rcp(false);
    assert_eq!(
        at_write.stale_reads, 0,
        "the read was still in flight: {at_write:?}"
    );
    assert_eq!(first, 2, "the read completed after the write landed");
    assert_eq!(
        end.stale_reads, 4,
        "its four blocks were made stale: {end:?}"
    );
    assert!(again.iter().all(|&x| x == 2));
}

/// Several tasks read, write (buffered and direct), truncate and fsync two files at
/// once, for a few seeds, with a cache smaller than the files (evictions); at the end
/// every file reads back as the model of the writes says, cache or not — a read that
/// was in flight across a change must not have left its older data in the cache.
#[test]
fn concurrent_reads_and_changes_agree_with_a_model() {
    for seed in 1..=4u64 {
        let result = |cache: usize| {
            on_store(cache, move |s| async move {
                let files: Vec<StoreFile> =
                    ["x", "y"].iter().map(|n| s.create(n).unwrap()).collect();
                let model = Rc::new(RefCell::new(vec![Vec::<u8>::new(); 2]));
                // Changes of a file take its lock, so they reach the store in the
                // model's order; reads do not, so they are in flight across changes.
                let locks = Rc::new([Mutex::new(()), Mutex::new(())]);
                let tasks: Vec<_> = (0..4u64)
                    .map(|t| {
                        let (s, files, model) = (s.clone(), files.clone(), model.clone());
                        let locks = locks.clone();
                        spawn(TaskCtx::new(format!("t{t}")).flow("reader"), async move {
                            let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed * 16 + t);
                            for _ in 0..60 {
                                let k = rng.random_range(0..2usize);
                                let f = files[k];
                                let off = rng.random_range(0..40 * B as u64);
                                let len = rng.random_range(1..3 * B);
                                let tag: u8 = rng.random();
                                let op = rng.random_range(0..10);
                                if op <= 3 {
                                    let mut out = vec![0u8; len];
                                    s.read(f, off, &mut out).await.unwrap();
                                    continue;
                                }
                                let _g = locks[k].lock().await;
                                match op {
                                    4..=5 => {
                                        let d = vec![tag; len];
                                        apply(&mut model.borrow_mut()[k], off, &d);
                                        s.write_buffered(f, off, &d).await.unwrap();
                                    }
                                    6..=7 => {
                                        let d = vec![tag; len];
                                        apply(&mut model.borrow_mut()[k], off, &d);
                                        s.write(f, off, &d).await.unwrap();
                                    }
                                    8 => {
                                        model.borrow_mut()[k].resize(off as usize, 0);
                                        s.truncate(f, off).await.unwrap();
                                    }
                                    _ => s.fsync(f).await.unwrap(),
                                }
                            }
                        })
                    })
                    .collect();
                for t in tasks {
                    t.await;
                }
                for (k, &f) in files.iter().enumerate() {
                    let len = model.borrow()[k].len();
                    let got = read(&s, f, 0, len + B).await;
                    assert_eq!(got.len(), len, "seed {seed}: file {k}'s size");
                    let bad = got.iter().zip(&model.borrow()[k]).position(|(a, b)| a != b);
                    assert_eq!(bad, None, "seed {seed}: file {k}'s first wrong byte");
                }
                s.read_cache_stats()
            })
            .0
        };
        // Each run checks its files against its own model (a cache changes the timing,
        // so the interleaving and the final data differ between the two).
        let stats = result(16).expect("a cache");
        assert!(
            stats.hits > 0 && stats.evictions > 0,
            "seed {seed}: {stats:?}"
        );
        assert_eq!(result(0), None);
    }
}

/// The model's file after writing `d` at `off` (a write past the end fills with zeros).
fn apply(file: &mut Vec<u8>, off: u64, d: &[u8]) {
    let end = off as usize + d.len();
    if file.len() < end {
        file.resize(end, 0);
    }
    file[off as usize..end].copy_from_slice(d);
}
