//! Inline data (`Store::set_inline`): an f-transaction logs a small fsync's buffered
//! blocks in its record (one write, then the FLUSH) and they go home later. A log
//! appended in small fsynced records keeps its blocks in place; a later write home of a
//! logged block is tagged, so recovery does not write the stale logged copy over it.

use crate::common;

use std::rc::Rc;

use common::{crash_after, recover};
use sluice_runtime::{set_class, DiskImage, IoClass};
use sluice_store::{CommitMode, Geometry, Store, StoreStats, INLINE_BLOCKS};

/// `work` on a fresh fjournal store with inline data on, cut off when it ends
/// (`common::crash_after`); the image, and the store's counters when `work` ended.
fn crash_inline<F, Fut>(seed: u64, work: F) -> (DiskImage, StoreStats)
where
    F: FnOnce(Rc<Store>) -> Fut + 'static,
    Fut: std::future::Future<Output = ()> + 'static,
{
    let stats = Rc::new(std::cell::Cell::new(StoreStats::default()));
    let st = stats.clone();
    let image = crash_after(
        CommitMode::FileLevel,
        Geometry::new(4096),
        seed,
        move |s| async move {
            s.set_inline(INLINE_BLOCKS);
            work(s.clone()).await;
            st.set(s.stats());
        },
    );
    (image, stats.get())
}

/// Mount `image` (fjournal) and read file `name` whole.
fn recovered(image: DiskImage, name: &'static str) -> Vec<u8> {
    recover(
        CommitMode::FileLevel,
        image,
        move |s: Rc<Store>| async move {
            let h = s.open(name).expect("the fsynced file");
            let mut v = vec![0u8; s.stat(h).unwrap().size as usize];
            s.read(h, 0, &mut v).await.unwrap();
            v
        },
    )
}

/// 20 records of 512 bytes, each fsynced by a critical task: with inline data no block
/// moves (three blocks, one extent) and the log survives the crash whole, each record
/// in place — against 17 redirects and three extents without it
/// (`single_flush.rs`).
#[test]
fn small_fsynced_appends_stay_in_place_and_survive() {
    for seed in 1..=4 {
        let (image, st) = crash_inline(seed, move |s| async move {
            let h = s.create("log").unwrap();
            s.sync().await.unwrap();
            set_class(IoClass::Critical);
            for i in 0..20u64 {
                s.write_buffered(h, i * 512, &[i as u8 + 1; 512])
                    .await
                    .unwrap();
                s.fsync(h).await.unwrap();
            }
            assert_eq!(s.stat(h).unwrap().extents, 1, "seed {seed}");
        });
        assert_eq!((st.redirected, st.seals), (0, 0), "seed {seed}: {st:?}");
        assert!(st.inline_blocks >= 20, "seed {seed}: {st:?}");
        let data = recovered(image, "log");
        assert_eq!(data.len(), 20 * 512, "seed {seed}");
        for (i, rec) in data.chunks(512).enumerate() {
            assert!(
                rec.iter().all(|&b| b == i as u8 + 1),
                "seed {seed}: record {i}"
            );
        }
    }
}

/// A block logged inline, then rewritten as part of a write too large to log inline:
/// that fsync writes it home with a data tag, and recovery — redoing both records —
/// keeps the newer data at home rather than the first record's logged copy.
#[test]
fn a_later_write_home_of_a_logged_block_wins_over_the_logged_copy() {
    for seed in 1..=4 {
        let (image, st) = crash_inline(seed, move |s| async move {
            let h = s.create("f").unwrap();
            s.sync().await.unwrap();
            set_class(IoClass::Critical);
            s.write_buffered(h, 0, &[1; 4096]).await.unwrap();
            s.fsync(h).await.unwrap();
            let logged = s.stats().inline_blocks;
            // More blocks than an f-transaction logs inline.
            let n = INLINE_BLOCKS + 4;
            s.write_buffered(h, 0, &vec![2; 4096 * n]).await.unwrap();
            s.fsync(h).await.unwrap();
            assert_eq!(s.stats().inline_blocks, logged, "the second went home");
        });
        assert_eq!(st.inline_blocks, 1, "seed {seed}");
        let data = recovered(image, "f");
        assert_eq!(data.len(), 4096 * (INLINE_BLOCKS + 4), "seed {seed}");
        assert!(
            data.iter().all(|&b| b == 2),
            "seed {seed}: block {} shows the first record's logged copy",
            data.iter().position(|&b| b != 2).unwrap_or(0) / 4096
        );
    }
}

/// A direct write over a block logged inline, then fsynced: recovery shows the
/// direct write's data.
#[test]
fn a_direct_write_over_a_logged_block_wins() {
    for seed in 1..=4 {
        let (image, _) = crash_inline(seed, move |s| async move {
            let h = s.create("f").unwrap();
            s.sync().await.unwrap();
            set_class(IoClass::Critical);
            s.write_buffered(h, 0, &[1; 4096]).await.unwrap();
            s.fsync(h).await.unwrap();
            s.write(h, 0, &[3; 4096]).await.unwrap();
            s.fsync(h).await.unwrap();
        });
        let data = recovered(image, "f");
        assert!(data.iter().all(|&b| b == 3), "seed {seed}");
    }
}

/// A block logged inline and written again stays buffered when a writer over the
/// buffer limit writes the buffer home (it is pinned until the commit covering its
/// record): its file's next fsync then logs it again. Were it written home, a FLUSH
/// (another file's fsync) could make that write durable untagged, and recovery — redoing
/// the first record — would write its stale logged copy over data the second fsync
/// returned for.
#[test]
fn a_logged_block_is_not_written_home_by_a_writer_over_the_limit() {
    for seed in 1..=4 {
        let (image, _) = crash_inline(seed, move |s| async move {
            s.set_buffer_limit(64 << 10);
            let (f, g) = (s.create("f").unwrap(), s.create("g").unwrap());
            s.sync().await.unwrap();
            set_class(IoClass::Critical);
            s.write_buffered(f, 0, &[1; 4096]).await.unwrap();
            s.fsync(f).await.unwrap();
            s.write_buffered(f, 0, &[2; 4096]).await.unwrap();
            // Over the limit: this writer writes the buffer home first.
            for k in 0..64u64 {
                s.write_buffered(g, k * 4096, &[9; 4096]).await.unwrap();
            }
            s.fsync(g).await.unwrap();
            s.fsync(f).await.unwrap();
        });
        let data = recovered(image, "f");
        assert!(
            data.iter().all(|&b| b == 2),
            "seed {seed}: {:?}",
            &data[..8]
        );
    }
}
