//! Connection cooldown (SPEC 4.2; scope: one connection).
//!
//! `Active` → `Cooling{until, reason}` (exponential `base × 2^backoffLevel`, the level
//! capped at the max backoff steps; an upstream hint wins) → `Active` once `until`
//! passes (lazily, on read). `Terminal{kind}` (banned, expired, credits exhausted) is
//! absorbing: no failure or success changes it, a transient cooldown never overwrites
//! it; only a credentials change ([`CooldownObservation::Reset`]) does.
//!
//! Thundering-herd guard: a failure (or success) of an attempt dispatched before the
//! latest cooldown started, or in its first millisecond (`backoff::same_herd`), is
//! stale — it records the error but never raises the backoff level, extends the
//! cooldown, counts toward a streak, or clears anything.
//! `backoffLevel` survives the cooldown's expiry and resets only on a success.
//!
//! Fail-open: an unknown connection is Active.

mod transition;

use serde::{Deserialize, Serialize};
use switchyard_types::UnixMillis;
use switchyard_types::resilience::{ConnectionStatus, ErrorReason};
use switchyard_types::settings::ConnectionCooldownSettings;

use crate::outcome::AuthCategory;

pub use transition::{CooldownChange, CooldownEffect, CooldownFailure, CooldownObservation, transition};

/// Retries of an auth failure before the connection is `expired` (SPEC 4.2).
pub const EXPIRED_RETRY_MAX: u32 = 3;
/// Consecutive `request_rejected` refusals that ban a connection.
pub const REJECTED_STREAK_BAN: u32 = 3;
/// Cooldown of a concurrency-limited 429 without an upstream hint.
pub const CONCURRENCY_COOLDOWN_MS: u32 = 1_000;
/// Absolute cap of a computed (hint-less) connection cooldown.
pub const MAX_COMPUTED_COOLDOWN_MS: u64 = 86_400_000;
/// Local connections: base cooldown.
pub const LOCAL_BASE_COOLDOWN_MS: u32 = 2_000;
/// Local connections: backoff steps.
pub const LOCAL_MAX_BACKOFF_STEPS: u32 = 3;
/// Characters of an error body kept as `lastError`.
pub const LAST_ERROR_CHARS: usize = 100;

/// A terminal state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TerminalKind {
    /// Banned by the upstream (ban text, or three consecutive refusals).
    Banned,
    /// Credentials expired (auth failures after [`EXPIRED_RETRY_MAX`] retries).
    Expired,
    /// Credits exhausted.
    CreditsExhausted,
}

impl TerminalKind {
    /// The status shown for it.
    pub fn status(self) -> ConnectionStatus {
        match self {
            TerminalKind::Banned => ConnectionStatus::Banned,
            TerminalKind::Expired => ConnectionStatus::Expired,
            TerminalKind::CreditsExhausted => ConnectionStatus::CreditsExhausted,
        }
    }
}

/// The state, with its data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum CooldownState {
    /// Routable.
    Active,
    /// Cooling down.
    Cooling {
        /// End of the cooldown (`rateLimitedUntil`).
        until: UnixMillis,
        /// What caused it.
        reason: ErrorReason,
    },
    /// Terminal until the credentials change.
    Terminal {
        /// Which terminal state.
        kind: TerminalKind,
        /// When it was entered.
        since: UnixMillis,
    },
}

/// The last recorded error (`lastError`, `lastErrorType`, `errorCode`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LastError {
    /// The verdict's reason.
    pub reason: ErrorReason,
    /// Upstream status, if any.
    pub status: Option<u16>,
    /// The first [`LAST_ERROR_CHARS`] characters of the error body.
    pub message: String,
    /// When it was recorded.
    pub at: UnixMillis,
}

impl LastError {
    /// An error record with the message cut to [`LAST_ERROR_CHARS`] characters.
    pub fn new(reason: ErrorReason, status: Option<u16>, body: &str, at: UnixMillis) -> LastError {
        let message = body.trim().chars().take(LAST_ERROR_CHARS).collect();
        LastError { reason, status, message, at }
    }
}

/// A connection's cooldown and health fields (what is persisted).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionHealth {
    /// Current state (possibly stale: read through [`ConnectionHealth::refreshed`]).
    pub state: CooldownState,
    /// Exponent of the next backoff; reset by a success.
    pub backoff_level: u32,
    /// When the latest cooldown started (the herd guard's reference).
    pub last_cooled_at: Option<UnixMillis>,
    /// The last recorded error.
    pub last_error: Option<LastError>,
    /// Consecutive `request_rejected` refusals.
    pub rejected_streak: u32,
    /// Consecutive auth failures (each retried with backoff).
    pub auth_failures: u32,
}

impl Default for ConnectionHealth {
    fn default() -> Self {
        ConnectionHealth {
            state: CooldownState::Active,
            backoff_level: 0,
            last_cooled_at: None,
            last_error: None,
            rejected_streak: 0,
            auth_failures: 0,
        }
    }
}

/// Whether a connection may be used now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Availability {
    /// Routable.
    Available,
    /// Cooling until the instant.
    CoolingUntil(UnixMillis),
    /// Terminal.
    Terminal(TerminalKind),
}

impl ConnectionHealth {
    /// The record with an elapsed cooldown turned back to Active (level kept). Pure;
    /// applying it at t1 then t2 equals applying it at t2.
    pub fn refreshed(&self, now: UnixMillis) -> ConnectionHealth {
        match self.state {
            CooldownState::Cooling { until, .. } if until <= now => {
                ConnectionHealth { state: CooldownState::Active, ..self.clone() }
            }
            _ => self.clone(),
        }
    }

    /// Availability at `now`.
    pub fn availability(&self, now: UnixMillis) -> Availability {
        match self.state {
            CooldownState::Cooling { until, .. } if until > now => Availability::CoolingUntil(until),
            CooldownState::Terminal { kind, .. } => Availability::Terminal(kind),
            _ => Availability::Available,
        }
    }

    /// The status shown at `now`.
    pub fn status(&self, now: UnixMillis) -> ConnectionStatus {
        match self.availability(now) {
            Availability::Available => ConnectionStatus::Active,
            Availability::CoolingUntil(_) => ConnectionStatus::Unavailable,
            Availability::Terminal(kind) => kind.status(),
        }
    }

    /// Whether there is anything an operator clear would reset.
    pub fn is_dirty(&self) -> bool {
        self.state != CooldownState::Active
            || self.backoff_level > 0
            || self.last_error.is_some()
            || self.rejected_streak > 0
            || self.auth_failures > 0
    }
}

/// Cooldown parameters for one connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CooldownPolicy {
    /// First cooldown.
    pub base_ms: u32,
    /// Highest backoff level.
    pub max_backoff_steps: u32,
    /// Whether a stream stall cools (`streamStallCooldown.enabled`).
    pub stall_cooldown: bool,
    /// The connection's `disable_cooling`: record errors, never cool transiently.
    pub disable_cooling: bool,
}

impl CooldownPolicy {
    /// The policy of a category from settings (Local uses 2 s / 3 steps).
    pub fn from_settings(
        category: AuthCategory,
        s: &ConnectionCooldownSettings,
        stall_cooldown: bool,
    ) -> Self {
        let (base_ms, max_backoff_steps) = match category {
            AuthCategory::Oauth => (s.oauth.base_cooldown_ms, s.oauth.max_backoff_steps),
            AuthCategory::ApiKey => (s.apikey.base_cooldown_ms, s.apikey.max_backoff_steps),
            AuthCategory::Local => (LOCAL_BASE_COOLDOWN_MS, LOCAL_MAX_BACKOFF_STEPS),
        };
        CooldownPolicy { base_ms, max_backoff_steps, stall_cooldown, disable_cooling: false }
    }

    /// The built-in defaults of a category.
    pub fn for_category(category: AuthCategory) -> Self {
        CooldownPolicy::from_settings(category, &ConnectionCooldownSettings::default(), false)
    }

    /// The longest cooldown this policy computes without a hint.
    pub fn computed_cap_ms(&self) -> u64 {
        crate::backoff::exponential(
            self.base_ms,
            self.max_backoff_steps,
            self.max_backoff_steps,
            MAX_COMPUTED_COOLDOWN_MS,
        )
    }
}
