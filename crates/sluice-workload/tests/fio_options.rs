//! The fio options beyond the original subset: the option table's groups (no effect,
//! not yet, refused), engines, include, environment variables and arithmetic, and the
//! options with meaning (files, io_size, loops, bsrange, distributions, …).

use std::path::PathBuf;

use sluice_workload::{
    option_table, parse_file, parse_str, parse_str_with, BlockSize, Distribution, FileService,
    JobSpec, ParseOptions, RateProcess, Support, WorkloadError, Zone,
};

const STRICT: ParseOptions = ParseOptions {
    ignore_unknown: false,
    sections: Vec::new(),
};
const LAX: ParseOptions = ParseOptions {
    ignore_unknown: true,
    sections: Vec::new(),
};

fn parsed(text: &str) -> sluice_workload::Parsed {
    match parse_str(text, "t.fio", &STRICT) {
        Ok(p) => p,
        Err(e) => panic!("unexpected error: {e}"),
    }
}

fn one(text: &str) -> JobSpec {
    let mut p = parsed(text);
    assert_eq!(p.jobs.len(), 1);
    p.jobs.remove(0)
}

fn err(text: &str) -> WorkloadError {
    parse_str(text, "jobs/t.fio", &STRICT).expect_err("should be rejected")
}

/// The error's message starts with `jobs/t.fio:<line>: option '<option>': ` and holds
/// every needle.
fn option_error(text: &str, line: usize, option: &str, needles: &[&str]) -> String {
    let e = err(text);
    let msg = e.to_string();
    let prefix = format!("jobs/t.fio:{line}: option '{option}': ");
    assert!(
        msg.starts_with(&prefix),
        "{msg:?} should start with {prefix:?}"
    );
    for n in needles {
        assert!(msg.contains(n), "{msg:?} should contain {n:?}");
    }
    assert_eq!(msg.lines().count(), 1, "one line: {msg:?}");
    msg
}

/// A fresh directory under the system's temporary directory.
fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "sluice-workload-{tag}-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

// ------------------------------------------------------------------ table groups

#[test]
fn every_no_effect_option_is_accepted_with_one_warning() {
    for o in option_table()
        .iter()
        .filter(|o| o.support == Support::NoEffect)
    {
        let text = format!("[a]\n{}\n[b]\n{}\n", o.example, o.example);
        let p = parsed(&text);
        assert_eq!(p.warnings.len(), 1, "{}: {:?}", o.name, p.warnings);
        let w = &p.warnings[0];
        let key = o.example.split('=').next().unwrap();
        assert!(
            w.starts_with(&format!(
                "t.fio:2: option '{key}': accepted, no effect in sluice: "
            )),
            "{w}"
        );
        assert!(
            p.jobs[0].passthrough.iter().any(|(k, _)| k == key),
            "{}",
            o.name
        );
    }
}

#[test]
fn not_yet_options_warn_once_unless_the_value_asks_for_nothing() {
    for o in option_table()
        .iter()
        .filter(|o| o.support == Support::NotYet)
    {
        let p = parsed(&format!("[a]\n{}\n", o.example));
        assert_eq!(p.warnings.len(), 1, "{}: {:?}", o.name, p.warnings);
        assert!(
            p.warnings[0].contains("not supported yet"),
            "{:?}",
            p.warnings
        );
        assert!(
            p.warnings[0].contains("runs without it"),
            "{:?}",
            p.warnings
        );
        for q in o.quiet {
            let p = parsed(&format!("[a]\n{}={q}\n", o.name));
            assert!(p.warnings.is_empty(), "{}={q}: {:?}", o.name, p.warnings);
        }
    }
    let p = parsed("[j]\nsync=1\n");
    assert_eq!(p.warnings.len(), 1, "{:?}", p.warnings);
    assert!(p.warnings[0].starts_with("t.fio:2: option 'sync': not supported yet: sync=1"));
}

#[test]
fn buffered_and_sync_options_reach_the_job() {
    let p = parsed("[j]\nbuffered=1\nfsync=8\nfdatasync=4\nend_fsync=1\n[k]\ndirect=0\ndirect=1\n");
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    let j = &p.jobs[0];
    assert!(j.buffered && j.end_fsync);
    assert_eq!(j.fsync_every, 4, "the more frequent of fsync and fdatasync");
    assert!(!p.jobs[1].buffered, "the last of direct/buffered wins");
    let p = parsed("[j]\nfsync_on_close=1\ndirect=0\n");
    assert!(p.jobs[0].end_fsync && p.jobs[0].buffered && p.jobs[0].fsync_every == 0);
}

#[test]
fn refused_options_name_file_line_option_value_and_remedy() {
    for o in option_table()
        .iter()
        .filter(|o| o.support == Support::Refused)
    {
        let key = o.example.split('=').next().unwrap();
        let value = o.example.split_once('=').map_or("1", |x| x.1);
        option_error(
            &format!("[j]\nsize=1m\n{}\n", o.example),
            3,
            key,
            &[&format!("'{value}' is not supported"), "--ignore-unknown"],
        );
        // --ignore-unknown: a warning, and the job runs without it.
        let p = parse_str(&format!("[j]\n{}\n", o.example), "t.fio", &LAX).unwrap();
        assert_eq!(p.warnings.len(), 1, "{}: {:?}", o.name, p.warnings);
        assert!(p.warnings[0].contains("ignored (--ignore-unknown)"));
        for q in o.quiet {
            let p = parsed(&format!("[a]\n{}={q}\n", o.name));
            assert!(p.warnings.is_empty(), "{}={q}: {:?}", o.name, p.warnings);
        }
    }
}

#[test]
fn every_acted_on_option_example_parses() {
    for o in option_table().iter().filter(|o| o.support == Support::Yes) {
        if o.name == "include" {
            continue; // a directive, tested below
        }
        // A time-based job needs a runtime (given before, so an example may override it).
        // `wait_for` names an earlier job: `writers`.
        let text = format!(
            "[writers]\n[j]\nsize=64m\nrw=randrw\nruntime=1s\n{}\n",
            o.example
        );
        if let Err(e) = parse_str(&text, "t.fio", &STRICT) {
            panic!("{}: {e}", o.example);
        }
    }
}

// ------------------------------------------------------------------ engines

#[test]
fn local_engines_are_accepted_silently() {
    for e in [
        "sync", "psync", "libaio", "io_uring", "posixaio", "pvsync", "pvsync2", "null", "mmap",
        "libaio:x",
    ] {
        let p = parsed(&format!("[j]\nioengine={e}\n[k]\nioengine={e}\n"));
        assert!(p.warnings.is_empty(), "{e}: {:?}", p.warnings);
    }
}

#[test]
fn engines_that_are_not_local_io_stop_on_their_line() {
    for (e, why) in [
        ("net", "network"),
        ("netsplice", "network"),
        ("rbd", "network"),
        ("nfs", "network"),
        ("http", "network"),
        ("rdma", "network"),
        ("libzbc", "passthrough"),
        ("io_uring_cmd", "passthrough"),
        ("sg", "passthrough"),
        ("cpuio", "does not do block I/O"),
        ("dev-dax", "persistent memory"),
        ("warp_drive", "not an engine sluice knows"),
    ] {
        // Engine-specific options before ioengine: still the engine's line is reported.
        let text = format!("[global]\nhostname=h\nport=8765\n\n[j]\nioengine={e}\n");
        option_error(
            &text,
            6,
            "ioengine",
            &[&format!("'{e}' cannot run in sluice"), why, "io_uring"],
        );
    }
    // Also from an environment variable.
    let e = parse_str_with("[j]\nioengine=${ENGINE}\n", "jobs/t.fio", &STRICT, &|_| {
        Some("net".into())
    })
    .unwrap_err();
    assert!(e
        .to_string()
        .starts_with("jobs/t.fio:2: option 'ioengine': 'net' cannot run"));
}

// ------------------------------------------------------------------ include, env, math

#[test]
fn include_is_relative_to_the_including_file() {
    let d = temp_dir("include");
    std::fs::create_dir_all(d.join("sub")).unwrap();
    std::fs::write(
        d.join("sub/common.fio"),
        "thread=1\nbs=8k\ninclude deeper.fio\n",
    )
    .unwrap();
    std::fs::write(d.join("sub/deeper.fio"), "iodepth=16\n").unwrap();
    std::fs::write(
        d.join("main.fio"),
        "[global]\nsize=16m\ninclude sub/common.fio\n[test]\nrw=randread\ninclude sub/deeper.fio\n",
    )
    .unwrap();
    let p = parse_file(&d.join("main.fio"), &STRICT).unwrap();
    let j = &p.jobs[0];
    assert_eq!(j.bs.read, BlockSize::Fixed(8192));
    assert_eq!(j.iodepth, 16);
    // The warning names the included file and its line.
    assert!(
        p.warnings[0].contains("common.fio:1: option 'thread'"),
        "{:?}",
        p.warnings
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn include_errors_name_the_included_file() {
    let d = temp_dir("include-errors");
    std::fs::write(d.join("bad.fio"), "bs=x4k\n").unwrap();
    std::fs::write(d.join("main.fio"), "[j]\ninclude bad.fio\n").unwrap();
    let msg = parse_file(&d.join("main.fio"), &STRICT)
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("bad.fio:1: option 'bs': cannot read 'x4k'"),
        "{msg}"
    );

    // A cycle.
    std::fs::write(d.join("a.fio"), "include b.fio\n").unwrap();
    std::fs::write(d.join("b.fio"), "iodepth=2\ninclude a.fio\n").unwrap();
    std::fs::write(d.join("cycle.fio"), "[j]\ninclude a.fio\n").unwrap();
    let msg = parse_file(&d.join("cycle.fio"), &STRICT)
        .unwrap_err()
        .to_string();
    assert!(msg.contains("b.fio:2: "), "{msg}");
    assert!(msg.contains("include cycle"), "{msg}");

    // Too deep (a chain of distinct files).
    for i in 0..20 {
        std::fs::write(
            d.join(format!("d{i}.fio")),
            format!("include d{}.fio\n", i + 1),
        )
        .unwrap();
    }
    std::fs::write(d.join("d20.fio"), "iodepth=1\n").unwrap();
    std::fs::write(d.join("deep.fio"), "[j]\ninclude d0.fio\n").unwrap();
    let msg = parse_file(&d.join("deep.fio"), &STRICT)
        .unwrap_err()
        .to_string();
    assert!(msg.contains("more than 16 deep"), "{msg}");

    // Missing file, and sections in an included file.
    std::fs::write(d.join("missing.fio"), "[j]\ninclude nowhere.fio\n").unwrap();
    let msg = parse_file(&d.join("missing.fio"), &STRICT)
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("missing.fio:2: cannot read the included file"),
        "{msg}"
    );
    std::fs::write(d.join("sect.fio"), "[other]\n").unwrap();
    std::fs::write(d.join("withsect.fio"), "[j]\ninclude sect.fio\n").unwrap();
    let msg = parse_file(&d.join("withsect.fio"), &STRICT)
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("sect.fio:1: '[other]': an included file may not hold sections"),
        "{msg}"
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn environment_variables_and_arithmetic() {
    let vars = |n: &str| match n {
        "SIZE" => Some("64m".to_string()),
        "NUMJOBS" => Some("4".to_string()),
        "DEPTH" => Some("8".to_string()),
        _ => None,
    };
    let text = "[w]\nrw=randwrite\nsize=${SIZE}\nnumjobs=${NUMJOBS}\niodepth=(${DEPTH}*4)\nbs=((1+2)*4k)\nruntime=(2*60)s\nthinktime=(3*100)\noffset=($pagesize*2)\n";
    let p = parse_str_with(text, "t.fio", &STRICT, &vars).unwrap();
    let j = &p.jobs[0];
    assert_eq!(j.size, 64 << 20);
    assert_eq!(j.numjobs, 4);
    assert_eq!(j.iodepth, 32);
    assert_eq!(j.bs.write, BlockSize::Fixed(12 << 10));
    assert_eq!(j.runtime_ns, Some(120_000_000_000));
    assert_eq!(
        j.thinktime_ns, 300_000,
        "a bare number in a time expression is µs"
    );
    assert_eq!(j.offset, 8192);

    let e = parse_str_with("[j]\nsize=${NOPE}\n", "jobs/t.fio", &STRICT, &vars).unwrap_err();
    assert_eq!(
        e.to_string(),
        "jobs/t.fio:2: option 'size': environment variable NOPE is not set (fio would put an empty string in its place); \
         set it, e.g. NOPE=... sluice sim JOB.fio, or write the value"
    );
    option_error(
        "[j]\nnumjobs=$ncpus\n",
        2,
        "numjobs",
        &["$ncpus", "write the number"],
    );
    option_error(
        "[j]\nbs=((1+2)*4k\n",
        2,
        "bs",
        &["cannot evaluate", "not closed"],
    );
    option_error("[j]\nsize=(1/0)\n", 2, "size", &["division by zero"]);
    option_error("[j]\niodepth=(2-4)\n", 2, "iodepth", &["negative"]);
}

// ------------------------------------------------------------------ files and amounts

#[test]
fn files_sizes_and_amounts() {
    // nrfiles splits size; io_size and loops set the amount.
    let j = one("[j]\nsize=64m\nnrfiles=4\nio_size=16m\nloops=3\nnumber_ios=1000\n");
    assert_eq!((j.size, j.nrfiles), (64 << 20, 4));
    assert_eq!(j.io_size, Some(16 << 20));
    assert_eq!(j.loops, 3);
    assert_eq!(j.number_ios, Some(1000));
    assert_eq!(j.bytes_per_thread(), Some(48 << 20));
    assert_eq!(j.file_service, FileService::RoundRobin(1));

    // filesize: the region is nrfiles × filesize, and size only sets io_size.
    let j = one("[j]\nfilesize=8m\nnrfiles=3\nsize=100m\nfile_service_type=sequential\n");
    assert_eq!(j.size, 24 << 20);
    assert_eq!(j.io_size, Some(100 << 20));
    assert_eq!(j.file_service, FileService::Sequential);
    let j = one("[j]\nfilesize=8m\n");
    assert_eq!((j.size, j.io_size), (8 << 20, None));
    // size not a multiple of nrfiles: whole files only.
    let j = one("[j]\nsize=10k\nnrfiles=3\nbs=1k\n");
    assert_eq!(j.size, 3 * 3413);
    // io_limit is io_size's alias, timeout runtime's.
    let j = one("[j]\nio_limit=1g\ntimeout=5s\n");
    assert_eq!(
        (j.io_size, j.runtime_ns),
        (Some(1 << 30), Some(5_000_000_000))
    );

    option_error(
        "[j]\nfilesize=1m-4m\n",
        2,
        "filesize",
        &["range", "one size"],
    );
    option_error("[j]\nsize=50%\n", 2, "size", &["percent"]);
    option_error(
        "[j]\nsize=4k\nnrfiles=8\n",
        2,
        "size",
        &["4KiB", "512B", "nrfiles=8"],
    );
    option_error(
        "[j]\nsize=64k\nnrfiles=8\nbs=16k\n",
        4,
        "bs",
        &["16KiB", "the file size 8KiB"],
    );
    option_error(
        "[j]\nsize=4\nnrfiles=8\n",
        3,
        "nrfiles",
        &["less than a byte"],
    );
    option_error("[j]\nloops=0\n", 2, "loops", &["from 1"]);
    option_error(
        "[j]\nfile_service_type=zipf:1.2\n",
        2,
        "file_service_type",
        &["roundrobin"],
    );
    option_error(
        "[j]\nfilename=/dev/sda:/dev/sdb\n",
        2,
        "filename",
        &["2 files", "nrfiles"],
    );
}

#[test]
fn directory_and_filename_format() {
    // A relative filename is in the first directory; escaped colons stay.
    let j = one("[j]\ndirectory=/mnt/a:/mnt/b\nfilename=data\n");
    assert_eq!(j.filename.as_deref(), Some("/mnt/a/data"));
    assert_eq!(j.directory, vec!["/mnt/a", "/mnt/b"]);
    let j = one("[j]\nfilename=/dev/dsk/foo@3,0\\:c\n");
    assert_eq!(j.filename.as_deref(), Some("/dev/dsk/foo@3,0:c"));
    // Without a filename the directory only places files: a warning says so.
    let p = parsed("[j]\ndirectory=/mnt/a\n");
    assert_eq!(p.jobs[0].filename, None);
    assert!(
        p.warnings[0].contains("option 'directory'"),
        "{:?}",
        p.warnings
    );

    // filename_format without $jobnum: the job's threads (and any job giving the same
    // names) share files.
    let p = parsed(
        "[global]\nfilename_format=shared.$filenum\nnumjobs=2\n[a]\n[b]\n[c]\nfilename_format=$jobname.$jobnum.$filenum\n",
    );
    assert_eq!(p.jobs[0].filename.as_deref(), Some("shared.0"));
    assert_eq!(p.jobs[1].filename.as_deref(), Some("shared.0"));
    assert_eq!(
        p.jobs[2].filename, None,
        "the default format: a file per thread"
    );
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    let p = parsed("[a]\nfilename_format=f.$jobnum\n");
    assert!(
        p.warnings[0].contains("filename_format"),
        "{:?}",
        p.warnings
    );
}

#[test]
fn bsrange_becomes_fios_size_table() {
    let j = one("[j]\nrw=randrw\nbsrange=4k-16k,8k:8k\n");
    let BlockSize::Split(t) = &j.bs.read else {
        panic!("{:?}", j.bs.read)
    };
    assert_eq!(
        t.iter().map(|e| e.len).collect::<Vec<_>>(),
        vec![4096, 8192, 12288, 16384]
    );
    assert_eq!(
        j.bs.write,
        BlockSize::Split(vec![sluice_workload::BsEntry {
            len: 8192,
            ppm: 1_000_000
        }])
    );
    // blocksize_range is its alias; a later bs wins.
    let j = one("[j]\nblocksize_range=1k-2k\nbs=4k\n");
    assert_eq!(j.bs.read, BlockSize::Fixed(4096));
    option_error(
        "[j]\nsize=8k\nbsrange=4k-64k\n",
        3,
        "bsrange",
        &["64KiB", "size=8KiB"],
    );
    option_error("[j]\nbsrange=64k-4k\n", 2, "bsrange", &["larger"]);
}

#[test]
fn distributions_rates_and_exitall() {
    let j = one("[j]\nrw=randread\nrandom_distribution=zipf:1.2\npercentage_random=80,50\nrate_process=poisson\nrate_iops=100\nexitall\n");
    assert_eq!(
        j.distribution[0],
        Distribution::Zipf {
            theta: 1.2,
            center: None
        }
    );
    assert_eq!(j.percentage_random, [80, 50]);
    assert_eq!(j.rate_process, RateProcess::Poisson);
    assert!(j.exitall);
    let j = one("[j]\nrw=randread\nsize=1g\nrandom_distribution=zoned_abs:60/20m:40/100m\n");
    assert_eq!(
        j.distribution[1],
        Distribution::ZonedAbs(vec![
            Zone {
                access_pct: 60,
                size: 20 << 20
            },
            Zone {
                access_pct: 40,
                size: 100 << 20
            }
        ])
    );
    option_error(
        "[j]\nrw=randread\nsize=64m\nrandom_distribution=zoned_abs:60/20m:40/100m\n",
        4,
        "random_distribution",
        &["120MiB", "size=64MiB"],
    );
    option_error(
        "[j]\nrandom_distribution=zipf:1\n",
        2,
        "random_distribution",
        &["other than 1"],
    );
    option_error(
        "[j]\nrate_process=bursty\n",
        2,
        "rate_process",
        &["linear or poisson"],
    );
    option_error(
        "[j]\npercentage_random=101\n",
        2,
        "percentage_random",
        &["0 to 100"],
    );
    // On a sequential job they do nothing, and say so.
    let p = parsed("[j]\nrw=read\nrandom_distribution=zipf:1.2\npercentage_random=50\n");
    assert_eq!(p.warnings.len(), 2, "{:?}", p.warnings);
    assert!(p
        .warnings
        .iter()
        .all(|w| w.contains("no effect on the sequential rw=read")));
}

#[test]
fn no_input_panics() {
    // A grab bag of malformed values for the new options: errors, never panics.
    for v in [
        "bsrange=",
        "bsrange=-",
        "bsrange=0-0",
        "bsrange=4k-",
        "random_distribution=zoned:/",
        "random_distribution=zoned:100/",
        "random_distribution=zoned_abs:100/0",
        "random_distribution=zipf:nan",
        "random_distribution=normal:-1",
        "size=(",
        "size=()",
        "size=(((((",
        "size=(1e999)",
        "size=(0x)",
        "runtime=(1-2)s",
        "iodepth=(1.5)",
        "nrfiles=0",
        "filesize=0",
        "io_size=0",
        "directory=",
        "directory=:",
        "filename=:",
        "number_ios=-1",
        "size=${",
        "size=${}",
        "file_service_type=roundrobin:x",
        "percentage_random=,,,",
        "filename_format=",
        "loops=99999999999",
    ] {
        let _ = parse_str(&format!("[j]\n{v}\n"), "t.fio", &STRICT);
        let _ = parse_str(&format!("[j]\nrw=randrw\n{v}\n"), "t.fio", &LAX);
    }
}

#[test]
fn verify_logs_and_steadystate_options() {
    use sluice_workload::{SteadyMetric, VerifyKind};
    let j = one("[w]\nrw=write\nverify=md5\nverify_backlog=64\nverify_fatal=1\ndo_verify=0\n");
    let v = j.verify.unwrap();
    assert_eq!(
        (v.kind, v.backlog, v.fatal, v.do_verify),
        (VerifyKind::Md5, Some(64), true, false)
    );
    // verify_pattern alone means verify=pattern, as in fio.
    let v = one("[w]\nrw=write\nverify_pattern=0xdead \"x\"\n")
        .verify
        .unwrap();
    assert_eq!(
        (v.kind, v.pattern),
        (VerifyKind::Pattern, vec![0xde, 0xad, b'x'])
    );
    assert!(one("[w]\nverify=0\n").verify.is_none());
    // verify=pattern without a pattern: fio has nothing to compare with (it aborts on
    // its own assertion); refused at the verify line rather than failing every block.
    option_error(
        "[w]\nrw=randwrite\nbs=4k\nverify=pattern\n",
        4,
        "verify",
        &["verify=pattern but no verify_pattern", "verify_pattern=0x"],
    );
    // Given in [global], the pattern reaches the job.
    let v = one("[global]\nverify_pattern=0x5a\n[w]\nrw=write\nverify=pattern\n")
        .verify
        .unwrap();
    assert_eq!((v.kind, v.pattern), (VerifyKind::Pattern, vec![0x5a]));
    option_error(
        "[w]\nverify=sha512\n",
        2,
        "verify",
        &["sha512", "crc32c, crc64, md5, sha1, sha256"],
    );
    let p = parsed("[w]\nverify_fatal=1\n");
    assert!(
        p.warnings.iter().any(|w| w.contains("without verify")),
        "{:?}",
        p.warnings
    );

    let j = one("[r]\nwrite_bw_log\nwrite_lat_log=out/lat\nlog_avg_msec=500\nper_job_logs=0\n");
    assert_eq!(j.logs.bw.as_deref(), Some("r"), "bare: the job name");
    assert_eq!(j.logs.lat.as_deref(), Some("out/lat"));
    assert_eq!(
        (j.logs.iops.is_none(), j.logs.avg_msec, j.logs.per_job),
        (true, 500, false)
    );

    let j = one("[r]\nss=bw_slope:2%\nss_dur=30s\nss_ramp=5s\n");
    let s = j.steadystate.unwrap();
    assert_eq!(
        (s.metric, s.slope, s.limit, s.percent),
        (SteadyMetric::Bw, true, 2.0, true)
    );
    assert_eq!(
        (s.dur_ns, s.ramp_ns, s.interval_ns),
        (30_000_000_000, 5_000_000_000, 1_000_000_000)
    );
    // ss_dur alone: fio's default criterion.
    assert_eq!(
        one("[r]\nss_dur=10s\n").steadystate.unwrap().describe(),
        "iops_slope:0.01%"
    );
    // steadystate alone does nothing (as in fio) and says so.
    let p = parsed("[r]\nsteadystate=iops:1%\n");
    assert!(p.jobs[0].steadystate.is_none());
    assert!(p
        .warnings
        .iter()
        .any(|w| w.contains("no effect without ss_dur")));
    option_error(
        "[r]\nss=iops_slope:1%\nss_dur=1s\n",
        3,
        "steadystate_duration",
        &["at least 2"],
    );
    option_error(
        "[r]\nss=clat:1ms\n",
        2,
        "ss",
        &["not a steady-state criterion"],
    );
    // A window of 2^32 - 1 one-second intervals once allocated 34 GB up front.
    option_error(
        "[r]\nss_dur=4294967295\n",
        2,
        "steadystate_duration",
        &["4294967295 check intervals", "the limit is 1048576"],
    );
    assert!(one("[r]\nss_dur=1048576\n").steadystate.is_some());
}
