//! fio's trim modes: `rw=trim`, `randtrim`, `trimwrite`, `randtrimwrite`, the trim part
//! of `bs`, and what is refused with them.

use sluice_core::Op;
use sluice_workload::{parse_str, BlockSize, IoGen, JobSpec, ParseOptions, RwMode};

fn job(text: &str) -> JobSpec {
    match parse_str(text, "t.fio", &ParseOptions::default()) {
        Ok(mut p) => p.jobs.remove(0),
        Err(e) => panic!("unexpected error: {e}"),
    }
}

fn ios(j: &JobSpec, n: usize) -> Vec<(Op, u64, u32)> {
    let mut g = IoGen::new(j, 0, 0, 3);
    (0..n)
        .map(|_| {
            let io = g.next_io();
            (io.op, io.offset, io.len)
        })
        .collect()
}

#[test]
fn each_trim_mode_parses_with_its_directions() {
    for (name, mode, reads, writes) in [
        ("trim", RwMode::Trim, false, false),
        ("randtrim", RwMode::RandTrim, false, false),
        ("trimwrite", RwMode::TrimWrite, false, true),
        ("randtrimwrite", RwMode::RandTrimWrite, false, true),
    ] {
        let j = job(&format!("[j]\ndirect=1\nrw={name}\nsize=1m\n"));
        assert_eq!(j.rw, mode);
        assert_eq!(j.rw.name(), name);
        assert!(j.rw.trims());
        assert_eq!((j.rw.reads(), j.rw.writes()), (reads, writes), "{name}");
        assert!(!j.rw.is_mixed(), "rwmixread does not apply to {name}");
    }
    for name in ["read", "randwrite", "rw", "randrw"] {
        assert!(!job(&format!("[j]\nrw={name}\n")).rw.trims(), "{name}");
    }
}

#[test]
fn bs_takes_a_trim_part_as_fio_does() {
    // One value: all three; `a,b`: b for writes and trims; `a,b,`: default trims;
    // `a,b,c`: c.
    for (bs, trim) in [
        ("8k", 8192),
        ("8k,32k", 32768),
        ("8k,32k,", 4096),
        ("8k,32k,1m", 1 << 20),
        (",16k", 16384),
    ] {
        let j = job(&format!("[j]\ndirect=1\nrw=trim\nsize=4m\nbs={bs}\n"));
        assert_eq!(j.bs.trim, BlockSize::Fixed(trim), "bs={bs}");
    }
    let j = job("[j]\ndirect=1\nrw=read\nsize=4m\nbs=8k,32k,1m\n");
    assert_eq!(
        (j.bs.read.min_len(), j.bs.write.min_len()),
        (8192, 32768),
        "the read and write parts are unchanged by a trim part"
    );
}

#[test]
fn trim_jobs_trim_sequentially_or_at_random() {
    let seq = ios(&job("[j]\ndirect=1\nrw=trim\nsize=64k\nbs=16k\n"), 5);
    let want: Vec<_> = [0, 16384, 32768, 49152, 0]
        .iter()
        .map(|&o| (Op::Trim, o, 16384))
        .collect();
    assert_eq!(seq, want, "sequential trims wrap at the end");
    let rand = ios(&job("[j]\ndirect=1\nrw=randtrim\nsize=64m\nbs=64k\n"), 200);
    assert!(rand
        .iter()
        .all(|&(op, o, l)| op == Op::Trim && o % 65536 == 0 && l == 65536));
    let sorted = rand.windows(2).all(|w| w[0].1 < w[1].1);
    assert!(!sorted, "random trims are not in order");
}

#[test]
fn trimwrite_trims_then_writes_up_to_the_next_trim_block() {
    // fio's set_rw_ddir: a trim when the file's last write started where its last
    // trim did, else a write from the write cursor. Trim 16k, write 4k: the first trim
    // gets one write (both start at 0); later ones get writes until the last write
    // starts where the last trim did.
    let j = job("[j]\ndirect=1\nrw=trimwrite\nsize=64k\nbs=4k,4k,16k\n");
    let got = ios(&j, 8);
    let want = vec![
        (Op::Trim, 0, 16384),
        (Op::Write, 0, 4096),
        (Op::Trim, 16384, 16384),
        (Op::Write, 4096, 4096),
        (Op::Write, 8192, 4096),
        (Op::Write, 12288, 4096),
        (Op::Write, 16384, 4096),
        (Op::Trim, 32768, 16384),
    ];
    assert_eq!(got, want);
    // Equal sizes: trim a block, write it, next block.
    let j = job("[j]\ndirect=1\nrw=trimwrite\nsize=64k\nbs=8k\n");
    let got = ios(&j, 4);
    assert_eq!(
        got,
        vec![
            (Op::Trim, 0, 8192),
            (Op::Write, 0, 8192),
            (Op::Trim, 8192, 8192),
            (Op::Write, 8192, 8192),
        ]
    );
}

#[test]
fn randtrimwrite_writes_where_it_trimmed() {
    let j = job("[j]\ndirect=1\nrw=randtrimwrite\nsize=64m\nbs=8k\n");
    let got = ios(&j, 400);
    for pair in got.chunks(2) {
        let (t, w) = (pair[0], pair[1]);
        assert_eq!((t.0, w.0), (Op::Trim, Op::Write), "{pair:?}");
        assert_eq!(t.1, w.1, "the write goes at the trim's offset");
    }
    let distinct: std::collections::BTreeSet<u64> = got.iter().map(|x| x.1).collect();
    assert!(distinct.len() > 150, "random offsets");
}

#[test]
fn trimwrite_issues_twice_the_size_as_fio() {
    // fio: "each byte is trimmed and then written, so allow total_bytes or number of
    // ios to be twice as big".
    for mode in ["trimwrite", "randtrimwrite"] {
        let j = job(&format!("[j]\ndirect=1\nrw={mode}\nsize=64k\nbs=4k\n"));
        let mut g = IoGen::new(&j, 0, 0, 1);
        let mut n = 0;
        while !g.exhausted() {
            g.next_io();
            n += 1;
        }
        assert_eq!(n, 32, "{mode}: 16 trims and 16 writes of 4k over 64k");
        let j = job(&format!(
            "[j]\ndirect=1\nrw={mode}\nsize=64k\nnumber_ios=5\n"
        ));
        let mut g = IoGen::new(&j, 0, 0, 1);
        let mut n = 0;
        while !g.exhausted() {
            g.next_io();
            n += 1;
        }
        assert_eq!(n, 10, "{mode}: number_ios doubled");
    }
    let j = job("[j]\ndirect=1\nrw=trim\nsize=64k\nbs=4k\n");
    let mut g = IoGen::new(&j, 0, 0, 1);
    let mut n = 0;
    while !g.exhausted() {
        g.next_io();
        n += 1;
    }
    assert_eq!(n, 16, "a trim job issues its size once");
}

#[test]
fn buffered_trims_parse_and_oversized_trim_blocks_are_refused() {
    let p = parse_str(
        "[j]\nrw=randtrim\nsize=1m\n",
        "t.fio",
        &ParseOptions::default(),
    )
    .unwrap();
    assert!(
        p.jobs[0].buffered,
        "fio's default direct=0: through the page cache"
    );
    let e = parse_str(
        "[j]\ndirect=1\nrw=trim\nsize=1m\nbs=4k,4k,2m\n",
        "t.fio",
        &ParseOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("option 'bs'") && e.contains("for trims"), "{e}");
    // The verify-related trim options stay refused, with their reason.
    let e = parse_str(
        "[j]\ndirect=1\nrw=write\nsize=1m\ntrim_percentage=10\n",
        "t.fio",
        &ParseOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("trim_percentage"), "{e}");
}
