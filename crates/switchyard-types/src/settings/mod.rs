//! The `ResilienceSettings` document (SPEC §5): one struct per group, `camelCase` on
//! the wire, every default a named constant, every duration `u32` milliseconds.
//!
//! How a document comes to be:
//! - user input (REST `PATCH /api/resilience`, IPC, config file) is parsed as a
//!   [`ResilienceSettingsPatch`] ([`parse_patch`]), merged onto the current document
//!   ([`ResilienceSettings::patched`]) and validated ([`ResilienceSettings::validate`]):
//!   anything out of range is **rejected** with every issue listed (fail-closed);
//! - values that do not come from a user's hand (env defaults, stored documents of an
//!   older version) go through [`layer`] / [`ResilienceSettings::clamp`]: they are
//!   **clamped** into range and every clamp is reported so the caller can log it;
//! - a stored document is read with [`parse_patch_lenient`]: an unknown or mistyped
//!   field (a newer version's, before a downgrade) is removed and reported, and every
//!   other field keeps its value. The config file uses the same reader only to name
//!   every unreadable field at once; any such field still rejects the file.
//!
//! One table ([`ranges::RANGES`]) drives validation, clamping and the UI's form
//! limits ([`SettingsRanges`]).

mod clamp;
mod env;
mod fields;
mod patch;
pub mod ranges;
mod stored;
mod validate;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::resilience::{ErrorReason, RuleScope};

pub use clamp::ClampNote;
pub use env::{EnvSource, Layered, MapEnv, ProcessEnv, env_var_names, layer};
pub use patch::{
    BreakerProfilePatch, ComboCooldownWaitPatch, ConnectionCooldownPatch, ConnectionCooldownProfilePatch,
    CooldownByKindPatch, ModelLockoutPatch, ProviderBreakerPatch, ProviderCooldownPatch, RequestQueuePatch,
    ResilienceSettingsPatch, StreamRecoveryPatch, ThroughputWatchdogPatch, ToggleSettingsPatch,
    WindowGatePatch, parse_patch,
};
pub use ranges::{FieldKind, FieldRange, SettingsRanges};
pub use stored::{UnreadableField, UnreadableKind, parse_patch_lenient};

/// Default provider-breaker thresholds and reset timeouts (SPEC 4.1 profiles).
pub mod defaults {
    /// OAuth profile: DEGRADED at this many failures.
    pub const BREAKER_OAUTH_DEGRADATION_THRESHOLD: u32 = 5;
    /// OAuth profile: OPEN at this many failures.
    pub const BREAKER_OAUTH_FAILURE_THRESHOLD: u32 = 8;
    /// OAuth profile: OPEN → HALF_OPEN after this long.
    pub const BREAKER_OAUTH_RESET_TIMEOUT_MS: u32 = 60_000;
    /// API-key profile: DEGRADED at this many failures.
    pub const BREAKER_APIKEY_DEGRADATION_THRESHOLD: u32 = 7;
    /// API-key profile: OPEN at this many failures.
    pub const BREAKER_APIKEY_FAILURE_THRESHOLD: u32 = 12;
    /// API-key profile: OPEN → HALF_OPEN after this long.
    pub const BREAKER_APIKEY_RESET_TIMEOUT_MS: u32 = 30_000;

    /// Window gate, OAuth: failures within the window that cool the provider.
    pub const GATE_OAUTH_FAILURE_THRESHOLD: u32 = 10;
    /// Window gate, OAuth: the window (15 min).
    pub const GATE_OAUTH_FAILURE_WINDOW_MS: u32 = 900_000;
    /// Window gate, OAuth: how long the provider cools (5 min).
    pub const GATE_OAUTH_COOLDOWN_MS: u32 = 300_000;
    /// Window gate, API key: failures within the window that cool the provider.
    pub const GATE_APIKEY_FAILURE_THRESHOLD: u32 = 15;
    /// Window gate, API key: the window (30 min).
    pub const GATE_APIKEY_FAILURE_WINDOW_MS: u32 = 1_800_000;
    /// Window gate, API key: how long the provider cools (10 min).
    pub const GATE_APIKEY_COOLDOWN_MS: u32 = 600_000;
    /// Window gate, connection entries: first cooldown.
    pub const GATE_MIN_RETRY_COOLDOWN_MS: u32 = 5_000;
    /// Window gate, connection entries: cooldown cap.
    pub const GATE_MAX_RETRY_COOLDOWN_MS: u32 = 300_000;

    /// Connection cooldown base, OAuth.
    pub const COOLDOWN_OAUTH_BASE_MS: u32 = 5_000;
    /// Connection cooldown backoff steps, OAuth.
    pub const COOLDOWN_OAUTH_MAX_BACKOFF_STEPS: u32 = 8;
    /// Connection cooldown base, API key.
    pub const COOLDOWN_APIKEY_BASE_MS: u32 = 3_000;
    /// Connection cooldown backoff steps, API key.
    pub const COOLDOWN_APIKEY_MAX_BACKOFF_STEPS: u32 = 5;

    /// Model lockout statuses (`DEFAULT_MODEL_LOCKOUT_SETTINGS`).
    pub const LOCKOUT_ERROR_CODES: [u16; 6] = [403, 404, 429, 502, 503, 504];
    /// Model lockout first cooldown.
    pub const LOCKOUT_BASE_COOLDOWN_MS: u32 = 120_000;
    /// Model lockout cooldown cap.
    pub const LOCKOUT_MAX_COOLDOWN_MS: u32 = 1_800_000;
    /// Model lockout backoff steps.
    pub const LOCKOUT_MAX_BACKOFF_STEPS: u32 = 10;

    /// Request queue wait budget.
    pub const QUEUE_MAX_WAIT_MS: u32 = 30_000;
    /// Execution bound after dispatch.
    pub const QUEUE_EXECUTION_MAX_WAIT_MS: u32 = 600_000;
    /// Queue depth cap (0 = off).
    pub const QUEUE_MAX_DEPTH: u32 = 0;

    /// Combo cooldown wait: longest single wait.
    pub const COMBO_WAIT_MAX_WAIT_MS: u32 = 90_000;
    /// Combo cooldown wait: re-dispatch cycles.
    pub const COMBO_WAIT_MAX_ATTEMPTS: u32 = 5;
    /// Combo cooldown wait: total wait per request.
    pub const COMBO_WAIT_BUDGET_MS: u32 = 300_000;

    /// Stream stall budget: no model output (or reasoning progress) for this long aborts.
    pub const STREAM_STALL_BUDGET_MS: u32 = 120_000;
    /// Readiness budget: from dispatching an attempt to its first model event (1 min).
    pub const STREAM_READINESS_BUDGET_MS: u32 = 60_000;
    /// Hard upper bound on one upstream attempt, streams included (30 min).
    pub const ATTEMPT_DEADLINE_MS: u32 = 1_800_000;
    /// Throughput watchdog warm-up.
    pub const WATCHDOG_WARMUP_MS: u32 = 30_000;
    /// Throughput watchdog window.
    pub const WATCHDOG_WINDOW_MS: u32 = 30_000;
    /// Throughput watchdog minimum rate.
    pub const WATCHDOG_MIN_BYTES_PER_SECOND: u32 = 4;
    /// Throughput watchdog minimum useful bytes per window.
    pub const WATCHDOG_MIN_USEFUL_BYTES: u32 = 1;

    /// Session affinity TTL (0 = off, as in the reference gateway).
    pub const SESSION_AFFINITY_TTL_MS: u32 = 0;
}

use defaults as d;

/// The whole resilience settings document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct ResilienceSettings {
    /// Provider circuit breaker profiles (SPEC 4.1).
    pub provider_breaker: ProviderBreakerSettings,
    /// Optional windowed provider cooldown gate (SPEC 4.1, off by default).
    pub provider_cooldown: ProviderCooldownSettings,
    /// Connection cooldown base and backoff (SPEC 4.2).
    pub connection_cooldown: ConnectionCooldownSettings,
    /// Whether a stream stall also cools the connection (default off).
    pub stream_stall_cooldown: ToggleSettings,
    /// Model lockout (SPEC 4.5, off by default).
    pub model_lockout: ModelLockoutSettings,
    /// Request queue budgets (SPEC 4.6).
    pub request_queue: RequestQueueSettings,
    /// Quota-share serialisation kill switch (default on).
    pub quota_share_concurrency_limit: ToggleSettings,
    /// Cooldown-aware combo retry (SPEC 4.6).
    pub combo_cooldown_wait: ComboCooldownWaitSettings,
    /// Stream stall and throughput watchdogs (SPEC 4.7).
    pub stream_recovery: StreamRecoverySettings,
    /// How long a client session stays pinned to one connection; 0 disables.
    pub session_affinity_ttl_ms: u32,
    /// Operator error rules, consulted before the built-in ones (SPEC 4.8).
    pub provider_error_rules: Vec<ProviderErrorRule>,
    /// Requests in flight at most per provider (all its connections together),
    /// by provider id; absent = no provider gate (SPEC 4.6).
    pub provider_concurrency: BTreeMap<String, u32>,
}

impl Default for ResilienceSettings {
    fn default() -> Self {
        ResilienceSettings {
            provider_breaker: ProviderBreakerSettings::default(),
            provider_cooldown: ProviderCooldownSettings::default(),
            connection_cooldown: ConnectionCooldownSettings::default(),
            stream_stall_cooldown: ToggleSettings { enabled: false },
            model_lockout: ModelLockoutSettings::default(),
            request_queue: RequestQueueSettings::default(),
            quota_share_concurrency_limit: ToggleSettings { enabled: true },
            combo_cooldown_wait: ComboCooldownWaitSettings::default(),
            stream_recovery: StreamRecoverySettings::default(),
            session_affinity_ttl_ms: d::SESSION_AFFINITY_TTL_MS,
            provider_error_rules: Vec::new(),
            provider_concurrency: BTreeMap::new(),
        }
    }
}

/// A group that is only an on/off switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToggleSettings {
    /// The switch.
    pub enabled: bool,
}

/// Breaker profiles editable in the UI. The `local` profile is fixed (derived / 2 /
/// 15 s) and not part of the document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct ProviderBreakerSettings {
    /// Subscription (OAuth) providers.
    pub oauth: BreakerProfileSettings,
    /// API-key providers.
    pub apikey: BreakerProfileSettings,
}

impl Default for ProviderBreakerSettings {
    fn default() -> Self {
        ProviderBreakerSettings {
            oauth: BreakerProfileSettings {
                failure_threshold: d::BREAKER_OAUTH_FAILURE_THRESHOLD,
                degradation_threshold: d::BREAKER_OAUTH_DEGRADATION_THRESHOLD,
                reset_timeout_ms: d::BREAKER_OAUTH_RESET_TIMEOUT_MS,
                cooldown_by_kind: CooldownByKind::default(),
            },
            apikey: BreakerProfileSettings {
                failure_threshold: d::BREAKER_APIKEY_FAILURE_THRESHOLD,
                degradation_threshold: d::BREAKER_APIKEY_DEGRADATION_THRESHOLD,
                reset_timeout_ms: d::BREAKER_APIKEY_RESET_TIMEOUT_MS,
                cooldown_by_kind: CooldownByKind::default(),
            },
        }
    }
}

/// One breaker profile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BreakerProfileSettings {
    /// Failures at which the breaker opens (1–1000).
    pub failure_threshold: u32,
    /// Failures at which the breaker degrades; below `failureThreshold` (1–1000).
    pub degradation_threshold: u32,
    /// How long the breaker stays open before one probe is allowed (1 s–24 h).
    pub reset_timeout_ms: u32,
    /// Per failure kind, an open hold that replaces `resetTimeoutMs`.
    #[serde(default)]
    pub cooldown_by_kind: CooldownByKind,
}

/// Open hold per breaker failure kind; an absent kind uses `resetTimeoutMs`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CooldownByKind {
    /// After 500/502/503/504 (and streams broken before their first byte).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_error: Option<u32>,
    /// After 408 or an upstream timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u32>,
    /// After a connect error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreachable: Option<u32>,
    /// After a rate limit counted by an operator rule with `provider` scope.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit: Option<u32>,
    /// After a quota exhaustion counted by an operator rule with `provider` scope.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quota_exhausted: Option<u32>,
}

/// The optional windowed provider cooldown gate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct ProviderCooldownSettings {
    /// Master switch (env `PROVIDER_COOLDOWN_ENABLED`), default off.
    pub enabled: bool,
    /// OAuth providers.
    pub oauth: WindowGateSettings,
    /// API-key providers.
    pub apikey: WindowGateSettings,
    /// First cooldown of a connection entry; doubles per failure.
    pub min_retry_cooldown_ms: u32,
    /// Cap of a connection entry's cooldown (≥ `minRetryCooldownMs`).
    pub max_retry_cooldown_ms: u32,
}

impl Default for ProviderCooldownSettings {
    fn default() -> Self {
        ProviderCooldownSettings {
            enabled: false,
            oauth: WindowGateSettings {
                failure_threshold: d::GATE_OAUTH_FAILURE_THRESHOLD,
                failure_window_ms: d::GATE_OAUTH_FAILURE_WINDOW_MS,
                cooldown_ms: d::GATE_OAUTH_COOLDOWN_MS,
            },
            apikey: WindowGateSettings {
                failure_threshold: d::GATE_APIKEY_FAILURE_THRESHOLD,
                failure_window_ms: d::GATE_APIKEY_FAILURE_WINDOW_MS,
                cooldown_ms: d::GATE_APIKEY_COOLDOWN_MS,
            },
            min_retry_cooldown_ms: d::GATE_MIN_RETRY_COOLDOWN_MS,
            max_retry_cooldown_ms: d::GATE_MAX_RETRY_COOLDOWN_MS,
        }
    }
}

/// One window-gate profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WindowGateSettings {
    /// Failures within the window that cool the provider.
    pub failure_threshold: u32,
    /// The sliding window.
    pub failure_window_ms: u32,
    /// How long the provider then cools.
    pub cooldown_ms: u32,
}

/// Connection cooldown per auth category.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct ConnectionCooldownSettings {
    /// OAuth connections.
    pub oauth: ConnectionCooldownProfile,
    /// API-key connections.
    pub apikey: ConnectionCooldownProfile,
}

impl Default for ConnectionCooldownSettings {
    fn default() -> Self {
        ConnectionCooldownSettings {
            oauth: ConnectionCooldownProfile {
                base_cooldown_ms: d::COOLDOWN_OAUTH_BASE_MS,
                max_backoff_steps: d::COOLDOWN_OAUTH_MAX_BACKOFF_STEPS,
            },
            apikey: ConnectionCooldownProfile {
                base_cooldown_ms: d::COOLDOWN_APIKEY_BASE_MS,
                max_backoff_steps: d::COOLDOWN_APIKEY_MAX_BACKOFF_STEPS,
            },
        }
    }
}

/// One connection cooldown profile: cooldown = base × 2^backoffLevel, the level
/// capped at `maxBackoffSteps`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConnectionCooldownProfile {
    /// First cooldown.
    pub base_cooldown_ms: u32,
    /// Highest backoff level.
    pub max_backoff_steps: u32,
}

/// Model lockout (`DEFAULT_MODEL_LOCKOUT_SETTINGS`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct ModelLockoutSettings {
    /// Master switch, default off.
    pub enabled: bool,
    /// Upstream statuses that lock a model.
    pub error_codes: Vec<u16>,
    /// First lockout.
    pub base_cooldown_ms: u32,
    /// Lockout cap (≥ `baseCooldownMs`).
    pub max_cooldown_ms: u32,
    /// Highest escalation step.
    pub max_backoff_steps: u32,
    /// Double per repeated failure; otherwise every lockout lasts `baseCooldownMs`.
    pub use_exponential_backoff: bool,
}

impl Default for ModelLockoutSettings {
    fn default() -> Self {
        ModelLockoutSettings {
            enabled: false,
            error_codes: d::LOCKOUT_ERROR_CODES.to_vec(),
            base_cooldown_ms: d::LOCKOUT_BASE_COOLDOWN_MS,
            max_cooldown_ms: d::LOCKOUT_MAX_COOLDOWN_MS,
            max_backoff_steps: d::LOCKOUT_MAX_BACKOFF_STEPS,
            use_exponential_backoff: true,
        }
    }
}

/// Request queue budgets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct RequestQueueSettings {
    /// Queue-wait budget (env `RATE_LIMIT_MAX_WAIT_MS`).
    pub max_wait_ms: u32,
    /// Execution bound after dispatch (env `RATE_LIMIT_EXECUTION_MAX_WAIT_MS`).
    pub execution_max_wait_ms: u32,
    /// Queue depth cap, 0 = off (env `RATE_LIMIT_MAX_QUEUE_DEPTH`).
    pub max_queue_depth: u32,
    /// Queue every active API-key connection (env `RATE_LIMIT_AUTO_ENABLE`, which wins
    /// over the stored value).
    pub auto_enable_api_key_providers: bool,
    /// Upstream requests in flight at most across the whole gateway, 0 = no cap.
    /// Each attempt holds a slot until its answer ends (the last byte of a stream).
    pub global_concurrent_requests: u32,
}

impl Default for RequestQueueSettings {
    fn default() -> Self {
        RequestQueueSettings {
            max_wait_ms: d::QUEUE_MAX_WAIT_MS,
            execution_max_wait_ms: d::QUEUE_EXECUTION_MAX_WAIT_MS,
            max_queue_depth: d::QUEUE_MAX_DEPTH,
            auto_enable_api_key_providers: true,
            global_concurrent_requests: 0,
        }
    }
}

/// Cooldown-aware combo retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct ComboCooldownWaitSettings {
    /// Wait out short transient cooldowns instead of failing.
    pub enabled: bool,
    /// Longest single wait.
    pub max_wait_ms: u32,
    /// Re-dispatch cycles.
    pub max_attempts: u32,
    /// Total wait per request (≥ `maxWaitMs`).
    pub budget_ms: u32,
}

impl Default for ComboCooldownWaitSettings {
    fn default() -> Self {
        ComboCooldownWaitSettings {
            enabled: true,
            max_wait_ms: d::COMBO_WAIT_MAX_WAIT_MS,
            max_attempts: d::COMBO_WAIT_MAX_ATTEMPTS,
            budget_ms: d::COMBO_WAIT_BUDGET_MS,
        }
    }
}

/// Stream health watchdogs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct StreamRecoverySettings {
    /// No model output (reasoning progress counts) for this long aborts the attempt.
    pub stall_budget_ms: u32,
    /// From dispatching an attempt to its first model event: when it runs out before
    /// anything reached the client, the gateway fails over (env
    /// `STREAM_READINESS_TIMEOUT_MS`).
    pub readiness_budget_ms: u32,
    /// Hard upper bound on one upstream attempt, streams included; for a non-streamed
    /// request also the wait for the answer.
    pub attempt_deadline_ms: u32,
    /// Slow-stream throughput watchdog.
    pub throughput_watchdog: ThroughputWatchdogSettings,
}

impl Default for StreamRecoverySettings {
    fn default() -> Self {
        StreamRecoverySettings {
            stall_budget_ms: d::STREAM_STALL_BUDGET_MS,
            readiness_budget_ms: d::STREAM_READINESS_BUDGET_MS,
            attempt_deadline_ms: d::ATTEMPT_DEADLINE_MS,
            throughput_watchdog: ThroughputWatchdogSettings {
                enabled: false,
                warmup_ms: d::WATCHDOG_WARMUP_MS,
                window_ms: d::WATCHDOG_WINDOW_MS,
                min_useful_bytes_per_second: d::WATCHDOG_MIN_BYTES_PER_SECOND,
                min_useful_bytes: d::WATCHDOG_MIN_USEFUL_BYTES,
            },
        }
    }
}

/// The throughput watchdog.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ThroughputWatchdogSettings {
    /// Off by default (env `STREAM_THROUGHPUT_WATCHDOG_ENABLED`).
    pub enabled: bool,
    /// Grace period before judging.
    pub warmup_ms: u32,
    /// Sliding window.
    pub window_ms: u32,
    /// Minimum assistant-text rate.
    pub min_useful_bytes_per_second: u32,
    /// Minimum assistant-text bytes per window.
    pub min_useful_bytes: u32,
}

/// An operator error rule: when `provider` answers `status` (any, if absent) with a
/// body containing `match` (case-insensitive), the outcome gets `reason`, acts on
/// `scope`, and cools for `cooldownMs` (else the layer's own backoff).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProviderErrorRule {
    /// Provider id the rule applies to.
    pub provider: String,
    /// Upstream status; absent matches any failure status.
    #[serde(default)]
    pub status: Option<u16>,
    /// Substring of the error body (case-insensitive).
    #[serde(rename = "match")]
    pub text: String,
    /// Which layer acts: a model lockout, the connection, or the provider breaker.
    pub scope: RuleScope,
    /// The verdict's reason (default `quota_exhausted`).
    #[serde(default)]
    pub reason: Option<ErrorReason>,
    /// Fixed cooldown; absent uses the layer's backoff.
    #[serde(default)]
    pub cooldown_ms: Option<u32>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The default document as the API returns it, pinned: a change here is a
    /// change of product defaults and must be deliberate.
    #[test]
    fn default_document_is_pinned() {
        let json = serde_json::to_string_pretty(&ResilienceSettings::default()).unwrap_or_default();
        let pinned = include_str!("../../tests/snapshots/default_resilience_settings.json");
        assert_eq!(json.trim(), pinned.trim(), "default settings JSON changed:\n{json}");
    }

    #[test]
    fn defaults_follow_spec() {
        let s = ResilienceSettings::default();
        let (o, a) = (&s.provider_breaker.oauth, &s.provider_breaker.apikey);
        assert_eq!((o.degradation_threshold, o.failure_threshold, o.reset_timeout_ms), (5, 8, 60_000));
        assert_eq!((a.degradation_threshold, a.failure_threshold, a.reset_timeout_ms), (7, 12, 30_000));
        assert_eq!(s.connection_cooldown.oauth.base_cooldown_ms, 5_000);
        assert_eq!(s.connection_cooldown.apikey.base_cooldown_ms, 3_000);
        assert!(!s.model_lockout.enabled);
        assert_eq!(s.model_lockout.error_codes, vec![403, 404, 429, 502, 503, 504]);
        assert_eq!((s.model_lockout.base_cooldown_ms, s.model_lockout.max_cooldown_ms), (120_000, 1_800_000));
        assert_eq!(s.model_lockout.max_backoff_steps, 10);
        assert!(s.model_lockout.use_exponential_backoff);
        assert!(!s.provider_cooldown.enabled);
        assert!(!s.stream_stall_cooldown.enabled);
        assert!(s.quota_share_concurrency_limit.enabled);
        assert_eq!((s.request_queue.max_wait_ms, s.request_queue.execution_max_wait_ms), (30_000, 600_000));
        assert_eq!(s.request_queue.max_queue_depth, 0);
        assert!(!s.stream_recovery.throughput_watchdog.enabled);
        let sr = &s.stream_recovery;
        assert_eq!((sr.readiness_budget_ms, sr.attempt_deadline_ms), (60_000, 1_800_000));
    }

    #[test]
    fn unknown_fields_are_rejected_in_full_documents() {
        let err = serde_json::from_str::<ResilienceSettings>(r#"{"bogus":1}"#);
        assert!(err.is_err());
        let partial: ResilienceSettings =
            serde_json::from_str(r#"{"sessionAffinityTtlMs":5}"#).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(partial.session_affinity_ttl_ms, 5);
        assert_eq!(partial.model_lockout, ModelLockoutSettings::default());
    }
}
