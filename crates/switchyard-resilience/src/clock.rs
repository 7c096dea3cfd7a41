//! Time sources. The engine façade reads time only through [`Clock`]; every pure
//! function below it takes `now` as an argument, so the same inputs give the same
//! outputs.
//!
//! Wall-clock [`UnixMillis`] is used for everything persisted, shown, or aligned with
//! an upstream reset (cooldown ends, lockout expiries, breaker holds); monotonic
//! [`Instant`]s only for in-process durations. [`ManualClock`] moves both together,
//! for tests and for embedding in a paused-time test clock.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use switchyard_types::UnixMillis;

/// A source of time.
pub trait Clock: Send + Sync + 'static {
    /// Monotonic time, for in-process durations.
    fn now_mono(&self) -> Instant;
    /// Wall-clock time, for anything persisted or shown.
    fn now_wall(&self) -> UnixMillis;
}

/// The real clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    #[expect(clippy::disallowed_methods, reason = "the one place that reads the real monotonic clock")]
    fn now_mono(&self) -> Instant {
        Instant::now()
    }

    #[expect(clippy::disallowed_methods, reason = "the one place that reads the real wall clock")]
    fn now_wall(&self) -> UnixMillis {
        let ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
            .unwrap_or(0);
        UnixMillis(ms)
    }
}

/// A clock that moves only when told to. Both readings advance together.
#[derive(Debug)]
pub struct ManualClock {
    origin: Instant,
    start_wall: i64,
    offset_ms: AtomicI64,
}

impl ManualClock {
    /// A clock reading `start` on the wall.
    #[expect(clippy::disallowed_methods, reason = "an arbitrary monotonic origin; only offsets are read")]
    pub fn new(start: UnixMillis) -> ManualClock {
        ManualClock { origin: Instant::now(), start_wall: start.0, offset_ms: AtomicI64::new(0) }
    }

    /// Moves both readings forward by `ms` milliseconds (negative values are ignored:
    /// time never goes backwards).
    pub fn advance_ms(&self, ms: i64) {
        if ms > 0 {
            self.offset_ms.fetch_add(ms, Ordering::SeqCst);
        }
    }

    /// Moves both readings forward by `d`.
    pub fn advance(&self, d: Duration) {
        self.advance_ms(i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    }
}

impl Clock for ManualClock {
    fn now_mono(&self) -> Instant {
        let offset = u64::try_from(self.offset_ms.load(Ordering::SeqCst)).unwrap_or(0);
        self.origin + Duration::from_millis(offset)
    }

    fn now_wall(&self) -> UnixMillis {
        UnixMillis(self.start_wall.saturating_add(self.offset_ms.load(Ordering::SeqCst)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_both_readings_together() {
        let clock = ManualClock::new(UnixMillis(1_000));
        let mono = clock.now_mono();
        clock.advance_ms(2_500);
        assert_eq!(clock.now_wall(), UnixMillis(3_500));
        assert_eq!(clock.now_mono() - mono, Duration::from_millis(2_500));
        clock.advance_ms(-10_000);
        assert_eq!(clock.now_wall(), UnixMillis(3_500));
    }

    #[test]
    fn system_clock_is_after_2020() {
        assert!(SystemClock.now_wall() > UnixMillis(1_577_836_800_000));
    }
}
