//! Wall-clock instants as Unix milliseconds.
//!
//! Used for anything persisted, shown, or aligned with an upstream reset. In-process
//! durations use monotonic time instead and never appear here.

use serde::{Deserialize, Serialize};

/// Milliseconds since the Unix epoch (UTC). Exported to TypeScript as `number`: a
/// double holds every millisecond instant for the next 285,000 years exactly.
/// (`i32` below only spells the TypeScript type: specta writes `f64` as
/// `number | null`, since NaN serialises as null. serde writes the full `i64`.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, specta::Type)]
#[specta(type = i32)]
pub struct UnixMillis(pub i64);

impl UnixMillis {
    /// Milliseconds from `self` until `later`, zero when `later` is not after `self`.
    pub fn millis_until(self, later: UnixMillis) -> i64 {
        (later.0 - self.0).max(0)
    }

    /// This instant moved forward by `ms` milliseconds (saturating).
    pub fn plus_millis(self, ms: i64) -> UnixMillis {
        UnixMillis(self.0.saturating_add(ms))
    }
}
