//! The one value that owns everything an attempt holds — today the engine's attempt
//! permit (with its HalfOpen probe slot); the flow-control admission permits join it
//! next — and settles it exactly once however the attempt ends: judged (failure),
//! succeeded, released (a relayed request error), or dropped (client gone, request
//! cancelled; the engine's permit frees its probe slot on drop).

use std::sync::Arc;

use switchyard_resilience::{Attempt, AttemptOutcome, Engine, Recorded};

/// An attempt's permits.
pub struct AttemptGuard {
    engine: Arc<Engine>,
    attempt: Option<Attempt>,
}

impl AttemptGuard {
    /// Guards `attempt`.
    pub fn new(engine: Arc<Engine>, attempt: Attempt) -> AttemptGuard {
        AttemptGuard { engine, attempt: Some(attempt) }
    }

    /// Asks the engine for the verdict on a failed outcome and applies it. `None`
    /// when the attempt was already settled.
    pub fn fail(&mut self, outcome: &AttemptOutcome<'_>) -> Option<Recorded> {
        self.attempt.take().map(|a| self.engine.judge(a, outcome))
    }

    /// Records a success.
    pub fn succeed(&mut self) {
        if let Some(a) = self.attempt.take() {
            self.engine.record_success(a);
        }
    }

    /// Releases the permits without a result.
    pub fn release(&mut self) {
        drop(self.attempt.take());
    }
}
