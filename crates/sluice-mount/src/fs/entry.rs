//! Entries: a node's attributes, looking a name up, and making one for a caller (its
//! uid and gid, undone if they cannot be given).

use std::ffi::{CString, OsStr};
use std::os::fd::AsRawFd;

use fuser::{Errno, FileAttr, Generation, INodeNo, ReplyEntry, Request};

use super::{lock, SluiceFs, TTL};
use crate::attr::attr;
use crate::node::Node;
use crate::sys::{self, check, component};

impl SluiceFs {
    /// `getattr` of a node: the backing inode's, with the length the data path knows
    /// for an open file.
    pub(super) fn stat_node(&self, node: &Node, ino: u64) -> Result<FileAttr, Errno> {
        if !lock(&self.files).contains_key(&node.key) {
            // Its length on BACKING is only right once a close under way finished.
            self.wait_closed(node.key);
        }
        let st = sys::stat_fd(node.raw())?;
        let mut a = attr(&st, ino);
        if let Some((df, _)) = lock(&self.files).get(&node.key) {
            a.size = *lock(&df.size);
        }
        Ok(a)
    }

    /// Look `name` up in directory `parent` (one component, no-follow) and count it.
    pub(super) fn entry_of(&self, parent: &Node, name: &CString) -> Result<FileAttr, Errno> {
        let fd = sys::openat(parent.raw(), name, libc::O_PATH, 0)?;
        let st = sys::stat_fd(fd.as_raw_fd())?;
        let ino = self.nodes.remember(fd, &st);
        Ok(attr(&st, ino))
    }

    /// Give what `req`'s caller made at `parent`/`name` its uid and gid (the
    /// directory's gid when it is set-group-id).
    pub(super) fn own(&self, req: &Request, parent: &Node, name: &CString) -> Result<(), Errno> {
        let pst = sys::stat_fd(parent.raw())?;
        let gid = if pst.st_mode & libc::S_ISGID != 0 {
            u32::MAX
        } else {
            req.gid()
        };
        let st = sys::stat_at(parent.raw(), name)?;
        if st.st_uid == req.uid() && (gid == u32::MAX || st.st_gid == gid) {
            return Ok(());
        }
        // SAFETY: valid C string and descriptor.
        check(unsafe {
            libc::fchownat(
                parent.raw(),
                name.as_ptr(),
                req.uid(),
                gid,
                libc::AT_SYMLINK_NOFOLLOW,
            )
        })?;
        // A chown clears set-user-ID and set-group-ID (even the daemon's, as root):
        // the caller made the file with them, so they are put back.
        let kept = st.st_mode & (libc::S_ISUID | libc::S_ISGID);
        if kept != 0 && st.st_mode & libc::S_IFMT != libc::S_IFLNK {
            // SAFETY: valid C string and descriptor; not a symlink, so nothing followed.
            check(unsafe { libc::fchmodat(parent.raw(), name.as_ptr(), st.st_mode & 0o7777, 0) })?;
        }
        Ok(())
    }

    pub(super) fn make(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        reply: ReplyEntry,
        f: impl FnOnce(&Node, &CString) -> libc::c_int,
    ) {
        let r = (|| {
            let p = self.nodes.get(parent)?;
            let c = component(name)?;
            check(f(&p, &c))?;
            if let Err(e) = self.own(req, &p, &c) {
                // SAFETY: valid C string and descriptor: undo what we made.
                unsafe { libc::unlinkat(p.raw(), c.as_ptr(), 0) };
                unsafe { libc::unlinkat(p.raw(), c.as_ptr(), libc::AT_REMOVEDIR) };
                return Err(e);
            }
            self.entry_of(&p, &c)
        })();
        match r {
            Ok(a) => reply.entry(&TTL, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }
}
