//! A deadlock on real files is reported, whatever the policy: a policy's timer (or the
//! counters' sampling) left pending while every task waits on another must not keep the
//! run alive. Each run is bounded by a watchdog, so a hang fails the test instead of
//! hanging the suite; its bound (300 s, where a report takes milliseconds) only catches
//! a hang, whatever the load of the machine.

use crate::common;
use common::skip;

use std::rc::Rc;
use std::sync::mpsc;
use std::time::Duration;

use sluice_runtime::{spawn, DmaBuffer, File, Mutex, Stack, TaskCtx};

#[test]
fn a_deadlock_on_real_files_is_reported_under_every_policy_with_a_timer() {
    for policy in ["none", "kyber", "bfq", "fios", "d2fq", "rcp", "cfq", "ld"] {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let dir = tempfile::tempdir().unwrap();
            let r = Stack::builder()
                .directory(dir.path())
                .cores(1)
                .policy(policy)
                .build()
                .and_then(|s| {
                    s.run(|| async {
                        // Some I/O first, so that a policy arms its timers.
                        let f = File::create("f").await.unwrap();
                        for i in 0..64u64 {
                            let (r, _) = f
                                .write_at(DmaBuffer::from_slice(&[1u8; 4096]), i * 4096)
                                .await;
                            r.unwrap();
                        }
                        let m = Rc::new(Mutex::new(()));
                        let _g = m.lock().await;
                        let m2 = m.clone();
                        spawn(TaskCtx::new("stuck"), async move {
                            let _g = m2.lock().await;
                        })
                        .await;
                    })
                });
            let _ = tx.send(r.map(|_| ()).map_err(|e| (skip(&e), e.to_string())));
        });
        match rx.recv_timeout(Duration::from_secs(300)) {
            Ok(Err((true, _))) => return,
            Ok(Err((false, e))) => {
                assert!(
                    e.contains("deadlock") && e.contains("stuck"),
                    "{policy}: {e}"
                )
            }
            Ok(Ok(())) => panic!("{policy}: a deadlocked program ended"),
            Err(_) => panic!("{policy}: a deadlock on real files hung (no report in 300 s)"),
        }
    }
}
