//! An attempt in flight: handed out by [`super::Engine::begin`], consumed by
//! `record_failure` / `record_success`. It carries the dispatch time (the
//! thundering-herd guard's input) and, for a HalfOpen breaker, the probe slot. If the
//! attempt is dropped without a result (the request was cancelled), the probe slot
//! is released exactly once (RAII).

use std::sync::Arc;

use switchyard_types::UnixMillis;

use super::Inner;
use crate::breaker::BreakerObservation;

/// A dispatched attempt.
#[derive(Debug)]
pub struct Attempt {
    pub(super) inner: Arc<Inner>,
    pub(super) provider: Arc<str>,
    pub(super) connection: Arc<str>,
    pub(super) model: Arc<str>,
    pub(super) dispatched_at: UnixMillis,
    pub(super) probe: Option<u32>,
    pub(super) done: bool,
}

impl Attempt {
    /// Provider id.
    pub fn provider(&self) -> &str {
        &self.provider
    }

    /// Connection id.
    pub fn connection(&self) -> &str {
        &self.connection
    }

    /// Upstream model id.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// When the attempt was dispatched.
    pub fn dispatched_at(&self) -> UnixMillis {
        self.dispatched_at
    }

    /// Whether this attempt is its provider's HalfOpen probe.
    pub fn is_probe(&self) -> bool {
        self.probe.is_some()
    }
}

impl Drop for Attempt {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        if let Some(probe) = self.probe {
            let now = self.inner.clock.now_wall();
            self.inner.provider_transition(&self.provider, BreakerObservation::ReleaseProbe { probe }, now);
        }
    }
}
