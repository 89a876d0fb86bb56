//! Files the application opened itself, handed to the stack: [`File::adopt`].
//!
//! The stack's own files are created (or opened) by name in its directory. A layer
//! above it that resolves names its own way — `sluice mount`, which walks a backing
//! directory component by component with `openat` and no-follow — opens the file
//! itself and gives the stack the descriptor: the file then takes a slot of the rings'
//! table of registered files like any other, and its reads, writes and flushes go
//! through the block layer with the issuing task's flow and class.

use std::io;

use super::{File, FileMeta, Port};
use crate::exec::{self, with};

impl File {
    /// Give the running real stack an open file, writable (the caller opened it, so
    /// it may change it): its I/O goes through the block layer, its descriptor is
    /// closed when the stack releases it after the last [`File::close`]. `name` labels
    /// it in errors and must be unique among the stack's files (no `/`). The
    /// descriptor should be opened with `O_DIRECT` if the stack's I/O is to bypass the
    /// kernel's page cache; offsets and lengths are multiples of [`crate::IO_ALIGN`]
    /// as for every file of the stack. Refused in simulation (there is no descriptor
    /// to give) and when every slot of the rings' table is taken.
    pub fn adopt(name: &str, file: std::fs::File) -> io::Result<File> {
        super::file::check_name(name)?;
        if !exec::current_is_real() {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!(
                    "adopt '{name}': only a real stack (StackBuilder::directory) takes open files"
                ),
            ));
        }
        let len = file.metadata()?.len();
        with(|inner, _| {
            let io = &mut inner.io;
            if io.names.contains_key(name) {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!(
                        "adopt '{name}': the stack has a file of that name; give a unique label"
                    ),
                ));
            }
            let id = io.new_id(name)?;
            let Port::Real(p) = &mut io.port else {
                unreachable!("checked: the stack is real")
            };
            p.adopt(id, name, file)?;
            io.files
                .push(FileMeta::new(name.to_string(), len, false, 1));
            io.names.insert(name.to_string(), id);
            Ok(File::from_id(id))
        })
    }
}
