//! A WRITE with FUA, a plain WRITE, a FLUSH and a READ through a real ring on a
//! temporary file, each SQE from the one mapping ([`sluice_uring::sqe`]): the kernel
//! accepts what the mapping asks (`RWF_DSYNC`, `fdatasync` of a registered file) and
//! the data comes back.

use std::os::fd::AsRawFd;

use sluice_core::Op;
use sluice_uring::{new_ring, register_slots, sqe, AlignedBuf, Piece};

#[test]
fn fua_writes_and_a_flush_complete_on_a_real_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)
        .unwrap();
    file.set_len(64 * 1024).unwrap();
    let mut ring = new_ring(8).unwrap();
    ring.submitter()
        .register_files(&[file.as_raw_fd()])
        .unwrap();
    // Two registered slots of one page; the first is written from.
    let mut region = AlignedBuf::new(2 * 4096);
    region.as_mut_slice().fill(0xA5);
    // SAFETY: `region` outlives the ring's use of it (every I/O is waited for below,
    // and the ring is dropped first).
    let registered = match unsafe { register_slots(&ring, &region, 4096) } {
        Ok(n) => {
            assert_eq!(n, 2);
            true
        }
        Err(_) => false, // a locked-memory limit too low: the plain path below
    };
    let fixed = region.as_mut_ptr();
    let mut plain = vec![0x5Au8; 4096];
    let mut back = vec![0u8; 8192];
    let piece = |op, fua, offset, buf: *mut u8, len, buf_index, tag| Piece {
        op,
        fua,
        file: 0,
        offset,
        buf,
        len,
        buf_index,
        tag,
        block_device: false,
        atomic: false,
    };
    let steps = [
        // A FUA write from the registered buffer (plain when it could not be).
        piece(Op::Write, true, 0, fixed, 4096, registered.then_some(0), 1),
        // A FUA write from a plain buffer.
        piece(Op::Write, true, 4096, plain.as_mut_ptr(), 4096, None, 2),
        // A write, then the FLUSH that covers it (submitted after it completed).
        piece(Op::Write, false, 16384, plain.as_mut_ptr(), 4096, None, 3),
        piece(Op::Flush, false, 0, std::ptr::null_mut(), 0, None, 4),
        piece(Op::Read, false, 0, back.as_mut_ptr(), 8192, None, 5),
    ];
    for p in &steps {
        let e = sqe(p);
        // SAFETY: the buffers live until the completion is reaped, just below.
        unsafe { ring.submission().push(&e) }.unwrap();
        ring.submit_and_wait(1).unwrap();
        let c = ring.completion().next().expect("one completion");
        assert_eq!(c.user_data(), p.tag as u64);
        let want = if p.op == Op::Flush { 0 } else { p.len as i32 };
        assert_eq!(
            c.result(),
            want,
            "{:?} (fua {}) returned {}",
            p.op,
            p.fua,
            c.result()
        );
    }
    assert!(back[..4096].iter().all(|&b| b == 0xA5));
    assert!(back[4096..].iter().all(|&b| b == 0x5A));
    let on_disk = std::fs::read(&path).unwrap();
    assert!(on_disk[16384..20480].iter().all(|&b| b == 0x5A));
    drop(ring);
    drop(region);
}
