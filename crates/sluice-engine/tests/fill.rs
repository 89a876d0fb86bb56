//! fio's `fill_device` under `sluice run`, on a small file system made for the test:
//! an 8 MiB tmpfs mounted on a temporary directory (root only; skipped, with the
//! reason, otherwise). The write phase ends at ENOSPC with error 0, its file is about
//! the file system's size, and the stonewalled read phase reads what was written.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::AtomicBool;

use sluice_core::policy::PolicySpec;
use sluice_engine::EngineConfig;

use crate::common::{cfg_in, jobs, prepare};

/// An 8 MiB tmpfs on a temporary directory, unmounted when dropped.
struct SmallFs {
    dir: tempfile::TempDir,
}

impl SmallFs {
    fn mount() -> Result<SmallFs, String> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err("not root: cannot mount a small tmpfs".into());
        }
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let st = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=8m", "sluice-fill-test"])
            .arg(dir.path())
            .status()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if !st.success() {
            return Err(format!("mount -t tmpfs failed ({st})"));
        }
        Ok(SmallFs { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        // The kernel may still hold the run's ring (and so its files) for a moment
        // after the run: a lazy unmount detaches now and frees when they are let go.
        let ok = Command::new("umount")
            .arg(self.dir.path())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            let _ = Command::new("umount")
                .arg("-l")
                .arg(self.dir.path())
                .status();
        }
    }
}

const SCAN: &str = "
[write-phase]
filename=datafile.tmp
rw=write
bs=64k
iodepth=4
fill_device=1
[verify-phase]
stonewall
filename=datafile.tmp
rw=read
bs=64k
";

#[test]
fn the_write_phase_ends_at_enospc_without_an_error() {
    let fs = match SmallFs::mount() {
        Ok(f) => f,
        Err(why) => {
            eprintln!("fill_device test skipped: {why}");
            return;
        }
    };
    let given = jobs(SCAN);
    let resolved = sluice_engine::resolve_fill(&given, fs.path())
        .expect("resolves")
        .expect("a fill_device job");
    let room = resolved[1].size;
    assert!(
        room > 7 << 20 && room <= 8 << 20,
        "the read phase reads the free space: {room}"
    );
    assert!(
        resolved[0].size > room,
        "the writer's end is ENOSPC, not its size"
    );
    let c: EngineConfig = cfg_in(fs.path(), Some(1));
    let Some(files) = prepare(&resolved, &c) else {
        return;
    };
    let stop = AtomicBool::new(false);
    let out = sluice_engine::run(
        &resolved,
        &files,
        &"none".parse::<PolicySpec>().unwrap(),
        &c,
        &stop,
        &mut |_| {},
    )
    .expect("runs");
    let file: PathBuf = fs.path().join("datafile.tmp");
    let len = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
    let [w, r] = &out.report.jobs[..] else {
        panic!("two jobs");
    };
    assert_eq!(w.error, 0, "ENOSPC ends a fill_device job without an error");
    assert_eq!(
        w.write.io_bytes, room,
        "written until the file system was full"
    );
    assert!(
        len >= room - (64 << 10) && len <= 8 << 20,
        "file of {len} bytes"
    );
    assert_eq!(r.error, 0);
    assert_eq!(
        r.read.io_bytes, room,
        "the read phase reads what was written"
    );
    drop(files);
}

#[test]
fn the_files_laid_out_first_take_their_space_from_the_room() {
    let fs = match SmallFs::mount() {
        Ok(f) => f,
        Err(why) => {
            eprintln!("fill_device test skipped: {why}");
            return;
        }
    };
    let given = jobs(&format!(
        "[other]\nrw=read\nsize=2m\nfilename=other\n{SCAN}"
    ));
    let resolved = sluice_engine::resolve_fill(&given, fs.path())
        .expect("resolves")
        .expect("a fill_device job");
    let room = resolved[2].size;
    assert!(
        room > 5 << 20 && room <= 6 << 20,
        "8 MiB less the 2 MiB laid out first: {room}"
    );
}

#[test]
fn a_reading_fill_job_is_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let j = jobs("[r]\nrw=read\nfill_device=1\n");
    let e = sluice_engine::resolve_fill(&j, dir.path()).unwrap_err();
    assert!(e.to_string().contains("does not write"), "{e}");
    let none = jobs("[w]\nrw=write\nsize=1m\n");
    assert!(sluice_engine::resolve_fill(&none, dir.path())
        .unwrap()
        .is_none());
}
