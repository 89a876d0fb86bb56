//! `verify` on real files: every block a write job wrote reads back intact (which
//! also shows that no request went out with another slot's buffer), a block corrupted
//! between the write and the read-back is reported, and `verify_fatal` ends the job
//! at it.

use crate::common;
use sluice_metrics::errors::EILSEQ;

use common::{cfg_in, jobs, prepare};

use std::os::unix::fs::FileExt;
use std::sync::atomic::AtomicBool;

use sluice_core::policy::PolicySpec;
use sluice_engine::{EngineConfig, EngineOutput, FileSet};
use sluice_workload::JobSpec;

fn run(j: &[JobSpec], files: &FileSet, c: &EngineConfig) -> EngineOutput {
    let stop = AtomicBool::new(false);
    sluice_engine::run(
        j,
        files,
        &"none".parse::<PolicySpec>().unwrap(),
        c,
        &stop,
        &mut |_| {},
    )
    .unwrap()
}

#[test]
fn every_written_block_reads_back_intact_across_slots_and_workers() {
    let dir = tempfile::tempdir().unwrap();
    // Two threads on two workers, 32 requests each in flight, three block sizes:
    // a write sent with another slot's buffer would carry that slot's offset (io_size
    // below size: the sequential writes never wrap onto their own first blocks).
    for kind in ["crc32c", "md5"] {
        let j = jobs(&format!(
            "[w]\nrw=write\nbssplit=4k/40:16k/30:64k/30\nsize=8m\nio_size=4m\niodepth=32\nnumjobs=2\nverify={kind}\n"
        ));
        let mut c = cfg_in(dir.path(), Some(2));
        c.workers = Some(2);
        let Some(files) = prepare(&j, &c) else { return };
        let out = run(&j, &files, &c);
        let v = &out.stats.verify[0];
        let w = &out.report.jobs[0].write;
        assert_eq!(v.failed, 0, "{kind}: {:?}", v.first);
        assert_eq!(
            v.checked, w.total_ios,
            "{kind}: every written block is read back"
        );
        assert_eq!(out.report.jobs[0].read.total_ios, w.total_ios);
        assert_eq!(out.report.jobs[0].error, 0);
        assert_eq!(out.report.extra.real.as_ref().unwrap().verify[0].kind, kind);
    }
}

#[test]
fn backlog_reads_back_while_writing() {
    let dir = tempfile::tempdir().unwrap();
    let j = jobs(
        "[w]\nrw=randwrite\nbs=4k\nsize=1m\nio_size=512k\niodepth=8\nverify=crc32c\nverify_backlog=16\ndo_verify=0\n",
    );
    let c = cfg_in(dir.path(), None);
    let Some(files) = prepare(&j, &c) else { return };
    let out = run(&j, &files, &c);
    let v = &out.stats.verify[0];
    assert_eq!(v.failed, 0, "{:?}", v.first);
    // 128 writes in batches of 16: every batch is read back (less the blocks a later
    // write of the same batch replaced); nothing is left for a final pass.
    assert!(v.checked >= 100 && v.checked <= 128, "{}", v.checked);
}

#[test]
fn a_block_corrupted_after_the_write_is_reported_and_verify_fatal_stops_there() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = cfg_in(dir.path(), None);
    c.keep_files = true;
    // 1. Write 256 blocks with headers, no read-back.
    let w = jobs(
        "[w]\nfilename=data\nrw=write\nbs=4k\nsize=1m\niodepth=8\nverify=crc32c\ndo_verify=0\n",
    );
    let Some(files) = prepare(&w, &c) else { return };
    let out = run(&w, &files, &c);
    assert_eq!(out.stats.verify[0].checked, 0);
    drop(files);
    // 2. Corrupt one byte of block 37's data.
    let path = dir.path().join("data");
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    let at = 37 * 4096 + 1000;
    let mut b = [0u8; 1];
    f.read_exact_at(&mut b, at).unwrap();
    f.write_all_at(&[b[0] ^ 0x40], at).unwrap();
    f.sync_all().unwrap();
    drop(f);
    // 3. A read job with verify checks every block it reads: one fails, and (fio's
    // default, continue_on_error=none) the failed check ends the thread: only the
    // reads it had in flight (QD4: at most three more) are checked after block 37.
    let r = jobs("[r]\nfilename=data\nrw=read\nbs=4k\nsize=1m\niodepth=4\nverify=crc32c\n");
    let files = prepare(&r, &c).unwrap();
    let out = run(&r, &files, &c);
    drop(files);
    let v = &out.stats.verify[0];
    assert!(v.failed == 1 && (38..=41).contains(&v.checked), "{v:?}");
    // fio's JSON: the check's EILSEQ ended the thread; no `total_err` without
    // continue_on_error.
    let j = &out.report.jobs[0];
    assert_eq!((j.error, j.failed_ios, j.total_err), (EILSEQ, 1, None));
    // continue_on_error=verify: it goes on and checks every block.
    let r = jobs(
        "[r]\nfilename=data\nrw=read\nbs=4k\nsize=1m\niodepth=4\nverify=crc32c\n\
         continue_on_error=verify\n",
    );
    let files = prepare(&r, &c).unwrap();
    let out = run(&r, &files, &c);
    drop(files);
    let v = &out.stats.verify[0];
    assert_eq!((v.checked, v.failed), (256, 1));
    let first = v.first.as_deref().unwrap();
    assert!(
        first.contains("file offset 151552") && first.contains("crc32c mismatch"),
        "{first}"
    );
    // fio's JSON: the continued check is counted in `total_err`, its errno is
    // `first_error` and (no error ended the thread) the job's `error`.
    let j = &out.report.jobs[0];
    assert_eq!(
        (j.error, j.failed_ios, j.total_err, j.first_error),
        (EILSEQ, 1, Some(1), Some(EILSEQ)),
        "a failed check is an error of the job"
    );
    // 4. verify_fatal: the job ends at the bad block (QD1: blocks 0..=37 checked).
    let r = jobs("[r]\nfilename=data\nrw=read\nbs=4k\nsize=1m\nverify=crc32c\nverify_fatal=1\n");
    let files = prepare(&r, &c).unwrap();
    let out = run(&r, &files, &c);
    drop(files);
    let v = &out.stats.verify[0];
    assert_eq!((v.checked, v.failed), (38, 1));
    // Checked with another kind than the one that wrote it: said so.
    let r = jobs("[r]\nfilename=data\nrw=read\nbs=4k\noffset=4k\nsize=4k\nverify=md5\n");
    let files = prepare(&r, &c).unwrap();
    let out = run(&r, &files, &c);
    assert_eq!(out.stats.verify[0].failed, 1);
    assert!(out.stats.verify[0]
        .first
        .as_deref()
        .unwrap()
        .contains("another verify kind"));
}
