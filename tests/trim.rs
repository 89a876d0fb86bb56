//! Trims end to end: fio's trim modes under `sluice sim` (the `trim` section of fio's
//! JSON, the simulated FTL's write amplification falling after a trim) and under
//! `sluice run` (a hole punched in the file).

use crate::common;

use common::{refused, run_kept_json, sluice, stderr, write};

use std::os::unix::fs::MetadataExt;

fn json(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn the_trim_section_carries_the_trims_as_fio_prints_it() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(
        dir.path(),
        "t.fio",
        "[global]\ndirect=1\nsize=16m\niodepth=4\n\
         [rt]\nrw=randtrim\nbs=64k\nnumber_ios=100\n\
         [tw]\nstonewall\nrw=trimwrite\nbs=8k\nsize=1m\n",
    );
    let out = dir.path().join("o.json");
    let o = sluice(&["sim", &job, "-q", "--json", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.lines()
            .any(|l| l.starts_with("rt ") && l.contains(" trim ")),
        "a trim row in the Jobs table: {text}"
    );
    let v = json(&out);
    let rt = &v["jobs"][0];
    assert_eq!(rt["trim"]["total_ios"], 100);
    assert_eq!(rt["trim"]["io_bytes"], 100 * 65536);
    assert!(rt["trim"]["iops"].as_f64().unwrap() > 0.0);
    assert!(rt["trim"]["lat_ns"]["mean"].as_f64().unwrap() > 0.0);
    assert_eq!(rt["read"]["total_ios"], 0);
    assert_eq!(rt["write"]["total_ios"], 0);
    // trimwrite: every block of the 1 MiB trimmed, then written.
    let tw = &v["jobs"][1];
    assert_eq!(tw["trim"]["io_bytes"], 1 << 20);
    assert_eq!(tw["write"]["io_bytes"], 1 << 20);
    assert_eq!(tw["trim"]["total_ios"], 128);
}

/// The bundled pair of docs/devices.md, "Trim": the same random writes over half of
/// `nand`'s space, with the other half trimmed first or not.
#[test]
fn a_trim_lowers_the_simulated_write_amplification() {
    let dir = tempfile::tempdir().unwrap();
    let wa = |name: &str| {
        let out = dir.path().join(format!("{name}.json"));
        let root = env!("CARGO_MANIFEST_DIR");
        let job = format!("{root}/jobs/trim/{name}.fio");
        let o = sluice(&[
            "sim",
            &job,
            "-d",
            "nand",
            "-q",
            "--json",
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let v = json(&out);
        let f = &v["runs"][0]["extra"]["device_flash"];
        let iops = v["jobs"].as_array().unwrap().last().unwrap()["write"]["iops"]
            .as_f64()
            .unwrap();
        (
            f["write_amplification"].as_f64().unwrap(),
            iops,
            f["trimmed_bytes"].clone(),
        )
    };
    let (plain, plain_iops, none) = wa("nand-randwrite");
    let (trimmed, trimmed_iops, bytes) = wa("nand-trim-then-randwrite");
    assert!(none.is_null(), "no trimmed_bytes without trims");
    assert_eq!(
        bytes,
        4u64 << 30,
        "the whole trimmed half was mapped, and unmapped"
    );
    assert!(plain > 1.5, "GC copies without the trim: WA {plain}");
    assert!(trimmed < 1.2, "few copies after the trim: WA {trimmed}");
    assert!(
        trimmed_iops > 1.4 * plain_iops,
        "less GC, more writes: {trimmed_iops} vs {plain_iops}"
    );
}

#[test]
fn trims_are_refused_where_sluice_cannot_do_them() {
    let dir = tempfile::tempdir().unwrap();
    // The journaled store has no trim.
    let job = write(dir.path(), "s.fio", "[j]\ndirect=1\nrw=trim\nsize=1m\n");
    let o = sluice(&[
        "run",
        &job,
        "-q",
        "--fs",
        "compound",
        "--directory",
        dir.path().to_str().unwrap(),
    ]);
    refused(&o, &["rw=trim", "without --fs"]);
}

#[test]
fn a_real_trim_punches_a_hole_in_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    // Write 8 MiB, then trim its first half sequentially.
    let job = write(
        dir.path(),
        "r.fio",
        "[global]\ndirect=1\nfilename=f0\nsize=8m\niodepth=4\n\
         [w]\nrw=write\nbs=1m\n\
         [t]\nstonewall\nrw=trim\nbs=1m\nsize=4m\n",
    );
    let out = dir.path().join("o.json");
    let Some(v) = run_kept_json(&job, &data, &out, &[]) else {
        return;
    };
    assert_eq!(v["jobs"][1]["trim"]["total_ios"], 4);
    assert_eq!(v["jobs"][1]["error"], 0);
    let m = std::fs::metadata(data.join("f0")).unwrap();
    assert_eq!(m.len(), 8 << 20, "KEEP_SIZE: the file keeps its size");
    let allocated = m.blocks() * 512;
    assert!(
        allocated <= 4 << 20,
        "half of the file deallocated: {allocated} bytes still allocated"
    );
}

#[test]
fn a_buffered_trim_drops_its_dirty_pages_and_punches_the_hole() {
    // Buffered writes of 8 MiB left dirty in the cache (no fsync), then a buffered trim
    // of its first half: the trimmed pages' data is discarded, not written out after
    // the run; the hole is punched; the other half reaches the file.
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let job = write(
        dir.path(),
        "b.fio",
        "[global]\ndirect=0\nfilename=f0\nsize=8m\niodepth=4\n\
         [w]\nrw=write\nbs=1m\n\
         [t]\nstonewall\nrw=trim\nbs=1m\nsize=4m\n",
    );
    let out = dir.path().join("o.json");
    let Some(v) = run_kept_json(&job, &data, &out, &["--page-cache", "32m"]) else {
        return;
    };
    assert_eq!(v["jobs"][1]["trim"]["total_ios"], 4);
    let bytes = std::fs::read(data.join("f0")).unwrap();
    assert_eq!(bytes.len(), 8 << 20);
    assert!(
        bytes[..4 << 20].iter().all(|&b| b == 0),
        "the trimmed half reads zeros"
    );
    assert!(
        bytes[4 << 20..].iter().any(|&b| b != 0),
        "the written half is there"
    );
    let allocated = std::fs::metadata(data.join("f0")).unwrap().blocks() * 512;
    assert!(allocated <= 5 << 20, "{allocated} bytes still allocated");

    // The same in the simulator: four trims reach the device.
    let o = sluice(&["sim", &job, "-q", "--json", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = json(&out);
    assert_eq!(v["jobs"][1]["trim"]["total_ios"], 4);
}

/// A loop device over a temporary file, detached on drop.
struct LoopDevice(String);

impl LoopDevice {
    /// `None` (the test is skipped, and says why) unless root with `losetup`.
    fn over(file: &std::path::Path) -> Option<LoopDevice> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: a loop device needs root");
            return None;
        }
        let o = std::process::Command::new("losetup")
            .args(["--show", "-f"])
            .arg(file)
            .output();
        match o {
            Ok(o) if o.status.success() => Some(LoopDevice(
                String::from_utf8_lossy(&o.stdout).trim().to_string(),
            )),
            other => {
                eprintln!("skipped: losetup could not attach a loop device: {other:?}");
                None
            }
        }
    }
}

impl Drop for LoopDevice {
    fn drop(&mut self) {
        let _ = std::process::Command::new("losetup")
            .args(["-d", &self.0])
            .status();
    }
}

/// With `--allow-device`, a trim on a block device is its discard
/// (`BLOCK_URING_CMD_DISCARD`): on a loop device over a temporary file, the discard
/// frees the file's blocks under the trimmed range; without `--allow-device` the
/// device is refused.
#[test]
fn a_trim_on_a_block_device_discards_its_range() {
    let dir = tempfile::tempdir().unwrap();
    let backing = dir.path().join("loop.img");
    // 32 MiB of data, every block allocated.
    std::fs::write(&backing, vec![0xA5u8; 32 << 20]).unwrap();
    std::fs::File::open(&backing).unwrap().sync_all().unwrap();
    let Some(dev) = LoopDevice::over(&backing) else {
        return;
    };
    let before = std::fs::metadata(&backing).unwrap().blocks() * 512;
    let job = write(
        dir.path(),
        "d.fio",
        &format!(
            "[t]\nfilename={}\nrw=trim\nbs=1m\nsize=16m\ndirect=1\n",
            dev.0
        ),
    );
    let o = sluice(&["run", &job, "-q"]);
    refused(&o, &["--allow-device"]);
    let out = dir.path().join("o.json");
    let o = sluice(&[
        "run",
        &job,
        "-q",
        "--allow-device",
        "--json",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = json(&out);
    assert_eq!(v["jobs"][0]["trim"]["total_ios"], 16);
    assert_eq!(v["jobs"][0]["error"], 0, "{}", stderr(&o));
    drop(dev);
    let after = std::fs::metadata(&backing).unwrap().blocks() * 512;
    assert!(
        before - after >= 16 << 20,
        "the loop device's discard punches the backing file: {before} → {after} bytes allocated"
    );
}
