//! `sluice run` on targets other than files it creates: /dev/null and /dev/zero (as
//! fio's examples/steadystate.fio names them), and the line that ends the lay-out of
//! the files it does create (scripts/fio-examples.sh times the I/O from it).

use crate::common;

use common::{sluice, stderr, write};

use std::process::Output;

/// True (after saying why) when the run failed only because io_uring is unusable here.
fn no_io_uring(o: &Output) -> bool {
    if o.status.code() == Some(2) && stderr(o).contains("cannot create an io_uring") {
        eprintln!("io_uring unavailable, test skipped: {}", stderr(o));
        return true;
    }
    false
}

fn have_null_and_zero() -> bool {
    use std::os::unix::fs::FileTypeExt;
    ["/dev/null", "/dev/zero"]
        .iter()
        .all(|p| std::fs::metadata(p).is_ok_and(|m| m.file_type().is_char_device()))
}

/// Writes to /dev/null and reads of /dev/zero run, direct and buffered, as in fio
/// (both refuse O_DIRECT, so sluice opens them without it); nothing is created.
#[test]
fn writes_to_dev_null_and_reads_of_dev_zero_run() {
    if !have_null_and_zero() {
        eprintln!("no /dev/null or /dev/zero character device here, test skipped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    for direct in [1, 0] {
        let job = write(
            dir.path(),
            "kdev.fio",
            &format!(
                "[global]\nsize=8m\ndirect={direct}\n\
                 [w]\nfilename=/dev/null\nrw=write\nbs=128k\n\
                 [r]\nfilename=/dev/zero\nrw=randread\nbs=4k\n"
            ),
        );
        let json = dir.path().join("out.json");
        let o = sluice(&[
            "run",
            &job,
            "--directory",
            data.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ]);
        if no_io_uring(&o) {
            return;
        }
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(0), "direct={direct}: {err}");
        assert!(err.contains("the kernel's null device"), "{err}");
        assert!(err.contains("the kernel's zero device"), "{err}");
        assert!(!err.contains("laid out"), "nothing to lay out: {err}");
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        let jobs = v["jobs"].as_array().expect("jobs");
        let by = |name: &str, dir: &str| {
            jobs.iter().find(|j| j["jobname"] == name).expect(name)[dir]["total_ios"]
                .as_u64()
                .unwrap()
        };
        // Each job once over its 8 MiB: 64 writes of 128 KiB, 2048 reads of 4 KiB.
        assert_eq!(by("w", "write"), 64, "direct={direct}");
        assert_eq!(by("r", "read"), 2048, "direct={direct}");
        assert!(
            std::fs::read_dir(&data).unwrap().next().is_none(),
            "nothing created in the directory"
        );
    }
}

/// What the two devices cannot serve is refused before anything runs, in one line.
#[test]
fn dev_null_reads_trims_and_verify_are_refused() {
    if !have_null_and_zero() {
        eprintln!("no /dev/null or /dev/zero character device here, test skipped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "filename=/dev/null\nrw=randread\n",
            "give end of file at once",
        ),
        ("filename=/dev/zero\nrw=randtrim\n", "trims need a file"),
        (
            "filename=/dev/zero\nrw=write\nverify=crc32c\n",
            "keeps nothing",
        ),
    ];
    for (body, needle) in cases {
        let job = write(
            dir.path(),
            "bad.fio",
            &format!("[k]\nsize=1m\nbs=4k\n{body}"),
        );
        let o = sluice(&["run", &job, "--directory", dir.path().to_str().unwrap()]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{body}: {err}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(
            err.contains(needle) && err.contains("job 'k'"),
            "{body}: {err}"
        );
        assert!(!err.contains("I/Os in"), "refused before the run: {err}");
    }
}

/// The lay-out of the files sluice creates ends with one line saying so, before the
/// run's; with -q there is none.
#[test]
fn the_layout_ends_with_a_laid_out_line() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let job = write(
        dir.path(),
        "l.fio",
        "[l]\nsize=4m\nrw=read\nbs=64k\ndirect=1\nnumber_ios=4\n",
    );
    let o = sluice(&["run", &job, "--directory", data.to_str().unwrap()]);
    if no_io_uring(&o) {
        return;
    }
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let laid = err
        .find("sluice: laid out 1 file(s), 0.00 GiB, in ")
        .unwrap_or_else(|| panic!("no laid-out line: {err}"));
    let ran = err.find("I/Os in").expect("the run's line");
    assert!(
        err.find("sluice: laying out").unwrap() < laid && laid < ran,
        "{err}"
    );
    let o = sluice(&["run", &job, "-q", "--directory", data.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stderr(&o).contains("laid out"), "{}", stderr(&o));
}
