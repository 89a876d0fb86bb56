//! The file API: one program on the stack's own files and on the store, by one setting.

use sluice_runtime::{set_class, CacheConfig, CrashSpec, DmaBuffer, IoClass, Stack};
use sluice_store::{CommitMode, Fs, FsConfig, FsyncPath};

/// Every call of the API; returns what the program sees.
async fn program(fs: Fs) -> Vec<(String, Vec<u8>)> {
    let a = fs.create("a").await.unwrap();
    let (r, _) = a.write_at(DmaBuffer::from_slice(&[1u8; 8192]), 0).await;
    assert_eq!(r.unwrap(), 8192);
    a.write_buffered(8192, &[2u8; 1000]).await.unwrap();
    a.fdatasync().await.unwrap();
    a.set_len(6000).await.unwrap();
    a.set_len(7000).await.unwrap();
    a.fsync().await.unwrap();
    let mut seen = Vec::new();
    // Read directly, by a multiple of 512 bytes (short at the end).
    let (r, buf) = a.read_at(DmaBuffer::new(7168), 0).await;
    let n = r.unwrap();
    seen.push(("a before".to_string(), buf[..n].to_vec()));
    let b = fs.create("b").await.unwrap();
    b.write_buffered(0, b"hello").await.unwrap();
    fs.rename("b", "c").await.unwrap();
    assert!(fs.open("b").await.is_err());
    fs.rename("c", "a").await.unwrap();
    let d = fs.create("d").await.unwrap();
    d.write_buffered(0, &[3u8; 512]).await.unwrap();
    fs.unlink("d").await.unwrap();
    assert!(fs.open("d").await.is_err());
    fs.sync().await.unwrap();
    // `b`'s file under the name `a` (the store's handle of the replaced file is gone
    // with it; the runtime's would still read it).
    let f = fs.open("a").await.unwrap();
    let mut v = vec![0u8; f.len() as usize];
    f.read_buffered(0, &mut v).await.unwrap();
    seen.push(("a".into(), v));
    seen
}

#[test]
fn one_program_on_host_files_and_on_the_store() {
    let configs = [
        FsConfig::Host,
        FsConfig::store(CommitMode::Compound),
        FsConfig::store(CommitMode::FileLevel).with_fsync_path(FsyncPath::Async),
    ];
    let mut results = Vec::new();
    for cfg in configs {
        let cache = cfg == FsConfig::Host;
        let mut b = Stack::builder().device("ull");
        if cache {
            b = b.cache(CacheConfig::default());
        }
        let seen = b
            .build()
            .unwrap()
            .run(move || async move { program(Fs::mount(&cfg).await.unwrap()).await })
            .unwrap()
            .value;
        results.push(seen);
    }
    let mut old_a = vec![1u8; 6000];
    old_a.resize(7000, 0);
    assert!(results[0][0] == ("a before".into(), old_a), "the host run");
    assert_eq!(results[0][1], ("a".into(), b"hello".to_vec()));
    assert!(
        results[1] == results[0],
        "compound differs from the host run"
    );
    assert!(
        results[2] == results[0],
        "fjournal differs from the host run"
    );
}

#[test]
fn settings_read_and_print_alike() {
    for s in [
        "host",
        "compound",
        "fjournal",
        "compound+async",
        "fjournal+async",
        "compound+rcp",
        "fjournal+async+rcp",
        "fjournal+inline",
        "fjournal+async+inline+rcp",
    ] {
        assert_eq!(s.parse::<FsConfig>().unwrap().to_string(), s);
    }
    // Inline data is fjournal's (only f-transactions log it), after +async.
    let e = "compound+inline".parse::<FsConfig>().unwrap_err();
    assert!(e.contains("fjournal+inline"), "{e}");
    assert!("host+inline".parse::<FsConfig>().is_err());
    assert!("fjournal+inline+async".parse::<FsConfig>().is_err());
    assert!("host+async".parse::<FsConfig>().is_err());
    assert!("host+rcp".parse::<FsConfig>().is_err());
    assert!("fjournal+rcp+async".parse::<FsConfig>().is_err());
    assert!("ext4".parse::<FsConfig>().is_err());
}

/// `+rcp` reaches the mounted store: a background task buffering 8 MiB is held to its
/// class's limit (it pauses while the flusher writes the buffer home) only with it.
#[test]
fn rcp_limits_are_one_setting() {
    for (name, held) in [("compound", false), ("compound+rcp", true)] {
        let cfg: FsConfig = name.parse().unwrap();
        let stats = Stack::builder()
            .device("nand")
            .build()
            .unwrap()
            .run(move || async move {
                let fs = Fs::mount(&cfg).await.unwrap();
                let f = fs.create("bulk").await.unwrap();
                for k in 0..32u64 {
                    f.write_buffered(k << 18, &[3u8; 1 << 18]).await.unwrap();
                }
                fs.store().unwrap().stats()
            })
            .unwrap()
            .value;
        assert_eq!(stats.throttled > 0, held, "{name}: {stats:?}");
        assert_eq!(stats.data_by_flusher > 0, held, "{name}: {stats:?}");
    }
}

#[test]
fn a_store_is_made_once_and_recovered_after() {
    let cfg = FsConfig::store(CommitMode::FileLevel);
    let c = cfg.clone();
    let image = Stack::builder()
        .device("nand")
        .build()
        .unwrap()
        .run_until_crash(
            u64::MAX,
            CrashSpec {
                seed: 3,
                torn: true,
            },
            move || async move {
                let fs = Fs::mount(&c).await.unwrap();
                let f = fs.create("kept").await.unwrap();
                fs.sync().await.unwrap();
                // A critical task's fsync is an f-transaction (FastResponse §3.4).
                set_class(IoClass::Critical);
                f.write_buffered(0, &[9u8; 5000]).await.unwrap();
                f.fsync().await.unwrap();
                // Not synced: may or may not survive.
                f.write_buffered(5000, &[8u8; 100]).await.unwrap();
            },
        )
        .unwrap()
        .image;
    let v = Stack::builder()
        .device("nand")
        .image(image)
        .build()
        .unwrap()
        .run(move || async move {
            let fs = Fs::mount(&cfg).await.unwrap();
            assert!(fs.store().unwrap().stats().fredone >= 1);
            let f = fs.open("kept").await.unwrap();
            let mut v = vec![0u8; f.len() as usize];
            f.read_buffered(0, &mut v).await.unwrap();
            v
        })
        .unwrap()
        .value;
    assert!(v.len() == 5000 || v.len() == 5100, "{}", v.len());
    assert!(v[..5000].iter().all(|&b| b == 9));
}
