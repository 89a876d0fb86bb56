//! File::remove, File::rename, File::set_len and StackBuilder::allow_write_existing, in
//! simulation (with and without the page cache) and on real files.

mod common;
use common::skip;

use sluice_runtime::{CacheConfig, CrashSpec, DmaBuffer, File, Stack};

async fn read_all(f: &File) -> Vec<u8> {
    let n = (f.len() as usize).div_ceil(512) * 512;
    let (r, buf) = f.read_at(DmaBuffer::new(n.max(512)), 0).await;
    let n = r.unwrap();
    buf[..n].to_vec()
}

/// What both worlds must do.
async fn names_and_lengths(buffered: bool) {
    let a = File::create("a").await.unwrap();
    if buffered {
        a.write_buffered(0, &[7u8; 8192]).await.unwrap();
    } else {
        a.write_at(DmaBuffer::from_slice(&[7u8; 8192]), 0)
            .await
            .0
            .unwrap();
    }
    a.set_len(5000).await.unwrap();
    assert_eq!(a.len(), 5000);
    a.set_len(10_000).await.unwrap();
    let v = read_all(&a).await;
    assert_eq!(v.len(), 10_000);
    assert!(v[..5000].iter().all(|&b| b == 7) && v[5000..].iter().all(|&b| b == 0));
    File::rename("a", "b").await.unwrap();
    assert_eq!(a.name(), "b");
    assert!(File::open("a").await.is_err());
    assert_eq!(File::open("b").await.unwrap(), a);
    let c = File::create("c").await.unwrap();
    File::rename("b", "c").await.unwrap();
    assert_eq!(File::open("c").await.unwrap(), a);
    File::remove("c").await.unwrap();
    assert!(File::open("c").await.is_err());
    // Handles outlive their names.
    assert_eq!(read_all(&a).await.len(), 10_000);
    assert!(c.is_empty());
}

#[test]
fn names_and_lengths_in_simulation() {
    for cache in [false, true] {
        let mut b = Stack::builder().device("ull");
        if cache {
            b = b.cache(CacheConfig::default());
        }
        b.build()
            .unwrap()
            .run(move || async move { names_and_lengths(cache).await })
            .unwrap();
    }
    // A removed file is no longer in a crash image; a renamed one is, by its new name.
    let out = Stack::builder()
        .device("nand")
        .build()
        .unwrap()
        .run_until_crash(
            u64::MAX,
            CrashSpec {
                seed: 1,
                torn: false,
            },
            || async {
                File::create("x").await.unwrap();
                File::create("y").await.unwrap();
                File::rename("y", "z").await.unwrap();
                File::remove("x").await.unwrap();
            },
        )
        .unwrap();
    let names: Vec<&str> = out.image.files().map(|f| f.0).collect();
    assert_eq!(names, ["z"]);
}

#[test]
fn names_and_lengths_on_real_files() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("theirs"), b"not ours").unwrap();
    let r = Stack::builder()
        .directory(dir.path())
        .cores(1)
        .build()
        .and_then(|s| {
            s.run(|| async {
                names_and_lengths(false).await;
                // Never a file the stack did not create.
                let t = File::open("theirs").await.unwrap();
                assert!(t.set_len(0).await.is_err());
                assert!(File::remove("theirs").await.is_err());
                File::create("mine").await.unwrap();
                assert!(File::rename("mine", "theirs").await.is_err());
                assert!(File::rename("theirs", "other").await.is_err());
            })
        });
    match r {
        Ok(_) => {}
        Err(e) if skip(&e) => return,
        Err(e) => panic!("{e}"),
    }
    let mut on_disk: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    on_disk.sort();
    assert_eq!(on_disk, ["mine", "theirs"]);
    assert_eq!(
        std::fs::read(dir.path().join("theirs")).unwrap(),
        b"not ours"
    );
    // Told to, the stack writes a file it did not create (a store a previous run left).
    let r = Stack::builder()
        .directory(dir.path())
        .cores(1)
        .allow_write_existing(true)
        .build()
        .and_then(|s| {
            s.run(|| async {
                let m = File::open("mine").await.unwrap();
                let (r, _) = m.write_at(DmaBuffer::from_slice(&[1u8; 4096]), 0).await;
                r.unwrap();
                m.fsync().await.unwrap();
            })
        });
    match r {
        Ok(_) => {}
        Err(e) if skip(&e) => return,
        Err(e) => panic!("{e}"),
    }
    assert_eq!(std::fs::read(dir.path().join("mine")).unwrap(), [1u8; 4096]);
}
