//! Atomic writes (`IoOptions::atomic`, `RWF_ATOMIC`) on the simulated device: a crash
//! that tears plain writes at 512-byte sectors leaves each atomic write whole or
//! gone, and a write outside the device's atomic write unit fails with
//! `InvalidInput`.

use sluice_runtime::{spawn, CrashSpec, DmaBuffer, File, IoOptions, Stack, TaskCtx};

const TASKS: u64 = 4;
const WRITES: u64 = 32;
const BLOCK: usize = 4096;

fn pattern(block: u64) -> Vec<u8> {
    crate::common::sector_pattern(block, BLOCK)
}

/// Every task writes its own blocks, no flush: everything is at the crash's mercy.
async fn workload(atomic: bool) {
    let f = File::create("data").await.unwrap();
    let mut hs = Vec::new();
    for t in 0..TASKS {
        hs.push(spawn(TaskCtx::new(format!("w{t}")), async move {
            for i in 0..WRITES {
                let block = t * WRITES + i;
                let (r, _) = f
                    .write_at_with(
                        DmaBuffer::from_slice(&pattern(block)),
                        block * BLOCK as u64,
                        IoOptions::new().atomic(atomic),
                    )
                    .await;
                r.unwrap();
            }
        }));
    }
    for h in hs {
        h.await;
    }
}

/// Crash runs over seeds with tearing on: (writes torn, blocks found torn on the image).
fn crashes(atomic: bool) -> (u64, u64) {
    let builder = |seed| Stack::builder().device("nand").seed(seed);
    let length = builder(1)
        .build()
        .unwrap()
        .run_until_crash(
            u64::MAX,
            CrashSpec {
                seed: 0,
                torn: true,
            },
            move || workload(atomic),
        )
        .unwrap()
        .at_ns;
    let (mut torn, mut torn_blocks) = (0, 0);
    for seed in 0..24u64 {
        let at = length * (seed % 8 + 1) / 9;
        let out = builder(seed)
            .build()
            .unwrap()
            .run_until_crash(at, CrashSpec { seed, torn: true }, move || workload(atomic))
            .unwrap();
        torn += out.crash.torn;
        let blocks = crate::common::read_back(builder(seed), out.image, TASKS * WRITES, BLOCK);
        for (b, data) in blocks {
            let whole = data == pattern(b) || data.iter().all(|&x| x == 0);
            torn_blocks += !whole as u64;
        }
    }
    (torn, torn_blocks)
}

#[test]
fn a_crash_never_tears_an_atomic_write() {
    let (torn, torn_blocks) = crashes(true);
    assert_eq!(
        (torn, torn_blocks),
        (0, 0),
        "atomic writes are all or nothing"
    );
    // The same writes without atomic are torn by some of those crashes.
    let (torn, torn_blocks) = crashes(false);
    assert!(
        torn > 0 && torn_blocks > 0,
        "plain writes tear: {torn} {torn_blocks}"
    );
}

#[test]
fn an_atomic_write_outside_the_devices_unit_is_refused() {
    let errs = Stack::builder()
        .device("nand")
        .build()
        .unwrap()
        .run(|| async {
            let f = File::create("data").await.unwrap();
            let mut errs = Vec::new();
            // 16 KiB: over nand's 4 KiB unit; 4 KiB at 2 KiB: misaligned; 4 KiB at 8 KiB: fine.
            for (len, at) in [(16 << 10, 0u64), (4096, 2048), (4096, 8192)] {
                let (r, _) = f
                    .write_at_with(DmaBuffer::new(len), at, IoOptions::new().atomic(true))
                    .await;
                errs.push(r.err().map(|e| (e.kind(), e.to_string())));
            }
            errs
        })
        .unwrap()
        .value;
    for e in &errs[..2] {
        let (kind, msg) = e.as_ref().expect("refused");
        assert_eq!(*kind, std::io::ErrorKind::InvalidInput);
        assert!(
            msg.contains("512..=4096 bytes") && msg.contains("'nand'"),
            "{msg}"
        );
    }
    assert!(errs[2].is_none(), "{:?}", errs[2]);
}
