//! The directory: creating, opening, removing and renaming files.

use std::collections::BTreeSet;

use super::{State, Store, StoreError, StoreFile};
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
        Ok(st.new_open(ino))
    }

    /// Open file `name`. Close the handle with [`Store::close`] when done with it.
    pub fn open(&self, name: &str) -> Result<StoreFile, StoreError> {
        let mut st = self.st.borrow_mut();
        let &(ino, _) = st
            .names
            .get(name)
            .ok_or_else(|| StoreError::NotFound(name.into()))?;
        Ok(st.new_open(ino))
    }

    /// Close `f`. The last close of a file removed while open frees it (its blocks and
    /// inode are reused once that change commits). A handle already closed is refused.
    pub fn close(&self, f: StoreFile) -> Result<(), StoreError> {
        self.st.borrow_mut().close(f)
    }

    /// [`Store::close`] from a destructor: nothing if the store's state is borrowed (a
    /// panic unwinding through a store call; the next mount frees a file removed while
    /// open), so a drop never panics.
    pub(crate) fn close_quietly(&self, f: StoreFile) {
        if let Ok(mut st) = self.st.try_borrow_mut() {
            let _ = st.close(f);
        }
    }

    /// A file's length in bytes.
    pub fn len(&self, f: StoreFile) -> Result<u64, StoreError> {
        let st = self.st.borrow();
        st.live(f)?;
        Ok(st.inode(f.ino).size)
    }

    /// Remove file `name`. A file nobody has open goes with its name (its blocks and
    /// inode are reused once the removal commits); an open one stays readable and
    /// writable through its handles, without a name, until its last [`Store::close`],
    /// as POSIX's `unlink` of an open file (a crash before that close: the next mount
    /// frees it, as every used inode without a name, ext4's orphan list).
    pub fn unlink(&self, name: &str) -> Result<(), StoreError> {
        let mut st = self.st.borrow_mut();
        let (ino, slot) = st
            .names
            .remove(name)
            .ok_or_else(|| StoreError::NotFound(name.into()))?;
        st.set_dirent(slot, 0, "");
        if st.ino_opens.contains_key(&ino) {
            st.unlinked.insert(ino);
        } else {
            st.free_inode(ino);
        }
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

impl State {
    /// A new open of inode `ino`.
    fn new_open(&mut self, ino: u32) -> StoreFile {
        let open = self.next_open;
        self.next_open += 1;
        self.opens.insert(open, ino);
        *self.ino_opens.entry(ino).or_default() += 1;
        StoreFile { ino, open }
    }

    /// End the open `f`; its last close frees a file removed while open.
    fn close(&mut self, f: StoreFile) -> Result<(), StoreError> {
        self.live(f)?;
        self.opens.remove(&f.open);
        let n = self.ino_opens.get_mut(&f.ino).expect("counted at open");
        *n -= 1;
        if *n == 0 {
            self.ino_opens.remove(&f.ino);
            if self.unlinked.remove(&f.ino) {
                self.free_inode(f.ino);
            }
        }
        Ok(())
    }

    /// Whether `f` is an open handle.
    pub(super) fn live(&self, f: StoreFile) -> Result<(), StoreError> {
        match self.opens.get(&f.open) == Some(&f.ino) {
            true => Ok(()),
            false => Err(StoreError::Closed),
        }
    }

    /// Free inode `ino` and its blocks in the running transaction (it has no name and
    /// no open handle).
    fn free_inode(&mut self, ino: u32) {
        let mut inode = self.inode(ino);
        self.unmap_from(ino, &mut inode, 0);
        // Buffered data of the file is dropped: its blocks are free.
        self.drop_buffered(ino, 0);
        self.running.frees.inodes.push(ino);
        self.set_inode(ino, &Inode::default());
    }
}
