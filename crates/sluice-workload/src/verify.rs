//! fio's data verification options (`verify`, `verify_pattern`, `do_verify`,
//! `verify_fatal`, `verify_backlog`): what a job asks for. The real engine acts on it
//! (`sluice-engine`'s `verify` module); the simulator carries no data and says so.

/// How a written block is checked when it is read back (fio's `verify=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VerifyKind {
    /// `crc32c` (also `crc32c-intel`): a header (magic, length, offset, sequence) and
    /// a CRC-32C over the block.
    Crc32c,
    /// `md5`: the same header with an MD5 digest.
    Md5,
    /// `pattern`: no header; the block is `verify_pattern` repeated, and must read back
    /// so.
    Pattern,
    /// `crc64`: CRC-64 (ECMA-182 polynomial, reflected: CRC-64/XZ).
    Crc64,
    /// `sha1`.
    Sha1,
    /// `sha256`.
    Sha256,
    /// `xxhash`: fio's xxhash, XXH32.
    Xxhash,
    /// `meta`: the header alone (offset, length, sequence number) is written and
    /// checked, sealed by a CRC-32C of the header; the data is not summed (it is
    /// checked against `verify_pattern` when one is given).
    Meta,
}

impl VerifyKind {
    /// fio's name.
    pub fn name(self) -> &'static str {
        match self {
            VerifyKind::Crc32c => "crc32c",
            VerifyKind::Md5 => "md5",
            VerifyKind::Pattern => "pattern",
            VerifyKind::Crc64 => "crc64",
            VerifyKind::Sha1 => "sha1",
            VerifyKind::Sha256 => "sha256",
            VerifyKind::Xxhash => "xxhash",
            VerifyKind::Meta => "meta",
        }
    }
}

/// A job's verification settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifySpec {
    /// How blocks are checked.
    pub kind: VerifyKind,
    /// `verify_pattern`: the bytes that fill a written block's data (after the header
    /// for crc32c/md5); empty: pseudo-random data.
    pub pattern: Vec<u8>,
    /// `do_verify` (default 1): read back and check every written block when the write
    /// phase ends.
    pub do_verify: bool,
    /// `verify_backlog=N`: after every N written blocks, read those back and check
    /// them before writing more.
    pub backlog: Option<u64>,
    /// `verify_fatal=1`: the job ends at the first block that fails.
    pub fatal: bool,
    /// `verify_interval=N`: a header and checksum for every N bytes of a block
    /// (`None`: one per block).
    pub interval: Option<u32>,
}

/// Read a `verify=` value: `Ok(None)` for `0`/`none`.
pub(crate) fn parse_verify_kind(v: &str) -> Result<Option<VerifyKind>, String> {
    match v.trim().to_ascii_lowercase().as_str() {
        "0" | "none" => Ok(None),
        "crc32c" | "crc32c-intel" => Ok(Some(VerifyKind::Crc32c)),
        "md5" => Ok(Some(VerifyKind::Md5)),
        "pattern" => Ok(Some(VerifyKind::Pattern)),
        "crc64" => Ok(Some(VerifyKind::Crc64)),
        "sha1" => Ok(Some(VerifyKind::Sha1)),
        "sha256" => Ok(Some(VerifyKind::Sha256)),
        "xxhash" => Ok(Some(VerifyKind::Xxhash)),
        "meta" => Ok(Some(VerifyKind::Meta)),
        "1" => Err(format!(
            "'{v}' names no checksum; write e.g. verify=crc32c (sluice's checksums: crc32c, crc64, md5, sha1, sha256, xxhash, meta, pattern)"
        )),
        other => Err(format!(
            "'{other}' is not one of sluice's checksums; use crc32c, crc64, md5, sha1, sha256, \
             xxhash, meta or pattern (fio's crc32, crc16, crc7, sha512, sha3-* are not implemented)"
        )),
    }
}

/// Read a `verify_pattern=` value as fio writes it: hex (`0xdeadbeef`, any even or odd
/// number of digits, first byte first), a quoted string (`"abc"` or `'abc'`), or a
/// decimal number 0..=255 (one byte); several of these may follow one another,
/// separated by spaces. fio's `%o` (the block's offset) is refused.
pub(crate) fn parse_pattern(v: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut rest = v.trim();
    while !rest.is_empty() {
        if let Some(q) = rest.chars().next().filter(|c| *c == '"' || *c == '\'') {
            let body = &rest[1..];
            let end = body
                .find(q)
                .ok_or_else(|| format!("'{v}': the quoted string has no closing {q}"))?;
            out.extend_from_slice(&body.as_bytes()[..end]);
            rest = body[end + 1..].trim_start();
            continue;
        }
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let word = &rest[..end];
        rest = rest[end..].trim_start();
        if word.starts_with('%') {
            return Err(format!(
                "'{word}' in '{v}': fio's %o (the offset in the pattern) is not supported; give hex bytes or a quoted string"
            ));
        }
        if let Some(hex) = word.strip_prefix("0x").or_else(|| word.strip_prefix("0X")) {
            if hex.is_empty() || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
                return Err(format!(
                    "cannot read '{word}' as hex bytes (e.g. verify_pattern=0xdeadbeef)"
                ));
            }
            // An odd number of digits: the first digit is a byte of its own, as in fio.
            let padded = if hex.len() % 2 == 1 {
                format!("0{hex}")
            } else {
                hex.to_string()
            };
            for i in (0..padded.len()).step_by(2) {
                out.push(u8::from_str_radix(&padded[i..i + 2], 16).expect("hex digits checked"));
            }
        } else {
            let n: u8 = word.parse().map_err(|_| {
                format!(
                    "cannot read '{word}' as a pattern; give hex bytes (0xdeadbeef), a quoted string (\"abc\") or a byte 0..=255"
                )
            })?;
            out.push(n);
        }
    }
    if out.is_empty() {
        return Err(format!(
            "'{v}' holds no bytes; give hex bytes (0xdeadbeef) or a quoted string (\"abc\")"
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns() {
        assert_eq!(
            parse_pattern("0xdeadbeef").unwrap(),
            vec![0xde, 0xad, 0xbe, 0xef]
        );
        assert_eq!(parse_pattern("0xabc").unwrap(), vec![0x0a, 0xbc]);
        assert_eq!(
            parse_pattern("\"ab\" 0xff 7").unwrap(),
            vec![b'a', b'b', 0xff, 7]
        );
        assert!(parse_pattern("0xzz").unwrap_err().contains("hex"));
        assert!(parse_pattern("%o").unwrap_err().contains("%o"));
        assert!(parse_pattern("\"ab").unwrap_err().contains("closing"));
        assert!(parse_pattern("300").is_err());
    }

    #[test]
    fn kinds() {
        assert_eq!(
            parse_verify_kind("CRC32C-intel").unwrap(),
            Some(VerifyKind::Crc32c)
        );
        assert_eq!(parse_verify_kind("none").unwrap(), None);
        assert_eq!(
            parse_verify_kind("sha256").unwrap(),
            Some(VerifyKind::Sha256)
        );
        assert!(parse_verify_kind("sha3-512")
            .unwrap_err()
            .contains("not implemented"));
    }
}
