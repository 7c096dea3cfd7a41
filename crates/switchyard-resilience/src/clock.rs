//! Time sources. The engine façade reads time only through [`Clock`]; every pure
//! function below it takes `now` as an argument, so the same inputs give the same
//! outputs.
//!
//! Wall-clock [`UnixMillis`] is used for everything persisted, shown, or aligned with
//! an upstream reset (cooldown ends, lockout expiries, breaker holds); monotonic
//! [`Instant`]s only for in-process durations. [`ManualClock`] moves both together and
//! also keeps timers ([`ManualClock::sleep_until`]) that fire when a test advances it,
//! so one clock drives the engine, the gateway's deadlines, watchdogs and waits.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use switchyard_types::UnixMillis;

/// A source of time.
pub trait Clock: Send + Sync + 'static {
    /// Monotonic time, for in-process durations.
    fn now_mono(&self) -> Instant;
    /// Wall-clock time, for anything persisted or shown.
    fn now_wall(&self) -> UnixMillis;
    /// The local time zone's offset from UTC at `at`, in milliseconds (daily quotas
    /// reset at local midnight). UTC unless the clock knows better.
    fn utc_offset_ms(&self, _at: UnixMillis) -> i64 {
        0
    }
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

    fn utc_offset_ms(&self, at: UnixMillis) -> i64 {
        use chrono::{Offset, TimeZone};
        match chrono::Local.timestamp_millis_opt(at.0) {
            chrono::LocalResult::Single(t) | chrono::LocalResult::Ambiguous(t, _) => {
                i64::from(t.offset().fix().local_minus_utc()) * 1_000
            }
            chrono::LocalResult::None => 0,
        }
    }
}

/// A timer waiting on a [`ManualClock`].
#[derive(Debug)]
struct PendingTimer {
    id: u64,
    deadline_ms: i64,
    waker: Waker,
}

/// A clock that moves only when told to. Both readings advance together; timers
/// fire when an advance reaches their deadline.
#[derive(Debug)]
pub struct ManualClock {
    origin: Instant,
    start_wall: i64,
    state: Arc<ManualState>,
}

/// What a [`ManualClock`] shares with its pending sleeps.
#[derive(Debug, Default)]
struct ManualState {
    offset_ms: AtomicI64,
    timers: Mutex<Vec<PendingTimer>>,
    next_timer: std::sync::atomic::AtomicU64,
}

impl ManualClock {
    /// A clock reading `start` on the wall.
    #[expect(clippy::disallowed_methods, reason = "an arbitrary monotonic origin; only offsets are read")]
    pub fn new(start: UnixMillis) -> ManualClock {
        ManualClock { origin: Instant::now(), start_wall: start.0, state: Arc::default() }
    }

    /// Moves both readings forward by `ms` milliseconds (negative values are ignored:
    /// time never goes backwards) and wakes every timer whose deadline passed.
    pub fn advance_ms(&self, ms: i64) {
        if ms <= 0 {
            return;
        }
        let now = self.state.offset_ms.fetch_add(ms, Ordering::SeqCst).saturating_add(ms);
        let due: Vec<Waker> = {
            let mut timers = self.state.timers.lock().unwrap_or_else(PoisonError::into_inner);
            let (due, pending): (Vec<_>, Vec<_>) = timers.drain(..).partition(|t| t.deadline_ms <= now);
            *timers = pending;
            due.into_iter().map(|t| t.waker).collect()
        };
        due.into_iter().for_each(Waker::wake);
    }

    /// Moves both readings forward by `d`.
    pub fn advance(&self, d: Duration) {
        self.advance_ms(i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    }

    /// Timers currently waiting (a test can wait for the code under test to arm one
    /// before it advances the clock).
    pub fn pending_timers(&self) -> usize {
        self.state.timers.lock().unwrap_or_else(PoisonError::into_inner).len()
    }

    /// How far ahead each waiting timer is due (a test can tell which wait the code
    /// under test is in by its length).
    pub fn pending_in(&self) -> Vec<Duration> {
        let now = self.state.offset_ms.load(Ordering::SeqCst);
        let timers = self.state.timers.lock().unwrap_or_else(PoisonError::into_inner);
        timers
            .iter()
            .map(|t| Duration::from_millis(u64::try_from(t.deadline_ms.saturating_sub(now)).unwrap_or(0)))
            .collect()
    }

    /// The monotonic instant as milliseconds since this clock's origin.
    fn offset_of(&self, at: Instant) -> i64 {
        i64::try_from(at.saturating_duration_since(self.origin).as_millis()).unwrap_or(i64::MAX)
    }

    /// A future that completes once the clock reads `deadline` or later.
    pub fn sleep_until(&self, deadline: Instant) -> ManualSleep {
        let id = self.state.next_timer.fetch_add(1, Ordering::Relaxed);
        ManualSleep { clock: Arc::clone(&self.state), deadline_ms: self.offset_of(deadline), id }
    }
}

impl Clock for ManualClock {
    fn now_mono(&self) -> Instant {
        let offset = u64::try_from(self.state.offset_ms.load(Ordering::SeqCst)).unwrap_or(0);
        self.origin + Duration::from_millis(offset)
    }

    fn now_wall(&self) -> UnixMillis {
        UnixMillis(self.start_wall.saturating_add(self.state.offset_ms.load(Ordering::SeqCst)))
    }
}

/// A wait on a [`ManualClock`].
#[derive(Debug)]
pub struct ManualSleep {
    clock: Arc<ManualState>,
    deadline_ms: i64,
    id: u64,
}

impl Future for ManualSleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut timers = self.clock.timers.lock().unwrap_or_else(PoisonError::into_inner);
        // Checked under the timers lock: an advance either ran before (and is seen
        // here) or runs after this timer is registered (and wakes it).
        if self.clock.offset_ms.load(Ordering::SeqCst) >= self.deadline_ms {
            return Poll::Ready(());
        }
        match timers.iter_mut().find(|t| t.id == self.id) {
            Some(t) => t.waker.clone_from(cx.waker()),
            None => timers.push(PendingTimer {
                id: self.id,
                deadline_ms: self.deadline_ms,
                waker: cx.waker().clone(),
            }),
        }
        Poll::Pending
    }
}

impl Drop for ManualSleep {
    fn drop(&mut self) {
        let mut timers = self.clock.timers.lock().unwrap_or_else(PoisonError::into_inner);
        timers.retain(|t| t.id != self.id);
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
        let offset = SystemClock.utc_offset_ms(SystemClock.now_wall());
        assert!(offset.abs() <= 14 * 3_600_000);
    }

    #[test]
    fn manual_timers_fire_when_the_clock_reaches_them() {
        let clock = Arc::new(ManualClock::new(UnixMillis(0)));
        let waker = Waker::noop();
        let mut cx = Context::from_waker(waker);
        let mut sleep = Box::pin(clock.sleep_until(clock.now_mono() + Duration::from_secs(5)));
        assert!(sleep.as_mut().poll(&mut cx).is_pending());
        assert_eq!(clock.pending_timers(), 1);
        clock.advance_ms(4_999);
        assert!(sleep.as_mut().poll(&mut cx).is_pending());
        assert_eq!(clock.pending_timers(), 1, "a re-poll does not register twice");
        clock.advance_ms(1);
        assert!(sleep.as_mut().poll(&mut cx).is_ready());
        let mut past = Box::pin(clock.sleep_until(clock.now_mono()));
        assert!(past.as_mut().poll(&mut cx).is_ready(), "a deadline already reached is ready at once");
    }
}
