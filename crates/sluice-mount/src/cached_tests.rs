//! The buffered path on a real stack of two cores with a page cache, without FUSE:
//! tasks on both cores sharing pages, coherence with the direct path, truncation of
//! cached pages, fsync's length.

use sluice_runtime::{spawn_on, TaskCtx};

use super::{fsync, read, set_len, write};
use crate::data::tests::with_file_cache;
use crate::data::DataFile;

async fn direct_read(df: &DataFile, off: u64, size: u32) -> Vec<u8> {
    let (b, r) = crate::data::read(df, off, size).await.unwrap();
    b[r].to_vec()
}

#[test]
fn tasks_on_two_cores_share_cached_pages_and_fsync_writes_them_back() {
    const TASKS: u64 = 8;
    const ROUNDS: u64 = 50;
    let data = with_file_cache(256, |df| async move {
        let hs: Vec<_> = (0..TASKS)
            .map(|t| {
                let df = df.clone();
                spawn_on(
                    TaskCtx::new(format!("w{t}")).core((t % 2) as u16),
                    move || {
                        async move {
                            for round in 0..ROUNDS {
                                // Two pages, each task its own 300 bytes of each.
                                for p in 0..2u64 {
                                    let at = p * 4096 + t * 300 + 11;
                                    if round > 0 {
                                        let got = read(&df, at, 300).await.unwrap();
                                        let last = (t * 7 + round - 1 + p) as u8;
                                        assert!(
                                            got.len() == 300 && got.iter().all(|&x| x == last),
                                            "task {t}, page {p}, round {round}: bytes lost"
                                        );
                                    }
                                    let d = vec![(t * 7 + round + p) as u8; 300];
                                    write(&df, at, &d, false).await.unwrap();
                                }
                            }
                        }
                    },
                )
            })
            .collect();
        for h in hs {
            h.await;
        }
        fsync(&df, false).await.unwrap();
        let st = sluice_runtime::cache_stats().expect("a cache");
        assert!(st.hits > 0, "reads were served by the cache: {st:?}");
        assert!(st.writebacks > 0, "fsync wrote pages back: {st:?}");
    });
    // The last byte written: page 1, task 7's slice end; the backing file cut back to it.
    let end = 4096 + (TASKS - 1) * 300 + 11 + 300;
    assert_eq!(
        data.len() as u64,
        end,
        "fsync left the backing file at the file's length"
    );
    for t in 0..TASKS {
        for p in 0..2u64 {
            let at = (p * 4096 + t * 300 + 11) as usize;
            let want = (t * 7 + ROUNDS - 1 + p) as u8;
            assert!(
                data[at..at + 300].iter().all(|&x| x == want),
                "task {t}, page {p}"
            );
        }
    }
}

#[test]
fn buffered_and_direct_openers_see_each_others_data() {
    let data = with_file_cache(64, |df| async move {
        write(&df, 100, b"buffered", false).await.unwrap();
        // A direct read writes the range's dirty pages back first.
        assert_eq!(direct_read(&df, 100, 8).await, b"buffered");
        // Cached now (clean); a direct write drops it, and a buffered read sees the
        // new bytes.
        assert_eq!(read(&df, 100, 8).await.unwrap(), b"buffered");
        let (r, _) = crate::data::tests::direct_write(&df, 100, b"DIRECT!!").await;
        r.unwrap();
        assert_eq!(read(&df, 96, 16).await.unwrap(), b"\0\0\0\0DIRECT!!");
        // A buffered write over it again, then a direct read-modify-write of the page.
        write(&df, 104, b"xy", false).await.unwrap();
        crate::data::tests::direct_write(&df, 0, b"head")
            .await
            .0
            .unwrap();
        assert_eq!(direct_read(&df, 0, 108).await[100..], *b"DIRExy!!");
        assert_eq!(read(&df, 0, 4).await.unwrap(), b"head");
    });
    assert_eq!(&data[..4], b"head");
    assert_eq!(&data[100..108], b"DIRExy!!");
    assert_eq!(data.len(), 108);
}

#[test]
fn truncation_drops_cached_pages_past_the_end_and_growth_reads_zeros() {
    let data = with_file_cache(64, |df| async move {
        write(&df, 0, &[9u8; 10_000], false).await.unwrap();
        set_len(&df, 5000).await.unwrap();
        df.set_size(5000);
        assert_eq!(read(&df, 0, 20_000).await.unwrap().len(), 5000);
        // Growing again: what was cut reads as zeros, in the cache and on the file.
        write(&df, 8000, b"z", false).await.unwrap();
        let got = read(&df, 4990, 4000).await.unwrap();
        assert_eq!(got.len(), 3011);
        assert!(got[..10].iter().all(|&x| x == 9));
        assert!(
            got[10..3010].iter().all(|&x| x == 0),
            "bytes past a truncation"
        );
        assert_eq!(got[3010], b'z');
        fsync(&df, true).await.unwrap();
    });
    assert_eq!(data.len(), 8001);
    assert!(data[..5000].iter().all(|&x| x == 9));
    assert!(data[5000..8000].iter().all(|&x| x == 0));
}
