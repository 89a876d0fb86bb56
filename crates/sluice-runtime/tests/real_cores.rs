//! The real backend on several cores (thread per core) on temporary files: joins, locks,
//! condition variables and inheritance across cores, no lost wake-ups, and CPU bursts
//! that do not hold back other tasks' completions. Where io_uring cannot be set up, each
//! test says why and returns.

use crate::common;
use common::skip;

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sluice_runtime::{
    cpu, current_class, sleep, spawn, spawn_on, yield_now, Condvar, DmaBuffer, File, Inherit,
    IoClass, Mutex, RunOutput, Stack, TaskCtx,
};

fn run<T: 'static, Fut: std::future::Future<Output = T> + 'static>(
    cores: u16,
    inherit: Inherit,
    main: impl FnOnce() -> Fut,
) -> Option<RunOutput<T>> {
    let dir = tempfile::tempdir().unwrap();
    let s = Stack::builder()
        .directory(dir.path())
        .direct(false)
        .cores(cores)
        .policy("rcp")
        .inherit(inherit)
        .build()
        .unwrap();
    match s.run(main) {
        Ok(o) => Some(o),
        Err(e) if skip(&e) => None,
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn tasks_of_other_cores_do_io_and_are_joined() {
    let Some(out) = run(3, Inherit::ON, || async {
        let f = Arc::new(File::create("data").await.unwrap());
        let mut hs = Vec::new();
        for i in 0..12u64 {
            let f = f.clone();
            hs.push(spawn_on(
                TaskCtx::new(format!("w{i}")).core((i % 3) as u16),
                move || async move {
                    for k in 0..8u64 {
                        let mut b = DmaBuffer::new(4096);
                        b.fill((i * 8 + k) as u8);
                        let off = (i * 8 + k) * 4096;
                        assert_eq!(f.write_at(b, off).await.0.unwrap(), 4096);
                    }
                    i
                },
            ));
        }
        let mut sum = 0;
        for h in hs {
            sum += h.await;
        }
        for n in 0..96u64 {
            let (r, b) = f.read_at(DmaBuffer::new(4096), n * 4096).await;
            assert_eq!(r.unwrap(), 4096);
            assert!(b.iter().all(|&x| x == n as u8), "block {n}");
        }
        sum
    }) else {
        return;
    };
    assert_eq!(out.value, (0..12).sum::<u64>());
    let rt = out.report.extra.runtime.as_ref().unwrap();
    assert_eq!(rt.tasks, 13);
}

/// A normal task on core 1 holds a lock; a critical task on core 0 waits for it. With
/// inheritance the holder sees itself critical while it holds the lock; without, never.
/// The holder looks until the waiter is queued on the lock (the waiter says so after its
/// first poll of `lock()` returned pending) and once more after that — a turn later, when
/// the dependencies were recomputed — not for a span of time.
fn holder_inherits(inherit: Inherit) -> Option<(bool, u64)> {
    let out = run(2, inherit, || async {
        let m = Arc::new(Mutex::new(0u32));
        let held = Arc::new(AtomicBool::new(false));
        let queued = Arc::new(AtomicBool::new(false));
        let (m2, held2, queued2) = (m.clone(), held.clone(), queued.clone());
        let holder = spawn_on(TaskCtx::new("holder").core(1), move || async move {
            let mut g = m2.lock().await;
            held2.store(true, Ordering::SeqCst);
            let t0 = Instant::now();
            let mut boosted = false;
            let mut looked_after_queued = false;
            loop {
                let q = queued2.load(Ordering::SeqCst);
                if current_class() == IoClass::Critical {
                    boosted = true;
                    break;
                }
                if looked_after_queued {
                    break;
                }
                looked_after_queued = q;
                // Only catches a waiter that never comes (it takes microseconds).
                assert!(t0.elapsed() < Duration::from_secs(300), "no waiter came");
                sleep(200_000).await;
            }
            *g += 1;
            drop(g);
            // Released: the boost ends with the dependency (recomputed before the
            // task runs again).
            yield_now().await;
            (boosted, current_class() == IoClass::Normal)
        });
        let waiter = spawn(TaskCtx::new("waiter").critical().core(0), async move {
            while !held.load(Ordering::SeqCst) {
                sleep(100_000).await;
            }
            let mut lock = std::pin::pin!(m.lock());
            let first = std::future::poll_fn(|cx| {
                std::task::Poll::Ready(lock.as_mut().poll(cx).map(|_| ()))
            })
            .await;
            assert!(first.is_pending(), "the holder let the lock go early");
            queued.store(true, Ordering::SeqCst);
            *lock.await += 1;
        });
        waiter.await;
        let (boosted, undone) = holder.await;
        assert!(
            undone,
            "the holder stayed critical after it released the lock"
        );
        boosted
    })?;
    let boosts = out.report.extra.runtime.as_ref().unwrap().boosts;
    Some((out.value, boosts))
}

#[test]
fn a_critical_waiter_on_one_core_boosts_the_holder_on_another() {
    let Some((on, boosts_on)) = holder_inherits(Inherit::ON) else {
        return;
    };
    let (off, boosts_off) = holder_inherits(Inherit::OFF).unwrap();
    assert!(
        on,
        "the holder on core 1 was not boosted by the critical waiter on core 0"
    );
    assert!(boosts_on >= 1);
    assert!(!off, "the holder was boosted with inheritance off");
    assert_eq!(boosts_off, 0);
}

#[test]
fn no_lost_wakeups_across_cores() {
    // Ping-pong through a condition variable between tasks of three cores, and a
    // counter every task increments under one lock: a lost wake-up ends in a reported
    // deadlock (or this test's time-out), not in a wrong count.
    const ROUNDS: u64 = 300;
    let Some(out) = run(3, Inherit::ON, || async {
        let turn = Arc::new((Mutex::new(0u64), Condvar::new()));
        let count = Arc::new(Mutex::new(0u64));
        let mut hs = Vec::new();
        for me in 0..3u64 {
            let (turn, count) = (turn.clone(), count.clone());
            hs.push(spawn_on(
                TaskCtx::new(format!("p{me}")).core(me as u16),
                move || async move {
                    for _ in 0..ROUNDS {
                        let (m, cv) = &*turn;
                        let mut g = m.lock().await;
                        while *g % 3 != me {
                            g = cv.wait(g).await;
                        }
                        *g += 1;
                        cv.notify_all();
                        drop(g);
                        *count.lock().await += 1;
                        yield_now().await;
                    }
                },
            ));
        }
        for h in hs {
            h.await;
        }
        let v = *count.lock().await;
        v
    }) else {
        return;
    };
    assert_eq!(out.value, 3 * ROUNDS);
}

#[test]
fn a_cpu_burst_does_not_hold_back_another_tasks_completions() {
    // One core: a task spins 1 s in `cpu` (in 1 ms quanta) while another reads. The
    // core handles the reader's completions between two quanta, so the reader's reads
    // complete while the burst is still going — counted, not timed: a reader held back
    // behind the burst would complete none of them before the burst ends.
    let Some(out) = run(1, Inherit::ON, move || async move {
        let f = File::create("data").await.unwrap();
        f.write_at(DmaBuffer::new(1 << 20), 0).await.0.unwrap();
        let (started, done) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        let (s2, d2) = (started.clone(), done.clone());
        // The reader starts first; the hog starts spinning while a read is in flight.
        let reader = spawn(TaskCtx::new("reader"), async move {
            let mut during = 0u64;
            while !d2.load(Ordering::SeqCst) {
                f.read_at(DmaBuffer::new(4096), 8192).await.0.unwrap();
                if s2.load(Ordering::SeqCst) && !d2.load(Ordering::SeqCst) {
                    during += 1;
                }
            }
            during
        });
        let hog = spawn(TaskCtx::new("hog"), async move {
            yield_now().await;
            started.store(true, Ordering::SeqCst);
            cpu(1_000_000_000).await;
            done.store(true, Ordering::SeqCst);
        });
        hog.await;
        reader.await
    }) else {
        return;
    };
    // About one read per quantum, ~1 000; 10 says the reads went on beside the burst.
    assert!(
        out.value >= 10,
        "{} reads completed during a 1 s CPU burst (1 ms quanta)",
        out.value
    );
}

#[test]
fn registered_buffers_carry_the_data_on_every_core() {
    let Some(out) = run(2, Inherit::ON, || async {
        let f = Arc::new(File::create("data").await.unwrap());
        let mut hs = Vec::new();
        for c in 0..2u64 {
            let f = f.clone();
            hs.push(spawn_on(
                TaskCtx::new(format!("c{c}")).core(c as u16),
                move || async move {
                    let mut registered = 0;
                    for k in 0..16u64 {
                        let n = c * 16 + k;
                        // 4 KiB fits a slot of the default pool; 128 KiB does not.
                        let len = if k == 15 { 128 << 10 } else { 4096 };
                        let mut b = DmaBuffer::new(len);
                        registered += b.is_registered() as u32;
                        b.fill(n as u8 + 1);
                        assert_eq!(f.write_at(b, n * (128 << 10)).await.0.unwrap(), len);
                        let (r, b) = f.read_at(DmaBuffer::new(len), n * (128 << 10)).await;
                        assert_eq!(r.unwrap(), len);
                        assert!(b.iter().all(|&x| x == n as u8 + 1), "block {n}");
                    }
                    registered
                },
            ));
        }
        let mut registered = 0;
        for h in hs {
            registered += h.await;
        }
        registered
    }) else {
        return;
    };
    assert_eq!(
        out.value, 30,
        "the 4 KiB buffers come from the registered pool"
    );
}

#[test]
fn a_stack_without_a_pool_uses_heap_buffers_and_bad_pools_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let s = Stack::builder()
        .directory(dir.path())
        .direct(false)
        .buffer_pool(0, 0)
        .build()
        .unwrap();
    match s.run(|| async {
        let f = File::create("d").await.unwrap();
        let b = DmaBuffer::new(4096);
        let reg = b.is_registered();
        f.write_at(b, 0).await.0.unwrap();
        reg
    }) {
        Ok(o) => assert!(!o.value),
        Err(e) if skip(&e) => return,
        Err(e) => panic!("{e}"),
    }
    for (n, len, what) in [
        (4, 1000, "multiple of 4096"),
        (0, 4096, "give 1 to"),
        (20_000, 4096, "give 1 to"),
        (16_384, 1 << 20, "more than"),
    ] {
        let e = Stack::builder()
            .directory(dir.path())
            .buffer_pool(n, len)
            .build()
            .unwrap_err();
        assert!(e.to_string().contains(what), "{e}");
    }
    let e = Stack::builder().buffer_pool(4, 4096).build().unwrap_err();
    assert!(e.to_string().contains("real backend"), "{e}");
}

#[test]
#[should_panic(expected = "use spawn_on")]
fn spawn_of_a_non_send_task_onto_another_core_is_refused_with_the_remedy() {
    let dir = tempfile::tempdir().unwrap();
    let s = Stack::builder()
        .directory(dir.path())
        .direct(false)
        .cores(2)
        .build()
        .unwrap();
    let r = s.run(|| async {
        let rc = std::rc::Rc::new(1);
        spawn(TaskCtx::new("elsewhere").core(1), async move { *rc }).await
    });
    if let Err(e) = r {
        if skip(&e) {
            panic!("io_uring unavailable (so: use spawn_on)");
        }
    }
}

#[test]
fn a_panic_in_a_task_of_another_core_reaches_the_caller_and_the_thread_runs_again() {
    let r = std::panic::catch_unwind(|| {
        run(2, Inherit::ON, || async {
            let h = spawn_on(TaskCtx::new("boom").core(1), || async {
                sleep(1_000_000).await;
                panic!("boom on core 1");
            });
            // Left pending on core 0 when the run stops.
            let m = Arc::new(Mutex::new(()));
            let _g = m.lock().await;
            h.await
        })
    });
    let msg = match r {
        Ok(None) => return, // io_uring unavailable (said by `run`)
        Ok(Some(_)) => panic!("the panic of core 1 did not reach Stack::run's caller"),
        Err(msg) => msg,
    };
    let msg = msg
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| msg.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    assert!(msg.contains("boom on core 1"), "{msg}");
    // The same thread runs a new stack (the old run's futures are gone).
    let out = run(2, Inherit::ON, || async { 7 });
    if let Some(o) = out {
        assert_eq!(o.value, 7);
    }
}

#[test]
fn a_task_queued_on_an_idle_core_is_not_taken_for_a_deadlock() {
    // Core 1 is idle (waiting in its ring) when core 0 spawns onto it and joins: for a
    // moment every core looks idle while core 1's doorbell is on its way. This was
    // reported as a deadlock about every second run before the check looked at the run
    // queues too.
    // Policy `none`: no policy timer, so nothing else keeps the cores from looking.
    for _ in 0..40 {
        let dir = tempfile::tempdir().unwrap();
        let s = Stack::builder()
            .directory(dir.path())
            .direct(false)
            .cores(2)
            .build()
            .unwrap();
        match s.run(|| async { spawn_on(TaskCtx::new("other").core(1), || async { 40 + 2 }).await })
        {
            Ok(out) => assert_eq!(out.value, 42),
            Err(e) if skip(&e) => return,
            Err(e) => panic!("{e}"),
        }
    }
}

/// One page cache shared by the tasks of two real cores: buffered writes of shared
/// pages from both (each task its own bytes of each page), through a cache too small
/// for them (the flusher and evictions at work, the dirty limits global), a critical
/// fsync, then every byte read back through the cache and found on the file.
#[test]
fn one_page_cache_serves_the_tasks_of_several_real_cores() {
    shared_cache_on_two_cores(0);
}

/// The same with the flusher on core 1 (`StackBuilder::flusher_core`, as `sluice
/// mount` keeps core 0 for critical callers): its future is made on core 1's thread.
#[test]
fn the_flusher_serves_the_cache_from_another_core() {
    shared_cache_on_two_cores(1);
}

fn shared_cache_on_two_cores(flusher: u16) {
    const TASKS: u64 = 6;
    const PAGES: u64 = 48;
    let dir = tempfile::tempdir().unwrap();
    let s = Stack::builder()
        .directory(dir.path())
        .cores(2)
        .flusher_core(flusher)
        .policy("rcp")
        .cache(sluice_runtime::CacheConfig {
            pages: 32,
            ..Default::default()
        })
        .build()
        .unwrap();
    let out = s.run(|| async {
        let f = Arc::new(File::create("shared").await.unwrap());
        let hs: Vec<_> = (0..TASKS)
            .map(|t| {
                let f = f.clone();
                spawn_on(
                    TaskCtx::new(format!("w{t}")).core((t % 2) as u16),
                    move || async move {
                        for p in 0..PAGES {
                            let at = p * 4096 + t * 600 + 5;
                            f.write_buffered(at, &[(t * 40 + p) as u8 | 1; 600])
                                .await
                                .unwrap();
                        }
                    },
                )
            })
            .collect();
        for h in hs {
            h.await;
        }
        let crit = TaskCtx::new("fsync").class(IoClass::Critical).core(1);
        let g = f.clone();
        spawn_on(crit, move || async move { g.fsync().await.unwrap() }).await;
        let mut back = vec![0u8; 600];
        for t in 0..TASKS {
            for p in 0..PAGES {
                let n = f
                    .read_buffered(p * 4096 + t * 600 + 5, &mut back)
                    .await
                    .unwrap();
                assert_eq!(n, 600);
                let want = (t * 40 + p) as u8 | 1;
                assert!(back.iter().all(|&x| x == want), "task {t} page {p}");
            }
        }
    });
    let out = match out {
        Ok(o) => o,
        Err(e) if skip(&e) => return,
        Err(e) => panic!("{e}"),
    };
    let c = out.report.extra.runtime.unwrap().cache.unwrap();
    assert!(c.writebacks >= PAGES, "{c:?}");
    assert!(c.evictions > 0, "a 32-page cache held 48 pages: {c:?}");
    let data = std::fs::read(dir.path().join("shared")).unwrap();
    for t in 0..TASKS {
        for p in 0..PAGES {
            let at = (p * 4096 + t * 600 + 5) as usize;
            let want = (t * 40 + p) as u8 | 1;
            assert!(
                data[at..at + 600].iter().all(|&x| x == want),
                "file: task {t} page {p}"
            );
        }
    }
}

#[test]
fn an_io_issued_by_the_last_runnable_task_goes_out_at_once() {
    // A task alone on its core issues one I/O at a time: its request goes into the ring
    // at the core's next turn, which must not wait for a completion that cannot come
    // (it waited for the 10 ms idle timeout per I/O: 200 reads took 2 s). A short sleep
    // set in the same round is not overslept either (the wait ends at its deadline).
    // Either fault is a core idle in its ring for the whole timeout with no I/O in
    // flight, which the run counts (`idle_timeouts`) — a count, whatever the machine's
    // load. Policy `none`: no counters' sampling, whose timer would cut such waits short.
    let dir = tempfile::tempdir().unwrap();
    let s = Stack::builder()
        .directory(dir.path())
        .direct(false)
        .cores(1)
        .policy("none")
        .build()
        .unwrap();
    let out = s.run(|| async {
        let f = File::create("qd1").await.unwrap();
        f.write_at(DmaBuffer::new(4096), 0).await.0.unwrap();
        for _ in 0..200 {
            f.read_at(DmaBuffer::new(4096), 0).await.0.unwrap();
        }
        for _ in 0..20 {
            sleep(1_000_000).await;
        }
    });
    let out = match out {
        Ok(o) => o,
        Err(e) if skip(&e) => return,
        Err(e) => panic!("{e}"),
    };
    let rt = out.report.extra.runtime.as_ref().unwrap();
    assert_eq!(
        rt.idle_timeouts, 0,
        "the core sat out its idle timeout while the task's read or sleep was due"
    );
}

/// `readable`: a task on core 1 waits on its core's ring for a pipe that another core's
/// task writes to later; a descriptor already readable answers at once; the wait is
/// woken by the ring, not by polling (the waiter is blocked until the write).
#[test]
fn readable_wakes_a_task_on_its_own_cores_ring() {
    let mut fds = [0i32; 2];
    // SAFETY: a plain system call filling `fds`.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    let (rd, wr) = (fds[0], fds[1]);
    let Some(out) = run(2, Inherit::ON, move || async move {
        let woke = Arc::new(AtomicBool::new(false));
        let w2 = woke.clone();
        let h = spawn_on(TaskCtx::new("waiter").core(1), move || async move {
            let ev = sluice_runtime::readable(rd).await.unwrap();
            w2.store(true, Ordering::SeqCst);
            let mut b = [0u8; 1];
            // SAFETY: a read into our byte.
            assert_eq!(unsafe { libc::read(rd, b.as_mut_ptr().cast(), 1) }, 1);
            (ev, b[0])
        });
        for _ in 0..50 {
            yield_now().await;
        }
        let before = woke.load(Ordering::SeqCst);
        // SAFETY: a write of our byte.
        assert_eq!(unsafe { libc::write(wr, [7u8].as_ptr().cast(), 1) }, 1);
        let (ev, byte) = h.await;
        // Already readable: at once.
        // SAFETY: as above.
        assert_eq!(unsafe { libc::write(wr, [8u8].as_ptr().cast(), 1) }, 1);
        let again = sluice_runtime::readable(rd).await.unwrap();
        (before, ev, byte, again)
    }) else {
        return;
    };
    let (before, ev, byte, again) = out.value;
    assert!(!before, "the waiter woke before the pipe had data");
    assert_ne!(ev & libc::POLLIN as u32, 0, "revents {ev:#x}");
    assert_ne!(again & libc::POLLIN as u32, 0, "revents {again:#x}");
    assert_eq!(byte, 7);
    // SAFETY: our descriptors.
    unsafe {
        libc::close(rd);
        libc::close(wr);
    }
}

/// Off a real stack's core (the simulated world) `readable` says so at once.
#[test]
fn readable_off_a_real_core_is_unsupported() {
    let out = Stack::builder()
        .build()
        .unwrap()
        .run(|| async { sluice_runtime::readable(0).await })
        .unwrap();
    let e = out.value.unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::Unsupported, "{e}");
}

/// A completion: key, result, the thread it came on.
type Done = (u32, i32, String);

/// A sink that keeps its commands' completions and the thread each came on, and wakes
/// the task that waits for them.
#[derive(Default)]
struct Kept {
    done: std::sync::Mutex<(Vec<Done>, Option<std::task::Waker>)>,
}

impl sluice_runtime::CmdSink for Kept {
    fn done(&self, key: u32, res: i32) {
        let name = std::thread::current().name().unwrap_or("").to_string();
        let mut d = self.done.lock().unwrap();
        d.0.push((key, res, name));
        if let Some(w) = d.1.take() {
            w.wake();
        }
    }
}

/// Until `k` holds `n` completions.
struct Completions<'a>(&'a Kept, usize);

impl Future for Completions<'_> {
    type Output = Vec<Done>;
    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let mut d = self.0.done.lock().unwrap();
        if d.0.len() >= self.1 {
            return std::task::Poll::Ready(d.0.clone());
        }
        d.1 = Some(cx.waker().clone());
        std::task::Poll::Pending
    }
}

/// `commands`: a task on core 1 submits three commands (NOPs in 128-byte SQEs) on its
/// core's ring; their completions reach its sink on that core's thread, with their keys;
/// another thread may not submit them.
#[test]
fn commands_complete_to_their_sink_on_the_cores_thread() {
    let dir = tempfile::tempdir().unwrap();
    let s = Stack::builder()
        .directory(dir.path())
        .direct(false)
        .cores(2)
        .uring_commands(true)
        .build()
        .unwrap();
    let out = s.run(|| async {
        spawn_on(TaskCtx::new("cmds").core(1), || async {
            let kept = Arc::new(Kept::default());
            let cmds = sluice_runtime::commands(kept.clone()).unwrap();
            assert_eq!(cmds.core(), 1);
            assert!(cmds.here());
            for key in [7u32, 8, 9] {
                let nop = io_uring::opcode::Nop::new().build();
                // SAFETY: a NOP points at nothing.
                unsafe { cmds.submit(nop.into(), key) }.unwrap();
            }
            let elsewhere = std::thread::spawn(move || {
                let nop = io_uring::opcode::Nop::new().build();
                // SAFETY: as above (refused anyway).
                (cmds.here(), unsafe { cmds.submit(nop.into(), 1) }.is_err())
            })
            .join()
            .unwrap();
            (Completions(&kept, 3).await, elsewhere)
        })
        .await
    });
    let out = match out {
        Ok(o) => o,
        Err(e) if skip(&e) => return,
        Err(e) => panic!("{e}"),
    };
    let (mut done, elsewhere) = out.value;
    done.sort();
    let keys: Vec<(u32, i32)> = done.iter().map(|d| (d.0, d.1)).collect();
    assert_eq!(keys, [(7, 0), (8, 0), (9, 0)]);
    assert!(done.iter().all(|d| d.2 == "sluice-core-1"), "{done:?}");
    assert_eq!(elsewhere, (false, true));
}

/// Without `uring_commands` (64-byte SQEs), and off a real stack's core, `commands` is
/// refused and says why.
#[test]
fn commands_need_128_byte_rings() {
    let dir = tempfile::tempdir().unwrap();
    let s = Stack::builder()
        .directory(dir.path())
        .direct(false)
        .cores(1)
        .build()
        .unwrap();
    let out = s.run(|| async { sluice_runtime::commands(Arc::new(Kept::default())).err() });
    match out {
        Ok(o) => {
            let e = o.value.expect("refused");
            assert!(e.to_string().contains("uring_commands(true)"), "{e}");
        }
        Err(e) if skip(&e) => {}
        Err(e) => panic!("{e}"),
    }
    let out = Stack::builder()
        .build()
        .unwrap()
        .run(|| async { sluice_runtime::commands(Arc::new(Kept::default())).err() })
        .unwrap();
    let e = out.value.expect("refused");
    assert_eq!(e.kind(), std::io::ErrorKind::Unsupported, "{e}");
}

/// A core submits the SQEs of its turn before it runs the turn's round of tasks: an I/O
/// a task issued in the last round never waits in the ring behind this round's polls.
/// A writer writes 32 blocks one after the other and, just before issuing each, wakes a
/// looker; the looker runs in the next round — the one after the turn that wrote the
/// write's SQE — and looks at the SQEs its core wrote and did not submit yet. (The
/// looker waits between writes rather than spinning: a core that always has a task to
/// run never waits in its ring, where completions deferred to the ring's owner are
/// reaped.)
#[test]
fn a_turns_sqes_are_submitted_before_its_round_runs() {
    let Some(out) = run(1, Inherit::ON, || async {
        let f = Arc::new(File::create("data").await.unwrap());
        // (writes announced, writer done), and the looker's wake-up.
        let st = Arc::new((Mutex::new((0u64, false)), Condvar::new()));
        let st2 = st.clone();
        let writer = spawn(TaskCtx::new("writer"), async move {
            for k in 0..32u64 {
                {
                    let (m, cv) = &*st2;
                    m.lock().await.0 += 1;
                    cv.notify_all();
                }
                let b = DmaBuffer::from_slice(&[k as u8; 4096]);
                assert_eq!(f.write_at(b, k * 4096).await.0.unwrap(), 4096);
            }
            let (m, cv) = &*st2;
            m.lock().await.1 = true;
            cv.notify_all();
        });
        let looker = spawn(TaskCtx::new("looker"), async move {
            let (m, cv) = &*st;
            let (mut seen, mut looks, mut most) = (0u64, 0u64, 0usize);
            loop {
                let mut g = m.lock().await;
                while g.0 == seen && !g.1 {
                    g = cv.wait(g).await;
                }
                if g.1 {
                    return (looks, most);
                }
                seen = g.0;
                drop(g);
                most = most.max(sluice_runtime::diag::unsubmitted_sqes());
                looks += 1;
            }
        });
        writer.await;
        looker.await
    }) else {
        return;
    };
    let (looks, most) = out.value;
    assert!(
        looks >= 16,
        "the looker ran beside the writes ({looks} looks)"
    );
    assert_eq!(most, 0, "an SQE waited unsubmitted while a round ran");
}

/// A core whose tasks are runnable at every turn never waits in its ring; the
/// completions the kernel defers to the ring's owner (`DEFER_TASKRUN`: a buffered write
/// finished by a worker thread) still reach their task, because the enter after each
/// round asks for them when the kernel has marked the ring. Counted, not timed: a
/// spinner that yields in a loop stops when the writes are done, or after 2 million
/// turns — which it reaches only if the writes waited for it to stop.
#[test]
fn a_core_that_never_waits_still_gets_its_completions() {
    const BOUND: u64 = 2_000_000;
    let Some(out) = run(1, Inherit::ON, || async {
        let f = File::create("data").await.unwrap();
        let done = Arc::new(AtomicBool::new(false));
        let d2 = done.clone();
        let spinner = spawn(TaskCtx::new("spinner"), async move {
            let mut turns = 0u64;
            while !d2.load(Ordering::SeqCst) && turns < BOUND {
                yield_now().await;
                turns += 1;
            }
            turns
        });
        for i in 0..32u64 {
            let mut b = DmaBuffer::new(4096);
            b.fill(i as u8);
            f.write_at(b, i * 4096).await.0.unwrap();
        }
        done.store(true, Ordering::SeqCst);
        spinner.await
    }) else {
        return;
    };
    assert!(
        out.value < BOUND,
        "the writes completed only after the spinner gave up ({} turns)",
        out.value
    );
}

/// The calling thread's CPU mask, ascending.
fn my_cpus() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain bits; the call writes only the given set.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        assert_eq!(
            libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set),
            0
        );
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

/// `pin_cores`: each core's thread may run only on its CPU (core 1 on the first CPU
/// given, core 0 on the second: the order given, not the CPUs' order), and the calling
/// thread, which was core 0, gets its mask back after the run.
#[test]
fn pinned_cores_run_only_on_their_cpus_and_core_0_gets_its_mask_back() {
    let allowed = my_cpus();
    if allowed.len() < 2 {
        eprintln!("skipped: one CPU allowed");
        return;
    }
    let cpus = vec![allowed[1], allowed[0]];
    let dir = tempfile::tempdir().unwrap();
    let s = Stack::builder()
        .directory(dir.path())
        .direct(false)
        .cores(2)
        .pin_cores(cpus.clone())
        .build()
        .unwrap();
    let r = s.run(|| async {
        let on0 = my_cpus();
        let on1 = spawn_on(TaskCtx::new("one").core(1), || async { my_cpus() }).await;
        (on0, on1)
    });
    let o = match r {
        Ok(o) => o,
        Err(e) if skip(&e) => return,
        Err(e) => panic!("{e}"),
    };
    assert_eq!(o.value.0, vec![cpus[0]]);
    assert_eq!(o.value.1, vec![cpus[1]]);
    assert_eq!(my_cpus(), allowed);
}

/// A CPU no mask can hold is the core's start error, not a panic.
#[test]
fn pinning_to_a_cpu_past_the_mask_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let s = Stack::builder()
        .directory(dir.path())
        .direct(false)
        .cores(2)
        .pin_cores(vec![0, 1 << 20])
        .build()
        .unwrap();
    match s.run(|| async { 1 }) {
        Ok(_) => panic!("a core pinned to CPU 2^20 ran"),
        Err(e) if skip(&e) => {}
        Err(e) => assert!(e.to_string().contains("CPU 1048576"), "{e}"),
    }
}
