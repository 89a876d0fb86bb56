//! Damage to the journal (a flipped bit) is found by its crc32c checksums and reported
//! at mount — the transactions are not replayed — while a crash's torn tail is not
//! taken for damage.

use crate::common;

use sluice_runtime::{set_class, CrashSpec, DiskImage, DmaBuffer, File, IoClass, Stack};
use sluice_store::journal::{self, FHeader};
use sluice_store::{CommitMode, Geometry, Store, StoreError};

const IMG: &str = "store.img";
const BLOCK: u64 = 4096;

/// A store whose journals hold committed transactions (three normal ones; in
/// fjournal mode f-transactions after them), as the power cut left it.
fn journaled(mode: CommitMode) -> DiskImage {
    Stack::builder()
        .device("nand")
        .build()
        .unwrap()
        .run_until_crash(
            u64::MAX,
            CrashSpec {
                seed: 1,
                torn: false,
            },
            move || async move {
                let f = File::create(IMG).await.unwrap();
                Store::mkfs(&f, Geometry::new(4096)).await.unwrap();
                let s = Store::mount(&f, mode).await.unwrap();
                for i in 0..3u8 {
                    let h = s.create(&format!("f{i}")).unwrap();
                    s.write(h, 0, &[i + 1; 200_000]).await.unwrap();
                    s.sync().await.unwrap();
                }
                let h = s.open("f0").unwrap();
                // f-transactions are a critical task's fsyncs (FastResponse §3.4).
                set_class(IoClass::Critical);
                for i in 0..3u64 {
                    s.write(h, 200_000 + i * 10, &[9; 10]).await.unwrap();
                    s.fsync(h).await.unwrap();
                }
            },
        )
        .unwrap()
        .image
}

/// Where the records are: (normal journal: descriptor and commit block of each
/// transaction; f-area: header and commit block of each f-transaction), device blocks.
#[derive(Debug, Default)]
struct Records {
    txns: Vec<(u64, u64)>,
    ftxns: Vec<(u64, u64)>,
}

async fn read_block(f: &File, b: u64) -> Vec<u8> {
    let (r, buf) = f.read_at(DmaBuffer::new(BLOCK as usize), b * BLOCK).await;
    r.unwrap();
    buf.to_vec()
}

/// Flip bit `bit` of device block `block`.
async fn flip(f: &File, block: u64, bit: usize) {
    let mut v = read_block(f, block).await;
    v[bit / 8] ^= 1 << (bit % 8);
    let (r, _) = f.write_at(DmaBuffer::from_slice(&v), block * BLOCK).await;
    r.unwrap();
}

async fn records(f: &File) -> Records {
    let g = Geometry::new(4096);
    let mut r = Records::default();
    let mut b = g.journal_start() + 1;
    while let Some(mut d) = journal::decode_descriptor(&read_block(f, b).await) {
        // Descriptors of data tags only (single-flush commits) come first.
        while d.logged.is_empty() {
            b += 1;
            match journal::decode_descriptor(&read_block(f, b).await) {
                Some(next) => d = next,
                None => return r,
            }
        }
        let c = b + 1 + d.logged.len() as u64;
        r.txns.push((b, c));
        b = c + 1;
    }
    let mut b = g.fjournal_start() + 1;
    while let Some(h) = FHeader::decode(&read_block(f, b).await) {
        let c = b + 1 + h.tags.len() as u64;
        r.ftxns.push((b, c));
        b = c + 1;
    }
    r
}

/// Flip bit `bit` of device block `block` (none: leave the image as it is), then mount
/// twice; returns the layout found and both mounts' outcomes.
fn mount_damaged(
    mode: CommitMode,
    image: DiskImage,
    pick: impl FnOnce(&Records) -> Option<(u64, usize)> + 'static,
) -> (Records, Vec<Result<(), String>>) {
    Stack::builder()
        .device("nand")
        .image(image)
        .build()
        .unwrap()
        .run(move || async move {
            let f = File::open(IMG).await.unwrap();
            let recs = records(&f).await;
            if let Some((block, bit)) = pick(&recs) {
                flip(&f, block, bit).await;
            }
            let mut outcomes = Vec::new();
            for _ in 0..2 {
                outcomes.push(match Store::mount(&f, mode).await {
                    Ok(s) => {
                        assert_eq!(s.check(), Vec::<String>::new());
                        Ok(())
                    }
                    Err(StoreError::JournalCorrupt(m)) => Err(m),
                    Err(e) => panic!("{e}"),
                });
            }
            (recs, outcomes)
        })
        .unwrap()
        .value
}

#[test]
fn a_flipped_bit_in_a_journal_block_is_reported_and_not_replayed() {
    let image = journaled(CommitMode::Compound);
    // Undamaged: recovery replays the three transactions.
    let (recs, ok) = mount_damaged(CommitMode::Compound, image.clone(), |_| None);
    assert!(recs.txns.len() >= 3, "{recs:?}");
    assert_eq!(ok, vec![Ok(()), Ok(())]);
    type Pick = fn(&Records) -> Option<(u64, usize)>;
    let cases: [(&str, Pick); 4] = [
        // A logged metadata block of the first transaction (its body).
        ("a logged block", |r| Some((r.txns[0].0 + 1, 12_345))),
        // The second transaction's descriptor.
        ("a descriptor", |r| Some((r.txns[1].0, 100))),
        // The first transaction's commit record (inside its sealed sector): the
        // second transaction after it proves it had committed.
        ("a commit record", |r| Some((r.txns[0].1, 70))),
        // A logged block of the last transaction.
        ("a block of the last transaction", |r| {
            Some((r.txns[2].0 + 1, 5))
        }),
    ];
    for (what, pick) in cases {
        let (_, out) = mount_damaged(CommitMode::Compound, image.clone(), pick);
        for o in &out {
            let m = o.as_ref().expect_err(what);
            assert!(m.contains("normal journal block"), "{what}: {m}");
        }
        // Nothing was replayed: the second mount finds the same damage.
        assert_eq!(out[0], out[1], "{what}");
    }
}

#[test]
fn a_flipped_bit_in_an_f_transaction_is_reported() {
    let image = journaled(CommitMode::FileLevel);
    let (recs, ok) = mount_damaged(CommitMode::FileLevel, image.clone(), |_| None);
    assert!(recs.ftxns.len() >= 3, "{recs:?}");
    assert_eq!(ok, vec![Ok(()), Ok(())]);
    type Pick = fn(&Records) -> Option<(u64, usize)>;
    let cases: [(&str, Pick); 3] = [
        ("a header", |r| Some((r.ftxns[1].0, 40 * 8))),
        ("a logged indirect block", |r| Some((r.ftxns[1].0 + 1, 8))),
        ("a commit record", |r| Some((r.ftxns[0].1, 9 * 8))),
    ];
    for (what, pick) in cases {
        let (_, out) = mount_damaged(CommitMode::FileLevel, image.clone(), pick);
        let m = out[0].as_ref().expect_err(what);
        assert!(m.contains("f-journal block"), "{what}: {m}");
        assert_eq!(out[0], out[1], "{what}");
    }
}

/// The last f-transaction is above every claim (single-flush commits: nothing written
/// after it says its FLUSH completed), so a flipped bit in it reads as a commit the
/// crash cut before its FLUSH: recovery drops it — counted in `discarded`, not replayed
/// — and keeps everything before it.
#[test]
fn a_flipped_bit_in_the_last_unclaimed_record_drops_it() {
    let image = journaled(CommitMode::FileLevel);
    let (stats, size) = common::on_image(image, |f: File| async move {
        let recs = records(&f).await;
        flip(&f, recs.ftxns[2].0, 40 * 8).await;
        let s = Store::mount(&f, CommitMode::FileLevel).await.unwrap();
        let size = s.stat(s.open("f0").unwrap()).unwrap().size;
        (s.stats(), size)
    });
    assert_eq!((stats.discarded, stats.fredone), (1, 2), "{stats:?}");
    // The first two appends' f-transactions redone, not the third's.
    assert_eq!(size, 200_020);
}

/// An image with an on-disk feature this build does not know is refused with a message
/// that says so, not mounted and misread; the features this build writes mount.
#[test]
fn an_unknown_feature_flag_is_refused() {
    let out = Stack::builder()
        .device("ull")
        .build()
        .unwrap()
        .run(|| async {
            let f = File::create(IMG).await.unwrap();
            Store::mkfs(&f, Geometry::new(4096)).await.unwrap();
            let mut sb = read_block(&f, 0).await;
            assert_eq!(
                u64::from_le_bytes(sb[36..44].try_into().unwrap()),
                sluice_store::layout::KNOWN_FEATURES
            );
            assert!(Store::mount(&f, CommitMode::Compound).await.is_ok());
            // A flag from a future build, with a valid checksum.
            sb[36..44].copy_from_slice(&(1u64 << 40 | 1).to_le_bytes());
            let crc = crc32c::crc32c(&sb[..4092]);
            sb[4092..].copy_from_slice(&crc.to_le_bytes());
            f.write_at(DmaBuffer::from_slice(&sb), 0).await.0.unwrap();
            Store::mount(&f, CommitMode::Compound).await.map(|_| ())
        })
        .unwrap();
    match out.value {
        Err(StoreError::Corrupt(m)) => {
            assert!(
                m.contains("does not know") && m.contains("0x10000000000"),
                "{m}"
            )
        }
        other => panic!("mounted or failed otherwise: {other:?}"),
    }
}

/// The image of `journaled(Compound)` after one mount: recovery has written the
/// journals' blocks home, so the home metadata is what a mount reads.
fn run_on_recovered<T: 'static>(f: impl AsyncFnOnce(File) -> T + 'static) -> T {
    Stack::builder()
        .device("nand")
        .image(journaled(CommitMode::Compound))
        .build()
        .unwrap()
        .run(move || async move {
            let file = File::open(IMG).await.unwrap();
            drop(Store::mount(&file, CommitMode::Compound).await.unwrap());
            f(file).await
        })
        .unwrap()
        .value
}

/// A flipped bit in an inode or a directory entry at home (metadata checksums, every
/// store this build makes) is found at mount, which refuses the store and names the
/// record and where it is.
#[test]
fn a_damaged_inode_or_directory_entry_is_refused_naming_it() {
    type Pos = fn(&Geometry) -> (u64, usize);
    let cases: [(&str, Pos, usize); 3] = [
        ("inode 1 ", |g| g.inode_pos(1), 8 * 8 + 3), // a bit of its size
        ("inode 3 ", |g| g.inode_pos(3), 16 * 8),    // a bit of its first block number
        ("directory entry 0 ", |g| g.dirent_pos(0), 6 * 8 + 1), // a bit of its name
    ];
    for (what, pos, bit) in cases {
        let out = run_on_recovered(move |f: File| async move {
            let (b, off) = pos(&Geometry::new(4096));
            let mut v = read_block(&f, b).await;
            v[off + bit / 8] ^= 1 << (bit % 8);
            f.write_at(DmaBuffer::from_slice(&v), b * BLOCK)
                .await
                .0
                .unwrap();
            (
                Store::mount(&f, CommitMode::Compound).await.map(|_| ()),
                b,
                off,
            )
        });
        match out {
            (Err(StoreError::Corrupt(m)), b, off) => assert!(
                m.contains(what)
                    && m.contains(&format!("block {b}, byte {off}"))
                    && m.contains("checksum"),
                "{what}: {m}"
            ),
            (other, ..) => panic!("{what}: mounted or failed otherwise: {other:?}"),
        }
    }
}

/// An image made before metadata checksums (its superblock without the flag, its
/// inodes' checksum bytes zero, as an older build left them) mounts without the check,
/// takes new files, and keeps its format.
#[test]
fn an_image_without_metadata_checksums_mounts_and_keeps_its_format() {
    let out = run_on_recovered(|f: File| async move {
        let g = Geometry {
            metadata_csum: false,
            single_flush: false,
            ..Geometry::new(4096)
        };
        f.write_at(DmaBuffer::from_slice(&g.encode()), 0)
            .await
            .0
            .unwrap();
        let (b, off) = g.inode_pos(1);
        let mut v = read_block(&f, b).await;
        v[off + 4..off + 8].fill(0);
        f.write_at(DmaBuffer::from_slice(&v), b * BLOCK)
            .await
            .0
            .unwrap();
        let s = Store::mount(&f, CommitMode::Compound).await.unwrap();
        let h = s.create("new").unwrap();
        s.write(h, 0, &[7; 5000]).await.unwrap();
        s.sync().await.unwrap();
        let names: Vec<String> = s.list().into_iter().map(|(n, _)| n).collect();
        let sb = Geometry::decode(&read_block(&f, 0).await).unwrap();
        (names, sb.metadata_csum, s.check())
    });
    let (names, csum, check) = out;
    assert!(names.contains(&"f0".to_string()) && names.contains(&"new".to_string()));
    assert!(!csum, "the superblock gained the flag");
    assert_eq!(check, Vec::<String>::new());
}
