//! Files above 4 MiB: the double-indirect block. Written, read back, truncated down
//! and up, unlinked, with the bitmap agreeing after a remount; the largest file and a
//! clear error past it; the f-transaction of a large file (only its changed map
//! blocks) recovered after a crash; a transaction that never outgrows the journal,
//! and a truncation too big for any transaction refused with nothing changed.

use crate::common;

use common::{recover, IMG};
use std::future::Future;
use std::rc::Rc;

use sluice_runtime::{spawn, CrashSpec, DiskImage, File, IoClass, Stack, TaskCtx};
use sluice_store::{CommitMode, Geometry, Store, StoreError};

const MIB: u64 = 1 << 20;
/// The largest file (24 + 1 024 + 1 024² blocks of 4 KiB).
const MAX_BYTES: u64 = (24 + 1024 + 1024 * 1024) * 4096;

fn pattern(n: usize, salt: u64) -> Vec<u8> {
    (0..n as u64)
        .map(|i| (i.wrapping_mul(31) ^ salt.wrapping_mul(7)) as u8 | 1)
        .collect()
}

/// Run `work` (as a critical task) on a fresh store `g` on `nand`, then cut the power.
fn crash_after<F, Fut>(mode: CommitMode, g: Geometry, work: F) -> DiskImage
where
    F: FnOnce(Rc<Store>) -> Fut + 'static,
    Fut: Future<Output = ()> + 'static,
{
    common::crash_after(mode, g, 3, |s| async move {
        let t = spawn(TaskCtx::new("w").class(IoClass::Critical), work(s));
        t.await;
    })
}

/// Mount `image` (recovery), check the structure, run `work`, cut the power after it.
fn remount<F, Fut>(mode: CommitMode, image: DiskImage, work: F) -> DiskImage
where
    F: FnOnce(Rc<Store>) -> Fut + 'static,
    Fut: Future<Output = ()> + 'static,
{
    Stack::builder()
        .device("nand")
        .seed(4)
        .image(image)
        .build()
        .unwrap()
        .run_until_crash(
            u64::MAX,
            CrashSpec {
                seed: 4,
                torn: true,
            },
            move || async move {
                let f = File::open(IMG).await.unwrap();
                let s = Store::mount(&f, mode).await.unwrap();
                assert_eq!(s.check(), Vec::<String>::new());
                work(s).await
            },
        )
        .unwrap()
        .image
}

async fn read_all(s: &Store, name: &str) -> Vec<u8> {
    let h = s.open(name).unwrap();
    let mut v = vec![0u8; s.len(h).unwrap() as usize];
    assert_eq!(s.read(h, 0, &mut v).await.unwrap(), v.len());
    v
}

#[test]
fn a_six_mib_file_is_written_read_truncated_and_unlinked() {
    for mode in [CommitMode::Compound, CommitMode::FileLevel] {
        let want = pattern((6 * MIB) as usize, 1);
        let w = want.clone();
        let image = crash_after(mode, Geometry::new(8192), move |s| async move {
            let h = s.create("big").unwrap();
            // Direct up to 3 MiB, buffered past it, in uneven pieces.
            let mut at = 0usize;
            while at < w.len() {
                let n = (300_001).min(w.len() - at);
                match at < (3 * MIB) as usize {
                    true => s.write(h, at as u64, &w[at..at + n]).await.unwrap(),
                    false => s
                        .write_buffered(h, at as u64, &w[at..at + n])
                        .await
                        .unwrap(),
                };
                at += n;
            }
            assert_eq!(read_all(&s, "big").await, w);
            // 1 536 data blocks, the indirect, the double-indirect and one block under
            // it.
            assert_eq!(s.stat(h).unwrap().blocks, 1536 + 3);
            assert_eq!(s.check(), Vec::<String>::new());
            s.fsync(h).await.unwrap();
            s.sync().await.unwrap();
        });
        let w = want.clone();
        let image = remount(mode, image, move |s| async move {
            assert_eq!(read_all(&s, "big").await, w);
            let h = s.open("big").unwrap();
            // Down to 5 MiB: still past the indirect block's reach.
            s.truncate(h, 5 * MIB).await.unwrap();
            assert_eq!(s.stat(h).unwrap().blocks, 1280 + 3);
            assert_eq!(read_all(&s, "big").await, &w[..(5 * MIB) as usize]);
            assert_eq!(s.check(), Vec::<String>::new());
            // Down to 3 MiB: the double-indirect block and the one under it go.
            s.truncate(h, 3 * MIB + 5).await.unwrap();
            assert_eq!(s.stat(h).unwrap().blocks, 769 + 1);
            assert_eq!(s.check(), Vec::<String>::new());
            // Back up to 7 MiB: a hole of zeros, no blocks.
            s.truncate(h, 7 * MIB).await.unwrap();
            assert_eq!(s.stat(h).unwrap().blocks, 769 + 1);
            let v = read_all(&s, "big").await;
            assert_eq!(&v[..(3 * MIB + 5) as usize], &w[..(3 * MIB + 5) as usize]);
            assert!(v[(3 * MIB + 5) as usize..].iter().all(|&b| b == 0));
            // A block past 6 MiB allocates the double-indirect tree again.
            s.write(h, 6 * MIB + 100, b"tail").await.unwrap();
            assert_eq!(s.stat(h).unwrap().blocks, 769 + 1 + 3);
            s.fsync(h).await.unwrap();
            s.sync().await.unwrap();
        });
        let image = remount(mode, image, move |s| async move {
            let v = read_all(&s, "big").await;
            assert_eq!(v.len() as u64, 7 * MIB);
            assert_eq!(&v[(6 * MIB + 100) as usize..][..4], b"tail");
            assert!(v[(3 * MIB + 5) as usize..(6 * MIB + 100) as usize]
                .iter()
                .all(|&b| b == 0));
            s.unlink("big").unwrap();
            s.sync().await.unwrap();
            assert_eq!(s.check(), Vec::<String>::new());
        });
        // After a remount the bitmap, rebuilt from the inodes, marks no block of it.
        recover(mode, image, |s| async move {
            assert!(s.list().is_empty());
            let h = s.create("again").unwrap();
            s.write(h, 5 * MIB, &[7; 4096]).await.unwrap();
            assert_eq!(s.check(), Vec::<String>::new());
        });
    }
}

#[test]
fn the_largest_file_and_a_clear_error_past_it() {
    let image = crash_after(CommitMode::Compound, Geometry::new(4096), |s| async move {
        let h = s.create("huge").unwrap();
        // The last 10 bytes of the largest file: the double-indirect block's last entry.
        s.write(h, MAX_BYTES - 10, b"0123456789").await.unwrap();
        assert_eq!(s.len(h).unwrap(), MAX_BYTES);
        assert_eq!(s.stat(h).unwrap().blocks, 3);
        let mut v = [0u8; 20];
        assert_eq!(s.read(h, MAX_BYTES - 20, &mut v).await.unwrap(), 20);
        assert_eq!(&v[..10], &[0u8; 10]);
        assert_eq!(&v[10..], b"0123456789");
        for e in [
            s.write(h, MAX_BYTES - 1, b"ab").await.unwrap_err(),
            s.write_buffered(h, MAX_BYTES, b"a").await.unwrap_err(),
            s.truncate(h, MAX_BYTES + 1).await.unwrap_err(),
        ] {
            assert!(matches!(e, StoreError::TooBig), "{e}");
            let msg = e.to_string();
            assert!(
                msg.contains(&MAX_BYTES.to_string()) && msg.contains("double-indirect"),
                "{msg}"
            );
        }
        // Nothing changed by the refusals.
        assert_eq!(s.len(h).unwrap(), MAX_BYTES);
        s.truncate(h, MAX_BYTES).await.unwrap();
        s.sync().await.unwrap();
    });
    recover(CommitMode::Compound, image, |s| async move {
        let h = s.open("huge").unwrap();
        assert_eq!(s.len(h).unwrap(), MAX_BYTES);
        let mut v = [0u8; 10];
        s.read(h, MAX_BYTES - 10, &mut v).await.unwrap();
        assert_eq!(&v, b"0123456789");
        s.truncate(h, 0).await.unwrap();
        assert_eq!(s.stat(h).unwrap().blocks, 0);
        assert_eq!(s.check(), Vec::<String>::new());
    });
}

#[test]
fn the_f_transaction_of_a_large_file_recovers_after_a_crash() {
    let image = crash_after(CommitMode::FileLevel, Geometry::new(8192), |s| async move {
        let h = s.create("db").unwrap();
        // The name is durable with a normal commit.
        s.sync().await.unwrap();
        let before = s.stats();
        // Past 4 MiB: two indirect blocks under the double-indirect one.
        s.write_buffered(h, 5 * MIB, &pattern(8192, 2))
            .await
            .unwrap();
        s.write_buffered(h, 9 * MIB, &pattern(5000, 3))
            .await
            .unwrap();
        s.fsync(h).await.unwrap();
        let a = s.stats();
        assert_eq!(a.ftxns, before.ftxns + 1, "{a:?}");
        assert_eq!(a.commits, before.commits, "{a:?}");
        // The double-indirect block and the two under it: the minimum metadata.
        assert_eq!(a.fjournal_blocks - before.fjournal_blocks, 3, "{a:?}");
        // An overwrite inside the allocated blocks changes no map block (this one
        // rewrites a block the last f-transaction vouches for, single-flush commits:
        // it is sealed first). One new region changes the double-indirect block and
        // one block under it.
        s.write_buffered(h, 5 * MIB + 10, b"over").await.unwrap();
        s.fsync(h).await.unwrap();
        let b = s.stats();
        assert_eq!(
            (b.fjournal_blocks - a.fjournal_blocks, b.redirected, b.seals),
            (0, 0, 1),
            "{b:?}"
        );
        s.write_buffered(h, 13 * MIB, b"end").await.unwrap();
        s.fsync(h).await.unwrap();
        let c = s.stats();
        assert_eq!(c.ftxns, before.ftxns + 3, "{c:?}");
        assert_eq!(c.fjournal_blocks - b.fjournal_blocks, 2, "{c:?}");
        assert_eq!(c.commits, before.commits, "{c:?}");
    });
    recover(CommitMode::FileLevel, image, |s| async move {
        let st = s.stats();
        assert!(st.fredone >= 3, "the f-transactions were redone: {st:?}");
        let v = read_all(&s, "db").await;
        assert_eq!(v.len() as u64, 13 * MIB + 3);
        let mut first = pattern(8192, 2);
        first[10..14].copy_from_slice(b"over");
        assert_eq!(&v[(5 * MIB) as usize..][..8192], &first[..]);
        assert_eq!(&v[(9 * MIB) as usize..][..5000], &pattern(5000, 3)[..]);
        assert_eq!(&v[(13 * MIB) as usize..], b"end");
        assert!(v[..(5 * MIB) as usize].iter().all(|&b| b == 0));
    });
}

#[test]
fn too_many_changed_map_blocks_take_a_normal_commit() {
    // A 4 MiB journal, so one transaction holds all the changes below.
    let g = Geometry {
        journal: 1024,
        ..Geometry::new(8192)
    };
    let image = crash_after(CommitMode::FileLevel, g, |s| async move {
        let h = s.create("sparse").unwrap();
        s.sync().await.unwrap();
        let before = s.stats();
        // 340 indirect blocks under the double-indirect one, each with one block:
        // more changed map blocks than one f-transaction header holds (327).
        for k in 0..340u64 {
            s.write_buffered(
                h,
                4 * MIB + 200 * 1024 + k * 4 * MIB,
                &[(k as u8).wrapping_add(1); 100],
            )
            .await
            .unwrap();
        }
        s.fsync(h).await.unwrap();
        let a = s.stats();
        assert_eq!(a.ftxns, before.ftxns, "{a:?}");
        assert_eq!(a.commits, before.commits + 1, "{a:?}");
        // Since that commit, one region more: an f-transaction again.
        s.write_buffered(h, 4 * MIB + 200 * 1024 + 340 * 4 * MIB, &[9; 100])
            .await
            .unwrap();
        s.fsync(h).await.unwrap();
        assert_eq!(s.stats().ftxns, before.ftxns + 1);
        assert_eq!(s.check(), Vec::<String>::new());
    });
    recover(CommitMode::FileLevel, image, |s| async move {
        let h = s.open("sparse").unwrap();
        for k in 0..=340u64 {
            let mut v = [0u8; 100];
            s.read(h, 4 * MIB + 200 * 1024 + k * 4 * MIB, &mut v)
                .await
                .unwrap();
            let want = if k == 340 {
                9
            } else {
                (k as u8).wrapping_add(1)
            };
            assert_eq!(v, [want; 100], "region {k}");
        }
    });
}

#[test]
fn a_transaction_never_outgrows_the_journal() {
    // The default 1 MiB journal holds 252 blocks a transaction; 400 new indirect blocks
    // in a row must go in several commits, not abort the journal.
    for mode in [CommitMode::Compound, CommitMode::FileLevel] {
        let image = crash_after(mode, Geometry::new(8192), |s| async move {
            let h = s.create("sparse").unwrap();
            for k in 0..400u64 {
                s.write_buffered(h, 5 * MIB + k * 4 * MIB, &[(k % 255) as u8 + 1; 10])
                    .await
                    .unwrap();
            }
            s.fsync(h).await.unwrap();
            assert!(s.stats().commits >= 2, "{:?}", s.stats());
            // Down to nothing in one truncation: 401 map blocks and 400 data blocks go.
            s.truncate(h, 0).await.unwrap();
            s.sync().await.unwrap();
            assert_eq!(s.stat(h).unwrap().blocks, 0);
        });
        recover(mode, image, |s| async move {
            let h = s.open("sparse").unwrap();
            assert_eq!(s.len(h).unwrap(), 0);
        });
    }
}

#[test]
fn a_truncation_too_big_for_one_transaction_is_refused_and_changes_nothing() {
    // The smallest journal (8 blocks) holds 4 blocks a transaction. A file whose four
    // blocks lie in four bitmap groups (128 MiB each) cannot be truncated to nothing in
    // one: its inode and four bitmap blocks change. To spread it without writing
    // 384 MiB, a scratch file moves the allocator on: each of its writes takes 16
    // blocks from the allocator's rotor (its first block follows none); written into
    // the store's buffer and truncated before it goes home, it leaves nothing on the
    // device. The file's blocks have holes between them, so none follows the one before
    // (that would keep them together) and each is taken where the rotor is.
    const GROUP: u64 = 4096 * 8;
    let g = Geometry {
        inodes: 64,
        journal: 8,
        fjournal: 4,
        ..Geometry::new(4 * GROUP + 1024)
    };
    for mode in [CommitMode::Compound, CommitMode::FileLevel] {
        let image = crash_after(mode, g, |s| async move {
            let h = s.create("spread").unwrap();
            let scratch = s.create("scratch").unwrap();
            for k in 0..4u64 {
                s.write_buffered(h, 2 * k * 4096, &pattern(4096, k))
                    .await
                    .unwrap();
                s.fsync(h).await.unwrap();
                if k < 3 {
                    // 16 blocks at a time, a group's worth.
                    for _ in 0..GROUP / 16 {
                        s.write_buffered(scratch, 0, &[9u8; 64 << 10])
                            .await
                            .unwrap();
                        s.truncate(scratch, 0).await.unwrap();
                    }
                }
            }
            let before = s.free_blocks();
            let e = s.truncate(h, 0).await.unwrap_err();
            assert!(matches!(e, StoreError::TxnTooBig(_)), "{e:?}");
            let msg = e.to_string();
            assert!(msg.contains("truncate it in steps"), "{msg}");
            // Nothing changed: the size, the data, the free blocks.
            assert_eq!(s.len(h).unwrap(), 7 * 4096);
            assert_eq!(s.free_blocks(), before);
            let mut back = vec![0u8; 4096];
            s.read(h, 6 * 4096, &mut back).await.unwrap();
            assert_eq!(back, pattern(4096, 3));
            // In steps it goes (one bitmap group each).
            for k in (0..4u64).rev() {
                s.truncate(h, 2 * k * 4096).await.unwrap();
            }
            s.sync().await.unwrap();
            assert_eq!(s.stat(h).unwrap().blocks, 0);
        });
        recover(mode, image, |s| async move {
            let h = s.open("spread").unwrap();
            assert_eq!(s.len(h).unwrap(), 0);
        });
    }
}
