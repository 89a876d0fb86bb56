//! What the store's tests share: the image's name, a run on a fresh store that ends in
//! a cut of the power, and a recovery that checks the structure.

// Each test file uses what it needs of these.
#![allow(dead_code)]

use std::future::Future;
use std::rc::Rc;

use sluice_runtime::{CrashSpec, DiskImage, File, Stack};
use sluice_store::{CommitMode, Geometry, Store};

/// The store's file in the simulated stack.
pub const IMG: &str = "store.img";

/// Run `work` on a fresh store of geometry `g` on `nand` (a volatile write cache) and
/// cut the power when it ends; unflushed writes survive or not as `seed` draws.
pub fn crash_after<F, Fut>(mode: CommitMode, g: Geometry, seed: u64, work: F) -> DiskImage
where
    F: FnOnce(Rc<Store>) -> Fut + 'static,
    Fut: Future<Output = ()> + 'static,
{
    Stack::builder()
        .device("nand")
        .seed(seed)
        .build()
        .unwrap()
        .run_until_crash(
            u64::MAX,
            CrashSpec { seed, torn: true },
            move || async move {
                let f = File::create(IMG).await.unwrap();
                Store::mkfs(&f, g).await.unwrap();
                let s = Store::mount(&f, mode).await.unwrap();
                work(s).await
            },
        )
        .unwrap()
        .image
}

/// Open the store's file of `image` on `nand` and run `work` on it.
pub fn on_image<F, Fut, T>(image: DiskImage, work: F) -> T
where
    F: FnOnce(File) -> Fut + 'static,
    Fut: Future<Output = T> + 'static,
    T: 'static,
{
    Stack::builder()
        .device("nand")
        .image(image)
        .build()
        .unwrap()
        .run(move || async move { work(File::open(IMG).await.unwrap()).await })
        .unwrap()
        .value
}

/// Mount `image` on `nand` (recovery), check the structure, and run `check` on the
/// store.
pub fn recover<F, Fut, T>(mode: CommitMode, image: DiskImage, check: F) -> T
where
    F: FnOnce(Rc<Store>) -> Fut + 'static,
    Fut: Future<Output = T> + 'static,
    T: 'static,
{
    on_image(image, move |f| async move {
        let s = Store::mount(&f, mode).await.unwrap();
        assert_eq!(s.check(), Vec::<String>::new());
        check(s).await
    })
}

/// Device reads the tasks of flow `flow` issued in a run.
pub fn reads_of(report: &sluice_metrics::RunReport, flow: &str) -> u64 {
    report
        .jobs
        .iter()
        .filter(|j| j.flow == flow)
        .map(|j| j.read.total_ios)
        .sum()
}

/// A power cut (at `seed`) after three files were written and synced one by one —
/// `f0` and `f2` of `small` bytes, `f1` of `big` (past its direct blocks) — each file's
/// bytes its number + 1: a compound-mode image whose journal holds the committed
/// transactions, for the damaged-image tests and the image fuzzer.
pub fn three_files(seed: u64, big: usize, small: usize) -> sluice_runtime::DiskImage {
    crash_after(
        CommitMode::Compound,
        Geometry::new(4096),
        seed,
        move |s| async move {
            for i in 0..3u8 {
                let h = s.create(&format!("f{i}")).unwrap();
                let len = if i == 1 { big } else { small };
                s.write(h, 0, &vec![i + 1; len]).await.unwrap();
                s.sync().await.unwrap();
            }
        },
    )
}

/// Block `b` (4 KiB) of `f`.
pub async fn read_block(f: &sluice_runtime::File, b: u64) -> Vec<u8> {
    let (r, buf) = f
        .read_at(sluice_runtime::DmaBuffer::new(4096), b * 4096)
        .await;
    r.unwrap();
    buf.to_vec()
}

/// Write `v` at block `b` (4 KiB) of `f`.
pub async fn write_block(f: &sluice_runtime::File, b: u64, v: &[u8]) {
    let (r, _) = f
        .write_at(sluice_runtime::DmaBuffer::from_slice(v), b * 4096)
        .await;
    r.unwrap();
}
