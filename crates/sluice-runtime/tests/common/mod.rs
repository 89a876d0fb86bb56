//! Helpers the runtime's tests share (real-file skips, crash read-backs).

use sluice_runtime::{now, DiskImage, DmaBuffer, File, IoOptions, Op, RuntimeError, StackBuilder};

/// Whether `e` says io_uring cannot be set up here (the test then says so and returns).
pub fn skip(e: &RuntimeError) -> bool {
    let m = e.to_string();
    if m.contains("cannot create an io_uring") || m.contains("file table") {
        eprintln!("io_uring unavailable, test skipped: {m}");
        return true;
    }
    false
}

/// After a simulated crash: a new stack from `builder` on `image` reads blocks `0..n`
/// (of `block` bytes) of the file `data` back, for the caller to check.
#[allow(dead_code)] // the `hot_path` bench includes this module too and does not use it
pub fn read_back(
    builder: StackBuilder,
    image: DiskImage,
    n: u64,
    block: usize,
) -> Vec<(u64, Vec<u8>)> {
    builder
        .image(image)
        .build()
        .unwrap()
        .run(move || async move {
            let f = File::open("data").await.unwrap();
            let mut v = Vec::new();
            for b in 0..n {
                let (r, buf) = f.read_at(DmaBuffer::new(block), b * block as u64).await;
                r.unwrap();
                v.push((b, buf.to_vec()));
            }
            v
        })
        .unwrap()
        .value
}

/// A writer that keeps `depth` 128 KiB writes outstanding on its own file for `for_ns`.
#[allow(dead_code)] // the `hot_path` bench includes this module too and does not use it
pub async fn saturate(name: &'static str, depth: usize, for_ns: u64) {
    let f = File::create(name).await.unwrap();
    let end = now() + for_ns;
    let mut handles = std::collections::VecDeque::new();
    let mut off = 0u64;
    while now() < end {
        while handles.len() < depth {
            handles.push_back(f.submit(
                Op::Write,
                DmaBuffer::new(128 << 10),
                off,
                IoOptions::new(),
            ));
            off = (off + (128 << 10)) % (1 << 30);
        }
        let (r, _) = handles.pop_front().unwrap().await;
        r.unwrap();
    }
    for h in handles {
        h.await.0.unwrap();
    }
}

/// The bytes of `len`-byte block `block` in the crash tests: every 512-byte sector
/// distinct (a torn write shows at sector grain) and no byte 0 (a lost write reads as
/// zeros).
#[allow(dead_code)] // the `hot_path` bench includes this module too and does not use it
pub fn sector_pattern(block: u64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (block as usize * 131 + i / 512 * 7 + 1) as u8 | 1)
        .collect()
}
