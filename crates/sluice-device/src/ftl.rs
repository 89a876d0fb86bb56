//! Flash management (`[flash]`): a page-level mapping table, over-provisioning and
//! greedy garbage collection with copy and erase costs, per die — what makes sustained
//! random writes on a flash SSD fall off the "write cliff" once its spare blocks are
//! used up, and gives a write amplification above 1.
//!
//! # The model (after MQSim, Tavakkol et al., FAST '18, §3: page-level FTL, greedy GC)
//!
//! * **Mapping.** The logical space of `logical_bytes` is cut into mapping units of
//!   `map_bytes` (LPN = `(offset / map_bytes) mod lpns`: offsets beyond the simulated
//!   slice wrap). `fwd[lpn]` is the physical unit (PPN) holding the data,
//!   `rev[ppn]` the LPN a physical unit holds (or none: invalid).
//! * **Physical space.** Each die (a media unit) has `blocks_per_die` erase blocks of
//!   `block_units` mapping units:
//!   `blocks_per_die = ⌈lpns · (1 + over_provisioning) / dies / block_units⌉`.
//!   A die writes into its *active* block, page after page; a full active block is
//!   replaced by a block from the die's free list.
//! * **Host writes.** A destage program of the write buffer on die `d` maps each of
//!   its LPNs to the next unit of `d`'s active block and invalidates the old unit.
//! * **Greedy GC** (per die, before a program): while the die has fewer than
//!   `gc_free_blocks` free blocks, the block with the fewest valid units (not the
//!   active one) is the victim; its `v` valid units are copied into the active block
//!   and it is erased. Its cost occupies the die:
//!   `gc_ns = ⌈v·map_bytes / page⌉ · tR + v · tPROG_unit + tBERS`
//!   (copy-back inside the die: no channel transfer), so reads and programs on that die
//!   wait behind it, the buffer drains more slowly, and host writes wait for room.
//! * **Deallocate (trim).** Each mapping unit wholly inside a trimmed range is unmapped
//!   (`fwd[lpn]` = none) and its physical unit invalidated, as a host write's old unit
//!   is: GC then finds fewer valid units in its victims and copies fewer — the reason
//!   a drive that is told what is free amplifies less. A unit only partly covered
//!   keeps its data (the map has no finer grain). A unit whose write is still in the
//!   buffer is unmapped too, and mapped again by that write's destage (a trim does not
//!   cancel a buffered write; in fio's trim-then-write order the write comes after).
//! * **Flexible Data Placement** (NVMe TP4146, `fdp_ruhs` reclaim unit handles): each
//!   die keeps one *write point* (open block) per reclaim unit handle (RUH); a host
//!   write tagged with placement identifier `h` (one reclaim group: the PID is the
//!   handle's index) programs into handle `h`'s open block, a write without one into
//!   handle 0's. A block belongs to the handle that opened it, and GC copies its valid
//!   units into that handle's open block (the spec's *persistently isolated* handles),
//!   so data of different lifetimes never share an erase block: a block of short-lived
//!   data is all invalid when it is collected, and long-lived data is never copied with
//!   it. Here a reclaim unit is one erase block of a die. Without FDP (every write on
//!   handle 0) the map behaves exactly as with one write point.
//! * **Write amplification** = (host units programmed + units copied by GC) / host
//!   units programmed.
//! * **Preconditioning.** With `precondition = true` (the default) the device starts as
//!   after a sequential fill of the whole logical space (page after page over the
//!   dies, as LBA striping places them) (SNIA's steady-state test
//!   starts from a full drive): every LPN mapped, only the spare blocks free. The first
//!   random writes are absorbed by the spare blocks; then GC starts and the sustained
//!   rate falls to the steady state.
//! * **Reads of buffered data.** A count per LPN of buffered pieces not yet destaged;
//!   a read all of whose units are in the buffer is served from DRAM
//!   (`buffer_reads`).
//!
//! Memory: `4·lpns + 4·ppns + lpns` bytes (and a byte per erase block: its handle) (8 GiB of 4 KiB units: ≈ 19 MiB), allocated
//! once; nothing per command.

mod config;

pub use config::{FlashConfig, MAX_RUHS, MAX_TABLE_BYTES};

/// Sizes derived from the configuration.
#[derive(Clone, Copy, Debug)]
struct Geometry {
    lpns: u64,
    blocks_per_die: u32,
}

impl Geometry {
    fn of(c: &FlashConfig, dies: u32) -> Geometry {
        let lpns = c.logical_bytes / c.map_bytes as u64;
        let phys = (lpns as f64 * (1.0 + c.over_provisioning)).ceil() as u64;
        let per_die = phys.div_ceil(dies as u64);
        Geometry {
            lpns,
            blocks_per_die: per_die.div_ceil(c.block_units as u64) as u32,
        }
    }
}

/// What garbage collection did before one program: units copied and blocks erased.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct GcWork {
    pub copies: u64,
    pub erases: u64,
}

/// Flash-management counters (see [`crate::DeviceStats::flash`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FlashStats {
    /// Mapping units programmed for the host (destaged writes).
    pub host_units: u64,
    /// Mapping units copied by garbage collection.
    pub gc_copied_units: u64,
    /// Blocks erased by garbage collection.
    pub gc_erases: u64,
    /// Die time spent on garbage collection (copies and erases), summed over dies, ns.
    pub gc_busy_ns: u64,
    /// Reads served from the write buffer.
    pub buffer_reads: u64,
    /// Mapped units a trim (deallocate) unmapped.
    pub trimmed_units: u64,
    /// Mapping units of the simulated logical space.
    pub logical_units: u64,
}

impl FlashStats {
    /// (host + GC-copied units) / host units (1 before any host program).
    pub fn write_amplification(&self) -> f64 {
        if self.host_units == 0 {
            1.0
        } else {
            (self.host_units + self.gc_copied_units) as f64 / self.host_units as f64
        }
    }
}

const NONE: u32 = u32::MAX;

/// The page-level FTL of one device.
#[derive(Clone, Debug)]
pub(crate) struct Ftl {
    map_shift: u32,
    lpns: u64,
    dies: u32,
    block_units: u32,
    blocks_per_die: u32,
    gc_free_blocks: u32,
    /// Write points per die: the reclaim unit handles (1 without FDP).
    handles: u32,
    fwd: Vec<u32>,
    rev: Vec<u32>,
    /// Valid units per block (global block index = die · blocks_per_die + block).
    valid: Vec<u32>,
    /// Per die: free blocks (global indices), used as a stack.
    free: Vec<Vec<u32>>,
    /// Per die and handle (`die · handles + h`): the open block and its next unit.
    active: Vec<(u32, u32)>,
    /// Per block: the handle whose write point opened it (GC copies its data there).
    owner: Vec<u8>,
    /// Per LPN: buffered pieces covering it not yet destaged (saturating).
    buffered: Vec<u8>,
    pub(crate) stats: FlashStats,
}

impl Ftl {
    /// The FTL of `dies` dies; a preconditioned fill places `stripe_units` consecutive
    /// mapping units (one page) per die, as LBA striping would.
    pub(crate) fn new(c: &FlashConfig, dies: u32, stripe_units: u32) -> Ftl {
        let g = Geometry::of(c, dies);
        let blocks = g.blocks_per_die as usize * dies as usize;
        let ppns = blocks * c.block_units as usize;
        assert!(ppns < NONE as usize, "flash too large for 32-bit PPNs");
        let handles = c.fdp_ruhs.clamp(1, MAX_RUHS);
        let mut f = Ftl {
            map_shift: c.map_bytes.trailing_zeros(),
            lpns: g.lpns,
            dies,
            block_units: c.block_units,
            blocks_per_die: g.blocks_per_die,
            gc_free_blocks: c.gc_free_blocks,
            handles,
            fwd: vec![NONE; g.lpns as usize],
            rev: vec![NONE; ppns],
            valid: vec![0; blocks],
            free: (0..dies)
                .map(|d| {
                    let b0 = d * g.blocks_per_die;
                    // Stack: lowest block on top.
                    (b0..b0 + g.blocks_per_die).rev().collect()
                })
                .collect(),
            active: vec![(NONE, 0); dies as usize * handles as usize],
            owner: vec![0; blocks],
            buffered: vec![0; g.lpns as usize],
            stats: FlashStats {
                logical_units: g.lpns,
                ..FlashStats::default()
            },
        };
        if c.precondition {
            // A sequential fill: page after page over the dies, in LPN order.
            let per = stripe_units.max(1);
            for l in 0..g.lpns as u32 {
                let d = l / per % dies;
                let p = f.alloc(d, 0);
                f.fwd[l as usize] = p;
                f.rev[p as usize] = l;
                f.valid[(p / f.block_units) as usize] += 1;
            }
        }
        f
    }

    /// The LPN of byte `offset` (wrapping modulo the logical space).
    #[inline]
    fn lpn(&self, offset: u64) -> u64 {
        (offset >> self.map_shift) % self.lpns
    }

    /// LPNs covered by `[offset, offset + len)` (at least one).
    #[inline]
    fn span(&self, offset: u64, len: u64) -> (u64, u64) {
        let first = offset >> self.map_shift;
        let last = (offset + len.max(1) - 1) >> self.map_shift;
        (first, last - first + 1)
    }

    /// The die holding the data at `offset`, if it is mapped.
    #[inline]
    pub(crate) fn die_of(&self, offset: u64) -> Option<u32> {
        let p = self.fwd[self.lpn(offset) as usize];
        (p != NONE).then(|| p / self.block_units / self.blocks_per_die)
    }

    /// A write's data entered the buffer.
    pub(crate) fn buffer_in(&mut self, offset: u64, len: u64) {
        let (first, n) = self.span(offset, len);
        for i in 0..n {
            let l = ((first + i) % self.lpns) as usize;
            self.buffered[l] = self.buffered[l].saturating_add(1);
        }
    }

    /// A buffered piece's program ended: its room in the buffer is freed.
    pub(crate) fn buffer_out(&mut self, offset: u64, len: u64) {
        let (first, n) = self.span(offset, len);
        for i in 0..n {
            let l = ((first + i) % self.lpns) as usize;
            self.buffered[l] = self.buffered[l].saturating_sub(1);
        }
    }

    /// Whether every unit of `[offset, offset + len)` is in the buffer.
    pub(crate) fn all_buffered(&self, offset: u64, len: u64) -> bool {
        let (first, n) = self.span(offset, len);
        (0..n).all(|i| self.buffered[((first + i) % self.lpns) as usize] > 0)
    }

    /// Program the buffered piece `[offset, offset + len)` on `die` through handle
    /// `ruh`'s write point (0: no placement; callers keep `ruh` below
    /// [`Ftl::handles`]): garbage-collect first if the die is short of free blocks,
    /// then map its units there. Returns the GC work done.
    pub(crate) fn program(&mut self, die: u32, offset: u64, len: u64, ruh: u32) -> GcWork {
        debug_assert!(
            ruh < self.handles,
            "placement handle {ruh} past the device's"
        );
        let ruh = ruh.min(self.handles - 1);
        let mut work = GcWork::default();
        while self.free[die as usize].len() < self.gc_free_blocks as usize {
            match self.collect(die) {
                Some(w) => {
                    work.copies += w.copies;
                    work.erases += w.erases;
                }
                None => break,
            }
        }
        let (first, n) = self.span(offset, len);
        for i in 0..n {
            let l = ((first + i) % self.lpns) as usize;
            self.invalidate(l);
            let p = self.alloc_any(die, ruh);
            self.fwd[l] = p;
            self.rev[p as usize] = l as u32;
            self.valid[(p / self.block_units) as usize] += 1;
        }
        self.stats.host_units += n;
        self.stats.gc_copied_units += work.copies;
        self.stats.gc_erases += work.erases;
        work
    }

    /// Deallocate `[offset, offset + len)`: unmap every mapping unit wholly inside it
    /// and invalidate its physical unit (see the module's "Deallocate").
    pub(crate) fn trim(&mut self, offset: u64, len: u64) {
        let unit = 1u64 << self.map_shift;
        let first = offset.div_ceil(unit);
        let end = (offset + len) >> self.map_shift;
        // At most one pass over the logical space (offsets wrap).
        for i in first..end.min(first + self.lpns) {
            let l = (i % self.lpns) as usize;
            if self.fwd[l] != NONE {
                self.invalidate(l);
                self.fwd[l] = NONE;
                self.stats.trimmed_units += 1;
            }
        }
    }

    fn invalidate(&mut self, l: usize) {
        let old = self.fwd[l];
        if old != NONE {
            self.rev[old as usize] = NONE;
            self.valid[(old / self.block_units) as usize] -= 1;
        }
    }

    /// Whether block `b` of `die` is a write point's open block.
    fn is_open(&self, die: u32, b: u32) -> bool {
        let h0 = (die * self.handles) as usize;
        self.active[h0..h0 + self.handles as usize]
            .iter()
            .any(|&(a, _)| a == b)
    }

    /// Greedy GC of one block of `die`: the block (neither free nor open) with the
    /// fewest valid units, copied into its owner handle's write point; `None` when no
    /// block would gain space.
    fn collect(&mut self, die: u32) -> Option<GcWork> {
        let b0 = die * self.blocks_per_die;
        let mut victim = NONE;
        let mut least = self.block_units;
        // Free blocks have no valid unit but are not victims; a victim must have an
        // invalid unit (fewer valid units than a block), or collecting it gains nothing.
        for b in b0..b0 + self.blocks_per_die {
            if self.is_open(die, b) || self.free[die as usize].contains(&b) {
                continue;
            }
            let v = self.valid[b as usize];
            if v < least {
                least = v;
                victim = b;
            }
        }
        if victim == NONE {
            return None;
        }
        let ruh = self.owner[victim as usize] as u32;
        if least > self.room(die, ruh) {
            return None;
        }
        let base = victim * self.block_units;
        let mut copies = 0;
        for u in base..base + self.block_units {
            let l = self.rev[u as usize];
            if l == NONE {
                continue;
            }
            self.rev[u as usize] = NONE;
            self.valid[victim as usize] -= 1;
            let p = self.alloc(die, ruh);
            self.fwd[l as usize] = p;
            self.rev[p as usize] = l;
            self.valid[(p / self.block_units) as usize] += 1;
            copies += 1;
        }
        debug_assert_eq!(self.valid[victim as usize], 0);
        self.free[die as usize].push(victim);
        Some(GcWork { copies, erases: 1 })
    }

    /// The next unit of handle `ruh`'s open block on `die`, opening a free block when
    /// it is full.
    /// # Panics
    /// If the die has neither room nor a free block (callers keep GC ahead of this).
    fn alloc(&mut self, die: u32, ruh: u32) -> u32 {
        let w = (die * self.handles + ruh) as usize;
        let (b, next) = self.active[w];
        if b != NONE && next < self.block_units {
            self.active[w].1 += 1;
            return b * self.block_units + next;
        }
        let nb = self.free[die as usize]
            .pop()
            .expect("FTL: a die ran out of free blocks (over-provisioning checked by validate)");
        self.active[w] = (nb, 1);
        self.owner[nb as usize] = ruh as u8;
        nb * self.block_units
    }

    /// Units handle `ruh` can still write on `die` without collecting.
    fn room(&self, die: u32, ruh: u32) -> u32 {
        let (b, next) = self.active[(die * self.handles + ruh) as usize];
        let in_active = if b == NONE {
            0
        } else {
            self.block_units - next
        };
        in_active + self.free[die as usize].len() as u32 * self.block_units
    }

    fn has_room(&self, die: u32, ruh: u32) -> bool {
        self.room(die, ruh) > 0
    }

    /// A unit on `die`, or — if GC could not free one there (every block of the die
    /// fully valid, which uniform writes make vanishingly rare) — on the next die that
    /// has room. Some die always has room: physical space exceeds logical space by
    /// more than a block per die (checked by `validate`).
    fn alloc_any(&mut self, die: u32, ruh: u32) -> u32 {
        for k in 0..self.dies {
            let d = (die + k) % self.dies;
            if self.has_room(d, ruh) {
                return self.alloc(d, ruh);
            }
        }
        unreachable!("FTL: no die has room although physical space exceeds logical space")
    }
}

#[cfg(test)]
mod tests;
