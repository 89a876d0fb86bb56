//! The examples' run directories on real files (`--real DIR`): each run's files in a
//! new subdirectory of an existing `DIR`, removed when the run ends — and on Ctrl-C or
//! SIGTERM too (a killed run used to leave hundreds of MB behind). `DIR` itself is
//! never created: a mistyped path is an error, not a new directory tree.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, Once};

/// Subdirectories made and not yet removed.
static LIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// On SIGINT or SIGTERM: remove every live subdirectory, then exit as the signal
/// would (128 + its number).
fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        use signal_hook::consts::{SIGINT, SIGTERM};
        let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) else {
            return;
        };
        std::thread::spawn(move || {
            if let Some(sig) = signals.forever().next() {
                // Held until the exit: the run, failing on its removed files, drops its
                // `RunDir` (which takes this lock) and so cannot end the process first
                // with its own exit status.
                let live = LIVE.lock();
                let n = live.as_ref().map_or(0, |l| l.len());
                if let Ok(l) = &live {
                    for d in l.iter() {
                        let _ = std::fs::remove_dir_all(d);
                    }
                }
                eprintln!("interrupted: removed {n} run directory(ies)");
                std::process::exit(128 + sig);
            }
        });
    });
}

/// `base` must be an existing directory (`--real`'s).
pub fn check_base(base: &Path) -> Result<(), String> {
    if base.is_dir() {
        Ok(())
    } else {
        Err(format!(
            "--real {}: no such directory; give an existing directory (the examples create \
             no directory tree, only a run directory inside it)",
            base.display()
        ))
    }
}

/// A run's new subdirectory `name` of `base` (which must exist), removed when dropped
/// or on Ctrl-C / SIGTERM.
#[derive(Debug)]
pub struct RunDir(PathBuf);

impl RunDir {
    /// Make `base/name`.
    pub fn new(base: &Path, name: &str) -> Result<RunDir, String> {
        check_base(base)?;
        install();
        let d = base.join(name);
        std::fs::create_dir(&d).map_err(|e| format!("{}: {e}", d.display()))?;
        if let Ok(mut l) = LIVE.lock() {
            l.push(d.clone());
        }
        Ok(RunDir(d))
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
        if let Ok(mut l) = LIVE.lock() {
            l.retain(|d| d != &self.0);
        }
    }
}
