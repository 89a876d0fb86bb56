//! Where critical tasks waited (the report's `runtime.waits`, RCP Table 2): a critical
//! task's wait is tallied at its site with its length; a background task's is not; the
//! tally can be restarted where a measured run begins.

use std::rc::Rc;

use sluice_metrics::WaitSiteFacts;
use sluice_runtime::{restart_wait_tally, sleep, spawn, Mutex, Stack, TaskCtx};

const MS: u64 = 1_000_000;

/// A background task takes lock "L" and holds it `hold` ms; 1 ms later a critical task
/// and another background task wait for it.
async fn contend(hold: u64) {
    let l = Rc::new(Mutex::new(()).named("L"));
    let l2 = l.clone();
    let holder = spawn(TaskCtx::new("holder"), async move {
        let _g = l2.lock().await;
        sleep(hold * MS).await;
    });
    sleep(MS).await;
    let waiters: Vec<_> = [TaskCtx::new("fg").critical(), TaskCtx::new("bg")]
        .into_iter()
        .map(|ctx| {
            let l = l.clone();
            spawn(ctx, async move {
                let _g = l.lock().await;
            })
        })
        .collect();
    holder.await;
    for w in waiters {
        w.await;
    }
}

fn waits(run: impl std::future::Future<Output = ()> + 'static) -> Vec<WaitSiteFacts> {
    let out = Stack::builder()
        .device("ull")
        .build()
        .unwrap()
        .run(move || run)
        .unwrap();
    out.report.extra.runtime.unwrap().waits
}

#[test]
fn a_critical_tasks_wait_is_tallied_at_its_named_site() {
    let w = waits(contend(5));
    // Only the critical task's wait: the background waiter and the main task (joins)
    // are not critical.
    assert_eq!(w.len(), 1, "{w:?}");
    let l = &w[0];
    assert_eq!(
        (l.level.as_str(), l.kind.as_str(), l.name.as_str()),
        ("app", "lock", "L")
    );
    assert_eq!(l.label(), "app lock \"L\"");
    assert_eq!(l.count, 1);
    // It waited from 1 ms until the holder let go at 5 ms (the runtime's CPU costs aside).
    assert!((4 * MS..5 * MS).contains(&l.max_ns), "{l:?}");
    assert_eq!(l.total_ns, l.max_ns);
}

#[test]
fn a_restarted_tally_holds_only_the_waits_after_it() {
    let w = waits(async {
        contend(9).await;
        restart_wait_tally();
        contend(3).await;
    });
    assert_eq!(w.len(), 1, "{w:?}");
    assert_eq!(w[0].count, 1, "the first wait is forgotten: {w:?}");
    assert!((MS..3 * MS).contains(&w[0].max_ns), "{w:?}");
    // Without the restart both are there, the longer first.
    let both = waits(async {
        contend(9).await;
        contend(3).await;
    });
    assert_eq!(both[0].count, 2, "{both:?}");
    assert!(both[0].max_ns >= 8 * MS, "{both:?}");
}
