//! Resilience documents shared by the engine, the management API and the UI: failure
//! reasons and scopes, breaker / cooldown / lockout views, and the results of the
//! operator actions (reset breakers, clear cooldowns, clear a lockout).
//!
//! Plain data only; the state machines that produce these live in
//! `switchyard-resilience`. Remaining times are `u32` milliseconds (saturating at
//! ~49 days, longer than any cooldown the engine keeps).

use serde::{Deserialize, Serialize};

use crate::time::UnixMillis;

/// Why an upstream attempt failed, as the classifier decided (SPEC 4.8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "snake_case")]
pub enum ErrorReason {
    /// A rate limit of one account (429).
    RateLimit,
    /// A temporary quota is used up (5-hour wall, daily quota, `额度不足`).
    QuotaExhausted,
    /// The account is healthy but busy: too many concurrent requests (429 + text).
    ConcurrencyLimited,
    /// Credentials rejected (401).
    AuthError,
    /// The upstream refused this account's request (Anthropic OAuth 403 "Request not
    /// allowed"); three in a row ban the connection.
    RequestRejected,
    /// Forbidden (403) without a more specific signal: an entitlement problem.
    Forbidden,
    /// Prepaid credits or billing exhausted (terminal until reset).
    CreditsExhausted,
    /// The account was deactivated or suspended (terminal until reset).
    Banned,
    /// The model or endpoint does not exist here (404/410).
    NotFound,
    /// The provider failed (500/502/503/504, or a stream broken before its first byte).
    ServerError,
    /// The upstream timed out (408, or no response in time).
    Timeout,
    /// The upstream could not be reached (connect error).
    Unreachable,
    /// One model is overloaded (529, `overloaded_error`): not a provider outage.
    ModelCapacity,
    /// A stream produced no model output within the stall budget.
    StreamStall,
    /// The request itself was refused (400, 413, 422, ...): not about the account.
    BadRequest,
    /// A gateway-side failure (queue timeout, client gone): never held against the
    /// upstream.
    Local,
    /// Anything else.
    Unknown,
}

impl ErrorReason {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorReason::RateLimit => "rate_limit",
            ErrorReason::QuotaExhausted => "quota_exhausted",
            ErrorReason::ConcurrencyLimited => "concurrency_limited",
            ErrorReason::AuthError => "auth_error",
            ErrorReason::RequestRejected => "request_rejected",
            ErrorReason::Forbidden => "forbidden",
            ErrorReason::CreditsExhausted => "credits_exhausted",
            ErrorReason::Banned => "banned",
            ErrorReason::NotFound => "not_found",
            ErrorReason::ServerError => "server_error",
            ErrorReason::Timeout => "timeout",
            ErrorReason::Unreachable => "unreachable",
            ErrorReason::ModelCapacity => "model_capacity",
            ErrorReason::StreamStall => "stream_stall",
            ErrorReason::BadRequest => "bad_request",
            ErrorReason::Local => "local",
            ErrorReason::Unknown => "unknown",
        }
    }

    /// Every reason, in declaration order (for the ranges table and tests).
    pub const ALL: [ErrorReason; 17] = [
        ErrorReason::RateLimit,
        ErrorReason::QuotaExhausted,
        ErrorReason::ConcurrencyLimited,
        ErrorReason::AuthError,
        ErrorReason::RequestRejected,
        ErrorReason::Forbidden,
        ErrorReason::CreditsExhausted,
        ErrorReason::Banned,
        ErrorReason::NotFound,
        ErrorReason::ServerError,
        ErrorReason::Timeout,
        ErrorReason::Unreachable,
        ErrorReason::ModelCapacity,
        ErrorReason::StreamStall,
        ErrorReason::BadRequest,
        ErrorReason::Local,
        ErrorReason::Unknown,
    ];
}

/// Which layer an error rule acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "snake_case")]
pub enum RuleScope {
    /// A model lockout on the connection.
    Model,
    /// The whole provider (its breaker).
    Provider,
    /// The connection (cooldown).
    Connection,
}

impl RuleScope {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            RuleScope::Model => "model",
            RuleScope::Provider => "provider",
            RuleScope::Connection => "connection",
        }
    }
}

/// What a model lockout covers on its connection (SPEC 4.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "snake_case")]
pub enum LockScope {
    /// Every model of the quota family (429/402/403).
    QuotaFamily,
    /// The model itself (404).
    Model,
    /// Exactly this provider + connection + model (any other status).
    Exact,
}

/// A provider breaker's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum BreakerStateName {
    /// Normal traffic.
    Closed,
    /// Traffic flows; failures are elevated.
    Degraded,
    /// The provider is skipped.
    Open,
    /// One probe request is allowed.
    HalfOpen,
}

/// One provider's breaker, for `GET /api/monitoring/health`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct ProviderBreakerView {
    /// Provider id.
    pub provider: String,
    /// Current state (expired holds already refreshed).
    pub state: BreakerStateName,
    /// Counted failures.
    pub failure_count: u32,
    /// DEGRADED at this many failures.
    pub degradation_threshold: u32,
    /// OPEN at this many failures.
    pub failure_threshold: u32,
    /// When the last counted failure happened.
    pub last_failure_at: Option<UnixMillis>,
    /// The last counted failure's reason.
    pub last_failure_kind: Option<ErrorReason>,
    /// Failed probes since the breaker last closed (escalates the hold).
    pub open_cycles: u32,
    /// Milliseconds until a probe is allowed; 0 when traffic flows.
    pub retry_after_ms: u32,
    /// When the current hold ends (OPEN only).
    pub open_until: Option<UnixMillis>,
    /// Whether the optional window gate currently cools this provider.
    pub gate_cooling_until: Option<UnixMillis>,
}

/// A connection's cooldown status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "snake_case")]
pub enum ConnectionStatus {
    /// Routable.
    Active,
    /// Cooling down until `rateLimitedUntil`.
    Unavailable,
    /// Terminal: banned by the upstream.
    Banned,
    /// Terminal: credentials expired after the retries.
    Expired,
    /// Terminal: credits exhausted.
    CreditsExhausted,
}

/// One model lockout, for `GET /api/resilience/model-cooldowns`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct ModelLockoutView {
    /// Provider id.
    pub provider: String,
    /// Connection id.
    pub connection: String,
    /// The locked model, or the quota family's name.
    pub model: String,
    /// What the lock covers.
    pub scope: LockScope,
    /// Why it was locked.
    pub reason: ErrorReason,
    /// When the lock ends.
    pub expires_at: UnixMillis,
    /// Milliseconds left.
    pub remaining_ms: u32,
    /// Failures counted for escalation.
    pub failure_count: u32,
}

/// One connection in the Cooldown Manager (never credentials).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionCooldownView {
    /// Connection id.
    pub connection: String,
    /// Provider id.
    pub provider: String,
    /// Routable, cooling or terminal.
    pub status: ConnectionStatus,
    /// End of the current cooldown.
    pub rate_limited_until: Option<UnixMillis>,
    /// Milliseconds of cooldown left.
    pub remaining_ms: u32,
    /// Current backoff level.
    pub backoff_level: u32,
    /// Reason of the last recorded error.
    pub last_error_kind: Option<ErrorReason>,
    /// Short text of the last error (first 100 characters).
    pub last_error: Option<String>,
    /// Upstream status of the last error.
    pub error_code: Option<u16>,
    /// When the last error was recorded.
    pub last_error_at: Option<UnixMillis>,
    /// The connection's active model lockouts.
    pub lockouts: Vec<ModelLockoutView>,
}

/// Which connections `POST /api/resilience/cooldowns` clears.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CooldownsClearRequest {
    /// These connections.
    #[serde(default)]
    pub connection_ids: Vec<String>,
    /// Every connection (of `provider`, when given).
    #[serde(default)]
    pub all: bool,
    /// With `all`: only this provider's connections.
    #[serde(default)]
    pub provider: Option<String>,
}

/// What a cooldown clear did. Terminal states are never cleared there.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct CooldownsClearResult {
    /// Connections whose cooldown or error state was cleared.
    pub cleared: u32,
    /// Connections that had nothing to clear (or are unknown).
    pub unchanged: u32,
    /// Terminal connections left as they are.
    pub skipped_terminal: u32,
    /// Model lockouts removed along the way.
    pub lockouts_cleared: u32,
}

/// What `POST /api/resilience/reset` did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct BreakerResetResult {
    /// Breakers returned to CLOSED.
    pub reset_count: u32,
}

/// `DELETE /api/resilience/model-cooldowns` body: re-enable one model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LockoutClearRequest {
    /// Provider id.
    pub provider: String,
    /// Connection id; absent clears the model on every connection of the provider.
    #[serde(default)]
    pub connection: Option<String>,
    /// Model (or quota family) as listed.
    pub model: String,
}

/// Why a target was left out before dispatch (`diagnostics.excluded[].reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "snake_case")]
pub enum ExclusionReason {
    /// A model lockout covers this model on this connection.
    ModelLockout,
    /// The provider's breaker is open (or half-open with its probe taken).
    CircuitOpen,
    /// The optional provider window gate cools the provider.
    ProviderCooldown,
    /// The connection is cooling down.
    ConnectionCooldown,
    /// The connection is in a terminal state (no timer).
    Unavailable,
}

/// One excluded target, for the `503 all_targets_cooling_down` diagnostics.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct ExcludedTargetView {
    /// Provider id.
    pub provider: String,
    /// Connection id.
    pub connection: String,
    /// Upstream model id.
    pub model: String,
    /// The binding reason (the one that lasts longest).
    pub reason: ExclusionReason,
    /// Whole seconds left, rounded up; `None` for a terminal state.
    pub seconds_left: Option<u32>,
}

/// `POST /api/resilience/reset` body: one provider's breaker, or all.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BreakerResetRequest {
    /// Only this provider; absent resets every breaker.
    #[serde(default)]
    pub provider: Option<String>,
}

/// What `DELETE /api/resilience/model-cooldowns` did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct LockoutClearResult {
    /// Lockouts removed.
    pub cleared: u32,
}

/// A Claude slow-lane status, as announced by `anthropic-ratelimit-unified-slow-status`
/// (SPEC 4.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "snake_case")]
pub enum ClaudeSlowStatus {
    /// Served on the slow lane.
    Active,
    /// Served at full speed; the lane is not needed right now.
    NotNeeded,
    /// Every slow slot is taken: wait and retry.
    SlotBusy,
    /// The weekly limit is reached: the lane cannot help.
    WeeklyLimit,
    /// The slow-lane budget is spent until its announced reset.
    BudgetExhausted,
    /// The account is not eligible for the lane.
    Ineligible,
    /// The lane is switched off upstream.
    Off,
    /// Any other non-empty value.
    Unrecognized,
}

/// Why a Claude low-priority lane ended (SPEC 4.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "snake_case")]
pub enum ClaudeLaneEnd {
    /// The announced reset + 60 s grace passed, or the 5-hour window rolled over.
    Reset,
    /// `weekly_limit`.
    Weekly,
    /// `budget_exhausted` (remembered until the announced budget reset).
    Budget,
    /// `off`.
    Off,
    /// `ineligible`.
    Ineligible,
    /// A wall 429 inside the lane without a slow status.
    Wall,
    /// A request waited as long as it may (`slow-max-wait` or its own budget); a
    /// 10-minute cool-off follows.
    MaxWait,
    /// `ineligible` with `overage-in-use: true`: extra usage took over.
    ExtraUsage,
    /// Ended by an operator.
    Operator,
}

/// The outcome of a Claude session-limit reset attempt (SPEC 4.3): the claim's
/// `result`, or what stopped the attempt before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "snake_case")]
pub enum ClaudeResetResult {
    /// The limit was reset.
    Reset,
    /// The account was not limited (full speed anyway).
    NotLimited,
    /// A sibling request reset it less than a minute ago.
    RecentReset,
    /// Skipped: the memo says not before `nextResetAvailableAt`.
    MemoSkip,
    /// The usage call failed or had no `juniper_tide` block.
    NoStatus,
    /// No reset on offer right now.
    NotOffered,
    /// No organization UUID configured or discovered.
    NoOrganization,
    /// This week's reset was already used.
    AlreadyUsed,
    /// The upstream asks to wait.
    Cooldown,
    /// The account is not eligible.
    Ineligible,
    /// Unknown or malformed claim answer.
    Unavailable,
    /// The claim call was rate limited (429).
    RateLimited,
    /// The claim call was refused (401/403).
    AuthError,
    /// Any other failure of the claim call.
    Error,
}

/// One Claude OAuth connection's usage-wall state, for the providers and health APIs.
/// In memory only: a restart forgets it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct ClaudeWallView {
    /// While set, every request carries `anthropic-usage-limit: slow` until this
    /// instant (announced reset + 60 s).
    pub lane_active_until: Option<UnixMillis>,
    /// The last slow status the upstream announced while the lane was active.
    pub last_slow_status: Option<ClaudeSlowStatus>,
    /// Why the lane last ended.
    pub last_lane_end: Option<ClaudeLaneEnd>,
    /// No new lane is accepted before this instant (10 minutes after a `max_wait`).
    pub cool_off_until: Option<UnixMillis>,
    /// No new lane is accepted before this instant (the announced budget reset, at
    /// most 8 days).
    pub budget_exhausted_until: Option<UnixMillis>,
    /// The last limit-reset attempt's outcome.
    pub last_reset_result: Option<ClaudeResetResult>,
    /// No limit reset is tried before this instant.
    pub next_reset_available_at: Option<UnixMillis>,
}
