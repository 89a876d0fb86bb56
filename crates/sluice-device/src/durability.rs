//! What the simulated device keeps when the power goes: its contents and the
//! durability contract of NVMe's volatile write cache, FLUSH and FUA.
//!
//! The timing of the write buffer lives in [`crate::NvmeSsd`]; this module keeps the
//! *data* (the host hands it the bytes of each completed write) and decides, at a
//! crash, which writes survive. The contract is the one a file system or a database
//! may rely on, and nothing more:
//!
//! - a write completed with **FUA** is durable when it completes;
//! - a **FLUSH** makes durable every write that completed before the flush was
//!   submitted ([`Contents::flush_start`] takes that mark, [`Contents::flush_done`] applies
//!   it);
//! - a device with **no volatile cache** (no write buffer, or one with power-loss
//!   protection: `write_buffer.volatile = false`) makes every write durable when it
//!   completes;
//! - a volatile cache holds at most its capacity: when the acknowledged, unflushed
//!   bytes exceed it, the oldest are taken as destaged (durable), which also bounds
//!   this model's memory;
//! - every other write — acknowledged and unflushed, or still in flight at the crash —
//!   **survives or is lost, chosen by the seed**, optionally **torn** at sector
//!   (512 B) granularity (each sector of a torn write survives on its own);
//! - an **atomic** write (`RWF_ATOMIC`, NVMe's atomic write unit AWUPF: the host
//!   checked it fits the device's `atomic_write_bytes`) is never torn: it survives
//!   whole or is lost whole, whatever `CrashSpec::torn` says.
//!
//! Writes are replayed onto the durable image in completion order, so a later write
//! that survives lands on top of an earlier one whatever happened to the earlier one.
//! The model is deterministic: the same calls and seed give the same image.

use std::collections::{BTreeMap, VecDeque};

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::profile::DeviceProfile;

/// The unit a torn write is cut into (a logical block).
pub const SECTOR: u64 = 512;
/// The unit the contents are kept in.
pub const PAGE: u64 = 4096;

/// Sparse contents: 4 KiB pages by address (a page never written reads as zeros).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pages(BTreeMap<u64, Box<[u8]>>);

impl Pages {
    /// Read `out.len()` bytes at `addr`.
    pub fn read(&self, addr: u64, out: &mut [u8]) {
        let mut done = 0usize;
        while done < out.len() {
            let a = addr + done as u64;
            let page = a / PAGE * PAGE;
            let off = (a - page) as usize;
            let n = (PAGE as usize - off).min(out.len() - done);
            match self.0.get(&page) {
                Some(p) => out[done..done + n].copy_from_slice(&p[off..off + n]),
                None => out[done..done + n].fill(0),
            }
            done += n;
        }
    }

    /// Write `data` at `addr`.
    pub fn write(&mut self, addr: u64, data: &[u8]) {
        let mut done = 0usize;
        while done < data.len() {
            let a = addr + done as u64;
            let page = a / PAGE * PAGE;
            let off = (a - page) as usize;
            let n = (PAGE as usize - off).min(data.len() - done);
            let p = self
                .0
                .entry(page)
                .or_insert_with(|| vec![0u8; PAGE as usize].into_boxed_slice());
            p[off..off + n].copy_from_slice(&data[done..done + n]);
            done += n;
        }
    }

    /// Pages held (memory: 4 KiB each).
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether nothing was ever written.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A completed write not yet known to be durable.
#[derive(Clone, Debug)]
struct Pending {
    /// Completion order.
    seq: u64,
    addr: u64,
    data: Box<[u8]>,
    /// Durable already (FUA, or destaged), but behind an older write that is not, so
    /// not yet folded into the durable image.
    durable: bool,
    /// An atomic write: all or nothing at a crash.
    atomic: bool,
}

/// The mark a FLUSH takes when it is submitted: writes completed before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlushTicket(u64);

/// How a crash treats the writes that are not durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CrashSpec {
    /// The seed of the survive / lose / tear draws.
    pub seed: u64,
    /// Whether a write may be torn at sector granularity (else it survives or is lost
    /// whole).
    pub torn: bool,
}

/// What a crash did to the writes that were not durable.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CrashReport {
    /// Writes that were durable only by the seed's choice: survived whole.
    pub survived: u64,
    /// Lost whole.
    pub lost: u64,
    /// Torn: some sectors survived.
    pub torn: u64,
    /// Of those, writes that were still in flight (not acknowledged).
    pub in_flight: u64,
}

/// Counters of the durability model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ContentsStats {
    /// Completed writes.
    pub writes: u64,
    /// Of those, with FUA.
    pub fua_writes: u64,
    /// Completed flushes.
    pub flushes: u64,
    /// Writes taken as destaged because the volatile cache overflowed.
    pub destaged: u64,
    /// Crashes.
    pub crashes: u64,
}

/// The device's contents with the durability contract of its write cache (see the
/// module docs).
#[derive(Clone, Debug)]
pub struct Contents {
    /// What a read returns: every completed write applied in completion order.
    current: Pages,
    /// What survives a crash for certain.
    durable: Pages,
    /// Completed writes not folded into `durable`, oldest first.
    pending: VecDeque<Pending>,
    /// Bytes of `pending` that are not durable.
    volatile_bytes: u64,
    /// Capacity of the volatile cache (`None`: the device has none).
    cache: Option<u64>,
    next_seq: u64,
    stats: ContentsStats,
}

impl Contents {
    /// Contents of a device with a volatile write cache of `cache_bytes` (`None`: no
    /// volatile cache; every completed write is durable).
    pub fn new(cache_bytes: Option<u64>) -> Contents {
        Contents {
            current: Pages::default(),
            durable: Pages::default(),
            pending: VecDeque::new(),
            volatile_bytes: 0,
            cache: cache_bytes.map(|c| c.max(PAGE)),
            next_seq: 0,
            stats: ContentsStats::default(),
        }
    }

    /// Contents of a device built from `profile`: volatile when it has a write buffer
    /// marked `volatile` (the default for a write buffer).
    pub fn for_profile(profile: &DeviceProfile) -> Contents {
        let cache = profile
            .write_buffer
            .as_ref()
            .filter(|w| w.volatile)
            .map(|w| w.capacity_bytes);
        Contents::new(cache)
    }

    /// Whether the device has a volatile cache.
    pub fn is_volatile(&self) -> bool {
        self.cache.is_some()
    }

    /// Read `out.len()` bytes at `addr` as the host sees them now.
    pub fn read(&self, addr: u64, out: &mut [u8]) {
        self.current.read(addr, out);
    }

    /// Read what would survive for certain (the durable image).
    pub fn read_durable(&self, addr: u64, out: &mut [u8]) {
        self.durable.read(addr, out);
    }

    /// A write of `data` at `addr` completed (with `fua`: durable now).
    pub fn write_done(&mut self, addr: u64, data: &[u8], fua: bool) {
        self.write_done_as(addr, data, fua, false);
    }

    /// A write completed, `atomic` when it was an atomic write (never torn by a
    /// crash: see the module text).
    pub fn write_done_as(&mut self, addr: u64, data: &[u8], fua: bool, atomic: bool) {
        self.current.write(addr, data);
        self.stats.writes += 1;
        self.stats.fua_writes += fua as u64;
        if self.cache.is_none() || (fua && self.pending.is_empty()) {
            self.durable.write(addr, data);
            return;
        }
        self.next_seq += 1;
        if !fua {
            self.volatile_bytes += data.len() as u64;
        }
        self.pending.push_back(Pending {
            seq: self.next_seq,
            addr,
            data: data.into(),
            durable: fua,
            atomic,
        });
        // The cache holds at most its capacity: the oldest unflushed writes have been
        // destaged to make room.
        let cap = self.cache.unwrap_or(0);
        if self.volatile_bytes > cap {
            for p in self.pending.iter_mut() {
                if self.volatile_bytes <= cap {
                    break;
                }
                if !p.durable {
                    p.durable = true;
                    self.volatile_bytes -= p.data.len() as u64;
                    self.stats.destaged += 1;
                }
            }
        }
        self.fold();
    }

    /// A FLUSH is submitted: it covers the writes completed so far.
    pub fn flush_start(&self) -> FlushTicket {
        FlushTicket(self.next_seq)
    }

    /// The FLUSH of `ticket` completed: the writes it covers are durable.
    pub fn flush_done(&mut self, ticket: FlushTicket) {
        self.stats.flushes += 1;
        for p in self.pending.iter_mut() {
            if p.seq > ticket.0 {
                break;
            }
            if !p.durable {
                p.durable = true;
                self.volatile_bytes -= p.data.len() as u64;
            }
        }
        self.fold();
    }

    /// Fold the durable prefix of `pending` into the durable image.
    fn fold(&mut self) {
        while let Some(p) = self.pending.front() {
            if !p.durable {
                break;
            }
            let p = self.pending.pop_front().expect("front");
            self.durable.write(p.addr, &p.data);
        }
    }

    /// Bytes acknowledged and not durable (what a crash may lose).
    pub fn volatile_bytes(&self) -> u64 {
        self.volatile_bytes
    }

    /// Pages held (both images; memory ≈ 4 KiB each) plus pending writes' bytes.
    pub fn memory_bytes(&self) -> u64 {
        (self.current.len() + self.durable.len()) as u64 * PAGE
            + self
                .pending
                .iter()
                .map(|p| p.data.len() as u64)
                .sum::<u64>()
    }

    /// The model's counters.
    pub fn stats(&self) -> ContentsStats {
        self.stats
    }

    /// The power goes. Writes that are not durable — the acknowledged ones held in
    /// the volatile cache and `in_flight` (address, data, atomic) writes that had not
    /// completed — survive, are lost or (with `spec.torn`, unless atomic) are torn,
    /// each by a draw from `spec.seed`; everything is replayed in order onto the
    /// durable image, which becomes what the device reads from now on.
    pub fn crash<'a>(
        &mut self,
        spec: CrashSpec,
        in_flight: impl IntoIterator<Item = (u64, &'a [u8], bool)>,
    ) -> CrashReport {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(spec.seed);
        let mut report = CrashReport::default();
        let mut image = std::mem::take(&mut self.durable);
        let pending = std::mem::take(&mut self.pending);
        let acked = pending
            .iter()
            .map(|p| (p.addr, &p.data[..], p.durable, false, p.atomic));
        let flying = in_flight
            .into_iter()
            .map(|(a, d, atomic)| (a, d, false, true, atomic));
        for (addr, data, durable, in_flight, atomic) in acked.chain(flying) {
            if durable {
                image.write(addr, data);
                continue;
            }
            report.in_flight += in_flight as u64;
            // An atomic write is all or nothing (NVMe AWUPF): no third kind.
            let kinds = if spec.torn && !atomic { 3 } else { 2 };
            match rng.random_range(0..kinds) {
                0 => report.lost += 1,
                1 => {
                    report.survived += 1;
                    image.write(addr, data);
                }
                _ => {
                    report.torn += 1;
                    for (i, sector) in data.chunks(SECTOR as usize).enumerate() {
                        if rng.random_bool(0.5) {
                            image.write(addr + i as u64 * SECTOR, sector);
                        }
                    }
                }
            }
        }
        self.current = image.clone();
        self.durable = image;
        self.volatile_bytes = 0;
        self.stats.crashes += 1;
        report
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(m: &Contents, addr: u64, n: usize) -> Vec<u8> {
        let mut v = vec![0; n];
        m.read(addr, &mut v);
        v
    }

    #[test]
    fn without_a_volatile_cache_every_completed_write_survives() {
        let mut m = Contents::new(None);
        m.write_done(0, &[7; 4096], false);
        let r = m.crash(
            CrashSpec {
                seed: 1,
                torn: true,
            },
            [],
        );
        assert_eq!(r, CrashReport::default());
        assert_eq!(read(&m, 0, 4096), vec![7; 4096]);
    }

    #[test]
    fn flush_covers_writes_completed_before_it_was_submitted() {
        let mut m = Contents::new(Some(1 << 20));
        m.write_done(0, &[1; 512], false);
        let t = m.flush_start();
        m.write_done(4096, &[2; 512], false);
        m.flush_done(t);
        assert_eq!(m.volatile_bytes(), 512);
        let mut durable = vec![0; 512];
        m.read_durable(0, &mut durable);
        assert_eq!(durable, vec![1; 512]);
        m.read_durable(4096, &mut durable);
        assert_eq!(
            durable,
            vec![0; 512],
            "completed after the flush was submitted"
        );
    }

    #[test]
    fn a_fua_write_is_durable_behind_a_volatile_one_and_lands_on_top() {
        // Seeds that lose the older write and keep it: the FUA write is there either way.
        for seed in 0..32 {
            let mut m = Contents::new(Some(1 << 20));
            m.write_done(0, &[1; 1024], false);
            m.write_done(512, &[2; 512], true);
            m.crash(CrashSpec { seed, torn: false }, []);
            let got = read(&m, 0, 1024);
            assert_eq!(&got[512..], &[2; 512], "seed {seed}");
            assert!(
                got[..512] == [1; 512] || got[..512] == [0; 512],
                "seed {seed}"
            );
        }
    }

    #[test]
    fn the_cache_holds_at_most_its_capacity() {
        let mut m = Contents::new(Some(8192));
        for i in 0..100u64 {
            m.write_done(i * 4096, &[i as u8; 4096], false);
        }
        assert!(m.volatile_bytes() <= 8192);
        assert_eq!(m.stats().destaged, 98);
        assert!(m.memory_bytes() <= (100 + 100 + 2) * 4096);
    }

    #[test]
    fn torn_writes_keep_whole_sectors_only_and_the_seed_decides() {
        let run = |seed| {
            let mut m = Contents::new(Some(1 << 20));
            m.write_done(0, &[9; 4096], false);
            let r = m.crash(
                CrashSpec { seed, torn: true },
                [(8192, &[5u8; 4096][..], false)],
            );
            (r, read(&m, 0, 4096), read(&m, 8192, 4096))
        };
        let mut saw_torn = false;
        for seed in 0..64 {
            let (r, a, b) = run(seed);
            assert_eq!(run(seed), (r, a.clone(), b.clone()), "deterministic");
            assert_eq!(r.in_flight, 1);
            for s in a.chunks(512).chain(b.chunks(512)) {
                assert!(s.iter().all(|&x| x == s[0]), "a sector is never split");
            }
            saw_torn |= r.torn > 0;
        }
        assert!(saw_torn);
    }

    /// The same writes as atomic ones are never torn: each survives or is lost whole,
    /// acknowledged or in flight, over seeds that tear the plain ones.
    #[test]
    fn atomic_writes_survive_or_are_lost_whole() {
        let (mut whole, mut lost) = (0, 0);
        for seed in 0..64 {
            let mut m = Contents::new(Some(1 << 20));
            m.write_done_as(0, &[9; 4096], false, true);
            let r = m.crash(
                CrashSpec { seed, torn: true },
                [(8192, &[5u8; 4096][..], true)],
            );
            assert_eq!(r.torn, 0, "seed {seed}");
            for (addr, v) in [(0, 9u8), (8192, 5u8)] {
                let got = read(&m, addr, 4096);
                assert!(
                    got == vec![v; 4096] || got == vec![0; 4096],
                    "seed {seed}: torn"
                );
                if got[0] == v {
                    whole += 1;
                } else {
                    lost += 1;
                }
            }
        }
        assert!(whole > 0 && lost > 0, "the seed chose both ways");
    }
}
