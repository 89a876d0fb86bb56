//! The on-disk format: 4 KiB blocks.
//!
//! ```text
//! block 0                      superblock (magic, geometry, feature flags, crc32c)
//! journal_start ..+journal     normal journal: its superblock, then transactions
//! fjournal_start ..+fjournal   FastResponse's f-transaction area
//! itable_start ..+itable       inodes, 128 bytes each (32 per block)
//! dir_start ..+dir             the one directory: entries of 64 bytes (64 per block)
//! bitmap_start ..+bitmap       block allocation bitmap (1 bit per block)
//! data_start ..                file data and indirect blocks
//! ```
//!
//! An inode (used flag, its crc32c, size, change counter, block map) maps its file by 24 direct
//! block numbers, one indirect block of 1 024 numbers and one double-indirect block of
//! 1 024 indirect blocks (files up to 4 GiB + 4 MiB + 96 KiB). Every record carries a
//! magic and a crc32c where a torn or stale write must be told apart.
//!
//! The double-indirect pointer sits in bytes 116..120 of the inode, zero in images made
//! before it existed: such an image reads as one whose files have no double-indirect
//! block, so no format version changed.
//!
//! The superblock carries incompatible-feature flags (bytes 36..44, as ext4's
//! `s_feature_incompat`): a build refuses to mount an image with a flag it does not know,
//! instead of misreading it. Images made before the flags existed hold zero there.
//!
//! With [`FEATURE_METADATA_CSUM`] (every image this build makes; ext4's
//! `metadata_csum`) the home metadata records carry a crc32c: an inode in bytes 4..8
//! (over its 128 bytes with those zero), a directory entry in bytes 60..64 (over the
//! 60 before; names are then at most 55 bytes). Mount checks every one after recovery
//! and refuses a store with a damaged one, naming it. An all-zero record (never
//! written) needs none. The bitmap is not checksummed: mount rebuilds it from the
//! inodes. The block-map blocks are full of block numbers and carry none either (the
//! journal's tags cover them in the journal, as every metadata block).

/// Bytes in a block.
pub const BLOCK: usize = 4096;
/// Direct block pointers per inode.
pub const DIRECT: usize = 24;
/// Block numbers in an indirect block.
pub const PER_INDIRECT: usize = BLOCK / 4;
/// The first block index the double-indirect block maps.
pub const DOUBLE_START: u64 = (DIRECT + PER_INDIRECT) as u64;
/// Blocks the double-indirect block maps (1 024 indirect blocks of 1 024).
pub const DOUBLE_BLOCKS: u64 = (PER_INDIRECT * PER_INDIRECT) as u64;
/// Largest file, in blocks: direct, indirect and double-indirect.
pub const MAX_FILE_BLOCKS: u64 = DOUBLE_START + DOUBLE_BLOCKS;

/// Where block `idx` of a file is mapped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    /// Direct pointer `i` of the inode.
    Direct(usize),
    /// Entry `i` of the indirect block.
    Indirect(usize),
    /// Entry `e` of the indirect block that entry `k` of the double-indirect block
    /// names.
    Double(usize, usize),
}

impl Slot {
    /// The slot of block `idx` (`None`: past the largest file).
    pub fn of(idx: u64) -> Option<Slot> {
        if idx < DIRECT as u64 {
            Some(Slot::Direct(idx as usize))
        } else if idx < DOUBLE_START {
            Some(Slot::Indirect(idx as usize - DIRECT))
        } else if idx < MAX_FILE_BLOCKS {
            let i = (idx - DOUBLE_START) as usize;
            Some(Slot::Double(i / PER_INDIRECT, i % PER_INDIRECT))
        } else {
            None
        }
    }
}

/// Block-map blocks (indirect, double-indirect and the indirect blocks under it) a file
/// of `blocks` blocks, none of them holes, needs.
pub fn map_blocks_for(blocks: u64) -> u64 {
    let single = u64::from(blocks > DIRECT as u64);
    let double = match blocks.saturating_sub(DOUBLE_START) {
        0 => 0,
        n => 1 + n.div_ceil(PER_INDIRECT as u64),
    };
    single + double
}
/// Bytes per inode.
pub const INODE_SIZE: usize = 128;
/// Inodes per block.
pub const INODES_PER_BLOCK: usize = BLOCK / INODE_SIZE;
/// Bytes per directory entry.
pub const DIRENT_SIZE: usize = 64;
/// Directory entries per block.
pub const DIRENTS_PER_BLOCK: usize = BLOCK / DIRENT_SIZE;
/// Longest file name, bytes (a directory entry keeps its crc32c in its last 4 bytes;
/// images made before [`FEATURE_METADATA_CSUM`] hold names of up to 59 bytes, which
/// still read).
pub const MAX_NAME: usize = DIRENT_SIZE - 9;

const SB_MAGIC: &[u8; 8] = b"SLUICEFS";

/// Incompatible feature: inodes may use their double-indirect pointer (bytes 116..120).
/// Every image this build makes has it; a build without it would see the files cut at
/// 4 MiB + 96 KiB and their blocks beyond as leaked.
pub const FEATURE_DOUBLE_INDIRECT: u64 = 1;
/// Incompatible feature: inodes and directory entries carry a crc32c (see the module
/// docs). A build without it would write them without one, and this build would then
/// refuse the image as damaged.
pub const FEATURE_METADATA_CSUM: u64 = 2;
/// Incompatible feature: commits go out with one FLUSH, their records carry what was
/// durable when they were written and data tags (`journal::Claims`). A build without
/// it would take a commit record whose body a crash cut for damage.
pub const FEATURE_SINGLE_FLUSH: u64 = 4;
/// The incompatible features this build knows.
pub const KNOWN_FEATURES: u64 =
    FEATURE_DOUBLE_INDIRECT | FEATURE_METADATA_CSUM | FEATURE_SINGLE_FLUSH;

/// The largest journal area (normal or f-area), blocks: 1 GiB. Recovery reads each
/// area whole into memory (ext4's journal is at most 1 GiB by default too).
pub const MAX_JOURNAL_BLOCKS: u64 = 1 << 18;

/// The geometry, as the superblock records it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// Blocks of the device or file.
    pub blocks: u64,
    /// Inodes (and directory entries).
    pub inodes: u32,
    /// Normal journal blocks (its superblock included).
    pub journal: u64,
    /// f-transaction area blocks.
    pub fjournal: u64,
    /// The home metadata records carry checksums ([`FEATURE_METADATA_CSUM`]; every
    /// image this build makes).
    pub metadata_csum: bool,
    /// Commits are single-flush ([`FEATURE_SINGLE_FLUSH`]; every image this build
    /// makes).
    pub single_flush: bool,
}

impl Geometry {
    /// A geometry for `blocks` blocks with the default areas: 1 024 inodes, a 1 MiB
    /// journal, a 1 MiB f-transaction area (ext4's default fast-commit area, 256
    /// blocks: a full area waits for a normal commit, so it should fill rarely).
    pub fn new(blocks: u64) -> Geometry {
        Geometry {
            blocks,
            inodes: 1024,
            journal: 256,
            fjournal: 256,
            metadata_csum: true,
            single_flush: true,
        }
    }
    /// First journal block (its superblock).
    pub fn journal_start(&self) -> u64 {
        1
    }
    /// First f-transaction area block.
    pub fn fjournal_start(&self) -> u64 {
        self.journal_start() + self.journal
    }
    /// First inode-table block.
    pub fn itable_start(&self) -> u64 {
        self.fjournal_start() + self.fjournal
    }
    /// Inode-table blocks.
    pub fn itable_blocks(&self) -> u64 {
        (self.inodes as u64).div_ceil(INODES_PER_BLOCK as u64)
    }
    /// First directory block.
    pub fn dir_start(&self) -> u64 {
        self.itable_start() + self.itable_blocks()
    }
    /// Directory blocks.
    pub fn dir_blocks(&self) -> u64 {
        (self.inodes as u64).div_ceil(DIRENTS_PER_BLOCK as u64)
    }
    /// First bitmap block.
    pub fn bitmap_start(&self) -> u64 {
        self.dir_start() + self.dir_blocks()
    }
    /// Bitmap blocks.
    pub fn bitmap_blocks(&self) -> u64 {
        self.blocks.div_ceil(BLOCK as u64 * 8)
    }
    /// First data block.
    pub fn data_start(&self) -> u64 {
        self.bitmap_start() + self.bitmap_blocks()
    }
    /// The block and byte offset of inode `ino` (1-based).
    pub fn inode_pos(&self, ino: u32) -> (u64, usize) {
        let i = (ino - 1) as usize;
        (
            self.itable_start() + (i / INODES_PER_BLOCK) as u64,
            i % INODES_PER_BLOCK * INODE_SIZE,
        )
    }
    /// The block and byte offset of directory slot `slot`.
    pub fn dirent_pos(&self, slot: u32) -> (u64, usize) {
        let s = slot as usize;
        (
            self.dir_start() + (s / DIRENTS_PER_BLOCK) as u64,
            s % DIRENTS_PER_BLOCK * DIRENT_SIZE,
        )
    }

    /// Check the geometry is usable. Every field is bounded before any area's start is
    /// summed (a superblock's fields are read from an image, and may be anything its
    /// checksum covers).
    pub fn validate(&self) -> Result<(), String> {
        if self.journal < 8 || self.fjournal < 4 || self.inodes == 0 {
            return Err("journal ≥ 8 blocks, f-journal ≥ 4 blocks, inodes ≥ 1".into());
        }
        for (what, n) in [("journal", self.journal), ("f-journal", self.fjournal)] {
            if n > MAX_JOURNAL_BLOCKS {
                return Err(format!(
                    "a {what} of {n} blocks: recovery reads each journal area whole, so \
                     one holds at most {MAX_JOURNAL_BLOCKS} blocks (1 GiB)"
                ));
            }
        }
        if self.blocks > u32::MAX as u64 {
            return Err(format!(
                "{} blocks: an inode's block numbers are 32-bit, so a store has at most {} \
                 blocks (16 TiB): give a smaller device",
                self.blocks,
                u32::MAX
            ));
        }
        if self.data_start() + 16 > self.blocks {
            return Err(format!(
                "{} blocks leave no room for data (metadata needs {}): give a larger device",
                self.blocks,
                self.data_start()
            ));
        }
        Ok(())
    }

    /// The superblock.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = vec![0u8; BLOCK];
        b[..8].copy_from_slice(SB_MAGIC);
        b[8..16].copy_from_slice(&self.blocks.to_le_bytes());
        b[16..20].copy_from_slice(&self.inodes.to_le_bytes());
        b[20..28].copy_from_slice(&self.journal.to_le_bytes());
        b[28..36].copy_from_slice(&self.fjournal.to_le_bytes());
        let features = FEATURE_DOUBLE_INDIRECT
            | if self.metadata_csum {
                FEATURE_METADATA_CSUM
            } else {
                0
            }
            | if self.single_flush {
                FEATURE_SINGLE_FLUSH
            } else {
                0
            };
        b[36..44].copy_from_slice(&features.to_le_bytes());
        let crc = crc32c::crc32c(&b[..BLOCK - 4]);
        b[BLOCK - 4..].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Read a superblock.
    pub fn decode(b: &[u8]) -> Result<Geometry, String> {
        if &b[..8] != SB_MAGIC {
            return Err("no sluice store here (bad superblock magic): run mkfs first".into());
        }
        if crc32c::crc32c(&b[..BLOCK - 4]) != le32(b, BLOCK - 4) {
            return Err("the superblock's checksum is wrong".into());
        }
        let features = le64(b, 36);
        let unknown = features & !KNOWN_FEATURES;
        if unknown != 0 {
            return Err(format!(
                "this store uses on-disk features this build of sluice does not know \
                 (superblock flags {unknown:#x}): mount it with the newer sluice that made it"
            ));
        }
        let g = Geometry {
            blocks: le64(b, 8),
            inodes: le32(b, 16),
            journal: le64(b, 20),
            fjournal: le64(b, 28),
            metadata_csum: features & FEATURE_METADATA_CSUM != 0,
            single_flush: features & FEATURE_SINGLE_FLUSH != 0,
        };
        g.validate()?;
        Ok(g)
    }
}

/// An inode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Inode {
    /// In use.
    pub used: bool,
    /// Bytes.
    pub size: u64,
    /// The change counter (as Linux's `i_version`): bumped by every write and every
    /// truncate that changes the size. Not essential metadata: `fdatasync` does not
    /// commit it when it is the only change (see `Store::fdatasync`).
    pub change: u64,
    /// Direct block numbers (0: a hole).
    pub direct: [u32; DIRECT],
    /// The indirect block (0: none).
    pub indirect: u32,
    /// The double-indirect block (0: none; bytes 116..120, zero in older images).
    pub double: u32,
}

impl Inode {
    /// Write it into `b` (128 bytes), with its crc32c (harmless in an image without
    /// [`FEATURE_METADATA_CSUM`]: those bytes were unused).
    pub fn encode(&self, b: &mut [u8]) {
        b[..INODE_SIZE].fill(0);
        b[0] = self.used as u8;
        b[8..16].copy_from_slice(&self.size.to_le_bytes());
        for (i, d) in self.direct.iter().enumerate() {
            b[16 + 4 * i..20 + 4 * i].copy_from_slice(&d.to_le_bytes());
        }
        b[112..116].copy_from_slice(&self.indirect.to_le_bytes());
        b[116..120].copy_from_slice(&self.double.to_le_bytes());
        b[120..128].copy_from_slice(&self.change.to_le_bytes());
        let crc = inode_crc(&b[..INODE_SIZE]);
        b[4..8].copy_from_slice(&crc.to_le_bytes());
    }

    /// The same file data reachable the same way: everything but the change counter
    /// (what `fdatasync` must make durable).
    pub fn same_data_as(&self, other: &Inode) -> bool {
        Inode {
            change: other.change,
            ..*self
        } == *other
    }

    /// Read it from `b`.
    pub fn decode(b: &[u8]) -> Inode {
        let mut direct = [0u32; DIRECT];
        for (i, d) in direct.iter_mut().enumerate() {
            *d = le32(b, 16 + 4 * i);
        }
        Inode {
            used: b[0] == 1,
            size: le64(b, 8),
            change: le64(b, 120),
            direct,
            indirect: le32(b, 112),
            double: le32(b, 116),
        }
    }
}

/// The crc32c of an inode record: over its bytes with the crc's own (4..8) as zero.
fn inode_crc(b: &[u8]) -> u32 {
    let c = crc32c::crc32c(&b[..4]);
    let c = crc32c::crc32c_append(c, &[0; 4]);
    crc32c::crc32c_append(c, &b[8..INODE_SIZE])
}

/// Whether an inode record is intact: never written (all zero) or its crc32c holds.
pub fn inode_intact(b: &[u8]) -> bool {
    let b = &b[..INODE_SIZE];
    b.iter().all(|&x| x == 0) || inode_crc(b) == le32(b, 4)
}

/// Where a directory entry keeps its crc32c (with [`FEATURE_METADATA_CSUM`]).
const DIRENT_CRC: usize = DIRENT_SIZE - 4;

/// A directory entry: (inode, name); inode 0 = free slot. With `csum`, its crc32c in
/// its last 4 bytes (the name then fits [`MAX_NAME`]).
pub fn encode_dirent(b: &mut [u8], ino: u32, name: &str, csum: bool) {
    b[..DIRENT_SIZE].fill(0);
    b[..4].copy_from_slice(&ino.to_le_bytes());
    b[4] = name.len() as u8;
    b[5..5 + name.len()].copy_from_slice(name.as_bytes());
    if csum {
        let crc = crc32c::crc32c(&b[..DIRENT_CRC]);
        b[DIRENT_CRC..DIRENT_SIZE].copy_from_slice(&crc.to_le_bytes());
    }
}

/// Whether a directory entry with a crc32c is intact: never written (all zero) or its
/// crc32c holds.
pub fn dirent_intact(b: &[u8]) -> bool {
    let b = &b[..DIRENT_SIZE];
    b.iter().all(|&x| x == 0) || crc32c::crc32c(&b[..DIRENT_CRC]) == le32(b, DIRENT_CRC)
}

/// Read a directory entry.
pub fn decode_dirent(b: &[u8]) -> Option<(u32, String)> {
    let ino = le32(b, 0);
    if ino == 0 {
        return None;
    }
    let n = (b[4] as usize).min(DIRENT_SIZE - 5);
    Some((ino, String::from_utf8_lossy(&b[5..5 + n]).into_owned()))
}

/// Little-endian u32 at `at`.
pub fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

/// Little-endian u64 at `at`.
pub fn le64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_cover_direct_indirect_and_double_indirect_blocks() {
        assert_eq!(Slot::of(0), Some(Slot::Direct(0)));
        assert_eq!(Slot::of(23), Some(Slot::Direct(23)));
        assert_eq!(Slot::of(24), Some(Slot::Indirect(0)));
        assert_eq!(Slot::of(1047), Some(Slot::Indirect(1023)));
        assert_eq!(Slot::of(1048), Some(Slot::Double(0, 0)));
        assert_eq!(Slot::of(1048 + 1025), Some(Slot::Double(1, 1)));
        assert_eq!(
            Slot::of(MAX_FILE_BLOCKS - 1),
            Some(Slot::Double(1023, 1023))
        );
        assert_eq!(Slot::of(MAX_FILE_BLOCKS), None);
        assert_eq!(
            MAX_FILE_BLOCKS * BLOCK as u64,
            (4 << 30) + (4 << 20) + (96 << 10)
        );
        assert_eq!(map_blocks_for(24), 0);
        assert_eq!(map_blocks_for(25), 1);
        assert_eq!(map_blocks_for(1048), 1);
        assert_eq!(map_blocks_for(1049), 3);
        assert_eq!(map_blocks_for(1048 + 1025), 4);
        assert_eq!(map_blocks_for(MAX_FILE_BLOCKS), 2 + 1024);
    }

    #[test]
    fn an_inode_of_an_older_image_has_no_double_indirect_block() {
        let i = Inode {
            used: true,
            size: 5 << 20,
            change: 9,
            indirect: 77,
            double: 78,
            ..Inode::default()
        };
        let mut b = [0u8; INODE_SIZE];
        i.encode(&mut b);
        assert_eq!(Inode::decode(&b), i);
        // Before the double-indirect block, bytes 116..120 were always zero.
        b[116..120].fill(0);
        assert_eq!(Inode::decode(&b).double, 0);
        assert_eq!(Inode::decode(&b).indirect, 77);
    }
}
