//! The live view (`sluice mount --stats SECS`): every SECS seconds one line per class
//! that did I/O in the interval — requests per second, MiB/s, p50 and p99 of the time
//! a data request spent in the daemon (queued at its FUSE handler to replied) — to
//! stderr, in the spirit of iotop; the last, partial interval at unmount. Off, it
//! reads no clock.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use sluice_core::IoClass;

const CLASSES: [&str; 3] = ["critical", "normal", "idle"];

#[derive(Default, Clone)]
struct Interval {
    ops: u64,
    bytes: u64,
    lat_ns: Vec<u64>,
}

#[derive(Default)]
pub struct Stats {
    /// The interval, or `None` when off.
    every: Option<Duration>,
    st: Mutex<(Option<Instant>, [Interval; 3])>,
}

fn class_ix(c: IoClass) -> usize {
    match c {
        IoClass::Critical => 0,
        IoClass::Normal => 1,
        _ => 2,
    }
}

impl Stats {
    pub fn every(every: Option<Duration>) -> Stats {
        Stats {
            every,
            st: Mutex::default(),
        }
    }
    pub fn on(&self) -> bool {
        self.every.is_some()
    }
    /// A request of `class` moving `bytes`, `lat` from its queueing to its reply.
    pub fn record(&self, class: IoClass, bytes: u64, lat: Duration) {
        if !self.on() {
            return;
        }
        let mut g = self.st.lock().unwrap_or_else(|e| e.into_inner());
        let i = &mut g.1[class_ix(class)];
        i.ops += 1;
        i.bytes += bytes;
        i.lat_ns.push(lat.as_nanos() as u64);
    }
    /// The lines of the interval ended now if it is due (or `last`: whatever is
    /// there), and a new interval begun.
    pub fn lines(&self, last: bool) -> Vec<String> {
        let Some(every) = self.every else {
            return Vec::new();
        };
        let now = Instant::now();
        let mut g = self.st.lock().unwrap_or_else(|e| e.into_inner());
        let start = *g.0.get_or_insert(now);
        let secs = now.duration_since(start);
        if !last && secs < every {
            return Vec::new();
        }
        g.0 = Some(now);
        let ivs = std::mem::take(&mut g.1);
        drop(g);
        let secs = secs.as_secs_f64().max(1e-3);
        let mut out = Vec::new();
        for (name, mut iv) in CLASSES.iter().zip(ivs) {
            if iv.ops == 0 {
                continue;
            }
            iv.lat_ns.sort_unstable();
            let p = |q: f64| iv.lat_ns[((iv.lat_ns.len() - 1) as f64 * q) as usize] as f64 / 1e3;
            out.push(format!(
                "sluice stats: {name:<8} {:>8.0} IOPS {:>8.1} MiB/s  p50 {:>8.1} us  p99 {:>8.1} us  ({secs:.1} s)",
                iv.ops as f64 / secs,
                iv.bytes as f64 / secs / (1 << 20) as f64,
                p(0.5),
                p(0.99),
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interval_prints_each_busy_class_once() {
        let s = Stats::every(Some(Duration::from_secs(3600)));
        assert!(s.lines(false).is_empty(), "not due");
        for i in 1..=100u64 {
            s.record(IoClass::Idle, 4096, Duration::from_micros(i));
        }
        let l = s.lines(true);
        assert_eq!(l.len(), 1, "{l:?}");
        assert!(
            l[0].contains("idle") && l[0].contains("p99     99.0 us"),
            "{l:?}"
        );
        assert!(s.lines(true).is_empty(), "the interval was taken");
        assert!(Stats::every(None).lines(true).is_empty());
    }
}
