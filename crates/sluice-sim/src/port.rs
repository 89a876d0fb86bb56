//! The simulated device as the block layer's port lives beside the device
//! ([`sluice_device::SimPort`]), shared with the application runtime; its flash figures
//! are read by [`sluice_metrics::DeviceFlash::of`]. Both are re-exported here for the
//! simulator's users.

pub use sluice_device::SimPort;

/// The device's flash-management figures for a report's `extra.device_flash` (a profile
/// with `[flash]`; `None` otherwise).
pub fn flash_facts(device: &sluice_device::NvmeSsd) -> Option<sluice_metrics::DeviceFlash> {
    sluice_metrics::DeviceFlash::of(device)
}
