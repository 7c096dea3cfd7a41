//! The one ranges table of the settings document: JSON-pointer path → kind, bounds,
//! allowed values. Validation ([`super::ResilienceSettings::validate`]), clamping
//! ([`super::ResilienceSettings::clamp`]) and
//! the UI forms ([`SettingsRanges`]) all read this table, so they cannot disagree.
//!
//! Paths use `*` for a list index (`/providerErrorRules/*/status`) or a map key
//! (`/providerConcurrency/*` is the key, `/providerConcurrency/*/cap` its value);
//! issues carry the concrete index or key. Integers are `u32`; bounds are inclusive.

use serde::{Deserialize, Serialize};

/// What kind of value a path holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "snake_case")]
pub enum FieldKind {
    /// An integer within `min..=max`.
    Integer,
    /// A list whose length is within `min..=max`.
    List,
    /// A string whose length (characters) is within `min..=max`.
    Text,
    /// One of `allowed`.
    Choice,
}

/// One row of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RangeSpec {
    /// JSON pointer; `*` stands for a list index.
    pub path: &'static str,
    /// Value kind.
    pub kind: FieldKind,
    /// Inclusive lower bound (value, length or item count).
    pub min: u32,
    /// Inclusive upper bound.
    pub max: u32,
    /// Whether the value is milliseconds.
    pub millis: bool,
    /// Allowed values for [`FieldKind::Choice`].
    pub allowed: &'static [&'static str],
}

const fn int(path: &'static str, min: u32, max: u32) -> RangeSpec {
    RangeSpec { path, kind: FieldKind::Integer, min, max, millis: false, allowed: &[] }
}

const fn ms(path: &'static str, min: u32, max: u32) -> RangeSpec {
    RangeSpec { path, kind: FieldKind::Integer, min, max, millis: true, allowed: &[] }
}

const fn list(path: &'static str, min: u32, max: u32) -> RangeSpec {
    RangeSpec { path, kind: FieldKind::List, min, max, millis: false, allowed: &[] }
}

const fn text(path: &'static str, min: u32, max: u32) -> RangeSpec {
    RangeSpec { path, kind: FieldKind::Text, min, max, millis: false, allowed: &[] }
}

const fn choice(path: &'static str, allowed: &'static [&'static str]) -> RangeSpec {
    RangeSpec { path, kind: FieldKind::Choice, min: 0, max: 0, millis: false, allowed }
}

/// One day in milliseconds.
pub const DAY_MS: u32 = 86_400_000;
/// Most operator error rules kept.
pub const MAX_ERROR_RULES: u32 = 50;
/// Most provider caps kept.
pub const MAX_PROVIDER_CAPS: u32 = 200;

const SCOPES: &[&str] = &["model", "provider", "connection"];
const REASONS: &[&str] = &[
    "rate_limit",
    "quota_exhausted",
    "concurrency_limited",
    "auth_error",
    "request_rejected",
    "forbidden",
    "credits_exhausted",
    "banned",
    "not_found",
    "server_error",
    "timeout",
    "unreachable",
    "model_capacity",
    "stream_stall",
    "bad_request",
    "local",
    "unknown",
];

/// The table. Order follows the document.
pub static RANGES: &[RangeSpec] = &[
    int("/providerBreaker/oauth/failureThreshold", 1, 1000),
    int("/providerBreaker/oauth/degradationThreshold", 1, 1000),
    ms("/providerBreaker/oauth/resetTimeoutMs", 1_000, DAY_MS),
    ms("/providerBreaker/oauth/cooldownByKind/serverError", 1_000, DAY_MS),
    ms("/providerBreaker/oauth/cooldownByKind/timeout", 1_000, DAY_MS),
    ms("/providerBreaker/oauth/cooldownByKind/unreachable", 1_000, DAY_MS),
    ms("/providerBreaker/oauth/cooldownByKind/rateLimit", 1_000, DAY_MS),
    ms("/providerBreaker/oauth/cooldownByKind/quotaExhausted", 1_000, DAY_MS),
    int("/providerBreaker/apikey/failureThreshold", 1, 1000),
    int("/providerBreaker/apikey/degradationThreshold", 1, 1000),
    ms("/providerBreaker/apikey/resetTimeoutMs", 1_000, DAY_MS),
    ms("/providerBreaker/apikey/cooldownByKind/serverError", 1_000, DAY_MS),
    ms("/providerBreaker/apikey/cooldownByKind/timeout", 1_000, DAY_MS),
    ms("/providerBreaker/apikey/cooldownByKind/unreachable", 1_000, DAY_MS),
    ms("/providerBreaker/apikey/cooldownByKind/rateLimit", 1_000, DAY_MS),
    ms("/providerBreaker/apikey/cooldownByKind/quotaExhausted", 1_000, DAY_MS),
    int("/providerCooldown/oauth/failureThreshold", 1, 1000),
    ms("/providerCooldown/oauth/failureWindowMs", 1_000, DAY_MS),
    ms("/providerCooldown/oauth/cooldownMs", 1_000, DAY_MS),
    int("/providerCooldown/apikey/failureThreshold", 1, 1000),
    ms("/providerCooldown/apikey/failureWindowMs", 1_000, DAY_MS),
    ms("/providerCooldown/apikey/cooldownMs", 1_000, DAY_MS),
    ms("/providerCooldown/minRetryCooldownMs", 0, 3_600_000),
    ms("/providerCooldown/maxRetryCooldownMs", 0, DAY_MS),
    ms("/connectionCooldown/oauth/baseCooldownMs", 0, 600_000),
    int("/connectionCooldown/oauth/maxBackoffSteps", 0, 16),
    ms("/connectionCooldown/apikey/baseCooldownMs", 0, 600_000),
    int("/connectionCooldown/apikey/maxBackoffSteps", 0, 16),
    list("/modelLockout/errorCodes", 1, 32),
    int("/modelLockout/errorCodes/*", 100, 599),
    ms("/modelLockout/baseCooldownMs", 5_000, 600_000),
    ms("/modelLockout/maxCooldownMs", 5_000, 3_600_000),
    int("/modelLockout/maxBackoffSteps", 0, 20),
    ms("/requestQueue/maxWaitMs", 1, DAY_MS),
    ms("/requestQueue/executionMaxWaitMs", 1, DAY_MS),
    int("/requestQueue/maxQueueDepth", 0, 100_000),
    int("/requestQueue/globalConcurrentRequests", 0, 100_000),
    ms("/comboCooldownWait/maxWaitMs", 0, 300_000),
    int("/comboCooldownWait/maxAttempts", 0, 10),
    ms("/comboCooldownWait/budgetMs", 0, 300_000),
    ms("/streamRecovery/stallBudgetMs", 1_000, 3_600_000),
    ms("/streamRecovery/readinessBudgetMs", 1_000, 600_000),
    ms("/streamRecovery/attemptDeadlineMs", 10_000, DAY_MS),
    ms("/streamRecovery/throughputWatchdog/warmupMs", 0, 600_000),
    ms("/streamRecovery/throughputWatchdog/windowMs", 1_000, 600_000),
    int("/streamRecovery/throughputWatchdog/minUsefulBytesPerSecond", 1, 1_000_000),
    int("/streamRecovery/throughputWatchdog/minUsefulBytes", 1, 1_000_000),
    ms("/sessionAffinityTtlMs", 0, 7 * DAY_MS),
    list("/providerErrorRules", 0, MAX_ERROR_RULES),
    text("/providerErrorRules/*/provider", 1, 64),
    int("/providerErrorRules/*/status", 100, 599),
    text("/providerErrorRules/*/match", 1, 200),
    choice("/providerErrorRules/*/scope", SCOPES),
    choice("/providerErrorRules/*/reason", REASONS),
    ms("/providerErrorRules/*/cooldownMs", 0, DAY_MS),
    list("/providerConcurrency", 0, MAX_PROVIDER_CAPS),
    text("/providerConcurrency/*", 1, 64),
    int("/providerConcurrency/*/cap", 1, 100_000),
];

/// The row for `path` (a table path, with `*` for indices).
pub fn spec(path: &str) -> Option<&'static RangeSpec> {
    RANGES.iter().find(|r| r.path == path)
}

/// `spec(path)` for a path the code itself names; a missing row is a bug caught by
/// the table tests, and falls back to an unbounded integer.
pub(crate) fn known(path: &'static str) -> RangeSpec {
    spec(path).copied().unwrap_or(RangeSpec {
        path,
        kind: FieldKind::Integer,
        min: 0,
        max: u32::MAX,
        millis: false,
        allowed: &[],
    })
}

impl RangeSpec {
    /// "a whole number from 1 to 1,000" style description used in issue messages
    /// (people read these, in the UI and in API errors).
    pub fn describe(&self) -> String {
        let unit = if self.millis { " ms" } else { "" };
        let (min, max) = (grouped(self.min), grouped(self.max));
        match self.kind {
            FieldKind::Integer => format!("a whole number from {min} to {max}{unit}"),
            FieldKind::List => format!("a list of {min} to {max} items"),
            FieldKind::Text => format!("{min} to {max} characters long"),
            FieldKind::Choice => format!("one of {}", self.allowed.join(", ")),
        }
    }
}

/// `600000` → `600,000`.
pub fn grouped(n: u32) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// One exported row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct FieldRange {
    /// JSON pointer; `*` stands for a list index.
    pub path: String,
    /// Value kind.
    pub kind: FieldKind,
    /// Inclusive lower bound (value, length or item count); absent for choices.
    pub min: Option<u32>,
    /// Inclusive upper bound; absent for choices.
    pub max: Option<u32>,
    /// `ms` for durations.
    pub unit: Option<String>,
    /// Allowed values for choices.
    pub allowed: Vec<String>,
}

/// The ranges table as the UI receives it, so forms show the validator's limits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct SettingsRanges {
    /// Every constrained field.
    pub fields: Vec<FieldRange>,
}

impl SettingsRanges {
    /// The table, exported.
    pub fn current() -> SettingsRanges {
        let fields = RANGES
            .iter()
            .map(|r| {
                let bounded = r.kind != FieldKind::Choice;
                FieldRange {
                    path: r.path.to_owned(),
                    kind: r.kind,
                    min: bounded.then_some(r.min),
                    max: bounded.then_some(r.max),
                    unit: r.millis.then(|| "ms".to_owned()),
                    allowed: r.allowed.iter().map(|s| (*s).to_owned()).collect(),
                }
            })
            .collect();
        SettingsRanges { fields }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_grouped_by_thousands() {
        assert_eq!(
            [grouped(0), grouped(999), grouped(1000), grouped(600_000), grouped(86_400_000)],
            ["0", "999", "1,000", "600,000", "86,400,000"]
        );
    }

    #[test]
    fn paths_are_unique_and_bounds_ordered() {
        for (i, r) in RANGES.iter().enumerate() {
            assert!(RANGES[i + 1..].iter().all(|o| o.path != r.path), "duplicate {}", r.path);
            assert!(r.min <= r.max, "{} has min > max", r.path);
            assert!(r.path.starts_with('/'));
        }
    }

    #[test]
    fn reason_choices_match_the_enum() {
        let names = crate::resilience::ErrorReason::ALL.iter().map(|r| r.as_str());
        assert!(names.eq(REASONS.iter().copied()));
    }

    #[test]
    fn export_carries_every_row() {
        let exported = SettingsRanges::current();
        assert_eq!(exported.fields.len(), RANGES.len());
        let scope = exported.fields.iter().find(|f| f.path == "/providerErrorRules/*/scope");
        assert_eq!(scope.map(|f| f.allowed.len()), Some(3));
        let reset = exported.fields.iter().find(|f| f.path == "/providerBreaker/oauth/resetTimeoutMs");
        assert_eq!(reset.and_then(|f| f.unit.clone()).as_deref(), Some("ms"));
    }
}
