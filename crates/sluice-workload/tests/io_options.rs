//! fio's options of issue 41: per-I/O priorities, `rw` offset modifiers, `blockalign`,
//! `random_distribution=sequence`, verify checksums, `wait_for`, flow tokens, trim,
//! latency targets — parsed into the job, and refused with one clear line where
//! sluice cannot do them.

use sluice_workload::{parse_str, IoClass, JobSpec, ParseOptions, PrioDraw, WorkloadError};

const STRICT: ParseOptions = ParseOptions {
    ignore_unknown: false,
    sections: Vec::new(),
};

fn jobs(text: &str) -> Vec<JobSpec> {
    match parse_str(text, "t.fio", &STRICT) {
        Ok(p) => p.jobs,
        Err(e) => panic!("unexpected error: {e}"),
    }
}

fn err(text: &str) -> WorkloadError {
    parse_str(text, "t.fio", &STRICT).expect_err("should be rejected")
}

#[test]
fn cmdprio_percentage_marks_that_share_of_ios_with_its_class() {
    let j = &jobs("[a]\nrw=randread\nprioclass=3\ncmdprio_percentage=20\ncmdprio_class=1\n")[0];
    assert_eq!(j.class, IoClass::Idle);
    let mut d = PrioDraw::new(&j.cmdprio, 9).expect("per-I/O priorities are on");
    let high: Vec<_> = (0..5000)
        .filter_map(|_| d.draw(sluice_core::Op::Read, 4096))
        .collect();
    assert!((850..1150).contains(&high.len()), "{} of 5000", high.len());
    assert!(high
        .iter()
        .all(|e| e.io_class(j.class) == IoClass::Critical));
    // Reads only when given as `20,0`.
    let j = &jobs("[a]\nrw=randrw\ncmdprio_percentage=20,0\n")[0];
    let mut d = PrioDraw::new(&j.cmdprio, 9).unwrap();
    assert!((0..200).all(|_| d.draw(sluice_core::Op::Write, 4096).is_none()));
}

#[test]
fn cmdprio_bssplit_reads_fios_three_forms() {
    let j = &jobs(
        "[a]\nrw=randrw\nbssplit=64k/40:1024k/60,1024k/100\n\
         cmdprio_bssplit=64k/25/1/1:64k/75/3/2:1024k/0,1024k/0\n",
    )[0];
    let r = &j.cmdprio.dirs[0];
    assert_eq!(r.len(), 3);
    assert_eq!(
        (r[0].bs, r[0].pct, r[0].class, r[0].level),
        (65536, 25, 1, 1)
    );
    assert_eq!((r[1].pct, r[1].class, r[1].level), (75, 3, 2));
    // First form: class and level from cmdprio_class / cmdprio.
    let j = &jobs(
        "[a]\nbssplit=64k/50:1m/50\ncmdprio_bssplit=64k/100:1m/0\ncmdprio_class=2\ncmdprio=3\n",
    )[0];
    assert_eq!(
        (j.cmdprio.dirs[0][0].class, j.cmdprio.dirs[0][0].level),
        (2, 3)
    );
    // The third form's hint is accepted with a warning.
    let p = parse_str(
        "[a]\nbs=1m\ncmdprio_bssplit=1M/10/2/0/1\n",
        "t.fio",
        &STRICT,
    )
    .unwrap();
    assert!(
        p.warnings.iter().any(|w| w.contains("hints")),
        "{:?}",
        p.warnings
    );
}

#[test]
fn cmdprio_errors() {
    let e = err("[a]\ncmdprio_percentage=10\ncmdprio_bssplit=4k/10\n").to_string();
    assert!(
        e.contains("both cmdprio_percentage and cmdprio_bssplit"),
        "{e}"
    );
    let e = err("[a]\ncmdprio_bssplit=4k/60/1/0:4k/60/3/0\n").to_string();
    assert!(e.contains("add up to 120"), "{e}");
    let e = err("[a]\ncmdprio_bssplit=4k/10/1\n").to_string();
    assert!(e.contains("size/percent/class/level"), "{e}");
    assert!(err("[a]\ncmdprio_class=4\n")
        .to_string()
        .contains("out of range"));
}

fn offsets(text: &str, n: usize) -> Vec<u64> {
    let j = &jobs(text)[0];
    let mut g = sluice_workload::IoGen::new(j, 0, 0, 1);
    (0..n).map(|_| g.next_io().offset >> 10).collect()
}

#[test]
fn rw_offset_modifiers_as_fio() {
    // Backwards: the first read at 0, then from the end back down (fio's example
    // backwards-read.fio), wrapping again at 0.
    assert_eq!(
        offsets("[a]\nrw=read:-8k\nbs=4k\nsize=32k\n", 9),
        [0, 24, 20, 16, 12, 8, 4, 0, 24]
    );
    // Holes: 16k written, 112k skipped.
    assert_eq!(
        offsets("[a]\nrw=write:112k\nbs=16k\nsize=512k\n", 5),
        [0, 128, 256, 384, 0]
    );
    // Random every 4th I/O, sequential in between; identical repeats the offset.
    let seq = offsets("[a]\nrw=randread:4\nbs=4k\nsize=64m\n", 8);
    assert_eq!(seq[..3], [0, 4, 8]);
    assert_eq!(seq[4] + 4, seq[5], "{seq:?}");
    let ident = offsets(
        "[a]\nrw=randread:4\nrw_sequencer=identical\nbs=4k\nsize=64m\n",
        8,
    );
    assert_eq!(ident[..3], [0, 0, 0]);
    assert_eq!([ident[4], ident[5], ident[6]], [ident[3]; 3], "{ident:?}");
    assert_ne!(ident[3], 0);
    let e = err("[a]\nrw=randread:0\n").to_string();
    assert!(e.contains("count of I/Os"), "{e}");
}

#[test]
fn blockalign_aligns_random_offsets_of_small_blocks() {
    let j = &jobs("[a]\nrw=randread\nbssplit=512/50:1k/50\nblockalign=4k\nsize=16m\n")[0];
    let mut g = sluice_workload::IoGen::new(j, 0, 0, 3);
    let offs: Vec<u64> = (0..500).map(|_| g.next_io().offset).collect();
    assert!(
        offs.iter().all(|o| o.is_multiple_of(4096)),
        "all 4k-aligned"
    );
    // Without it, 512-byte blocks land off 4k boundaries.
    let j = &jobs("[a]\nrw=randread\nbssplit=512/50:1k/50\nsize=16m\n")[0];
    let mut g = sluice_workload::IoGen::new(j, 0, 0, 3);
    assert!((0..500).any(|_| !g.next_io().offset.is_multiple_of(4096)));
}

#[test]
fn sequence_distribution_as_fios_example() {
    let base =
        "[a]\nrw=randread\nbs=4k\nsize=48k\nio_size=24k\nrandom_distribution=sequence:2,0,1\n";
    assert_eq!(offsets(base, 6), [8, 0, 4, 8, 0, 4]);
    assert_eq!(
        offsets(&format!("{base}random_sequence_stride=1\n"), 6),
        [8, 0, 4, 20, 12, 16]
    );
    let e = err("[a]\nrw=randread\nbs=4k\nsize=8k\nrandom_distribution=sequence:0,5\n").to_string();
    assert!(e.contains("block 5 of the sequence is past the end"), "{e}");
}

#[test]
fn wait_for_names_an_earlier_unique_job() {
    let j = jobs("[a]\n[b]\nwait_for=a\n");
    assert_eq!((j[0].wait_for, j[1].wait_for), (None, Some(0)));
    let e = err("[b]\nwait_for=a\n[a]\n").to_string();
    assert!(e.contains("no earlier job"), "{e}");
    let e = err("[a]\n[a]\n[b]\nwait_for=a\n").to_string();
    assert!(e.contains("2 jobs have that name"), "{e}");
}

#[test]
fn verify_checksums_and_interval() {
    use sluice_workload::VerifyKind as K;
    for (v, k) in [
        ("crc64", K::Crc64),
        ("sha1", K::Sha1),
        ("sha256", K::Sha256),
        ("xxhash", K::Xxhash),
        ("meta", K::Meta),
    ] {
        let j = &jobs(&format!("[a]\nrw=write\nverify={v}\n"))[0];
        assert_eq!(j.verify.as_ref().unwrap().kind, k);
    }
    let j = &jobs("[a]\nrw=write\nbs=64k\nverify=meta\nverify_interval=512\n")[0];
    assert_eq!(j.verify.as_ref().unwrap().interval, Some(512));
    let e = err("[a]\nrw=write\nbs=4k\nverify=crc32c\nverify_interval=3000\n").to_string();
    assert!(e.contains("does not divide the block size 4096"), "{e}");
    let e = err("[a]\nrw=write\nbs=4k\nverify=crc32c\nverify_interval=32\n").to_string();
    assert!(e.contains("cannot hold a verify header"), "{e}");
    let e = err("[a]\nverify=sha512\n").to_string();
    assert!(e.contains("not one of sluice's checksums"), "{e}");
}

#[test]
fn verify_write_sequence_off_is_what_sluice_does() {
    let p = parse_str(
        "[a]\nrw=write\nverify=crc32c\nverify_write_sequence=0\n",
        "t.fio",
        &STRICT,
    )
    .unwrap();
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    assert!(err("[a]\nverify_write_sequence=1\n")
        .to_string()
        .contains("does not check it"));
    let p = parse_str("[a]\nverify_dump=1\n", "t.fio", &STRICT).unwrap();
    assert!(
        p.warnings.iter().any(|w| w.contains("no dump files")),
        "{:?}",
        p.warnings
    );
}

#[test]
fn a_global_name_does_not_rename_the_jobs_as_in_fio() {
    let j = jobs("[global]\nname=g\n[s]\n[t]\nname=own\n");
    assert_eq!((j[0].name.as_str(), j[1].name.as_str()), ("s", "own"));
}

#[test]
fn fdp_options_parse_as_fio_reads_them() {
    let j = &jobs("[global]\nfdp=1\nfdp_pli=5,4,1-2\n[a]\nrw=randwrite\n")[0];
    assert!(j.placement.fdp);
    assert_eq!(j.placement.ids, [1, 2, 4, 5], "sorted, as fio's qsort");
    assert_eq!(j.placement.select, sluice_workload::PlidSelect::RoundRobin);
    assert!(!j.buffered, "FDP writes are passthrough: no page cache");
    let j = &jobs("[a]\nrw=write\ndataplacement=fdp\nplid_select=random\nplids=0x3\n")[0];
    assert!(j.placement.fdp);
    assert_eq!(j.placement.ids, [3]);
    assert_eq!(j.placement.select, sluice_workload::PlidSelect::Random);
    let j = &jobs("[a]\nrw=write\nplids=1\n")[0];
    assert!(
        !j.placement.fdp && j.buffered,
        "plids alone ask for nothing, as in fio"
    );
    let e = err("[a]\nrw=write\nfdp=1\nplids=4-2\n").to_string();
    assert!(
        e.contains("option 'plids'") && e.contains("low-high"),
        "{e}"
    );
    let e = err("[a]\nrw=write\nfdp=1\nplid_select=scheme\n").to_string();
    assert!(e.contains("dp_scheme"), "{e}");
    let e = err("[a]\nrw=write\ndp_scheme=/tmp/s\n").to_string();
    assert!(e.contains("dp_scheme"), "{e}");
}

#[test]
fn protection_options_parse_and_a_job_that_needs_them_is_refused() {
    let j =
        &jobs("[a]\nrw=write\napptag=0x0234\napptag_mask=0xFF00\npi_act=1\nmd_per_io_size=0\n")[0];
    assert_eq!((j.pi.apptag, j.pi.apptag_mask), (0x234, 0xff00));
    assert_eq!(j.pi.needs_metadata(), None);
    let e = err("[a]\nrw=write\napptag=0x10000\n").to_string();
    assert!(e.contains("16 bits"), "{e}");
    let e = err("[a]\nrw=write\npi_chk=GUARD,BAD\n").to_string();
    assert!(e.contains("'BAD'"), "{e}");
    for (opt, text) in [
        ("md_per_io_size", "md_per_io_size=64"),
        ("pi_chk", "pi_chk=GUARD"),
        ("pi_act", "pi_act=0"),
    ] {
        let j = jobs(&format!("[a]\nrw=write\n{text}\n"));
        let e = sluice_workload::metadata_refusal(&j, "here: none").unwrap();
        assert!(
            e.contains(&format!("({opt})")) && e.contains("job 'a'"),
            "{e}"
        );
        assert!(e.contains("metadata/PI; here: none"), "{e}");
    }
}

#[test]
fn section_reads_only_the_named_jobs_and_global() {
    let opts = ParseOptions {
        ignore_unknown: false,
        sections: vec!["b".into()],
    };
    let p = parse_str(
        "[global]\nsize=1m\n[a]\nrw=${UNSET_IN_THIS_TEST}\n[b]\nrw=write\n",
        "t.fio",
        &opts,
    )
    .unwrap();
    assert_eq!(p.jobs.len(), 1);
    assert_eq!((p.jobs[0].name.as_str(), p.jobs[0].size), ("b", 1 << 20));
    let none = ParseOptions {
        sections: vec!["c".into()],
        ..opts
    };
    let e = parse_str("[a]\nrw=write\n", "t.fio", &none).unwrap_err();
    assert!(
        e.to_string().contains("--section c names no job section"),
        "{e}"
    );
}
