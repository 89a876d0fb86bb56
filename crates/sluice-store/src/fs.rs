//! One file API for the stack's own files and the store's: [`Fs`] opens files by name
//! and hands out [`FsFile`]s whose methods are the runtime's [`File`]'s (`read_at`,
//! `write_at` with a [`DmaBuffer`], `read_buffered`, `write_buffered`, `len`,
//! `set_len`, `fsync`) plus `fdatasync`. Whether the files are the runtime's (a region
//! of the simulated device, or a file of the real directory, each) or files of a
//! journaled store in one file of the stack is one setting, [`FsConfig`]:
//!
//! ```
//! use sluice_runtime::{DmaBuffer, Stack};
//! use sluice_store::{CommitMode, Fs, FsConfig};
//!
//! for cfg in [FsConfig::Host, FsConfig::store(CommitMode::FileLevel)] {
//!     let len = Stack::builder().device("ull").build().unwrap()
//!         .run(move || async move {
//!             let fs = Fs::mount(&cfg).await.unwrap();
//!             let f = fs.create("log").await.unwrap();
//!             let (r, _) = f.write_at(DmaBuffer::from_slice(&[1u8; 4096]), 0).await;
//!             r.unwrap();
//!             f.fdatasync().await.unwrap();
//!             fs.rename("log", "log.1").await.unwrap();
//!             let f = fs.open("log.1").await.unwrap();
//!             f.set_len(1000).await.unwrap();
//!             f.len()
//!         })
//!         .unwrap()
//!         .value;
//!     assert_eq!(len, 1000);
//! }
//! ```
//!
//! Where the two differ: the runtime's `read_at`/`write_at` are direct I/O (offsets,
//! lengths and buffers in multiples of 512 bytes; the store takes any), and its
//! buffered calls need a page cache on the stack (`StackBuilder::cache`; the store
//! buffers in its own). `fsync` and `fdatasync` are one call on the runtime's files,
//! which keep no metadata but the length (a FLUSH in simulation, `fdatasync(2)` on
//! real files); on the store, `fdatasync` skips the journal commit when only the
//! change counter moved ([`Store::fdatasync`]). Names: the store makes them durable
//! with a normal commit ([`Fs::sync`]); the runtime's files keep theirs in
//! simulation, and on real files as the directory's file system does.

use std::io;
use std::rc::Rc;
use std::str::FromStr;

use sluice_runtime::{DmaBuffer, File};

use crate::{CommitMode, FsyncPath, Geometry, Store, StoreError, StoreFile};

/// Which files an [`Fs`] gives: the one setting that moves a program between them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FsConfig {
    /// The stack's own files ([`File`]).
    Host,
    /// Files of a journaled store kept in one file of the stack (made with its
    /// geometry if it does not exist, recovered if it does).
    Store {
        /// The stack file that holds the store.
        image: String,
        /// Its size in 4 KiB blocks, if it is made.
        blocks: u64,
        /// Compound commits or FastResponse's f-transactions.
        commit: CommitMode,
        /// The synchronous commit path or AIOS's asynchronous one.
        fsync_path: FsyncPath,
        /// Small fsyncs' data logged inline in f-transactions ([`Store::set_inline`]
        /// with [`crate::INLINE_BLOCKS`]; fjournal only).
        inline: bool,
        /// RCP's class-aware limits of buffered data ([`Store::set_class_limits`]).
        class_limits: bool,
        /// Clean file blocks kept for reads, 4 KiB each ([`Store::set_read_cache`]; 0:
        /// none).
        read_cache: usize,
        /// Bytes of buffered data a critical and a non-critical writer may add to
        /// ([`Store::set_buffer_limit`], [`Store::set_class_buffer_limit`]); `None`:
        /// the store's defaults (32 MiB, and 1/20 of it with class-aware limits).
        buffer_limits: Option<(u64, u64)>,
    },
}

impl FsConfig {
    /// A store with `commit`: in `sluice-store.img`, 256 MiB if made, the synchronous
    /// commit path.
    pub fn store(commit: CommitMode) -> FsConfig {
        FsConfig::Store {
            image: "sluice-store.img".into(),
            blocks: 65536,
            commit,
            fsync_path: FsyncPath::Sync,
            inline: false,
            class_limits: false,
            read_cache: 0,
            buffer_limits: None,
        }
    }

    /// The same with commit path `path` (the runtime's files have none: unchanged).
    pub fn with_fsync_path(mut self, path: FsyncPath) -> FsConfig {
        if let FsConfig::Store { fsync_path, .. } = &mut self {
            *fsync_path = path;
        }
        self
    }

    /// The same with small fsyncs' data logged inline in f-transactions (on a store in
    /// fjournal mode; otherwise unchanged).
    pub fn with_inline(mut self, on: bool) -> FsConfig {
        if let FsConfig::Store { inline, .. } = &mut self {
            *inline = on;
        }
        self
    }

    /// The same with a read cache of `blocks` clean 4 KiB blocks (0: none; the
    /// runtime's files: unchanged — they read through the stack's page cache).
    pub fn with_read_cache(mut self, blocks: usize) -> FsConfig {
        if let FsConfig::Store { read_cache, .. } = &mut self {
            *read_cache = blocks;
        }
        self
    }

    /// The same with `critical` and `normal` bytes of buffered data as the limits of a
    /// critical and a non-critical writer (the runtime's files: unchanged — their page
    /// cache has its own, `CacheConfig::dirty_ratio_*`).
    pub fn with_buffer_limits(mut self, critical: u64, normal: u64) -> FsConfig {
        if let FsConfig::Store { buffer_limits, .. } = &mut self {
            *buffer_limits = Some((critical, normal));
        }
        self
    }

    /// The same with RCP's class-aware limits of buffered data on or off (the runtime's
    /// files: unchanged — their page cache has its own, `CacheConfig::class_limits`).
    pub fn with_class_limits(mut self, on: bool) -> FsConfig {
        if let FsConfig::Store { class_limits, .. } = &mut self {
            *class_limits = on;
        }
        self
    }
}

impl FromStr for FsConfig {
    type Err = String;

    /// `host`, `compound` or `fjournal` (a store with that commit mode), the latter two
    /// with `+async` for AIOS's commit path, fjournal then with `+inline` for small
    /// fsyncs' data logged inline, and then `+rcp` for RCP's class-aware limits of
    /// buffered data (`fjournal+async+inline+rcp`).
    fn from_str(s: &str) -> Result<FsConfig, String> {
        let (rest, rcp) = match s.strip_suffix("+rcp") {
            Some(m) => (m, true),
            None => (s, false),
        };
        let (rest, inline) = match rest.strip_suffix("+inline") {
            Some(m) => (m, true),
            None => (rest, false),
        };
        let (mode, path) = match rest.strip_suffix("+async") {
            Some(m) => (m, FsyncPath::Async),
            None => (rest, FsyncPath::Sync),
        };
        let commit = match mode {
            "host" if path == FsyncPath::Sync && !rcp && !inline => return Ok(FsConfig::Host),
            "compound" if inline => {
                return Err(format!(
                    "file system '{s}': +inline logs data in f-transactions, which only \
                     fjournal writes: use fjournal+inline (or drop +inline)"
                ))
            }
            "compound" => CommitMode::Compound,
            "fjournal" => CommitMode::FileLevel,
            _ => return Err(format!("file system '{s}': give host, or {STORE_GRAMMAR}")),
        };
        Ok(FsConfig::store(commit)
            .with_fsync_path(path)
            .with_inline(inline)
            .with_class_limits(rcp))
    }
}

/// How a journaled store is named (`--fs`, `FsConfig`'s text), for messages.
pub const STORE_GRAMMAR: &str = "compound or fjournal, then optionally +async (AIOS's commit \
     path), then for fjournal optionally +inline (small fsyncs' data in the f-transaction), \
     then optionally +rcp (RCP's limits of buffered data): e.g. fjournal+async+inline+rcp";

impl std::fmt::Display for FsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FsConfig::Host => write!(f, "host"),
            FsConfig::Store {
                commit,
                fsync_path,
                inline,
                class_limits,
                ..
            } => {
                let m = match commit {
                    CommitMode::Compound => "compound",
                    CommitMode::FileLevel => "fjournal",
                };
                let p = if *fsync_path == FsyncPath::Async {
                    "+async"
                } else {
                    ""
                };
                let i = if *inline { "+inline" } else { "" };
                let r = if *class_limits { "+rcp" } else { "" };
                write!(f, "{m}{p}{i}{r}")
            }
        }
    }
}

impl From<StoreError> for io::Error {
    fn from(e: StoreError) -> io::Error {
        let kind = match &e {
            StoreError::Io(e) => return io::Error::new(e.kind(), e.to_string()),
            StoreError::NotFound(_) => io::ErrorKind::NotFound,
            StoreError::Exists(_) => io::ErrorKind::AlreadyExists,
            StoreError::BadName(_)
            | StoreError::TooBig
            | StoreError::TxnTooBig(_)
            | StoreError::Closed => io::ErrorKind::InvalidInput,
            StoreError::Corrupt(_) | StoreError::JournalCorrupt(_) => io::ErrorKind::InvalidData,
            StoreError::NoSpace(_) | StoreError::Aborted(_) => io::ErrorKind::Other,
        };
        io::Error::new(kind, e)
    }
}

/// Files by name: the stack's own or a store's ([`FsConfig`]). Clone it freely (the
/// store is shared).
#[derive(Clone, Debug)]
pub struct Fs {
    store: Option<Rc<Store>>,
}

/// A file of an [`Fs`].
#[derive(Clone, Debug)]
pub struct FsFile {
    inner: Inner,
}

#[derive(Clone, Debug)]
enum Inner {
    Host(File),
    Store(Rc<StoreOpen>),
}

/// One open of a store's file, closed when the last clone of its [`FsFile`] goes.
#[derive(Debug)]
struct StoreOpen {
    store: Rc<Store>,
    file: StoreFile,
}

impl Drop for StoreOpen {
    fn drop(&mut self) {
        // The open is live: the handle never leaves this value.
        self.store.close_quietly(self.file);
    }
}

impl Fs {
    /// The files `cfg` names. A store is made if its file does not exist (`mkfs`) and
    /// mounted — recovered — if it does.
    pub async fn mount(cfg: &FsConfig) -> io::Result<Fs> {
        let FsConfig::Store {
            image,
            blocks,
            commit,
            fsync_path,
            inline,
            class_limits,
            read_cache,
            buffer_limits,
        } = cfg
        else {
            return Ok(Fs { store: None });
        };
        let file = match File::open(image).await {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let f = File::create(image).await?;
                Store::mkfs(&f, Geometry::new(*blocks)).await?;
                f
            }
            Err(e) => return Err(e),
        };
        let store = Store::mount(&file, *commit).await?;
        store.set_fsync_path(*fsync_path);
        store.set_inline(if *inline { crate::INLINE_BLOCKS } else { 0 });
        store.set_class_limits(*class_limits);
        if let Some((critical, normal)) = *buffer_limits {
            store.set_buffer_limit(critical);
            store.set_class_buffer_limit(normal);
        }
        store
            .set_read_cache(*read_cache)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        Ok(Fs { store: Some(store) })
    }

    /// The store, if the files are a store's.
    pub fn store(&self) -> Option<&Rc<Store>> {
        self.store.as_ref()
    }

    fn file(&self, f: StoreFile) -> FsFile {
        let s = self.store.clone().expect("a store's file");
        FsFile {
            inner: Inner::Store(Rc::new(StoreOpen { store: s, file: f })),
        }
    }

    /// Create `name`, empty (an existing file of the store is truncated, as `creat`;
    /// the runtime's files do as `File::create`).
    pub async fn create(&self, name: &str) -> io::Result<FsFile> {
        let Some(s) = &self.store else {
            let f = File::create(name).await?;
            return Ok(FsFile {
                inner: Inner::Host(f),
            });
        };
        let f = match s.create(name) {
            Err(StoreError::Exists(_)) => {
                let f = s.open(name)?;
                s.truncate(f, 0).await?;
                f
            }
            r => r?,
        };
        Ok(self.file(f))
    }

    /// Open the existing file `name`.
    pub async fn open(&self, name: &str) -> io::Result<FsFile> {
        match &self.store {
            None => Ok(FsFile {
                inner: Inner::Host(File::open(name).await?),
            }),
            Some(s) => Ok(self.file(s.open(name)?)),
        }
    }

    /// Remove the name `name`. Open handles stay usable, as POSIX's: a store's file
    /// removed while open is freed at its last close ([`Store::unlink`]).
    pub async fn unlink(&self, name: &str) -> io::Result<()> {
        match &self.store {
            None => File::remove(name).await,
            Some(s) => Ok(s.unlink(name)?),
        }
    }

    /// Rename `from` to `to`, replacing `to`.
    pub async fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        match &self.store {
            None => File::rename(from, to).await,
            Some(s) => Ok(s.rename(from, to)?),
        }
    }

    /// Make every change so far durable, names included (a store's normal commit; the
    /// runtime's files have nothing more to do than their own fsyncs).
    pub async fn sync(&self) -> io::Result<()> {
        match &self.store {
            None => Ok(()),
            Some(s) => Ok(s.sync().await?),
        }
    }
}

impl FsFile {
    /// Read `buf.len()` bytes at `offset` into `buf`; returns the bytes read (short at
    /// the end of the file) and the buffer.
    pub async fn read_at(&self, mut buf: DmaBuffer, offset: u64) -> (io::Result<usize>, DmaBuffer) {
        match &self.inner {
            Inner::Host(f) => f.read_at(buf, offset).await,
            Inner::Store(o) => {
                let r = o
                    .store
                    .read_direct(o.file, offset, &mut buf)
                    .await
                    .map_err(io::Error::from);
                if let Ok(n) = r {
                    buf[n..].fill(0);
                }
                (r, buf)
            }
        }
    }

    /// Write `buf` at `offset`, home before it returns (the store: blocks allocated in
    /// the running transaction, ordered mode); returns the bytes written and the buffer.
    pub async fn write_at(&self, buf: DmaBuffer, offset: u64) -> (io::Result<usize>, DmaBuffer) {
        match &self.inner {
            Inner::Host(f) => f.write_at(buf, offset).await,
            Inner::Store(o) => {
                let r = o
                    .store
                    .write(o.file, offset, &buf)
                    .await
                    .map_err(io::Error::from);
                (r, buf)
            }
        }
    }

    /// Read `out.len()` bytes at `offset` through the cache (the runtime's page cache,
    /// or the store's buffer and read cache); returns the bytes read.
    pub async fn read_buffered(&self, offset: u64, out: &mut [u8]) -> io::Result<usize> {
        match &self.inner {
            Inner::Host(f) => f.read_buffered(offset, out).await,
            Inner::Store(o) => Ok(o.store.read(o.file, offset, out).await?),
        }
    }

    /// Write `data` at `offset` into the cache; it goes home later (writeback, a
    /// commit, `fsync`).
    pub async fn write_buffered(&self, offset: u64, data: &[u8]) -> io::Result<usize> {
        match &self.inner {
            Inner::Host(f) => f.write_buffered(offset, data).await,
            Inner::Store(o) => Ok(o.store.write_buffered(o.file, offset, data).await?),
        }
    }

    /// Its length in bytes.
    pub fn len(&self) -> u64 {
        match &self.inner {
            Inner::Host(f) => f.len(),
            // An open handle: its length is there.
            Inner::Store(o) => o.store.len(o.file).unwrap_or(0),
        }
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Set its length (truncate or grow; a growth reads as zeros).
    pub async fn set_len(&self, len: u64) -> io::Result<()> {
        match &self.inner {
            Inner::Host(f) => f.set_len(len).await,
            Inner::Store(o) => Ok(o.store.truncate(o.file, len).await?),
        }
    }

    /// Make its data and metadata durable.
    pub async fn fsync(&self) -> io::Result<()> {
        match &self.inner {
            Inner::Host(f) => f.fsync().await,
            Inner::Store(o) => Ok(o.store.fsync(o.file).await?),
        }
    }

    /// Make its data durable with the metadata needed to read it back (size, blocks).
    pub async fn fdatasync(&self) -> io::Result<()> {
        match &self.inner {
            Inner::Host(f) => f.fsync().await,
            Inner::Store(o) => Ok(o.store.fdatasync(o.file).await?),
        }
    }

    /// Close it: the runtime's file is closed ([`File::close`]: one open ends; on real
    /// files a file closed by every opener gives back its descriptor and its slot of
    /// the rings' file table). A store's open ends when its last clone is closed or
    /// dropped ([`Store::close`]: a file removed while open is freed then).
    pub async fn close(self) -> io::Result<()> {
        match self.inner {
            Inner::Host(f) => f.close().await,
            Inner::Store(o) => {
                drop(o);
                Ok(())
            }
        }
    }
}
