//! Tests of the file plan and the laid-out files.

use super::*;
use sluice_workload::{parse_str, ParseOptions};

fn jobs(text: &str) -> Vec<JobSpec> {
    parse_str(text, "t.fio", &ParseOptions::default())
        .unwrap()
        .jobs
}

#[test]
fn names_follow_fio_and_shared_files_merge() {
    let dir = tempfile::tempdir().unwrap();
    let j = jobs(
        "[a]\nsize=1m\nnumjobs=2\n[b]\nsize=2m\nfilename=shared\n[c]\nsize=3m\nfilename=shared\n",
    );
    let p = plan(&j, dir.path(), false, false).unwrap();
    let names: Vec<String> = p
        .files
        .iter()
        .map(|f| f.path.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["a.0.0", "a.1.0", "shared"]);
    assert_eq!(p.thread_file, vec![0, 1, 2, 2]);
    assert_eq!(p.files[2].size, 3 << 20);
    assert!(p.files.iter().all(|f| f.create));
    assert_eq!(p.files[1].base, 1 << 20);
    assert_eq!(p.files[2].base, 2 << 20);
    // Planning created nothing (the probe is gone too).
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn prepare_lays_out_and_removes() {
    let dir = tempfile::tempdir().unwrap();
    let j = jobs("[w]\nrw=randwrite\nsize=3m\n");
    let p = plan(&j, dir.path(), false, false).unwrap();
    let stop = AtomicBool::new(false);
    let set = FileSet::prepare(p, false, &stop, &mut |_, _, _| {}).unwrap();
    let path = set.created()[0].clone();
    let data = std::fs::read(&path).unwrap();
    assert_eq!(data.len(), 3 << 20);
    assert!(data.iter().any(|&b| b != 0));
    drop(set);
    assert!(!path.exists());
    // A file under fio's name for the job (fio laid it out) is reused, written too,
    // when it holds the region; not created, so not removed.
    std::fs::write(dir.path().join("w.0.0"), vec![0u8; 4 << 20]).unwrap();
    let p = plan(&j, dir.path(), false, false).unwrap();
    assert!(!p.files[0].create);
    assert!(
        p.warnings.iter().any(|w| w.contains("reusing")),
        "{:?}",
        p.warnings
    );
    // Too small: refused, as before.
    std::fs::write(dir.path().join("w.0.0"), vec![0u8; 1 << 20]).unwrap();
    let e = plan(&j, dir.path(), false, false).unwrap_err();
    assert!(matches!(e, EngineError::TooSmall { .. }), "{e}");
    // Any other existing file (filename=) is not written without permission.
    let named = jobs("[w]\nrw=write\nsize=1m\nfilename=data\n");
    std::fs::write(dir.path().join("data"), vec![0u8; 4 << 20]).unwrap();
    let e = plan(&named, dir.path(), false, false).unwrap_err();
    assert!(matches!(e, EngineError::WriteExisting { .. }), "{e}");
    assert!(plan(&named, dir.path(), false, true).is_ok());
}

#[test]
fn a_file_that_appears_after_planning_is_not_overwritten_and_said_so() {
    let dir = tempfile::tempdir().unwrap();
    let j = jobs("[w]\nrw=randwrite\nsize=1m\n");
    let p = plan(&j, dir.path(), false, false).unwrap();
    std::fs::write(dir.path().join("w.0.0"), b"theirs").unwrap();
    let stop = AtomicBool::new(false);
    let e = FileSet::prepare(p, false, &stop, &mut |_, _, _| {}).unwrap_err();
    assert!(e.to_string().contains("another run"), "{e}");
    assert_eq!(std::fs::read(dir.path().join("w.0.0")).unwrap(), b"theirs");
}

#[test]
fn free_space_is_checked_per_file_system_not_per_directory() {
    // Two directories of one 8 MiB tmpfs, 5 MiB of new files in each: each fits
    // alone, both do not. Mounting needs root; elsewhere the test says so.
    let Ok(dir) = tempfile::tempdir() else { return };
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=8m", "tmpfs"])
        .arg(dir.path())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        eprintln!("cannot mount a tmpfs here (not root?); skipping");
        return;
    }
    struct Unmount<'a>(&'a Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(self.0).status();
        }
    }
    let _u = Unmount(dir.path());
    std::fs::create_dir(dir.path().join("a")).unwrap();
    std::fs::create_dir(dir.path().join("b")).unwrap();
    let one = jobs("[x]\nrw=randwrite\nsize=5m\nfilename=a/f\n");
    let two = jobs(
        "[x]\nrw=randwrite\nsize=5m\nfilename=a/f\n[y]\nrw=randwrite\nsize=5m\nfilename=b/g\n",
    );
    match plan(&one, dir.path(), false, false) {
        Ok(_) => {}
        // Kernels before 6.6: tmpfs has no O_DIRECT; nothing to check here.
        Err(EngineError::NoDirectIo { .. }) => return,
        Err(e) => panic!("{e}"),
    }
    let e = plan(&two, dir.path(), false, false).unwrap_err();
    assert!(matches!(e, EngineError::NoSpace { .. }), "{e}");
    assert!(e.to_string().contains("on its file system"), "{e}");
}

/// A ramfs mounted on a temporary directory (root only), unmounted on drop.
pub(crate) struct RamFs(pub tempfile::TempDir);

impl RamFs {
    pub(crate) fn mount() -> Option<RamFs> {
        let dir = tempfile::tempdir().ok()?;
        let ok = std::process::Command::new("mount")
            .args(["-t", "ramfs", "ramfs"])
            .arg(dir.path())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then_some(RamFs(dir))
    }
}

impl Drop for RamFs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg(self.0.path())
            .status();
    }
}

#[test]
fn a_file_system_without_o_direct_is_refused() {
    // ramfs refuses O_DIRECT (tmpfs accepts it since Linux 6.6). Mounting one needs
    // root; elsewhere the test says so and returns.
    let Some(fs) = RamFs::mount() else {
        eprintln!("cannot mount a ramfs here (not root?); skipping");
        return;
    };
    let e = probe_dir(fs.0.path(), "j").unwrap_err();
    assert!(matches!(e, EngineError::NoDirectIo { .. }), "{e}");
    assert!(e.to_string().contains("ramfs"), "{e}");
    assert_eq!(std::fs::read_dir(fs.0.path()).unwrap().count(), 0);
}

#[test]
fn a_memory_file_system_with_o_direct_is_a_warning() {
    let shm = Path::new("/dev/shm");
    if memory_fs(shm) != Some("tmpfs") {
        eprintln!("/dev/shm is not tmpfs here; skipping");
        return;
    }
    let dir = tempfile::tempdir_in(shm).unwrap();
    let j = jobs("[r]\nrw=randread\nsize=1m\n");
    match plan(&j, dir.path(), false, false) {
        Ok(p) => assert!(p.warnings[0].contains("tmpfs"), "{:?}", p.warnings),
        // Kernels before 6.6: tmpfs has no O_DIRECT.
        Err(e) => assert!(matches!(e, EngineError::NoDirectIo { .. }), "{e}"),
    }
}
