//! The provider circuit breaker (SPEC 4.1; scope: one provider).
//!
//! `Closed` → `Degraded` (failures ≥ degradation threshold; traffic still flows) →
//! `Open{until, kind}` (failures ≥ failure threshold; provider skipped) →
//! `HalfOpen{probe_taken}` (hold elapsed; exactly one probe) → `Closed` on the probe's
//! success, `Open` again (with an escalating hold) on its failure.
//!
//! Invariants (property-tested): the state never goes Open → Closed without passing
//! HalfOpen, except by manual reset; holds never exceed base × max multiplier; lazy
//! reads ([`BreakerRecord::refreshed`]) never move state backwards in time. Only
//! provider-level failures reach the breaker (the classifier decides); a result from
//! an attempt that did not hold the current probe never moves a HalfOpen breaker.
//!
//! Fail-open: a breaker that was never told anything is Closed.

mod policy;
mod transition;
pub mod window;

use serde::{Deserialize, Serialize};
use switchyard_types::UnixMillis;
use switchyard_types::resilience::{BreakerStateName, ErrorReason};

pub use policy::{BreakerPolicy, LOCAL_FAILURE_THRESHOLD, LOCAL_RESET_TIMEOUT_MS, derived_degradation};
pub use transition::{BreakerObservation, TakenProbe, take_probe, transition};

/// The state, with the data each state needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "SCREAMING_SNAKE_CASE")]
pub enum BreakerState {
    /// Normal traffic.
    Closed,
    /// Traffic flows; failures are elevated.
    Degraded,
    /// The provider is skipped until `until`.
    Open {
        /// End of the hold.
        until: UnixMillis,
        /// The failure kind that opened it (picks the hold).
        kind: ErrorReason,
    },
    /// One probe may run; `probe_taken` is when it was handed out.
    HalfOpen {
        /// When the single probe slot was taken, if it is.
        probe_taken: Option<UnixMillis>,
    },
}

impl BreakerState {
    /// The wire name.
    pub fn name(&self) -> BreakerStateName {
        match self {
            BreakerState::Closed => BreakerStateName::Closed,
            BreakerState::Degraded => BreakerStateName::Degraded,
            BreakerState::Open { .. } => BreakerStateName::Open,
            BreakerState::HalfOpen { .. } => BreakerStateName::HalfOpen,
        }
    }
}

/// Everything a breaker remembers (also what is persisted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BreakerRecord {
    /// Current state (possibly stale: read through [`BreakerRecord::refreshed`]).
    pub state: BreakerState,
    /// Counted failures (decremented by successes).
    pub failures: u32,
    /// Failed probes since the breaker last closed.
    pub open_cycles: u32,
    /// Bumped on every state change; a probe result counts only while unchanged.
    pub generation: u32,
    /// When the last counted failure happened.
    pub last_failure_at: Option<UnixMillis>,
    /// Its kind.
    pub last_failure_kind: Option<ErrorReason>,
    /// When the current state was entered.
    pub entered_at: UnixMillis,
}

impl Default for BreakerRecord {
    fn default() -> Self {
        BreakerRecord {
            state: BreakerState::Closed,
            failures: 0,
            open_cycles: 0,
            generation: 0,
            last_failure_at: None,
            last_failure_kind: None,
            entered_at: UnixMillis(0),
        }
    }
}

/// Whether an attempt may go to the provider now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Traffic flows (Closed or Degraded).
    Allowed,
    /// HalfOpen with its probe free: the attempt must take it.
    ProbeAvailable,
    /// Refused until the given instant (Open, or HalfOpen with the probe out).
    Refused {
        /// When to look again.
        until: UnixMillis,
    },
}

/// One state change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BreakerTransition {
    /// State before.
    pub from: BreakerStateName,
    /// State after.
    pub to: BreakerStateName,
    /// Why (`elevated-failures`, `threshold`, `timeout-elapsed`, `probe-success`,
    /// `probe-failed`, `quiet-window`, `recovery`, `connection-test`, `manual-reset`,
    /// `probe-rearmed`).
    pub cause: &'static str,
}

impl BreakerRecord {
    /// The record as time has moved it: an elapsed hold becomes HalfOpen, a probe held
    /// longer than the reset timeout is re-armed, a quiet window heals Degraded (and
    /// clears a Closed count). Pure; applying it twice equals applying it once.
    pub fn refreshed(
        &self,
        now: UnixMillis,
        policy: &BreakerPolicy,
    ) -> (BreakerRecord, Option<BreakerTransition>) {
        transition::refresh(self, now, policy)
    }

    /// Admission at `now` (after refreshing).
    pub fn admission(&self, now: UnixMillis, policy: &BreakerPolicy) -> Admission {
        let (rec, _) = self.refreshed(now, policy);
        match rec.state {
            BreakerState::Closed | BreakerState::Degraded => Admission::Allowed,
            BreakerState::Open { until, .. } => Admission::Refused { until },
            BreakerState::HalfOpen { probe_taken: None } => Admission::ProbeAvailable,
            BreakerState::HalfOpen { probe_taken: Some(at) } => {
                Admission::Refused { until: at.plus_millis(i64::from(policy.reset_timeout_ms)) }
            }
        }
    }

    /// Milliseconds until traffic or a probe is allowed; 0 when it is.
    pub fn retry_after_ms(&self, now: UnixMillis, policy: &BreakerPolicy) -> u64 {
        match self.admission(now, policy) {
            Admission::Refused { until } => u64::try_from(now.millis_until(until)).unwrap_or(0),
            _ => 0,
        }
    }
}
