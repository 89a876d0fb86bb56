//! The live view (`sluice mount --stats SECS`): every SECS seconds one line per flow
//! and class that did I/O in the interval — requests per second, MiB/s, p50 and p99 of
//! the time a data request spent in the daemon (queued at its FUSE handler to replied),
//! the flow (a cgroup, a process `comm.pid`, or a rule's flow) — to stderr, in the
//! spirit of iotop: critical first, then normal, then idle, the busiest flows first
//! within a class, at most [`MAX_LINES`] lines (a last line counts the others); the
//! last, partial interval at unmount. Off, it reads no clock.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use sluice_core::IoClass;

use crate::class::Who;

/// Lines per interval; the quieter flows beyond are counted in one more line.
pub const MAX_LINES: usize = 24;

const CLASSES: [&str; 3] = ["critical", "normal", "idle"];

#[derive(Default, Clone)]
struct Interval {
    ops: u64,
    bytes: u64,
    lat_ns: Vec<u64>,
}

/// An interval's figures by flow, then class (critical, normal, idle).
type ByFlow = BTreeMap<String, [Interval; 3]>;

#[derive(Default)]
pub struct Stats {
    /// The interval, or `None` when off.
    every: Option<Duration>,
    /// The interval's start, and its figures by flow and class.
    st: Mutex<(Option<Instant>, ByFlow)>,
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
    /// A request of `who` moving `bytes`, `lat` from its queueing to its reply.
    pub fn record(&self, who: &Who, bytes: u64, lat: Duration) {
        if !self.on() {
            return;
        }
        let mut g = self.st.lock().unwrap_or_else(|e| e.into_inner());
        let flows = &mut g.1;
        if !flows.contains_key(who.flow.as_str()) {
            flows.insert(who.flow.clone(), Default::default());
        }
        let i = &mut flows.get_mut(who.flow.as_str()).expect("inserted")[class_ix(who.class)];
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
        let flows = std::mem::take(&mut g.1);
        drop(g);
        let secs = secs.as_secs_f64().max(1e-3);
        let mut busy: Vec<(usize, String, Interval)> = flows
            .into_iter()
            .flat_map(|(flow, ivs)| {
                ivs.into_iter()
                    .enumerate()
                    .filter(|(_, iv)| iv.ops > 0)
                    .map(move |(c, iv)| (c, flow.clone(), iv))
            })
            .collect();
        busy.sort_by(|a, b| a.0.cmp(&b.0).then(b.2.bytes.cmp(&a.2.bytes)));
        let more = busy.len().saturating_sub(MAX_LINES);
        busy.truncate(MAX_LINES);
        let mut out = Vec::new();
        for (c, flow, mut iv) in busy {
            let name = CLASSES[c];
            iv.lat_ns.sort_unstable();
            let p = |q: f64| iv.lat_ns[((iv.lat_ns.len() - 1) as f64 * q) as usize] as f64 / 1e3;
            out.push(format!(
                "sluice stats: {name:<8} {:>8.0} IOPS {:>8.1} MiB/s  p50 {:>8.1} us  p99 {:>8.1} us  ({secs:.1} s)  {flow}",
                iv.ops as f64 / secs,
                iv.bytes as f64 / secs / (1 << 20) as f64,
                p(0.5),
                p(0.99),
            ));
        }
        if more > 0 {
            out.push(format!(
                "sluice stats: … and {more} quieter flow(s) ({secs:.1} s)"
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn who(class: IoClass, flow: &str) -> Who {
        Who {
            class,
            weight: 4,
            flow: flow.into(),
        }
    }

    #[test]
    fn an_interval_prints_each_busy_flow_and_class_once() {
        let s = Stats::every(Some(Duration::from_secs(3600)));
        assert!(s.lines(false).is_empty(), "not due");
        for i in 1..=100u64 {
            s.record(&who(IoClass::Idle, "cp.7"), 4096, Duration::from_micros(i));
        }
        s.record(&who(IoClass::Normal, "cp.7"), 512, Duration::from_micros(3));
        s.record(&who(IoClass::Normal, "db"), 8192, Duration::from_micros(3));
        s.record(
            &who(IoClass::Critical, "db"),
            4096,
            Duration::from_micros(3),
        );
        let l = s.lines(true);
        assert_eq!(l.len(), 4, "{l:?}");
        // Critical first; within a class the busiest flow first.
        assert!(l[0].contains("critical") && l[0].ends_with("  db"), "{l:?}");
        assert!(l[1].contains("normal") && l[1].ends_with("  db"), "{l:?}");
        assert!(l[2].contains("normal") && l[2].ends_with("  cp.7"), "{l:?}");
        assert!(
            l[3].contains("idle") && l[3].contains("p99     99.0 us") && l[3].ends_with("cp.7"),
            "{l:?}"
        );
        assert!(s.lines(true).is_empty(), "the interval was taken");
        assert!(Stats::every(None).lines(true).is_empty());
    }

    #[test]
    fn the_quieter_flows_beyond_the_limit_are_counted() {
        let s = Stats::every(Some(Duration::from_secs(3600)));
        for f in 0..MAX_LINES + 3 {
            let w = who(IoClass::Normal, &format!("f{f}"));
            s.record(&w, 4096 * (f as u64 + 1), Duration::from_micros(1));
        }
        let l = s.lines(true);
        assert_eq!(l.len(), MAX_LINES + 1, "{l:?}");
        assert!(
            l[0].ends_with(&format!("f{}", MAX_LINES + 2)),
            "busiest first: {l:?}"
        );
        assert!(l[MAX_LINES].contains("3 quieter flow(s)"), "{l:?}");
    }
}
