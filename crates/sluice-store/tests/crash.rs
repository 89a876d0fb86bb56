//! Crash consistency, tested with seeded crashes: tasks append to their files (direct
//! and buffered writes, mixed), fsync,
//! and create, rename and unlink scratch files; the power goes at a seeded instant
//! (unflushed writes survive, are lost or are torn); the store is mounted again
//! (recovery) and must be consistent, and every file must hold a prefix of what its task
//! wrote at least as long as what its last completed fsync covered — in both commit
//! modes and both commit paths (synchronous, AIOS's asynchronous): 1 000 seeded
//! crashes per mode (`STORE_CRASH_SEED=N cargo test -p sluice-store
//! --test crash` replays one).

use std::cell::RefCell;
use std::rc::Rc;

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use sluice_runtime::{spawn, CrashSpec, DiskImage, File, Stack, StackBuilder, TaskCtx};
use sluice_store::{CommitMode, FsyncPath, Geometry, Store};

const TASKS: usize = 3;
const IMG: &str = "store.img";

fn builder(seed: u64) -> StackBuilder {
    Stack::builder().device("nand").seed(seed)
}

/// mkfs, the tasks' files, committed.
fn fresh(mode: CommitMode) -> DiskImage {
    builder(1)
        .build()
        .unwrap()
        .run_until_crash(
            u64::MAX,
            CrashSpec {
                seed: 0,
                torn: false,
            },
            move || async move {
                let f = File::create(IMG).await.unwrap();
                Store::mkfs(&f, Geometry::new(4096)).await.unwrap();
                let s = Store::mount(&f, mode).await.unwrap();
                for t in 0..TASKS {
                    s.create(&format!("f{t}")).unwrap();
                }
                s.sync().await.unwrap();
            },
        )
        .unwrap()
        .image
}

#[derive(Default, Clone)]
struct Model {
    data: Vec<u8>,
    durable: usize,
}

async fn task(s: Rc<Store>, t: usize, seed: u64, model: Rc<RefCell<Vec<Model>>>) {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed * 31 + t as u64);
    let f = s.open(&format!("f{t}")).unwrap();
    let mut scratch = 0u32;
    for _ in 0..400 {
        let r = rng.random_range(0..100);
        if r < 65 {
            let n = rng.random_range(1..6000usize);
            let v: Vec<u8> = (0..n).map(|_| rng.random()).collect();
            let off = model.borrow()[t].data.len() as u64;
            if off + n as u64 > 1 << 22 {
                continue;
            }
            if rng.random_bool(0.5) {
                s.write_buffered(f, off, &v).await.unwrap();
            } else {
                s.write(f, off, &v).await.unwrap();
            }
            model.borrow_mut()[t].data.extend_from_slice(&v);
        } else if r < 85 {
            let len = model.borrow()[t].data.len();
            s.fsync(f).await.unwrap();
            model.borrow_mut()[t].durable = len;
        } else {
            scratch += 1;
            let name = format!("s{t}-{scratch}");
            let g = s.create(&name).unwrap();
            s.write(g, 0, &vec![t as u8; 5000]).await.unwrap();
            s.rename(&name, &format!("r{t}")).unwrap();
            if rng.random_bool(0.5) {
                s.unlink(&format!("r{t}")).unwrap();
            }
        }
    }
}

fn crash_and_check(mode: CommitMode, seed: u64, base: &DiskImage, at: u64) -> (u64, usize) {
    let model = Rc::new(RefCell::new(vec![Model::default(); TASKS]));
    let m2 = model.clone();
    let out = builder(seed)
        .image(base.clone())
        .build()
        .unwrap()
        .run_until_crash(
            at,
            CrashSpec {
                seed,
                torn: seed.is_multiple_of(2),
            },
            move || async move {
                let f = File::open(IMG).await.unwrap();
                let s = Store::mount(&f, mode).await.unwrap();
                // Every other seed takes AIOS's asynchronous commit path.
                s.set_fsync_path(if seed % 2 == 1 {
                    FsyncPath::Async
                } else {
                    FsyncPath::Sync
                });
                let hs: Vec<_> = (0..TASKS)
                    .map(|t| {
                        spawn(
                            TaskCtx::new(format!("t{t}")),
                            task(s.clone(), t, seed, m2.clone()),
                        )
                    })
                    .collect();
                for h in hs {
                    h.await;
                }
            },
        )
        .unwrap();
    let model = model.borrow().clone();
    let (problems, files) = builder(seed)
        .image(out.image)
        .build()
        .unwrap()
        .run(move || async move {
            let f = File::open(IMG).await.unwrap();
            let s = Store::mount(&f, mode).await.unwrap();
            let mut files = Vec::new();
            for t in 0..TASKS {
                let h = s.open(&format!("f{t}")).unwrap();
                let mut buf = vec![0u8; s.len(h) as usize];
                s.read(h, 0, &mut buf).await.unwrap();
                files.push(buf);
            }
            (s.check(), files)
        })
        .unwrap()
        .value;
    assert!(problems.is_empty(), "{mode:?} seed {seed}: {problems:?}");
    let mut durable = 0;
    for (t, got) in files.iter().enumerate() {
        let m = &model[t];
        assert!(
            got.len() >= m.durable && got.len() <= m.data.len(),
            "{mode:?} seed {seed} f{t}: {} bytes after recovery, fsynced {}, written {}",
            got.len(),
            m.durable,
            m.data.len()
        );
        assert!(
            got[..] == m.data[..got.len()],
            "{mode:?} seed {seed} f{t}: contents differ from what was written"
        );
        durable += m.durable;
    }
    (out.at_ns, durable)
}

fn run_mode(mode: CommitMode, seeds: u64) {
    let base = fresh(mode);
    // The workload's length, to place the crashes in it.
    let (end, _) = crash_and_check(mode, 1_000_000, &base, u64::MAX);
    let mut checked = 0;
    // STORE_CRASH_SEED=N replays one seed.
    let only: Option<u64> = std::env::var("STORE_CRASH_SEED")
        .ok()
        .map(|v| v.parse().expect("STORE_CRASH_SEED: give a whole number"));
    for seed in (0..seeds).filter(|s| only.is_none_or(|o| o == *s)) {
        let at = end * (seed * 7919 % 1000 + 1) / 1001;
        let (_, durable) = crash_and_check(mode, seed, &base, at);
        checked += durable;
    }
    assert!(checked > 0, "some fsynced data was checked");
}

#[test]
fn compound_commits_survive_seeded_crashes() {
    run_mode(CommitMode::Compound, 1000);
}

#[test]
fn file_level_commits_survive_seeded_crashes() {
    run_mode(CommitMode::FileLevel, 1000);
}
