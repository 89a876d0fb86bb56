//! File::remove, File::rename, File::set_len and StackBuilder::allow_write_existing, in
//! simulation (with and without the page cache) and on real files.

use crate::common;
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

/// In simulation, creating an existing name truncates it as `set_len(0)` does: its
/// old bytes (on the device and dirty in the cache) never show again.
#[test]
fn create_over_an_existing_name_truncates_in_simulation() {
    for cache in [false, true] {
        let mut b = Stack::builder().device("ull");
        if cache {
            b = b.cache(CacheConfig::default());
        }
        b.build()
            .unwrap()
            .run(move || async move {
                let a = File::create("a").await.unwrap();
                a.write_at(DmaBuffer::from_slice(&[7u8; 8192]), 0)
                    .await
                    .0
                    .unwrap();
                if cache {
                    // Dirty in the cache at the time of the second create.
                    a.write_buffered(8192, &[9u8; 8192]).await.unwrap();
                }
                let again = File::create("a").await.unwrap();
                assert_eq!(again, a);
                assert_eq!(a.len(), 0);
                a.set_len(16_384).await.unwrap();
                let v = read_all(&a).await;
                assert_eq!(v.len(), 16_384);
                assert!(v.iter().all(|&b| b == 0), "old bytes after a second create");
            })
            .unwrap();
    }
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

/// `preallocate` grows a file to written zero blocks on real files (so the host file
/// system has nothing left to allocate: no hole in the range), sets the length in
/// simulation, keeps what the file held, and refuses a file the stack did not create.
#[test]
fn preallocate_writes_blocks_on_real_files_and_sets_the_length_in_simulation() {
    async fn grow() -> Vec<u8> {
        let f = File::create("p").await.unwrap();
        f.write_at(DmaBuffer::from_slice(&[5u8; 4096]), 0)
            .await
            .0
            .unwrap();
        f.preallocate(3 << 20 | 100).await.unwrap();
        assert_eq!(f.len(), 3 << 20 | 100);
        // Not shorter: nothing changes.
        f.preallocate(10).await.unwrap();
        assert_eq!(f.len(), 3 << 20 | 100);
        read_all(&f).await
    }
    let check = |v: Vec<u8>| {
        assert_eq!(v.len(), 3 << 20 | 100);
        assert!(v[..4096].iter().all(|&b| b == 5) && v[4096..].iter().all(|&b| b == 0));
    };
    let sim = Stack::builder().device("ull").build().unwrap();
    check(sim.run(grow).unwrap().value);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("theirs"), b"not ours").unwrap();
    let r = Stack::builder()
        .directory(dir.path())
        .cores(1)
        .build()
        .and_then(|s| {
            s.run(|| async {
                let t = File::open("theirs").await.unwrap();
                assert!(t.preallocate(1 << 20).await.is_err());
                grow().await
            })
        });
    let v = match r {
        Ok(out) => out.value,
        Err(e) if skip(&e) => return,
        Err(e) => panic!("{e}"),
    };
    check(v);
    // Every block of the range is on disk (allocated), not a hole.
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(dir.path().join("p")).unwrap();
    assert!(
        m.blocks() * 512 >= 3 << 20,
        "{} bytes allocated",
        m.blocks() * 512
    );
    assert_eq!(
        std::fs::read(dir.path().join("theirs")).unwrap(),
        b"not ours"
    );
}
