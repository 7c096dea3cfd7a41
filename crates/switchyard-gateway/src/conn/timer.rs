//! hyper's connection timers on the gateway's clock.
//!
//! hyper asks a [`hyper::rt::Timer`] for the header-read deadline of every
//! connection. Backing it with the [`GatewayClock`] keeps DESIGN §3's "one clock":
//! production waits on tokio's timer through [`crate::clock::SystemClock`], and a
//! test that passes a [`crate::clock::ManualClock`] closes a slow client by moving
//! the clock instead of sleeping.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use crate::clock::{GatewayClock, Wait};

/// A hyper timer reading and waiting on the gateway's clock.
#[derive(Clone)]
pub struct ClockTimer(pub Arc<dyn GatewayClock>);

impl ClockTimer {
    fn clock_sleep(&self, deadline: Instant) -> ClockSleep {
        match self.0.tokio_sleep_until(deadline) {
            Some(sleep) => ClockSleep::Tokio(Box::pin(sleep)),
            None => ClockSleep::Clock(self.0.sleep_until(deadline)),
        }
    }
}

impl hyper::rt::Timer for ClockTimer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn hyper::rt::Sleep>> {
        self.sleep_until(self.0.now_mono() + duration)
    }

    fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn hyper::rt::Sleep>> {
        Box::pin(self.clock_sleep(deadline))
    }

    /// hyper resets a connection's header-read timer for every request on it: on
    /// tokio's timer the same sleep is moved (no allocation, one timer entry per
    /// connection), where the default makes a new one each time.
    fn reset(&self, sleep: &mut Pin<Box<dyn hyper::rt::Sleep>>, new_deadline: Instant) {
        if let Some(ClockSleep::Tokio(tokio_sleep)) =
            sleep.as_mut().downcast_mut_pin::<ClockSleep>().map(Pin::get_mut)
        {
            tokio_sleep.as_mut().reset(tokio::time::Instant::from_std(new_deadline));
            return;
        }
        *sleep = self.sleep_until(new_deadline);
    }

    fn now(&self) -> Instant {
        self.0.now_mono()
    }
}

/// One wait on the gateway's clock, as hyper's `Sleep`: tokio's own sleep when the
/// clock is the system clock (so that it can be reset in place), else the clock's.
enum ClockSleep {
    Tokio(Pin<Box<tokio::time::Sleep>>),
    Clock(Wait),
}

impl Future for ClockSleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        match self.get_mut() {
            ClockSleep::Tokio(sleep) => sleep.as_mut().poll(cx),
            ClockSleep::Clock(wait) => wait.as_mut().poll(cx),
        }
    }
}

impl hyper::rt::Sleep for ClockSleep {}

#[cfg(test)]
mod tests {
    use hyper::rt::Timer;
    use switchyard_types::UnixMillis;

    use super::*;
    use crate::clock::{Clock, ManualClock};

    #[test]
    fn hyper_deadlines_follow_the_manual_clock() {
        let clock = Arc::new(ManualClock::new(UnixMillis(0)));
        let timer = ClockTimer(clock.clone());
        assert_eq!(timer.now(), clock.now_mono());
        let mut sleep = timer.sleep_until(timer.now() + Duration::from_secs(10));
        let mut cx = Context::from_waker(std::task::Waker::noop());
        assert!(sleep.as_mut().poll(&mut cx).is_pending());
        clock.advance_ms(9_999);
        assert!(sleep.as_mut().poll(&mut cx).is_pending());
        clock.advance_ms(1);
        assert!(sleep.as_mut().poll(&mut cx).is_ready());
        timer.reset(&mut sleep, timer.now() + Duration::from_secs(1));
        assert!(sleep.as_mut().poll(&mut cx).is_pending(), "a reset sleep waits for its new deadline");
    }

    #[tokio::test]
    async fn on_the_system_clock_a_reset_moves_the_same_sleep() {
        let timer = ClockTimer(Arc::new(crate::clock::SystemClock));
        let mut sleep = timer.sleep_until(timer.now() + Duration::from_secs(3_600));
        let before = std::ptr::from_ref(&*sleep).cast::<()>();
        let mut cx = Context::from_waker(std::task::Waker::noop());
        assert!(sleep.as_mut().poll(&mut cx).is_pending());
        timer.reset(&mut sleep, timer.now());
        assert_eq!(std::ptr::from_ref(&*sleep).cast::<()>(), before, "reset in place, not replaced");
        tokio::time::timeout(Duration::from_secs(10), sleep)
            .await
            .unwrap_or_else(|_| panic!("the reset sleep ends at its new deadline"));
    }
}
