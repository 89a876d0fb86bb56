//! Deterministic I/O generation for one thread of a job, and open-loop pacing.

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use sluice_core::Op;

use crate::job::{BlockSize, Distribution, FileService, JobSpec, RwMode, RwModifier};
use crate::units::PPM;

mod pacer;
mod randommap;
mod skew;
pub use pacer::Pacer;
use randommap::FileMaps;
use skew::Skew;

/// One I/O to issue. `offset` is relative to the start of the thread's address space
/// (the engine adds the base of the file or region it gives the job).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IoSpec {
    /// Read, write or trim (generators never produce flushes).
    pub op: Op,
    /// Byte offset.
    pub offset: u64,
    /// Length in bytes.
    pub len: u32,
}

/// The SplitMix64 finaliser: a bijective 64-bit mixer.
#[inline]
fn mix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The seed of one thread's stream: the run seed, the job's `randseed` (if any), the
/// job index and the thread index, each mixed in turn.
pub fn stream_seed(seed: u64, randseed: Option<u64>, job_index: usize, thread: u32) -> u64 {
    let mut s = mix64(seed);
    if let Some(r) = randseed {
        s = mix64(s ^ mix64(r ^ 0x5EED_0000_0000_0001));
    }
    s = mix64(s ^ (job_index as u64).wrapping_mul(0xA24B_AED4_963E_E407));
    mix64(s ^ (thread as u64).wrapping_mul(0x9FB2_1C65_1E98_DF25))
}

/// One block size a direction can draw, with what random placement needs.
#[derive(Clone, Copy, Debug)]
struct Slot {
    len: u32,
    /// Cumulative share up to and including this entry, in ppm.
    cum_ppm: u32,
    /// First offset a random I/O of this size may start at.
    base: u64,
    /// How many aligned positions there are (at least 1).
    positions: u64,
    /// The step between positions: `blockalign` (default the smallest size).
    align: u64,
}

/// The sizes of one direction.
#[derive(Clone, Debug)]
struct Sizes {
    slots: Vec<Slot>,
}

impl Sizes {
    /// `align`: fio's `blockalign`; 0 (unset) is fio's default, the direction's
    /// smallest block size (`fixup_options`: `ba[ddir] = min_bs[ddir]`), so with
    /// mixed sizes a large block may start at any multiple of the smallest.
    fn new(bs: &BlockSize, start: u64, end: u64, align: u32) -> Sizes {
        let table: Vec<(u32, u32)> = match bs {
            BlockSize::Fixed(n) => vec![(*n, PPM)],
            BlockSize::Split(t) => t.iter().map(|e| (e.len, e.ppm)).collect(),
        };
        let align = if align > 0 {
            align
        } else {
            bs.min_len().max(1)
        };
        let mut cum = 0u32;
        let slots = table
            .into_iter()
            .map(|(len, ppm)| {
                cum = cum.saturating_add(ppm);
                let l = (len as u64).max(1);
                let a = align as u64;
                // Align to the block size (or blockalign) in absolute terms when the
                // region holds at least one such block, else relative to its start.
                let aligned = start.div_ceil(a).saturating_mul(a);
                let (base, positions) = if aligned.saturating_add(l) <= end {
                    (aligned, (end - aligned - l) / a + 1)
                } else {
                    (start, ((end - start).saturating_sub(l) / a + 1).max(1))
                };
                Slot {
                    len,
                    cum_ppm: cum,
                    base,
                    positions,
                    align: a,
                }
            })
            .collect();
        Sizes { slots }
    }

    /// Pick a size (consumes randomness only when there is a choice).
    #[inline]
    fn pick(&self, rng: &mut Xoshiro256PlusPlus) -> &Slot {
        if self.slots.len() == 1 {
            return &self.slots[0];
        }
        let r = rng.random_range(0..PPM);
        let i = self.slots.partition_point(|s| s.cum_ppm <= r);
        &self.slots[i.min(self.slots.len() - 1)]
    }
}

/// fio's `__hash_u64`: a multiplication by the 64-bit golden ratio, which scatters
/// the ranks of skewed distributions over the file.
const GOLDEN_RATIO_64: u64 = 0x61C8_8646_80B5_83EB;

/// The I/O stream of one thread of a job: directions by `rwmixread`, sizes by
/// `bs`/`bssplit`/`bsrange`, offsets random (uniform, keeping fio's random map unless
/// `norandommap`, or fio's `random_distribution`; aligned to `blockalign`, by default
/// the direction's smallest size) or
/// sequential with wrap-around, over `nrfiles` files side by side. Same job, indices
/// and seed → same stream.
///
/// `next_io` does not allocate.
#[derive(Clone, Debug)]
pub struct IoGen {
    rng: Xoshiro256PlusPlus,
    random: bool,
    /// Reads per 100 I/Os: 100 for read-only modes, 0 for write-only ones (and for
    /// the trim modes, whose direction `trim` decides).
    read_pct: u32,
    /// The trim modes: every I/O a trim (`trim`, `randtrim`), or fio's trim-then-write
    /// alternation (`trimwrite`, `randtrimwrite`; see [`IoGen::trim_write_dir`]).
    trim: TrimMode,
    /// Per file, the start of the last write and of the last trim (fio's
    /// `last_start[DDIR_WRITE]`, `last_start[DDIR_TRIM]`) for the alternation.
    tw_last: Vec<[Option<u64>; 2]>,
    /// The sizes of each direction (read, write, trim), placed in file 0.
    sizes: [Sizes; 3],
    /// Non-uniform offsets per direction (`None`: uniform; trims are always uniform).
    skew: [Option<Skew>; 3],
    /// Bytes per block index of the skewed distributions (fio's smallest block size).
    unit: u64,
    /// Percent of random I/Os per direction (100 = all; trims: all).
    perc_random: [u32; 3],
    start: u64,
    end: u64,
    file_size: u64,
    nfiles: u32,
    service: FileService,
    /// The current file and the I/Os (round robin) or bytes (sequential) left on it.
    file: u32,
    file_left: u64,
    /// Bytes per file per loop, for `file_service_type=sequential`.
    file_share: u64,
    /// Next sequential position per file and direction, relative to the file's start
    /// (fio keeps one per direction too).
    cursor: Vec<[u64; 3]>,
    /// fio's `rw=MODE:N`: bytes added after each sequential I/O (`ddir_seq_add`).
    seq_add: i64,
    /// A random job's `:N`: a random offset every N I/Os (0: every I/O), the count
    /// left, and whether the I/Os in between repeat the last offset (`rw_sequencer`).
    rand_every: u32,
    rand_left: u32,
    identical: bool,
    /// Start of the last I/O per file and direction (for `rw_sequencer=identical`).
    last_start: Vec<[Option<u64>; 3]>,
    issued: u64,
    ios: u64,
    /// I/Os issued per direction (the `sequence` distribution's position).
    dir_ios: [u64; 3],
    limit: Option<u64>,
    max_ios: Option<u64>,
    /// Bytes per loop and where the next loop starts (sequential positions restart),
    /// for size-based jobs with `loops` > 1.
    loop_bytes: u64,
    next_loop: u64,
    /// `zonemode=strided`: the window the thread's I/O stays in.
    strided: Option<crate::zones::Strided>,
    /// fio's random map per file (`None`: drawn with replacement, `norandommap`).
    maps: Option<FileMaps>,
}

/// How a job's I/Os take the trim direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TrimMode {
    /// No trims: reads and writes by `read_pct`.
    None,
    /// Every I/O a trim.
    All,
    /// fio's `trimwrite`: a trim, then writes from the write cursor until the last
    /// write starts where the last trim started.
    Seq,
    /// fio's `randtrimwrite`: a trim, then one write at the trim's offset.
    Rand,
}

impl IoGen {
    /// The generator of thread `thread` of job number `job_index` (its position in the
    /// job file). `seed` is the run's seed; it is combined with `job.randseed` (if set),
    /// the job index and the thread index, so every thread has its own reproducible
    /// stream.
    pub fn new(job: &JobSpec, job_index: usize, thread: u32, seed: u64) -> IoGen {
        let start = job.thread_offset(thread);
        let nfiles = job.nrfiles.max(1);
        let region = job.size.max(1);
        let file_size = (region / nfiles as u64).max(1);
        let end = start.saturating_add(file_size.saturating_mul(nfiles as u64));
        let read_pct = match job.rw {
            m if m.is_mixed() => job.rwmixread.min(100) as u32,
            m if m.reads() => 100,
            _ => 0,
        };
        let trim = match job.rw {
            RwMode::Trim | RwMode::RandTrim => TrimMode::All,
            RwMode::TrimWrite => TrimMode::Seq,
            RwMode::RandTrimWrite => TrimMode::Rand,
            _ => TrimMode::None,
        };
        // fio: "in trimwrite mode, each byte is trimmed and then written, so allow
        // total_bytes or number of ios to be twice as big".
        let twice = u64::from(matches!(trim, TrimMode::Seq | TrimMode::Rand)) + 1;
        let mut rng =
            Xoshiro256PlusPlus::seed_from_u64(stream_seed(seed, job.randseed, job_index, thread));
        let file_end = start.saturating_add(file_size);
        let unit = (job.bs.read.min_len().min(job.bs.write.min_len()) as u64).max(1);
        let blocks = file_size.div_ceil(unit);
        let random = job.rw.is_random();
        let mut skew = if random {
            [
                Skew::new(&job.distribution[0], blocks, unit, &mut rng),
                Skew::new(&job.distribution[1], blocks, unit, &mut rng),
                None,
            ]
        } else {
            [None, None, None]
        };
        for (dir, s) in skew.iter_mut().enumerate() {
            if let Some(Skew::Sequence { stride, unit, .. }) = s {
                *stride = job.sequence_stride;
                let bs = if dir == 0 {
                    &job.bs.read
                } else {
                    &job.bs.write
                };
                *unit = (bs.min_len() as u64).max(1);
            }
        }
        let loop_bytes = job.io_size.unwrap_or(job.size).max(1);
        let dirs = match trim {
            TrimMode::None => [read_pct > 0, read_pct < 100, false],
            TrimMode::All => [false, false, true],
            TrimMode::Seq | TrimMode::Rand => [false, true, true],
        };
        IoGen {
            maps: FileMaps::for_job(job, dirs, file_size, nfiles),
            rng,
            random,
            read_pct,
            trim,
            tw_last: vec![[None; 2]; nfiles as usize],
            sizes: [
                Sizes::new(&job.bs.read, start, file_end, job.blockalign[0]),
                Sizes::new(&job.bs.write, start, file_end, job.blockalign[1]),
                Sizes::new(&job.bs.trim, start, file_end, 0),
            ],
            skew,
            unit,
            perc_random: [
                job.percentage_random[0].min(100) as u32,
                job.percentage_random[1].min(100) as u32,
                100,
            ],
            start,
            end,
            file_size,
            nfiles,
            service: job.file_service,
            file: 0,
            file_left: match job.file_service {
                FileService::RoundRobin(n) => n.max(1) as u64,
                _ => 0,
            },
            file_share: loop_bytes.div_ceil(nfiles as u64).max(1),
            cursor: vec![[0; 3]; nfiles as usize],
            seq_add: match job.rw_modifier {
                RwModifier::SeqAdd(n) => n,
                _ => 0,
            },
            rand_every: match job.rw_modifier {
                RwModifier::RandEvery(n) if random => n,
                _ => 0,
            },
            rand_left: match job.rw_modifier {
                RwModifier::RandEvery(n) => n,
                _ => 0,
            },
            identical: job.rw_identical,
            last_start: if job.rw_identical {
                vec![[None; 3]; nfiles as usize]
            } else {
                Vec::new()
            },
            issued: 0,
            ios: 0,
            dir_ios: [0; 3],
            limit: job.bytes_per_thread().map(|b| b.saturating_mul(twice)),
            max_ios: job.number_ios.map(|n| n.saturating_mul(twice)),
            loop_bytes,
            next_loop: if !job.time_based && job.loops > 1 {
                loop_bytes
            } else {
                u64::MAX
            },
            strided: crate::zones::Strided::new(&job.zone),
        }
    }

    /// Which file the next I/O goes to (advances the file service).
    #[inline]
    fn next_file(&mut self) -> u32 {
        if self.nfiles == 1 {
            return 0;
        }
        match self.service {
            FileService::RoundRobin(n) => {
                if self.file_left == 0 {
                    self.file = (self.file + 1) % self.nfiles;
                    self.file_left = n.max(1) as u64;
                }
                self.file_left -= 1;
            }
            FileService::Sequential => {
                if self.file_left >= self.file_share {
                    self.file = (self.file + 1) % self.nfiles;
                    self.file_left = 0;
                }
            }
            FileService::Random => self.file = self.rng.random_range(0..self.nfiles),
        }
        self.file
    }

    /// The next I/O. Sequential modes run through each file and start again at its
    /// beginning when the next block would not fit; random modes pick a position
    /// aligned to `blockalign` — by default, as fio, the direction's smallest block
    /// size (absolute alignment when the file holds such a block) — uniformly or by the job's distribution; `percentage_random` below 100
    /// makes some of a random job's I/Os continue sequentially from the direction's
    /// last I/O.
    ///
    /// Uniform random offsets keep fio's random map unless the job has `norandommap`
    /// (see `gen/randommap.rs`): no block of the smallest block size is done twice
    /// until every block of the file has been (then the map starts afresh, as it does
    /// at every loop); a drawn block already done gives way to the next free one; an
    /// I/O that would overlap done blocks is cut to the free extent, so its length is
    /// a multiple of the smallest block size, not always a size of `bs`/`bssplit`.
    /// With `norandommap`, a non-uniform `random_distribution`, a `blockalign` other
    /// than the smallest block size, or `zonemode=strided`, offsets are drawn with
    /// replacement.
    #[inline]
    pub fn next_io(&mut self) -> IoSpec {
        let (dir, slot, f) = match self.trim {
            TrimMode::None => {
                let dir = match self.read_pct {
                    100 => 0,
                    0 => 1,
                    p => usize::from(self.rng.random_range(0..100u32) >= p),
                };
                let slot = *self.sizes[dir].pick(&mut self.rng);
                (dir, slot, self.next_file())
            }
            TrimMode::All => {
                let slot = *self.sizes[2].pick(&mut self.rng);
                (2, slot, self.next_file())
            }
            TrimMode::Seq | TrimMode::Rand => {
                // fio picks the file, then the direction by the file's last starts.
                let f = self.next_file();
                let dir = self.trim_write_dir(f);
                (dir, *self.sizes[dir].pick(&mut self.rng), f)
            }
        };
        let mut len = slot.len;
        if self.trim == TrimMode::Rand && dir == 1 {
            return self.write_after_trim(f, len);
        }
        let file_base = f as u64 * self.file_size;
        // `rw=randread:N`: only every N-th I/O takes a new random offset (fio's
        // `ddir_seq_nr`).
        let hit = match self.rand_every {
            0 => true,
            n => {
                self.rand_left -= 1;
                if self.rand_left == 0 {
                    self.rand_left = n;
                }
                self.rand_left == n
            }
        };
        let random = self.random
            && hit
            && (self.perc_random[dir] >= 100
                || self.rng.random_range(1..=100u32) <= self.perc_random[dir]);
        let window = match self.strided.as_mut() {
            Some(st) => Some(st.before(self.file_size, &mut self.cursor[f as usize][dir])),
            None => None,
        };
        let offset = if let (true, Some((w, wlen))) = (random, window) {
            // fio's strided random offsets: uniform over the window (its `last_block`
            // is the zone range), aligned as the slot's.
            let n = (wlen.saturating_sub(len as u64) / slot.align) + 1;
            self.start + file_base + w + self.rng.random_range(0..n) * slot.align
        } else if random {
            let idx = match &self.skew[dir] {
                Some(Skew::Sequence { idx, stride, unit }) => {
                    // fio's __get_next_rand_offset_sequence: element n mod len of the
                    // direction's n-th I/O, plus n / len rounds of len with a stride.
                    let n = self.dir_ios[dir];
                    let k = idx.len() as u64;
                    let mut b = idx[(n % k) as usize];
                    if *stride {
                        b = b.saturating_add(n / k * k);
                    }
                    let p = self.start + b.saturating_mul(*unit);
                    // Past the file (a stride's later rounds), it wraps to the start.
                    let p = if p.saturating_add(len as u64) > self.start + self.file_size {
                        self.start + (b.saturating_mul(*unit) % self.file_size)
                    } else {
                        p
                    };
                    (p.saturating_sub(slot.base) / slot.align).min(slot.positions - 1)
                }
                None if slot.positions > 1 => self.rng.random_range(0..slot.positions),
                None => 0,
                Some(skew) => {
                    // A block of fio's unit size, then aligned down to this size.
                    let p = self.start + skew.next(&mut self.rng) * self.unit;
                    (p.saturating_sub(slot.base) / slot.align).min(slot.positions - 1)
                }
            };
            let at = file_base + slot.base + idx * slot.align;
            match (&mut self.maps, &self.skew[dir]) {
                (Some(maps), None) => {
                    let rel = at - self.start - file_base;
                    let (rel, cut) = maps.place(f, rel, len, self.file_size);
                    len = cut;
                    self.start + file_base + rel
                }
                _ => at,
            }
        } else if !hit && self.identical {
            // rw_sequencer=identical: the last I/O's offset again (0 before any).
            self.last_start[f as usize][dir].unwrap_or(self.start + file_base)
        } else {
            let mut pos = self.cursor[f as usize][dir];
            if pos != 0 && self.seq_add != 0 {
                // fio's get_next_seq_offset: the modifier is added to the end of the
                // last I/O; past the file's end a forward skip wraps to its start, a
                // backward one to the end plus the (negative) modifier.
                pos = pos.wrapping_add(self.seq_add as u64);
                if pos >= self.file_size {
                    pos = if self.seq_add > 0 {
                        0
                    } else {
                        self.file_size.wrapping_add(self.seq_add as u64)
                    };
                }
            }
            if pos.saturating_add(len as u64) > self.file_size {
                pos = 0;
            }
            self.start + file_base + pos
        };
        if let Some(l) = self.last_start.get_mut(f as usize) {
            l[dir] = Some(offset);
        }
        if self.trim != TrimMode::None {
            self.tw_last[f as usize][dir - 1] = Some(offset);
        }
        // The direction's next sequential position follows this I/O, random or not.
        self.cursor[f as usize][dir] = offset - self.start - file_base + len as u64;
        if let Some(st) = self.strided.as_mut() {
            st.issued(len);
        }
        self.issued = self.issued.saturating_add(len as u64);
        self.ios += 1;
        self.dir_ios[dir] += 1;
        if self.service == FileService::Sequential {
            self.file_left += len as u64;
        }
        if self.issued >= self.next_loop {
            // A new loop: sequential positions and the file service start afresh.
            self.next_loop = self.next_loop.saturating_add(self.loop_bytes);
            for c in &mut self.cursor {
                *c = [0; 3];
            }
            if let Some(m) = self.maps.as_mut() {
                m.reset();
            }
            self.file = 0;
            self.file_left = match self.service {
                FileService::RoundRobin(n) => n.max(1) as u64,
                _ => 0,
            };
        }
        IoSpec {
            op: [Op::Read, Op::Write, Op::Trim][dir],
            offset,
            len,
        }
    }

    /// fio's `set_rw_ddir` for the trim-write modes: a trim when the file's last write
    /// started where its last trim did (so first a trim), else a write.
    #[inline]
    fn trim_write_dir(&self, f: u32) -> usize {
        let [w, t] = self.tw_last[f as usize];
        if w == t {
            2
        } else {
            1
        }
    }

    /// `randtrimwrite`'s write: at the offset of the file's last trim (fio's
    /// `get_next_block`: "offset = f->last_start[DDIR_TRIM]"), moved back to fit in
    /// the file when the write is larger than the trim.
    fn write_after_trim(&mut self, f: u32, len: u32) -> IoSpec {
        let t = self.tw_last[f as usize][1].unwrap_or(self.start);
        let file_end = self.start + f as u64 * self.file_size + self.file_size;
        let offset = t.min(file_end.saturating_sub(len as u64));
        self.tw_last[f as usize][0] = Some(t);
        self.issued = self.issued.saturating_add(len as u64);
        self.ios += 1;
        self.dir_ios[1] += 1;
        if self.service == FileService::Sequential {
            self.file_left += len as u64;
        }
        IoSpec {
            op: Op::Write,
            offset,
            len,
        }
    }

    /// Whether the thread has issued all it should: at least `io_size` × `loops` bytes
    /// when the job is not `time_based` (the last I/O may pass it by less than one
    /// block), or `number_ios` I/Os. A time-based job without `number_ios` is never
    /// exhausted; its end is the engine's business.
    #[inline]
    pub fn exhausted(&self) -> bool {
        self.limit.is_some_and(|l| self.issued >= l) || self.max_ios.is_some_and(|m| self.ios >= m)
    }

    /// The job runner moved the I/O `was` (as generated) to `now` (fio's
    /// `zbd_adjust_block`: a write to its zone's write pointer, a read into written
    /// data): the direction's next sequential position follows the I/O where it went,
    /// and the bytes issued count its length as issued.
    pub fn moved(&mut self, was: IoSpec, now: IoSpec) {
        let dir = match now.op {
            Op::Read => 0,
            Op::Write => 1,
            Op::Trim => 2,
            Op::Flush => return,
        };
        let rel = now.offset.saturating_sub(self.start);
        let f = ((rel / self.file_size) as usize).min(self.cursor.len() - 1);
        let file_base = f as u64 * self.file_size;
        self.cursor[f][dir] = rel - file_base.min(rel) + now.len as u64;
        self.issued = (self.issued + now.len as u64).saturating_sub(was.len as u64);
    }

    /// Bytes issued so far.
    #[inline]
    pub fn issued_bytes(&self) -> u64 {
        self.issued
    }

    /// The region `[start, end)` the thread's I/Os fall into (all its files).
    pub fn region(&self) -> (u64, u64) {
        (self.start, self.end)
    }
}
