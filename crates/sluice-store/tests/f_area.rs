//! The f-area is a circular log: f-transactions go round it as normal commits cover
//! the old ones (a commit is requested once it is half full), and recovery walks it
//! from the tail its superblock names, across the wrap. A critical task appends and
//! fsyncs far more records than a small area holds; the power is cut at seeded
//! instants; every fsync that returned is found after recovery.

use std::cell::Cell;
use std::rc::Rc;

use sluice_runtime::{spawn, CrashSpec, File, IoClass, Stack, TaskCtx};
use sluice_store::{CommitMode, Geometry, Store};

const IMG: &str = "store.img";
const REC: usize = 1000;

fn record(i: usize) -> Vec<u8> {
    vec![(i % 251) as u8 + 1; REC]
}

/// Run the appender on a store with a `fjournal`-block f-area until `crash_at` (ns):
/// the power is cut there; returns the records whose fsync returned, the image, and
/// when the last fsync returned (ns).
fn run(seed: u64, crash_at: u64, fjournal: u64) -> (usize, sluice_runtime::DiskImage, u64) {
    let synced = Rc::new(Cell::new(0usize));
    let seen = synced.clone();
    let last = Rc::new(Cell::new(0u64));
    let at = last.clone();
    let out = Stack::builder()
        .device("nand")
        .seed(seed)
        .build()
        .unwrap()
        .run_until_crash(
            crash_at,
            CrashSpec { seed, torn: true },
            move || async move {
                let f = File::create(IMG).await.unwrap();
                let g = Geometry {
                    fjournal,
                    ..Geometry::new(4096)
                };
                Store::mkfs(&f, g).await.unwrap();
                let s = Store::mount(&f, CommitMode::FileLevel).await.unwrap();
                let log = s.create("log").unwrap();
                // The name is durable with a normal commit.
                s.sync().await.unwrap();
                let other = s.create("other").unwrap();
                let t = spawn(
                    TaskCtx::new("appender").class(IoClass::Critical),
                    async move {
                        for i in 0..300 {
                            s.write_buffered(log, (i * REC) as u64, &record(i))
                                .await
                                .unwrap();
                            s.fsync(log).await.unwrap();
                            seen.set(i + 1);
                            at.set(sluice_runtime::now());
                            // Other metadata changes, so normal transactions have work.
                            if i % 7 == 0 {
                                s.write_buffered(other, (i * 64) as u64, &[1; 64])
                                    .await
                                    .unwrap();
                            }
                        }
                        s.stats()
                    },
                );
                let stats = t.await;
                // 300 f-transactions of 2–3 blocks through a small area: it wrapped.
                assert!(stats.ftxns >= 250, "{stats:?}");
            },
        )
        .unwrap();
    (synced.get(), out.image, last.get())
}

/// The log after recovery (`None`: its name did not survive — created, not synced).
fn recovered_log(image: sluice_runtime::DiskImage) -> Option<Vec<u8>> {
    Stack::builder()
        .device("nand")
        .image(image)
        .build()
        .unwrap()
        .run(|| async {
            let f = File::open(IMG).await.unwrap();
            let s = Store::mount(&f, CommitMode::FileLevel).await.unwrap();
            assert_eq!(s.check(), Vec::<String>::new());
            let log = s.open("log").ok()?;
            let mut v = vec![0u8; s.len(log).unwrap() as usize];
            s.read(log, 0, &mut v).await.unwrap();
            Some(v)
        })
        .unwrap()
        .value
}

#[test]
fn fsynced_records_survive_crashes_across_the_f_area_wrap() {
    // A whole run first: how long it takes, so the crashes fall inside it.
    let (all, image, end) = run(1, u64::MAX, 32);
    assert_eq!(all, 300);
    assert_eq!(recovered_log(image).map(|v| v.len()), Some(300 * REC));
    let mut tested = 0;
    for seed in 0..40u64 {
        // Crash instants spread over the whole run: the area wraps about every 15
        // records, 20 times in all.
        let at = end * (seed + 1) / 41;
        let (synced, image, _) = run(seed, at, 32);
        let Some(v) = recovered_log(image) else {
            assert_eq!(synced, 0, "seed {seed}: the log's name was lost");
            continue;
        };
        tested += usize::from(synced > 0);
        assert!(
            v.len() >= synced * REC,
            "seed {seed}: {synced} records fsynced, {} bytes recovered",
            v.len()
        );
        for i in 0..synced {
            assert_eq!(
                v[i * REC..(i + 1) * REC],
                record(i)[..],
                "seed {seed}: record {i}"
            );
        }
    }
    assert!(tested >= 30, "only {tested} crashes after some fsync");
}
