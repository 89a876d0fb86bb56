//! Loading a profile: the builtin ones (shipped TOML compiled in), a file (at most
//! [`MAX_PROFILE_BYTES`]), and the parse errors that name the line and column.

use super::*;

const ULL_TOML: &str = include_str!("../../profiles/ull.toml");
const ZSSD_TOML: &str = include_str!("../../profiles/zssd.toml");
const NAND_TOML: &str = include_str!("../../profiles/nand.toml");
const X25M_TOML: &str = include_str!("../../profiles/x25m.toml");
const MTRON_TOML: &str = include_str!("../../profiles/mtron.toml");
const VERTEX_TOML: &str = include_str!("../../profiles/vertex.toml");
const CF_TOML: &str = include_str!("../../profiles/cf.toml");
const ZNS_TOML: &str = include_str!("../../profiles/zns.toml");

impl DeviceProfile {
    /// Names of the builtin profiles.
    pub const BUILTIN: &'static [&'static str] = &[
        "ull", "zssd", "nand", "x25m", "mtron", "vertex", "cf", "zns",
    ];

    /// A builtin profile by name (`None` for other names).
    pub fn builtin(name: &str) -> Option<DeviceProfile> {
        let text = match name {
            "ull" => ULL_TOML,
            "zssd" => ZSSD_TOML,
            "nand" => NAND_TOML,
            "x25m" => X25M_TOML,
            "mtron" => MTRON_TOML,
            "vertex" => VERTEX_TOML,
            "cf" => CF_TOML,
            "zns" => ZNS_TOML,
            _ => return None,
        };
        Some(
            DeviceProfile::from_toml_str(text, &format!("builtin:{name}"))
                .expect("builtin profiles are valid (checked by tests)"),
        )
    }

    /// Parse and validate a profile from TOML text; `origin` (a path or name) appears
    /// in error messages.
    pub fn from_toml_str(text: &str, origin: &str) -> Result<DeviceProfile, ProfileError> {
        let profile: DeviceProfile = toml::from_str(text).map_err(|e| {
            let (line, column) = match e.span() {
                Some(span) => line_col(text, span.start),
                None => (0, 0),
            };
            ProfileError::Parse {
                origin: origin.to_string(),
                line,
                column,
                message: e.message().trim().to_string(),
            }
        })?;
        profile.validate().map_err(|e| match e {
            ProfileError::Invalid { field, problem, .. } => ProfileError::Invalid {
                origin: origin.to_string(),
                field,
                problem,
            },
            other => other,
        })?;
        Ok(profile)
    }

    /// Read, parse and validate a profile file.
    pub fn load(path: &Path) -> Result<DeviceProfile, ProfileError> {
        let text = read_profile_text(path).map_err(|source| ProfileError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        DeviceProfile::from_toml_str(&text, &path.display().to_string())
    }

    /// A builtin profile by name, else a profile file (a path ending in `.toml`).
    pub fn resolve(name_or_path: &str) -> Result<DeviceProfile, ProfileError> {
        if let Some(p) = DeviceProfile::builtin(name_or_path) {
            return Ok(p);
        }
        if name_or_path.ends_with(".toml") {
            return DeviceProfile::load(Path::new(name_or_path));
        }
        Err(ProfileError::UnknownName {
            name: name_or_path.to_string(),
            builtins: DeviceProfile::BUILTIN
                .iter()
                .map(|s| s.to_string())
                .collect(),
        })
    }
}

/// 1-based (line, column) of byte `pos` in `text`.
pub(super) fn line_col(text: &str, pos: usize) -> (usize, usize) {
    let pos = pos.min(text.len());
    let before = &text.as_bytes()[..pos];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let col = pos
        - before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |p| p + 1)
        + 1;
    (line, col)
}

/// The largest profile file sluice reads: 1 MiB (a profile is a few kilobytes of TOML;
/// this bounds what a wrong path — a device, a disk image — costs before it is refused).
pub const MAX_PROFILE_BYTES: u64 = 1 << 20;

/// Read a profile file, at most [`MAX_PROFILE_BYTES`]: a larger or endless one is an
/// error saying so.
fn read_profile_text(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut f = std::fs::File::open(path)?;
    let mut bytes = Vec::new();
    (&mut f)
        .take(MAX_PROFILE_BYTES + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_PROFILE_BYTES {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "is larger than {} MiB, the most sluice reads of a device profile: give the \
                 profile (TOML text)",
                MAX_PROFILE_BYTES >> 20
            ),
        ));
    }
    String::from_utf8(bytes).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "is not UTF-8 text; give the profile (TOML)",
        )
    })
}
