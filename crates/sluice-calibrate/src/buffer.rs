//! Measuring the write buffer: bursts of 4 KiB random writes at QD32, of rising size,
//! each after a pause that lets the device destage what it holds.
//!
//! A device with a write cache of `C` bytes acknowledges a burst that fits in `C` at
//! cache speed; a burst much larger than `C` runs most of its writes at media (destage)
//! speed once the cache is full, so the burst's mean latency jumps between the last
//! size that fits and the first that does not. The **knee** is the smallest burst whose
//! mean latency is at least [`KNEE_RATIO`] times the smallest burst's, with every larger
//! burst slow too; the buffer size is the burst before it. No knee (the latency stays
//! within the ratio over the whole range): no cache, a cache larger than the largest
//! burst, or one that destages as fast as the host fills it — the three look the same
//! from outside, and [`BufferProbe::verdict`] says so.

use crate::target::Target;
use crate::{CalibrateError, PointSpec};
use sluice_core::Nanos;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// A burst this much slower (mean latency) than the smallest is past the cache.
pub const KNEE_RATIO: f64 = 2.0;
/// The smallest burst, bytes.
pub const FIRST_BURST_BYTES: u64 = 1 << 20;
/// The largest burst, bytes (at most the target's size).
pub const LAST_BURST_BYTES: u64 = 512 << 20;
/// The queue depth of a burst.
pub const BURST_QD: u32 = 32;
/// A burst longer than this is cut (its figures are still those of what ran).
const BURST_CAP_NS: Nanos = 20_000_000_000;

/// One burst's figures.
#[derive(Clone, Debug, PartialEq)]
pub struct Burst {
    /// Bytes written.
    pub bytes: u64,
    /// IOPS over the burst.
    pub iops: f64,
    /// Mean completion latency, ns.
    pub lat_mean_ns: f64,
    /// p99 completion latency, ns.
    pub lat_p99_ns: f64,
}

/// What the probe found.
#[derive(Clone, Debug, PartialEq)]
pub struct BufferProbe {
    /// The bursts, smallest first.
    pub bursts: Vec<Burst>,
    /// The measured buffer size (the largest burst before the knee), if there is a knee.
    pub size_bytes: Option<u64>,
    /// One sentence: the size and the jump, or why no size could be told.
    pub verdict: String,
}

/// The burst sizes for a target of `target_bytes`: powers of two from
/// [`FIRST_BURST_BYTES`] to [`LAST_BURST_BYTES`], none larger than the target.
pub fn burst_sizes(target_bytes: u64) -> Vec<u64> {
    let last = LAST_BURST_BYTES.min(target_bytes);
    std::iter::successors(Some(FIRST_BURST_BYTES), |&b| Some(b * 2))
        .take_while(|&b| b <= last)
        .collect()
}

/// The knee of `bursts` (see the module doc): (buffer size, verdict).
pub fn analyse(bursts: &[Burst]) -> (Option<u64>, String) {
    let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
    let (Some(first), Some(last)) = (bursts.first(), bursts.last()) else {
        return (None, "no burst ran".into());
    };
    if bursts.len() < 3 {
        return (
            None,
            format!(
                "too few bursts ({}) to find a knee: give a larger --size",
                bursts.len()
            ),
        );
    }
    let base = first.lat_mean_ns.max(1.0);
    let slow = |b: &Burst| b.lat_mean_ns >= KNEE_RATIO * base;
    let knee = (1..bursts.len()).find(|&i| bursts[i..].iter().all(slow));
    match knee {
        Some(i) => {
            let size = bursts[i - 1].bytes;
            (
                Some(size),
                format!(
                    "write buffer ≈ {:.0} MiB: bursts up to {:.0} MiB kept a mean latency within {KNEE_RATIO}× of the {:.0} MiB burst's ({:.1} µs); from {:.0} MiB on it is {:.1}× or more ({:.1} µs)",
                    mib(size),
                    mib(size),
                    mib(first.bytes),
                    base / 1e3,
                    mib(bursts[i].bytes),
                    bursts[i].lat_mean_ns / base,
                    bursts[i].lat_mean_ns / 1e3
                ),
            )
        }
        None => {
            let ratios = bursts.iter().map(|b| b.lat_mean_ns / base);
            let lo = ratios.clone().fold(f64::INFINITY, f64::min);
            let hi = ratios.fold(0.0f64, f64::max);
            (
                None,
                format!(
                    "no write-buffer knee from {:.0} to {:.0} MiB: the bursts' mean latency ranged from {lo:.2}× to {hi:.2}× of the smallest burst's ({:.1} µs) with no size beyond which every burst stays {KNEE_RATIO}× slower — no cache, a cache larger than {:.0} MiB, or one that destages as fast as it fills",
                    mib(first.bytes),
                    mib(last.bytes),
                    base / 1e3,
                    mib(last.bytes)
                ),
            )
        }
    }
}

/// Run the bursts on `target` (writes: the engine's safety checks were passed when the
/// target was opened), each after `pause_ns` (the device destages its cache
/// meanwhile; `Plan::burst_pause_ns`), and find the knee. `progress` is called before
/// each burst.
pub fn probe(
    target: &Target,
    pause_ns: Nanos,
    seed: u64,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(u64),
) -> Result<BufferProbe, CalibrateError> {
    let spec = PointSpec {
        read_pct: 0,
        bs: 4096,
        qd: BURST_QD,
    };
    let mut bursts = Vec::new();
    for (i, bytes) in burst_sizes(target.size_bytes()).into_iter().enumerate() {
        progress(bytes);
        std::thread::sleep(Duration::from_nanos(pause_ns));
        let mut job = target.job(&spec, BURST_CAP_NS, 0, seed.wrapping_add(i as u64))?;
        job.time_based = false;
        job.io_size = Some(bytes);
        let r = target.run_once(job, stop)?;
        let w = &r.jobs[0].write;
        bursts.push(Burst {
            bytes,
            iops: w.iops,
            lat_mean_ns: w.lat_ns.mean,
            lat_p99_ns: w.lat_ns.percentile.get(99.0).unwrap_or(0) as f64,
        });
    }
    let (size_bytes, verdict) = analyse(&bursts);
    Ok(BufferProbe {
        bursts,
        size_bytes,
        verdict,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bursts(lat_us: &[f64]) -> Vec<Burst> {
        lat_us
            .iter()
            .enumerate()
            .map(|(i, &l)| Burst {
                bytes: FIRST_BURST_BYTES << i,
                iops: 32.0 / l * 1e6,
                lat_mean_ns: l * 1e3,
                lat_p99_ns: 2.0 * l * 1e3,
            })
            .collect()
    }

    #[test]
    fn a_cache_shows_as_a_lasting_jump() {
        // 1..8 MiB fit (20 µs), 16 MiB and beyond run at media speed.
        let (size, v) = analyse(&bursts(&[20.0, 21.0, 22.0, 25.0, 60.0, 150.0, 180.0]));
        assert_eq!(size, Some(8 << 20), "{v}");
        assert!(v.contains("8 MiB") && v.contains("16 MiB"), "{v}");
        // A single slow burst that does not last is noise, not the knee.
        let (size, _) = analyse(&bursts(&[20.0, 45.0, 22.0, 25.0, 60.0, 150.0]));
        assert_eq!(size, Some(8 << 20));
    }

    #[test]
    fn no_knee_is_said_with_the_range() {
        let (size, v) = analyse(&bursts(&[340.0, 400.0, 470.0, 430.0, 473.0]));
        assert_eq!(size, None);
        assert!(
            v.contains("no write-buffer knee") && v.contains("1.00× to 1.39×"),
            "{v}"
        );
        // One slow burst among fast ones is not a knee either.
        let (size, v) = analyse(&bursts(&[380.0, 440.0, 790.0, 360.0, 370.0]));
        assert_eq!(size, None, "{v}");
        assert!(v.contains("0.95× to 2.08×"), "{v}");
        assert_eq!(analyse(&bursts(&[20.0])).0, None);
        assert_eq!(analyse(&[]).0, None);
    }

    #[test]
    fn sizes_stop_at_the_target() {
        assert_eq!(burst_sizes(64 << 20).len(), 7);
        assert_eq!(*burst_sizes(1 << 30).last().unwrap(), LAST_BURST_BYTES);
        assert!(burst_sizes(1 << 19).is_empty());
    }
}
