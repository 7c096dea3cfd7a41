//! Time sources. Every time-dependent decision reads the clock through [`Clock`] so
//! tests can substitute a controllable one; nothing else calls `SystemTime::now`.

use std::time::{SystemTime, UNIX_EPOCH};

use switchyard_types::UnixMillis;

/// A source of wall-clock time.
pub trait Clock: Send + Sync + 'static {
    /// The current wall-clock time.
    fn now_wall(&self) -> UnixMillis;
}

/// The real clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_wall(&self) -> UnixMillis {
        let ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
            .unwrap_or(0);
        UnixMillis(ms)
    }
}
