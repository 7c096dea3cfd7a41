//! Error rules (SPEC 4.8): operator rules from settings (`providerErrorRules`, tried
//! first; declaring one opts in to full-text matching and to its scope), then the
//! built-in text markers, then the status table. Pure lookups over the lower-cased
//! body; no state.
//!
//! Order of the built-in text checks matters and is tested: a ban beats credits,
//! credits beat quota, and a quota text beats a concurrency text (a body saying both
//! is a quota verdict).

use switchyard_types::resilience::{ErrorReason, RuleScope};
use switchyard_types::settings::ProviderErrorRule;

/// Account deactivated or suspended: terminal `banned`.
pub const BAN_MARKERS: &[&str] = &[
    "account_deactivated",
    "account has been deactivated",
    "account has been disabled",
    "account has been suspended",
    "this account is deactivated",
    "organization has been disabled",
    "verify your account to continue",
    "this service has been disabled in this account",
];

/// Prepaid credits or billing exhausted: terminal `credits_exhausted`.
pub const CREDITS_MARKERS: &[&str] = &[
    "credit_balance_too_low",
    "credit balance is too low",
    "insufficient_balance",
    "insufficient balance",
    "insufficient account balance",
    "insufficient credit",
    "out of credits",
    "credits exhausted",
    "billing_hard_limit_reached",
    "余额不足",
];

/// Temporary quota exhaustion.
pub const QUOTA_MARKERS: &[&str] = &[
    "insufficient_quota",
    "exceeded your current quota",
    "exceeded your quota",
    "quota exceeded",
    "quota_exceeded",
    "quota has been exceeded",
    "quota exhausted",
    "quota will reset",
    "exhausted your capacity",
    "usage limit reached",
    "usage limit has been reached",
    "reached your usage limit",
    "weekly limit",
    "daily quota",
    "today's quota",
    "try again tomorrow",
    "free tier",
    "额度不足",
];

/// A permanent "no access" refusal that may share words with a quota message.
pub const NO_ACCESS_MARKERS: &[&str] = &["无权访问"];

/// The account is healthy but busy (SPEC 4.2).
pub const CONCURRENCY_MARKERS: &[&str] = &[
    "too many concurrent requests",
    "concurrency limit",
    "concurrency_limit",
    "concurrent request limit",
    "parallel request limit",
    "并发数过高",
];

/// An upstream refusal of this account's request (Anthropic OAuth 403).
pub const REJECTED_MARKERS: &[&str] = &["request not allowed"];

/// One model overloaded, not a provider outage.
pub const OVERLOADED_MARKERS: &[&str] = &["overloaded_error", "overloaded"];

/// Rate-limit wording on a 400.
pub const RATE_LIMIT_MARKERS: &[&str] = &["rate limit", "rate_limit", "too many requests", "频率", "频繁"];

/// Whether any marker appears in `lower`.
pub fn any(lower: &str, markers: &[&str]) -> bool {
    markers.iter().any(|m| lower.contains(m))
}

/// The statuses that count for the provider breaker (SPEC 4.1).
pub const BREAKER_STATUSES: [u16; 5] = [408, 500, 502, 503, 504];

/// The reason the built-in rules give a failure status and lower-cased body.
pub fn builtin_reason(status: u16, lower: &str) -> ErrorReason {
    let client_side = (400..500).contains(&status);
    if client_side && any(lower, BAN_MARKERS) {
        return ErrorReason::Banned;
    }
    if matches!(status, 400 | 402 | 403 | 429) && any(lower, CREDITS_MARKERS) {
        return ErrorReason::CreditsExhausted;
    }
    // "No access to model" (`无权访问模型`) is a permanent refusal even when the same
    // text mentions a quota (SPEC 4.8 keeps its status): it is never a quota wait.
    if client_side && any(lower, QUOTA_MARKERS) && !any(lower, NO_ACCESS_MARKERS) {
        return ErrorReason::QuotaExhausted;
    }
    if status == 429 && any(lower, CONCURRENCY_MARKERS) {
        return ErrorReason::ConcurrencyLimited;
    }
    if status == 403 && any(lower, REJECTED_MARKERS) {
        return ErrorReason::RequestRejected;
    }
    if status == 529 || (status >= 500 && any(lower, OVERLOADED_MARKERS)) {
        return ErrorReason::ModelCapacity;
    }
    if status == 400 && any(lower, RATE_LIMIT_MARKERS) {
        return ErrorReason::RateLimit;
    }
    match status {
        401 => ErrorReason::AuthError,
        402 => ErrorReason::QuotaExhausted,
        403 => ErrorReason::Forbidden,
        404 | 410 => ErrorReason::NotFound,
        // A 406 from an upstream is its refusal to serve, not a malformed request
        // (SPEC 4.2 lists it with the server-side failures).
        406 => ErrorReason::ServerError,
        408 => ErrorReason::Timeout,
        429 => ErrorReason::RateLimit,
        500..=599 => ErrorReason::ServerError,
        400..=499 => ErrorReason::BadRequest,
        _ => ErrorReason::Unknown,
    }
}

/// An operator rule, compiled (lower-cased) for matching.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperatorRule {
    /// Provider id (exact).
    pub provider: String,
    /// Status to match; `None` matches any.
    pub status: Option<u16>,
    /// Lower-cased substring of the body.
    pub text: String,
    /// The layer that acts.
    pub scope: RuleScope,
    /// The verdict's reason.
    pub reason: ErrorReason,
    /// Fixed cooldown, if declared.
    pub cooldown_ms: Option<u32>,
}

impl OperatorRule {
    /// Compiles a settings rule.
    pub fn compile(rule: &ProviderErrorRule) -> OperatorRule {
        OperatorRule {
            provider: rule.provider.trim().to_owned(),
            status: rule.status,
            text: rule.text.trim().to_ascii_lowercase(),
            scope: rule.scope,
            reason: rule.reason.unwrap_or(ErrorReason::QuotaExhausted),
            cooldown_ms: rule.cooldown_ms,
        }
    }

    /// Whether the rule matches.
    pub fn matches(&self, provider: &str, status: u16, lower: &str) -> bool {
        self.provider == provider
            && self.status.is_none_or(|s| s == status)
            && lower.contains(self.text.as_str())
    }
}

/// The operator rules in force, first match wins.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OperatorRules(pub Vec<OperatorRule>);

impl OperatorRules {
    /// Compiles the settings list.
    pub fn from_settings(rules: &[ProviderErrorRule]) -> OperatorRules {
        OperatorRules(rules.iter().map(OperatorRule::compile).collect())
    }

    /// The first matching rule and its index.
    pub fn find(&self, provider: &str, status: u16, lower: &str) -> Option<(usize, &OperatorRule)> {
        self.0.iter().enumerate().find(|(_, r)| r.matches(provider, status, lower))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quota_text_beats_concurrency_text() {
        let body = "too many concurrent requests; also your quota exceeded for today";
        assert_eq!(builtin_reason(429, body), ErrorReason::QuotaExhausted);
        assert_eq!(builtin_reason(429, "too many concurrent requests"), ErrorReason::ConcurrencyLimited);
        assert_eq!(
            builtin_reason(429, "{\"error\":{\"message\":\"并发数过高\"}}"),
            ErrorReason::ConcurrencyLimited
        );
        assert_eq!(builtin_reason(429, "并发数过高 额度不足"), ErrorReason::QuotaExhausted);
        assert_eq!(builtin_reason(429, "parallel request limit reached"), ErrorReason::ConcurrencyLimited);
        assert_eq!(builtin_reason(429, "concurrency limit exceeded"), ErrorReason::ConcurrencyLimited);
    }

    #[test]
    fn no_access_to_a_model_is_never_a_quota_wait() {
        assert_eq!(builtin_reason(400, "用户额度不足"), ErrorReason::QuotaExhausted);
        assert_eq!(builtin_reason(400, "无权访问模型 额度不足"), ErrorReason::BadRequest);
        assert_eq!(builtin_reason(403, "无权访问模型 额度不足"), ErrorReason::Forbidden);
    }

    #[test]
    fn concurrency_text_only_matters_on_429() {
        assert_eq!(builtin_reason(503, "too many concurrent requests"), ErrorReason::ServerError);
    }

    #[test]
    fn status_table() {
        let cases = [
            (401, ErrorReason::AuthError),
            (402, ErrorReason::QuotaExhausted),
            (403, ErrorReason::Forbidden),
            (404, ErrorReason::NotFound),
            (408, ErrorReason::Timeout),
            (429, ErrorReason::RateLimit),
            (500, ErrorReason::ServerError),
            (406, ErrorReason::ServerError),
            (529, ErrorReason::ModelCapacity),
            (422, ErrorReason::BadRequest),
        ];
        for (status, reason) in cases {
            assert_eq!(builtin_reason(status, ""), reason, "{status}");
        }
    }

    #[test]
    fn text_signals() {
        assert_eq!(
            builtin_reason(403, "{\"message\":\"request not allowed\"}"),
            ErrorReason::RequestRejected
        );
        assert_eq!(builtin_reason(403, "your account has been suspended"), ErrorReason::Banned);
        assert_eq!(builtin_reason(400, "your credit balance is too low"), ErrorReason::CreditsExhausted);
        assert_eq!(builtin_reason(503, "{\"type\":\"overloaded_error\"}"), ErrorReason::ModelCapacity);
        assert_eq!(builtin_reason(400, "请求频率过高"), ErrorReason::RateLimit);
        assert_eq!(builtin_reason(500, "account has been suspended"), ErrorReason::ServerError);
    }

    #[test]
    fn operator_rules_match_provider_status_and_text() {
        let rules = OperatorRules::from_settings(&[ProviderErrorRule {
            provider: "glm".to_owned(),
            status: Some(429),
            text: "Plan Limit".to_owned(),
            scope: RuleScope::Model,
            reason: None,
            cooldown_ms: Some(60_000),
        }]);
        let (i, r) = rules.find("glm", 429, "your plan limit was hit").unwrap_or_else(|| panic!("no match"));
        assert_eq!(
            (i, r.reason, r.scope, r.cooldown_ms),
            (0, ErrorReason::QuotaExhausted, RuleScope::Model, Some(60_000))
        );
        assert!(rules.find("glm", 500, "plan limit").is_none());
        assert!(rules.find("openai", 429, "plan limit").is_none());
    }
}
