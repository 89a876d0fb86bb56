//! The one mapping from a block-layer piece to an SQE: every client of the rings (the
//! engine's workers, the runtime's cores) writes its SQEs with [`sqe`], so a READ, a
//! WRITE, a WRITE with FUA and a FLUSH mean the same thing in every world that reaches
//! a file through io_uring.
//!
//! # FLUSH = `fdatasync`
//! An NVMe Flush commits to non-volatile media the data of every write that completed
//! before it was submitted (NVMe base specification, "Flush command"; writes still in
//! flight are not covered, and NVMe orders no command after another in flight). A file
//! stands in for the namespace here, and its counterpart is `fdatasync`: it writes the
//! file's dirty data and the metadata needed to read that data back (size, block
//! allocation), then flushes the backing device's volatile cache — every completed
//! write of the file durable, nothing more. A full `fsync` would also commit metadata a
//! block device has no counterpart of (timestamps): a journal commit on every FLUSH
//! after a write changed only the mtime, which measures the file system's metadata and
//! not the device's flush. On the preallocated files the engine and the runtime lay
//! out, `fdatasync` has no metadata left to write and is the device's cache flush.
//! (`IORING_OP_FSYNC` with `IORING_FSYNC_DATASYNC`; its offset and length 0: the whole
//! file.) As on NVMe, the ring orders nothing: a client submits a FLUSH after the
//! writes it is to cover completed (`IOSQE_IO_DRAIN` is not used).
//!
//! # FUA = `RWF_DSYNC`
//! A Write with Force Unit Access completes only once its data is on non-volatile media
//! — this one write durable, no other. Its counterpart is a write with `RWF_DSYNC`
//! (O_DSYNC for this write alone): it completes once its data and the metadata to read
//! it are durable. For an `O_DIRECT` overwrite of allocated blocks Linux sends the very
//! bio with `REQ_FUA` (or, on a device without FUA, follows it with a cache flush); for
//! other writes it syncs the written range before completing.
//!
//! # TRIM = `fallocate(PUNCH_HOLE | KEEP_SIZE)`
//! An NVMe deallocate says the range's data is no longer needed; on a file its
//! counterpart is punching a hole: the file system frees the range's blocks (and on a
//! file system mounted with `discard`, discards them on the device), the file keeps
//! its size, and the range reads back as zeros. `IORING_OP_FALLOCATE` with mode
//! `FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE`; its `len` is the range's length. A
//! block device is not sent this (Linux turns it into a zero-out, a write of zeros,
//! not a discard).
//!
//! # TRIM on a block device = `BLOCK_URING_CMD_DISCARD`
//! On a block device (`sluice run --allow-device`) a TRIM is the device's discard,
//! `ioctl(BLKDISCARD)`'s asynchronous form: `IORING_OP_URING_CMD` with `cmd_op`
//! `BLOCK_URING_CMD_DISCARD` (Linux 6.12), the range's start in `addr` and its length
//! in `addr3`. Linux drops the range's cached pages and sends discards; a device that
//! cannot discard answers `EOPNOTSUPP`, a kernel before 6.12 `EINVAL` — the job's I/O
//! errors say so.
//!
//! # Atomic writes = `RWF_ATOMIC`
//! A write of fio's `atomic=1` (`Request::atomic`, Linux's `REQ_ATOMIC`) carries
//! `RWF_ATOMIC` (0x40, Linux 6.11): the kernel sends it to the device as one command
//! within the device's atomic write unit (NVMe AWUPF) and never splits it, so a power
//! failure leaves all of its data or none. The kernel refuses it (`EINVAL`) unless the
//! file was opened `O_DIRECT`, its length is a power of two within
//! `statx`'s `stx_atomic_write_unit_min`..`_max` and its offset a multiple of its length;
//! `EOPNOTSUPP` where the file or device has no atomic writes. The engine checks those
//! limits before the run (`sluice-engine`'s `atomic`), so a refusal comes as one line
//! at set-up, not as an I/O error per write. With FUA both flags are set.
//!
//! # Reads
//! A read carries no flag: an NVMe read with FUA (read from media, not the device's
//! cache) has no file counterpart, so a read's FUA bit is ignored.

use io_uring::{opcode, squeue, types};
use sluice_core::Op;

/// One piece as an SQE will carry it.
#[derive(Clone, Copy, Debug)]
pub struct Piece {
    /// Read, write or flush.
    pub op: Op,
    /// Force unit access (a write durable when it completes; see the module's text).
    pub fua: bool,
    /// The file: its index in the ring's table of registered files.
    pub file: u32,
    /// Offset in the file (unused by a flush).
    pub offset: u64,
    /// The buffer (unused by a flush).
    pub buf: *mut u8,
    /// Bytes to transfer (0 for a flush).
    pub len: u32,
    /// The buffer's index among the ring's registered buffers, if it is one of them.
    pub buf_index: Option<u16>,
    /// The piece's tag, the SQE's `user_data`.
    pub tag: u32,
    /// The file is a block device (a TRIM is a discard, not a punched hole).
    pub block_device: bool,
    /// An atomic write (`RWF_ATOMIC`; ignored for other operations).
    pub atomic: bool,
}

/// What an SQE asks of the kernel: its opcode and the flags of that opcode
/// (`rw_flags` of a read or write, `fsync_flags` of an fsync) — the decision of
/// [`meaning`], which [`sqe`] carries out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Meaning {
    /// `IORING_OP_*`.
    pub opcode: u8,
    /// `rw_flags` (read, write), `fsync_flags` (fsync) or the `fallocate` mode
    /// (trim).
    pub op_flags: u32,
}

/// The `fallocate` mode of a TRIM: `FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE`.
pub const TRIM_FALLOCATE_MODE: u32 =
    (libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE) as u32;

/// `rw_flags` of a write with FUA.
pub const FUA_RW_FLAGS: u32 = libc::RWF_DSYNC as u32;
/// `rw_flags` of an atomic write: `RWF_ATOMIC` (0x40).
pub const ATOMIC_RW_FLAGS: u32 = libc::RWF_ATOMIC as u32;
/// `fsync_flags` of a FLUSH: `IORING_FSYNC_DATASYNC`, an `fdatasync`.
pub const FLUSH_FSYNC_FLAGS: u32 = 1;
/// `BLOCK_URING_CMD_DISCARD`, `_IO(0x12, 0)` (Linux's `uapi/linux/fs.h`): a block
/// device's discard through io_uring.
pub const BLOCK_URING_CMD_DISCARD: u32 = 0x12 << 8;

/// The SQE of a block-layer `op` (with FUA `fua`; atomic when `atomic`; through a
/// registered buffer when `fixed`; on a block device when `block_device`): READ →
/// read; WRITE → write, with `RWF_DSYNC` when FUA and `RWF_ATOMIC` when atomic; FLUSH → `fdatasync` of the file; TRIM →
/// `fallocate(PUNCH_HOLE | KEEP_SIZE)` on a file, `BLOCK_URING_CMD_DISCARD` on a block
/// device (its `cmd_op` in `op_flags`; module text: why).
pub fn meaning(op: Op, fua: bool, atomic: bool, fixed: bool, block_device: bool) -> Meaning {
    if op == Op::Trim && block_device {
        return Meaning {
            opcode: opcode::UringCmd16::CODE,
            op_flags: BLOCK_URING_CMD_DISCARD,
        };
    }
    let (opcode, op_flags) = match (op, fixed) {
        (Op::Read, false) => (opcode::Read::CODE, 0),
        (Op::Read, true) => (opcode::ReadFixed::CODE, 0),
        (Op::Write, false) => (opcode::Write::CODE, write_flags(fua, atomic)),
        (Op::Write, true) => (opcode::WriteFixed::CODE, write_flags(fua, atomic)),
        (Op::Flush, _) => (opcode::Fsync::CODE, FLUSH_FSYNC_FLAGS),
        (Op::Trim, _) => (opcode::Fallocate::CODE, TRIM_FALLOCATE_MODE),
    };
    Meaning { opcode, op_flags }
}

/// `rw_flags` of a write: `RWF_DSYNC` for FUA, `RWF_ATOMIC` for an atomic write.
fn write_flags(fua: bool, atomic: bool) -> u32 {
    (if fua { FUA_RW_FLAGS } else { 0 }) | (if atomic { ATOMIC_RW_FLAGS } else { 0 })
}

/// The SQE of piece `p`: its registered file, offset, buffer and length, the opcode and
/// flags [`meaning`] gives, `user_data` = its tag.
pub fn sqe(p: &Piece) -> squeue::Entry {
    let fd = types::Fixed(p.file);
    let m = meaning(p.op, p.fua, p.atomic, p.buf_index.is_some(), p.block_device);
    let rw = m.op_flags as i32;
    let e = match (p.op, p.buf_index) {
        (Op::Read, Some(i)) => opcode::ReadFixed::new(fd, p.buf, p.len, i)
            .offset(p.offset)
            .rw_flags(rw)
            .build(),
        (Op::Read, None) => opcode::Read::new(fd, p.buf, p.len)
            .offset(p.offset)
            .rw_flags(rw)
            .build(),
        (Op::Write, Some(i)) => opcode::WriteFixed::new(fd, p.buf, p.len, i)
            .offset(p.offset)
            .rw_flags(rw)
            .build(),
        (Op::Write, None) => opcode::Write::new(fd, p.buf, p.len)
            .offset(p.offset)
            .rw_flags(rw)
            .build(),
        (Op::Flush, _) => opcode::Fsync::new(fd)
            .flags(types::FsyncFlags::from_bits_retain(m.op_flags))
            .build(),
        (Op::Trim, _) if p.block_device => {
            let mut range = [0u8; 16];
            range[..8].copy_from_slice(&(p.len as u64).to_le_bytes());
            opcode::UringCmd16::new(fd, m.op_flags)
                .addr(Some(p.offset))
                .cmd(range)
                .build()
        }
        (Op::Trim, _) => opcode::Fallocate::new(fd, p.len as u64)
            .offset(p.offset)
            .mode(m.op_flags as i32)
            .build(),
    };
    e.user_data(p.tag as u64)
}

/// The fields of a built SQE, read back from its bytes (the kernel's `io_uring_sqe`
/// layout, which `io_uring::squeue::Entry` wraps): what a test compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SqeView {
    /// `IORING_OP_*`.
    pub opcode: u8,
    /// `IOSQE_*` flags (`IOSQE_FIXED_FILE` for a registered file).
    pub flags: u8,
    /// The file descriptor, or the registered file's index.
    pub fd: i32,
    /// Offset in the file.
    pub offset: u64,
    /// The buffer's address.
    pub addr: u64,
    /// Bytes.
    pub len: u32,
    /// `rw_flags` or `fsync_flags`.
    pub op_flags: u32,
    /// The tag.
    pub user_data: u64,
    /// The registered buffer's index.
    pub buf_index: u16,
}

impl SqeView {
    /// Its opcode and flags (a `fallocate` carries its mode in `len`, its length in
    /// `addr`).
    pub fn meaning(&self) -> Meaning {
        Meaning {
            opcode: self.opcode,
            op_flags: if self.opcode == opcode::Fallocate::CODE {
                self.len
            } else {
                self.op_flags
            },
        }
    }
}

const SQE_BYTES: usize = 64;
const _: () = assert!(std::mem::size_of::<squeue::Entry>() == SQE_BYTES);

/// Read a built SQE back.
pub fn inspect(e: &squeue::Entry) -> SqeView {
    // SAFETY: `Entry` is a `repr(C)` wrapper of the kernel's 64-byte `io_uring_sqe`
    // (size checked above), built from zeroed memory, so its 64 bytes are initialised.
    let b: &[u8; SQE_BYTES] = unsafe { &*(e as *const squeue::Entry as *const [u8; SQE_BYTES]) };
    let u16_at = |o: usize| u16::from_ne_bytes([b[o], b[o + 1]]);
    let u32_at = |o: usize| u32::from_ne_bytes(b[o..o + 4].try_into().expect("4 bytes"));
    let u64_at = |o: usize| u64::from_ne_bytes(b[o..o + 8].try_into().expect("8 bytes"));
    // struct io_uring_sqe: opcode @0, flags @1, ioprio @2, fd @4, off @8, addr @16,
    // len @24, the opcode's flags @28, user_data @32, buf_index @40.
    SqeView {
        opcode: b[0],
        flags: b[1],
        fd: u32_at(4) as i32,
        offset: u64_at(8),
        addr: u64_at(16),
        len: u32_at(24),
        op_flags: u32_at(28),
        user_data: u64_at(32),
        buf_index: u16_at(40),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn piece(op: Op, fua: bool, buf_index: Option<u16>) -> Piece {
        Piece {
            op,
            fua,
            file: 3,
            offset: 8192,
            buf: 0x1000 as *mut u8,
            len: 4096,
            buf_index,
            tag: 17,
            block_device: false,
            atomic: false,
        }
    }

    #[test]
    fn each_operation_means_what_the_module_decides() {
        let dsync = libc::RWF_DSYNC as u32;
        let datasync = io_uring::types::FsyncFlags::DATASYNC.bits();
        assert_eq!(FUA_RW_FLAGS, dsync);
        assert_eq!(FLUSH_FSYNC_FLAGS, datasync);
        let cases = [
            (Op::Read, false, None, opcode::Read::CODE, 0),
            (Op::Read, true, None, opcode::Read::CODE, 0),
            (Op::Read, false, Some(5), opcode::ReadFixed::CODE, 0),
            (Op::Write, false, None, opcode::Write::CODE, 0),
            (Op::Write, true, None, opcode::Write::CODE, dsync),
            (Op::Write, false, Some(5), opcode::WriteFixed::CODE, 0),
            (Op::Write, true, Some(5), opcode::WriteFixed::CODE, dsync),
            (Op::Flush, false, None, opcode::Fsync::CODE, datasync),
            (Op::Flush, true, Some(5), opcode::Fsync::CODE, datasync),
            (
                Op::Trim,
                false,
                None,
                opcode::Fallocate::CODE,
                TRIM_FALLOCATE_MODE,
            ),
            (
                Op::Trim,
                false,
                Some(5),
                opcode::Fallocate::CODE,
                TRIM_FALLOCATE_MODE,
            ),
        ];
        for (op, fua, idx, code, flags) in cases {
            let want = Meaning {
                opcode: code,
                op_flags: flags,
            };
            assert_eq!(
                meaning(op, fua, false, idx.is_some(), false),
                want,
                "{op:?} fua {fua}"
            );
            let v = inspect(&sqe(&piece(op, fua, idx)));
            assert_eq!(v.meaning(), want, "{op:?} fua {fua} fixed {idx:?}");
            assert_eq!(v.user_data, 17);
            assert_eq!(v.fd, 3, "the registered file's index");
            assert_ne!(
                v.flags & io_uring::squeue::Flags::FIXED_FILE.bits(),
                0,
                "a registered file"
            );
        }
    }

    /// An atomic write carries `RWF_ATOMIC` (0x40) in `rw_flags`, with `RWF_DSYNC`
    /// when it is also FUA; the flag means nothing for a read.
    #[test]
    fn an_atomic_write_carries_rwf_atomic() {
        assert_eq!(ATOMIC_RW_FLAGS, 0x40);
        let dsync = libc::RWF_DSYNC as u32;
        for (op, fua, idx, flags) in [
            (Op::Write, false, None, 0x40),
            (Op::Write, true, None, 0x40 | dsync),
            (Op::Write, false, Some(5), 0x40),
            (Op::Read, false, None, 0),
        ] {
            let p = Piece {
                atomic: true,
                ..piece(op, fua, idx)
            };
            let v = inspect(&sqe(&p));
            assert_eq!(
                v.meaning().op_flags,
                flags,
                "{op:?} fua {fua} fixed {idx:?}"
            );
            assert_eq!(meaning(op, fua, true, idx.is_some(), false), v.meaning());
        }
    }

    #[test]
    fn a_trim_punches_a_hole_of_its_range_keeping_the_size() {
        assert_eq!(TRIM_FALLOCATE_MODE, 0x01 | 0x02, "KEEP_SIZE | PUNCH_HOLE");
        let v = inspect(&sqe(&piece(Op::Trim, false, None)));
        // fallocate: offset in off, length in addr, mode in len.
        assert_eq!((v.offset, v.addr, v.len), (8192, 4096, TRIM_FALLOCATE_MODE));
    }

    /// On a block device a trim is `BLOCK_URING_CMD_DISCARD`: start in `addr`, length
    /// in `addr3` (the first 8 bytes of the command area), nothing in `len`,
    /// `rw_flags` or `ioprio` (the kernel refuses the command otherwise).
    #[test]
    fn a_trim_on_a_block_device_is_a_discard_command() {
        let p = Piece {
            block_device: true,
            ..piece(Op::Trim, false, None)
        };
        let want = Meaning {
            opcode: opcode::UringCmd16::CODE,
            op_flags: BLOCK_URING_CMD_DISCARD,
        };
        assert_eq!(meaning(Op::Trim, false, false, false, true), want);
        assert_eq!(BLOCK_URING_CMD_DISCARD, 0x1200, "_IO(0x12, 0)");
        let e = sqe(&p);
        // SAFETY: as in `inspect`: 64 initialised bytes.
        let raw: &[u8; SQE_BYTES] =
            unsafe { &*(&e as *const squeue::Entry as *const [u8; SQE_BYTES]) };
        let u32_at = |o: usize| u32::from_le_bytes(raw[o..o + 4].try_into().unwrap());
        let u64_at = |o: usize| u64::from_le_bytes(raw[o..o + 8].try_into().unwrap());
        assert_eq!(raw[0], opcode::UringCmd16::CODE);
        assert_eq!(u32_at(8), BLOCK_URING_CMD_DISCARD, "cmd_op");
        assert_eq!(u64_at(16), 8192, "addr: the start");
        assert_eq!(u64_at(48), 4096, "addr3: the length");
        assert_eq!(
            (u32_at(24), u32_at(28), raw[2], raw[3]),
            (0, 0, 0, 0),
            "len, rw_flags, ioprio"
        );
        // Other operations on a block device are as on a file.
        assert_eq!(
            meaning(Op::Write, true, false, false, true),
            meaning(Op::Write, true, false, false, false)
        );
    }

    #[test]
    fn a_transfer_carries_its_place_and_buffer_and_a_flush_the_whole_file() {
        let v = inspect(&sqe(&piece(Op::Write, true, Some(9))));
        assert_eq!(
            (v.offset, v.addr, v.len, v.buf_index),
            (8192, 0x1000, 4096, 9)
        );
        let v = inspect(&sqe(&piece(Op::Read, false, None)));
        assert_eq!((v.offset, v.addr, v.len), (8192, 0x1000, 4096));
        let v = inspect(&sqe(&piece(Op::Flush, false, None)));
        assert_eq!((v.offset, v.len), (0, 0), "fdatasync of the whole file");
    }
}
