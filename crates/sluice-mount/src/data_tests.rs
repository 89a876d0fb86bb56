//! The data path on a real stack, without FUSE: unaligned writes from many tasks on
//! several cores into the same blocks, and writes past the end.

use std::os::unix::fs::OpenOptionsExt;
use std::sync::{Arc, Mutex};

use sluice_runtime::{spawn_on, File, Stack, TaskCtx};

use super::{read, write, DataFile};

fn with_file<F, Fut>(body: F) -> Vec<u8>
where
    F: FnOnce(Arc<DataFile>) -> Fut + 'static,
    Fut: std::future::Future<Output = ()> + 'static,
{
    with_file_cache(0, body)
}

/// A real stack on two cores (with a page cache of `cache_pages` pages, none at 0) and
/// a data file on it; returns the backing file's bytes after the run.
pub(crate) fn with_file_cache<F, Fut>(cache_pages: usize, body: F) -> Vec<u8>
where
    F: FnOnce(Arc<DataFile>) -> Fut + 'static,
    Fut: std::future::Future<Output = ()> + 'static,
{
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t");
    let open = || {
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .custom_flags(libc::O_DIRECT)
            .open(&path)
            .unwrap()
    };
    let (fd, dup) = (open(), open());
    let mut b = Stack::builder().directory(dir.path()).cores(2);
    if cache_pages > 0 {
        b = b.cache(sluice_runtime::CacheConfig {
            pages: cache_pages,
            ..Default::default()
        });
    }
    b.build()
        .unwrap()
        .run(move || async move {
            let file = File::adopt("t", fd).unwrap();
            let df = Arc::new(DataFile {
                file,
                fd: dup.into(),
                size: Mutex::new(0),
                locks: super::range_locks(),
                writable: true,
                cache: cache_pages > 0,
                closed: Arc::default(),
                holes: Default::default(),
            });
            body(df).await;
        })
        .unwrap();
    std::fs::read(&path).unwrap()
}

#[test]
fn overlapping_read_modify_writes_lose_no_bytes() {
    const THREADS: u64 = 8;
    const BLOCKS: u64 = 2;
    const ROUNDS: u64 = 100;
    let data = with_file(|df| async move {
        // The end beyond the blocks written, so every write is a plain read-modify-
        // write (not one that moves the end, which holds the whole tail).
        write(&df, BLOCKS * 4096, b"end", false).await.unwrap();
        let hs: Vec<_> = (0..THREADS)
            .map(|t| {
                let df = df.clone();
                spawn_on(
                    TaskCtx::new(format!("w{t}")).core((t % 2) as u16),
                    move || async move {
                        for round in 0..ROUNDS {
                            for b in 0..BLOCKS {
                                let at = b * 4096 + t * 500 + 7;
                                if round > 0 {
                                    // Nobody else writes these bytes: they must still be
                                    // what this task wrote last.
                                    let (buf, r) = read(&df, at, 100).await.unwrap();
                                    let got = &buf[r];
                                    let last = (t * 31 + round - 1 + b) as u8;
                                    assert!(
                                        got.len() == 100 && got.iter().all(|&x| x == last),
                                        "task {t}, block {b}, round {round}: bytes lost to \
                                     another task's read-modify-write"
                                    );
                                }
                                let d = vec![(t * 31 + round + b) as u8; 100];
                                write(&df, at, &d, false).await.unwrap();
                            }
                        }
                    },
                )
            })
            .collect();
        for h in hs {
            h.await;
        }
    });
    assert_eq!(data.len() as u64, BLOCKS * 4096 + 3);
    for t in 0..THREADS {
        for b in 0..BLOCKS {
            let at = (b * 4096 + t * 500 + 7) as usize;
            let want = (t * 31 + ROUNDS - 1 + b) as u8;
            assert!(
                data[at..at + 100].iter().all(|&x| x == want),
                "task {t}, block {b}: bytes lost to another task's read-modify-write"
            );
        }
    }
}

#[test]
fn writes_past_the_end_leave_the_exact_length_and_reads_stop_there() {
    let data = with_file(|df| async move {
        write(&df, 10, b"hello", false).await.unwrap();
        write(&df, 5000, b"x", false).await.unwrap();
        let bytes = |(b, r): (sluice_runtime::DmaBuffer, std::ops::Range<usize>)| b[r].to_vec();
        assert_eq!(bytes(read(&df, 0, 100_000).await.unwrap()).len(), 5001);
        assert_eq!(bytes(read(&df, 4999, 10).await.unwrap()), b"\0x");
        assert!(bytes(read(&df, 5001, 10).await.unwrap()).is_empty());
        write(&df, 0, &[7u8; 4096], false).await.unwrap();
    });
    assert_eq!(data.len(), 5001);
    assert_eq!(&data[..4096], &[7u8; 4096][..]);
    assert_eq!(data[5000], b'x');
}

/// RCP's inheritance through the data path's range locks (FAST '17 §4.2), on the
/// simulator (deterministic: simulated time, no wall clock). A background caller's
/// partial write holds block 0 while its read-modify-write's read sits in the block
/// layer behind a bulk writer's backlog (`rcp`: one non-critical request at the
/// device); a critical caller's write into the same block then waits for the range.
/// Returns the report and how many bulk writes completed while the critical write was
/// under way.
fn critical_write_behind_a_background_rmw(
    inherit: sluice_runtime::Inherit,
) -> (sluice_metrics::RunReport, u64) {
    use std::cell::Cell;
    use std::rc::Rc;

    use sluice_runtime::{now, sleep, spawn, DmaBuffer, IoOptions, Op};

    const MS: u64 = 1_000_000;
    // The descriptor a data file keeps for ftruncate and errnos: not used by a write
    // inside the file that succeeds.
    let spare = tempfile::tempfile().unwrap();
    let out = Stack::builder()
        .device("ull")
        .policy("rcp")
        .inherit(inherit)
        .build()
        .unwrap()
        .run(move || async move {
            let file = sluice_runtime::File::create("data").await.unwrap();
            let df = Arc::new(DataFile {
                file,
                fd: spare.into(),
                size: Mutex::new(2 * 4096),
                locks: super::range_locks(),
                writable: true,
                cache: false,
                closed: Arc::default(),
                holes: Default::default(),
            });
            let bulk_done = Rc::new(Cell::new(0u64));
            let done = bulk_done.clone();
            let bulk = spawn(
                TaskCtx::new("bulk").class(sluice_core::IoClass::Idle),
                async move {
                    let f = sluice_runtime::File::create("bulk").await.unwrap();
                    let mut hs = std::collections::VecDeque::new();
                    let mut off = 0u64;
                    while now() < 20 * MS {
                        while hs.len() < 32 {
                            hs.push_back(f.submit(
                                Op::Write,
                                DmaBuffer::new(128 << 10),
                                off,
                                IoOptions::new(),
                            ));
                            off = (off + (128 << 10)) % (1 << 30);
                        }
                        hs.pop_front().unwrap().await.0.unwrap();
                        done.set(done.get() + 1);
                    }
                    for h in hs {
                        h.await.0.unwrap();
                    }
                },
            );
            let d = df.clone();
            let holder = spawn(TaskCtx::new("background"), async move {
                sleep(2 * MS).await;
                assert_eq!(write(&d, 100, &[1u8; 10], false).await, Ok(10));
            });
            let d = df.clone();
            let crit = spawn(TaskCtx::new("critical").critical(), async move {
                // The background write holds block 0 (its read queued in the block layer)
                // before it asks. (Looked at every 50 µs of simulated time: a yield
                // alone would not let the time pass.)
                while d.locks.held() == 0 {
                    sleep(50_000).await;
                }
                let before = bulk_done.get();
                assert_eq!(write(&d, 200, &[2u8; 10], false).await, Ok(10));
                bulk_done.get() - before
            });
            let bulk_during = crit.await;
            holder.await;
            bulk.await;
            // Both writes' bytes are in the block.
            let (b, r) = read(&df, 0, 4096).await.unwrap();
            let block = &b[r];
            assert_eq!(
                (block[100..110].to_vec(), block[200..210].to_vec()),
                (vec![1; 10], vec![2; 10])
            );
            bulk_during
        })
        .unwrap();
    (out.report, out.value)
}

#[test]
fn a_critical_write_behind_a_background_rmw_promotes_it() {
    let (on, bulk_on) = critical_write_behind_a_background_rmw(sluice_runtime::Inherit::ON);
    let (off, bulk_off) = critical_write_behind_a_background_rmw(sluice_runtime::Inherit::OFF);
    let rt = on.extra.runtime.as_ref().unwrap();
    // The holder was boosted once and its queued read promoted; the boost ended when it
    // released the block.
    assert_eq!(rt.boosts, 1, "{rt:?}");
    assert!(rt.inherited_promotions >= 1, "{rt:?}");
    assert_eq!(rt.boosts, rt.boost_ends);
    // … in the block layer, where the policy had queued it behind the bulk writes.
    assert!(on.extra.block.promoted_queued >= 1, "{:?}", on.extra.block);
    eprintln!("bulk writes during the critical write: {bulk_on} with, {bulk_off} without");
    let rt_off = off.extra.runtime.as_ref().unwrap();
    assert_eq!((rt_off.boosts, rt_off.inherited_promotions), (0, 0));
    // The order: with inheritance the critical write finishes after at most a couple of
    // bulk writes (the one at the device); without it, after the backlog ahead of the
    // holder's read.
    assert!(
        bulk_on <= 2,
        "with inheritance {bulk_on} bulk writes went first"
    );
    assert!(
        bulk_off >= 10,
        "without inheritance only {bulk_off} bulk writes went first"
    );
}

/// The direct path's write (for the buffered path's tests of coherence).
pub(crate) async fn direct_write(
    df: &DataFile,
    off: u64,
    data: &[u8],
) -> (Result<usize, fuser::Errno>, ()) {
    (write(df, off, data, false).await, ())
}

/// A write's bytes go into its blocks' buffer once; the read-modify-write fills only
/// the bytes around them: a write inside one block, one with partial first and last
/// blocks, and whole blocks each keep every byte they do not cover.
#[test]
fn partial_writes_keep_the_bytes_around_them() {
    let data = with_file(|df| async move {
        write(&df, 0, &[0xaa; 3 * 4096], false).await.unwrap();
        // Inside block 0: bytes before and after it in the same block stay.
        write(&df, 100, &[1; 50], false).await.unwrap();
        // Blocks 1 and 2, partial at both ends.
        write(&df, 4096 + 1000, &[2; 5000], false).await.unwrap();
        // A whole block (no read-modify-write).
        write(&df, 3 * 4096, &[3; 4096], false).await.unwrap();
        // From the start of block 0, ending inside it.
        write(&df, 0, &[4; 10], false).await.unwrap();
    });
    let mut want = vec![0xaau8; 4 * 4096];
    want[100..150].fill(1);
    want[4096 + 1000..4096 + 6000].fill(2);
    want[3 * 4096..].fill(3);
    want[..10].fill(4);
    assert_eq!(data.len(), want.len());
    let first_bad = data.iter().zip(&want).position(|(a, b)| a != b);
    assert_eq!(first_bad, None, "a byte the writes did not cover changed");
}
