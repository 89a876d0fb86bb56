//! `Store::inspect` (what `sluice fsck` runs): recovery in memory only. It reports what
//! a mount would redo and find — the same files, the same structure check — and writes
//! nothing, so a mount afterwards still has the same to redo.

use crate::common;

use common::{crash_after, on_image};
use sluice_runtime::{set_class, IoClass};
use sluice_store::{CommitMode, Geometry, Inspection, Store, StoreStats};

/// Inspect `image` twice, then mount it: both inspections, and the mount's counters
/// and files.
fn inspect_then_mount(
    mode: CommitMode,
    image: sluice_runtime::DiskImage,
) -> (Inspection, Inspection, StoreStats, Vec<(String, u64)>) {
    on_image(image, move |f| async move {
        let a = Store::inspect(&f).await.unwrap();
        let b = Store::inspect(&f).await.unwrap();
        let s = Store::mount(&f, mode).await.unwrap();
        assert_eq!(s.check(), Vec::<String>::new());
        (a, b, s.stats(), s.list())
    })
}

#[test]
fn inspection_reports_what_a_mount_recovers_and_writes_nothing() {
    for mode in [CommitMode::Compound, CommitMode::FileLevel] {
        let image = crash_after(mode, Geometry::new(4096), 3, |s| async move {
            for i in 0..3u8 {
                let h = s.create(&format!("f{i}")).unwrap();
                s.write(h, 0, &[i + 1; 100_000]).await.unwrap();
                s.sync().await.unwrap();
            }
            let h = s.open("f1").unwrap();
            set_class(IoClass::Critical);
            s.write(h, 100_000, &[9; 40_000]).await.unwrap();
            s.fsync(h).await.unwrap();
            // Never committed: an orphan for recovery to free, or nothing.
            s.create("late").unwrap();
        });
        let (a, b, stats, files) = inspect_then_mount(mode, image);
        assert_eq!(a, b, "{mode:?}: the first inspection changed the image");
        assert_eq!(
            (a.redone, a.fredone),
            (stats.redone, stats.fredone),
            "{mode:?}"
        );
        assert!(a.redone + a.fredone > 0, "{mode:?}: nothing to redo: {a:?}");
        assert_eq!(a.orphans, stats.orphans, "{mode:?}");
        assert_eq!(a.files, files, "{mode:?}");
        assert!(a.files.contains(&("f1".to_string(), 140_000)), "{a:?}");
        // f0 and f2 were written in one piece each; f1 grew past the room its run had
        // left before f2's (26 blocks in a window of 32), so it lies in two runs.
        assert_eq!(a.non_contiguous, 1, "{mode:?}: {a:?}");
        assert!(a.problems.is_empty(), "{a:?}");
        assert!(a.to_write > 0 && a.free_blocks > 0, "{a:?}");
    }
}
