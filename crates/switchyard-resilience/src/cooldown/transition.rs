//! The connection cooldown's pure transition:
//! `(health, observation, now, policy) → (health, change)`.

use switchyard_types::UnixMillis;
use switchyard_types::resilience::ErrorReason;

use super::{
    CONCURRENCY_COOLDOWN_MS, ConnectionHealth, CooldownPolicy, CooldownState, EXPIRED_RETRY_MAX, LastError,
    MAX_COMPUTED_COOLDOWN_MS, REJECTED_STREAK_BAN, TerminalKind,
};
use crate::backoff::{as_i64, exponential, same_herd};
use crate::classify::hints::RetryHint;

/// What a failure does to the connection (decided by the engine's plan).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CooldownEffect {
    /// Exponential backoff (the hint wins); the level rises by one.
    Backoff,
    /// The account is busy: cool for 1 s (or the hint); the level is unchanged.
    Concurrency,
    /// A rule's fixed cooldown; the level is unchanged.
    Fixed {
        /// The cooldown.
        ms: u32,
    },
    /// An upstream refusal: backoff, and the streak bans at [`REJECTED_STREAK_BAN`].
    RequestRejected,
    /// Credentials rejected: backoff, `expired` after [`EXPIRED_RETRY_MAX`] retries.
    AuthFailure,
    /// Straight to a terminal state.
    Terminal(TerminalKind),
    /// Record the error, change nothing else.
    RecordOnly,
}

impl CooldownEffect {
    /// A stream stall cools only when `streamStallCooldown.enabled`.
    pub fn for_stall(stall_cooldown: bool) -> CooldownEffect {
        if stall_cooldown { CooldownEffect::Backoff } else { CooldownEffect::RecordOnly }
    }
}

/// One failure as the cooldown sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CooldownFailure {
    /// What to do.
    pub effect: CooldownEffect,
    /// The error to record.
    pub error: LastError,
    /// The upstream's retry hint.
    pub hint: Option<RetryHint>,
    /// When the failed attempt was dispatched (the herd guard's input).
    pub dispatched_at: UnixMillis,
}

/// An observation about a connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CooldownObservation {
    /// An attempt failed.
    Failure(CooldownFailure),
    /// An attempt dispatched at the given instant succeeded.
    Success {
        /// When it was dispatched.
        dispatched_at: UnixMillis,
    },
    /// Operator clear (Cooldown Manager): everything but a terminal state.
    Clear,
    /// Credentials changed or operator reset: everything, terminal included.
    Reset,
}

/// What changed, for events and persistence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CooldownChange {
    /// A cooldown started (or was extended) until the instant.
    Cooling {
        /// Its end.
        until: UnixMillis,
        /// The backoff level after it.
        level: u32,
    },
    /// A terminal state was entered.
    Terminal(TerminalKind),
    /// Only the error fields changed.
    ErrorRecorded,
    /// A stale failure (dispatched before the current cooldown) was recorded without
    /// touching the cooldown.
    Deduplicated,
    /// Error fields, level and cooldown were cleared.
    Cleared,
}

/// Applies one observation.
pub fn transition(
    health: &ConnectionHealth,
    obs: &CooldownObservation,
    now: UnixMillis,
    policy: &CooldownPolicy,
) -> (ConnectionHealth, Option<CooldownChange>) {
    let mut h = health.refreshed(now);
    let terminal = matches!(h.state, CooldownState::Terminal { .. });
    let stale = |dispatched_at: UnixMillis, h: &ConnectionHealth| {
        h.last_cooled_at.is_some_and(|c| same_herd(dispatched_at, c))
    };
    match obs {
        CooldownObservation::Failure(_)
        | CooldownObservation::Success { .. }
        | CooldownObservation::Clear
            if terminal =>
        {
            (h, None)
        }
        CooldownObservation::Failure(f) => {
            let is_stale = stale(f.dispatched_at, &h);
            h.last_error = Some(f.error.clone());
            let change = failure(&mut h, f, is_stale, now, policy);
            (h, Some(change))
        }
        CooldownObservation::Success { dispatched_at } => {
            let cooling = matches!(h.state, CooldownState::Cooling { .. });
            if (cooling && stale(*dispatched_at, &h)) || !h.is_dirty() {
                return (h, None);
            }
            (clear(h), Some(CooldownChange::Cleared))
        }
        CooldownObservation::Clear => {
            if !h.is_dirty() {
                return (h, None);
            }
            (clear(h), Some(CooldownChange::Cleared))
        }
        CooldownObservation::Reset => {
            let changed = h.is_dirty();
            (clear(h), changed.then_some(CooldownChange::Cleared))
        }
    }
}

fn clear(h: ConnectionHealth) -> ConnectionHealth {
    ConnectionHealth { last_cooled_at: h.last_cooled_at, ..ConnectionHealth::default() }
}

fn failure(
    h: &mut ConnectionHealth,
    f: &CooldownFailure,
    stale: bool,
    now: UnixMillis,
    policy: &CooldownPolicy,
) -> CooldownChange {
    let reason = f.error.reason;
    match f.effect {
        CooldownEffect::RecordOnly => return CooldownChange::ErrorRecorded,
        CooldownEffect::Terminal(kind) => return enter_terminal(h, kind, now),
        _ if stale => return CooldownChange::Deduplicated,
        _ => {}
    }
    let hint_ms = f.hint.map(|hint| hint.remaining_ms(now)).filter(|ms| *ms > 0);
    match f.effect {
        CooldownEffect::Concurrency => {
            let ms = hint_ms.unwrap_or(u64::from(CONCURRENCY_COOLDOWN_MS));
            cool(h, now, ms, reason, false, policy)
        }
        CooldownEffect::Fixed { ms } => cool(h, now, u64::from(ms), reason, true, policy),
        CooldownEffect::RequestRejected => {
            h.rejected_streak = h.rejected_streak.saturating_add(1);
            if h.rejected_streak >= REJECTED_STREAK_BAN {
                return enter_terminal(h, TerminalKind::Banned, now);
            }
            backoff(h, now, hint_ms, reason, policy)
        }
        CooldownEffect::AuthFailure => {
            h.auth_failures = h.auth_failures.saturating_add(1);
            if h.auth_failures > EXPIRED_RETRY_MAX {
                return enter_terminal(h, TerminalKind::Expired, now);
            }
            backoff(h, now, hint_ms, reason, policy)
        }
        CooldownEffect::Backoff | CooldownEffect::RecordOnly | CooldownEffect::Terminal(_) => {
            backoff(h, now, hint_ms, reason, policy)
        }
    }
}

fn enter_terminal(h: &mut ConnectionHealth, kind: TerminalKind, now: UnixMillis) -> CooldownChange {
    h.state = CooldownState::Terminal { kind, since: now };
    CooldownChange::Terminal(kind)
}

/// `base × 2^level` (capped), or the hint when there is one; the level rises.
fn backoff(
    h: &mut ConnectionHealth,
    now: UnixMillis,
    hint_ms: Option<u64>,
    reason: ErrorReason,
    policy: &CooldownPolicy,
) -> CooldownChange {
    let computed =
        exponential(policy.base_ms, h.backoff_level, policy.max_backoff_steps, MAX_COMPUTED_COOLDOWN_MS);
    h.backoff_level = h.backoff_level.saturating_add(1).min(policy.max_backoff_steps);
    cool(h, now, hint_ms.unwrap_or(computed), reason, true, policy)
}

/// Cools until `now + ms`, never shortening a running cooldown. `herd` marks the
/// start for the thundering-herd guard.
fn cool(
    h: &mut ConnectionHealth,
    now: UnixMillis,
    ms: u64,
    reason: ErrorReason,
    herd: bool,
    policy: &CooldownPolicy,
) -> CooldownChange {
    if policy.disable_cooling || ms == 0 {
        return CooldownChange::ErrorRecorded;
    }
    let mut until = now.plus_millis(as_i64(ms));
    if let CooldownState::Cooling { until: running, .. } = h.state {
        until = until.max(running);
    }
    h.state = CooldownState::Cooling { until, reason };
    if herd {
        h.last_cooled_at = Some(now);
    }
    CooldownChange::Cooling { until, level: h.backoff_level }
}

#[cfg(test)]
mod tests;
