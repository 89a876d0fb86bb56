//! The store's reads: blocks home and consecutive on the device go in one request
//! (buffered blocks are copied, and split a run), through the runtime's read path, so
//! AIOS's read path shortens them in simulation as it does the page cache's misses.

use crate::common;

use sluice_runtime::{now, spawn, File, ReadPath, Stack, TaskCtx};
use sluice_store::{CommitMode, Geometry, Store};

/// Write a 64 KiB file home, optionally dirty its block 5 again, then read the file
/// whole from a task of flow "reader": (device reads it issued, bytes, its latency).
fn read_whole(path: ReadPath, dirty_middle: bool) -> (u64, Vec<u8>, u64) {
    let out = Stack::builder()
        .device("ull")
        .read_path(path)
        .build()
        .unwrap()
        .run(move || async move {
            let img = File::create("store.img").await.unwrap();
            Store::mkfs(&img, Geometry::new(4096)).await.unwrap();
            let s = Store::mount(&img, CommitMode::Compound).await.unwrap();
            let f = s.create("a").unwrap();
            let data: Vec<u8> = (0..64 << 10).map(|i| (i / 4096) as u8).collect();
            s.write_buffered(f, 0, &data).await.unwrap();
            s.fsync(f).await.unwrap();
            if dirty_middle {
                s.write_buffered(f, 5 * 4096, &[0xEE; 4096]).await.unwrap();
            }
            let reader = spawn(TaskCtx::new("reader").flow("reader"), async move {
                let mut out = vec![0u8; 64 << 10];
                let t0 = now();
                assert_eq!(s.read(f, 0, &mut out).await.unwrap(), 64 << 10);
                (out, now() - t0)
            });
            reader.await
        })
        .unwrap();
    let reads = common::reads_of(&out.report, "reader");
    let (bytes, latency) = out.value;
    (reads, bytes, latency)
}

#[test]
fn a_whole_file_read_is_one_request_and_a_buffered_block_splits_it() {
    let (reads, bytes, _) = read_whole(ReadPath::Vanilla, false);
    assert_eq!(reads, 1, "16 blocks home and consecutive: one request");
    for (i, b) in bytes.chunks(4096).enumerate() {
        assert!(b.iter().all(|&x| x == i as u8), "block {i}");
    }
    let (reads, bytes, _) = read_whole(ReadPath::Vanilla, true);
    assert_eq!(reads, 2, "blocks 0–4 and 6–15 around the buffered block 5");
    for (i, b) in bytes.chunks(4096).enumerate() {
        let want = if i == 5 { 0xEE } else { i as u8 };
        assert!(b.iter().all(|&x| x == want), "block {i}");
    }
}

#[test]
fn aios_read_path_shortens_the_store_s_reads() {
    let (_, a, vanilla) = read_whole(ReadPath::Vanilla, false);
    let (_, b, aios) = read_whole(ReadPath::Aios, false);
    assert_eq!(a, b);
    // 16 pages: vanilla allocates, indexes and maps them before the request and
    // unmaps them after it; AIOS does that work while the device reads.
    assert!(aios < vanilla, "AIOS {aios} ns vs vanilla {vanilla} ns");
}
