//! Names, lengths and lifetimes of the stack's files: [`File::remove`],
//! [`File::rename`], [`File::set_len`], [`File::close`]. As POSIX, a handle stays usable
//! after its name is removed or changed, until the file is closed. Files the stack did
//! not create (opened read-only) are never removed, renamed, replaced or truncated. In
//! simulation these are metadata (no device I/O, and they survive a crash, as a file's
//! length does); on real files they are the system calls, on the stack's directory.
//!
//! # Closing
//! Every `create` and `open` counts one open of the file; [`File::close`] ends one.
//! Once none is left, the handles' I/O is refused, and the file is *released* as soon
//! as none of its I/O is in flight and the page cache holds none of its pages dirty:
//! on real files its descriptor is closed and its slot of the rings' table of
//! registered files is given back for another file (`real/files.rs`). A release the
//! I/O or dirty pages held back happens when its last I/O completes, or when a new
//! file needs a slot. A file closed and not removed is opened again by `File::open`.
//! (In simulation a release gives nothing back: file ids are never reused, and the
//! report is the same with or without closes.)

use std::io;

use super::{File, IoState, Port, FILE_SPAN, IO_ALIGN};
use crate::exec::with;
use crate::{DmaBuffer, IoOptions, Op};

fn refused(what: &str, name: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!("{what} '{name}': the file was not created by the stack, so it is read-only"),
    )
}

fn not_found(name: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("no file '{name}' in the stack"),
    )
}

/// Most file ids over a stack's life: file `id`'s region of the address space starts at
/// `id × FILE_SPAN`, below 2⁶⁴.
const MAX_FILE_IDS: usize = 1 << 24;

impl IoState {
    /// The id of a new file `name`; on real files, with a slot of the rings' table free
    /// if closed files can give one back.
    pub(super) fn new_id(&mut self, name: &str) -> io::Result<u32> {
        if self.files.len() >= MAX_FILE_IDS {
            return Err(io::Error::other(format!(
                "'{name}': more than {MAX_FILE_IDS} files made over the stack's life"
            )));
        }
        self.make_room();
        Ok(self.files.len() as u32)
    }

    /// Real files with every slot of the rings' table taken: release the closed files
    /// whose dirty pages the flusher has written back since they were closed.
    fn make_room(&mut self) {
        if matches!(&self.port, Port::Real(p) if !p.files.has_room()) {
            for id in std::mem::take(&mut self.closing) {
                if !self.try_release(id) {
                    self.closing.push(id);
                }
            }
        }
    }

    /// One more open of file `id` (opened again if it was released).
    pub(super) fn reopen(&mut self, id: u32) -> io::Result<()> {
        let i = id as usize;
        if self.files[i].open == 0 {
            if self.files[i].released {
                self.make_room();
                if let Port::Real(p) = &mut self.port {
                    p.reopen(id, &self.files[i].name)?;
                }
                self.files[i].released = false;
            }
            self.closing.retain(|&c| c != id);
        }
        self.files[i].open += 1;
        Ok(())
    }

    /// One open of file `id` ends.
    fn close(&mut self, id: u32) -> io::Result<()> {
        let f = &mut self.files[id as usize];
        if f.open == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("close of '{}': the file is not open", f.name),
            ));
        }
        f.open -= 1;
        if f.open == 0 && !self.try_release(id) {
            self.closing.push(id);
        }
        Ok(())
    }

    /// An I/O of file `id` completed.
    pub(super) fn io_ended(&mut self, id: u32) {
        let f = &mut self.files[id as usize];
        f.inflight -= 1;
        if f.inflight == 0 && f.open == 0 && !f.released && self.try_release(id) {
            self.closing.retain(|&c| c != id);
        }
    }

    /// Release file `id` if nobody has it open, none of its I/O is in flight and the
    /// page cache holds none of its pages dirty or under writeback (a failed writeback
    /// makes its page dirty again). Returns whether it is released.
    fn try_release(&mut self, id: u32) -> bool {
        let f = &self.files[id as usize];
        if f.released {
            return true;
        }
        if f.open > 0 || f.inflight > 0 {
            return false;
        }
        if let Some(c) = &self.cache {
            // Held: a task is in the cache's code; try again later.
            let range = sluice_cache::PageRange::file(id);
            match c.try_pc() {
                Some(pc) if !pc.dirty_in(range) && pc.writebacks_in(range).is_empty() => {}
                _ => return false,
            }
        }
        if let Port::Real(p) = &mut self.port {
            p.files.close(id);
        }
        self.files[id as usize].released = true;
        true
    }

    /// The file named `name`, if the stack may change it.
    fn writable_named(&self, what: &str, name: &str) -> io::Result<u32> {
        let &id = self.names.get(name).ok_or_else(|| not_found(name))?;
        if self.files[id as usize].read_only {
            return Err(refused(what, name));
        }
        Ok(id)
    }
}

impl File {
    /// Close the file: one [`File::create`] or [`File::open`] of it ends. When none is
    /// left, its handles' I/O is refused, and on real files its descriptor and its slot
    /// of the rings' table of registered files (at most [`crate::MAX_FILES`] files open
    /// at once) go back as soon as none of its I/O is in flight and none of its cached
    /// pages is dirty (the flusher writes them back first). A file that is still named
    /// can be opened again.
    pub async fn close(self) -> io::Result<()> {
        with(|inner, _| inner.io.close(self.id()))
    }

    /// Remove the name `name` (its handles stay usable until it is closed).
    pub async fn remove(name: &str) -> io::Result<()> {
        with(|inner, _| {
            let io = &mut inner.io;
            let id = io.writable_named("remove", name)?;
            if let Port::Real(p) = &io.port {
                std::fs::remove_file(p.path(name))?;
            }
            io.names.remove(name);
            io.files[id as usize].name.clear();
            Ok(())
        })
    }

    /// Rename `from` to `to`, replacing `to` if the stack created it.
    pub async fn rename(from: &str, to: &str) -> io::Result<()> {
        super::file::check_name(to)?;
        with(|inner, _| {
            let io = &mut inner.io;
            let id = io.writable_named("rename", from)?;
            if from == to {
                return Ok(());
            }
            let replaced = match io.names.get(to) {
                Some(_) => Some(io.writable_named("replace", to)?),
                None => None,
            };
            if let Port::Real(p) = &io.port {
                let target = p.path(to);
                if replaced.is_none() && target.exists() {
                    return Err(io::Error::new(
                        io::ErrorKind::AlreadyExists,
                        format!(
                            "rename onto '{}': a file the stack did not create",
                            target.display()
                        ),
                    ));
                }
                std::fs::rename(p.path(from), target)?;
            }
            if let Some(r) = replaced {
                io.files[r as usize].name.clear();
            }
            io.names.remove(from);
            io.names.insert(to.to_string(), id);
            io.files[id as usize].name = to.to_string();
            Ok(())
        })
    }

    /// Set the length to `len`: bytes past it are gone, and a later growth reads zeros
    /// there. With a page cache, the file's dirty pages are written back first and
    /// the cached pages past the new end dropped.
    pub async fn set_len(&self, len: u64) -> io::Result<()> {
        self.check_writable()?;
        if len > FILE_SPAN {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("set_len({len}): beyond the largest file ({FILE_SPAN} bytes)"),
            ));
        }
        let old = self.len();
        if crate::exec::current_has_cache() {
            self.sync_range(sluice_cache::PageRange::file(self.id()))
                .await?;
        }
        with(|inner, _| -> io::Result<()> {
            let io = &mut inner.io;
            match &io.port {
                Port::Real(p) => p.set_len(self.id(), len)?,
                Port::Sim(_) => {
                    // The bytes past the end read as zeros if the file grows again
                    // (at once durable, as the length is).
                    let base = self.id() as u64 * FILE_SPAN;
                    let zeros = vec![0u8; 1 << 20];
                    let mut at = len;
                    while at < old {
                        let n = (old - at).min(zeros.len() as u64) as usize;
                        io.contents.write_done(base + at, &zeros[..n], true);
                        at += n as u64;
                    }
                }
            }
            io.files[self.id() as usize].len = len;
            Ok(())
        })?;
        if old > len {
            self.direct_written(len, (old - len) as usize);
        }
        Ok(())
    }

    /// Grow the file to `len` bytes of written blocks: on real files, zeros are written
    /// from its end (rounded up to [`IO_ALIGN`]) to `len`, so that later writes there
    /// overwrite. A host file system allocates on a write into a hole (or converts an
    /// unwritten extent, which is what `fallocate` leaves), and a FUA write there also
    /// commits the host's own journal: a journaled store kept in a file would pay that
    /// on every commit record. A simulated device has no holes: there the length is
    /// set and nothing is written.
    pub async fn preallocate(&self, len: u64) -> io::Result<()> {
        self.check_writable()?;
        let old = self.len();
        if len <= old {
            return Ok(());
        }
        if !with(|inner, _| inner.io.is_real()) {
            return self.set_len(len).await;
        }
        const CHUNK: u64 = 1 << 20;
        const IN_FLIGHT: usize = 8;
        let end = len.next_multiple_of(IO_ALIGN as u64);
        let mut at = old.next_multiple_of(IO_ALIGN as u64);
        while at < end {
            let mut hs = Vec::with_capacity(IN_FLIGHT);
            while at < end && hs.len() < IN_FLIGHT {
                let n = (end - at).min(CHUNK);
                let buf = DmaBuffer::new(n as usize);
                hs.push(self.submit(Op::Write, buf, at, IoOptions::new()));
                at += n;
            }
            for h in hs {
                h.await.0?;
            }
        }
        if end != len {
            self.set_len(len).await?;
        }
        Ok(())
    }
}
