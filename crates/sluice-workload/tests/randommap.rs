//! fio's random map (its default; off with `norandommap`): no block of a random job
//! repeats until every block has been done, a block overlapping done blocks is cut to
//! the free extent, and the map starts afresh when the job wraps or loops.

use std::collections::HashSet;

use sluice_workload::{parse_str, IoGen, IoSpec, JobSpec, ParseOptions};

fn job(text: &str) -> JobSpec {
    let mut p = parse_str(text, "m.fio", &ParseOptions::default()).unwrap();
    p.jobs.remove(0)
}

fn ios(j: &JobSpec, seed: u64, n: usize) -> Vec<IoSpec> {
    let mut g = IoGen::new(j, 0, 0, seed);
    (0..n).map(|_| g.next_io()).collect()
}

/// The 4 KiB blocks the I/Os cover, each counted once per I/O touching it.
fn block_counts(ios: &[IoSpec], start: u64, blocks: usize) -> Vec<u32> {
    let mut c = vec![0u32; blocks];
    for io in ios {
        let b = ((io.offset - start) / 4096) as usize;
        let n = (io.len as usize).div_ceil(4096);
        for x in &mut c[b..b + n] {
            *x += 1;
        }
    }
    c
}

#[test]
fn n_random_ios_cover_n_blocks_exactly_once() {
    // 1 MiB at 4 KiB: 256 blocks. Without the map, 256 draws with replacement all
    // distinct has probability 256!/256^256 ≈ 1e-110.
    let j = job("[j]\nrw=randwrite\nbs=4k\nsize=1m\noffset=8m\n");
    let v = ios(&j, 5, 256);
    assert!(v.iter().all(|io| io.len == 4096));
    assert_eq!(block_counts(&v, 8 << 20, 256), vec![1; 256]);
    // The blocks are not simply in order.
    assert!(v.windows(2).any(|w| w[1].offset != w[0].offset + 4096));
    // A size-based job ends with the pass.
    let mut g = IoGen::new(&j, 0, 0, 5);
    for _ in 0..256 {
        g.next_io();
    }
    assert!(g.exhausted());
}

#[test]
fn the_map_starts_afresh_when_time_based_jobs_wrap_and_at_each_loop() {
    for extra in ["time_based\nruntime=1s\n", "loops=3\n"] {
        let j = job(&format!("[j]\nrw=randread\nbs=4k\nsize=512k\n{extra}"));
        let v = ios(&j, 9, 3 * 128);
        for pass in v.chunks(128) {
            assert_eq!(block_counts(pass, 0, 128), vec![1; 128], "{extra}");
        }
        // The passes are not the same order.
        assert_ne!(v[..128], v[128..256]);
    }
}

#[test]
fn norandommap_draws_with_replacement() {
    let j = job("[j]\nrw=randwrite\nbs=4k\nsize=1m\nnorandommap\n");
    let c = block_counts(&ios(&j, 5, 256), 0, 256);
    assert!(c.iter().any(|&n| n > 1), "no block repeated in 256 draws");
    assert!(c.contains(&0));
}

#[test]
fn non_uniform_distributions_and_odd_blockalign_keep_no_map() {
    // fio: "Using a non-uniform random distribution excludes usage of a random map";
    // "Any use of blockalign= turns off randommap".
    for extra in ["random_distribution=zipf:1.2\n", "blockalign=8k\n"] {
        let j = job(&format!("[j]\nrw=randread\nbs=4k\nsize=1m\n{extra}"));
        let c = block_counts(&ios(&j, 3, 256), 0, 256);
        assert!(c.iter().any(|&n| n > 1), "{extra}: no repeat");
    }
    // blockalign equal to the block size keeps it.
    let j = job("[j]\nrw=randread\nbs=4k\nsize=1m\nblockalign=4k\n");
    assert_eq!(block_counts(&ios(&j, 3, 256), 0, 256), vec![1; 256]);
}

/// fio's example iometer-file-access-server.fio's split.
const IOMETER: &str = "512/10:1k/5:2k/5:4k/60:8k/2:16k/4:32k/4:64k/10";

#[test]
fn bssplit_blocks_are_cut_to_free_extents_aligned_to_the_smallest_size() {
    let text = format!("[j]\nrw=randread\nsize=256m\nbssplit={IOMETER}\n");
    let sizes: HashSet<u32> = [512, 1024, 2048, 4096, 8192, 16384, 32768, 65536].into();
    let n = 20_000;
    let v = ios(&job(&text), 1, n);
    // No two I/Os overlap (fewer bytes than the file: one pass of the map).
    let mut spans: Vec<(u64, u64)> = v
        .iter()
        .map(|io| (io.offset, io.offset + io.len as u64))
        .collect();
    spans.sort_unstable();
    assert!(
        spans.windows(2).all(|w| w[0].1 <= w[1].0),
        "overlapping I/Os"
    );
    assert!(spans.last().unwrap().1 <= 256 << 20);
    let mut cut = 0;
    for io in &v {
        assert_eq!(io.offset % 512, 0, "{io:?}");
        assert_eq!(io.len % 512, 0, "{io:?}");
        assert!(io.len >= 512 && io.len <= 65536, "{io:?}");
        cut += usize::from(!sizes.contains(&io.len));
    }
    assert!(cut > n / 100, "only {cut} I/Os cut to a free extent");
    let mean = |v: &[IoSpec]| v.iter().map(|io| io.len as f64).sum::<f64>() / v.len() as f64;
    let with_map = mean(&v);
    let without = mean(&ios(&job(&format!("{text}norandommap\n")), 1, n));
    // The split's mean is 11 366 B (11.1 KiB). fio 3.33's write_iolog of this job
    // (null engine, 4 seeds): 6 778–6 950 B with its map, 11 426 B with norandommap;
    // sluice: 7 245–7 431 B (its blocks aligned to their size; with blockalign=512,
    // fio's placement, 6 834–6 896 B).
    assert!(
        (without - 11_366.0).abs() < 400.0,
        "norandommap mean {without}"
    );
    assert!(
        with_map < 0.8 * without,
        "mean {with_map} with the map, {without} without"
    );
}

#[test]
fn a_cut_block_stops_at_the_first_done_block() {
    // 64 KiB and 4 KiB over 1 MiB: whatever the draws, the I/Os tile the file without
    // overlap and cover it exactly after as many bytes as it holds.
    let j = job("[j]\nrw=randwrite\nbssplit=64k/50:4k/50\nsize=1m\n");
    let mut g = IoGen::new(&j, 0, 0, 17);
    let mut v = Vec::new();
    while !g.exhausted() {
        v.push(g.next_io());
    }
    assert_eq!(v.iter().map(|io| io.len as u64).sum::<u64>(), 1 << 20);
    assert_eq!(block_counts(&v, 0, 256), vec![1; 256]);
    assert!(v.iter().any(|io| io.len != 4096 && io.len != 65536));
}

#[test]
fn same_seed_same_sequence() {
    let j = job(&format!("[j]\nrw=randrw\nsize=64m\nbssplit={IOMETER}\n"));
    let a = ios(&j, 42, 50_000);
    assert_eq!(a, ios(&j, 42, 50_000));
    assert_ne!(a, ios(&j, 43, 50_000));
}

#[test]
fn several_files_keep_a_map_each() {
    let j = job("[j]\nrw=randread\nbs=4k\nfilesize=256k\nnrfiles=4\n");
    let v = ios(&j, 8, 256);
    assert_eq!(block_counts(&v, 0, 256), vec![1; 256]);
}
