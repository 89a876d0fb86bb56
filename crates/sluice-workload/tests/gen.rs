//! Generator and pacer tests: distributions, alignment, wrap-around, determinism,
//! pacing.

use proptest::prelude::*;
use sluice_core::Op;
use sluice_workload::{
    parse_str, BlockSize, BlockSizes, BsEntry, IoGen, JobSpec, Pacer, ParseOptions, RwMode,
};

fn job(text: &str) -> JobSpec {
    let mut p = parse_str(text, "g.fio", &ParseOptions::default()).unwrap();
    p.jobs.remove(0)
}

#[test]
fn bssplit_empirical_distribution() {
    let j = job("[j]\nrw=randread\nsize=16m\nbssplit=4k/50:8k/30:64k/20\nnorandommap\n");
    let mut g = IoGen::new(&j, 0, 0, 7);
    let n = 100_000;
    let mut counts = [0u32; 3];
    for _ in 0..n {
        let io = g.next_io();
        let i = match io.len {
            4096 => 0,
            8192 => 1,
            65536 => 2,
            other => panic!("unexpected size {other}"),
        };
        counts[i] += 1;
    }
    for (c, want) in counts.iter().zip([50.0, 30.0, 20.0]) {
        let got = *c as f64 * 100.0 / n as f64;
        assert!((got - want).abs() < 1.0, "{got}% vs {want}% ({counts:?})");
    }
}

#[test]
fn rwmix_empirical_ratio() {
    for (mix, mode) in [(70u8, "randrw"), (25, "rw")] {
        let j = job(&format!("[j]\nrw={mode}\nrwmixread={mix}\nsize=1g\n"));
        let mut g = IoGen::new(&j, 0, 0, 11);
        let n = 100_000;
        let reads = (0..n).filter(|_| g.next_io().op == Op::Read).count();
        let got = reads as f64 * 100.0 / n as f64;
        assert!(
            (got - mix as f64).abs() < 1.0,
            "{mode}: {got}% reads, want {mix}%"
        );
    }
    // Pure modes never mix.
    let mut g = IoGen::new(&job("[j]\nrw=randwrite\n"), 0, 0, 1);
    assert!((0..1000).all(|_| g.next_io().op == Op::Write));
    let mut g = IoGen::new(&job("[j]\nrw=read\n"), 0, 0, 1);
    assert!((0..1000).all(|_| g.next_io().op == Op::Read));
}

#[test]
fn mixed_directions_use_their_own_block_sizes() {
    let j = job("[j]\nrw=randrw\nbs=4k,64k\nsize=1m\nnorandommap\n");
    let mut g = IoGen::new(&j, 0, 0, 3);
    for _ in 0..1000 {
        let io = g.next_io();
        let want = if io.op == Op::Read { 4096 } else { 65536 };
        assert_eq!(io.len, want);
        assert_eq!(io.offset % want as u64, 0);
    }
}

fn split_job(offset: u64, size: u64, entries: &[(u32, u32)], seed_mix: u8) -> JobSpec {
    let table = entries
        .iter()
        .map(|&(len, ppm)| BsEntry { len, ppm })
        .collect::<Vec<_>>();
    JobSpec {
        rw: if seed_mix & 1 == 0 {
            RwMode::RandRead
        } else {
            RwMode::RandRw
        },
        offset,
        size,
        bs: BlockSizes {
            read: BlockSize::Split(table.clone()),
            write: BlockSize::Split(table),
            trim: BlockSize::Fixed(4096),
        },
        // The drawing itself: fio's random map would cut blocks to free extents
        // (tests/randommap.rs).
        norandommap: true,
        ..JobSpec::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Random offsets are aligned to the smallest of the sizes (fio's default
    /// `blockalign`, its `min_bs`) and the whole I/O lies in [offset, offset+size).
    #[test]
    fn random_offsets_aligned_and_inside(
        offset_blocks in 0u64..1_000_000,
        odd in 0u64..4,
        size_kib in 64u64..(1 << 22),
        shift_a in 9u32..17,
        shift_b in 9u32..17,
        seed in any::<u64>(),
        thread in 0u32..8,
    ) {
        // Offsets that are 512-aligned, sometimes not aligned to the larger sizes.
        let offset = offset_blocks * 4096 + odd * 512;
        let size = size_kib * 1024;
        let (a, b) = (1u32 << shift_a, 1u32 << shift_b);
        let j = split_job(offset, size, &[(a, 600_000), (b, 400_000)], thread as u8);
        let mut g = IoGen::new(&j, 1, thread, seed);
        for _ in 0..200 {
            let io = g.next_io();
            prop_assert!(io.len == a || io.len == b);
            prop_assert!(io.offset >= offset, "{io:?} before {offset}");
            prop_assert!(io.offset + io.len as u64 <= offset + size, "{io:?} past the end");
            // Absolute alignment when the region holds an aligned block (always here:
            // size >= 64 KiB = the largest block), so both forms hold.
            prop_assert_eq!(io.offset % a.min(b) as u64, 0, "{:?} unaligned", io);
        }
    }

    /// A region too small for an absolutely aligned block still gets I/Os inside it,
    /// aligned relative to the region's start; smaller sizes that fit stay absolutely
    /// aligned.
    #[test]
    fn small_unaligned_regions_stay_inside(off in 1u64..64, seed in any::<u64>()) {
        let offset = off * 512;
        let j = split_job(offset, 65536, &[(65536, 500_000), (4096, 500_000)], 0);
        let mut g = IoGen::new(&j, 0, 0, seed);
        for _ in 0..100 {
            let io = g.next_io();
            prop_assert!(io.offset >= offset);
            prop_assert!(io.offset + io.len as u64 <= offset + 65536);
            if io.len == 65536 {
                // No 64 KiB-aligned block fits: relative alignment, i.e. the start.
                prop_assert_eq!(io.offset, offset);
            } else {
                prop_assert_eq!(io.offset % 4096, 0);
            }
        }
    }
}

#[test]
fn random_offsets_cover_the_region() {
    // 16 blocks of 4k: with 2000 draws every block is hit, none outside.
    let j = job("[j]\nrw=randread\nsize=64k\noffset=1m\n");
    let mut g = IoGen::new(&j, 0, 0, 5);
    let mut hit = [0u32; 16];
    for _ in 0..2000 {
        let io = g.next_io();
        hit[((io.offset - (1 << 20)) / 4096) as usize] += 1;
    }
    assert!(hit.iter().all(|&h| h > 60), "{hit:?}");
}

#[test]
fn sequential_wraps_around() {
    let j = job("[j]\nrw=write\nbs=4k\nsize=16k\noffset=8k\ntime_based\nruntime=1s\n");
    let mut g = IoGen::new(&j, 0, 0, 1);
    let offsets: Vec<u64> = (0..10).map(|_| g.next_io().offset).collect();
    let k = 4096;
    assert_eq!(
        offsets,
        vec![
            2 * k,
            3 * k,
            4 * k,
            5 * k,
            2 * k,
            3 * k,
            4 * k,
            5 * k,
            2 * k,
            3 * k
        ]
    );
    assert!(!g.exhausted(), "time-based jobs are never exhausted");
    assert_eq!(g.issued_bytes(), 10 * k);

    // A block that does not fit at the end wraps rather than crossing it.
    let j = job("[j]\nrw=read\nbs=12k\nsize=32k\ntime_based\nruntime=1s\n");
    let mut g = IoGen::new(&j, 0, 0, 1);
    let offsets: Vec<u64> = (0..5).map(|_| g.next_io().offset).collect();
    assert_eq!(offsets, vec![0, 3 * k, 0, 3 * k, 0]);
}

#[test]
fn sequential_mixed_keeps_a_position_per_direction() {
    let j = job("[j]\nrw=rw\nsize=1m\n");
    let mut g = IoGen::new(&j, 0, 0, 9);
    let mut next = [0u64; 2];
    for _ in 0..1000 {
        let io = g.next_io();
        let d = usize::from(io.op == Op::Write);
        assert_eq!(io.offset, next[d]);
        next[d] = (next[d] + 4096) % (1 << 20);
    }
}

#[test]
fn size_based_end() {
    let j = job("[j]\nrw=randread\nsize=40k\n");
    let mut g = IoGen::new(&j, 0, 0, 1);
    let mut n = 0;
    while !g.exhausted() {
        g.next_io();
        n += 1;
    }
    assert_eq!(n, 10);
    assert_eq!(g.issued_bytes(), 40 << 10);
}

#[test]
fn determinism() {
    let j = job("[j]\nrw=randrw\nbssplit=4k/50:16k/50\nsize=1g\n");
    let take = |g: &mut IoGen| (0..1000).map(|_| g.next_io()).collect::<Vec<_>>();
    let a = take(&mut IoGen::new(&j, 2, 1, 1234));
    let b = take(&mut IoGen::new(&j, 2, 1, 1234));
    assert_eq!(a, b, "same inputs, same stream");
    let other_thread = take(&mut IoGen::new(&j, 2, 0, 1234));
    let other_job = take(&mut IoGen::new(&j, 3, 1, 1234));
    let other_seed = take(&mut IoGen::new(&j, 2, 1, 1235));
    for other in [&other_thread, &other_job, &other_seed] {
        let same = a.iter().zip(other.iter()).filter(|(x, y)| x == y).count();
        assert!(same < 50, "streams should differ ({same} equal I/Os)");
    }
    // randseed changes the stream too.
    let mut j2 = j.clone();
    j2.randseed = Some(99);
    let seeded = take(&mut IoGen::new(&j2, 2, 1, 1234));
    assert_ne!(a, seeded);
    assert_eq!(seeded, take(&mut IoGen::new(&j2, 2, 1, 1234)));
}

#[test]
fn pacer_spacing_by_bandwidth() {
    let j = job("[j]\nrw=randread\nrate=4m\n");
    let mut p = Pacer::new(&j).expect("rate set");
    let n = 10_000u64;
    let times: Vec<u64> = (0..n).map(|_| p.next_issue_ns(Op::Read, 4096)).collect();
    assert_eq!(times[0], 0);
    // 4 MiB/s of 4 KiB = 1024 IOPS = 976 562.5 ns apart on average.
    let avg = (times[n as usize - 1] - times[0]) as f64 / (n - 1) as f64;
    assert!((avg - 976_562.5).abs() < 0.01, "average spacing {avg}");
    for w in times.windows(2) {
        let d = w[1] - w[0];
        assert!(d == 976_562 || d == 976_563, "spacing {d}");
    }
}

#[test]
fn pacer_by_iops_and_per_direction() {
    let j = job("[j]\nrw=randrw\nrate_iops=1000\n");
    let mut p = Pacer::new(&j).unwrap();
    // One value: reads and writes together, 1 ms apart.
    assert_eq!(p.next_issue_ns(Op::Read, 4096), 0);
    assert_eq!(p.next_issue_ns(Op::Write, 4096), 1_000_000);
    assert_eq!(p.next_issue_ns(Op::Read, 4096), 2_000_000);

    let j = job("[j]\nrw=randrw\nrate=1m,2m\n");
    let mut p = Pacer::new(&j).unwrap();
    assert_eq!(p.next_issue_ns(Op::Read, 1 << 20), 0);
    assert_eq!(p.next_issue_ns(Op::Write, 1 << 20), 0);
    assert_eq!(p.next_issue_ns(Op::Read, 1 << 20), 1_000_000_000);
    assert_eq!(p.next_issue_ns(Op::Write, 1 << 20), 500_000_000);
    assert_eq!(p.next_issue_ns(Op::Flush, 0), 0);

    // Only writes limited.
    let j = job("[j]\nrw=randrw\nrate=,1m\n");
    let mut p = Pacer::new(&j).unwrap();
    for _ in 0..10 {
        assert_eq!(p.next_issue_ns(Op::Read, 1 << 20), 0);
    }

    // Both limits: the later wins.
    let j = job("[j]\nrw=randread\nrate=1m\nrate_iops=10\n");
    let mut p = Pacer::new(&j).unwrap();
    p.next_issue_ns(Op::Read, 4096);
    assert_eq!(p.next_issue_ns(Op::Read, 4096), 100_000_000);
    p.next_issue_ns(Op::Read, 1 << 20);
    assert_eq!(p.next_issue_ns(Op::Read, 4096), 1_007_812_500);

    assert!(Pacer::new(&job("[j]\n")).is_none());
    assert!(Pacer::new(&job("[j]\nrate=0\n")).is_none());
}

// ------------------------------------------------------------------ fio's extras

/// Hits per block of a random-read job over `blocks` 4 KiB blocks.
fn block_hits(text: &str, n: usize) -> Vec<u64> {
    let j = job(text);
    let blocks = (j.size / 4096) as usize;
    let mut g = IoGen::new(&j, 0, 0, 17);
    let mut hits = vec![0u64; blocks];
    for _ in 0..n {
        let io = g.next_io();
        assert_eq!(io.offset % 4096, 0);
        assert!(io.offset + io.len as u64 <= j.offset + j.size, "{io:?}");
        hits[((io.offset - j.offset) / 4096) as usize] += 1;
    }
    hits
}

/// Share of all hits taken by the hottest `frac` of the blocks.
fn top_share(hits: &[u64], frac: f64) -> f64 {
    let mut h = hits.to_vec();
    h.sort_unstable_by(|a, b| b.cmp(a));
    let k = ((h.len() as f64 * frac) as usize).max(1);
    h[..k].iter().sum::<u64>() as f64 / h.iter().sum::<u64>() as f64
}

#[test]
fn zipf_concentrates_like_fios() {
    // fio-genzipf's figure for θ=1.2 over 1 GiB of 4 KiB blocks: the hottest 10 % of
    // blocks take ≈ 94 % of the hits. Over 4096 blocks the tail is shorter: compute
    // the expectation from Zipf's law itself and compare.
    let n = 200_000;
    let hits = block_hits(
        "[j]\nrw=randread\nsize=16m\nrandom_distribution=zipf:1.2\n",
        n,
    );
    let blocks = hits.len();
    let z: Vec<f64> = (1..=blocks).map(|i| (i as f64).powf(-1.2)).collect();
    let total: f64 = z.iter().sum();
    let want: f64 = z[..blocks / 10].iter().sum::<f64>() / total;
    let got = top_share(&hits, 0.1);
    assert!(
        (got - want).abs() < 0.03,
        "top 10 %: {got} vs Zipf's {want}"
    );
    // The hottest block: rank 1's probability 1/ζ(n).
    let max = *hits.iter().max().unwrap() as f64 / n as f64;
    assert!((max - 1.0 / total).abs() < 0.02, "{max} vs {}", 1.0 / total);
    // Uniform for contrast.
    let u = block_hits("[j]\nrw=randread\nsize=16m\n", n);
    assert!(top_share(&u, 0.1) < 0.15);
}

#[test]
fn pareto_and_normal_skew() {
    let n = 100_000;
    // fio's pareto:h puts ≈ (1-h) of accesses on h of the blocks (the 80/20 rule for h=0.2).
    let hits = block_hits(
        "[j]\nrw=randread\nsize=16m\nrandom_distribution=pareto:0.2\n",
        n,
    );
    let s = top_share(&hits, 0.2);
    assert!(s > 0.75, "pareto:0.2 top 20 %: {s}");
    // normal: fio's sum of 12 uniforms, ≈ σ = n/√(12·12); the hottest 10 % take far
    // more than 10 %.
    let hits = block_hits(
        "[j]\nrw=randread\nsize=16m\nrandom_distribution=normal:5\n",
        n,
    );
    let s = top_share(&hits, 0.1);
    assert!(s > 0.3 && s < 0.9, "normal top 10 %: {s}");
}

#[test]
fn zoned_distributions_hit_their_zones() {
    let n = 100_000;
    let hits = block_hits(
        "[j]\nrw=randread\nsize=40m\nrandom_distribution=zoned:60/10:30/20:8/30:2/40\n",
        n,
    );
    let b = hits.len();
    let share = |a: usize, z: usize| hits[a..z].iter().sum::<u64>() as f64 / n as f64;
    for ((a, z), want) in [
        ((0, b / 10), 0.60),
        ((b / 10, 3 * b / 10), 0.30),
        ((3 * b / 10, 6 * b / 10), 0.08),
        ((6 * b / 10, b), 0.02),
    ] {
        let got = share(a, z);
        assert!((got - want).abs() < 0.01, "zone {a}..{z}: {got} vs {want}");
    }
    let hits = block_hits(
        "[j]\nrw=randread\nsize=64m\nrandom_distribution=zoned_abs:90/4m:10/60m\n",
        n,
    );
    let first = hits[..1024].iter().sum::<u64>() as f64 / n as f64;
    assert!((first - 0.9).abs() < 0.01, "{first}");
}

#[test]
fn skewed_streams_are_deterministic_and_centred() {
    let j = job("[j]\nrw=randread\nsize=16m\nrandom_distribution=zipf:1.5:0.5\n");
    let take = |g: &mut IoGen| (0..500).map(|_| g.next_io()).collect::<Vec<_>>();
    assert_eq!(
        take(&mut IoGen::new(&j, 0, 0, 9)),
        take(&mut IoGen::new(&j, 0, 0, 9))
    );
    // With a centre the hottest block (rank 0, hashed to 0) sits at centre × blocks.
    let hits = block_hits(
        "[j]\nrw=randread\nsize=16m\nrandom_distribution=zipf:1.5:0.5\n",
        20_000,
    );
    let hottest = hits.iter().enumerate().max_by_key(|(_, h)| **h).unwrap().0;
    assert_eq!(hottest, hits.len() / 2);
}

#[test]
fn percentage_random_mixes_sequential_runs() {
    let j = job("[j]\nrw=randread\nsize=64m\npercentage_random=25\n");
    let mut g = IoGen::new(&j, 0, 0, 3);
    let mut prev_end = u64::MAX;
    let mut seq = 0;
    let n = 20_000;
    for _ in 0..n {
        let io = g.next_io();
        if io.offset == prev_end {
            seq += 1;
        }
        prev_end = io.offset + io.len as u64;
    }
    let got = seq as f64 / n as f64;
    assert!((got - 0.75).abs() < 0.02, "sequential share {got}");
}

#[test]
fn files_round_robin_and_never_crossed() {
    // Four 16 KiB files: sequential I/O visits them in turn, each from its start.
    let j = job("[j]\nrw=read\nsize=64k\nnrfiles=4\n");
    let mut g = IoGen::new(&j, 0, 0, 1);
    let offs: Vec<u64> = (0..8).map(|_| g.next_io().offset / 4096).collect();
    assert_eq!(offs, vec![0, 4, 8, 12, 1, 5, 9, 13]);
    // roundrobin:2, and sequential service.
    let j = job("[j]\nrw=read\nsize=64k\nnrfiles=4\nfile_service_type=roundrobin:2\n");
    let mut g = IoGen::new(&j, 0, 0, 1);
    let offs: Vec<u64> = (0..6).map(|_| g.next_io().offset / 4096).collect();
    assert_eq!(offs, vec![0, 1, 4, 5, 8, 9]);
    let j = job("[j]\nrw=read\nsize=64k\nnrfiles=4\nfile_service_type=sequential\n");
    let mut g = IoGen::new(&j, 0, 0, 1);
    let offs: Vec<u64> = (0..6).map(|_| g.next_io().offset / 4096).collect();
    assert_eq!(offs, vec![0, 1, 2, 3, 4, 5]);
    // Random I/O with 12 KiB blocks in 16 KiB files never crosses a file's end.
    let j = job("[j]\nrw=randrw\nsize=64k\nnrfiles=4\nbs=12k\nfile_service_type=random\n");
    let mut g = IoGen::new(&j, 0, 0, 5);
    for _ in 0..1000 {
        let io = g.next_io();
        assert_eq!(io.offset / 16384, (io.offset + 12287) / 16384, "{io:?}");
    }
}

#[test]
fn io_size_loops_and_number_ios_end_a_thread() {
    let count = |text: &str| {
        let j = job(text);
        let mut g = IoGen::new(&j, 0, 0, 1);
        let mut offs = Vec::new();
        while !g.exhausted() {
            offs.push(g.next_io().offset / 4096);
        }
        offs
    };
    // io_size below size: the first 3 blocks, three loops each starting afresh.
    assert_eq!(
        count("[j]\nrw=read\nsize=64k\nio_size=12k\nloops=3\n"),
        vec![0, 1, 2, 0, 1, 2, 0, 1, 2]
    );
    // io_size above size wraps around.
    assert_eq!(
        count("[j]\nrw=write\nsize=8k\nio_size=20k\n"),
        vec![0, 1, 0, 1, 0]
    );
    assert_eq!(count("[j]\nrw=randread\nsize=1g\nnumber_ios=7\n").len(), 7);
    let j = job("[j]\nrw=read\nsize=1g\nnumber_ios=3\ntime_based\nruntime=1s\n");
    let mut g = IoGen::new(&j, 0, 0, 1);
    g.next_io();
    g.next_io();
    assert!(!g.exhausted());
    g.next_io();
    assert!(g.exhausted(), "number_ios ends time-based jobs too");
}

#[test]
fn bsrange_draws_multiples_of_the_minimum() {
    let j = job("[j]\nrw=randread\nsize=64m\nbsrange=4k-16k\nnorandommap\n");
    let mut g = IoGen::new(&j, 0, 0, 2);
    let mut counts = std::collections::BTreeMap::new();
    let mut off_own_size = 0;
    let n = 40_000;
    for _ in 0..n {
        let io = g.next_io();
        // fio's default blockalign is the smallest size: a 16 KiB block may start at
        // any 4 KiB boundary, not only at multiples of 16 KiB.
        assert_eq!(io.offset % 4096, 0);
        off_own_size += usize::from(!io.offset.is_multiple_of(io.len as u64));
        *counts.entry(io.len).or_insert(0u32) += 1;
    }
    assert!(
        off_own_size > n / 4,
        "{off_own_size} of {n} off their own size"
    );
    assert_eq!(
        counts.keys().copied().collect::<Vec<_>>(),
        vec![4096, 8192, 12288, 16384]
    );
    for c in counts.values() {
        assert!((*c as f64 / n as f64 - 0.25).abs() < 0.01, "{counts:?}");
    }
}

#[test]
fn poisson_pacing_keeps_the_mean_rate_with_random_gaps() {
    let j = job("[j]\nrw=randread\nrate_iops=1000\nrate_process=poisson\n");
    let mut p = Pacer::seeded(&j, 7).unwrap();
    let n = 20_000;
    let times: Vec<u64> = (0..n).map(|_| p.next_issue_ns(Op::Read, 4096)).collect();
    assert_eq!(times[0], 0);
    let gaps: Vec<f64> = times.windows(2).map(|w| (w[1] - w[0]) as f64).collect();
    let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
    assert!((mean - 1e6).abs() < 3e4, "mean gap {mean}");
    // Exponential: the standard deviation equals the mean, and P(gap < mean) = 1 - 1/e.
    let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
    assert!(
        (var.sqrt() / mean - 1.0).abs() < 0.05,
        "cv {}",
        var.sqrt() / mean
    );
    let below = gaps.iter().filter(|g| **g < mean).count() as f64 / gaps.len() as f64;
    assert!((below - 0.632).abs() < 0.02, "{below}");
    // Seeded: same seed, same gaps; another seed, others.
    let again: Vec<u64> = {
        let mut p = Pacer::seeded(&j, 7).unwrap();
        (0..n).map(|_| p.next_issue_ns(Op::Read, 4096)).collect()
    };
    assert_eq!(times, again);
    let mut q = Pacer::seeded(&j, 8).unwrap();
    q.next_issue_ns(Op::Read, 4096);
    assert_ne!(q.next_issue_ns(Op::Read, 4096), times[1]);
}

#[test]
fn pacing_restarts_when_the_ramp_ends() {
    use sluice_workload::{IoSource, NextIo};
    // 1000 IOPS with a 10 ms ramp: a thread that could not issue during the ramp does
    // not catch up afterwards (fio resets its rate accounting at the end of the ramp).
    let j = job("[j]\nrw=randread\nrate_iops=1000\nramp_time=10ms\n");
    let mut s = IoSource::new(&j, 0, 0, 1);
    assert!(matches!(s.next(0, 0), NextIo::Issue(_)));
    assert_eq!(s.next(0, 0), NextIo::At(1_000_000));
    // Nothing asked until 25 ms. Pacing counts afresh from the ramp's end (10 ms): the
    // slots due by then are 10, 11, …, 25 ms — 16 I/Os, not the 25 a count from the
    // job's start would owe.
    let mut burst = 0;
    while let NextIo::Issue(_) = s.next(25_000_000, 0) {
        burst += 1;
    }
    assert_eq!(burst, 16);
    assert_eq!(s.next(25_000_000, 0), NextIo::At(26_000_000));
    // Without a ramp: 25 owed (slots 1 … 25 ms).
    let j = job("[j]\nrw=randread\nrate_iops=1000\n");
    let mut s = IoSource::new(&j, 0, 0, 1);
    assert!(matches!(s.next(0, 0), NextIo::Issue(_)));
    let mut burst = 0;
    while let NextIo::Issue(_) = s.next(25_000_000, 0) {
        burst += 1;
    }
    assert_eq!(burst, 25);
}
