//! A crash at a seeded instant keeps exactly what was flushed: every write that
//! completed before a FLUSH was submitted (and that FLUSH completed) or that was
//! written with FUA reads back whole after the crash; every other write survives,
//! is lost or is torn — whole 512-byte sectors of it, never anything else.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;

use sluice_runtime::{spawn, CrashSpec, DmaBuffer, File, IoOptions, Stack, TaskCtx};

const TASKS: u64 = 4;
const WRITES: u64 = 48;
const BLOCK: usize = 4096;

fn pattern(block: u64) -> Vec<u8> {
    crate::common::sector_pattern(block, BLOCK)
}

#[derive(Default)]
struct Log {
    /// Blocks whose write completed.
    completed: Vec<u64>,
    /// Blocks that must survive (covered by a completed flush, or FUA).
    durable: BTreeSet<u64>,
}

/// Every task writes its own blocks (one write per block), a flush every 6 writes,
/// every 10th write with FUA.
async fn workload(log: Rc<RefCell<Log>>) {
    let f = File::create("data").await.unwrap();
    let mut hs = Vec::new();
    for t in 0..TASKS {
        let log = log.clone();
        hs.push(spawn(TaskCtx::new(format!("w{t}")), async move {
            for i in 0..WRITES {
                let block = t * WRITES + i;
                let fua = i % 10 == 9;
                let (r, _) = f
                    .write_at_with(
                        DmaBuffer::from_slice(&pattern(block)),
                        block * BLOCK as u64,
                        IoOptions::new().fua(fua),
                    )
                    .await;
                r.unwrap();
                {
                    let mut l = log.borrow_mut();
                    l.completed.push(block);
                    if fua {
                        l.durable.insert(block);
                    }
                }
                if i % 6 == 5 {
                    let covered = log.borrow().completed.clone();
                    f.fsync().await.unwrap();
                    log.borrow_mut().durable.extend(covered);
                }
            }
        }));
    }
    for h in hs {
        h.await;
    }
}

fn builder(seed: u64) -> sluice_runtime::StackBuilder {
    Stack::builder().device("nand").seed(seed)
}

fn stack(seed: u64) -> Stack {
    builder(seed).build().unwrap()
}

#[test]
fn a_crash_keeps_exactly_what_was_flushed() {
    // The whole run's length, to place the crashes inside it.
    let full = stack(1)
        .run_until_crash(
            u64::MAX,
            CrashSpec {
                seed: 0,
                torn: true,
            },
            || workload(Rc::new(RefCell::new(Log::default()))),
        )
        .unwrap();
    assert!(full.value.is_some());
    let length = full.at_ns;
    let (mut checked, mut lost_or_torn, mut survived) = (0, 0, 0);
    for seed in 0..60u64 {
        let at = length * (seed % 20 + 1) / 21;
        let log = Rc::new(RefCell::new(Log::default()));
        let l2 = log.clone();
        let spec = CrashSpec {
            seed,
            torn: seed % 2 == 0,
        };
        let out = stack(seed)
            .run_until_crash(at, spec, move || workload(l2))
            .unwrap();
        lost_or_torn += out.crash.lost + out.crash.torn;
        survived += out.crash.survived;
        let log = log.borrow();
        // Recover: a new stack on the image reads every block back.
        let image = out.image.clone();
        let blocks = crate::common::read_back(builder(seed), image, TASKS * WRITES, BLOCK);
        for (b, data) in blocks {
            let want = pattern(b);
            if log.durable.contains(&b) {
                assert_eq!(data, want, "seed {seed}: flushed block {b} lost");
                checked += 1;
            } else {
                for (s, (got, w)) in data.chunks(512).zip(want.chunks(512)).enumerate() {
                    assert!(
                        got == w || got.iter().all(|&x| x == 0),
                        "seed {seed}: block {b} sector {s} is neither its write nor zeros"
                    );
                }
            }
        }
    }
    assert!(checked > 500, "flushed blocks checked: {checked}");
    assert!(lost_or_torn > 0 && survived > 0, "the seed chose both ways");
}

#[test]
fn crash_images_are_deterministic() {
    let run = || {
        let out = stack(9)
            .run_until_crash(
                300_000,
                CrashSpec {
                    seed: 4,
                    torn: true,
                },
                || workload(Rc::new(RefCell::new(Log::default()))),
            )
            .unwrap();
        let mut buf = vec![0u8; (TASKS * WRITES) as usize * BLOCK];
        out.image.read("data", 0, &mut buf).unwrap();
        (out.at_ns, out.crash, buf)
    };
    assert!(run() == run());
}

/// A device without a volatile write cache (`ull`: no write buffer) gets no FLUSH:
/// `fsync` ends at once, as Linux ends an empty flush on a queue without a write
/// cache; one with a volatile cache (`nand`) gets it, and it takes device time.
#[test]
fn fsync_sends_a_flush_only_to_a_device_with_a_volatile_cache() {
    for (device, sent) in [("ull", false), ("nand", true)] {
        let out = Stack::builder()
            .device(device)
            .build()
            .unwrap()
            .run(|| async {
                let f = File::create("data").await.unwrap();
                let (r, _) = f.write_at(DmaBuffer::from_slice(&[7u8; BLOCK]), 0).await;
                r.unwrap();
                let t0 = sluice_runtime::now();
                f.fsync().await.unwrap();
                sluice_runtime::now() - t0
            })
            .unwrap();
        let syncs: u64 = out.report.jobs.iter().map(|j| j.sync.total_ios).sum();
        assert_eq!(syncs, u64::from(sent), "{device}: flushes sent");
        assert_eq!(out.value > 0, sent, "{device}: fsync took {} ns", out.value);
    }
}
