//! Waiting, abstracted: the executor's deliberate waits (the Claude usage wall's
//! `slow-retry-after`, a sibling's limit reset) go through [`Sleeper`], so tests can
//! advance a manual clock instead of waiting minutes. Timeouts on network I/O stay on
//! tokio's timer: they bound real sockets.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::clock::ManualClock;

/// A boxed wait.
pub type Wait = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Something that can wait.
pub trait Sleeper: Send + Sync + 'static {
    /// Waits for `d`.
    fn sleep(&self, d: Duration) -> Wait;
}

/// The real timer.
#[derive(Debug, Default, Clone, Copy)]
pub struct TokioSleeper;

impl Sleeper for TokioSleeper {
    fn sleep(&self, d: Duration) -> Wait {
        Box::pin(tokio::time::sleep(d))
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
