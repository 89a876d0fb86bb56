//! Reading a store without changing it (`sluice fsck`): what a mount would recover and
//! find, and the structure's problems — the same checks as [`Store::check`], on the
//! state recovery leaves in memory. Nothing is written, so the file may be opened
//! read-only (the runtime opens a file it did not create so).

use std::collections::BTreeMap;

use sluice_runtime::File;

use super::{Dev, State, Store, StoreError};
use crate::layout::Geometry;

/// What [`Store::inspect`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inspection {
    /// The geometry the superblock records.
    pub geometry: Geometry,
    /// The files, by name, with their sizes.
    pub files: Vec<(String, u64)>,
    /// Files in more than one run of blocks (`FileStat::extents`; e2fsck's
    /// "non-contiguous").
    pub non_contiguous: usize,
    /// Free blocks of the data area.
    pub free_blocks: u64,
    /// Normal transactions recovery would redo.
    pub redone: u64,
    /// f-transactions recovery would redo after them.
    pub fredone: u64,
    /// Last records the crash cut (single-flush commits: an intact commit record whose
    /// body or data did not land) a mount would drop: their fsyncs never returned.
    pub cut: u64,
    /// Inodes without a name (their creation never committed) a mount would free.
    pub orphans: u64,
    /// Metadata blocks a mount would write home (recovered, or changed by freeing
    /// orphans and rebuilding the bitmap).
    pub to_write: usize,
    /// The structure's problems (none: consistent), as [`Store::check`] gives them.
    pub problems: Vec<String>,
}

impl Store {
    /// Inspect the store on `file` without changing it: recover in memory (metadata
    /// checksums included: a damaged record is an error, as at mount) and check the
    /// result.
    pub async fn inspect(file: &File) -> Result<Inspection, StoreError> {
        let loaded = Store::load(&Dev { file: *file }).await?;
        let st = &loaded.st;
        let changed = st
            .running
            .dirty
            .iter()
            .filter(|b| !loaded.home.iter().any(|(h, _)| h == *b));
        Ok(Inspection {
            geometry: st.g,
            files: st.files(),
            non_contiguous: st
                .names
                .values()
                .filter(|(ino, _)| st.extents(&st.inode(*ino)) > 1)
                .count(),
            free_blocks: st.free_blocks(),
            redone: st.stats.redone,
            fredone: st.stats.fredone,
            cut: st.stats.discarded,
            orphans: st.stats.orphans,
            to_write: loaded.home.len() + changed.count(),
            problems: st.problems(),
        })
    }
}

impl State {
    /// The files, by name, with their sizes.
    pub(super) fn files(&self) -> Vec<(String, u64)> {
        self.names
            .iter()
            .map(|(n, (ino, _))| (n.clone(), self.inode(*ino).size))
            .collect()
    }

    /// Free blocks of the data area (blocks freed by a transaction not yet committed
    /// count as used: they are reused after the commit).
    pub(super) fn free_blocks(&self) -> u64 {
        let data = self.g.data_start() as usize..self.g.blocks as usize;
        self.used[data].iter().filter(|u| !**u).count() as u64
    }

    /// Every used inode's blocks in the data area, owned once and marked in the
    /// bitmap; no other data block marked; names point at used inodes.
    pub(super) fn problems(&self) -> Vec<String> {
        let g = self.g;
        let mut problems = Vec::new();
        let mut owner: BTreeMap<u64, u32> = BTreeMap::new();
        for ino in 1..=g.inodes {
            let i = self.inode(ino);
            if !i.used {
                continue;
            }
            for b in self.blocks_of(&i) {
                if b < g.data_start() || b >= g.blocks {
                    problems.push(format!("inode {ino}: block {b} outside the data area"));
                } else if let Some(o) = owner.insert(b, ino) {
                    problems.push(format!("block {b} owned by inodes {o} and {ino}"));
                }
            }
        }
        for b in g.data_start()..g.blocks {
            if self.bit(b) != owner.contains_key(&b) {
                problems.push(format!("bitmap bit of block {b} is {}", self.bit(b)));
            }
        }
        for (name, (ino, _)) in &self.names {
            if !self.inode(*ino).used {
                problems.push(format!("'{name}' names unused inode {ino}"));
            }
        }
        problems
    }
}
