//! Time sources. The `Clock` trait lives in the resilience engine (pure code takes
//! `now`; the engine façade reads this clock); the gateway extends it with timers
//! ([`GatewayClock::sleep_until`]) so one clock drives the engine, the request path's
//! deadlines, the stream watchdogs and the deliberate waits. Production uses the
//! system clock with tokio's timer; tests pass a [`ManualClock`] and advance it.

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

pub use switchyard_resilience::clock::{Clock, ManualClock, SystemClock};

/// A boxed wait. `Sync` as well as `Send` so it can back hyper's connection timers
/// ([`crate::conn::ClockTimer`]).
pub type Wait = Pin<Box<dyn Future<Output = ()> + Send + Sync>>;

/// A clock that can also wait.
pub trait GatewayClock: Clock {
    /// Completes once the clock's monotonic reading reaches `deadline`.
    fn sleep_until(&self, deadline: Instant) -> Wait;

    /// Completes after `d` of this clock's time.
    fn sleep(&self, d: Duration) -> Wait {
        self.sleep_until(self.now_mono() + d)
    }

    /// tokio's own sleep until `deadline`, when this clock is tokio's timer: hyper's
    /// header-read timer holds it inline (one allocation a request, not a box in a
    /// box; [`crate::conn::ClockTimer`]).
    fn tokio_sleep_until(&self, _deadline: Instant) -> Option<tokio::time::Sleep> {
        None
    }
}

impl GatewayClock for SystemClock {
    fn sleep_until(&self, deadline: Instant) -> Wait {
        Box::pin(tokio_sleep(deadline))
    }

    fn tokio_sleep_until(&self, deadline: Instant) -> Option<tokio::time::Sleep> {
        Some(tokio_sleep(deadline))
    }
}

/// A sleep on tokio's timer until `deadline` of the monotonic clock.
fn tokio_sleep(deadline: Instant) -> tokio::time::Sleep {
    tokio::time::sleep_until(tokio::time::Instant::from_std(deadline))
}

impl GatewayClock for ManualClock {
    fn sleep_until(&self, deadline: Instant) -> Wait {
        Box::pin(ManualClock::sleep_until(self, deadline))
    }
}
