//! `RangeLock`: byte ranges held by tasks, and RCP's inheritance through them (FAST '17
//! §4.2.1): a critical task waiting for a range boosts the holders of the ranges that
//! overlap it — only those — and their I/O already queued is promoted (§4.2.2).

use std::cell::Cell;
use std::rc::Rc;

use sluice_runtime::{now, sleep, spawn, DmaBuffer, File, Inherit, RangeLock, Stack, TaskCtx};

const MS: u64 = 1_000_000;
const US: u64 = 1_000;

/// Two background tasks each hold a range of one file — `[0, 4096)` and `[8192,
/// 12288)` — while their 4 KiB write sits in the block layer behind a saturating
/// writer's backlog (`rcp`: one non-critical request at the device); a critical task
/// then locks `[100, 200)`, inside the first. Returns how long it waited, in ns.
fn range_inversion(inherit: Inherit) -> (u64, sluice_metrics::RunReport) {
    let out = Stack::builder()
        .device("ull")
        .policy("rcp")
        .inherit(inherit)
        .build()
        .unwrap()
        .run(|| async {
            let lock = Rc::new(RangeLock::new_stack_level().named("file ranges"));
            let writer = spawn(
                TaskCtx::new("writer"),
                crate::common::saturate("bulk", 32, 20 * MS),
            );
            let holders: Vec<_> = [0u64, 8192]
                .into_iter()
                .map(|at| {
                    let l = lock.clone();
                    spawn(TaskCtx::new(format!("holder{at}")), async move {
                        sleep(2 * MS).await;
                        let f = File::create(&format!("f{at}")).await.unwrap();
                        let _g = l.lock(at, at + 4096).await;
                        let (r, _) = f.write_at(DmaBuffer::new(4096), 0).await;
                        r.unwrap();
                    })
                })
                .collect();
            let l = lock.clone();
            let crit = spawn(TaskCtx::new("crit").critical(), async move {
                // Both ranges held (their writes queued) before it asks.
                // (Simulated time: a yield alone would not let it pass.)
                while l.held() < 2 {
                    sleep(US).await;
                }
                let t0 = now();
                let _g = l.lock(100, 200).await;
                now() - t0
            });
            let waited = crit.await;
            for h in holders {
                h.await;
            }
            writer.await;
            assert_eq!((lock.held(), lock.waiting()), (0, 0));
            waited
        })
        .unwrap();
    (out.value, out.report)
}

#[test]
fn a_critical_waiter_boosts_the_overlapping_holder_and_promotes_its_queued_write() {
    let (off, off_report) = range_inversion(Inherit::OFF);
    let (on, report) = range_inversion(Inherit::ON);
    // On ull a 4 KiB write takes ≈ 10 µs and a 128 KiB one ≈ 60 µs; without
    // inheritance the holder's write waits behind the writer's queue (32 deep).
    assert!(
        on < 300 * US,
        "with inheritance the critical task waited {on} ns"
    );
    assert!(off > 5 * on, "without inheritance {off} ns, with {on} ns");
    let rt = report.extra.runtime.as_ref().unwrap();
    // Only the holder of [0, 4096) is boosted and only its write promoted: the holder
    // of [8192, 12288) blocks nobody critical.
    assert_eq!(rt.boosts, 1, "{rt:?}");
    assert_eq!(rt.inherited_promotions, 1, "{rt:?}");
    assert_eq!(rt.boosts, rt.boost_ends, "every boost undone");
    let b = &report.extra.block;
    assert_eq!(b.promoted_queued + b.promoted_waiting, 1);
    // The critical task's wait is tallied at the range lock (RCP Table 2's rows).
    assert!(
        rt.waits
            .iter()
            .any(|w| w.kind == "range lock" && w.name == "file ranges" && w.count == 1),
        "{:?}",
        rt.waits
    );
    let rt_off = off_report.extra.runtime.as_ref().unwrap();
    assert_eq!((rt_off.boosts, rt_off.inherited_promotions), (0, 0));
}

#[test]
fn only_the_stack_level_reaches_a_stack_range_lock() {
    let user_only = Inherit {
        stack: false,
        ..Inherit::ON
    };
    let (off, _) = range_inversion(Inherit::OFF);
    let (user, report) = range_inversion(user_only);
    assert!(user > off / 2, "user level only: {user} ns, off {off} ns");
    assert_eq!(report.extra.runtime.unwrap().boosts, 0);
}

#[test]
fn overlapping_ranges_take_turns_and_disjoint_ones_do_not_wait() {
    let out = Stack::builder()
        .cores(2)
        .build()
        .unwrap()
        .run(|| async {
            let lock = Rc::new(RangeLock::new());
            let inside = Rc::new(Cell::new(0u32));
            let most = Rc::new(Cell::new(0u32));
            let hs: Vec<_> = (0..8u64)
                .map(|t| {
                    let (l, inside, most) = (lock.clone(), inside.clone(), most.clone());
                    spawn(TaskCtx::new(format!("t{t}")), async move {
                        for round in 0..20u64 {
                            // Every task's range overlaps [4000, 4100).
                            let at = 4000 - (t * 37 + round) % 3000;
                            let _g = l.lock(at, 4100 + t).await;
                            inside.set(inside.get() + 1);
                            most.set(most.get().max(inside.get()));
                            sleep(10 * US).await;
                            inside.set(inside.get() - 1);
                        }
                    })
                })
                .collect();
            // A disjoint range is free while they run.
            sleep(5 * US).await;
            let t0 = now();
            drop(lock.lock(1 << 20, (1 << 20) + 10).await);
            let disjoint_wait = now() - t0;
            for h in hs {
                h.await;
            }
            (most.get(), disjoint_wait)
        })
        .unwrap();
    assert_eq!(out.value, (1, 0));
}
