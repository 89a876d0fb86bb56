//! The real backend's files and the rings' table of registered files.
//!
//! A file of the stack has an id for its whole life (its metadata and its region of
//! the block layer's address space, `id × FILE_SPAN`; ids are never reused) and, while
//! it is open, a **slot** of the rings' sparse table of registered files (`MAX_FILES`
//! of them), which its SQEs name. A slot goes back to the free list when the file is
//! closed by every task that opened it and nothing of it is in flight or dirty in the
//! page cache (`IoState::try_release`); it is reused only after that, so an SQE never
//! names a slot whose file changed under it. A file closed without being removed is
//! opened again (a new slot) by `File::open`.
//!
//! Every core's ring mirrors the table: a change of a slot (a file installed, or the
//! slot cleared with −1) is queued for every core and applied by the core at its next
//! turn (`register_files_update`), before it writes the SQEs it took in the same turn —
//! so the SQEs of a turn name what the table held when they were taken. A queued update
//! carries an `Arc` of the file, so the descriptor stays open until every core that
//! still has to register it did (closing it earlier could let the number be reused by
//! another file before the registration).

use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::sync::Arc;

use super::{RealPort, MAX_FILES};

/// One change of a ring slot for a core to apply: the file now there (`None`: free).
pub(crate) type SlotUpdate = (u32, Option<Arc<std::fs::File>>);

/// An open file: the descriptor and its slot.
#[derive(Debug)]
struct OpenFile {
    file: Arc<std::fs::File>,
    slot: u32,
}

/// The files and the table of registered files the cores' rings mirror.
#[derive(Debug)]
pub(crate) struct FileTable {
    /// By file id: the open file, `None` when closed.
    open: Vec<Option<OpenFile>>,
    /// By file id: (device, inode) of a file the stack created, to reopen it for
    /// writing only if it is still that file.
    made: Vec<Option<(u64, u64)>>,
    /// By slot: its file (`None`: free); grows up to `MAX_FILES`.
    slots: Vec<Option<Arc<std::fs::File>>>,
    free: Vec<u32>,
    /// Per core: the slots changed since its last turn.
    pending: Vec<Vec<u32>>,
}

/// The error of a full table: what, where, how to fix it.
fn table_full(name: &str, dir: &std::path::Path) -> std::io::Error {
    std::io::Error::other(format!(
        "'{name}' in {}: the rings' table of registered files is full — {MAX_FILES} files \
         of the stack are open at once; close the files you are done with \
         (File::close: a closed file's slot is reused once its I/O has completed and its \
         dirty cached pages are written back; removing a name does not free it, since \
         the file's handles stay usable)",
        dir.display()
    ))
}

impl FileTable {
    pub(crate) fn new(cores: u16) -> FileTable {
        FileTable {
            open: Vec::new(),
            made: Vec::new(),
            slots: Vec::new(),
            free: Vec::new(),
            pending: (0..cores).map(|_| Vec::new()).collect(),
        }
    }

    /// Whether a file can be installed now (a free slot).
    pub(crate) fn has_room(&self) -> bool {
        !self.free.is_empty() || self.slots.len() < MAX_FILES as usize
    }

    /// Slot `s` changed: every core registers its new content at its next turn.
    fn changed(&mut self, s: u32) {
        for p in &mut self.pending {
            p.push(s);
        }
    }

    /// Give file `id` a slot.
    fn install(&mut self, id: u32, file: std::fs::File) {
        let s = self.free.pop().unwrap_or_else(|| {
            self.slots.push(None);
            (self.slots.len() - 1) as u32
        });
        let file = Arc::new(file);
        self.slots[s as usize] = Some(file.clone());
        let i = id as usize;
        if self.open.len() <= i {
            self.open.resize_with(i + 1, || None);
            self.made.resize(i + 1, None);
        }
        self.open[i] = Some(OpenFile { file, slot: s });
        self.changed(s);
    }

    /// Close file `id`: its slot is free (every ring clears it at its next turn) and
    /// its descriptor closes once no core still has to register it.
    pub(crate) fn close(&mut self, id: u32) {
        if let Some(o) = self.open.get_mut(id as usize).and_then(Option::take) {
            self.slots[o.slot as usize] = None;
            self.free.push(o.slot);
            self.changed(o.slot);
        }
    }

    /// The slot of open file `id` (the SQEs' fixed file).
    pub(crate) fn slot(&self, id: u32) -> u32 {
        match self.open.get(id as usize) {
            Some(Some(o)) => o.slot,
            _ => unreachable!("file {id} has I/O in flight, so it is open"),
        }
    }

    /// The descriptor of open file `id`.
    pub(crate) fn file(&self, id: u32) -> std::io::Result<&std::fs::File> {
        match self.open.get(id as usize) {
            Some(Some(o)) => Ok(&o.file),
            _ => Err(std::io::Error::other(format!(
                "file {id} is closed: open it again"
            ))),
        }
    }

    /// Core `me`'s turn: the slot changes it has not registered yet, each with the
    /// file there now, appended to `out`.
    pub(crate) fn updates(&mut self, me: usize, out: &mut Vec<SlotUpdate>) {
        let slots = &self.slots;
        out.extend(
            self.pending[me]
                .drain(..)
                .map(|s| (s, slots[s as usize].clone())),
        );
    }
}

/// The raw descriptor of an update (−1: clear the slot).
pub(crate) fn raw(u: &SlotUpdate) -> RawFd {
    u.1.as_ref().map_or(-1, |f| f.as_raw_fd())
}

impl RealPort {
    fn flags(&self) -> i32 {
        if self.direct {
            libc::O_DIRECT
        } else {
            0
        }
    }

    /// Open `name` of the directory with the rings' flags (read, and write if `write`;
    /// only a new file if `create_new`), once the table of registered files has room:
    /// its path and the open's result, which each caller words.
    fn open_in_dir(
        &self,
        name: &str,
        write: bool,
        create_new: bool,
    ) -> std::io::Result<(std::path::PathBuf, std::io::Result<std::fs::File>)> {
        if !self.files.has_room() {
            return Err(table_full(name, &self.dir));
        }
        let path = self.dir.join(name);
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(write)
            .create_new(create_new)
            .custom_flags(self.flags())
            .open(&path);
        Ok((path, f))
    }

    /// Create file number `id` (`O_DIRECT`, new: an existing file is never touched).
    /// The cores' rings register it at their next turn.
    pub(crate) fn create(&mut self, id: u32, name: &str) -> std::io::Result<()> {
        let (path, opened) = self.open_in_dir(name, true, true)?;
        let f = opened.map_err(|e| {
            let refused_direct = e.raw_os_error() == Some(libc::EINVAL) && self.direct;
            let why = if refused_direct {
                // Some kernels create the file before refusing O_DIRECT: it is ours
                // (create_new), so it goes. Any other error leaves the path alone —
                // above all EEXIST, a file the stack did not create.
                let _ = std::fs::remove_file(&path);
                "this file system refuses O_DIRECT: use a disk-backed directory, or \
                 StackBuilder::direct(false) for I/O through the page cache"
            } else {
                "the runtime creates its files and never writes one it did not create"
            };
            std::io::Error::new(e.kind(), format!("{}: {e} ({why})", path.display()))
        })?;
        let m = f.metadata()?;
        self.files.install(id, f);
        self.files.made[id as usize] = Some((m.dev(), m.ino()));
        Ok(())
    }

    /// Open the existing file `name` as file number `id`: read-only (the runtime never
    /// writes a file it did not create) unless `write_existing`. Returns its length.
    pub(crate) fn open_existing(&mut self, id: u32, name: &str) -> std::io::Result<u64> {
        let (path, opened) = self.open_in_dir(name, self.write_existing, false)?;
        let f = opened.map_err(|e| with_path(e, &path))?;
        let len = f.metadata()?.len();
        self.files.install(id, f);
        Ok(len)
    }

    /// Open again file `id`, now named `name`, that was closed: for reading and writing
    /// if the stack created it and it is still that file, else as
    /// [`RealPort::open_existing`].
    pub(crate) fn reopen(&mut self, id: u32, name: &str) -> std::io::Result<()> {
        let Some((dev, ino)) = self.files.made.get(id as usize).copied().flatten() else {
            return self.open_existing(id, name).map(drop);
        };
        let (path, opened) = self.open_in_dir(name, true, false)?;
        let f = opened.map_err(|e| with_path(e, &path))?;
        let m = f.metadata()?;
        if (m.dev(), m.ino()) != (dev, ino) {
            return Err(std::io::Error::other(format!(
                "{}: not the file the stack created (replaced from outside since it was \
                 closed); the runtime never writes a file it did not create",
                path.display()
            )));
        }
        self.files.install(id, f);
        Ok(())
    }

    /// Set the length of file number `id` (`ftruncate`).
    pub(crate) fn set_len(&self, id: u32, len: u64) -> std::io::Result<()> {
        self.files.file(id)?.set_len(len)
    }
}

/// An open error with the path it concerns.
fn with_path(e: std::io::Error, path: &std::path::Path) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

impl RealPort {
    /// Install `file`, opened by the application, as file number `id` (`File::adopt`):
    /// the cores' rings register it at their next turn.
    pub(crate) fn adopt(
        &mut self,
        id: u32,
        name: &str,
        file: std::fs::File,
    ) -> std::io::Result<()> {
        if !self.files.has_room() {
            return Err(table_full(name, &self.dir));
        }
        self.files.install(id, file);
        Ok(())
    }
}
