//! Where a data request's time goes inside the daemon (`SLUICE_MOUNT_TRACE=1`): per
//! class, the FUSE handler up to the queue (classification), the wait in its queue
//! until a worker task takes it, the I/O (the stack: block layer, device), the reply.
//! Printed at unmount to stderr as p50 / p99 in µs. Off by default (no clock reads).

use std::sync::Mutex;
use std::time::Instant;

use sluice_core::IoClass;

/// The stages, in order.
pub const STAGES: [&str; 4] = ["handler", "queued", "io", "reply"];

#[derive(Default)]
pub struct Trace {
    on: bool,
    /// Per class (critical, normal, idle), per stage: durations in ns.
    samples: Mutex<[[Vec<u64>; 4]; 3]>,
}

fn class_ix(c: IoClass) -> usize {
    match c {
        IoClass::Critical => 0,
        IoClass::Normal => 1,
        _ => 2,
    }
}

impl Trace {
    pub fn from_env() -> Trace {
        Trace {
            on: std::env::var_os("SLUICE_MOUNT_TRACE").is_some_and(|v| v == "1"),
            samples: Mutex::default(),
        }
    }
    pub fn on(&self) -> bool {
        self.on
    }
    pub fn now(&self) -> Option<Instant> {
        self.on.then(Instant::now)
    }
    /// Record the stages between the instants `ts` (`ts[i]` to `ts[i + 1]`).
    pub fn record(&self, class: IoClass, ts: &[Option<Instant>; 5]) {
        if !self.on {
            return;
        }
        let mut s = self.samples.lock().unwrap_or_else(|e| e.into_inner());
        for i in 0..4 {
            if let (Some(a), Some(b)) = (ts[i], ts[i + 1]) {
                s[class_ix(class)][i].push(b.duration_since(a).as_nanos() as u64);
            }
        }
    }
    pub fn print(&self) {
        if !self.on {
            return;
        }
        let mut s = self.samples.lock().unwrap_or_else(|e| e.into_inner());
        for (ci, name) in ["critical", "normal", "idle"].iter().enumerate() {
            let mut line = String::new();
            for (si, stage) in STAGES.iter().enumerate() {
                let v = &mut s[ci][si];
                if v.is_empty() {
                    continue;
                }
                v.sort_unstable();
                let p = |q: f64| v[((v.len() - 1) as f64 * q) as usize] as f64 / 1000.0;
                line += &format!(" {stage} {:.1}/{:.1}", p(0.5), p(0.99));
            }
            if !line.is_empty() {
                eprintln!("trace {name} (n={}) p50/p99 µs:{line}", s[ci][2].len());
            }
        }
    }
}
