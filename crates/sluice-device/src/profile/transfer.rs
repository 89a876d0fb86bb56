//! `controller.transfer`: how the commands the front end holds share its host transfer.

use serde::{Deserialize, Serialize};

/// How the data transfers of the commands the controller holds share the front end's
/// bandwidth (`media.bus_bandwidth_bytes`).
///
/// `fifo` (the default): the front end serves one command at a time, in fetch order —
/// command processing and its transfer together (`controller.front_end`), so a 4 KiB
/// write fetched behind eight 128 KiB ones waits for all eight to finish moving.
///
/// `shared`: command processing stays one FIFO stage (the controller's processor, which
/// decodes commands in fetch order, `read_cmd_ns` / `write_cmd_ns` each), but the data
/// transfers of all commands past it move at once and share the bandwidth equally
/// (processor sharing): with `n` transfers in progress each moves at `bus / n`. This is
/// how PCIe behaves — a controller's DMA engines split every transfer into packets of
/// at most the link's maximum payload (128–512 bytes) and interleave the packets of the
/// commands in flight — so a small transfer among large ones waits `n` times its own
/// transfer time, not the sum of theirs. With `front_end = "max"` a command's transfer
/// starts with its processing (the two overlap) and the front end is done with it at
/// the later of their ends; with `"additive"` it starts after its processing.
/// `"additive_capped"` (a per-command link under a shared ceiling) has no shared form
/// and is refused with it.
///
/// One command alone takes exactly the time `fifo` gives it, and small commands at
/// depth are bounded by command processing in both (`1 / cmd_ns`); they differ when
/// transfers of different sizes overlap.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Transfer {
    /// One command at a time, in fetch order.
    #[default]
    Fifo,
    /// Transfers in progress share the bandwidth equally (processor sharing).
    Shared,
}

impl Transfer {
    /// Whether this is the default `fifo` (serde leaves it out of the TOML then).
    pub fn is_fifo(&self) -> bool {
        *self == Transfer::Fifo
    }
}

impl std::str::FromStr for Transfer {
    type Err = String;

    /// `fifo` or `shared` (the command line's `--transfer`).
    fn from_str(s: &str) -> Result<Transfer, String> {
        match s {
            "fifo" => Ok(Transfer::Fifo),
            "shared" => Ok(Transfer::Shared),
            _ => Err(format!(
                "unknown transfer \"{s}\": use \"fifo\" (one command's transfer at a time) or \"shared\" (the transfers in flight share the bandwidth)"
            )),
        }
    }
}

/// `controller.transfer` from any TOML value, or an error that names the key and the
/// accepted values.
pub(super) fn de_transfer<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Transfer, D::Error> {
    let v = toml::Value::deserialize(d)?;
    let accepted = "it must be \"fifo\" (one command's transfer at a time, in fetch order; the default) or \"shared\" (the transfers in progress share the bandwidth equally, as PCIe interleaves their packets)";
    match v.as_str() {
        Some("fifo") => Ok(Transfer::Fifo),
        Some("shared") => Ok(Transfer::Shared),
        Some(s) => Err(serde::de::Error::custom(format!(
            "`controller.transfer` is \"{s}\"; {accepted}"
        ))),
        None => Err(serde::de::Error::custom(format!(
            "`controller.transfer` is {v} ({}); {accepted}",
            v.type_str()
        ))),
    }
}
