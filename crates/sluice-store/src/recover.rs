//! Recovery (FastResponse ICS '22 §3.4, "Crash recovery"): scan the normal journal and
//! take every transaction with a valid commit block, in order, noting the largest id
//! (Max_ID); then scan the f-area and take every f-transaction whose id is above
//! Max_ID, in order. The store redoes them and rebuilds the bitmap from the inodes.

use std::collections::BTreeMap;

use crate::journal::{self, FHeader};
use crate::layout::Geometry;
use crate::store::Dev;

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
}

pub(crate) async fn scan(dev: &Dev, g: &Geometry) -> std::io::Result<Found> {
    let mut found = Found::default();
    let js = g.journal_start();
    let first = journal::decode_super(false, &dev.read(js).await?)
        .ok_or_else(|| std::io::Error::other("the journal superblock is damaged"))?;
    found.max_id = first - 1;
    let mut p = 1;
    'txn: loop {
        let id = found.max_id + 1;
        let mut pending: Vec<(u64, Vec<u8>)> = Vec::new();
        let mut crc_parts: Vec<Vec<u8>> = Vec::new();
        let mut q = p;
        loop {
            if q >= g.journal {
                break 'txn;
            }
            let b = dev.read(js + q).await?;
            if let Some((did, tags)) = journal::decode_descriptor(&b) {
                if did != id || q + 1 + tags.len() as u64 >= g.journal {
                    break 'txn;
                }
                crc_parts.push(b);
                for (i, t) in tags.iter().enumerate() {
                    let blk = dev.read(js + q + 1 + i as u64).await?;
                    crc_parts.push(blk.clone());
                    pending.push((*t, blk));
                }
                q += 1 + tags.len() as u64;
                continue;
            }
            let crc = journal::body_crc(crc_parts.iter().map(|v| &v[..]));
            if crc_parts.is_empty() || !journal::check_commit(false, &b, id, 0, crc) {
                break 'txn;
            }
            for (t, blk) in pending {
                found.blocks.insert(t, blk);
            }
            found.max_id = id;
            found.redone += 1;
            p = q + 1;
            break;
        }
    }
    let fs = g.fjournal_start();
    let mut seq = journal::decode_super(true, &dev.read(fs).await?)
        .ok_or_else(|| std::io::Error::other("the f-journal superblock is damaged"))?;
    let mut p = 1;
    while p + 1 < g.fjournal {
        let hb = dev.read(fs + p).await?;
        let Some(h) = FHeader::decode(&hb) else { break };
        let n = h.tags.len() as u64;
        if h.seq != seq || p + n + 1 >= g.fjournal {
            break;
        }
        let mut blocks = Vec::with_capacity(h.tags.len());
        for i in 0..n {
            blocks.push(dev.read(fs + p + 1 + i).await?);
        }
        let crc = journal::body_crc(std::iter::once(&hb[..]).chain(blocks.iter().map(|b| &b[..])));
        let cb = dev.read(fs + p + 1 + n).await?;
        if !journal::check_commit(true, &cb, h.id, h.seq, crc) {
            break;
        }
        p += n + 2;
        seq += 1;
        if h.id > found.max_id {
            found.ftxns.push((h, blocks));
        }
    }
    found.next_seq = seq;
    Ok(found)
}
