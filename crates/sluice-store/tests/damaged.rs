//! Images a mount would wreck or lose, with every checksum re-sealed so that only the
//! structural checks can find them: `Store::inspect` (what `sluice fsck` runs) and
//! `Store::mount` both refuse each, for the same reason, without a panic, a hang or an
//! allocation the image's size does not bound.

use crate::common;

use std::future::Future;

use common::{on_image, read_block as read, write_block as write};
use sluice_runtime::{DiskImage, File};
use sluice_store::journal::{self, Tag};
use sluice_store::layout::{encode_dirent, Inode, DIRENT_SIZE, INODE_SIZE};
use sluice_store::{CommitMode, Geometry, Store, StoreError};

const BLOCK: u64 = 4096;

/// A store with three files (f0, f1, f2; f1 past its direct blocks), its journal
/// holding the committed transactions the power cut left.
fn image() -> DiskImage {
    common::three_files(1, 200_000, 10_000)
}

/// Inspect and mount `image` after `edit`: both must refuse it, naming every needle.
fn refused<F, Fut>(what: &str, clean: bool, edit: F, needles: &[&str])
where
    F: FnOnce(File) -> Fut + 'static,
    Fut: Future<Output = ()> + 'static,
{
    let (a, b) = on_image(image(), move |f| async move {
        if clean {
            // Recovery home, the journal reclaimed: home edits are not replayed over.
            drop(Store::mount(&f, CommitMode::Compound).await.unwrap());
        }
        edit(f).await;
        let a = Store::inspect(&f).await.map(|i| i.problems);
        let b = Store::mount(&f, CommitMode::Compound).await.map(|_| ());
        (a, b)
    });
    for (who, r) in [("inspect", a.map(|_| ())), ("mount", b)] {
        let e = match r {
            Err(e @ (StoreError::Corrupt(_) | StoreError::JournalCorrupt(_))) => e.to_string(),
            other => panic!("{what}: {who} gave {other:?}"),
        };
        for n in needles {
            assert!(e.contains(n), "{what}: {who}: {e:?} lacks {n:?}");
        }
    }
}

/// Re-seal the superblock with `change` applied to its geometry fields.
async fn edit_super(f: &File, change: impl FnOnce(&mut Vec<u8>)) {
    let mut b = read(f, 0).await;
    change(&mut b);
    let crc = crc32c::crc32c(&b[..BLOCK as usize - 4]);
    b[BLOCK as usize - 4..].copy_from_slice(&crc.to_le_bytes());
    write(f, 0, &b).await;
}

/// The slot and inode of the directory entry named `name`.
async fn dirent_of(f: &File, g: &Geometry, name: &str) -> (u32, u32) {
    for slot in 0..g.inodes {
        let (b, off) = g.dirent_pos(slot);
        if let Some((ino, n)) = sluice_store::layout::decode_dirent(&read(f, b).await[off..]) {
            if n == name {
                return (slot, ino);
            }
        }
    }
    panic!("no entry {name}");
}

async fn set_dirent(f: &File, g: &Geometry, slot: u32, ino: u32, name: &str) {
    let (b, off) = g.dirent_pos(slot);
    let mut v = read(f, b).await;
    encode_dirent(&mut v[off..off + DIRENT_SIZE], ino, name, true);
    write(f, b, &v).await;
}

async fn edit_inode(f: &File, g: &Geometry, ino: u32, change: impl FnOnce(&mut Inode)) {
    let (b, off) = g.inode_pos(ino);
    let mut v = read(f, b).await;
    let mut i = Inode::decode(&v[off..off + INODE_SIZE]);
    change(&mut i);
    i.encode(&mut v[off..off + INODE_SIZE]);
    write(f, b, &v).await;
}

/// The first committed transaction that logs a block: its first tag's home becomes
/// `home`, the descriptor and the commit record re-sealed.
async fn retarget_journal(f: &File, home: u64) {
    let g = Geometry::new(4096);
    let mut q = g.journal_start() + 1;
    let mut found = None;
    let mut parts: Vec<(u64, Vec<u8>)> = Vec::new();
    while q < g.journal_start() + g.journal {
        let b = read(f, q).await;
        if let Some(d) = journal::decode_descriptor(&b) {
            if found.is_some_and(|(id, _)| id != d.id) {
                parts.clear();
                found = None;
            }
            let n = d.logged.len() as u64;
            parts.push((q, b));
            for i in 0..n {
                parts.push((q + 1 + i, read(f, q + 1 + i).await));
            }
            if found.is_none() && n > 0 {
                found = Some((d.id, parts.len() - 1 - n as usize));
            }
            q += 1 + n;
            continue;
        }
        if let (Some((id, at)), Some(claims)) = (found, journal::commit_claims(&b)) {
            let (dq, db) = parts[at].clone();
            let d = journal::decode_descriptor(&db).unwrap();
            let mut logged: Vec<Tag> = d.logged.clone();
            logged[0].0 = home;
            parts[at].1 = journal::encode_descriptor(id, &logged, &d.data);
            write(f, dq, &parts[at].1).await;
            let crc = journal::body_crc(parts.iter().map(|(_, v)| v.as_slice()));
            write(f, q, &journal::encode_commit(false, id, 0, crc, claims)).await;
            return;
        }
        parts.clear();
        found = None;
        q += 1;
    }
    panic!("no committed transaction logs a block");
}

#[test]
fn a_truncated_image_is_refused() {
    refused(
        "truncated",
        false,
        |f| async move { f.set_len(513 * BLOCK).await.unwrap() },
        &["cut short", "2101248 bytes", "4096 blocks"],
    );
}

#[test]
fn a_journal_tag_outside_the_areas_is_refused_before_replay() {
    for home in [0, 4096, 1 << 40, (1 << 63) - 1] {
        refused(
            &format!("home {home}"),
            false,
            move |f| async move { retarget_journal(&f, home).await },
            &[&format!("block {home}, outside"), "nothing was replayed"],
        );
    }
}

#[test]
fn names_must_point_once_at_used_inodes() {
    let g = Geometry::new(4096);
    refused(
        "unused inode named",
        true,
        move |f| async move {
            let (_, ino) = dirent_of(&f, &g, "f0").await;
            edit_inode(&f, &g, ino, |i| *i = Inode::default()).await;
        },
        &["names unused inode", "'f0'"],
    );
    for bad in [5000, u32::MAX] {
        refused(
            &format!("inode {bad}"),
            true,
            move |f| async move {
                let (slot, _) = dirent_of(&f, &g, "f2").await;
                set_dirent(&f, &g, slot, bad, "f2").await;
            },
            &[&format!("names inode {bad}, past the store's 1024 inodes")],
        );
    }
    refused(
        "two names",
        true,
        move |f| async move {
            let (_, ino) = dirent_of(&f, &g, "f1").await;
            set_dirent(&f, &g, 900, ino, "again").await;
        },
        &[
            "directory entry 900 ('again') names inode",
            "which directory entry",
        ],
    );
    refused(
        "a name twice",
        true,
        move |f| async move {
            let (_, ino) = dirent_of(&f, &g, "f2").await;
            let (slot, _) = dirent_of(&f, &g, "f0").await;
            set_dirent(&f, &g, slot, ino, "f1").await;
        },
        &["the name is in directory entry"],
    );
}

#[test]
fn an_inode_size_past_the_largest_file_is_refused() {
    let g = Geometry::new(4096);
    for size in [1 << 40, u64::MAX] {
        refused(
            &format!("size {size}"),
            true,
            move |f| async move {
                let (_, ino) = dirent_of(&f, &g, "f1").await;
                edit_inode(&f, &g, ino, |i| i.size = size).await;
            },
            &[&format!("size {size} bytes, over the largest file")],
        );
    }
    refused(
        "pointer into the inode table",
        true,
        move |f| async move {
            let (_, ino) = dirent_of(&f, &g, "f0").await;
            edit_inode(&f, &g, ino, |i| i.direct[1] = g.itable_start() as u32).await;
        },
        &["outside the data area"],
    );
}

#[test]
fn a_superblock_out_of_bounds_is_refused_not_a_panic() {
    // journal (bytes 20..28) and fjournal (28..36) so large their sum wraps.
    for at in [20, 28] {
        refused(
            &format!("field at {at}"),
            true,
            move |f| async move {
                edit_super(&f, |b| {
                    b[at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes())
                })
                .await
            },
            &["blocks (1 GiB)"],
        );
    }
    // blocks (8..16) = 2^32 - 1 on a 16 MiB image: refused before anything is sized
    // by it.
    refused(
        "blocks",
        true,
        |f| async move {
            edit_super(&f, |b| {
                b[8..16].copy_from_slice(&u64::from(u32::MAX).to_le_bytes())
            })
            .await
        },
        &["cut short", "4294967295 blocks"],
    );
}
