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

impl hyper::rt::Timer for ClockTimer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn hyper::rt::Sleep>> {
        self.sleep_until(self.0.now_mono() + duration)
    }

    /// hyper asks for one for every request a connection reads (it drops the
    /// sleep once the request's head is in): on tokio's timer the sleep sits in
    /// hyper's box itself, one allocation, where the clock's boxed wait made two.
    fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn hyper::rt::Sleep>> {
        match self.0.tokio_sleep_until(deadline) {
            Some(sleep) => Box::pin(ClockSleep::Tokio { sleep }),
            None => Box::pin(ClockSleep::Clock { wait: self.0.sleep_until(deadline) }),
        }
    }

    fn now(&self) -> Instant {
        self.0.now_mono()
    }
}

pin_project_lite::pin_project! {
    /// One wait on the gateway's clock, as hyper's `Sleep`: tokio's own sleep when
    /// the clock is the system clock, else the clock's wait.
    #[project = ClockSleepProj]
    enum ClockSleep {
        Tokio { #[pin] sleep: tokio::time::Sleep },
        Clock { wait: Wait },
    }
}

impl Future for ClockSleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        match self.project() {
            ClockSleepProj::Tokio { sleep } => sleep.poll(cx),
            ClockSleepProj::Clock { wait } => wait.as_mut().poll(cx),
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
    async fn on_the_system_clock_hyper_gets_tokios_sleep() {
        let timer = ClockTimer(Arc::new(crate::clock::SystemClock));
        let mut sleep = timer.sleep_until(timer.now() + Duration::from_secs(3_600));
        assert!(
            matches!(
                sleep.as_mut().downcast_mut_pin::<ClockSleep>().as_deref(),
                Some(ClockSleep::Tokio { .. })
            ),
            "tokio's sleep, inline"
        );
        let mut cx = Context::from_waker(std::task::Waker::noop());
        assert!(sleep.as_mut().poll(&mut cx).is_pending());
        timer.reset(&mut sleep, timer.now());
        tokio::time::timeout(Duration::from_secs(10), sleep)
            .await
            .unwrap_or_else(|_| panic!("the reset sleep ends at its new deadline"));
    }
}
