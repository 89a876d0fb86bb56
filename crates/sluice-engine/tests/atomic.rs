//! fio's `atomic=1` under `sluice run`: a file whose file system has no atomic write
//! unit (`statx` `STATX_WRITE_ATOMIC` max 0, as every file and device of this
//! machine) is refused at set-up in one line naming the job and the file, before any
//! file is laid out.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::AtomicBool;

use crate::common::{cfg_in, jobs};
use sluice_engine::EngineError;

/// Whether `path`'s atomic write unit is above 0, asked of the kernel directly.
fn has_atomic_writes(path: &Path) -> bool {
    let c = CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: plain old data, a valid path and out pointer.
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    let rc = unsafe {
        libc::statx(
            libc::AT_FDCWD,
            c.as_ptr(),
            0,
            libc::STATX_WRITE_ATOMIC,
            &mut stx,
        )
    };
    rc == 0 && stx.stx_mask & libc::STATX_WRITE_ATOMIC != 0 && stx.stx_atomic_write_unit_max > 0
}

fn prepare(j: &[sluice_workload::JobSpec], dir: &Path) -> Result<(), EngineError> {
    let stop = AtomicBool::new(false);
    // Writing an existing file needs its permission (`--allow-write-existing`).
    let c = sluice_engine::EngineConfig {
        allow_write_existing: true,
        ..cfg_in(dir, None)
    };
    sluice_engine::prepare(j, &c, &stop, &mut |_, _, _| {}).map(|_| ())
}

#[test]
fn atomic_writes_to_a_file_without_them_are_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    // An existing file of the test's file system: its unit decides.
    let f = dir.path().join("data");
    std::fs::write(&f, vec![0u8; 1 << 20]).unwrap();
    if has_atomic_writes(&f) {
        eprintln!("the test directory's file system has atomic writes: refusal not tested");
        return;
    }
    let named = jobs(&format!(
        "[w]\nrw=randwrite\nbs=4k\nsize=1m\natomic=1\nfilename={}\n",
        f.display()
    ));
    let e = prepare(&named, dir.path()).unwrap_err();
    assert!(matches!(e, EngineError::Atomic(_)), "{e:?}");
    let msg = e.to_string();
    assert!(!msg.contains('\n'), "one line: {msg}");
    assert!(msg.contains("job 'w' has atomic=1"), "{msg}");
    assert!(
        msg.contains(&format!(
            "{} (statx STATX_WRITE_ATOMIC) does not support atomic writes",
            f.display()
        )),
        "{msg}"
    );
    // A file sluice would create: its directory's file system is probed, and nothing
    // is left behind (no probe, no laid-out file).
    std::fs::remove_file(&f).unwrap();
    let new = jobs("[w]\nrw=randwrite\nbs=4k\nsize=1m\natomic=1\n");
    let msg = prepare(&new, dir.path()).unwrap_err().to_string();
    assert!(
        msg.contains("a new file in") && msg.contains("does not support atomic writes"),
        "{msg}"
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing laid out"
    );
    // The same job without atomic=1 is not refused for it.
    let plain = jobs("[w]\nrw=randwrite\nbs=4k\nsize=1m\n");
    match prepare(&plain, dir.path()) {
        Ok(()) | Err(EngineError::Ring { .. }) => {}
        Err(e) => panic!("{e}"),
    }
}
