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
    pace_up_to_ms: Option<u32>,
}

impl AttemptGuard {
    /// Guards `attempt` and its flow-control `slot`. `pace_up_to_ms`: the
    /// connection is under rate-limit protection, and a retry hint up to this far
    /// away paces its queue instead of cooling it.
    pub fn new(
        engine: Arc<Engine>,
        attempt: Attempt,
        slot: FlowPermit,
        pace_up_to_ms: Option<u32>,
    ) -> AttemptGuard {
        AttemptGuard { engine, attempt: Some(attempt), flow: Some(slot), pace_up_to_ms }
    }

    /// Asks the engine for the verdict on a failed outcome and applies it (a pace
    /// included). `None` when the attempt was already settled.
    pub fn fail(&mut self, outcome: &AttemptOutcome<'_>) -> Option<Recorded> {
        let slot = self.flow.take();
        let recorded =
            self.attempt.take().map(|a| self.engine.judge_protected(a, outcome, self.pace_up_to_ms))?;
        if let (Some(at), Some(slot)) = (recorded.paced_until, &slot) {
            slot.flow().pace_until(at);
        }
        Some(recorded)
    }

    /// Records a success.
    pub fn succeed(&mut self) {
        self.flow.take();
        if let Some(a) = self.attempt.take() {
            self.engine.record_success(a);
        }
    }

    /// Moves the permits into a new guard (to settle later, elsewhere); this one
    /// is left settled.
    pub fn take(&mut self) -> AttemptGuard {
        AttemptGuard {
            engine: self.engine.clone(),
            attempt: self.attempt.take(),
            flow: self.flow.take(),
            pace_up_to_ms: self.pace_up_to_ms,
        }
    }

    /// Releases the permits without a result.
    pub fn release(&mut self) {
        self.flow.take();
        drop(self.attempt.take());
    }
}
