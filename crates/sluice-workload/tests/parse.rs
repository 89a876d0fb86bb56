//! Parser tests: accepted files, every rejected-input case, inheritance, units.

use std::path::{Path, PathBuf};

use sluice_core::IoClass;
use sluice_workload::{
    buffered_note, parse_file, parse_str, BlockSize, BsEntry, JobSpec, ParseOptions, RwMode,
    WorkloadError,
};

const STRICT: ParseOptions = ParseOptions {
    ignore_unknown: false,
    sections: Vec::new(),
};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn ok(text: &str) -> Vec<JobSpec> {
    match parse_str(text, "t.fio", &STRICT) {
        Ok(p) => p.jobs,
        Err(e) => panic!("unexpected error: {e}"),
    }
}

fn one(text: &str) -> JobSpec {
    let mut jobs = ok(text);
    assert_eq!(jobs.len(), 1);
    jobs.remove(0)
}

/// Parse `text` as `jobs/t.fio`, expect an error, and check that its message starts
/// with `jobs/t.fio:<line>: option '<option>': ` and contains `needle`.
fn option_error(text: &str, line: usize, option: &str, needle: &str) -> String {
    let e = parse_str(text, "jobs/t.fio", &STRICT).expect_err("should be rejected");
    let msg = e.to_string();
    let prefix = format!("jobs/t.fio:{line}: option '{option}': ");
    assert!(
        msg.starts_with(&prefix),
        "message {msg:?} should start with {prefix:?}"
    );
    assert!(
        msg.contains(needle),
        "message {msg:?} should contain {needle:?}"
    );
    assert_eq!(e.line(), Some(line));
    assert_eq!(e.option(), Some(option));
    msg
}

// ---------------------------------------------------------------- rejected inputs

#[test]
fn bad_size_names_file_line_option_and_fix() {
    let path = fixture("bad_size.fio");
    let e = parse_file(&path, &STRICT).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{}:7: option 'bs': cannot read 'x4k' as a size (e.g. 4k, 128KiB, 1g)",
            path.display()
        )
    );
}

#[test]
fn malformed_section_header() {
    let e = parse_str("[job1]\nsize=1m\n[job2\n", "jobs/t.fio", &STRICT).unwrap_err();
    assert!(matches!(e, WorkloadError::Syntax { line: 3, .. }), "{e:?}");
    assert!(e.to_string().starts_with("jobs/t.fio:3: "), "{e}");
    assert!(e.to_string().contains("[name]"), "{e}");
}

#[test]
fn malformed_option_line() {
    let e = parse_str("[job1]\nbs 4k\n", "jobs/t.fio", &STRICT).unwrap_err();
    assert!(matches!(e, WorkloadError::Syntax { line: 2, .. }), "{e:?}");
    assert!(e.to_string().contains("key=value"), "{e}");
    let e = parse_str("[job1]\n=4k\n", "jobs/t.fio", &STRICT).unwrap_err();
    assert!(matches!(e, WorkloadError::Syntax { line: 2, .. }), "{e:?}");
    let e = parse_str("[]\n", "jobs/t.fio", &STRICT).unwrap_err();
    assert!(matches!(e, WorkloadError::Syntax { line: 1, .. }), "{e:?}");
}

#[test]
fn option_outside_a_section() {
    let path = fixture("outside.fio");
    let e = parse_file(&path, &STRICT).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.starts_with(&format!("{}:2: option 'bs': ", path.display())),
        "{msg}"
    );
    assert!(msg.contains("[global]"), "{msg}");
}

#[test]
fn unknown_option_is_an_error_suggesting_ignore_unknown() {
    let path = fixture("unknown.fio");
    let e = parse_file(&path, &STRICT).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.starts_with(&format!(
            "{}:5: option 'iodepht': unknown option",
            path.display()
        )),
        "{msg}"
    );
    assert!(msg.contains("--ignore-unknown"), "{msg}");
    assert!(msg.contains("Did you mean 'iodepth'?"), "{msg}");
}

#[test]
fn unknown_option_is_a_warning_with_ignore_unknown() {
    let path = fixture("unknown.fio");
    let p = parse_file(
        &path,
        &ParseOptions {
            ignore_unknown: true,
            sections: Vec::new(),
        },
    )
    .unwrap();
    assert_eq!(p.jobs.len(), 1);
    assert_eq!(p.jobs[0].iodepth, 1);
    assert_eq!(p.warnings.len(), 1, "{:?}", p.warnings);
    assert!(
        p.warnings[0].starts_with(&format!("{}:5: option 'iodepht': ", path.display())),
        "{:?}",
        p.warnings
    );
}

#[test]
fn trim_modes_parse_and_bad_modes_are_refused() {
    let path = fixture("trim.fio");
    let p = parse_file(&path, &STRICT).unwrap();
    assert_eq!(p.jobs[0].rw, RwMode::Trim);
    option_error("[j]\nrw=sideways\n", 2, "rw", "cannot read 'sideways'");
    option_error("[j]\nrw=randread:x\n", 2, "rw", "count of I/Os");
}

#[test]
fn zero_size_is_rejected() {
    option_error("[j]\nsize=0\n", 2, "size", "zero");
}

#[test]
fn negative_block_size_is_rejected() {
    option_error("[j]\nsize=1m\nbs=-4k\n", 3, "bs", "negative");
    option_error("[j]\nbs=0\n", 2, "bs", "zero");
}

#[test]
fn block_size_larger_than_size() {
    option_error(
        "[j]\nsize=16k\nbs=64k\n",
        3,
        "bs",
        "block size 64KiB for reads is larger than size=16KiB on line 2",
    );
    // bs inherited from [global], size in the job: points at the bs line.
    option_error("[global]\nbs=1m\n[j]\nsize=64k\n", 2, "bs", "in job 'j'");
    // The default 4k block with a tiny size.
    option_error(
        "[j]\nsize=1k\n",
        2,
        "size",
        "smaller than the default block size",
    );
}

#[test]
fn bssplit_entry_larger_than_size() {
    option_error(
        "[j]\nrw=randwrite\nsize=32k\nbssplit=4k/90:64k/10\n",
        4,
        "bssplit",
        "block size 64KiB for writes",
    );
}

#[test]
fn bad_percentages() {
    option_error(
        "[j]\nbssplit=4k/50:8k/30\n",
        2,
        "bssplit",
        "add up to 80, not 100",
    );
    option_error("[j]\nbssplit=4k/80:8k/30\n", 2, "bssplit", "more than 100");
    option_error("[j]\nbssplit=4k/fifty\n", 2, "bssplit", "percentage");
    option_error("[j]\nrwmixread=101\n", 2, "rwmixread", "out of range");
    option_error("[j]\nrwmixwrite=-3\n", 2, "rwmixwrite", "negative");
}

#[test]
fn zero_iodepth_and_numjobs() {
    option_error("[j]\niodepth=0\n", 2, "iodepth", "from 1");
    option_error("[j]\n\n\nnumjobs=0\n", 4, "numjobs", "from 1");
}

#[test]
fn other_bad_values() {
    option_error("[j]\nprio=8\n", 2, "prio", "0 to 7");
    option_error("[j]\nprioclass=4\n", 2, "prioclass", "0 to 3");
    option_error("[j]\nsluice_weight=0\n", 2, "sluice_weight", "from 1");
    option_error(
        "[j]\nsluice_critical=2\n",
        2,
        "sluice_critical",
        "sluice_critical=1",
    );
    option_error(
        "[j]\nruntime=soon\n",
        2,
        "runtime",
        "cannot read 'soon' as a time",
    );
    option_error("[j]\nbs\n", 2, "bs", "needs a value, e.g. bs=4k");
    option_error("[j]\ntime_based=maybe\n", 2, "time_based", "0 or 1");
    option_error("[j]\nrate_iops=1k\n", 2, "rate_iops", "whole number");
}

#[test]
fn no_job_sections() {
    let path = fixture("nojobs.fio");
    let e = parse_file(&path, &STRICT).unwrap_err();
    assert!(matches!(e, WorkloadError::NoJobs { .. }));
    let msg = e.to_string();
    assert!(
        msg.starts_with(&format!("{}: no job sections", path.display())),
        "{msg}"
    );
    assert!(matches!(
        parse_str("; nothing\n\n", "e.fio", &STRICT),
        Err(WorkloadError::NoJobs { .. })
    ));
}

#[test]
fn unreadable_file() {
    let path = fixture("does-not-exist.fio");
    let e = parse_file(&path, &STRICT).unwrap_err();
    assert!(matches!(e, WorkloadError::Io { .. }));
    let msg = e.to_string();
    assert!(msg.contains("does-not-exist.fio"), "{msg}");
    assert!(msg.contains("cannot read the job file"), "{msg}");
}

#[test]
fn flows_with_different_weights_conflict() {
    option_error(
        "[a]\nsluice_flow=x\nsluice_weight=4\n[b]\nsluice_flow=x\nsluice_weight=2\n",
        4,
        "sluice_weight",
        "job 'b' is in flow 'x' with weight 2, but job 'a' (line 1)",
    );
}

// ---------------------------------------------------------------- accepted inputs

#[test]
fn global_inheritance_accumulates_and_applies_forward() {
    let p = parse_file(&fixture("inherit.fio"), &STRICT).unwrap();
    // No warning: a local ioengine is accepted silently (sluice picks its own engine).
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    let [first, second, third] = &p.jobs[..] else {
        panic!("expected three jobs, got {:?}", p.jobs)
    };
    assert_eq!(first.name, "first");
    assert_eq!(first.line, 9);
    assert_eq!(first.rw, RwMode::RandRead);
    assert_eq!(first.bs.read, BlockSize::Fixed(8192));
    assert_eq!(first.size, 64 << 20);
    assert_eq!(first.iodepth, 4);
    assert_eq!(first.runtime_ns, None);
    assert!(!first.time_based);
    assert_eq!(
        first.passthrough,
        vec![("ioengine".to_string(), "io_uring".to_string())]
    );
    assert!(!first.buffered, "direct=1");

    // The second [global] adds to the first.
    assert_eq!(second.bs.write, BlockSize::Fixed(16384));
    assert_eq!(second.size, 64 << 20);
    assert_eq!(second.runtime_ns, Some(10_000_000_000));
    assert!(second.time_based);
    assert_eq!(second.iodepth, 32);
    assert_eq!(second.rw, RwMode::RandWrite);

    assert_eq!(third.name, "renamed");
    assert_eq!(third.flow, "renamed");
    assert_eq!(third.line, 22);
    assert_eq!(third.iodepth, 4);
    assert_eq!(third.rw, RwMode::RandRw);
    assert_eq!(third.rwmixread, 70);
}

#[test]
fn job_options_do_not_leak_into_later_jobs() {
    let jobs = ok("[a]\nbs=64k\nstonewall\n[b]\n");
    assert_eq!(jobs[0].bs.read, BlockSize::Fixed(65536));
    assert!(jobs[0].stonewall);
    assert_eq!(jobs[1].bs.read, BlockSize::Fixed(4096));
    assert!(!jobs[1].stonewall);
}

#[test]
fn defaults() {
    let j = one("[only]\n");
    assert_eq!(
        j,
        JobSpec {
            name: "only".into(),
            flow: "only".into(),
            line: 1,
            // fio's default: direct=0, buffered I/O (here through sluice's page cache).
            buffered: true,
            ..JobSpec::default()
        }
    );
    assert_eq!(j.size, 1 << 30);
    assert_eq!(j.weight, 4);
    assert_eq!(j.class, IoClass::Normal);
    assert_eq!(j.rw, RwMode::Read);
}

#[test]
fn suffixes_for_sizes_and_times() {
    let p = parse_file(&fixture("suffixes.fio"), &STRICT).unwrap();
    let s = &p.jobs[0];
    assert_eq!(s.size, 1 << 30);
    assert_eq!(s.runtime_ns, Some(3_600_000_000_000));
    assert_eq!(s.ramp_ns, 250_000_000);
    assert_eq!(s.startdelay_ns, 2_000_000_000);
    assert_eq!(
        s.thinktime_ns, 100_000,
        "thinktime's bare unit is microseconds"
    );
    assert_eq!(s.bs.read, BlockSize::Fixed(128 << 10));
    assert_eq!(s.offset, 4096);
    assert_eq!(s.rate_bytes, [Some(4 << 20), Some(1 << 20)]);
    assert!(!s.rate_bytes_total);
    assert_eq!(s.rate_iops, [Some(1000), Some(1000)]);
    assert!(s.rate_iops_total);
    assert_eq!(s.randseed, Some(42));

    let t = &p.jobs[1];
    assert_eq!(
        t.runtime_ns,
        Some(90_000_000_000),
        "runtime's bare unit is seconds"
    );
    assert_eq!(t.thinktime_ns, 3_000_000);
    assert_eq!(t.size, 2 << 30);
    assert_eq!(t.bs.read, BlockSize::Fixed(4096));
    assert_eq!(t.rate_bytes, [Some(8192), Some(8192)]);
    assert!(t.rate_bytes_total);
    assert_eq!(t.ramp_ns, 250_000_000);
}

#[test]
fn block_size_pairs_and_bssplit() {
    let j = one("[j]\nrw=randrw\nbs=4k,64k\n");
    assert_eq!(j.bs.read, BlockSize::Fixed(4096));
    assert_eq!(j.bs.write, BlockSize::Fixed(65536));
    let j = one("[j]\nbs=,16k\n");
    assert_eq!(j.bs.read, BlockSize::Fixed(4096));
    assert_eq!(j.bs.write, BlockSize::Fixed(16384));

    let p = parse_file(&fixture("bssplit.fio"), &STRICT).unwrap();
    assert_eq!(
        p.jobs[0].bs.read,
        BlockSize::Split(vec![
            BsEntry {
                len: 4096,
                ppm: 500_000
            },
            BsEntry {
                len: 8192,
                ppm: 300_000
            },
            BsEntry {
                len: 65536,
                ppm: 200_000
            },
        ])
    );
    // An empty percentage shares the rest; reads,writes tables.
    let j = one("[j]\nbssplit=4k/20:8k/:16k/,128k/100\n");
    assert_eq!(
        j.bs.read,
        BlockSize::Split(vec![
            BsEntry {
                len: 4096,
                ppm: 200_000
            },
            BsEntry {
                len: 8192,
                ppm: 400_000
            },
            BsEntry {
                len: 16384,
                ppm: 400_000
            },
        ])
    );
    assert_eq!(
        j.bs.write,
        BlockSize::Split(vec![BsEntry {
            len: 131072,
            ppm: 1_000_000
        }])
    );
}

#[test]
fn weight_from_prio_and_overrides() {
    for prio in 0..=7u32 {
        let j = one(&format!("[j]\nprio={prio}\n"));
        assert_eq!(j.weight, 8 - prio, "prio {prio}");
        assert_eq!(j.class, IoClass::Normal);
        assert_eq!(j.prio, Some(prio as u8));
    }
    assert_eq!(one("[j]\nprio=7\nsluice_weight=100\n").weight, 100);
    assert_eq!(one("[j]\nsluice_weight=3\nprio=0\n").weight, 3);
    let rt = one("[j]\nprioclass=1\nprio=5\n");
    assert_eq!((rt.weight, rt.class), (8, IoClass::Critical));
    let idle = one("[j]\nprioclass=3\n");
    assert_eq!((idle.weight, idle.class), (1, IoClass::Idle));
    let be = one("[j]\nprioclass=2\nprio=1\n");
    assert_eq!((be.weight, be.class), (7, IoClass::Normal));
}

#[test]
fn sluice_attributes_and_shared_flows() {
    let p = parse_file(&fixture("tenants.fio"), &STRICT).unwrap();
    let [fg, fg2, compaction] = &p.jobs[..] else {
        panic!("{:?}", p.jobs)
    };
    assert_eq!(fg.class, IoClass::Critical);
    assert_eq!(fg.flow, "app");
    assert_eq!(fg2.flow, "app");
    assert_eq!(fg2.class, IoClass::Normal);
    assert_eq!((fg.weight, fg2.weight), (6, 6));
    assert_eq!(compaction.flow, "compaction");
    assert_eq!(compaction.weight, 1);
    assert_eq!(compaction.numjobs, 2);
    assert!(compaction.stonewall);
    assert_eq!(compaction.rw, RwMode::Write);
    assert_eq!(compaction.bs.write, BlockSize::Fixed(128 << 10));
    // group_reporting from [global] reaches every job.
    assert!(fg.group_reporting && compaction.group_reporting);
}

#[test]
fn flags_comments_and_spacing() {
    let text = "\
# header comment
[j]   ; trailing comment on a header
  rw = randread    # spaces around '='
time_based=0
wait_for_previous=1
filename=/dev/nvme0n1
runtime=0
";
    let j = one(text);
    assert_eq!(j.rw, RwMode::RandRead);
    assert!(!j.time_based);
    assert!(j.stonewall);
    assert_eq!(j.filename.as_deref(), Some("/dev/nvme0n1"));
    assert_eq!(j.runtime_ns, None, "runtime=0 means no limit");
}

#[test]
fn jobs_without_direct_are_named_as_buffered() {
    // fio's default is direct=0; sluice's was direct=1: the jobs it applies to are named.
    let p = parse_str(
        "[a]\n[b]\ndirect=1\n[c]\nbuffered=1\n[d]\n",
        "w.fio",
        &STRICT,
    )
    .unwrap();
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    assert_eq!(p.buffered_by_default, ["a", "d"]);
    let note = buffered_note("w.fio", &p.buffered_by_default).unwrap();
    assert!(
        note.starts_with("w.fio: jobs 'a', 'd' give no direct=: buffered I/O"),
        "{note}"
    );
    assert!(p.jobs[0].buffered && !p.jobs[1].buffered && p.jobs[2].buffered);
    // Given once in [global]: nothing to say.
    let p = parse_str("[global]\ndirect=0\n[a]\n[b]\n", "w.fio", &STRICT).unwrap();
    assert_eq!(buffered_note("w.fio", &p.buffered_by_default), None);
}

#[test]
fn warnings_for_ignored_settings() {
    let p = parse_str("[j]\nwrite_barrier=4\n", "w.fio", &STRICT).unwrap();
    assert_eq!(p.warnings.len(), 1, "{:?}", p.warnings);
    assert!(p.warnings[0].starts_with("w.fio:2: option 'write_barrier': "));
    // A time-based job without a runtime: fio says time_based needs a runtime and
    // runs the job once over its size; so does sluice, with a warning.
    let p = parse_str("[j]\nsize=1m\ntime_based\n", "w.fio", &STRICT).unwrap();
    assert!(!p.jobs[0].time_based);
    assert_eq!(p.warnings.len(), 1, "{:?}", p.warnings);
    assert!(
        p.warnings[0].contains("no runtime: time_based is ignored"),
        "{:?}",
        p.warnings
    );
}

/// fio's engines set the depth: a synchronous engine has one I/O in flight per thread
/// whatever `iodepth` says, and so has libaio on buffered I/O; a queueing engine, or
/// no `ioengine` (sluice's engine queues), keeps `iodepth`. A lowered depth is said.
#[test]
fn a_synchronous_engine_runs_at_depth_one() {
    let p = parse_str(
        "[global]\nsize=4m\niodepth=16\n\
         [ps]\nioengine=psync\ndirect=1\n\
         [la]\nioengine=libaio\n\
         [ld]\nioengine=libaio\ndirect=1\n\
         [ur]\nioengine=io_uring\n\
         [none]\ndirect=1\n\
         [one]\nioengine=sync\niodepth=1\ndirect=1\n",
        "t.fio",
        &STRICT,
    )
    .unwrap();
    let depth: Vec<_> = p
        .jobs
        .iter()
        .map(|j| (j.name.as_str(), j.iodepth))
        .collect();
    assert_eq!(
        depth,
        [
            ("ps", 1),
            ("la", 1),
            ("ld", 16),
            ("ur", 16),
            ("none", 16),
            ("one", 1)
        ]
    );
    let said: Vec<_> = p
        .warnings
        .iter()
        .filter(|w| w.contains("runs at iodepth=1"))
        .collect();
    assert_eq!(said.len(), 2, "{:?}", p.warnings);
    assert!(said[0].contains("'ps'") && said[0].contains("ioengine=psync is synchronous"));
    assert!(said[1].contains("'la'") && said[1].contains("buffered I/O (direct=0)"));
}

/// `verify_async` only says which of fio's threads compute the checks: accepted, with
/// the one no-effect warning.
#[test]
fn verify_async_is_accepted_with_a_warning() {
    let p = parse_str(
        "[v]\nrw=randrw\ndirect=1\nsize=1m\nverify=crc32c\nverify_async=4\n",
        "t.fio",
        &STRICT,
    )
    .unwrap();
    assert!(p.jobs[0].verify.is_some());
    assert!(
        p.warnings.iter().any(|w| w.contains("verify_async")),
        "{:?}",
        p.warnings
    );
}
