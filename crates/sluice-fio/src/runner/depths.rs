//! A thread's part of fio's depth maps (`iodepth_level`, `iodepth_submit`,
//! `iodepth_complete`; [`sluice_metrics::IoDepths`] says how fio counts them): each
//! I/O issued at the thread's depth with it, each turn's issues as one submission, the
//! completions reaped at one instant as one reaping.

use sluice_core::Nanos;
use sluice_metrics::IoDepths;

#[derive(Debug, Default)]
pub(super) struct ThreadDepths {
    map: IoDepths,
    /// I/Os issued in the current turn.
    turn: u64,
    /// The reaping going on: its instant and the I/Os reaped at it.
    reap: (Nanos, u64),
}

impl ThreadDepths {
    /// An I/O issued with `in_flight` of the thread's I/Os in flight (itself included).
    pub fn issue(&mut self, in_flight: u32) {
        self.map.issued(in_flight, 1);
        self.turn += 1;
    }

    /// The turn ended: its issues were one submission.
    pub fn end_turn(&mut self) {
        if self.turn > 0 {
            self.map.submitted(self.turn);
            self.turn = 0;
        }
    }

    /// An I/O reaped at `at`: with those reaped at the same instant, one reaping.
    pub fn reaped(&mut self, at: Nanos) {
        match &mut self.reap {
            (t, n) if *n > 0 && *t == at => *n += 1,
            r => {
                if r.1 > 0 {
                    self.map.reaped(r.1);
                }
                *r = (at, 1);
            }
        }
    }

    /// The maps so far, the reaping going on counted.
    pub fn total(&self) -> IoDepths {
        let mut m = self.map.clone();
        if self.reap.1 > 0 {
            m.reaped(self.reap.1);
        }
        m
    }
}
