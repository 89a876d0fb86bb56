//! varmail on real files (a temporary directory) with 4 threads: more files are made
//! over the run than the rings' table of registered files holds (`MAX_FILES`), which
//! works because varmail closes its files and a closed file's slot is reused. Where
//! io_uring cannot be set up, the test says why and returns.

use sluice_apps::varmail::{run, VarmailConfig};
use sluice_runtime::{ReadPath, MAX_FILES};
use sluice_store::FsConfig;

#[test]
fn varmail_on_host_files_with_4_threads_makes_more_files_than_the_table_holds() {
    let cfg = VarmailConfig {
        threads: vec![4],
        loops: 300,
        files: 100,
        prealloc: 80,
        mean_file: 4 << 10,
        mean_append: 4 << 10,
        ..VarmailConfig::default()
    };
    // Each loop creates one file: the preallocated ones, then one per loop and thread.
    let made = cfg.files * cfg.prealloc / 100 + 4 * cfg.loops;
    assert!(made > MAX_FILES);
    let dir = tempfile::tempdir().unwrap();
    match run(
        &cfg,
        4,
        &FsConfig::Host,
        ReadPath::Vanilla,
        Some(dir.path()),
    ) {
        Ok(r) => assert!(r.ops_per_sec > 0.0, "{r:?}"),
        Err(e) if e.contains("cannot create an io_uring") || e.contains("file table") => {
            eprintln!("io_uring unavailable, test skipped: {e}");
        }
        Err(e) => panic!("{e}"),
    }
}
