//! The runner's side of `zonemode=zbd` (see [`crate::zbd`]): each I/O of a zbd thread
//! passes [`Runner::zbd_gate`] before it is issued; a thread resets a zone with a
//! request of its own (a trim of the whole zone, which a zoned device takes as a
//! zone reset) that is not one of the job's I/Os: no sample, as fio's reset ioctl.

use super::*;
use crate::zbd::{Adjust, ZoneGeometry};

/// An I/O of a zbd thread held back: the I/O as its stream gave it, whether it
/// follows a reset the thread made for it, and the reset decided for it and not yet
/// sent (zone, whether the I/O is itself that reset: a trim).
#[derive(Clone, Copy, Debug)]
pub(super) struct Held {
    pub(super) io: IoSpec,
    after_reset: bool,
    reset: Option<(u32, bool)>,
}

impl Held {
    pub(super) fn new(io: IoSpec) -> Held {
        Held {
            io,
            after_reset: false,
            reset: None,
        }
    }
}

impl Runner {
    /// Whether some job runs in `zonemode=zbd` (the world must give it a zoned device
    /// with [`Runner::set_zoned`]).
    pub fn wants_zones(specs: &[JobSpec]) -> bool {
        specs.iter().any(|s| s.zone.zbd())
    }

    /// The device is zoned as `geo` says: the `zonemode=zbd` jobs of `specs` (the
    /// specs the runner was made with) write at the zones' write pointers. An error
    /// names the job and how to fix it: a `zonesize` that is not the device's, a
    /// writer without `direct=1` (fio: "direct I/O is mandatory for writing to ZBD
    /// drives"), a range without a whole zone, `max_open_zones` above the device's.
    pub fn set_zoned(&mut self, geo: ZoneGeometry, specs: &[JobSpec]) -> Result<(), String> {
        if !Runner::wants_zones(specs) {
            return Ok(());
        }
        if geo.zone_size > u32::MAX as u64 {
            return Err(format!(
                "the device's zones are {} bytes; sluice resets a zone with one request of at most 4 GiB",
                geo.zone_size
            ));
        }
        for s in specs.iter().filter(|s| s.zone.zbd()) {
            if s.zone.size != 0 && s.zone.size != geo.zone_size {
                return Err(format!(
                    "job '{}': zonesize {} does not match the device's zone size {}; give zonesize={} or leave it out",
                    s.name, s.zone.size, geo.zone_size, geo.zone_size
                ));
            }
            if s.buffered && (s.rw.writes() || s.rw.trims()) {
                return Err(format!(
                    "job '{}': direct I/O is mandatory for writing to a zoned device (as in fio); add direct=1",
                    s.name
                ));
            }
        }
        let zbd = Zbd::new(geo, specs)?;
        for th in &mut self.threads {
            let s = &specs[th.job as usize];
            if s.zone.zbd() {
                let start = th.base + s.thread_offset(th.index);
                th.zr = Some(zbd.range(s, start, s.size)?);
            }
        }
        self.zbd = Some(zbd);
        Ok(())
    }

    /// Zone resets the runner sent (full zones, `zone_reset_threshold`), not counting
    /// the jobs' trims.
    pub fn zone_resets(&self) -> u64 {
        self.zbd.as_ref().map_or(0, |z| z.resets)
    }

    /// Thread `t`'s I/O `io` (offset in its space) as the zones allow: `Some` to issue
    /// (moved), `None` when it waits (held for a reset, sent here), or the thread ended.
    pub(super) fn zbd_gate(
        &mut self,
        t: u32,
        held: Held,
        now: Nanos,
        port: &mut impl Port,
    ) -> Option<IoSpec> {
        let Held {
            io,
            after_reset,
            reset,
        } = held;
        let th = &mut self.threads[t as usize];
        let j = th.job;
        let r = th.zr.expect("a zbd thread");
        let base = th.base;
        let zone_spec = self.jobs[j as usize].zone;
        let zbd = self
            .zbd
            .as_mut()
            .expect("zones set with the threads' ranges");
        let abs = IoSpec {
            offset: base + io.offset,
            ..io
        };
        // A reset decided earlier stands (its threshold count is spent), unless
        // another thread is resetting that zone meanwhile.
        let adjusted = match reset {
            Some((zone, trim)) if !zbd.resetting(zone) => Adjust::Reset { zone, trim },
            _ => zbd.adjust(j, &r, &zone_spec, abs, after_reset),
        };
        match adjusted {
            Adjust::Issue(a) => {
                let rel = IoSpec {
                    offset: a.offset - base,
                    ..a
                };
                if rel != io {
                    th.source.moved(io, rel);
                }
                Some(rel)
            }
            Adjust::Eof(err) => {
                if err.is_some() {
                    port.record_error(j as usize, th.index, io.op, sluice_metrics::errors::EINVAL);
                }
                th.source.end_now();
                th.state = State::Stopping;
                self.maybe_thread_done(t, now, port);
                None
            }
            Adjust::Reset { zone, trim } => {
                // fio's io_u_quiesce before a reset: the zone's writes in flight (any
                // thread's) and, for its own reset, the thread's I/O complete first.
                let busy = zbd.inflight(zone) > 0;
                if busy || (!trim && th.outstanding > 0) {
                    if busy {
                        zbd.wait(zone, t);
                    }
                    th.zstash = Some(Held {
                        io,
                        after_reset,
                        reset: Some((zone, trim)),
                    });
                    return None;
                }
                let zs = zbd.zone_size();
                let start = zone as u64 * zs;
                let reset = IoSpec {
                    op: Op::Trim,
                    offset: start - base,
                    len: zs as u32,
                };
                zbd.reset(zone, !trim);
                if trim {
                    // The job's trim is the zone's reset.
                    th.source.moved(io, reset);
                    return Some(reset);
                }
                th.zreset = Some(zone);
                th.zstash = Some(Held {
                    io,
                    after_reset: true,
                    reset: None,
                });
                th.outstanding += 1;
                let rt = &self.jobs[j as usize];
                let req = NewRequest {
                    flow: rt.flow,
                    op: Op::Trim,
                    offset: start,
                    len: zs as u32,
                    class: rt.class,
                    hwq: th.hwq,
                    fua: false,
                    placement: 0,
                    atomic: false,
                };
                port.submit(Submit {
                    thread: t,
                    job: j,
                    req,
                    io: reset,
                    check: false,
                    verify: None,
                });
                None
            }
        }
    }

    /// A zbd thread's request completed: its zone reset (returns true: nothing more
    /// to do with it here), or a write whose zone may leave the write set and whose
    /// waiters may go on.
    pub(super) fn zone_done(
        &mut self,
        t: u32,
        f: &Finished,
        now: Nanos,
        port: &mut impl Port,
    ) -> bool {
        let th = &mut self.threads[t as usize];
        let zbd = self
            .zbd
            .as_mut()
            .expect("zones set with the threads' ranges");
        if let (Some(z), Op::Trim) = (th.zreset, f.op) {
            th.zreset = None;
            th.outstanding -= 1;
            zbd.reset_done(z);
            if th.state == State::Running {
                self.try_issue(t, now, port);
            } else {
                self.maybe_thread_done(t, now, port);
            }
            return true;
        }
        if f.op == Op::Write {
            let min_bs = th.zr.expect("a zbd thread").min_bs[1];
            for w in zbd.write_done(f.offset, f.len, min_bs) {
                if w != t && self.threads[w as usize].state == State::Running {
                    self.wake_after(w, now, port);
                }
            }
        }
        false
    }
}
