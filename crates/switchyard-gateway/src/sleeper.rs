//! Deliberate waits (the Claude usage wall's `slow-retry-after`, a sibling's limit
//! reset) go through [`Sleeper`]. By default they wait on the gateway's clock
//! ([`ClockSleeper`]), like every deadline; a test may pass a [`ManualSleeper`] that
//! advances its manual clock at once and records each wait.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::clock::{GatewayClock, ManualClock, Wait};

/// Something that can wait.
pub trait Sleeper: Send + Sync + 'static {
    /// Waits for `d`.
    fn sleep(&self, d: Duration) -> Wait;
}

/// Waits on the gateway's clock.
pub struct ClockSleeper(pub Arc<dyn GatewayClock>);

impl Sleeper for ClockSleeper {
    fn sleep(&self, d: Duration) -> Wait {
        self.0.sleep(d)
    }
}

/// A test sleeper: each wait advances a [`ManualClock`] at once and is recorded.
#[derive(Debug, Clone)]
pub struct ManualSleeper {
    clock: Arc<ManualClock>,
    waits: Arc<Mutex<Vec<Duration>>>,
}

impl ManualSleeper {
    /// A sleeper advancing `clock`.
    pub fn new(clock: Arc<ManualClock>) -> ManualSleeper {
        ManualSleeper { clock, waits: Arc::new(Mutex::new(Vec::new())) }
    }

    /// Every wait so far, in order.
    pub fn waits(&self) -> Vec<Duration> {
        self.waits.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

impl Sleeper for ManualSleeper {
    fn sleep(&self, d: Duration) -> Wait {
        self.waits.lock().unwrap_or_else(PoisonError::into_inner).push(d);
        self.clock.advance(d);
        Box::pin(std::future::ready(()))
    }
}
