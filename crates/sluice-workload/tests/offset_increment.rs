//! fio's `offset_increment`: thread t of a job (its sub-job number) starts at
//! `offset + t · offset_increment`.

use sluice_workload::{parse_str, IoGen, JobSpec, ParseOptions};

fn job(text: &str) -> JobSpec {
    match parse_str(text, "t.fio", &ParseOptions::default()) {
        Ok(mut p) => p.jobs.remove(0),
        Err(e) => panic!("unexpected error: {e}"),
    }
}

#[test]
fn each_thread_starts_its_increment_further() {
    let j =
        job("[j]\ndirect=1\nrw=randwrite\nnumjobs=4\noffset=1m\nsize=2m\noffset_increment=10m\n");
    assert_eq!(j.offset_increment, 10 << 20);
    assert_eq!(j.end_of_threads(), (1 << 20) + 3 * (10 << 20) + (2 << 20));
    for t in 0..4u32 {
        let start = (1 << 20) + t as u64 * (10 << 20);
        assert_eq!(j.thread_offset(t), start);
        let mut g = IoGen::new(&j, 0, t, 5);
        assert_eq!(g.region(), (start, start + (2 << 20)));
        for _ in 0..1000 {
            let io = g.next_io();
            assert!(io.offset >= start && io.offset + io.len as u64 <= start + (2 << 20));
        }
    }
    // A sequential thread begins at its own start.
    let j = job("[j]\ndirect=1\nrw=read\nnumjobs=3\nsize=1m\noffset_increment=1m\n");
    assert_eq!(IoGen::new(&j, 0, 2, 1).next_io().offset, 2 << 20);
    // Without it, every thread starts at offset.
    let j = job("[j]\ndirect=1\nrw=read\nnumjobs=3\nsize=1m\noffset=4k\n");
    assert_eq!(IoGen::new(&j, 0, 2, 1).next_io().offset, 4096);
}

#[test]
fn a_percentage_or_an_overflow_is_refused() {
    let e = parse_str(
        "[j]\nrw=read\nsize=1m\noffset_increment=10%\n",
        "t.fio",
        &ParseOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("option 'offset_increment'") && e.contains("percent"),
        "{e}"
    );
    let e = parse_str(
        "[j]\nrw=read\nsize=1m\nnumjobs=4\noffset_increment=8000p\n",
        "t.fio",
        &ParseOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("overflows"), "{e}");
}
