//! Seeded command faults: media errors complete at their normal time with `ok = false`,
//! timeouts hang until the host's timeout, the draw follows the probabilities and the
//! seed, and a device without faults is unchanged.

use crate::common;

use common::{closed_loop, spread};
use sluice_device::{Command, DeviceProfile, FaultConfig, NvmeSsd, Op};

fn ull() -> DeviceProfile {
    DeviceProfile::builtin("ull").unwrap()
}

#[test]
fn media_errors_follow_the_probability_and_keep_their_timing() {
    let mut clean = NvmeSsd::new(&ull(), 4);
    let mut faulty = NvmeSsd::new(&ull(), 4);
    faulty.set_faults(FaultConfig::parse("media=0.1").unwrap(), 7);
    let streams = spread(&clean, 4, 16, Op::Read, 4096);
    let a = closed_loop(&mut clean, &streams, 0, 20_000, 3, true);
    let b = closed_loop(&mut faulty, &streams, 0, 20_000, 3, true);
    // Same command stream, same times: a media error costs the service time.
    assert_eq!(a.log.len(), b.log.len());
    for (x, y) in a.log.iter().zip(&b.log) {
        assert_eq!((x.tag, x.complete_ns), (y.tag, y.complete_ns));
        assert!(x.ok);
    }
    let errors = b.log.iter().filter(|c| !c.ok).count();
    assert!(
        (1_700..2_300).contains(&errors),
        "{errors} media errors in 20000"
    );
    assert_eq!(faulty.stats().media_errors, errors as u64);
    assert_eq!(faulty.stats().timeouts, 0);
}

#[test]
fn a_timed_out_command_completes_failed_at_submit_plus_the_timeout() {
    let mut d = NvmeSsd::new(&ull(), 1);
    d.set_faults(FaultConfig::parse("timeout=1,timeout_us=500").unwrap(), 1);
    let q = d.queue_id(0, sluice_device::QueueClass::Medium);
    for tag in 0..4 {
        let cmd = Command {
            tag,
            op: Op::Write,
            offset: tag as u64 * 4096,
            len: 4096,
            fua: false,
            placement: 0,
        };
        d.submit(1_000 * tag as u64, q, cmd).unwrap();
    }
    assert_eq!(
        d.outstanding(),
        4,
        "hung commands hold their controller slots"
    );
    let mut out = Vec::new();
    while let Some(t) = d.next_event_ns() {
        d.advance(t, &mut out);
    }
    assert_eq!(out.len(), 4);
    for c in &out {
        assert!(!c.ok);
        assert_eq!(c.complete_ns, c.submit_ns + 500_000);
    }
    assert_eq!((d.inflight(), d.outstanding()), (0, 0));
    assert_eq!(d.stats().timeouts, 4);
    assert_eq!(d.stats().bytes_written, 0);
}

#[test]
fn faults_replay_from_their_seed_and_no_faults_change_nothing() {
    let run = |spec: &str, seed: u64| {
        let mut d = NvmeSsd::new(&ull(), 2);
        d.set_faults(FaultConfig::parse(spec).unwrap(), seed);
        let streams = spread(&d, 2, 8, Op::Write, 8192);
        closed_loop(&mut d, &streams, 0, 5_000, 11, true).log
    };
    let a = run("media=0.05,timeout=0.01,timeout_ms=1", 1);
    assert_eq!(a, run("media=0.05,timeout=0.01,timeout_ms=1", 1));
    assert_ne!(a, run("media=0.05,timeout=0.01,timeout_ms=1", 2));
    // A seed in the configuration wins over the run's.
    let spec = "media=0.05,timeout=0.01,timeout_ms=1,seed=5";
    assert_eq!(run(spec, 1), run(spec, 2));
    assert!(a.iter().any(|c| !c.ok));
    // A configuration with no fault is the plain device.
    let mut plain = NvmeSsd::new(&ull(), 2);
    let streams = spread(&plain, 2, 8, Op::Write, 8192);
    let p = closed_loop(&mut plain, &streams, 0, 5_000, 11, true).log;
    assert_eq!(p, run("media=0,timeout=0", 1));
}
