//! The one value that owns everything an attempt holds — the engine's attempt
//! permit (with its HalfOpen probe slot) and the flow-control permit (its place in
//! flight and its gate slots) — and settles it exactly once however the attempt
//! ends: judged (failure), succeeded, released (a relayed request error or the
//! gateway's own stop), or dropped (client gone, request cancelled, a stream cut
//! mid-way; both permits give their slots back on drop).

use std::sync::Arc;

use switchyard_resilience::flow::FlowPermit;
use switchyard_resilience::{Attempt, AttemptOutcome, Engine, Recorded};

/// An attempt's permits.
pub struct AttemptGuard {
    engine: Arc<Engine>,
    attempt: Option<Attempt>,
    flow: Option<FlowPermit>,
}

impl AttemptGuard {
    /// Guards `attempt` and its flow-control `slot`.
    pub fn new(engine: Arc<Engine>, attempt: Attempt, slot: FlowPermit) -> AttemptGuard {
        AttemptGuard { engine, attempt: Some(attempt), flow: Some(slot) }
    }

    /// Asks the engine for the verdict on a failed outcome and applies it. `None`
    /// when the attempt was already settled.
    pub fn fail(&mut self, outcome: &AttemptOutcome<'_>) -> Option<Recorded> {
        self.flow.take();
        self.attempt.take().map(|a| self.engine.judge(a, outcome))
    }

    /// Records a success.
    pub fn succeed(&mut self) {
        self.flow.take();
        if let Some(a) = self.attempt.take() {
            self.engine.record_success(a);
        }
    }

    /// Releases the permits without a result.
    pub fn release(&mut self) {
        self.flow.take();
        drop(self.attempt.take());
    }
}
