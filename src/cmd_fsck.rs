//! `sluice fsck IMAGE`: check a journaled store's image (one `sluice run --fs …
//! --keep-files` kept, or an application's) without changing it — recovery in memory,
//! the metadata checksums, the structure — and print what a mount would redo and find.
//! The image is opened read-only. Exit status 0 when consistent, 1 when damaged or
//! inconsistent, 2 for bad input.

use std::path::PathBuf;

use sluice::cli::CliError;
use sluice::runtime::{File, Stack};
use sluice::store::{Inspection, Store, StoreError};

#[derive(clap::Args, Debug)]
pub struct FsckArgs {
    /// The store's image file.
    image: PathBuf,
}

pub fn cmd_fsck(args: FsckArgs) -> Result<(), CliError> {
    let path = &args.image;
    let usage = |what: &str| CliError::Usage(format!("{}: {what}", path.display()));
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(usage("no such file; give the store's image (a file)"))
        }
        Err(e) => return Err(usage(&format!("cannot read it: {e}"))),
        Ok(m) if m.is_dir() => {
            return Err(usage(
                "is a directory; give the store's image (the file, e.g. DIR/sluice-fio-store.img)",
            ))
        }
        Ok(m) if !m.is_file() => {
            return Err(usage(
                "is not a regular file (a device or a special file); give the store's image file",
            ))
        }
        Ok(_) => {}
    }
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| usage("not a file name sluice can open"))?
        .to_string();
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    // A stack that may not write files it did not create: the image opens read-only.
    let stack = Stack::builder()
        .directory(&dir)
        .cores(1)
        .build()
        .map_err(|e| usage(&e.to_string()))?;
    let found = stack
        .run(move || async move {
            let f = File::open(&name).await?;
            Store::inspect(&f).await
        })
        .map_err(|e| usage(&e.to_string()))?
        .value;
    match found {
        Ok(i) => report(path, &i),
        Err(e @ (StoreError::Corrupt(_) | StoreError::JournalCorrupt(_))) => {
            Err(CliError::Fsck(format!("{}: {e}", path.display())))
        }
        Err(e) => Err(usage(&e.to_string())),
    }
}

fn report(path: &std::path::Path, i: &Inspection) -> Result<(), CliError> {
    let g = &i.geometry;
    let bytes: u64 = i.files.iter().map(|f| f.1).sum();
    println!(
        "{}: {} blocks of 4 KiB, {} inodes, journal {} + f-area {} blocks{}{}",
        path.display(),
        g.blocks,
        g.inodes,
        g.journal,
        g.fjournal,
        if g.metadata_csum {
            ", metadata checksums"
        } else {
            ""
        },
        if g.single_flush {
            ", single-flush commits"
        } else {
            ""
        }
    );
    println!(
        "recovery: {} transaction(s) and {} f-transaction(s) to redo, {} orphan inode(s) to free, {} block(s) a mount writes",
        i.redone, i.fredone, i.orphans, i.to_write
    );
    if i.cut > 0 {
        println!(
            "recovery: {} last commit(s) the crash cut before their FLUSH (a body or data block that did not land) dropped; their fsyncs never returned",
            i.cut
        );
    }
    let pct = 100.0 * i.non_contiguous as f64 / i.files.len().max(1) as f64;
    println!(
        "{} file(s) ({pct:.1}% non-contiguous), {bytes} bytes; {} free blocks",
        i.files.len(),
        i.free_blocks
    );
    if i.problems.is_empty() {
        println!("consistent");
        return Ok(());
    }
    for p in &i.problems {
        println!("problem: {p}");
    }
    Err(CliError::Fsck(format!(
        "{}: {} problem(s), listed above",
        path.display(),
        i.problems.len()
    )))
}
