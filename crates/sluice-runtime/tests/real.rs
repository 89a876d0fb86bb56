//! The runtime on real files (a temporary directory) through io_uring: the same program
//! as in simulation. Where io_uring cannot be set up, each test says why and returns.

use crate::common;
use common::skip;

use std::rc::Rc;

use sluice_runtime::{
    now, sleep, spawn, DmaBuffer, File, Inherit, IoOptions, Mutex, Op, Stack, TaskCtx,
};

fn stack(dir: &std::path::Path, policy: &str, inherit: Inherit) -> Option<Stack> {
    match Stack::builder()
        .directory(dir)
        .cores(1)
        .policy(policy)
        .inherit(inherit)
        .build()
    {
        Ok(s) => Some(s),
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn data_round_trips_through_real_files() {
    let dir = tempfile::tempdir().unwrap();
    let Some(s) = stack(dir.path(), "ld", Inherit::ON) else {
        return;
    };
    let out = s.run(|| async {
        let f = File::create("data").await.unwrap();
        // 64 writes of 64 KiB in flight at once (LD splits them into 32 KiB pieces).
        let mut hs = Vec::new();
        for i in 0..64u64 {
            let mut b = DmaBuffer::new(64 << 10);
            b.fill(i as u8 + 1);
            hs.push(f.submit(Op::Write, b, i * (64 << 10), IoOptions::new()));
        }
        for h in hs {
            assert_eq!(h.await.0.unwrap(), 64 << 10);
        }
        f.fsync().await.unwrap();
        let mut sum = 0u64;
        for i in (0..64u64).rev() {
            let (r, b) = f.read_at(DmaBuffer::new(64 << 10), i * (64 << 10)).await;
            assert_eq!(r.unwrap(), 64 << 10);
            assert!(b.iter().all(|&x| x == i as u8 + 1), "block {i}");
            sum += b[0] as u64;
        }
        // A read past the end is short.
        let (r, _) = f
            .read_at(DmaBuffer::new(8192), 64 * (64 << 10) - 4096)
            .await;
        assert_eq!(r.unwrap(), 4096);
        sum
    });
    let out = match out {
        Ok(o) => o,
        Err(e) if skip(&e) => return,
        Err(e) => panic!("{e}"),
    };
    assert_eq!(out.value, (1..=64).sum::<u64>());
    assert_eq!(out.report.extra.engine, "io_uring");
    let j = out
        .report
        .jobs
        .iter()
        .find(|j| j.jobname == "main/other")
        .unwrap();
    assert_eq!(j.write.total_ios, 64);
    assert!(j.read.lat_ns.mean > 0.0);
    assert!(dir.path().join("data").exists());
}

#[test]
fn the_inversion_demo_runs_on_real_files() {
    // The program of the simulated demo, on the real disk: it must run to its end and
    // account every I/O; how much inheritance helps depends on the disk (docs/runtime.md).
    let dir = tempfile::tempdir().unwrap();
    let Some(s) = stack(dir.path(), "rcp", Inherit::ON) else {
        return;
    };
    let out = s.run(|| async {
        let lock = Rc::new(Mutex::new(()));
        let writer = spawn(TaskCtx::new("bulk"), async {
            let f = File::create("bulk").await.unwrap();
            let mut q = std::collections::VecDeque::new();
            let mut off = 0u64;
            let end = now() + 100_000_000;
            while now() < end {
                while q.len() < 16 {
                    q.push_back(f.submit(
                        Op::Write,
                        DmaBuffer::new(128 << 10),
                        off,
                        IoOptions::new(),
                    ));
                    off += 128 << 10;
                }
                q.pop_front().unwrap().await.0.unwrap();
            }
            for h in q {
                h.await.0.unwrap();
            }
        });
        let l = lock.clone();
        let bg = spawn(TaskCtx::new("bg"), async move {
            sleep(20_000_000).await;
            let f = File::create("meta").await.unwrap();
            let _g = l.lock().await;
            f.write_at(DmaBuffer::new(4096), 0).await.0.unwrap();
        });
        let crit = spawn(TaskCtx::new("crit").critical(), async move {
            sleep(20_500_000).await;
            let t0 = now();
            let _g = lock.lock().await;
            now() - t0
        });
        let w = crit.await;
        bg.await;
        writer.await;
        w
    });
    match out {
        Ok(o) => assert!(o.report.jobs.iter().any(|j| j.jobname == "bulk/other")),
        Err(e) if skip(&e) => {}
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn real_stacks_refuse_what_they_cannot_do() {
    let e = Stack::builder()
        .directory("/nonexistent-sluice")
        .cores(1)
        .build()
        .unwrap_err();
    assert!(e.to_string().contains("not a directory"), "{e}");
    let dir = tempfile::tempdir().unwrap();
    let e = Stack::builder()
        .directory(dir.path())
        .cores(0)
        .build()
        .unwrap_err();
    assert!(e.to_string().contains("give 1 to 1024"), "{e}");
    // A file the stack did not create is never opened for writing: create refuses an
    // existing one.
    std::fs::write(dir.path().join("theirs"), b"x").unwrap();
    let s = Stack::builder()
        .directory(dir.path())
        .cores(1)
        .build()
        .unwrap();
    let r = s.run(|| async { File::create("theirs").await.map(|_| ()) });
    match r {
        Ok(o) => {
            let e = o.value.unwrap_err().to_string();
            assert!(e.contains("never writes one it did not create"), "{e}");
        }
        Err(e) if skip(&e) => {}
        Err(e) => panic!("{e}"),
    }
    assert_eq!(std::fs::read(dir.path().join("theirs")).unwrap(), b"x");
}

#[test]
fn buffered_io_fua_and_fsync_work_on_real_files() {
    let dir = tempfile::tempdir().unwrap();
    let s = Stack::builder()
        .directory(dir.path())
        .cores(1)
        .cache(sluice_runtime::CacheConfig {
            pages: 64,
            ..Default::default()
        })
        .build()
        .unwrap();
    let out = s.run(|| async {
        let f = File::create("log").await.unwrap();
        // 1 MiB through a 256 KiB cache: the flusher and evictions at work.
        for i in 0..256u64 {
            f.write_buffered(i * 4096 + 100, &[i as u8 | 1; 4096])
                .await
                .unwrap();
        }
        f.fsync().await.unwrap();
        let (r, _) = f
            .write_at_with(
                DmaBuffer::from_slice(&[9u8; 4096]),
                2 << 20,
                IoOptions::new().fua(true),
            )
            .await;
        r.unwrap();
        let mut back = vec![0u8; 4096];
        for i in (0..256u64).rev() {
            let n = f.read_buffered(i * 4096 + 100, &mut back).await.unwrap();
            assert_eq!(n, 4096);
            assert!(back.iter().all(|&x| x == i as u8 | 1), "block {i}");
        }
    });
    let out = match out {
        Ok(o) => o,
        Err(e) if skip(&e) => return,
        Err(e) => panic!("{e}"),
    };
    let c = out.report.extra.runtime.unwrap().cache.unwrap();
    assert!(c.writebacks >= 257 && c.evictions > 0, "{c:?}");
    // The data is in the file itself (read past the runtime).
    let bytes = std::fs::read(dir.path().join("log")).unwrap();
    assert_eq!(&bytes[100..4196], &[1u8; 4096][..]);
    assert_eq!(&bytes[2 << 20..(2 << 20) + 4096], &[9u8; 4096][..]);
}

#[test]
fn a_ring_cap_stages_requests_at_the_arbiter_and_bounds_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    for bad in [0, sluice_runtime::RING_CAP + 1] {
        let e = Stack::builder()
            .directory(dir.path())
            .cores(1)
            .ring_cap(bad)
            .build()
            .unwrap_err();
        assert!(e.to_string().contains("ring cap"), "{e}");
    }
    // Two commands in the rings at most: 32 writes in flight wait at the port's
    // arbiter and every one completes with its data.
    let s = Stack::builder()
        .directory(dir.path())
        .cores(1)
        .policy("d2fq")
        .ring_cap(2)
        .build()
        .unwrap();
    let out = s.run(|| async {
        let f = File::create("capped").await.unwrap();
        let hs: Vec<_> = (0..32u64)
            .map(|i| {
                let mut b = DmaBuffer::new(4096);
                b.fill(i as u8 + 1);
                f.submit(Op::Write, b, i * 4096, IoOptions::new())
            })
            .collect();
        for h in hs {
            assert_eq!(h.await.0.unwrap(), 4096);
        }
        let (r, b) = f.read_at(DmaBuffer::new(32 * 4096), 0).await;
        assert_eq!(r.unwrap(), 32 * 4096);
        (0..32).all(|i| b[i * 4096] == i as u8 + 1)
    });
    match out {
        Ok(o) => assert!(o.value, "every block holds its write"),
        Err(e) if skip(&e) => {}
        Err(e) => panic!("{e}"),
    }
}
