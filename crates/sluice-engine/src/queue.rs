//! The block device queue under a file, as the kernel's writeback sees it: the largest
//! request (`queue/max_sectors_kb`), the queue's depth (`queue/nr_requests`) and
//! whether writeback throttling is on (`queue/wbt_lat_usec` > 0), read from sysfs
//! (`/sys/dev/block/MAJOR:MINOR/queue`, a partition's being its disk's). The buffered
//! front's writeback takes them ([`FrontConfig::with_queue`]), as Linux's flusher
//! merges a file's dirty pages up to the largest request and keeps wbt's depths in
//! flight.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

use sluice_fio::front::{FrontConfig, WritebackDepth};

use crate::files::FilePlan;

/// One queue's limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct QueueLimits {
    /// The largest request, bytes (`max_sectors_kb` × 1024).
    pub max_transfer: u64,
    /// Writeback requests in flight at most (wbt's depths on `nr_requests`).
    pub depth: WritebackDepth,
}

/// The limits of device `major:minor` under the sysfs root `sys` (`/sys`), if it has
/// a request queue (a partition: its disk's; a file system with no block device, as
/// tmpfs or overlay: none).
pub(crate) fn limits_in(sys: &Path, major: u32, minor: u32) -> Option<QueueLimits> {
    let dev = sys.join(format!("dev/block/{major}:{minor}"));
    let read = |name: &str| -> Option<u64> {
        ["queue", "../queue"].iter().find_map(|q| {
            std::fs::read_to_string(dev.join(q).join(name))
                .ok()?
                .trim()
                .parse()
                .ok()
        })
    };
    let kb = read("max_sectors_kb").filter(|&kb| kb > 0)?;
    let nr = read("nr_requests").unwrap_or(64).clamp(1, u32::MAX as u64) as u32;
    // No wbt_lat_usec: a kernel without writeback throttling.
    let wbt_on = read("wbt_lat_usec").is_some_and(|us| us > 0);
    Some(QueueLimits {
        max_transfer: kb * 1024,
        depth: WritebackDepth::of_queue(nr, wbt_on),
    })
}

/// The limits of the queue `path` is on: a block device's own, a file's file
/// system's (a file not created yet: its directory's).
pub(crate) fn limits_of(path: &Path) -> Option<QueueLimits> {
    let m = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(_) => std::fs::metadata(path.parent()?).ok()?,
    };
    let dev = if m.file_type().is_block_device() {
        m.rdev()
    } else {
        m.dev()
    };
    limits_in(Path::new("/sys"), libc::major(dev), libc::minor(dev))
}

/// `cfg` on the queues of the buffered jobs' files (`buffered`: the plan's files that
/// buffered jobs use): the smallest largest request and the smallest depths of their
/// queues; `cfg` as given when none is found.
pub(crate) fn front_config(cfg: FrontConfig, plan: &FilePlan, buffered: &[bool]) -> FrontConfig {
    let mut found: Option<QueueLimits> = None;
    for (f, _) in plan.files.iter().zip(buffered).filter(|(_, &b)| b) {
        let Some(q) = limits_of(&f.path) else {
            continue;
        };
        found = Some(match found {
            None => q,
            Some(p) => QueueLimits {
                max_transfer: p.max_transfer.min(q.max_transfer),
                depth: WritebackDepth {
                    background: p.depth.background.min(q.depth.background),
                    throttled: p.depth.throttled.min(q.depth.throttled),
                },
            },
        });
    }
    match found {
        Some(q) => cfg.with_queue(q.max_transfer, q.depth),
        None => cfg,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(dir: &Path, name: &str, v: &str) {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join(name), format!("{v}\n")).unwrap();
    }

    #[test]
    fn a_disks_queue_and_a_partitions_its_disks() {
        let t = tempfile::tempdir().unwrap();
        let disk = t.path().join("devices/vda");
        let q = disk.join("queue");
        put(&q, "max_sectors_kb", "4096");
        put(&q, "nr_requests", "256");
        put(&q, "wbt_lat_usec", "75000");
        // /sys/dev/block/MAJ:MIN are links to the device directories.
        std::fs::create_dir_all(t.path().join("dev/block")).unwrap();
        std::os::unix::fs::symlink(&disk, t.path().join("dev/block/254:0")).unwrap();
        let part = disk.join("vda1");
        std::fs::create_dir_all(&part).unwrap();
        std::os::unix::fs::symlink(&part, t.path().join("dev/block/254:1")).unwrap();
        let want = QueueLimits {
            max_transfer: 4 << 20,
            depth: WritebackDepth {
                background: 4,
                throttled: 8,
            },
        };
        assert_eq!(limits_in(t.path(), 254, 0), Some(want));
        assert_eq!(limits_in(t.path(), 254, 1), Some(want));
        // wbt off: the queue's depth.
        put(&q, "wbt_lat_usec", "0");
        assert_eq!(
            limits_in(t.path(), 254, 0).unwrap().depth,
            WritebackDepth::of_queue(256, false)
        );
        // No such device (tmpfs's 0:N): none.
        assert_eq!(limits_in(t.path(), 0, 42), None);
    }

    #[test]
    fn the_front_takes_the_queues_limits_or_keeps_its_own() {
        let cfg = FrontConfig::default();
        let q = cfg.with_queue(
            1 << 20,
            WritebackDepth {
                background: 4,
                throttled: 8,
            },
        );
        assert_eq!(q.writeback_run_pages, 256);
        assert_eq!(q.run_pages, cfg.run_pages);
        assert_eq!(q.writeback_pages, 8 * 256);
        // A device whose largest request is below a page still writes pages.
        assert_eq!(
            cfg.with_queue(512, q.writeback_depth).writeback_run_pages,
            1
        );
        let empty = FilePlan {
            files: Vec::new(),
            thread_file: Vec::new(),
            warnings: Vec::new(),
        };
        assert_eq!(front_config(cfg, &empty, &[]), cfg);
    }
}
