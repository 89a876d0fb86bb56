//! Property: whatever tasks of random classes do with locks, I/O, CPU and sleeps, every
//! inheritance is undone exactly when its dependency ends (at the end of the run no task
//! is boosted, and every boost has its end), and the run completes (no lost wake-up).

use std::rc::Rc;

use proptest::prelude::*;
use sluice_runtime::{cpu, sleep, spawn, DmaBuffer, File, Inherit, IoClass, Mutex, Stack, TaskCtx};

#[derive(Clone, Debug)]
enum Step {
    /// Lock mutexes `a` ≤ `b` (in index order: no deadlock), then do `inner`.
    Locked(usize, usize, Box<Step>),
    Write(u64),
    Cpu(u64),
    Sleep(u64),
}

fn step() -> impl Strategy<Value = Step> {
    let leaf = prop_oneof![
        (0u64..64).prop_map(Step::Write),
        (1u64..50).prop_map(|u| Step::Cpu(u * 1_000)),
        (1u64..50).prop_map(|u| Step::Sleep(u * 1_000)),
    ];
    prop_oneof![
        leaf.clone(),
        (0usize..3, 0usize..3, leaf).prop_map(|(a, b, s)| Step::Locked(
            a.min(b),
            a.max(b),
            Box::new(s)
        )),
    ]
}

fn run_step<'a>(
    s: &'a Step,
    locks: &'a [Rc<Mutex<()>>],
    f: File,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + 'a>> {
    Box::pin(async move {
        match s {
            Step::Locked(a, b, inner) => {
                let _g1 = locks[*a].lock().await;
                let _g2 = if b != a {
                    Some(locks[*b].lock().await)
                } else {
                    None
                };
                run_step(inner, locks, f).await;
            }
            Step::Write(block) => {
                let (r, _) = f
                    .write_at(DmaBuffer::new(16 << 10), block * (16 << 10))
                    .await;
                r.unwrap();
            }
            Step::Cpu(ns) => cpu(*ns).await,
            Step::Sleep(ns) => sleep(*ns).await,
        }
    })
}

/// Run `tasks` (class index, steps) on a simulated stack; the run must complete.
fn run_tasks(
    tasks: Vec<(u8, Vec<Step>)>,
    policy: &str,
    inherit: Inherit,
) -> sluice_metrics::RuntimeFacts {
    Stack::builder()
        .policy(policy)
        .inherit(inherit)
        .build()
        .unwrap()
        .run(move || async move {
            let locks: Rc<Vec<Rc<Mutex<()>>>> =
                Rc::new((0..3).map(|_| Rc::new(Mutex::new(()))).collect());
            let mut hs = Vec::new();
            for (i, (class, steps)) in tasks.into_iter().enumerate() {
                let class = [IoClass::Critical, IoClass::Normal, IoClass::Idle][class as usize];
                let locks = locks.clone();
                hs.push(spawn(
                    TaskCtx::new(format!("t{i}")).class(class),
                    async move {
                        let f = File::create(&format!("f{i}")).await.unwrap();
                        for s in &steps {
                            run_step(s, &locks, f).await;
                        }
                    },
                ));
            }
            for h in hs {
                h.await;
            }
        })
        .expect("the run completes")
        .report
        .extra
        .runtime
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn boosts_are_always_undone(
        tasks in prop::collection::vec((0u8..3, prop::collection::vec(step(), 1..6)), 2..7),
        policy in prop_oneof![Just("rcp"), Just("none"), Just("ld")],
        inherit in prop_oneof![Just(Inherit::ON), Just(Inherit::OFF), Just(Inherit { transitive: false, ..Inherit::ON })],
    ) {
        let rt = run_tasks(tasks, policy, inherit);
        prop_assert_eq!(rt.boosts, rt.boost_ends);
        if !inherit.any() {
            prop_assert_eq!(rt.boosts, 0);
        }
    }
}

/// A case proptest found (2026-11-26): a critical wake-up preempted a normal task's
/// CPU burst at the very instant its last slice ended; the task was marked as having
/// CPU left with none left to run, and never ran again (a deadlock).
#[test]
fn regression_cpu_beside_critical_writers() {
    let tasks: Vec<(u8, Vec<Step>)> = vec![
        (0, vec![Step::Sleep(13_000)]),
        (0, vec![Step::Locked(0, 0, Box::new(Step::Write(0)))]),
        (0, vec![Step::Locked(0, 0, Box::new(Step::Write(0)))]),
        (0, vec![Step::Write(0)]),
        (1, vec![Step::Cpu(12_000)]),
    ];
    run_tasks(tasks, "rcp", Inherit::ON);
}
