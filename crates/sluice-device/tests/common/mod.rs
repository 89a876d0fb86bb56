//! A small closed-loop driver for the device tests: each stream keeps `qd` commands
//! outstanding on one submission queue and resubmits on completion, with random
//! stripe-aligned offsets from a seeded xorshift.
#![allow(dead_code)]

use sluice_device::{Command, DeviceCompletion, DeviceProfile, NvmeSsd, Op, QueueClass};

/// xorshift64* — deterministic, seeded by the test.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next() >> 32) * n) >> 32
    }
}

/// Offsets are drawn from [0, SPAN) in units of the request length.
pub const SPAN_BYTES: u64 = 64 << 30;

#[derive(Clone, Copy, Debug)]
pub struct Stream {
    pub qid: u16,
    pub qd: u32,
    pub op: Op,
    pub len: u32,
}

#[derive(Debug, Default)]
pub struct RunResult {
    /// Mean complete − submit over the measured completions, ns.
    pub mean_lat_ns: f64,
    /// Measured completions per second over the measurement window.
    pub iops: f64,
    /// Completions measured.
    pub measured: u64,
    /// Time of the last completion processed.
    pub end_ns: u64,
    /// Every completion (when recording was asked for).
    pub log: Vec<DeviceCompletion>,
    /// `stats().fetched_per_class` when the warm-up ended.
    pub fetched_at_warm: [u64; 4],
}

/// Run the closed loop: discard the first `warm` completions, then measure `measure`.
pub fn closed_loop(
    ssd: &mut NvmeSsd,
    streams: &[Stream],
    warm: u64,
    measure: u64,
    seed: u64,
    record: bool,
) -> RunResult {
    let mut rng = Rng::new(seed);
    let mut tag = 0u32;
    let mut now = ssd
        .next_event_ns()
        .unwrap_or(0)
        .max(ssd.stats().area_until_ns);
    let mut new_cmd = |rng: &mut Rng, s: &Stream| {
        tag = tag.wrapping_add(1);
        let slots = SPAN_BYTES / s.len as u64;
        Command {
            tag,
            op: s.op,
            offset: rng.below(slots) * s.len as u64,
            len: s.len,
            fua: false,
            placement: 0,
        }
    };
    // qid -> stream index (streams use distinct qids).
    let mut by_qid = vec![usize::MAX; 65536];
    for (i, s) in streams.iter().enumerate() {
        assert_eq!(by_qid[s.qid as usize], usize::MAX, "one stream per qid");
        by_qid[s.qid as usize] = i;
        for _ in 0..s.qd {
            let c = new_cmd(&mut rng, s);
            ssd.submit(now, s.qid, c).expect("submit");
        }
    }
    let mut out = Vec::with_capacity(1024);
    let mut res = RunResult::default();
    let mut done = 0u64;
    let mut t0 = 0u64;
    let mut lat_sum = 0u128;
    while done < warm + measure {
        now = ssd.next_event_ns().expect("closed loop never drains");
        ssd.advance(now, &mut out);
        for c in out.drain(..) {
            done += 1;
            if done == warm {
                t0 = c.complete_ns;
                res.fetched_at_warm = ssd.stats().fetched_per_class;
            } else if done > warm && done <= warm + measure {
                lat_sum += (c.complete_ns - c.submit_ns) as u128;
                res.measured += 1;
            }
            if record {
                res.log.push(c);
            }
            let s = streams[by_qid[c.qid as usize]];
            let cmd = new_cmd(&mut rng, &s);
            ssd.submit(now, s.qid, cmd).expect("resubmit");
        }
    }
    res.end_ns = now;
    res.mean_lat_ns = lat_sum as f64 / res.measured as f64;
    res.iops = res.measured as f64 * 1e9 / (now - t0) as f64;
    res
}

/// `qd` commands of `op`/`len` spread over `cores` medium-class queues.
pub fn spread(ssd: &NvmeSsd, cores: u16, qd: u32, op: Op, len: u32) -> Vec<Stream> {
    (0..cores)
        .map(|c| Stream {
            qid: ssd.queue_id(c, QueueClass::Medium),
            qd: qd / cores as u32 + u32::from((c as u32) < qd % cores as u32),
            op,
            len,
        })
        .filter(|s| s.qd > 0)
        .collect()
}

/// Run `qd` outstanding commands on a fresh device of `profile`.
pub fn run_qd(
    profile: &DeviceProfile,
    qd: u32,
    op: Op,
    len: u32,
    warm: u64,
    measure: u64,
) -> RunResult {
    let cores = 8;
    let mut ssd = NvmeSsd::new(profile, cores);
    let streams = spread(&ssd, cores, qd, op, len);
    closed_loop(&mut ssd, &streams, warm, measure, 42, false)
}

/// Warm-up that fills a write buffer (if any) several times over.
pub fn write_warm(profile: &DeviceProfile) -> u64 {
    match &profile.write_buffer {
        Some(b) => 4 * b.capacity_bytes / 4096 + 20_000,
        None => 20_000,
    }
}

/// Queue depth that saturates the device: every controller slot busy with a backlog.
pub fn saturating_qd(profile: &DeviceProfile) -> u32 {
    (2 * profile.controller.max_outstanding).max(256)
}

pub fn within(measured: f64, nominal: f64, tol: f64) -> bool {
    ((measured - nominal) / nominal).abs() <= tol
}

/// A QD1 command's time outside the front end on an idle `profile` without service
/// variation: fetch, completion, and its last stripe-sized piece on its unit (the
/// media time and the unit's transfer), which starts when the front end's transfer
/// ends.
pub fn qd1_stages_ns(profile: &DeviceProfile, op: Op) -> f64 {
    let (c, m) = (&profile.controller, &profile.media);
    let media = match op {
        Op::Write => m.write_ns,
        _ => m.read_ns,
    };
    (c.fetch_ns + c.complete_ns) as f64
        + media as f64
        + m.stripe_bytes as f64 * 1e9 / m.unit_bandwidth_bytes as f64
}
