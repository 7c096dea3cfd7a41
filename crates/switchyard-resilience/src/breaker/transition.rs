//! The breaker's pure transition function: `(record, observation, now, policy) →
//! (record, transitions)`, and the lazy time-driven refresh every read goes through.

use switchyard_types::UnixMillis;
use switchyard_types::resilience::ErrorReason;

use super::{BreakerPolicy, BreakerRecord, BreakerState, BreakerTransition};
use crate::backoff::as_i64;

/// What happened to the provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakerObservation {
    /// A counted (provider-level) failure. `probe` is the probe id the attempt held.
    Failure {
        /// The failure kind (`server_error`, `timeout`, `unreachable`, or a rule's).
        kind: ErrorReason,
        /// The probe id, if the attempt held the HalfOpen probe.
        probe: Option<u32>,
    },
    /// A successful attempt.
    Success {
        /// The probe id, if the attempt held the HalfOpen probe.
        probe: Option<u32>,
    },
    /// Hand out the HalfOpen probe (see [`take_probe`]).
    TakeProbe,
    /// The probe's attempt ended without a result (cancelled): free the slot.
    ReleaseProbe {
        /// The probe id being returned.
        probe: u32,
    },
    /// A connection test of the provider succeeded: Degraded heals at once.
    ConnectionTestOk,
    /// Operator reset: back to Closed with every counter cleared.
    ManualReset,
}

fn enter(
    r: &mut BreakerRecord,
    state: BreakerState,
    now: UnixMillis,
    cause: &'static str,
) -> BreakerTransition {
    let from = r.state.name();
    r.state = state;
    r.generation = r.generation.wrapping_add(1);
    r.entered_at = now;
    BreakerTransition { from, to: state.name(), cause }
}

fn quiet(r: &BreakerRecord, now: UnixMillis, policy: &BreakerPolicy) -> bool {
    let window = as_i64(policy.quiet_window_ms(r.last_failure_kind));
    r.last_failure_at.is_none_or(|at| now.0.saturating_sub(at.0) >= window)
}

/// Time-driven changes, applied lazily on every read and before every observation.
pub(super) fn refresh(
    rec: &BreakerRecord,
    now: UnixMillis,
    policy: &BreakerPolicy,
) -> (BreakerRecord, Option<BreakerTransition>) {
    let mut r = *rec;
    let t = match r.state {
        BreakerState::Open { until, .. } if now >= until => {
            Some(enter(&mut r, BreakerState::HalfOpen { probe_taken: None }, now, "timeout-elapsed"))
        }
        BreakerState::HalfOpen { probe_taken: Some(at) }
            if now >= at.plus_millis(i64::from(policy.reset_timeout_ms)) =>
        {
            Some(enter(&mut r, BreakerState::HalfOpen { probe_taken: None }, now, "probe-rearmed"))
        }
        BreakerState::Degraded if quiet(&r, now, policy) => {
            r.failures = 0;
            Some(enter(&mut r, BreakerState::Closed, now, "quiet-window"))
        }
        BreakerState::Closed if r.failures > 0 && quiet(&r, now, policy) => {
            r.failures = 0;
            None
        }
        _ => None,
    };
    (r, t)
}

/// Applies one observation at `now` (after the lazy refresh).
pub fn transition(
    rec: &BreakerRecord,
    obs: BreakerObservation,
    now: UnixMillis,
    policy: &BreakerPolicy,
) -> (BreakerRecord, Vec<BreakerTransition>) {
    let (mut r, first) = refresh(rec, now, policy);
    let mut out: Vec<BreakerTransition> = first.into_iter().collect();
    let holds_probe = |r: &BreakerRecord, probe: Option<u32>| {
        matches!(r.state, BreakerState::HalfOpen { probe_taken: Some(_) }) && probe == Some(r.generation)
    };
    match obs {
        BreakerObservation::Failure { kind, probe } => match r.state {
            BreakerState::Closed | BreakerState::Degraded => {
                r.failures = r.failures.saturating_add(1);
                r.last_failure_at = Some(now);
                r.last_failure_kind = Some(kind);
                if r.failures >= policy.failure_threshold {
                    let until = now.plus_millis(as_i64(policy.hold_ms(Some(kind), r.open_cycles)));
                    out.push(enter(&mut r, BreakerState::Open { until, kind }, now, "threshold"));
                } else if r.state == BreakerState::Closed && r.failures >= policy.degradation_threshold {
                    out.push(enter(&mut r, BreakerState::Degraded, now, "elevated-failures"));
                }
            }
            BreakerState::HalfOpen { .. } if holds_probe(&r, probe) => {
                r.open_cycles = r.open_cycles.saturating_add(1);
                r.last_failure_at = Some(now);
                r.last_failure_kind = Some(kind);
                let until = now.plus_millis(as_i64(policy.hold_ms(Some(kind), r.open_cycles)));
                out.push(enter(&mut r, BreakerState::Open { until, kind }, now, "probe-failed"));
            }
            // A late failure while Open, or one from an attempt that did not hold the
            // probe: already accounted for.
            BreakerState::Open { .. } | BreakerState::HalfOpen { .. } => {}
        },
        BreakerObservation::Success { probe } => match r.state {
            BreakerState::Closed => r.failures = r.failures.saturating_sub(1),
            BreakerState::Degraded => {
                r.failures = r.failures.saturating_sub(1);
                if r.failures <= policy.degradation_threshold / 2 {
                    out.push(enter(&mut r, BreakerState::Closed, now, "recovery"));
                }
            }
            BreakerState::HalfOpen { .. } if holds_probe(&r, probe) => {
                r.failures = 0;
                r.open_cycles = 0;
                out.push(enter(&mut r, BreakerState::Closed, now, "probe-success"));
            }
            // A late success while Open proves nothing about now; recovery goes
            // through the probe.
            BreakerState::Open { .. } | BreakerState::HalfOpen { .. } => {}
        },
        BreakerObservation::TakeProbe => {
            if r.state == (BreakerState::HalfOpen { probe_taken: None }) {
                r.state = BreakerState::HalfOpen { probe_taken: Some(now) };
            }
        }
        BreakerObservation::ReleaseProbe { probe } => {
            if holds_probe(&r, Some(probe)) {
                r.state = BreakerState::HalfOpen { probe_taken: None };
            }
        }
        BreakerObservation::ConnectionTestOk => match r.state {
            BreakerState::Degraded => {
                r.failures = 0;
                out.push(enter(&mut r, BreakerState::Closed, now, "connection-test"));
            }
            BreakerState::Closed => r.failures = 0,
            BreakerState::Open { .. } | BreakerState::HalfOpen { .. } => {}
        },
        BreakerObservation::ManualReset => {
            let changed = r.state != BreakerState::Closed;
            let t = enter(&mut r, BreakerState::Closed, now, "manual-reset");
            r.failures = 0;
            r.open_cycles = 0;
            r.last_failure_at = None;
            r.last_failure_kind = None;
            if changed {
                out.push(t);
            }
        }
    }
    (r, out)
}

/// A probe handed out by [`take_probe`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TakenProbe {
    /// The record with the probe slot taken.
    pub record: BreakerRecord,
    /// The probe id the attempt carries back with its result.
    pub probe: u32,
    /// The lazy Open → HalfOpen change that made the probe available, if it happened
    /// on this read.
    pub refreshed: Option<BreakerTransition>,
}

/// Takes the HalfOpen probe if it is free; `None` when no probe is available.
pub fn take_probe(rec: &BreakerRecord, now: UnixMillis, policy: &BreakerPolicy) -> Option<TakenProbe> {
    let (r, refreshed) = refresh(rec, now, policy);
    if r.state != (BreakerState::HalfOpen { probe_taken: None }) {
        return None;
    }
    let (record, _) = transition(&r, BreakerObservation::TakeProbe, now, policy);
    Some(TakenProbe { record, probe: record.generation, refreshed })
}

#[cfg(test)]
mod tests;
