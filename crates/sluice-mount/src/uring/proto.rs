//! The FUSE-over-io_uring layouts (Linux `include/uapi/linux/fuse.h`, ABI 7.42+) and the
//! few `fuse_*_in` structs the ring's queues decode themselves. All little-endian
//! fields at fixed offsets, read from and written to the entries' buffers.

/// `FUSE_IO_URING_CMD_REGISTER`: give the kernel an entry's buffers; it completes the
/// command when it has put a request in them.
pub const CMD_REGISTER: u32 = 1;
/// `FUSE_IO_URING_CMD_COMMIT_AND_FETCH`: the reply is in the entry's buffers; take it
/// and complete the command again with the next request.
pub const CMD_COMMIT_AND_FETCH: u32 = 2;

/// `struct fuse_uring_req_header`: `in_out[128]` (the `fuse_in_header` of a request,
/// the `fuse_out_header` of its reply), `op_in[128]` (the opcode's fixed argument),
/// then `struct fuse_uring_ent_in_out` (flags, commit_id, payload_sz, padding,
/// reserved: 32 bytes).
pub const HEADER_LEN: usize = 288;
pub const OP_IN: usize = 128;
/// `fuse_uring_ent_in_out.payload_sz`: the payload's bytes in either direction.
pub const PAYLOAD_SZ: usize = 256 + 16;

/// `sizeof(struct fuse_in_header)`, `sizeof(struct fuse_out_header)`.
pub const IN_HEADER: usize = 40;
pub const OUT_HEADER: usize = 16;

pub const FUSE_READ: u32 = 15;
pub const FUSE_WRITE: u32 = 16;
pub const FUSE_FSYNC: u32 = 20;
pub const FUSE_FLUSH: u32 = 25;
pub const FUSE_DESTROY: u32 = 38;
/// `fuse_write_in.write_flags`: clear set-user/group-ID before the write (the caller
/// lacks CAP_FSETID).
pub const FUSE_WRITE_KILL_SUIDGID: u32 = 1 << 2;
/// `fuse_fsync_in.fsync_flags`: data only.
pub const FUSE_FSYNC_FDATASYNC: u32 = 1;

#[cfg(test)]
pub fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

pub fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

pub fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// The fields of a `fuse_in_header` the queues use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InHeader {
    /// The request's length as `/dev/fuse` would give it (header and arguments).
    pub len: u32,
    pub opcode: u32,
    pub unique: u64,
    pub pid: u32,
}

impl InHeader {
    pub fn parse(b: &[u8]) -> InHeader {
        InHeader {
            len: u32_at(b, 0),
            opcode: u32_at(b, 4),
            unique: u64_at(b, 8),
            pid: u32_at(b, 32),
        }
    }
}

/// A `fuse_in_header` with no arguments (the `DESTROY` the proxy gives the session at
/// the end).
pub fn in_header(opcode: u32, unique: u64) -> [u8; IN_HEADER] {
    let mut h = [0u8; IN_HEADER];
    h[0..4].copy_from_slice(&(IN_HEADER as u32).to_le_bytes());
    h[4..8].copy_from_slice(&opcode.to_le_bytes());
    h[8..16].copy_from_slice(&unique.to_le_bytes());
    h
}

/// A `fuse_out_header`: len, error (0 or a negative errno), unique.
pub fn out_header(len: u32, error: i32, unique: u64) -> [u8; OUT_HEADER] {
    let mut h = [0u8; OUT_HEADER];
    h[0..4].copy_from_slice(&len.to_le_bytes());
    h[4..8].copy_from_slice(&error.to_le_bytes());
    h[8..16].copy_from_slice(&unique.to_le_bytes());
    h
}

/// `struct fuse_uring_cmd_req` in the SQE's 80-byte command area: flags, commit_id
/// (the `unique` of the request replied to), qid.
pub fn cmd_req(commit_id: u64, qid: u16) -> [u8; 80] {
    let mut c = [0u8; 80];
    c[8..16].copy_from_slice(&commit_id.to_le_bytes());
    c[16..18].copy_from_slice(&qid.to_le_bytes());
    c
}

/// `fuse_read_in`: fh, offset, size, read_flags, lock_owner, flags.
#[derive(Debug, PartialEq, Eq)]
pub struct ReadIn {
    pub fh: u64,
    pub offset: u64,
    pub size: u32,
    pub flags: i32,
}

pub fn read_in(op: &[u8]) -> ReadIn {
    ReadIn {
        fh: u64_at(op, 0),
        offset: u64_at(op, 8),
        size: u32_at(op, 16),
        flags: u32_at(op, 32) as i32,
    }
}

/// `fuse_write_in`: fh, offset, size, write_flags, lock_owner, flags.
#[derive(Debug, PartialEq, Eq)]
pub struct WriteIn {
    pub fh: u64,
    pub offset: u64,
    pub size: u32,
    pub write_flags: u32,
    pub flags: i32,
}

pub fn write_in(op: &[u8]) -> WriteIn {
    WriteIn {
        fh: u64_at(op, 0),
        offset: u64_at(op, 8),
        size: u32_at(op, 16),
        write_flags: u32_at(op, 20),
        flags: u32_at(op, 32) as i32,
    }
}

/// `fuse_fsync_in`: fh, fsync_flags.
pub fn fsync_in(op: &[u8]) -> (u64, u32) {
    (u64_at(op, 0), u32_at(op, 8))
}

/// The kernel's queues: one per possible CPU (`num_possible_cpus()`), from
/// `/sys/devices/system/cpu/possible` ("0-3", "0,2-5").
pub fn possible_cpus(text: &str) -> Option<usize> {
    let mut n = 0usize;
    for part in text.trim().split(',') {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.parse().ok()?, b.parse().ok()?);
                n += b.checked_sub(a)? + 1;
            }
            None => {
                part.parse::<usize>().ok()?;
                n += 1;
            }
        }
    }
    (n > 0).then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpus_lists() {
        assert_eq!(possible_cpus("0-1\n"), Some(2));
        assert_eq!(possible_cpus("0"), Some(1));
        assert_eq!(possible_cpus("0,2-5"), Some(5));
        assert_eq!(possible_cpus(""), None);
        assert_eq!(possible_cpus("3-1"), None);
    }

    #[test]
    fn headers_round_trip() {
        let h = in_header(FUSE_DESTROY, 77);
        let p = InHeader::parse(&h);
        assert_eq!((p.len, p.opcode, p.unique, p.pid), (40, 38, 77, 0));
        let o = out_header(24, -5, 9);
        assert_eq!(
            (u32_at(&o, 0), u32_at(&o, 4) as i32, u64_at(&o, 8)),
            (24, -5, 9)
        );
        let c = cmd_req(0x1122, 3);
        assert_eq!((u64_at(&c, 8), u16_at(&c, 16)), (0x1122, 3));
    }

    #[test]
    fn op_structs() {
        let mut op = [0u8; 40];
        op[0..8].copy_from_slice(&7u64.to_le_bytes());
        op[8..16].copy_from_slice(&4096u64.to_le_bytes());
        op[16..20].copy_from_slice(&512u32.to_le_bytes());
        op[20..24].copy_from_slice(&FUSE_WRITE_KILL_SUIDGID.to_le_bytes());
        op[32..36].copy_from_slice(&(libc::O_DIRECT as u32).to_le_bytes());
        let r = read_in(&op);
        assert_eq!(
            (r.fh, r.offset, r.size, r.flags),
            (7, 4096, 512, libc::O_DIRECT)
        );
        let w = write_in(&op);
        assert_eq!(w.write_flags, FUSE_WRITE_KILL_SUIDGID);
        assert_eq!(fsync_in(&op), (7, 4096));
    }
}
