//! fio's `zonemode=zbd` on a zoned device: the job side of the zones, as fio's
//! `zbd.c` keeps it (its in-memory write pointers, advanced when a write is issued;
//! the set of zones being written, `write_zones`, bounded by `max_open_zones` and
//! `job_max_open_zones`; the written bytes against `zone_reset_threshold`).
//!
//! Before a zbd job's I/O is issued, [`Zbd::adjust`] moves it as fio's
//! `zbd_adjust_block` does:
//! * a write goes to a zone the job may write (the zone of its offset if it is in the
//!   write set or may join it; else one of the write set, picked by the offset's
//!   place in the job's range, as fio's `pick_random_zone_idx`), at that zone's write
//!   pointer, cut to the zone's capacity; a full zone, or the chosen zone once the
//!   written share passes `zone_reset_threshold` and every `1 / zone_reset_frequency`
//!   writes after, is reset first (the thread waits for the zone's writes in flight
//!   and its own I/O, as fio's `io_u_quiesce`, then sends the reset and waits for it);
//! * a read goes into written data (unless `read_beyond_wp`): a zone without enough
//!   is swapped for the nearest one with some; none left ends the thread;
//! * a trim is a zone reset (of a non-empty zone for a random trim).
//!
//! Zones leave the write set when their writes completed up to the capacity. All
//! addresses are the device's: zone `z` spans `[z · zone_size, (z + 1) · zone_size)`.

use sluice_core::Op;
use sluice_workload::{IoSpec, ZoneSpec};

/// What the runner needs of a zoned device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZoneGeometry {
    /// Bytes per zone.
    pub zone_size: u64,
    /// Writable bytes per zone.
    pub capacity: u64,
    /// Zones on the device.
    pub zones: u32,
    /// The device's open-zone limit (0: none).
    pub max_open: u32,
}

/// One thread's zones: `[first, end)` (writes start at a zone boundary, as fio rounds
/// a zbd job's offset up and its end down to zones), its range's bytes (fio's
/// `io_size` for the reset threshold) and what `adjust` needs of its job.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ZRange {
    pub first: u32,
    pub end: u32,
    pub io_size: u64,
    pub random: bool,
    /// The job's smallest block size per direction (read, write, trim).
    pub min_bs: [u64; 3],
}

/// What to do with an I/O.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Adjust {
    /// Issue it (moved).
    Issue(IoSpec),
    /// Reset zone `zone` first (`trim`: the I/O itself is that reset).
    Reset { zone: u32, trim: bool },
    /// The thread has nothing more to do (`Some`: fio's error for it).
    Eof(Option<&'static str>),
}

#[derive(Clone, Debug, Default)]
struct ZoneRt {
    /// Bytes written (issued) since the last reset.
    wp: u64,
    /// Bytes of those completed.
    done: u64,
    /// Writes in flight.
    inflight: u32,
    /// The job that put it in the write set.
    open_by: Option<u32>,
    /// A reset of it is on its way (no thread writes it meanwhile).
    resetting: bool,
    /// Threads waiting for its writes in flight to complete.
    waiters: Vec<u32>,
}

/// The zones of a zoned device as a run's zbd jobs see them.
#[derive(Debug)]
pub(crate) struct Zbd {
    geo: ZoneGeometry,
    zones: Vec<ZoneRt>,
    /// fio's `write_zones`, in order of joining.
    write_zones: Vec<u32>,
    /// fio's `max_write_zones` (0: none).
    max_write: u32,
    /// Per job: zones it put in the write set, and its `job_max_open_zones`.
    job_open: Vec<u32>,
    job_max: Vec<u32>,
    /// Bytes written over the zones (fio's `wp_valid_data_bytes`).
    written: u64,
    /// fio's `write_cnt`: writes until the next threshold reset.
    write_cnt: u32,
    /// Resets sent by the runner (not counting trims).
    pub resets: u64,
}

impl Zbd {
    /// The zones of `geo` for `specs` (each job's `max_open_zones` checked against the
    /// device's limit as fio's `zbd_set_max_write_zones`).
    pub(crate) fn new(
        geo: ZoneGeometry,
        specs: &[sluice_workload::JobSpec],
    ) -> Result<Zbd, String> {
        let mut max_write = 0;
        for s in specs.iter().filter(|s| s.zone.zbd()) {
            let m = match (s.zone.max_open, geo.max_open) {
                (Some(u), d) if s.zone.ignore_limits || d == 0 || u <= d => u,
                (Some(u), d) => {
                    return Err(format!(
                        "job '{}': max_open_zones={u} is larger than the device's limit of {d} open zones; lower it, or add ignore_zone_limits=1",
                        s.name
                    ))
                }
                (None, d) => d,
            };
            if m > 4096 {
                return Err(format!(
                    "job '{}': max_open_zones={m} is larger than fio's limit of 4096",
                    s.name
                ));
            }
            // fio keeps one limit per file, set by the jobs that use it; here the
            // device's zones are one file's.
            max_write = m;
        }
        Ok(Zbd {
            geo,
            zones: vec![ZoneRt::default(); geo.zones as usize],
            write_zones: Vec::new(),
            max_write,
            job_open: vec![0; specs.len()],
            job_max: specs.iter().map(|s| s.zone.job_max_open).collect(),
            written: 0,
            write_cnt: 0,
            resets: 0,
        })
    }

    /// The zone size.
    pub(crate) fn zone_size(&self) -> u64 {
        self.geo.zone_size
    }

    fn start(&self, z: u32) -> u64 {
        z as u64 * self.geo.zone_size
    }

    /// Room left in zone `z` (fio's `zbd_zone_remainder`).
    fn remainder(&self, z: u32) -> u64 {
        self.geo.capacity.saturating_sub(self.zones[z as usize].wp)
    }

    /// The thread range of a zbd job thread whose region is `[start, start + size)`.
    pub(crate) fn range(
        &self,
        spec: &sluice_workload::JobSpec,
        start: u64,
        size: u64,
    ) -> Result<ZRange, String> {
        let zs = self.geo.zone_size;
        let writes = spec.rw.writes() || spec.rw.trims();
        // Reads keep the offset's zone; writes start at the next zone boundary.
        let first = if writes {
            start.div_ceil(zs)
        } else {
            start / zs
        };
        let end = (start.saturating_add(size) / zs).min(self.geo.zones as u64);
        if end <= first {
            return Err(format!(
                "job '{}': its range of {size} bytes at offset {start} of the device holds none of the device's {} zones of {zs} bytes whole; zonemode=zbd needs at least one zone (e.g. size=1z; jobs on one device name one filename)",
                spec.name, self.geo.zones
            ));
        }
        let min = |b: &sluice_workload::BlockSize| b.min_len() as u64;
        Ok(ZRange {
            first: first as u32,
            end: end as u32,
            io_size: (end - first) * zs,
            random: spec.rw.is_random(),
            min_bs: [min(&spec.bs.read), min(&spec.bs.write), min(&spec.bs.trim)],
        })
    }

    fn clamp(&self, r: &ZRange, offset: u64) -> u32 {
        ((offset / self.geo.zone_size) as u32).clamp(r.first, r.end - 1)
    }

    /// Move `io` (a device address) for job `job`. `after_reset`: the thread just
    /// reset a zone for this write (no second threshold count).
    pub(crate) fn adjust(
        &mut self,
        job: u32,
        r: &ZRange,
        z: &ZoneSpec,
        io: IoSpec,
        after_reset: bool,
    ) -> Adjust {
        match io.op {
            Op::Read if z.read_beyond_wp => Adjust::Issue(io),
            Op::Read => self.read(r, io),
            Op::Write => self.write(job, r, z, io, after_reset),
            Op::Trim => {
                let mut zone = self.clamp(r, io.offset);
                if r.random && self.zones[zone as usize].wp == 0 {
                    match self.find_data(r, zone, 1) {
                        Some(f) => zone = f,
                        None => return Adjust::Eof(None),
                    }
                }
                Adjust::Reset { zone, trim: true }
            }
            Op::Flush => Adjust::Issue(io),
        }
    }

    /// The zone nearest `from` (after, then before, alternately, as fio's
    /// `zbd_find_zone`) with at least `min` bytes written.
    fn find_data(&self, r: &ZRange, from: u32, min: u64) -> Option<u32> {
        let has = |z: u32| self.zones[z as usize].wp >= min;
        let (mut up, mut down) = (from as i64, from as i64);
        loop {
            let mut any = false;
            if up < r.end as i64 {
                if has(up as u32) {
                    return Some(up as u32);
                }
                up += 1;
                any = true;
            }
            if down >= r.first as i64 {
                if has(down as u32) {
                    return Some(down as u32);
                }
                down -= 1;
                any = true;
            }
            if !any {
                return None;
            }
        }
    }

    fn read(&self, r: &ZRange, mut io: IoSpec) -> Adjust {
        let min_bs = r.min_bs[0];
        let orig = self.clamp(r, io.offset);
        let mut zone = orig;
        let mut range = self.zones[zone as usize].wp;
        if range < min_bs || (!r.random && io.offset + min_bs > self.start(zone) + range) {
            let from = if r.random {
                zone
            } else {
                (zone + 1).min(r.end - 1)
            };
            match self.find_data(r, from, min_bs) {
                Some(f) => zone = f,
                None => return Adjust::Eof(None),
            }
            range = self.zones[zone as usize].wp;
            if !r.random {
                io.offset = self.start(zone);
            }
        }
        let zstart = self.start(zone);
        let len = io.len as u64;
        if range <= len {
            io.offset = zstart;
        } else if r.random {
            let within = io.offset.saturating_sub(self.start(orig));
            io.offset = zstart + within % (range - len) / min_bs * min_bs;
        } else if io.offset < zstart {
            io.offset = zstart;
        }
        let new_len = len.min(zstart + range - io.offset) / min_bs * min_bs;
        if new_len == 0 {
            return Adjust::Eof(None);
        }
        io.len = new_len as u32;
        Adjust::Issue(io)
    }

    /// fio's `zbd_write_zone_get`: whether job `job` may write zone `z` (joining the
    /// write set if it is not in it and the limits allow).
    fn get(&mut self, job: u32, z: u32) -> bool {
        let zr = &self.zones[z as usize];
        if zr.resetting {
            return false;
        }
        if zr.open_by.is_some() {
            return true;
        }
        if self.max_write > 0 && self.write_zones.len() as u32 >= self.max_write {
            return false;
        }
        let jm = self.job_max[job as usize];
        if jm > 0 && self.job_open[job as usize] >= jm {
            return false;
        }
        self.zones[z as usize].open_by = Some(job);
        self.job_open[job as usize] += 1;
        self.write_zones.push(z);
        true
    }

    /// The zone a write of job `job` near `offset` goes to (fio's
    /// `zbd_convert_to_write_zone`).
    fn write_zone(
        &mut self,
        job: u32,
        r: &ZRange,
        z: u32,
        offset: u64,
        min_bs: u64,
    ) -> Option<u32> {
        if self.get(job, z) {
            return Some(z);
        }
        let cands: Vec<u32> = self
            .write_zones
            .iter()
            .copied()
            .filter(|&c| (r.first..r.end).contains(&c) && !self.zones[c as usize].resetting)
            .collect();
        if !cands.is_empty() {
            // fio's pick_random_zone_idx: the offset's place in the range.
            let n = cands.len() as u64;
            let rel = offset.saturating_sub(self.start(r.first));
            let idx = ((rel as u128 * n as u128 / r.io_size.max(1) as u128) as u64).min(n - 1);
            for k in 0..n {
                let c = cands[((idx + k) % n) as usize];
                if self.remainder(c) >= min_bs {
                    return Some(c);
                }
            }
            // Every zone being written is full: the picked one is reset.
            return Some(cands[idx as usize]);
        }
        // No zone of the range is being written: the next that may join.
        let span = r.end - r.first;
        (1..span)
            .map(|k| r.first + (z - r.first + k) % span)
            .find(|&c| self.get(job, c))
    }

    fn write(
        &mut self,
        job: u32,
        r: &ZRange,
        zs: &ZoneSpec,
        mut io: IoSpec,
        after_reset: bool,
    ) -> Adjust {
        let min_bs = r.min_bs[1];
        if io.len as u64 > self.geo.zone_size {
            return Adjust::Eof(Some("I/O buflen exceeds zone size"));
        }
        let mut z = self.clamp(r, io.offset);
        if !r.random && io.offset >= self.start(z) + self.geo.capacity {
            // A sequential write past the zone's capacity goes on in the next zone
            // (fio jumps from the capacity to the zone's end).
            z = if z + 1 < r.end { z + 1 } else { r.first };
        }
        let Some(z) = self.write_zone(job, r, z, io.offset, min_bs) else {
            return Adjust::Eof(None);
        };
        let mut reset = false;
        if zs.reset_frequency > 0.0
            && !after_reset
            && self.written as f64 >= r.io_size as f64 * zs.reset_threshold
        {
            // fio's zbd_dec_and_reset_write_cnt: every 1 / frequency writes.
            if self.write_cnt == 0 {
                self.write_cnt = (1.0 / zs.reset_frequency).min(u32::MAX as f64) as u32;
            }
            self.write_cnt = self.write_cnt.saturating_sub(1);
            reset = self.write_cnt == 0;
        }
        if reset || self.remainder(z) < min_bs {
            return Adjust::Reset {
                zone: z,
                trim: false,
            };
        }
        let zr = &mut self.zones[z as usize];
        io.offset = z as u64 * self.geo.zone_size + zr.wp;
        let len = (io.len as u64).min(self.geo.capacity - zr.wp) / min_bs * min_bs;
        io.len = len as u32;
        zr.wp += len;
        zr.inflight += 1;
        self.written += len;
        Adjust::Issue(io)
    }

    /// Writes of zone `z` in flight.
    pub(crate) fn inflight(&self, z: u32) -> u32 {
        self.zones[z as usize].inflight
    }

    /// Whether a thread's reset of zone `z` is on its way.
    pub(crate) fn resetting(&self, z: u32) -> bool {
        self.zones[z as usize].resetting
    }

    /// Thread `t` waits for zone `z`'s writes in flight.
    pub(crate) fn wait(&mut self, z: u32, t: u32) {
        let w = &mut self.zones[z as usize].waiters;
        if !w.contains(&t) {
            w.push(t);
        }
    }

    /// Zone `z` is reset now (its reset is sent): empty, out of the write set unless
    /// `keep` (a write of the resetting thread follows), closed to others until
    /// [`Zbd::reset_done`] when `keep`.
    pub(crate) fn reset(&mut self, z: u32, keep: bool) {
        let zr = &mut self.zones[z as usize];
        self.written -= zr.wp;
        zr.wp = 0;
        zr.done = 0;
        zr.resetting = keep;
        if !keep {
            self.release(z);
        }
        if keep {
            self.resets += 1;
        }
    }

    /// The runner's reset of zone `z` completed: the zone is open to writes again.
    pub(crate) fn reset_done(&mut self, z: u32) {
        self.zones[z as usize].resetting = false;
    }

    fn release(&mut self, z: u32) {
        if let Some(j) = self.zones[z as usize].open_by.take() {
            self.job_open[j as usize] -= 1;
            self.write_zones.retain(|&c| c != z);
        }
    }

    /// A zbd write at `offset` of `len` bytes completed (`min_bs`: its job's smallest
    /// write): once the zone's writes completed up to where no write fits, it leaves
    /// the write set (fio's `zbd_end_zone_io`). Returns the threads waiting for the
    /// zone's writes, when none is left in flight.
    pub(crate) fn write_done(&mut self, offset: u64, len: u32, min_bs: u64) -> Vec<u32> {
        let z = (offset / self.geo.zone_size) as u32;
        let Some(zr) = self.zones.get_mut(z as usize) else {
            return Vec::new();
        };
        zr.inflight = zr.inflight.saturating_sub(1);
        zr.done += len as u64;
        let full = zr.done >= zr.wp && self.geo.capacity.saturating_sub(zr.wp) < min_bs;
        let waiters = if zr.inflight == 0 {
            std::mem::take(&mut zr.waiters)
        } else {
            Vec::new()
        };
        if full && !zr.resetting {
            self.release(z);
        }
        waiters
    }
}
