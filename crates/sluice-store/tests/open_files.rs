//! Open files: a file removed while open stays usable through its handles until its
//! last close (POSIX's `unlink`), a crash before that close leaves nothing behind, and
//! a handle used after its close is refused — never taken for the file that reuses
//! its inode.

use crate::common;

use std::rc::Rc;

use common::{crash_after, recover, IMG};

use sluice_runtime::{File, Stack};
use sluice_store::{CommitMode, Fs, FsConfig, Geometry, Store, StoreError};

const BLOCKS: u64 = 4096;
const MODES: [CommitMode; 2] = [CommitMode::Compound, CommitMode::FileLevel];

fn pattern(n: usize, salt: u8) -> Vec<u8> {
    (0..n).map(|i| (i * 7 + salt as usize) as u8 | 1).collect()
}

async fn fresh(mode: CommitMode) -> Rc<Store> {
    let f = File::create(IMG).await.unwrap();
    Store::mkfs(&f, Geometry::new(BLOCKS)).await.unwrap();
    Store::mount(&f, mode).await.unwrap()
}

async fn read_all(s: &Store, h: sluice_store::StoreFile) -> Vec<u8> {
    let mut v = vec![0u8; s.len(h).unwrap() as usize];
    let n = s.read(h, 0, &mut v).await.unwrap();
    assert_eq!(n, v.len());
    v
}

#[test]
fn a_file_removed_while_open_lives_until_its_last_close() {
    for mode in MODES {
        Stack::builder()
            .device("ull")
            .build()
            .unwrap()
            .run(move || async move {
                let s = fresh(mode).await;
                let empty = s.free_blocks();
                let a = s.create("a").unwrap();
                s.write_buffered(a, 0, &pattern(20_000, 1)).await.unwrap();
                s.sync().await.unwrap();
                let b = s.open("a").unwrap();
                s.unlink("a").unwrap();
                assert!(s.list().is_empty());
                assert!(matches!(s.open("a"), Err(StoreError::NotFound(_))));
                // Both handles still read the data, write and sync it.
                assert_eq!(read_all(&s, a).await, pattern(20_000, 1));
                s.write(b, 20_000, &pattern(5_000, 2)).await.unwrap();
                s.fsync(b).await.unwrap();
                let mut want = pattern(20_000, 1);
                want.extend(pattern(5_000, 2));
                assert_eq!(read_all(&s, a).await, want);
                // A new file of the same name is another file.
                let c = s.create("a").unwrap();
                assert_eq!(s.len(c).unwrap(), 0);
                s.close(c).unwrap();
                s.unlink("a").unwrap();
                s.close(a).unwrap();
                assert_eq!(read_all(&s, b).await, want, "one close of two");
                s.sync().await.unwrap();
                assert!(s.free_blocks() < empty, "held while open");
                s.close(b).unwrap();
                s.sync().await.unwrap();
                assert_eq!(s.free_blocks(), empty, "freed by the last close");
                assert_eq!(s.check(), Vec::<String>::new());
            })
            .unwrap();
    }
}

#[test]
fn a_closed_handle_is_refused_even_when_its_inode_is_reused() {
    Stack::builder()
        .device("ull")
        .build()
        .unwrap()
        .run(|| async {
            let s = fresh(CommitMode::FileLevel).await;
            let old = s.create("old").unwrap();
            s.write(old, 0, b"old data").await.unwrap();
            s.close(old).unwrap();
            s.unlink("old").unwrap();
            s.sync().await.unwrap();
            // The inode is free again: the next file may take it.
            let new = s.create("new").unwrap();
            s.write(new, 0, b"new data").await.unwrap();
            let mut buf = [0u8; 8];
            let closed = |r: Result<(), StoreError>| matches!(r, Err(StoreError::Closed));
            assert!(closed(s.read(old, 0, &mut buf).await.map(|_| ())));
            assert!(closed(s.write(old, 0, b"x").await.map(|_| ())));
            assert!(closed(s.write_buffered(old, 0, b"x").await.map(|_| ())));
            assert!(closed(s.truncate(old, 0).await));
            assert!(closed(s.fsync(old).await));
            assert!(closed(s.fdatasync(old).await));
            assert!(closed(s.len(old).map(|_| ())));
            assert!(closed(s.stat(old).map(|_| ())));
            assert!(closed(s.close(old)));
            assert_eq!(read_all(&s, new).await, b"new data");
            assert!(StoreError::Closed
                .to_string()
                .contains("open the file again"));
        })
        .unwrap();
}

#[test]
fn a_crash_before_the_last_close_frees_the_removed_file_at_mount() {
    for mode in MODES {
        for seed in 0..4 {
            let image = crash_after(mode, Geometry::new(BLOCKS), seed, |s| async move {
                let keep = s.create("keep").unwrap();
                s.write_buffered(keep, 0, &pattern(9_000, 3)).await.unwrap();
                let h = s.create("gone").unwrap();
                s.write_buffered(h, 0, &pattern(40_000, 4)).await.unwrap();
                s.sync().await.unwrap();
                s.unlink("gone").unwrap();
                s.sync().await.unwrap();
                // Written and fsynced without a name (an f-transaction of an inode no
                // name reaches, in fjournal mode), never closed.
                s.write_buffered(h, 40_000, &pattern(8_000, 5))
                    .await
                    .unwrap();
                s.fsync(h).await.unwrap();
            });
            recover(mode, image, move |s| async move {
                assert_eq!(s.list(), vec![("keep".to_string(), 9_000)]);
                assert_eq!(s.stats().orphans, 1, "{mode:?} seed {seed}");
                let keep = s.open("keep").unwrap();
                let blocks = s.stat(keep).unwrap().blocks;
                let g = Geometry::new(BLOCKS);
                let data = g.blocks - g.data_start();
                assert_eq!(s.free_blocks(), data - blocks, "{mode:?} seed {seed}");
            });
        }
    }
}

#[test]
fn an_fs_file_closes_its_open_when_its_last_clone_goes() {
    Stack::builder()
        .device("ull")
        .build()
        .unwrap()
        .run(|| async {
            let fs = Fs::mount(&"compound".parse::<FsConfig>().unwrap())
                .await
                .unwrap();
            let s = fs.store().unwrap().clone();
            s.sync().await.unwrap();
            let empty = s.free_blocks();
            let f = fs.create("log").await.unwrap();
            f.write_buffered(0, &pattern(12_000, 6)).await.unwrap();
            let g = f.clone();
            fs.unlink("log").await.unwrap();
            let mut v = vec![0u8; 12_000];
            assert_eq!(g.read_buffered(0, &mut v).await.unwrap(), 12_000);
            assert_eq!(v, pattern(12_000, 6));
            f.close().await.unwrap();
            s.sync().await.unwrap();
            assert!(s.free_blocks() < empty, "a clone still open");
            assert_eq!(g.len(), 12_000);
            drop(g);
            s.sync().await.unwrap();
            assert_eq!(s.free_blocks(), empty);
        })
        .unwrap();
}
