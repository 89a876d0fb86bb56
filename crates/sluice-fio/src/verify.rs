//! Data verification on real files (fio's `verify`, `verify_pattern`, `do_verify`,
//! `verify_backlog`, `verify_fatal`): one [`Verifier`] per job thread.
//!
//! # What a written block holds
//! For the checksum kinds (`crc32c`, `crc64`, `md5`, `sha1`, `sha256`, `xxhash`,
//! `meta`) every write is filled, when it is issued, with
//! * a header (sluice's own, little endian): `SLV1` magic (4 bytes), the kind (1), 3
//!   zero bytes, the block length (u32), 4 zero bytes, the block's file offset (u64),
//!   the thread's write sequence number (u64), then the checksum (CRC-32C 4 bytes,
//!   CRC-64/XZ 8, MD5 16, SHA-1 20, SHA-256 32, XXH32 4; `meta`: a CRC-32C of the
//!   header alone, fio's metadata-only check);
//! * data: `verify_pattern` repeated, or pseudo-random bytes drawn from the offset and
//!   sequence number.
//!
//! The checksum covers the whole block with its own field left out, header included.
//! With `verify_interval=N` each N bytes of a block carry their own header (with their
//! own offset) and checksum, as fio's intervals.
//! `pattern` writes the pattern alone, with no header.
//!
//! # What a read checks
//! Magic, kind, length and **offset** in the header, then the checksum (or, for
//! `pattern`, every byte). The offset is what proves that the engine never mixes
//! buffers between request slots: a write that went out with another slot's buffer
//! carries that slot's offset, and its block fails here.
//!
//! # When blocks are read back
//! As fio: a write job records each block whose write completed (a later write that
//! overlaps a recorded block replaces it, fio's overlap rule). With `verify_backlog=N`,
//! after every N recorded blocks the thread reads those back before it writes more;
//! with `do_verify=1` (the default), when its writes are done (by size) and none is in
//! flight, it reads back every block still recorded, in offset order. A job that only
//! reads checks every block it reads (fio's verify of a read job). A job that ends by
//! its `runtime` is not read back (sluice ends a timed job's threads at once).
//! Concurrent writes that overlap partly can leave a block mixed from two writes, as in
//! fio; jobs with one block size never do.

use std::collections::{BTreeMap, VecDeque};

use md5::{Digest, Md5};
use sluice_workload::{VerifyKind, VerifySpec};

/// The header's magic.
const MAGIC: &[u8; 4] = b"SLV1";
/// Bytes before the checksum.
const HDR: usize = 32;

/// Bytes of the checksum of `kind`.
fn csum_len(kind: VerifyKind) -> usize {
    match kind {
        VerifyKind::Crc32c | VerifyKind::Xxhash | VerifyKind::Meta => 4,
        VerifyKind::Crc64 => 8,
        VerifyKind::Md5 => 16,
        VerifyKind::Sha1 => 20,
        VerifyKind::Sha256 => 32,
        VerifyKind::Pattern => 0,
    }
}

fn kind_code(kind: VerifyKind) -> u8 {
    match kind {
        VerifyKind::Crc32c => 1,
        VerifyKind::Md5 => 2,
        VerifyKind::Pattern => 3,
        VerifyKind::Crc64 => 4,
        VerifyKind::Sha1 => 5,
        VerifyKind::Sha256 => 6,
        VerifyKind::Xxhash => 7,
        VerifyKind::Meta => 8,
    }
}

/// CRC-64 with the ECMA-182 polynomial, reflected (CRC-64/XZ).
const CRC64: crc::Crc<u64> = crc::Crc::<u64>::new(&crc::CRC_64_XZ);

/// The checksum of `block` without its checksum field, into `out`. `meta` sums the
/// header alone.
fn checksum(kind: VerifyKind, block: &[u8], out: &mut [u8; 32]) {
    let c = csum_len(kind);
    let (head, rest) = (&block[..HDR], &block[HDR + c..]);
    match kind {
        VerifyKind::Crc32c => {
            let v = crc32c::crc32c_append(crc32c::crc32c(head), rest);
            out[..4].copy_from_slice(&v.to_le_bytes());
        }
        VerifyKind::Meta => {
            out[..4].copy_from_slice(&crc32c::crc32c(head).to_le_bytes());
        }
        VerifyKind::Crc64 => {
            let mut d = CRC64.digest();
            d.update(head);
            d.update(rest);
            out[..8].copy_from_slice(&d.finalize().to_le_bytes());
        }
        VerifyKind::Xxhash => {
            // fio's verify seeds XXH32 with 1.
            let mut h = xxhash_rust::xxh32::Xxh32::new(1);
            h.update(head);
            h.update(rest);
            out[..4].copy_from_slice(&h.digest().to_le_bytes());
        }
        VerifyKind::Md5 => out[..16].copy_from_slice(&digest::<Md5>(head, rest)),
        VerifyKind::Sha1 => out[..20].copy_from_slice(&digest::<sha1::Sha1>(head, rest)),
        VerifyKind::Sha256 => out[..32].copy_from_slice(&digest::<sha2::Sha256>(head, rest)),
        VerifyKind::Pattern => {}
    }
}

fn digest<D: Digest>(head: &[u8], rest: &[u8]) -> Vec<u8> {
    let mut h = D::new();
    h.update(head);
    h.update(rest);
    h.finalize().to_vec()
}

/// What one job thread verifies, and what it found.
#[derive(Debug)]
pub struct Verifier {
    spec: VerifySpec,
    /// The job writes: reads are verify reads only when queued here; otherwise every
    /// read is checked.
    writes: bool,
    /// Write sequence number (in the header).
    seq: u64,
    /// Blocks whose write completed and that are not read back yet: offset → length.
    written: BTreeMap<u64, u32>,
    /// Blocks recorded since the last backlog batch.
    since_batch: u64,
    /// Blocks to read back now.
    queue: VecDeque<(u64, u32)>,
    /// Verify reads in flight.
    reading: u32,
    /// The final read-back has started.
    final_started: bool,
    /// Blocks checked.
    pub checked: u64,
    /// Blocks that failed their check.
    pub failed: u64,
    /// The first failure, described.
    pub first: Option<String>,
}

impl Verifier {
    /// A verifier for a job with `spec` (`writes`: the job writes at all).
    pub fn new(spec: &VerifySpec, writes: bool) -> Verifier {
        Verifier {
            spec: spec.clone(),
            writes,
            seq: 0,
            written: BTreeMap::new(),
            since_batch: 0,
            queue: VecDeque::new(),
            reading: 0,
            final_started: false,
            checked: 0,
            failed: 0,
            first: None,
        }
    }

    /// Whether the job ends at its first failure.
    pub fn fatal(&self) -> bool {
        self.spec.fatal
    }

    /// Fill the buffer of a write of `buf.len()` bytes at file offset `off`.
    pub fn fill(&mut self, buf: &mut [u8], off: u64) {
        self.seq += 1;
        let seq = self.seq;
        if self.spec.pattern.is_empty() {
            // xorshift64* from the offset and sequence: cheap, distinct per write.
            let mut x = (off ^ seq.rotate_left(32) ^ 0x9E37_79B9_7F4A_7C15) | 1;
            for chunk in buf.chunks_mut(8) {
                x ^= x >> 12;
                x ^= x << 25;
                x ^= x >> 27;
                let v = x.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes();
                chunk.copy_from_slice(&v[..chunk.len()]);
            }
        } else {
            let p = &self.spec.pattern;
            for (i, b) in buf.iter_mut().enumerate() {
                *b = p[i % p.len()];
            }
        }
        let kind = self.spec.kind;
        if kind == VerifyKind::Pattern {
            return;
        }
        // A header per `verify_interval` bytes (one per block without it), each with
        // its own offset, as fio's verify_interval.
        let step = self.interval(buf.len());
        for (i, chunk) in buf.chunks_mut(step).enumerate() {
            let off = off + (i * step) as u64;
            debug_assert!(chunk.len() >= HDR + 32, "chunks hold the header");
            chunk[..4].copy_from_slice(MAGIC);
            chunk[4] = kind_code(kind);
            chunk[5..8].fill(0);
            let len = chunk.len() as u32;
            chunk[8..12].copy_from_slice(&len.to_le_bytes());
            chunk[12..16].fill(0);
            chunk[16..24].copy_from_slice(&off.to_le_bytes());
            chunk[24..32].copy_from_slice(&seq.to_le_bytes());
            let mut sum = [0u8; 32];
            checksum(kind, chunk, &mut sum);
            let c = csum_len(kind);
            chunk[HDR..HDR + c].copy_from_slice(&sum[..c]);
        }
    }

    /// Bytes covered by one header in a block of `len` bytes.
    fn interval(&self, len: usize) -> usize {
        self.spec
            .interval
            .map_or(len, |n| n as usize)
            .clamp(1, len.max(1))
    }

    /// Check a block of `buf.len()` bytes read at file offset `off`; `Err` describes
    /// what is wrong.
    pub fn check(&self, buf: &[u8], off: u64) -> Result<(), String> {
        let kind = self.spec.kind;
        let len = buf.len();
        if kind == VerifyKind::Pattern {
            let p = &self.spec.pattern;
            let p = if p.is_empty() { &[0u8][..] } else { p };
            return match buf.iter().enumerate().find(|(i, b)| **b != p[i % p.len()]) {
                None => Ok(()),
                Some((i, b)) => Err(format!(
                    "pattern mismatch at byte {i}: read {b:#04x}, expected {:#04x}",
                    p[i % p.len()]
                )),
            };
        }
        let step = self.interval(len);
        for (i, chunk) in buf.chunks(step).enumerate() {
            let at = i * step;
            self.check_chunk(chunk, off + at as u64, at).map_err(|e| {
                if step < len {
                    format!("in the interval at byte {at}: {e}")
                } else {
                    e
                }
            })?;
        }
        Ok(())
    }

    /// Check one header's chunk read at file offset `off`, `at` bytes into its block.
    fn check_chunk(&self, buf: &[u8], off: u64, at: usize) -> Result<(), String> {
        let kind = self.spec.kind;
        let len = buf.len();
        if &buf[..4] != MAGIC {
            return Err(format!(
                "no {} header (magic {:02x?}): the block was not written by a verify job, or was overwritten",
                kind.name(),
                &buf[..4]
            ));
        }
        if buf[4] != kind_code(kind) {
            return Err(format!(
                "the header is of another verify kind (code {})",
                buf[4]
            ));
        }
        let h_len = u32::from_le_bytes(buf[8..12].try_into().expect("4 bytes")) as usize;
        let h_off = u64::from_le_bytes(buf[16..24].try_into().expect("8 bytes"));
        if h_len != len {
            return Err(format!(
                "the header is of a block of {h_len} bytes, read as {len} (verify with the block size that wrote it)"
            ));
        }
        if h_off != off {
            return Err(format!(
                "the header is of the block at offset {h_off}: a write went to the wrong place or with another request's buffer"
            ));
        }
        let mut sum = [0u8; 32];
        checksum(kind, buf, &mut sum);
        let c = csum_len(kind);
        if buf[HDR..HDR + c] != sum[..c] {
            return Err(format!(
                "{} mismatch: stored {}, computed {}",
                kind.name(),
                hex(&buf[HDR..HDR + c]),
                hex(&sum[..c])
            ));
        }
        // meta sums only the header; its data is checked against the pattern, if any.
        let p = &self.spec.pattern;
        if kind == VerifyKind::Meta && !p.is_empty() {
            for (i, b) in buf.iter().enumerate().skip(HDR + c) {
                let want = p[(at + i) % p.len()];
                if *b != want {
                    return Err(format!(
                        "pattern mismatch at byte {}: read {b:#04x}, expected {want:#04x}",
                        at + i
                    ));
                }
            }
        }
        Ok(())
    }

    /// A write of `len` bytes at `off` completed: record its block, and start a
    /// backlog batch when one is due.
    pub fn written(&mut self, off: u64, len: u32) {
        let end = off + len as u64;
        // fio's overlap rule: a later write replaces the blocks it overlaps.
        let overlapping: Vec<u64> = self
            .written
            .range(..end)
            .rev()
            .take_while(|(o, l)| **o + **l as u64 > off)
            .map(|(o, _)| *o)
            .collect();
        for o in overlapping {
            self.written.remove(&o);
        }
        self.written.insert(off, len);
        self.since_batch += 1;
        if let Some(n) = self.spec.backlog {
            if self.since_batch >= n {
                self.since_batch = 0;
                self.queue_all();
            }
        }
    }

    fn queue_all(&mut self) {
        let all = std::mem::take(&mut self.written);
        self.queue.extend(all);
    }

    /// Whether reads of this job are checked: every read of a job that only reads;
    /// else the read-backs.
    pub fn checks_every_read(&self) -> bool {
        !self.writes
    }

    /// The next block to read back, if any.
    pub fn next_read(&mut self) -> Option<(u64, u32)> {
        let r = self.queue.pop_front();
        if r.is_some() {
            self.reading += 1;
        }
        r
    }

    /// A read-back completed.
    pub fn read_back_done(&mut self) {
        self.reading -= 1;
    }

    /// Whether a backlog batch is being read back (new writes wait for it).
    pub fn busy(&self) -> bool {
        !self.queue.is_empty() || self.reading > 0
    }

    /// Whether a final read-back is still to come (it waits for in-flight writes).
    pub fn final_pending(&self) -> bool {
        !self.final_started && self.spec.do_verify && self.writes
    }

    /// The thread's writes are done and none is in flight: queue the final read-back
    /// (once, with `do_verify`). Returns whether there is anything to read.
    pub fn start_final(&mut self) -> bool {
        if !self.final_started && self.spec.do_verify && self.writes {
            self.final_started = true;
            self.queue_all();
        }
        !self.queue.is_empty()
    }

    /// Count the result of one check.
    pub fn record(&mut self, result: Result<(), String>, off: u64, len: u32) {
        self.checked += 1;
        if let Err(why) = result {
            self.failed += 1;
            if self.first.is_none() {
                self.first = Some(format!(
                    "{} verify failed on the block of {len} bytes at file offset {off}: {why}",
                    self.spec.kind.name()
                ));
            }
        }
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(kind: VerifyKind) -> VerifySpec {
        VerifySpec {
            kind,
            pattern: Vec::new(),
            do_verify: true,
            backlog: None,
            fatal: false,
            interval: None,
        }
    }

    #[test]
    fn a_filled_block_checks_and_any_flipped_byte_fails() {
        for kind in [
            VerifyKind::Crc32c,
            VerifyKind::Md5,
            VerifyKind::Crc64,
            VerifyKind::Sha1,
            VerifyKind::Sha256,
            VerifyKind::Xxhash,
        ] {
            let mut v = Verifier::new(&spec(kind), true);
            let mut b = vec![0u8; 4096];
            v.fill(&mut b, 8192);
            assert_eq!(v.check(&b, 8192), Ok(()));
            for i in [0usize, 9, 17, 30, 33, 100, 4095] {
                let mut c = b.clone();
                c[i] ^= 0x01;
                assert!(v.check(&c, 8192).is_err(), "{kind:?} byte {i}");
            }
            // The same bytes read at another offset: another slot's buffer.
            let e = v.check(&b, 4096).unwrap_err();
            assert!(e.contains("offset 8192"), "{e}");
        }
    }

    #[test]
    fn each_interval_has_its_header_and_meta_checks_header_and_pattern() {
        let mut s = spec(VerifyKind::Meta);
        s.interval = Some(512);
        s.pattern = vec![0xaa, 0x55];
        let mut v = Verifier::new(&s, true);
        let mut b = vec![0u8; 4096];
        v.fill(&mut b, 1 << 20);
        assert_eq!(v.check(&b, 1 << 20), Ok(()));
        // The second interval's header carries its own offset.
        assert_eq!(&b[512..516], MAGIC);
        assert_eq!(
            u64::from_le_bytes(b[512 + 16..512 + 24].try_into().unwrap()),
            (1 << 20) + 512
        );
        // A flipped data byte fails meta only through the pattern; the interval named.
        let mut c = b.clone();
        c[3000] ^= 1;
        let e = v.check(&c, 1 << 20).unwrap_err();
        assert!(
            e.contains("interval at byte 2560") && e.contains("pattern"),
            "{e}"
        );
        // Without a pattern, meta does not sum the data but does its header.
        s.pattern.clear();
        let mut v = Verifier::new(&s, true);
        v.fill(&mut b, 0);
        let mut c = b.clone();
        c[3000] ^= 1;
        assert_eq!(v.check(&c, 0), Ok(()));
        c[512 + 24] ^= 1;
        assert!(v.check(&c, 0).unwrap_err().contains("meta mismatch"));
    }

    #[test]
    fn pattern_blocks() {
        let mut s = spec(VerifyKind::Pattern);
        s.pattern = vec![0xde, 0xad];
        let mut v = Verifier::new(&s, true);
        let mut b = vec![0u8; 512];
        v.fill(&mut b, 0);
        assert_eq!(&b[..4], &[0xde, 0xad, 0xde, 0xad]);
        assert_eq!(v.check(&b, 0), Ok(()));
        b[511] = 0;
        assert!(v.check(&b, 0).unwrap_err().contains("byte 511"));
    }

    #[test]
    fn backlog_batches_and_overlaps() {
        let mut s = spec(VerifyKind::Crc32c);
        s.backlog = Some(3);
        let mut v = Verifier::new(&s, true);
        v.written(0, 4096);
        v.written(4096, 4096);
        assert!(!v.busy());
        // Overlaps the first block: replaces it.
        v.written(2048, 4096);
        assert!(v.busy());
        let mut got = Vec::new();
        while let Some(b) = v.next_read() {
            got.push(b);
            v.read_back_done();
        }
        assert_eq!(got, vec![(2048, 4096)]);
        assert!(!v.start_final() || v.next_read().is_none());
    }
}
