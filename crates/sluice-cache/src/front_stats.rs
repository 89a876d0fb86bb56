//! The counters of the buffered front that runs fio's buffered jobs over this cache
//! (`sluice_fio::front`), kept here so that reports can carry them.

use crate::CacheStats;

/// The front's counters beside the cache's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct FrontStats {
    /// The page cache's counters.
    #[serde(flatten)]
    pub cache: CacheStats,
    /// Device reads issued (runs of pages).
    pub device_reads: u64,
    /// Device writes issued (runs of pages written back).
    pub device_writes: u64,
    /// Flushes issued by fsyncs.
    pub flushes: u64,
    /// Writebacks promoted to critical because a critical task waited on them.
    pub promotions: u64,
    /// Pages still dirty when a real run ended, written to their files then (outside
    /// the block layer, not measured), as the kernel writes back a file's pages after
    /// its writer has gone. Always 0 in the simulator, which has no data to keep.
    #[serde(skip_serializing_if = "is_zero")]
    pub written_after_run: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
