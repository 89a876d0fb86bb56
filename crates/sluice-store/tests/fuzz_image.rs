//! Fuzzing what a mount trusts: a store image (its journal holding committed
//! transactions) mutated — superblock fields, inodes, directory entries, journal tags
//! and ids, block-map entries, with every checksum sealed again, or bytes flipped
//! without, or the file cut short — and then inspected (`sluice fsck`) and mounted.
//! Neither may panic, hang or allocate beyond the image's size; both must agree
//! (inspect refuses exactly the images mount refuses); and a store a mount accepts
//! passes the structure check. CI runs a few dozen cases; for long runs:
//!
//! ```sh
//! PROPTEST_CASES=5000 cargo test --release -p sluice-store --test integration fuzz_image::
//! ```

use crate::common;

use std::sync::OnceLock;

use common::{on_image, read_block as read, write_block as write};
use proptest::prelude::*;
use sluice_runtime::{DiskImage, File};
use sluice_store::journal::{self, Tag};
use sluice_store::layout::{decode_dirent, encode_dirent, DIRENT_SIZE, INODE_SIZE};
use sluice_store::{CommitMode, Geometry, Store};

const BLOCK: u64 = 4096;

/// The base image: three files (one past its direct blocks), committed transactions
/// left in the journal by the power cut.
fn base() -> DiskImage {
    static IMAGE: OnceLock<DiskImage> = OnceLock::new();
    IMAGE
        .get_or_init(|| common::three_files(3, 300_000, 9_000))
        .clone()
}

/// One change to the image.
#[derive(Clone, Debug)]
enum Mutation {
    /// A superblock field (byte offset, width 4 or 8) set to a value; re-sealed.
    Super(usize, usize, u64),
    /// A field of inode `ino` (offset, width) set; its crc32c re-sealed.
    Inode(u32, usize, usize, u64),
    /// Directory slot `slot`: its inode and name set; re-sealed.
    Dirent(u32, u32, String),
    /// The `k`-th tag (logged, else data) of the `n`-th descriptor in the journal
    /// gets home `home`, or the descriptor's id becomes `id`; descriptor and commit
    /// re-sealed.
    Tag(usize, usize, u64, Option<u64>),
    /// Entry `k` of a block-map block of the data area (unchecksummed) set.
    MapEntry(u64, usize, u32),
    /// A byte of block `b` xor-ed (no re-seal: the checksums' path).
    Flip(u64, usize, u8),
    /// The file cut to `blocks` blocks.
    Cut(u64),
}

fn interesting64() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        Just(1),
        Just(4095),
        Just(4096),
        Just(4097),
        Just(u32::MAX as u64),
        Just(1 << 32),
        Just(1 << 40),
        Just(1 << 62),
        Just((1 << 63) - 1),
        Just(u64::MAX),
        any::<u64>(),
        0u64..8192,
    ]
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let g = Geometry::new(4096);
    let blocks = g.blocks;
    prop_oneof![
        (
            prop_oneof![
                Just((8usize, 8usize)),
                Just((16, 4)),
                Just((20, 8)),
                Just((28, 8))
            ],
            interesting64()
        )
            .prop_map(|((at, w), v)| Mutation::Super(at, w, v)),
        (
            1u32..8,
            prop_oneof![
                Just((0usize, 1usize)),
                Just((8, 8)),
                (0usize..24).prop_map(|k| (16 + 4 * k, 4)),
                Just((112, 4)),
                Just((116, 4)),
            ],
            interesting64()
        )
            .prop_map(|(ino, (at, w), v)| Mutation::Inode(ino, at, w, v)),
        (
            0u32..8,
            prop_oneof![
                Just(0u32),
                1u32..8,
                Just(1024),
                Just(1025),
                Just(5000),
                Just(u32::MAX)
            ],
            prop_oneof![
                Just("f0".to_string()),
                Just("f1".to_string()),
                Just(String::new()),
                "[a-z/]{1,8}"
            ]
        )
            .prop_map(|(s, i, n)| Mutation::Dirent(s, i, n)),
        (
            0usize..6,
            0usize..4,
            interesting64(),
            proptest::option::of(interesting64())
        )
            .prop_map(|(n, k, h, id)| Mutation::Tag(n, k, h, id)),
        (
            g.data_start()..g.data_start() + 200,
            0usize..1024,
            any::<u32>()
        )
            .prop_map(|(b, k, v)| Mutation::MapEntry(b, k, v)),
        (0..g.data_start(), 0usize..4096, 1u8..=255).prop_map(|(b, i, x)| Mutation::Flip(b, i, x)),
        (0..blocks + 8).prop_map(Mutation::Cut),
    ]
}

fn put(b: &mut [u8], at: usize, w: usize, v: u64) {
    b[at..at + w].copy_from_slice(&v.to_le_bytes()[..w]);
}

/// An inode record's crc32c (bytes 4..8 taken as zero), as the format defines it.
fn seal_inode(r: &mut [u8]) {
    let c = crc32c::crc32c(&r[..4]);
    let c = crc32c::crc32c_append(c, &[0; 4]);
    let c = crc32c::crc32c_append(c, &r[8..INODE_SIZE]);
    r[4..8].copy_from_slice(&c.to_le_bytes());
}

/// The journal's records: (descriptor block, its logged block count) per descriptor,
/// and the commit block ending each transaction's run of descriptors.
async fn descriptors(f: &File, g: &Geometry) -> Vec<(u64, u64, u64)> {
    let mut out = Vec::new();
    let mut run: Vec<(u64, u64)> = Vec::new();
    let mut q = g.journal_start() + 1;
    while q < g.journal_start() + g.journal {
        let b = read(f, q).await;
        if let Some(d) = journal::decode_descriptor(&b) {
            let n = d.logged.len() as u64;
            run.push((q, n));
            q += 1 + n;
            continue;
        }
        if journal::commit_claims(&b).is_some() {
            out.extend(run.drain(..).map(|(d, n)| (d, n, q)));
        }
        run.clear();
        q += 1;
    }
    out
}

async fn apply(f: &File, m: &Mutation) {
    let g = Geometry::new(4096);
    match m {
        Mutation::Super(at, w, v) => {
            let mut b = read(f, 0).await;
            put(&mut b, *at, *w, *v);
            let crc = crc32c::crc32c(&b[..BLOCK as usize - 4]);
            b[BLOCK as usize - 4..].copy_from_slice(&crc.to_le_bytes());
            write(f, 0, &b).await;
        }
        Mutation::Inode(ino, at, w, v) => {
            let (blk, off) = g.inode_pos(*ino);
            let mut b = read(f, blk).await;
            put(&mut b[off..off + INODE_SIZE], *at, *w, *v);
            seal_inode(&mut b[off..off + INODE_SIZE]);
            write(f, blk, &b).await;
        }
        Mutation::Dirent(slot, ino, name) => {
            let (blk, off) = g.dirent_pos(*slot);
            let mut b = read(f, blk).await;
            encode_dirent(&mut b[off..off + DIRENT_SIZE], *ino, name, true);
            assert_eq!(
                decode_dirent(&b[off..]).map(|x| x.0),
                (*ino != 0).then_some(*ino)
            );
            write(f, blk, &b).await;
        }
        Mutation::Tag(n, k, home, id) => {
            let ds = descriptors(f, &g).await;
            let Some(&(dq, _, cq)) = ds.get(n % ds.len().max(1)) else {
                return;
            };
            let d = journal::decode_descriptor(&read(f, dq).await).unwrap();
            let (mut logged, mut data): (Vec<Tag>, Vec<Tag>) = (d.logged, d.data);
            if let Some(t) = logged.get_mut(*k) {
                t.0 = *home;
            } else if let Some(t) = data.get_mut(*k) {
                t.0 = *home;
            }
            let id_new = id.unwrap_or(d.id);
            write(f, dq, &journal::encode_descriptor(id_new, &logged, &data)).await;
            // The commit's body checksum over every descriptor and logged block of
            // its transaction, as written now.
            let mut body = Vec::new();
            for &(q, cnt, c) in &ds {
                if c == cq {
                    for i in 0..=cnt {
                        body.push(read(f, q + i).await);
                    }
                }
            }
            let cb = read(f, cq).await;
            if let (Some(claims), Some((cid, seq))) =
                (journal::commit_claims(&cb), journal::commit_of(false, &cb))
            {
                let crc = journal::body_crc(body.iter().map(|v| v.as_slice()));
                let cid = if id.is_some() { id_new } else { cid };
                write(f, cq, &journal::encode_commit(false, cid, seq, crc, claims)).await;
            }
        }
        Mutation::MapEntry(b, k, v) => {
            let mut blk = read(f, *b).await;
            put(&mut blk, k * 4, 4, *v as u64);
            write(f, *b, &blk).await;
        }
        Mutation::Flip(b, i, x) => {
            let mut blk = read(f, *b).await;
            blk[*i] ^= x;
            write(f, *b, &blk).await;
        }
        Mutation::Cut(blocks) => f.set_len(blocks * BLOCK).await.unwrap(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(48),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn mutated_images_are_refused_or_consistent(
        muts in proptest::collection::vec(mutation(), 1..4),
    ) {
        let m = muts.clone();
        let (inspected, mounted) = on_image(base(), move |f| async move {
            for x in &m {
                apply(&f, x).await;
            }
            let a = Store::inspect(&f).await.map_err(|e| e.to_string());
            let b = match Store::mount(&f, CommitMode::Compound).await {
                Ok(s) => Ok(s.check()),
                Err(e) => Err(e.to_string()),
            };
            (a, b)
        });
        match (&inspected, &mounted) {
            (Ok(i), Ok(problems)) => {
                prop_assert!(problems.is_empty(), "{muts:?}: mounted with {problems:?}");
                prop_assert!(i.problems.is_empty(), "{muts:?}: inspected {:?}", i.problems);
            }
            (Err(a), Err(b)) => prop_assert_eq!(a, b, "{:?}", muts),
            _ => prop_assert!(false, "{muts:?}: inspect {inspected:?} but mount {mounted:?}"),
        }
    }
}
