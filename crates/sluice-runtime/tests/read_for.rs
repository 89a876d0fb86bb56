//! `File::read_for`: a read issued from outside a task, for a parked task of the same
//! core, is that task's — its flow and class in the block layer and the report — and
//! its completion wakes it. Refused on another core's thread and over dirty cached
//! pages. On real files; where io_uring cannot be set up, each test says why and
//! returns.

use crate::common;
use common::skip;

use std::cell::{Cell, RefCell};
use std::future::poll_fn;
use std::rc::Rc;
use std::task::Poll;

use sluice_runtime::{
    current_task_id, spawn, spawn_on, yield_now, CacheConfig, DmaBuffer, File, IoClass, IoHandle,
    IoOptions, RunOutput, Stack, TaskCtx, TaskId,
};

fn run<T: 'static, Fut: std::future::Future<Output = T> + 'static>(
    cache: bool,
    main: impl FnOnce() -> Fut,
) -> Option<RunOutput<T>> {
    let dir = tempfile::tempdir().unwrap();
    let mut b = Stack::builder()
        .directory(dir.path())
        .cores(2)
        .policy("rcp");
    if cache {
        b = b.cache(CacheConfig {
            pages: 64,
            ..Default::default()
        });
    }
    match b.build().unwrap().run(main) {
        Ok(o) => Some(o),
        Err(e) if skip(&e) => None,
        Err(e) => panic!("{e}"),
    }
}

/// A parked task of the main task's core (core 0): it tells its id, then waits for a
/// handle in `mail` — polled again only when the read issued for it completes — and
/// returns what the read gave.
fn parked(
    mail: Rc<RefCell<Option<IoHandle>>>,
    id: Rc<Cell<Option<TaskId>>>,
) -> sluice_runtime::JoinHandle<(usize, Vec<u8>, u32)> {
    let ctx = TaskCtx::new("crit").class(IoClass::Critical).core(0);
    spawn(ctx, async move {
        let polls = Rc::new(Cell::new(0u32));
        let p = polls.clone();
        let h = poll_fn(|_| {
            p.set(p.get() + 1);
            id.set(current_task_id());
            match mail.borrow_mut().take() {
                Some(h) => Poll::Ready(h),
                None => Poll::Pending,
            }
        })
        .await;
        let (r, b) = h.await;
        (r.unwrap(), b[..8].to_vec(), polls.get())
    })
}

#[test]
fn a_read_for_a_parked_task_is_its_own_and_wakes_it() {
    let Some(out) = run(false, || async {
        let f = File::create("data").await.unwrap();
        let mut b = DmaBuffer::new(8192);
        b.fill(7);
        f.write_at(b, 0).await.0.unwrap();
        let (mail, id) = (Rc::new(RefCell::new(None)), Rc::new(Cell::new(None)));
        let w = parked(mail.clone(), id.clone());
        while id.get().is_none() {
            yield_now().await;
        }
        // The main task (normal class, flow "main") issues it, for the critical task.
        let h = f
            .read_for(
                id.get().unwrap(),
                DmaBuffer::new(4096),
                4096,
                IoOptions::new(),
            )
            .unwrap_or_else(|_| panic!("refused on the task's own core"));
        *mail.borrow_mut() = Some(h);
        w.await
    }) else {
        return;
    };
    let (n, bytes, polls) = out.value;
    assert_eq!((n, bytes), (4096, vec![7u8; 8]));
    // Parked once, then woken by the read's completion: no other wake-up.
    assert_eq!(polls, 2);
    let crit = out
        .report
        .classes
        .iter()
        .find(|c| c.class == IoClass::Critical)
        .map_or(0, |c| c.ios);
    assert_eq!(crit, 1, "the read went with the main task's class");
    let j = out
        .report
        .jobs
        .iter()
        .find(|j| j.jobname.starts_with("crit/"))
        .expect("a job of the parked task's flow");
    assert_eq!(j.read.total_ios, 1);
}

#[test]
fn read_for_is_refused_on_another_core_and_over_dirty_pages() {
    let Some(out) = run(true, || async {
        let f = File::create("data").await.unwrap();
        let mut b = DmaBuffer::new(8192);
        b.fill(7);
        f.write_at(b, 0).await.0.unwrap();
        let (mail, id) = (Rc::new(RefCell::new(None)), Rc::new(Cell::new(None)));
        let w = parked(mail.clone(), id.clone());
        while id.get().is_none() {
            yield_now().await;
        }
        let task = id.get().unwrap();
        // From core 1's thread: refused.
        let other = spawn_on(TaskCtx::new("other").core(1), move || async move {
            let f = File::open("data").await.unwrap();
            f.read_for(task, DmaBuffer::new(4096), 0, IoOptions::new())
                .is_err()
        })
        .await;
        // A dirty page of the range in the cache: refused (a read through the task
        // writes it back first); a clean range is not.
        f.write_buffered(4096, &[9u8; 16]).await.unwrap();
        let dirty = f
            .read_for(task, DmaBuffer::new(4096), 4096, IoOptions::new())
            .is_err();
        let h = f
            .read_for(task, DmaBuffer::new(4096), 0, IoOptions::new())
            .unwrap_or_else(|_| panic!("a clean range refused"));
        *mail.borrow_mut() = Some(h);
        let got = w.await;
        (other, dirty, got.1)
    }) else {
        return;
    };
    assert_eq!(out.value, (true, true, vec![7u8; 8]));
}
