//! The directory: creating, opening, removing and renaming files.

use std::collections::BTreeSet;

use super::{Store, StoreError, StoreFile};
use crate::layout::{Inode, MAX_NAME};

impl Store {
    /// Create an empty file `name`.
    pub fn create(&self, name: &str) -> Result<StoreFile, StoreError> {
        if name.is_empty() || name.len() > MAX_NAME || name.contains(['/', '\0']) {
            return Err(StoreError::BadName(name.into()));
        }
        let mut st = self.st.borrow_mut();
        if st.names.contains_key(name) {
            return Err(StoreError::Exists(name.into()));
        }
        let ino = (1..=st.g.inodes)
            .find(|&i| !st.inode_used[i as usize - 1])
            .ok_or(StoreError::NoSpace("inodes"))?;
        let used_slots: BTreeSet<u32> = st.names.values().map(|v| v.1).collect();
        let slot = (0..st.g.inodes)
            .find(|s| !used_slots.contains(s))
            .ok_or(StoreError::NoSpace("directory"))?;
        st.inode_used[ino as usize - 1] = true;
        st.set_inode(
            ino,
            &Inode {
                used: true,
                ..Inode::default()
            },
        );
        st.set_dirent(slot, ino, name);
        st.names.insert(name.into(), (ino, slot));
        Ok(StoreFile { ino })
    }

    /// Open file `name`.
    pub fn open(&self, name: &str) -> Result<StoreFile, StoreError> {
        let st = self.st.borrow();
        let &(ino, _) = st
            .names
            .get(name)
            .ok_or_else(|| StoreError::NotFound(name.into()))?;
        Ok(StoreFile { ino })
    }

    /// A file's length in bytes.
    pub fn len(&self, f: StoreFile) -> u64 {
        self.st.borrow().inode(f.ino).size
    }

    /// Remove file `name` (its blocks and inode are reused once the removal commits).
    pub fn unlink(&self, name: &str) -> Result<(), StoreError> {
        let mut st = self.st.borrow_mut();
        let (ino, slot) = st
            .names
            .remove(name)
            .ok_or_else(|| StoreError::NotFound(name.into()))?;
        let mut inode = st.inode(ino);
        st.unmap_from(ino, &mut inode, 0);
        // Buffered data of the file is dropped: its blocks are free.
        st.drop_buffered(ino, 0);
        st.running.frees.inodes.push(ino);
        st.set_inode(ino, &Inode::default());
        st.set_dirent(slot, 0, "");
        Ok(())
    }

    /// Rename `from` to `to` (replacing `to` if it exists).
    pub fn rename(&self, from: &str, to: &str) -> Result<(), StoreError> {
        if to.is_empty() || to.len() > MAX_NAME || to.contains(['/', '\0']) {
            return Err(StoreError::BadName(to.into()));
        }
        if !self.st.borrow().names.contains_key(from) {
            return Err(StoreError::NotFound(from.into()));
        }
        if from == to {
            return Ok(());
        }
        if self.st.borrow().names.contains_key(to) {
            self.unlink(to)?;
        }
        let mut st = self.st.borrow_mut();
        let (ino, slot) = st.names.remove(from).expect("checked");
        st.set_dirent(slot, ino, to);
        st.names.insert(to.into(), (ino, slot));
        Ok(())
    }
}
