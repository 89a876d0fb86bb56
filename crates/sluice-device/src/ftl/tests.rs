//! The FTL's own tests: the map's consistency, GC, trims, placement handles.

use super::*;

fn cfg(logical_units: u64, block_units: u32, op: f64, precondition: bool) -> FlashConfig {
    FlashConfig {
        logical_bytes: logical_units * 4096,
        map_bytes: 4096,
        block_units,
        over_provisioning: op,
        gc_free_blocks: 2,
        precondition,
        channel_bus: false,
        buffer_reads: true,
        fdp_ruhs: 0,
    }
}

fn check(f: &Ftl) {
    // Every mapped LPN's unit points back at it; valid counts agree.
    let mut valid = vec![0u32; f.valid.len()];
    for (l, &p) in f.fwd.iter().enumerate() {
        if p != NONE {
            assert_eq!(f.rev[p as usize], l as u32);
            valid[(p / f.block_units) as usize] += 1;
        }
    }
    assert_eq!(valid, f.valid);
}

#[test]
fn preconditioned_map_is_full_and_consistent() {
    let f = Ftl::new(&cfg(4096, 64, 0.25, true), 4, 1);
    assert!(f.fwd.iter().all(|&p| p != NONE));
    check(&f);
    assert_eq!(f.die_of(0), Some(0));
    assert_eq!(f.die_of(4096), Some(1));
}

#[test]
fn random_overwrites_amplify_and_keep_the_map_consistent() {
    // 64 logical blocks per die, 80 physical: 16 spare, 2 kept free.
    let mut f = Ftl::new(&cfg(16384, 64, 0.25, true), 4, 1);
    let mut x = 88172645463325252u64;
    for i in 0..200_000u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let lpn = x % 16384;
        f.buffer_in(lpn * 4096, 4096);
        f.program((i % 4) as u32, lpn * 4096, 4096, 0);
        f.buffer_out(lpn * 4096, 4096);
    }
    check(&f);
    let wa = f.stats.write_amplification();
    // Greedy GC with ≈ 20 % usable spare under uniform random writes: WA ≈ 2–3.
    assert!(wa > 1.2 && wa < 3.5, "WA {wa}");
    assert!(f.stats.gc_erases > 0);
    assert!(f.buffered.iter().all(|&b| b == 0));
}

#[test]
fn trimmed_units_are_unmapped_and_gc_copies_fewer() {
    // The same random overwrites, with and without a trim of half the space
    // first: the trimmed drive's victims hold fewer valid units.
    let run = |trim: bool| {
        let mut f = Ftl::new(&cfg(4096, 64, 0.1, true), 4, 1);
        if trim {
            f.trim(0, 2048 * 4096);
            assert_eq!(f.stats.trimmed_units, 2048);
            assert!(f.fwd[..2048].iter().all(|&p| p == NONE));
        }
        let mut x = 7u64;
        for _ in 0..20_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let l = 2048 + (x >> 33) % 2048;
            f.program((l % 4) as u32, l * 4096, 4096, 0);
        }
        check(&f);
        f.stats.write_amplification()
    };
    let (plain, trimmed) = (run(false), run(true));
    assert!(trimmed < plain, "trimmed WA {trimmed} vs {plain}");
    assert!(trimmed < 1.3, "{trimmed}");
}

#[test]
fn a_partly_covered_unit_keeps_its_data() {
    let mut f = Ftl::new(&cfg(64, 16, 0.5, true), 1, 1);
    f.trim(2048, 3 * 4096);
    // Units 1 and 2 are wholly inside [2 KiB, 14 KiB); 0 and 3 only partly.
    assert_eq!(f.stats.trimmed_units, 2);
    assert!(f.fwd[0] != NONE && f.fwd[3] != NONE);
    assert!(f.fwd[1] == NONE && f.fwd[2] == NONE);
    check(&f);
}

#[test]
fn sequential_overwrites_need_no_copies() {
    let mut f = Ftl::new(&cfg(4096, 64, 0.25, true), 4, 1);
    for round in 0..3u64 {
        for l in 0..4096u64 {
            f.program(((l + round) % 4) as u32, l * 4096, 4096, 0);
        }
    }
    check(&f);
    // Whole blocks are invalidated before they are collected.
    assert!(f.stats.write_amplification() < 1.05, "{:?}", f.stats);
}

#[test]
fn buffered_reads_are_tracked() {
    let mut f = Ftl::new(&cfg(1024, 64, 0.5, false), 2, 1);
    assert_eq!(f.die_of(0), None);
    f.buffer_in(8192, 8192);
    assert!(f.all_buffered(8192, 8192));
    assert!(!f.all_buffered(4096, 8192));
    f.program(1, 8192, 8192, 0);
    assert!(
        f.all_buffered(8192, 4096),
        "in the buffer until its program ends"
    );
    f.buffer_out(8192, 8192);
    assert!(!f.all_buffered(8192, 4096));
    assert_eq!(f.die_of(8192), Some(1));
}

#[test]
fn too_little_spare_is_refused() {
    let c = cfg(4096, 512, 0.01, true);
    let mut m = crate::DeviceProfile::builtin("nand").unwrap().media;
    m.units = 4;
    m.geometry = None;
    let e = c.validate("x", &m, true).unwrap_err().to_string();
    assert!(e.contains("over_provisioning"), "{e}");
}

/// A hot region rewritten at random and a cold region rewritten in sequence, their
/// writes interleaved, on one write point per die or on a handle each (FDP): with the
/// hot data in blocks of its own, GC finds them mostly invalid and the cold blocks are
/// never victims — write amplification falls.
#[test]
fn placement_handles_keep_hot_and_cold_apart() {
    let run = |fdp: bool| {
        let mut c = cfg(16384, 64, 0.25, true);
        c.fdp_ruhs = if fdp { 8 } else { 0 };
        let mut f = Ftl::new(&c, 4, 1);
        let (hot, cold) = (2048u64, 14336u64);
        let mut x = 88172645463325252u64;
        let mut next_cold = 0u64;
        for i in 0..200_000u64 {
            // Three hot writes to one cold: the hot region turns over ≈ 21 times as often.
            let (l, ruh) = if i % 4 == 3 {
                let l = hot + next_cold;
                next_cold = (next_cold + 1) % cold;
                (l, 2)
            } else {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x % hot, 1)
            };
            let ruh = if fdp { ruh } else { 0 };
            // Dies in turn for both streams (as the device's write pointer).
            f.program(((i + i / 4) % 4) as u32, l * 4096, 4096, ruh);
        }
        check(&f);
        f.stats.write_amplification()
    };
    let (one, fdp) = (run(false), run(true));
    assert!(fdp < one, "FDP WA {fdp} vs one write point {one}");
    eprintln!("WA: one write point {one}, FDP {fdp}");
    assert!(fdp < 1.3, "hot and cold apart: GC copies little ({fdp})");
    assert!(one > 2.0, "mixed blocks: GC copies the cold data ({one})");
}

#[test]
fn gc_copies_stay_with_their_handle() {
    let mut c = cfg(4096, 64, 0.5, false);
    c.fdp_ruhs = 4;
    let mut f = Ftl::new(&c, 2, 1);
    let mut x = 7u64;
    for i in 0..40_000u64 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let l = (x >> 33) % 4096;
        // Each LPN keeps one handle: l mod 4.
        f.program((i % 2) as u32, l * 4096, 4096, (l % 4) as u32);
    }
    check(&f);
    assert!(f.stats.gc_copied_units > 0, "GC ran: {:?}", f.stats);
    // Every written unit sits in a block its handle owns (host write or GC copy).
    for (l, &p) in f.fwd.iter().enumerate() {
        if p == NONE {
            continue;
        }
        let b = (p / f.block_units) as usize;
        assert!(
            f.owner[b] as usize == l % 4,
            "lpn {l} in a block of handle {}",
            f.owner[b]
        );
    }
}

#[test]
fn too_many_handles_for_the_spare_are_refused() {
    let mut c = cfg(4096, 64, 0.25, true);
    let mut m = crate::DeviceProfile::builtin("nand").unwrap().media;
    m.units = 4;
    m.geometry = None;
    c.validate("x", &m, true).unwrap();
    c.fdp_ruhs = 64;
    let e = c.validate("x", &m, true).unwrap_err().to_string();
    assert!(e.contains("fdp_ruhs"), "{e}");
    c.fdp_ruhs = 129;
    let e = c.validate("x", &m, true).unwrap_err().to_string();
    assert!(e.contains("1..=128"), "{e}");
}
