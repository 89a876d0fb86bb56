//! One task's workload: on its main file, appends and overwrites (direct and buffered),
//! truncations down and up, fsyncs and fdatasyncs; scratch files it creates, writes,
//! truncates, fsyncs, renames over its `r` name and unlinks; and `sync`s. Every
//! operation is recorded in the task's model before it is issued.
//!
//! In one seed of eight ([`big_task`]), one task — the critical task 0 or the normal
//! task 1, by turns — also truncates its main file up past the indirect block's reach
//! (4 MiB + 96 KiB), so its appends and overwrites build a double-indirect tree, and
//! its truncations down tear it down again (mostly a hole: the model's copy of the file
//! stays under 8.5 MiB).

use std::cell::RefCell;
use std::rc::Rc;

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::model::{FileModel, TaskModel};
use crate::layout::{BLOCK, DOUBLE_START};
use crate::{Store, StoreFile};

/// Operations per task.
const OPS: usize = 120;
/// The largest main file (bytes): past the direct blocks, into the indirect block.
const MAX_MAIN: u64 = 1 << 20;
/// The largest main file of a [`big_task`]: into the second indirect block under the
/// double-indirect block.
const BIG_MAIN: u64 = DOUBLE_START * BLOCK as u64 + (4 << 20) + (256 << 10);

/// The task of run `seed` whose main file grows past 4 MiB, if any: one seed in eight
/// (even and odd ones, so torn writes too), tasks 0 and 1 by turns.
pub(crate) fn big_task(seed: u64) -> Option<usize> {
    matches!(seed % 16, 3 | 10).then_some((seed / 16 % 2) as usize)
}

/// The main file of task `t`.
pub(crate) fn main_name(t: usize) -> String {
    format!("f{t}")
}

/// Whether `name` is one of task `t`'s.
pub(crate) fn owns(t: usize, name: &str) -> bool {
    name == main_name(t) || name == format!("r{t}") || name.starts_with(&format!("s{t}-"))
}

fn data(rng: &mut Xoshiro256PlusPlus, max: usize) -> Vec<u8> {
    let n = rng.random_range(1..max);
    (0..n).map(|_| rng.random()).collect()
}

/// Task `t` of run `seed`.
pub(crate) async fn task(s: Rc<Store>, t: usize, seed: u64, m: Rc<RefCell<TaskModel>>) {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed.wrapping_mul(0x9e37_79b9) ^ t as u64);
    let main = s.open(&main_name(t)).expect("the main file");
    // The scratch file being worked on: (handle, its file in the model).
    let mut scratch: Option<(StoreFile, usize)> = None;
    let mut created = 0;
    let rname = format!("r{t}");
    let big = big_task(seed) == Some(t);
    let max_main = if big { BIG_MAIN } else { MAX_MAIN };
    for _ in 0..OPS {
        let r = rng.random_range(0..100);
        match r {
            0..=29 => {
                let v = data(&mut rng, 6000);
                let len = m.borrow().files[0].len();
                let off = match rng.random_bool(0.6) {
                    true => len,
                    false => rng.random_range(0..=len),
                };
                if off + v.len() as u64 > max_main {
                    continue;
                }
                write(&s, &m, main, 0, off, &v, rng.random_bool(0.5)).await;
            }
            30..=37 => {
                let len = m.borrow().files[0].len();
                let to = match rng.random_bool(0.6) {
                    // Up past the indirect block's reach: a hole, then the
                    // double-indirect range.
                    _ if big && rng.random_bool(0.5) => {
                        rng.random_range(DOUBLE_START * BLOCK as u64 - 8192..BIG_MAIN - 65536)
                    }
                    true => rng.random_range(0..=len),
                    false => (len + rng.random_range(1..20_000)).min(max_main),
                };
                m.borrow_mut().files[0].set_len(to);
                s.truncate(main, to).await.expect("truncate");
            }
            38..=53 => {
                let full = r < 46;
                let change = full.then(|| s.stat(main).expect("stat").change);
                m.borrow_mut().fsync_called(0, change);
                match full {
                    true => s.fsync(main).await.expect("fsync"),
                    false => s.fdatasync(main).await.expect("fdatasync"),
                }
                m.borrow_mut().fsync_returned(0);
            }
            54..=63 => {
                created += 1;
                let name = format!("s{t}-{created}");
                let id = {
                    let mut m = m.borrow_mut();
                    m.files.push(FileModel::default());
                    let id = m.files.len() - 1;
                    m.names.insert(name.clone(), id);
                    m.renamed();
                    id
                };
                let h = s.create(&name).expect("create");
                if let Some((old, _)) = scratch.replace((h, id)) {
                    // Closing a file removed while open frees it.
                    s.close(old).expect("close");
                }
                let v = data(&mut rng, 9000);
                write(&s, &m, h, id, 0, &v, rng.random_bool(0.5)).await;
            }
            64..=69 => {
                let Some((h, id)) = scratch else { continue };
                let full = rng.random_bool(0.5);
                m.borrow_mut().fsync_called(id, None);
                match full {
                    true => s.fsync(h).await.expect("fsync"),
                    false => s.fdatasync(h).await.expect("fdatasync"),
                }
                m.borrow_mut().fsync_returned(id);
            }
            70..=76 => {
                let Some((_, id)) = scratch else { continue };
                let from = {
                    let mut m = m.borrow_mut();
                    let from = m.names.iter().find(|e| *e.1 == id).map(|e| e.0.clone());
                    let Some(from) = from else { continue };
                    m.names.remove(&from);
                    m.names.insert(rname.clone(), id);
                    m.renamed();
                    from
                };
                s.rename(&from, &rname).expect("rename");
            }
            77..=82 => {
                let gone = {
                    let mut m = m.borrow_mut();
                    let Some(id) = m.names.remove(&rname) else {
                        continue;
                    };
                    m.renamed();
                    id
                };
                s.unlink(&rname).expect("unlink");
                // The scratch file removed while open: written, truncated and fsynced
                // on without a name (POSIX), or closed now, which frees it.
                if let Some((h, _)) = scratch.filter(|(_, id)| *id == gone) {
                    if rng.random_bool(0.5) {
                        s.close(h).expect("close");
                        scratch = None;
                    }
                }
            }
            83..=88 => {
                let Some((h, id)) = scratch else { continue };
                let len = m.borrow().files[id].len();
                let to = match rng.random_bool(0.5) {
                    true => rng.random_range(0..=len),
                    false => len + rng.random_range(1..9000),
                };
                m.borrow_mut().files[id].set_len(to);
                s.truncate(h, to).await.expect("truncate");
            }
            89..=93 => {
                let Some((h, id)) = scratch else { continue };
                let off = m.borrow().files[id].len();
                let v = data(&mut rng, 5000);
                write(&s, &m, h, id, off, &v, rng.random_bool(0.5)).await;
            }
            _ => {
                m.borrow_mut().ns_sync_called();
                // A normal commit of everything so far: the scratch files' last states
                // and names too.
                let open: Vec<usize> = m.borrow().names.values().copied().collect();
                for &f in &open {
                    m.borrow_mut().files[f].sync_called();
                }
                s.sync().await.expect("sync");
                let mut m = m.borrow_mut();
                for &f in &open {
                    m.files[f].sync_returned();
                }
                m.ns_sync_returned();
            }
        }
    }
}

async fn write(
    s: &Store,
    m: &RefCell<TaskModel>,
    h: StoreFile,
    file: usize,
    off: u64,
    v: &[u8],
    buffered: bool,
) {
    m.borrow_mut().files[file].write(off, v);
    match buffered {
        true => s.write_buffered(h, off, v).await.expect("buffered write"),
        false => s.write(h, off, v).await.expect("direct write"),
    };
}
