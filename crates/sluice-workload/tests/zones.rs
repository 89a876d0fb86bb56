//! fio's zone options: `zonemode` and its default, `strided` windows (`zonesize`,
//! `zonerange`, `zoneskip`), sizes in zones, the zbd options and what is refused.

use sluice_workload::{parse_str, IoGen, JobSpec, ParseOptions, ZoneMode};

fn parse(text: &str) -> Result<JobSpec, String> {
    parse_str(text, "z.fio", &ParseOptions::default())
        .map(|mut p| p.jobs.remove(0))
        .map_err(|e| e.to_string())
}

fn offsets(j: &JobSpec, n: usize) -> Vec<u64> {
    let mut g = IoGen::new(j, 0, 0, 5);
    (0..n).map(|_| g.next_io().offset).collect()
}

const K: u64 = 1024;

#[test]
fn strided_reads_a_window_then_skips() {
    let j = parse("[s]\nrw=read\nbs=64k\nsize=4m\nzonemode=strided\nzonesize=128k\nzoneskip=1m\n")
        .unwrap();
    assert_eq!(j.zone.mode, ZoneMode::Strided);
    assert_eq!(j.zone.range, 128 * K, "zonerange defaults to zonesize");
    // Windows at 0, 1152k, 2304k, 3456k, then past 4m back to 0.
    let want: Vec<u64> = [0, 64, 1152, 1216, 2304, 2368, 3456, 3520, 0, 64]
        .iter()
        .map(|k| k * K)
        .collect();
    assert_eq!(offsets(&j, 10), want);
}

#[test]
fn zonesize_alone_means_strided_and_a_smaller_zonesize_reads_part_of_the_range() {
    // zonesize < zonerange: 64k per window of 256k, windows 256k + 0 apart.
    let j = parse("[s]\nrw=read\nbs=32k\nsize=1m\nzonesize=64k\nzonerange=256k\n").unwrap();
    assert_eq!(j.zone.mode, ZoneMode::Strided);
    let want: Vec<u64> = [0, 32, 256, 288, 512, 544, 768, 800, 0]
        .iter()
        .map(|k| k * K)
        .collect();
    assert_eq!(offsets(&j, 9), want);
    // zonesize > zonerange: the window is revisited until zonesize bytes are done.
    let j = parse("[s]\nrw=read\nbs=32k\nsize=1m\nzonesize=128k\nzonerange=64k\n").unwrap();
    let want: Vec<u64> = [0, 32, 0, 32, 64, 96, 64, 96, 128]
        .iter()
        .map(|k| k * K)
        .collect();
    assert_eq!(offsets(&j, 9), want);
}

#[test]
fn strided_random_offsets_stay_in_the_window() {
    let j = parse("[s]\nrw=randread\nbs=4k\nsize=8m\nzonemode=strided\nzonesize=64k\nzonerange=1m\nzoneskip=1m\n")
        .unwrap();
    let offs = offsets(&j, 64);
    for (i, o) in offs.iter().enumerate() {
        // 16 I/Os per window; windows 2m apart.
        let w = (i as u64 / 16) * 2048 * K % (8192 * K);
        assert!((w..w + 1024 * K).contains(o), "I/O {i} at {o}, window {w}");
        assert_eq!(o % (4 * K), 0);
    }
}

#[test]
fn zbd_options_and_sizes_in_zones() {
    let j = parse(
        "[g]\nrw=randwrite\nzonemode=zbd\nzonesize=256M\noffset=524z\nsize=8z\nmax_open_zones=32\n\
         job_max_open_zones=4\nzone_reset_threshold=0.7\nzone_reset_frequency=0.125\nread_beyond_wp=1\n",
    )
    .unwrap();
    assert!(j.zone.zbd());
    assert_eq!(j.offset, 524 * (256 << 20));
    assert_eq!(j.size, 8 * (256 << 20));
    assert_eq!(j.zone.max_open, Some(32));
    assert_eq!(j.zone.job_max_open, 4);
    assert_eq!(j.zone.reset_threshold, 0.7);
    assert_eq!(j.zone.reset_frequency, 0.125);
    assert!(j.zone.read_beyond_wp);
    let none = parse("[n]\nrw=read\n").unwrap();
    assert_eq!(none.zone.mode, ZoneMode::None);
}

#[test]
fn bad_zone_options_are_refused_with_the_fix() {
    for (text, want) in [
        (
            "[a]\nzonemode=none\nzonesize=1m\n",
            "zonemode=none and a zonesize",
        ),
        ("[a]\nzonemode=strided\n", "without zonesize"),
        ("[a]\nzonemode=zoned\n", "none, strided or zbd"),
        ("[a]\nsize=8z\n", "no zone size"),
        (
            "[a]\nzonemode=zbd\nzonesize=1m\nzoneskip=1m\n",
            "remove zoneskip",
        ),
        ("[a]\nzonemode=zbd\nzone_reset_threshold=2\n", "from 0 to 1"),
        (
            "[a]\nzonemode=zbd\nzonesize=1m\nzonecapacity=2m\n",
            "at most its size",
        ),
    ] {
        let e = parse(text).unwrap_err();
        assert!(e.contains(want), "{text:?}: {e}");
    }
}
