//! Recovery (FastResponse ICS '22 §3.4, "Crash recovery"): scan the normal journal and
//! take every transaction with a valid commit block, in order, noting the largest id
//! (Max_ID); then scan the f-area and take every f-transaction whose id is above
//! Max_ID, in order. The store redoes them and rebuilds the bitmap from the inodes.
//!
//! **Torn tail or damage.** A scan stops at the first record that is not the next one
//! (a transaction never committed: the crash came before its commit block). A record
//! that some intact record claims durable ([`journal::Claims`]: every commit record and
//! the journal superblock say which transactions had their FLUSH complete when they
//! were written) must be whole: if its descriptor (or f-header), a logged block or the
//! body checksum the commit carries fails its crc32c, or a commit record for the
//! expected id lies further on while the chain broke before it, the journal is damaged
//! — recovery reports it ([`StoreError::JournalCorrupt`]) and replays nothing, rather
//! than skip a committed transaction and every one after it. Ids and sequence numbers
//! only grow (a reclaimed journal starts above every id it held), so a stale commit
//! record never carries the expected one.
//!
//! **Tentative records** (single-flush commits, `FEATURE_SINGLE_FLUSH`). The last
//! record of an area may be above every claim: its data, journal blocks and commit
//! record went out together before one FLUSH, so a crash can leave its commit record
//! intact and part of the rest lost. It is taken only if its body matches its
//! checksums *and* each of its data tags' blocks holds one of the contents the tags
//! name (else a file would show data it was never written: ordered mode); otherwise its
//! fsync never returned, and it is dropped, with the count in [`Found::discarded`].
//! Only a tentative record's data is checked: a claimed one's data was durable, and may
//! since have been written again. Images without the feature claim every record.

use std::collections::BTreeMap;

use crate::journal::{self, Claims, FHeader, Tag};
use crate::layout::{Geometry, BLOCK};
use crate::store::{runs, Dev, StoreError};

/// Transaction ids and f-area sequence numbers stay below this (2^62): they grow by
/// one per commit from 1, and recovery adds to the largest it finds; a superblock or
/// record naming one at or above it is damage.
const MAX_ID: u64 = 1 << 62;

/// What the journals hold.
#[derive(Debug, Default)]
pub(crate) struct Found {
    /// Home block → contents, the latest committed normal transaction's version.
    pub blocks: BTreeMap<u64, Vec<u8>>,
    /// The last committed normal transaction (Max_ID).
    pub max_id: u64,
    /// Valid f-transactions with id > Max_ID, in order, with their metadata blocks.
    pub ftxns: Vec<(FHeader, Vec<Vec<u8>>)>,
    /// The next f-area sequence number.
    pub next_seq: u64,
    /// Normal transactions redone.
    pub redone: u64,
    /// Tentative records dropped: intact commit records whose body or data a crash
    /// cut (their fsyncs never returned).
    pub discarded: u64,
}

/// One journal area, read whole.
struct Area<'a> {
    name: &'static str,
    f_area: bool,
    /// Its first block on the device.
    start: u64,
    bytes: &'a [u8],
}

impl Area<'_> {
    fn len(&self) -> u64 {
        (self.bytes.len() / BLOCK) as u64
    }

    fn block(&self, i: u64) -> &[u8] {
        &self.bytes[i as usize * BLOCK..(i as usize + 1) * BLOCK]
    }

    /// The first intact record in blocks `from..` that proves the record `key` (id, or
    /// sequence number in the f-area) committed: its commit record, or any record of a
    /// later one (the next transaction starts only after the commit record of the one
    /// before it completed).
    ///
    /// The f-area is a circular log: a later record may sit before `from` (the log
    /// wrapped), so the whole area is searched for a commit record of `key` or later,
    /// or a header of a later f-transaction (its own header proves nothing) — the
    /// blocks past the log's head hold older records only, which prove nothing either.
    fn later_record(&self, from: u64, key: u64) -> Option<u64> {
        if self.f_area {
            return (1..self.len()).find(|&i| {
                let b = self.block(i);
                journal::commit_of(true, b).is_some_and(|c| c.1 >= key)
                    || FHeader::decode(b).is_some_and(|h| h.seq > key)
            });
        }
        (from..self.len()).find(|&i| {
            let b = self.block(i);
            journal::commit_of(false, b)
                .map(|c| c.0)
                .or_else(|| journal::decode_descriptor(b).map(|d| d.id))
                .is_some_and(|k| k >= key)
        })
    }

    fn corrupt(&self, block: u64, what: String) -> StoreError {
        StoreError::JournalCorrupt(format!(
            "{} block {} (device block {}): {what}; nothing was replayed",
            self.name,
            block,
            self.start + block
        ))
    }

    /// A record's tags send blocks home into the store's own areas only: a logged block
    /// into the inode table, the directory, the bitmap or the data area (map blocks,
    /// data logged inline), a data tag into the data area — never onto the superblock
    /// or a journal, nor past the end. A record whose checksums hold and whose tags do
    /// not was not written by a store (e2fsck's "the journal is checked before it is
    /// replayed"): damage, and nothing is replayed.
    fn check_homes(
        &self,
        g: &Geometry,
        at: u64,
        txn: &str,
        logged: &[Tag],
        data: &[Tag],
    ) -> Result<(), StoreError> {
        let (meta, end) = (g.itable_start(), g.blocks);
        if let Some((h, _)) = logged.iter().find(|(h, _)| !(meta..end).contains(h)) {
            return Err(self.corrupt(
                at,
                format!(
                    "{txn} logs a copy of block {h}, outside the metadata and data areas \
                     ({meta}..{end}): replayed, it would be written there"
                ),
            ));
        }
        let start = g.data_start();
        if let Some((h, _)) = data.iter().find(|(h, _)| !(start..end).contains(h)) {
            return Err(self.corrupt(
                at,
                format!(
                    "{txn} has a data tag for block {h}, outside the data area ({start}..{end})"
                ),
            ));
        }
        Ok(())
    }

    /// The logged blocks after a descriptor or header at `at` with `tags`, each checked
    /// against its tag's crc32c.
    fn logged(&self, at: u64, tags: &[Tag], txn: &str) -> Result<Vec<Vec<u8>>, StoreError> {
        let mut out = Vec::with_capacity(tags.len());
        for (i, (home, crc)) in tags.iter().enumerate() {
            let b = self.block(at + 1 + i as u64);
            if journal::block_crc(b) != *crc {
                return Err(self.corrupt(
                    at + 1 + i as u64,
                    format!("{txn}'s copy of block {home} fails its crc32c"),
                ));
            }
            out.push(b.to_vec());
        }
        Ok(out)
    }

    /// The record at `at` is not the next one (`what` it is): the end of the journal,
    /// unless a record from `at` on proves that `key` committed.
    fn end_or_damage(&self, at: u64, key: u64, txn: &str, what: &str) -> Result<(), StoreError> {
        match self.later_record(at, key) {
            Some(c) => Err(self.corrupt(
                at,
                format!("{what}, but {txn} committed (block {c} holds a record of it or after it)"),
            )),
            None => Ok(()),
        }
    }
}

/// What every intact record of both areas and the journal superblock claim durable
/// (everything, on an image without single-flush commits: each record is then whole
/// once its commit record is).
fn claims_of(g: &Geometry, j: &Area, fa: &Area) -> Claims {
    if !g.single_flush {
        return Claims {
            id: u64::MAX,
            fseq: u64::MAX,
        };
    }
    let sb = journal::jsuper_claims(j.block(0)).unwrap_or_default();
    (1..j.len())
        .map(|i| j.block(i))
        .chain((1..fa.len()).map(|i| fa.block(i)))
        .filter_map(journal::commit_claims)
        .fold(sb, Claims::join)
}

/// Whether each data tag's block holds one of the contents its tags name (a block
/// written more than once has a tag per write). Consecutive blocks are read together:
/// a large commit's data (a bulk writer's megabytes) is mostly runs.
async fn data_intact(dev: &Dev, tags: &[Tag]) -> Result<bool, StoreError> {
    let mut want: BTreeMap<u64, Vec<u32>> = BTreeMap::new();
    for &(home, crc) in tags {
        want.entry(home).or_default().push(crc);
    }
    let want: Vec<(u64, Vec<u32>)> = want.into_iter().collect();
    for r in runs(&want) {
        let bytes = dev.read_blocks(want[r.start].0, r.len() as u64).await?;
        for (k, (_, crcs)) in want[r].iter().enumerate() {
            if !crcs.contains(&journal::block_crc(&bytes[k * BLOCK..(k + 1) * BLOCK])) {
                return Ok(false);
            }
        }
    }
    Ok(true)
}

pub(crate) async fn scan(dev: &Dev, g: &Geometry) -> Result<Found, StoreError> {
    let mut found = Found::default();
    let jbytes = dev.read_blocks(g.journal_start(), g.journal).await?;
    let j = Area {
        name: "normal journal",
        f_area: false,
        start: g.journal_start(),
        bytes: &jbytes,
    };
    let fbytes = dev.read_blocks(g.fjournal_start(), g.fjournal).await?;
    let fa = Area {
        name: "f-journal",
        f_area: true,
        start: g.fjournal_start(),
        bytes: &fbytes,
    };
    let claims = claims_of(g, &j, &fa);
    let first = journal::decode_super(false, j.block(0))
        .ok_or_else(|| j.corrupt(0, "the journal superblock fails its crc32c".into()))?;
    if !(1..MAX_ID).contains(&first) {
        return Err(j.corrupt(
            0,
            format!("the journal superblock's first transaction id {first} is out of range (1..{MAX_ID})"),
        ));
    }
    found.max_id = first - 1;
    let mut p = 1;
    'txn: loop {
        let id = found.max_id + 1;
        let strict = id <= claims.id;
        // A tentative transaction ends the scan where a claimed one is damage; a
        // record of it further on says the crash cut it (counted).
        let end = |at: u64, what: &str| match strict {
            true => j
                .end_or_damage(at, id, &format!("transaction {id}"), what)
                .map(|()| 0),
            false => Ok(u64::from(j.later_record(at, id).is_some())),
        };
        let txn = format!("transaction {id}");
        // The descriptors read so far: (position, logged tags), and the data tags.
        let mut descs: Vec<(u64, Vec<Tag>)> = Vec::new();
        let mut data: Vec<Tag> = Vec::new();
        let mut crc_parts: Vec<&[u8]> = Vec::new();
        let mut q = p;
        loop {
            if q >= j.len() {
                break 'txn;
            }
            let b = j.block(q);
            match journal::decode_descriptor(b) {
                Some(d) if d.id == id => {
                    j.check_homes(g, q, &txn, &d.logged, &d.data)?;
                    let n = d.logged.len() as u64;
                    if q + 1 + n >= j.len() {
                        found.discarded += end(q, "a descriptor overruns the journal")?;
                        break 'txn;
                    }
                    crc_parts.push(b);
                    for i in 0..n {
                        crc_parts.push(j.block(q + 1 + i));
                    }
                    descs.push((q, d.logged));
                    data.extend(d.data);
                    q += 1 + n;
                    continue;
                }
                Some(_) => {
                    found.discarded += end(q, "a stale descriptor")?;
                    break 'txn;
                }
                None => {}
            }
            if crc_parts.is_empty() {
                // No descriptor of `id` here: the end, or a damaged descriptor.
                found.discarded += end(q, "no valid descriptor")?;
                break 'txn;
            }
            let crc = journal::body_crc(crc_parts.iter().copied());
            if !journal::check_commit(false, b, id, 0, crc) {
                if journal::commit_of(false, b).is_some_and(|(cid, _)| cid == id) {
                    if !strict {
                        // Its commit record landed, part of its body did not.
                        found.discarded += 1;
                        break 'txn;
                    }
                    // Committed, yet its body differs: name the damaged block if a
                    // tag tells which.
                    for (at, tags) in &descs {
                        j.logged(*at, tags, &txn)?;
                    }
                    return Err(j.corrupt(
                        q,
                        format!("{txn}'s commit record does not match its body's crc32c"),
                    ));
                }
                found.discarded += end(q, "no commit record after the logged blocks")?;
                break 'txn;
            }
            if !strict && !data_intact(dev, &data).await? {
                // Its journal blocks landed, some of its data did not.
                found.discarded += 1;
                break 'txn;
            }
            for (at, tags) in &descs {
                let blocks = j.logged(*at, tags, &txn)?;
                for ((home, _), blk) in tags.iter().zip(blocks) {
                    found.blocks.insert(*home, blk);
                }
            }
            found.max_id = id;
            found.redone += 1;
            p = q + 1;
            break;
        }
    }
    let (mut seq, tail) = journal::decode_fsuper(fa.block(0))
        .ok_or_else(|| fa.corrupt(0, "the f-journal superblock fails its crc32c".into()))?;
    if !(1..MAX_ID).contains(&seq) {
        return Err(fa.corrupt(
            0,
            format!("the f-journal superblock's first sequence number {seq} is out of range (1..{MAX_ID})"),
        ));
    }
    // A circular log from its tail: an f-transaction that did not fit before the
    // area's end went to block 1 (the writer never overwrites a record a normal commit
    // has not covered), so where the next header is missing, block 1 may hold it.
    let header = |p: u64, seq: u64| FHeader::decode(fa.block(p)).filter(|h| h.seq == seq);
    let mut p = tail.min(fa.len().saturating_sub(1)).max(1);
    let mut walked = 0;
    while walked < fa.len() {
        if p + 1 >= fa.len() {
            // No room for a record here: the next one, if any, wrapped to block 1.
            if p > 1 && header(1, seq).is_some() {
                walked += fa.len() - p;
                p = 1;
                continue;
            }
            break;
        }
        let strict = seq <= claims.fseq;
        let txn = format!("f-transaction {seq}");
        let end = |at: u64, what: &str| match strict {
            true => fa.end_or_damage(at, seq, &txn, what).map(|()| 0),
            false => Ok(u64::from(fa.later_record(at, seq).is_some())),
        };
        let h = match header(p, seq) {
            Some(h) => h,
            None if p > 1 && header(1, seq).is_some() => {
                walked += fa.len() - p;
                p = 1;
                continue;
            }
            None => {
                found.discarded += end(p, "no valid header")?;
                break;
            }
        };
        fa.check_homes(g, p, &txn, &h.tags, &h.data)?;
        if h.id >= MAX_ID {
            return Err(fa.corrupt(
                p,
                format!(
                    "{txn} belongs to transaction {}, out of range (below {MAX_ID})",
                    h.id
                ),
            ));
        }
        if let Some((ino, _)) = h.entries.iter().find(|(i, _)| !(1..=g.inodes).contains(i)) {
            return Err(fa.corrupt(
                p,
                format!(
                    "{txn} logs inode {ino}, outside the store's inodes 1..={}",
                    g.inodes
                ),
            ));
        }
        let hb = fa.block(p);
        let n = h.tags.len() as u64;
        if p + n + 1 >= fa.len() {
            found.discarded += end(p, "a header overruns the area")?;
            break;
        }
        let crc = journal::body_crc(std::iter::once(hb).chain((0..n).map(|i| fa.block(p + 1 + i))));
        let cb = fa.block(p + 1 + n);
        if !journal::check_commit(true, cb, h.id, h.seq, crc) {
            if journal::commit_of(true, cb).is_some_and(|(_, s)| s == seq) {
                if !strict {
                    found.discarded += 1;
                    break;
                }
                // Which part is damaged, if a logged block's tag says so.
                fa.logged(p, &h.tags, &txn)?;
                return Err(fa.corrupt(
                    p + 1 + n,
                    format!("{txn}'s commit record does not match its body's crc32c"),
                ));
            }
            found.discarded += end(p + 1 + n, "no commit record after the logged blocks")?;
            break;
        }
        if !strict && !data_intact(dev, &h.data).await? {
            found.discarded += 1;
            break;
        }
        let blocks = fa.logged(p, &h.tags, &txn)?;
        p += n + 2;
        walked += n + 2;
        seq += 1;
        if h.id > found.max_id {
            found.ftxns.push((h, blocks));
        }
    }
    found.next_seq = seq;
    Ok(found)
}
