//! Helpers the runtime's tests share (real-file skips, crash read-backs).

use sluice_runtime::{DiskImage, DmaBuffer, File, RuntimeError, StackBuilder};

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
