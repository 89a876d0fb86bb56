//! fio job files on the store: files, syncs, lazy creation, determinism, real files,
//! bad input.

use sluice_runtime::{DmaBuffer, Stack};
use sluice_store::fio::{self, fill_pattern, FioError, FioPlan};
use sluice_store::Fs;
use sluice_workload::{parse_str, JobSpec, ParseOptions};

fn jobs(text: &str) -> Vec<JobSpec> {
    parse_str(text, "test.fio", &ParseOptions::default())
        .expect("the job parses")
        .jobs
}

fn plan(text: &str, fs: &str) -> FioPlan {
    fio::check(&jobs(text), &fio::store_config(fs).unwrap()).expect("the job fits the store")
}

/// Run `text` on a simulated stack and give each named file's contents (`None`: no
/// such file) with the report.
fn run_and_read(
    text: &str,
    fs: &str,
    names: &[&str],
) -> (sluice_metrics::RunReport, Vec<Option<Vec<u8>>>) {
    let p = plan(text, fs);
    let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    let out = Stack::builder()
        .device("ull")
        .build()
        .unwrap()
        .run(move || async move {
            let fs = Fs::mount(&p.fs).await.unwrap();
            let run = fio::run_jobs(&fs, &p, 7, None).await.unwrap();
            assert!(run.errors.is_empty(), "{:?}", run.errors);
            let mut files = Vec::new();
            for n in &names {
                let Ok(f) = fs.open(n).await else {
                    files.push(None);
                    continue;
                };
                let len = f.len() as usize;
                let (r, buf) = f.read_at(DmaBuffer::new(len), 0).await;
                assert_eq!(r.unwrap(), len);
                files.push(Some(buf.to_vec()));
            }
            (run.collector.finish(run.end_ns, "none"), files)
        })
        .unwrap();
    out.value
}

fn pattern(name: &str, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    fill_pattern(7, name, 0, &mut v);
    v
}

#[test]
fn nrfiles_roundrobin_writes_every_file_whole() {
    // Created on open, so what the files hold is what the run wrote.
    let text = "[w]\nrw=write\nbs=4k\nnrfiles=3\nfilesize=64k\nfile_service_type=roundrobin\n\
                create_on_open=1\n";
    let names = ["w.0.0", "w.0.1", "w.0.2"];
    for fs in ["compound", "fjournal"] {
        let (report, files) = run_and_read(text, fs, &names);
        assert_eq!(report.jobs[0].write.io_bytes, 3 * (64 << 10), "{fs}");
        assert_eq!(report.jobs[0].write.total_ios, 48);
        for (name, data) in names.iter().zip(&files) {
            let data = data.as_ref().expect("laid out");
            assert_eq!(data.len(), 64 << 10, "{fs}: {name}");
            assert!(
                data == &pattern(name, 64 << 10),
                "{fs}: {name} holds its writes"
            );
        }
    }
    // Buffered: the same bytes through the store's buffer.
    let (report, files) = run_and_read(
        &format!("{text}direct=0\nend_fsync=1\n"),
        "fjournal",
        &names,
    );
    assert_eq!(report.jobs[0].sync.total_ios, 3, "end_fsync: one per file");
    for (name, data) in names.iter().zip(&files) {
        assert!(data.as_ref().unwrap() == &pattern(name, 64 << 10), "{name}");
    }
}

#[test]
fn fsync_every_n_writes_and_at_the_end() {
    // 32 writes, fsync after every 4 → 8; end_fsync → one more for the one file.
    let text = "[w]\nrw=randwrite\nbs=4k\nsize=128k\nfsync=4\nend_fsync=1\niodepth=4\n";
    for fs in ["compound", "fjournal", "fjournal+async"] {
        let (report, _) = run_and_read(text, fs, &[]);
        let j = &report.jobs[0];
        assert_eq!(j.write.total_ios, 32, "{fs}");
        assert_eq!(j.sync.total_ios, 9, "{fs}");
        assert_eq!(j.error, 0);
        assert!(j.sync.lat_ns.mean > 0.0);
    }
    // fdatasync=N is counted the same way; fsync_on_close syncs at a runtime end too.
    let text = "[w]\nrw=write\nbs=4k\nsize=64k\nfdatasync=2\n";
    let (report, _) = run_and_read(text, "fjournal", &[]);
    assert_eq!(report.jobs[0].sync.total_ios, 8);
    let text = "[w]\nrw=write\nbs=4k\nnrfiles=2\nfilesize=64k\ntime_based\nruntime=2ms\nfsync_on_close=1\n";
    let (report, _) = run_and_read(text, "compound", &[]);
    assert_eq!(
        report.jobs[0].sync.total_ios, 2,
        "fsync_on_close: both files"
    );
    let text =
        "[w]\nrw=write\nbs=4k\nnrfiles=2\nfilesize=64k\ntime_based\nruntime=2ms\nend_fsync=1\n";
    let (report, _) = run_and_read(text, "compound", &[]);
    assert_eq!(
        report.jobs[0].sync.total_ios, 2,
        "end_fsync: both files at a runtime end too, as fio"
    );
}

#[test]
fn create_on_open_creates_files_when_first_used() {
    // Sequential file service: four writes, all to the first file.
    let base = "[w]\nrw=write\nbs=4k\nnrfiles=2\nfilesize=64k\nfile_service_type=sequential\nnumber_ios=4\n";
    let (_, lazy) = run_and_read(
        &format!("{base}create_on_open=1\n"),
        "fjournal",
        &["w.0.0", "w.0.1"],
    );
    assert_eq!(
        lazy[0].as_ref().map(Vec::len),
        Some(16 << 10),
        "created at first use, written"
    );
    assert!(lazy[1].is_none(), "never used, never created");
    let (_, eager) = run_and_read(base, "fjournal", &["w.0.0", "w.0.1"]);
    assert_eq!(
        eager[0].as_ref().map(Vec::len),
        Some(64 << 10),
        "laid out at its length"
    );
    assert_eq!(eager[1].as_ref().map(Vec::len), Some(64 << 10));
}

#[test]
fn reads_see_the_laid_out_files_and_classes_flow_through() {
    let text = "[r]\nrw=randread\nbs=4k\nsize=256k\niodepth=8\nsluice_critical=1\n\
                [w]\nrw=randwrite\nbs=16k\nsize=512k\nfsync=8\nprio=6\nnumjobs=2\n";
    let (report, _) = run_and_read(text, "compound", &[]);
    let r = &report.jobs[0];
    assert_eq!(r.read.io_bytes, 256 << 10);
    assert_eq!(r.class, sluice_core::IoClass::Critical);
    assert_eq!(report.jobs[1].write.io_bytes, 2 * (512 << 10));
    assert_eq!(report.jobs[1].sync.total_ios, 2 * 4);
    assert_eq!(report.flows[1].weight, 2, "prio=6 → weight 8 − 6");
}

#[test]
fn same_seed_same_report() {
    let text = "[a]\nrw=randrw\nbs=4k\nsize=256k\niodepth=4\nfsync=8\n\
                [b]\nrw=write\nbs=64k\nnrfiles=2\nfilesize=1m\ndirect=0\nend_fsync=1\n";
    let run = || {
        let p = plan(text, "fjournal");
        let stack = Stack::builder().device("ull").seed(3).build().unwrap();
        let out = fio::run(stack, &p, 3, None).unwrap();
        sluice_metrics::json_bytes(&[out.report]).unwrap()
    };
    let a = run();
    assert_eq!(a, run(), "byte-identical JSON");
}

#[test]
fn real_files_in_a_temporary_directory() {
    let dir = tempfile::tempdir().unwrap();
    // Critical: fjournal commits f-transactions for critical fsyncs.
    let text = "[w]\nrw=randwrite\nbs=4k\nsize=64k\nfsync=4\nnrfiles=2\nsluice_critical=1\n";
    let p = plan(text, "fjournal");
    let stack = match Stack::builder()
        .directory(dir.path())
        .cores(1)
        .policy("none")
        .build()
    {
        Ok(s) => s,
        Err(e) => {
            eprintln!("skipped: no real stack here ({e})");
            return;
        }
    };
    let out = match fio::run(stack, &p, 1, None) {
        Ok(o) => o,
        Err(e) if e.to_string().contains("io_uring") || e.to_string().contains("O_DIRECT") => {
            eprintln!("skipped: {e}");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    let j = &out.report.jobs[0];
    assert_eq!(j.write.io_bytes, 64 << 10);
    assert_eq!(j.sync.total_ios, 4);
    assert!(
        out.store.ftxns >= 1,
        "critical fsyncs commit f-transactions"
    );
    assert!(
        dir.path().join(fio::STORE_IMAGE).exists(),
        "the store is in the directory"
    );
}

#[test]
fn bad_input_is_refused_with_what_and_how() {
    let fs = fio::store_config("compound").unwrap();
    let err = |text: &str| -> FioError { fio::check(&jobs(text), &fs).unwrap_err() };
    let e = err("[w]\nrw=write\nfilename=data\nsize=64k\n");
    assert!(
        e.is_input() && e.to_string().contains("filename=data"),
        "{e}"
    );
    let e = err("[w]\nrw=read\nsize=64k\ncreate_on_open=1\n");
    assert!(e.to_string().contains("nothing to read"), "{e}");
    let e = err("[w]\nrw=write\nsize=5g\n");
    assert!(
        e.to_string().contains("at most") && e.to_string().contains("nrfiles"),
        "{e}"
    );
    let e = err("[w]\nrw=write\nsize=64k\nnrfiles=4\nnumjobs=300\n");
    assert!(e.to_string().contains("inodes"), "{e}");
    let e = err("[w]\nrw=write\nsize=64k\nverify=crc32c\n");
    assert!(e.to_string().contains("verify"), "{e}");
    assert!(fio::store_config("host")
        .unwrap_err()
        .to_string()
        .contains("without --fs"));
    assert!(fio::store_config("ext4").is_err());
    // directory= is ignored with a warning that says so.
    let p = fio::check(&jobs("[w]\nrw=write\nsize=64k\ndirectory=/tmp\n"), &fs).unwrap();
    assert!(
        p.warnings[0].contains("directory=/tmp: ignored"),
        "{:?}",
        p.warnings
    );
}

#[test]
fn each_job_ends_when_its_own_threads_do() {
    // The long job is first: the short one's runtime must not wait for it.
    let text =
        "[long]\nrw=randwrite\nbs=4k\nsize=1m\nfsync=1\n[short]\nrw=randread\nbs=4k\nsize=64k\n";
    let (report, _) = run_and_read(text, "compound", &[]);
    let (long, short) = (&report.jobs[0], &report.jobs[1]);
    assert!(
        short.runtime_ns * 4 < long.runtime_ns,
        "{} vs {}",
        short.runtime_ns,
        long.runtime_ns
    );
    assert!(report.duration_ns >= long.runtime_ns);
}
