//! The cache's settings ([`CacheConfig`]): its size, the class-aware dirty ratios
//! (RCP, FAST '17 §4.3) and the background threshold, and their check.

use sluice_core::IoClass;

/// The cache's settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CacheConfig {
    /// Capacity in pages (at least 16).
    pub pages: usize,
    /// Dirty ratio for non-critical writers (RCP: 1 %).
    pub dirty_ratio_normal: f64,
    /// Dirty ratio for critical writers (RCP: 20 %, Linux's default `dirty_ratio`).
    pub dirty_ratio_critical: f64,
    /// Separate ratios per class (RCP); off: the critical ratio for everyone (Linux).
    pub class_limits: bool,
    /// Writeback starts when dirty pages pass this fraction of the non-critical limit
    /// (Linux's `dirty_background_ratio` is half of `dirty_ratio`).
    pub background: f64,
}

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig {
            pages: 16384,
            dirty_ratio_normal: 0.01,
            dirty_ratio_critical: 0.20,
            class_limits: true,
            background: 0.5,
        }
    }
}

/// A setting out of range.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("cache {field} = {value}: {hint}")]
pub struct ConfigError {
    /// The setting.
    pub field: &'static str,
    /// Its value.
    pub value: String,
    /// What to give instead.
    pub hint: &'static str,
}

impl CacheConfig {
    /// Check the settings.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let ratio = |field, v: f64| {
            if v > 0.0 && v <= 1.0 {
                Ok(())
            } else {
                Err(ConfigError {
                    field,
                    value: v.to_string(),
                    hint: "give a fraction above 0 and at most 1 (0.01 = 1 %)",
                })
            }
        };
        if self.pages < 16 {
            return Err(ConfigError {
                field: "pages",
                value: self.pages.to_string(),
                hint: "give at least 16 pages (64 KiB)",
            });
        }
        ratio("dirty_ratio_normal", self.dirty_ratio_normal)?;
        ratio("dirty_ratio_critical", self.dirty_ratio_critical)?;
        ratio("background", self.background)
    }

    /// Dirty + writeback pages a writer of `class` may reach (at least 1).
    pub fn dirty_limit(&self, class: IoClass) -> usize {
        let ratio = if class == IoClass::Critical || !self.class_limits {
            self.dirty_ratio_critical
        } else {
            self.dirty_ratio_normal
        };
        ((self.pages as f64 * ratio) as usize).max(1)
    }

    /// Dirty pages above which writeback should run.
    pub fn background_pages(&self) -> usize {
        ((self.dirty_limit(IoClass::Normal) as f64 * self.background) as usize).max(1)
    }
}
