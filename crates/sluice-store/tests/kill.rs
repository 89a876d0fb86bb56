//! Real files: a child process runs a workload on a store in a temporary directory
//! (io_uring, `O_DIRECT`) and is killed (SIGKILL) at a seeded point; the store is then
//! recovered from the file it left and must hold every byte an fsync or fdatasync had
//! returned for, and nothing that was never written. Skipped, with the reason, where
//! io_uring or direct I/O is unavailable.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use sluice_runtime::{DmaBuffer, RuntimeError, Stack};
use sluice_store::{Fs, FsConfig};

const FILES: usize = 2;
const CHILD_DIR: &str = "STORE_KILL_DIR";
const CHILD_MODE: &str = "STORE_KILL_MODE";
const CHILD_SEED: &str = "STORE_KILL_SEED";

/// Byte `o` of file `f`: the workload writes nothing else.
fn byte(f: usize, o: u64) -> u8 {
    let x = (o ^ ((f as u64) << 48)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (x >> 56) as u8
}

fn config(mode: &str) -> FsConfig {
    let mut c: FsConfig = mode.parse().expect("a store setting");
    if let FsConfig::Store { blocks, .. } = &mut c {
        *blocks = 8192;
    }
    c
}

fn real_stack(dir: &std::path::Path) -> Result<Stack, RuntimeError> {
    Stack::builder()
        .directory(dir)
        .cores(1)
        .allow_write_existing(true)
        .build()
}

/// Why the real world cannot run here, if it cannot.
fn unavailable(dir: &std::path::Path) -> Option<String> {
    let r = real_stack(dir).and_then(|s| {
        s.run(|| async {
            let f = sluice_runtime::File::create("probe").await?;
            f.write_at(DmaBuffer::new(4096), 0).await.0.map(|_| ())
        })
    });
    let m = match r {
        Ok(out) => out.value.err()?.to_string(),
        Err(e) => e.to_string(),
    };
    let known = ["io_uring", "file table", "O_DIRECT", "direct I/O"];
    if known.iter().any(|k| m.contains(k)) {
        return Some(m);
    }
    panic!("the real stack failed: {m}");
}

/// The child: appends to its files (buffered or direct, seeded lengths), fsyncs or
/// fdatasyncs, and prints `FSYNCED file length` once each returned — until killed.
#[test]
#[ignore = "the child process of real_process_killed_mid_workload_recovers"]
fn child_workload() {
    let (Ok(dir), Ok(mode), Ok(seed)) = (
        std::env::var(CHILD_DIR),
        std::env::var(CHILD_MODE),
        std::env::var(CHILD_SEED),
    ) else {
        return;
    };
    let seed: u64 = seed.parse().unwrap();
    real_stack(dir.as_ref())
        .unwrap()
        .run(move || async move {
            let fs = Fs::mount(&config(&mode)).await.unwrap();
            let mut files = Vec::new();
            for f in 0..FILES {
                files.push(fs.create(&format!("f{f}")).await.unwrap());
            }
            fs.sync().await.unwrap();
            println!("READY");
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
            for _ in 0..100_000 {
                let f = rng.random_range(0..FILES);
                let h = &files[f];
                let off = h.len();
                let n = rng.random_range(1..20_000u64);
                let v: Vec<u8> = (off..off + n).map(|o| byte(f, o)).collect();
                if rng.random_bool(0.5) {
                    h.write_buffered(off, &v).await.unwrap();
                } else {
                    h.write_at(DmaBuffer::from_slice(&v), off).await.0.unwrap();
                }
                if rng.random_bool(0.3) {
                    let len = h.len();
                    match rng.random_bool(0.5) {
                        true => h.fsync().await.unwrap(),
                        false => h.fdatasync().await.unwrap(),
                    }
                    println!("FSYNCED {f} {len}");
                }
                if off + n > 3 << 20 {
                    // Start the file again (its old blocks are freed in the journal).
                    h.set_len(0).await.unwrap();
                    h.fsync().await.unwrap();
                    println!("FSYNCED {f} 0");
                }
            }
        })
        .unwrap();
}

/// Run the child until it has reported `kill_after` fsyncs (and a seeded moment
/// more), kill it, and return the length each file's last fsync covered.
fn run_and_kill(dir: &std::path::Path, mode: &str, seed: u64, kill_after: usize) -> Vec<u64> {
    // The test's name in this binary: its module path without the crate's name.
    let path = module_path!().split_once("::").map_or("", |(_, m)| m);
    let name = format!("{path}::child_workload");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([name.as_str(), "--exact", "--ignored", "--nocapture"])
        .args(["--test-threads", "1"])
        .env(CHILD_DIR, dir)
        .env(CHILD_MODE, mode)
        .env(CHILD_SEED, seed.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut durable = vec![0u64; FILES];
    let mut seen = 0;
    let out = BufReader::new(child.stdout.take().unwrap());
    for line in out.lines() {
        let line = line.unwrap();
        let mut w = line.split_whitespace();
        if w.next() != Some("FSYNCED") {
            continue;
        }
        let f: usize = w.next().unwrap().parse().unwrap();
        durable[f] = w.next().unwrap().parse().unwrap();
        seen += 1;
        if seen == kill_after {
            break;
        }
    }
    assert_eq!(seen, kill_after, "seed {seed}: the child ended early");
    // A moment more: the kill lands inside a write or a commit.
    std::thread::sleep(Duration::from_micros(seed % 7 * 700));
    child.kill().unwrap();
    child.wait().unwrap();
    durable
}

#[test]
fn real_process_killed_mid_workload_recovers() {
    let probe = tempfile::tempdir().unwrap();
    if let Some(why) = unavailable(probe.path()) {
        eprintln!("io_uring or direct I/O unavailable here, test skipped: {why}");
        return;
    }
    for mode in ["compound", "fjournal+async"] {
        for round in 0..2u64 {
            let seed = round * 1000 + mode.len() as u64;
            let kill_after = Xoshiro256PlusPlus::seed_from_u64(seed).random_range(1..20);
            let dir = tempfile::tempdir().unwrap();
            let durable = run_and_kill(dir.path(), mode, seed, kill_after);
            let why = format!("{mode} seed {seed}, killed after {kill_after} fsyncs");
            let cfg = config(mode);
            let (problems, files) = real_stack(dir.path())
                .unwrap()
                .run(move || async move {
                    let fs = Fs::mount(&cfg).await.unwrap();
                    let store = fs.store().unwrap().clone();
                    let mut files = Vec::new();
                    for f in 0..FILES {
                        let h = fs.open(&format!("f{f}")).await.unwrap();
                        let mut v = vec![0u8; h.len() as usize];
                        h.read_buffered(0, &mut v).await.unwrap();
                        files.push(v);
                    }
                    (store.check(), files)
                })
                .unwrap_or_else(|e| panic!("{why}: recovery: {e}"))
                .value;
            assert!(problems.is_empty(), "{why}: {problems:?}");
            for (f, v) in files.iter().enumerate() {
                assert!(
                    v.len() as u64 >= durable[f],
                    "{why}: f{f} has {} bytes, {} were fsynced",
                    v.len(),
                    durable[f]
                );
                let bad = (0..v.len()).find(|&o| v[o] != byte(f, o as u64));
                assert!(bad.is_none(), "{why}: f{f} byte {bad:?} was never written");
            }
        }
    }
}
