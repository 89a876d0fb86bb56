//! `zonemode=zbd` under `sluice run`: a file that is not a zoned block device is
//! refused with one line saying what it is and what to do; `zonemode=strided` runs on
//! any file.

use crate::common;

use common::{cfg_in, jobs, prepare};
use sluice_engine::EngineError;

#[test]
fn zbd_on_a_regular_file_is_refused_strided_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let zbd = jobs("[z]\ndirect=1\nrw=write\nbs=64k\nsize=4m\nzonemode=zbd\nzonesize=1m\n");
    let e = sluice_engine::plan(&zbd, dir.path(), false, false).unwrap_err();
    assert!(matches!(e, EngineError::NotZoned { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(!msg.contains('\n'), "one line: {msg}");
    assert!(
        msg.contains("job 'z'") && msg.contains("zonemode=zbd needs a zoned block device"),
        "{msg}"
    );
    assert!(msg.contains("sluice sim --device zns"), "{msg}");
    // An existing regular file says so.
    let f = dir.path().join("data");
    std::fs::write(&f, vec![0u8; 4 << 20]).unwrap();
    let named = jobs(&format!(
        "[z]\ndirect=1\nrw=read\nbs=64k\nsize=4m\nzonemode=zbd\nfilename={}\n",
        f.display()
    ));
    let msg = sluice_engine::plan(&named, dir.path(), false, false)
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("is a regular file, not a zoned block device"),
        "{msg}"
    );

    let strided = jobs(
        "[s]\ndirect=1\nrw=read\nbs=64k\nsize=4m\nzonemode=strided\nzonesize=256k\nzoneskip=768k\n",
    );
    assert!(sluice_engine::plan(&strided, dir.path(), false, false).is_ok());
    let c = cfg_in(dir.path(), None);
    let Some(files) = prepare(&strided, &c) else {
        return;
    };
    let stop = std::sync::atomic::AtomicBool::new(false);
    let out = sluice_engine::run(
        &strided,
        &files,
        &"none".parse().unwrap(),
        &c,
        &stop,
        &mut |_| {},
    )
    .unwrap();
    let r = &out.report.jobs[0];
    assert_eq!((r.error, r.read.io_bytes), (0, 4 << 20));
}
