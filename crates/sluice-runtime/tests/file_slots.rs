//! Closing files and the rings' table of registered files (`MAX_FILES` slots): a closed
//! file's slot is reused once its I/O and dirty pages are done, so a real stack makes
//! any number of files over its life; the table full of open files is a clear error;
//! closed handles refuse I/O, in both worlds. Where io_uring cannot be set up, each
//! test says why and returns.

use crate::common;
use common::skip;

use sluice_runtime::{
    spawn_on, CacheConfig, DmaBuffer, File, RunOutput, Stack, StackBuilder, TaskCtx, MAX_FILES,
};

fn run<T: 'static, Fut: std::future::Future<Output = T> + 'static>(
    b: StackBuilder,
    main: impl FnOnce() -> Fut,
) -> Option<RunOutput<T>> {
    match b.build().unwrap().run(main) {
        Ok(o) => Some(o),
        Err(e) if skip(&e) => None,
        Err(e) => panic!("{e}"),
    }
}

/// A 4 KiB block naming its file: a read through a wrong slot would show another's.
fn block(task: u64, i: u64) -> DmaBuffer {
    let mut b = DmaBuffer::new(4096);
    for (k, x) in b.chunks_mut(8).enumerate() {
        x.copy_from_slice(&(task << 48 | i << 16 | k as u64).to_le_bytes());
    }
    b
}

/// 4 tasks on 2 cores each make 800 files (3 200 in all, more than three times the
/// table): create, write, fsync, close, open again, read back, remove and close — in
/// both orders of the last two — while one file stays open throughout. Slots are freed
/// by one core and taken by the other all the time.
#[test]
fn thousands_of_files_are_made_and_removed_through_a_table_of_1024() {
    const TASKS: u64 = 4;
    const FILES: u64 = 800;
    assert!(TASKS * FILES > 3 * MAX_FILES as u64);
    let dir = tempfile::tempdir().unwrap();
    let b = Stack::builder()
        .directory(dir.path())
        .direct(false)
        .cores(2);
    let Some(out) = run(b, || async {
        let keep = File::create("keep").await.unwrap();
        keep.write_at(block(9, 9), 0).await.0.unwrap();
        let mut hs = Vec::new();
        for t in 0..TASKS {
            hs.push(spawn_on(
                TaskCtx::new(format!("maker{t}")),
                move || async move {
                    for i in 0..FILES {
                        let name = format!("f{t}-{i}");
                        let f = File::create(&name).await.unwrap();
                        f.write_at(block(t, i), 0).await.0.unwrap();
                        f.fsync().await.unwrap();
                        f.close().await.unwrap();
                        // Closed: its handles' I/O is refused.
                        let (r, _) = f.read_at(DmaBuffer::new(4096), 0).await;
                        assert!(r.unwrap_err().to_string().contains("closed"));
                        let g = File::open(&name).await.unwrap();
                        let (r, back) = g.read_at(DmaBuffer::new(4096), 0).await;
                        assert_eq!(r.unwrap(), 4096);
                        assert!(back[..] == block(t, i)[..], "{name} read back wrong");
                        if i % 2 == 0 {
                            File::remove(&name).await.unwrap();
                            g.close().await.unwrap();
                        } else {
                            g.close().await.unwrap();
                            File::remove(&name).await.unwrap();
                        }
                    }
                },
            ));
        }
        for h in hs {
            h.await;
        }
        let (r, back) = keep.read_at(DmaBuffer::new(4096), 0).await;
        r.unwrap();
        assert!(back[..] == block(9, 9)[..]);
    }) else {
        return;
    };
    let j = out
        .report
        .jobs
        .iter()
        .filter(|j| j.jobname.starts_with("maker"))
        .map(|j| j.write.total_ios)
        .sum::<u64>();
    assert_eq!(j, TASKS * FILES);
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(left.len(), 1, "only 'keep' is left");
}

/// With every slot held by an open file, a new file is a clear error; removing a name
/// does not free its slot (its handles stay usable), closing does.
#[test]
fn a_table_full_of_open_files_says_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let b = Stack::builder()
        .directory(dir.path())
        .direct(false)
        .cores(1);
    let where_ = dir.path().display().to_string();
    run(b, move || async move {
        let mut open = Vec::new();
        for i in 0..MAX_FILES {
            open.push(File::create(&format!("o{i}")).await.unwrap());
        }
        let e = File::create("one-more").await.unwrap_err().to_string();
        assert!(
            e.contains("table of registered files is full")
                && e.contains("1024 files")
                && e.contains("File::close")
                && e.contains(&where_),
            "{e}"
        );
        File::remove("o0").await.unwrap();
        assert!(File::create("one-more").await.is_err());
        // Still usable after its name went.
        open[0].write_at(block(0, 0), 0).await.0.unwrap();
        open[0].close().await.unwrap();
        let f = File::create("one-more").await.unwrap();
        f.write_at(block(1, 1), 0).await.0.unwrap();
        // A closed file is not closed twice.
        assert!(open[0].close().await.is_err());
    });
}

/// Closing in simulation: the same rules (I/O refused once closed, opened again by
/// name, one close per open) and the same report as without the closes.
#[test]
fn closing_in_simulation_keeps_the_report() {
    async fn program(close: bool) {
        for i in 0..50u64 {
            let f = File::create(&format!("s{i}")).await.unwrap();
            f.write_at(block(0, i), 0).await.0.unwrap();
            if close {
                let g = File::open(&format!("s{i}")).await.unwrap();
                assert_eq!(f, g);
                f.close().await.unwrap();
                g.read_at(DmaBuffer::new(4096), 0).await.0.unwrap();
                g.close().await.unwrap();
                assert!(f.read_at(DmaBuffer::new(4096), 0).await.0.is_err());
                assert!(f.write_at(DmaBuffer::new(4096), 0).await.0.is_err());
                assert!(f.fsync().await.is_err());
                let g = File::open(&format!("s{i}")).await.unwrap();
                let (r, back) = g.read_at(DmaBuffer::new(4096), 0).await;
                r.unwrap();
                assert!(back[..] == block(0, i)[..]);
            } else {
                f.read_at(DmaBuffer::new(4096), 0).await.0.unwrap();
                f.read_at(DmaBuffer::new(4096), 0).await.0.unwrap();
            }
        }
    }
    let report = |close: bool| {
        let out = Stack::builder()
            .device("ull")
            .build()
            .unwrap()
            .run(move || program(close))
            .unwrap();
        serde_json::to_string(&out.report).unwrap()
    };
    assert_eq!(report(false), report(true));
}

/// A file closed with dirty cached pages keeps its descriptor until the flusher wrote
/// them back (to that file), and its data reaches the disk.
#[test]
fn a_file_closed_with_dirty_pages_is_written_back() {
    let dir = tempfile::tempdir().unwrap();
    let cache = CacheConfig {
        pages: 64,
        dirty_ratio_normal: 0.25,
        ..CacheConfig::default()
    };
    let b = Stack::builder()
        .directory(dir.path())
        .direct(false)
        .cores(1)
        .cache(cache);
    let Some(_) = run(b, || async {
        let a = File::create("a").await.unwrap();
        a.write_buffered(0, &[0xa5; 40 << 12]).await.unwrap();
        a.close().await.unwrap();
        // Enough other buffered writes to make the flusher write everything back.
        let b = File::create("b").await.unwrap();
        for i in 0..8u64 {
            b.write_buffered(i << 16, &[1; 64 << 10]).await.unwrap();
        }
        b.fsync().await.unwrap();
        // Opened again, read through the cache or the disk: the same bytes.
        let a = File::open("a").await.unwrap();
        let mut back = vec![0u8; 40 << 12];
        a.read_buffered(0, &mut back).await.unwrap();
        assert!(back.iter().all(|&x| x == 0xa5));
        a.fsync().await.unwrap();
    }) else {
        return;
    };
    let on_disk = std::fs::read(dir.path().join("a")).unwrap();
    assert_eq!(on_disk.len(), 40 << 12);
    assert!(on_disk.iter().all(|&x| x == 0xa5));
}
