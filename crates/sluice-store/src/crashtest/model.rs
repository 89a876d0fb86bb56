//! The model the recovered store is checked against: per file, its contents at the
//! last fsync that returned and every change since; per task, its names at the last
//! `sync` that returned and every namespace since.
//!
//! An operation is recorded *before* it is issued (its effects may reach the device
//! at any moment after), a durability mark when its fsync or sync is called, and the
//! mark takes effect when the call returns. What the recovered store may show:
//!
//! * a file's size is the size of one of its states since its mark (a commit, normal or
//!   f-transaction, holds the inode as some operation left it);
//! * each byte holds a value the byte had in one of those states — data written after
//!   the mark may or may not be there, data from before it must be — or zero where the
//!   byte was past the end of the file in one of them (a block's bytes past the end
//!   may be zeroed before the size that shows them commits, as ext4's ordered mode
//!   allows). Data from another file, or from before the mark and since overwritten,
//!   is never allowed (ordered mode: a block is written before the commit that makes it
//!   reachable);
//! * a task's names are exactly its namespace at some moment since its last `sync`
//!   returned, each name bound to a file that passes the two checks above.

use std::collections::{BTreeMap, BTreeSet};

/// A change to a file's contents.
#[derive(Clone, Debug)]
enum Change {
    Write { off: u64, data: Vec<u8> },
    SetLen(u64),
}

fn apply(v: &mut Vec<u8>, c: &Change) {
    match c {
        Change::Write { off, data } => {
            let (off, end) = (*off as usize, *off as usize + data.len());
            if v.len() < end {
                v.resize(end, 0);
            }
            v[off..end].copy_from_slice(data);
        }
        Change::SetLen(n) => v.resize(*n as usize, 0),
    }
}

/// One file's history since its durability mark.
#[derive(Clone, Debug, Default)]
pub(crate) struct FileModel {
    /// The contents at the mark.
    base: Vec<u8>,
    /// Changes since the mark.
    changes: Vec<Change>,
    /// The contents now.
    cur: Vec<u8>,
    /// A mark taken by an fsync not returned yet: (contents, changes it covers).
    pending: Option<(Vec<u8>, usize)>,
}

impl FileModel {
    pub(crate) fn len(&self) -> u64 {
        self.cur.len() as u64
    }

    pub(crate) fn write(&mut self, off: u64, data: &[u8]) {
        self.change(Change::Write {
            off,
            data: data.to_vec(),
        });
    }

    pub(crate) fn set_len(&mut self, len: u64) {
        self.change(Change::SetLen(len));
    }

    fn change(&mut self, c: Change) {
        apply(&mut self.cur, &c);
        self.changes.push(c);
    }

    /// An fsync (or fdatasync) is called.
    pub(crate) fn sync_called(&mut self) {
        self.pending = Some((self.cur.clone(), self.changes.len()));
    }

    /// It returned: the state at its call is durable.
    pub(crate) fn sync_returned(&mut self) {
        if let Some((base, n)) = self.pending.take() {
            self.base = base;
            self.changes.drain(..n);
        }
    }

    /// Whether `got` is what recovery may leave of this file (`Err`: why not).
    pub(crate) fn check(&self, got: &[u8]) -> Result<(), String> {
        let mut sizes = BTreeSet::from([self.base.len()]);
        let mut v = self.base.clone();
        let n = got.len();
        let mut ok: Vec<bool> = (0..n).map(|i| i < v.len() && v[i] == got[i]).collect();
        // The smallest size since the mark: bytes at or past it may read as zeros.
        let mut low = v.len();
        for c in &self.changes {
            let old = v.len();
            apply(&mut v, c);
            sizes.insert(v.len());
            low = low.min(v.len());
            let (from, to) = match c {
                Change::Write { off, data } => {
                    ((*off as usize).min(old), *off as usize + data.len())
                }
                Change::SetLen(len) => (old, *len as usize),
            };
            for i in from..to.min(n).min(v.len()) {
                ok[i] |= v[i] == got[i];
            }
        }
        if !sizes.contains(&n) {
            return Err(format!(
                "{n} bytes after recovery; since its last fsync returned it had {} \
                 (fsynced: {} bytes, {} changes since)",
                sizes
                    .iter()
                    .map(|s| s.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                self.base.len(),
                self.changes.len()
            ));
        }
        match (0..n).find(|&i| !(ok[i] || i >= low && got[i] == 0)) {
            None => Ok(()),
            Some(i) => Err(format!(
                "byte {i} is {:#04x}, a value it never had since its last fsync returned \
                 (fsynced: {}; {} bytes fsynced, {} changes since)",
                got[i],
                self.base
                    .get(i)
                    .map_or("past the end".into(), |b| format!("{b:#04x}")),
                self.base.len(),
                self.changes.len()
            )),
        }
    }
}

/// A task's namespace: name → file (an index into [`TaskModel::files`]).
pub(crate) type Names = BTreeMap<String, usize>;

/// What a task did, as the check needs it.
#[derive(Debug, Default)]
pub(crate) struct TaskModel {
    pub(crate) files: Vec<FileModel>,
    /// Its namespace now.
    pub(crate) names: Names,
    /// Its namespaces since its last `sync` returned (the first: at that call).
    snaps: Vec<Names>,
    pending_sync: Option<usize>,
    /// The main file's change counter at its last full fsync's call, once returned.
    pub(crate) main_change: u64,
    pending_change: Option<u64>,
    /// fsyncs, fdatasyncs and syncs that returned.
    pub(crate) syncs: u64,
}

impl TaskModel {
    /// A task whose main file `name` (file 0) exists, empty and durable.
    pub(crate) fn new(name: String) -> TaskModel {
        let names = Names::from([(name, 0)]);
        TaskModel {
            files: vec![FileModel::default()],
            snaps: vec![names.clone()],
            names,
            ..TaskModel::default()
        }
    }

    /// The namespace changed (record it before the call that changes it).
    pub(crate) fn renamed(&mut self) {
        self.snaps.push(self.names.clone());
    }

    pub(crate) fn ns_sync_called(&mut self) {
        self.pending_sync = Some(self.snaps.len() - 1);
    }

    pub(crate) fn ns_sync_returned(&mut self) {
        if let Some(k) = self.pending_sync.take() {
            self.snaps.drain(..k);
        }
        self.syncs += 1;
    }

    pub(crate) fn fsync_called(&mut self, file: usize, change: Option<u64>) {
        self.files[file].sync_called();
        self.pending_change = change;
    }

    pub(crate) fn fsync_returned(&mut self, file: usize) {
        self.files[file].sync_returned();
        if let Some(c) = self.pending_change.take() {
            self.main_change = self.main_change.max(c);
        }
        self.syncs += 1;
    }

    /// Whether `got` (this task's names after recovery, with their contents) is one of
    /// its namespaces since its last sync, each file as its model allows.
    pub(crate) fn check(&self, got: &BTreeMap<String, Vec<u8>>) -> Result<(), String> {
        let mut why = String::new();
        for names in self.snaps.iter().rev() {
            if !names.keys().eq(got.keys()) {
                continue;
            }
            let bad = names.iter().find_map(|(n, &f)| {
                self.files[f]
                    .check(&got[n])
                    .err()
                    .map(|e| format!("'{n}': {e}"))
            });
            match bad {
                None => return Ok(()),
                Some(e) => why = e,
            }
        }
        if why.is_empty() {
            why = format!(
                "names {:?} after recovery; since its last sync returned it had {}",
                got.keys().collect::<Vec<_>>(),
                self.snaps
                    .iter()
                    .map(|n| format!("{:?}", n.keys().collect::<Vec<_>>()))
                    .collect::<Vec<_>>()
                    .join(" or ")
            );
        }
        Err(why)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_check_allows_states_since_the_mark_and_nothing_else() {
        let mut m = FileModel::default();
        m.write(0, &[1; 10]);
        m.sync_called();
        m.sync_returned();
        m.write(5, &[2; 10]);
        m.set_len(8);
        assert!(m.check(&[1; 10]).is_ok());
        assert!(m.check(&[1, 1, 1, 1, 1, 2, 2, 2]).is_ok());
        // A mix of the two states, byte by byte (a torn write).
        let mut mix = vec![1u8; 15];
        mix[5..15].copy_from_slice(&[2, 1, 2, 1, 2, 2, 2, 2, 2, 2]);
        assert!(m.check(&mix).is_ok());
        // Lost fsynced data, a size it never had, a foreign byte.
        assert!(m.check(&[]).is_err());
        assert!(m.check(&[1; 9]).is_err());
        assert!(m.check(&[1, 1, 1, 1, 7, 1, 1, 1, 1, 1]).is_err());
        // Zeros where a byte was past the end in some state since (past 8).
        assert!(m.check(&[1, 1, 1, 1, 1, 1, 1, 1, 0, 0]).is_ok());
        assert!(m.check(&[1, 1, 1, 1, 1, 1, 1, 0, 0, 0]).is_err());
    }

    #[test]
    fn the_namespace_check_takes_one_moment_since_the_sync() {
        let mut t = TaskModel::new("f".into());
        t.files.push(FileModel::default());
        t.names.insert("s".into(), 1);
        t.renamed();
        t.ns_sync_called();
        t.ns_sync_returned();
        t.names.remove("s");
        t.names.insert("r".into(), 1);
        t.renamed();
        let got = |names: &[&str]| -> BTreeMap<String, Vec<u8>> {
            names.iter().map(|n| (n.to_string(), Vec::new())).collect()
        };
        assert!(t.check(&got(&["f", "s"])).is_ok());
        assert!(t.check(&got(&["f", "r"])).is_ok());
        assert!(t.check(&got(&["f"])).is_err());
        assert!(t.check(&got(&["f", "r", "s"])).is_err());
    }
}
