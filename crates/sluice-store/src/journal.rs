//! Journal records: the normal journal (jbd2-like: descriptor, metadata blocks, commit)
//! and FastResponse's f-transactions (ICS '22 §3.4, Fig. 11: a header with the journal
//! header, F_entries and block tags, the metadata blocks, a commit block). Pure
//! encoding and validation; the store does the I/O.

use crate::layout::{le32, le64, Inode, BLOCK, INODE_SIZE};

const JSB: &[u8; 8] = b"SLJSUPER";
const DESC: &[u8; 8] = b"SLJDESCR";
const COMMIT: &[u8; 8] = b"SLJCOMMT";
const FSB: &[u8; 8] = b"SLFSUPER";
const FHEAD: &[u8; 8] = b"SLFHEADR";
const FCOMMIT: &[u8; 8] = b"SLFCOMMT";

/// Block tags one descriptor holds (a tag: the home block number and the crc32c of
/// the logged block, as jbd2's v3 checksums).
pub const MAX_TAGS: usize = (BLOCK - 32) / TAG;

/// Bytes of a block tag.
const TAG: usize = 12;

/// A logged block's tag: its home block and the crc32c of its contents.
pub type Tag = (u64, u32);

/// The flag (bit 63 of the home block number) of a **data tag**: the crc32c of an
/// ordered data block the record makes reachable, written home beside the record —
/// no logged block follows it. Single-flush commits (see [`Claims`]) carry one per
/// write of each new block, so that recovery can tell whether the data reached the
/// device before the power went.
const DATA_TAG: u64 = 1 << 63;

/// What a record says was durable when it was written: the last normal transaction
/// (`id`) and the last f-transaction (`fseq`) whose FLUSH had completed. Written in
/// every commit record and in the journal superblock (a "seal").
///
/// **Single-flush commits** (`FEATURE_SINGLE_FLUSH`; as jbd2's `journal_async_commit`
/// with transaction checksums, and OptFS's (SOSP '13) checksums of the ordered data):
/// a transaction's data, journal blocks and commit record go out together and one
/// FLUSH follows, where the two-flush protocol FLUSHes before the commit record. A
/// crash may then leave an intact commit record with part of its body or data lost.
/// Recovery tells that from damage by these claims: a record whose id (sequence
/// number) some intact record or the superblock claims durable must be whole —
/// anything wrong in it is damage, reported; a record above every claim is
/// *tentative* — its fsync never returned if its body or one of its data blocks
/// differs from its checksums, and it is dropped with every record after it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Claims {
    /// The last normal transaction known durable.
    pub id: u64,
    /// The last f-transaction known durable (its sequence number).
    pub fseq: u64,
}

impl Claims {
    /// Whether `self` claims at least what `o` does.
    pub fn covers(&self, o: &Claims) -> bool {
        self.id >= o.id && self.fseq >= o.fseq
    }

    /// The larger of each.
    pub fn join(self, o: Claims) -> Claims {
        Claims {
            id: self.id.max(o.id),
            fseq: self.fseq.max(o.fseq),
        }
    }

    fn put(&self, b: &mut [u8], at: usize) {
        b[at..at + 8].copy_from_slice(&self.id.to_le_bytes());
        b[at + 8..at + 16].copy_from_slice(&self.fseq.to_le_bytes());
    }

    fn get(b: &[u8], at: usize) -> Claims {
        Claims {
            id: le64(b, at),
            fseq: le64(b, at + 8),
        }
    }
}

/// Split tags into the logged blocks' and the data tags (flag removed).
fn split_tags(tags: Vec<Tag>) -> (Vec<Tag>, Vec<Tag>) {
    let (data, logged): (Vec<Tag>, Vec<Tag>) = tags.into_iter().partition(|t| t.0 & DATA_TAG != 0);
    (
        logged,
        data.into_iter().map(|(h, c)| (h & !DATA_TAG, c)).collect(),
    )
}

/// Logged tags, then the data tags with their flag.
fn join_tags(logged: &[Tag], data: &[Tag]) -> Vec<Tag> {
    logged
        .iter()
        .copied()
        .chain(data.iter().map(|&(h, c)| (h | DATA_TAG, c)))
        .collect()
}

/// The crc32c a tag carries for a logged block.
pub fn block_crc(b: &[u8]) -> u32 {
    crc32c::crc32c(b)
}

fn put_tag(b: &mut [u8], at: usize, (home, crc): Tag) {
    b[at..at + 8].copy_from_slice(&home.to_le_bytes());
    b[at + 8..at + 12].copy_from_slice(&crc.to_le_bytes());
}

fn get_tag(b: &[u8], at: usize) -> Tag {
    (le64(b, at), le32(b, at + 8))
}

/// Bytes a device writes atomically (one sector): journal superblocks and commit
/// blocks keep their contents and checksum inside it, so a torn write leaves either the
/// old or the new record (as jbd2 relies on for its superblock and commit block).
const SECTOR: usize = 512;

fn seal_sector(b: &mut [u8]) {
    let crc = crc32c::crc32c(&b[..SECTOR - 4]);
    b[SECTOR - 4..SECTOR].copy_from_slice(&crc.to_le_bytes());
}

fn sealed_sector(b: &[u8], magic: &[u8; 8]) -> bool {
    &b[..8] == magic && crc32c::crc32c(&b[..SECTOR - 4]) == le32(b, SECTOR - 4)
}

fn seal(b: &mut [u8]) {
    let crc = crc32c::crc32c(&b[..BLOCK - 4]);
    b[BLOCK - 4..].copy_from_slice(&crc.to_le_bytes());
}

fn sealed(b: &[u8], magic: &[u8; 8]) -> bool {
    &b[..8] == magic && crc32c::crc32c(&b[..BLOCK - 4]) == le32(b, BLOCK - 4)
}

/// A journal superblock (normal or f-area): the first transaction id (normal) or the
/// first sequence number (f-area) that recovery accepts.
pub fn encode_super(f_area: bool, first: u64) -> Vec<u8> {
    let mut b = vec![0u8; BLOCK];
    b[..8].copy_from_slice(if f_area { FSB } else { JSB });
    b[8..16].copy_from_slice(&first.to_le_bytes());
    seal_sector(&mut b);
    b
}

/// The normal journal's superblock with what is known durable ([`Claims`]): written at
/// a checkpoint, and as a seal before a block a tentative record vouches for is
/// written again.
pub fn encode_jsuper(first: u64, claims: Claims) -> Vec<u8> {
    let mut b = encode_super(false, first);
    claims.put(&mut b, 24);
    seal_sector(&mut b);
    b
}

/// The claims of the normal journal's superblock (zero in one written without).
pub fn jsuper_claims(b: &[u8]) -> Option<Claims> {
    sealed_sector(b, JSB).then(|| Claims::get(b, 24))
}

/// Read a journal superblock.
pub fn decode_super(f_area: bool, b: &[u8]) -> Option<u64> {
    sealed_sector(b, if f_area { FSB } else { JSB }).then(|| le64(b, 8))
}

/// The f-area's superblock: the area is a circular log, and recovery starts at its
/// tail — the first f-transaction not yet covered by a normal commit, at block `tail`
/// of the area with sequence number `seq` (or where the next one will go).
pub fn encode_fsuper(seq: u64, tail: u64) -> Vec<u8> {
    let mut b = encode_super(true, seq);
    b[16..24].copy_from_slice(&tail.to_le_bytes());
    seal_sector(&mut b);
    b
}

/// Read the f-area's superblock: (sequence number, tail block; block 1 in a superblock
/// written before the tail was kept).
pub fn decode_fsuper(b: &[u8]) -> Option<(u64, u64)> {
    decode_super(true, b).map(|seq| (seq, le64(b, 16).max(1)))
}

/// A normal transaction's descriptor: its id, the tags of the blocks that follow it
/// (home block, crc32c of the contents), then data tags ([`Claims`]; a descriptor may
/// hold data tags only).
pub fn encode_descriptor(id: u64, logged: &[Tag], data: &[Tag]) -> Vec<u8> {
    let tags = join_tags(logged, data);
    assert!(tags.len() <= MAX_TAGS);
    let mut b = vec![0u8; BLOCK];
    b[..8].copy_from_slice(DESC);
    b[8..16].copy_from_slice(&id.to_le_bytes());
    b[16..20].copy_from_slice(&(tags.len() as u32).to_le_bytes());
    for (i, t) in tags.iter().enumerate() {
        put_tag(&mut b, 24 + TAG * i, *t);
    }
    seal(&mut b);
    b
}

/// A descriptor: its transaction, the tags of the logged blocks that follow it, and
/// its data tags.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Descriptor {
    /// The transaction.
    pub id: u64,
    /// Tags of the logged blocks that follow, in order.
    pub logged: Vec<Tag>,
    /// Data tags (home block, crc32c of one write of it).
    pub data: Vec<Tag>,
}

/// Read a descriptor. `None` if it is not one or its checksum is wrong.
pub fn decode_descriptor(b: &[u8]) -> Option<Descriptor> {
    let (id, tags) = decode_tags(b)?;
    let (logged, data) = split_tags(tags);
    Some(Descriptor { id, logged, data })
}

fn decode_tags(b: &[u8]) -> Option<(u64, Vec<Tag>)> {
    if !sealed(b, DESC) {
        return None;
    }
    let n = le32(b, 16) as usize;
    if n > MAX_TAGS {
        return None;
    }
    Some((
        le64(b, 8),
        (0..n).map(|i| get_tag(b, 24 + TAG * i)).collect(),
    ))
}

/// The checksum a commit block carries: over the descriptor (or header) and the blocks.
pub fn body_crc<'a>(blocks: impl IntoIterator<Item = &'a [u8]>) -> u32 {
    blocks.into_iter().fold(0u32, crc32c::crc32c_append)
}

/// A commit block (normal, or of an f-transaction with its sequence number), with
/// what was durable when it was written.
pub fn encode_commit(f_area: bool, id: u64, seq: u64, crc: u32, claims: Claims) -> Vec<u8> {
    let mut b = vec![0u8; BLOCK];
    b[..8].copy_from_slice(if f_area { FCOMMIT } else { COMMIT });
    b[8..16].copy_from_slice(&id.to_le_bytes());
    b[16..24].copy_from_slice(&seq.to_le_bytes());
    b[24..28].copy_from_slice(&crc.to_le_bytes());
    claims.put(&mut b, 28);
    seal_sector(&mut b);
    b
}

/// The claims of an intact commit record of either area (zero in one written without).
pub fn commit_claims(b: &[u8]) -> Option<Claims> {
    (sealed_sector(b, COMMIT) || sealed_sector(b, FCOMMIT)).then(|| Claims::get(b, 28))
}

/// The (id, seq) of a commit block whose record is intact (magic and checksum of its
/// sector), whatever its body checksum.
pub fn commit_of(f_area: bool, b: &[u8]) -> Option<(u64, u64)> {
    sealed_sector(b, if f_area { FCOMMIT } else { COMMIT }).then(|| (le64(b, 8), le64(b, 16)))
}

/// Whether `b` is the commit block of (id, seq) with body checksum `crc`.
pub fn check_commit(f_area: bool, b: &[u8], id: u64, seq: u64, crc: u32) -> bool {
    sealed_sector(b, if f_area { FCOMMIT } else { COMMIT })
        && le64(b, 8) == id
        && le64(b, 16) == seq
        && le32(b, 24) == crc
}

/// An f-transaction's header: the normal transaction it belongs to (`id`), its
/// sequence number in the f-area, its F_entries (inode number, inode) and the block
/// tags of the metadata blocks that follow (the files' map blocks changed since they
/// were last committed: indirect, double-indirect, indirect blocks under it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FHeader {
    /// The running normal transaction when it was committed.
    pub id: u64,
    /// Sequence number in the f-area.
    pub seq: u64,
    /// F_entries.
    pub entries: Vec<(u32, Inode)>,
    /// Tags of the metadata blocks that follow (home block, crc32c).
    pub tags: Vec<Tag>,
    /// Data tags: the file's new blocks written home with it ([`Claims`]).
    pub data: Vec<Tag>,
}

/// F_entries one header holds (with no tags).
pub const MAX_FENTRIES: usize = 24;

/// Block tags an f-transaction header holds beside `entries` F_entries (the header's
/// fields, the entries and the block's crc32c take the rest): 327 beside one entry,
/// 74 beside [`MAX_FENTRIES`].
pub const fn max_ftags(entries: usize) -> usize {
    (BLOCK - 4 - 32 - entries * (4 + INODE_SIZE)) / TAG
}

impl FHeader {
    /// The header block.
    pub fn encode(&self) -> Vec<u8> {
        assert!(
            self.entries.len() <= MAX_FENTRIES
                && self.tags.len() + self.data.len() <= max_ftags(self.entries.len())
        );
        let tags = join_tags(&self.tags, &self.data);
        let mut b = vec![0u8; BLOCK];
        b[..8].copy_from_slice(FHEAD);
        b[8..16].copy_from_slice(&self.id.to_le_bytes());
        b[16..24].copy_from_slice(&self.seq.to_le_bytes());
        b[24..28].copy_from_slice(&(self.entries.len() as u32).to_le_bytes());
        b[28..32].copy_from_slice(&(tags.len() as u32).to_le_bytes());
        let mut at = 32;
        for (ino, inode) in &self.entries {
            b[at..at + 4].copy_from_slice(&ino.to_le_bytes());
            inode.encode(&mut b[at + 4..at + 4 + INODE_SIZE]);
            at += 4 + INODE_SIZE;
        }
        for t in &tags {
            put_tag(&mut b, at, *t);
            at += TAG;
        }
        seal(&mut b);
        b
    }

    /// Read a header block.
    pub fn decode(b: &[u8]) -> Option<FHeader> {
        if !sealed(b, FHEAD) {
            return None;
        }
        let (ne, nt) = (le32(b, 24) as usize, le32(b, 28) as usize);
        if ne > MAX_FENTRIES || nt > max_ftags(ne) {
            return None;
        }
        let mut at = 32;
        let mut entries = Vec::with_capacity(ne);
        for _ in 0..ne {
            entries.push((le32(b, at), Inode::decode(&b[at + 4..at + 4 + INODE_SIZE])));
            at += 4 + INODE_SIZE;
        }
        let (tags, data) = split_tags((0..nt).map(|i| get_tag(b, at + TAG * i)).collect());
        Some(FHeader {
            id: le64(b, 8),
            seq: le64(b, 16),
            entries,
            tags,
            data,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_torn_ones_are_refused() {
        let d = encode_descriptor(7, &[(100, 1), (200, 2)], &[(300, 3), (300, 4)]);
        assert_eq!(
            decode_descriptor(&d),
            Some(Descriptor {
                id: 7,
                logged: vec![(100, 1), (200, 2)],
                data: vec![(300, 3), (300, 4)],
            })
        );
        let mut torn = d.clone();
        torn[30] ^= 1;
        assert_eq!(decode_descriptor(&torn), None);
        let crc = body_crc([&d[..], &[1u8; BLOCK][..]]);
        let claims = Claims { id: 6, fseq: 11 };
        let c = encode_commit(false, 7, 0, crc, claims);
        assert!(check_commit(false, &c, 7, 0, crc));
        assert_eq!(commit_claims(&c), Some(claims));
        let js = encode_jsuper(5, claims);
        assert_eq!(
            (decode_super(false, &js), jsuper_claims(&js)),
            (Some(5), Some(claims))
        );
        assert!(!check_commit(false, &c, 8, 0, crc));
        assert!(!check_commit(true, &c, 7, 0, crc));
        assert_eq!(commit_of(false, &c), Some((7, 0)));
        assert_eq!(commit_of(true, &c), None);
        let h = FHeader {
            id: 3,
            seq: 9,
            entries: vec![(
                5,
                Inode {
                    used: true,
                    size: 12345,
                    indirect: 77,
                    ..Inode::default()
                },
            )],
            tags: vec![(77, 0xdead_beef)],
            data: vec![(900, 1)],
        };
        assert_eq!(FHeader::decode(&h.encode()), Some(h.clone()));
        // One file's header holds 327 tags (a large file's changed map blocks).
        assert_eq!((max_ftags(1), max_ftags(MAX_FENTRIES)), (327, 74));
        let big = FHeader {
            tags: (0..300).map(|i| (1000 + i, i as u32)).collect(),
            data: (0..27).map(|i| (5000 + i, i as u32)).collect(),
            ..h.clone()
        };
        assert_eq!(FHeader::decode(&big.encode()), Some(big));
        assert_eq!(decode_super(true, &encode_super(true, 4)), Some(4));
        assert_eq!(decode_super(false, &encode_super(true, 4)), None);
    }
}
