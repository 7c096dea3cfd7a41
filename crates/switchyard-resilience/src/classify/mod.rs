//! Outcome classification (SPEC 4.8): an attempt's outcome → a [`Verdict`] (reason,
//! acting layer, lock scope, retry hint, whether the breaker counts it). Runs before
//! any state is touched and never touches state itself (classify → record → gate).
//!
//! Pipeline for an HTTP failure: restatement registry → operator rules → built-in
//! text markers → status table; retry hints from headers, then body, then the
//! restatement default. Transport failures and stalls map directly. Total: every
//! outcome gets a verdict (unknown statuses become `unknown`, acting on nothing).

pub mod hints;
pub mod quota;
pub mod restate;
pub mod rules;

use switchyard_types::UnixMillis;
use switchyard_types::resilience::{ErrorReason, LockScope, RuleScope};

use crate::outcome::{AttemptOutcome, TransportFailure};
use hints::{HintSource, RetryHint, hint_from_response};
use restate::{RestateRule, Restatement, restate};
use rules::{BREAKER_STATUSES, OperatorRules, builtin_reason};

/// Which rule decided a verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleRef {
    /// The built-in markers and status table.
    Builtin,
    /// Operator rule number `n` of `providerErrorRules`.
    Operator(usize),
}

/// What the gateway does with the upstream's answer. The engine is its one owner:
/// the gateway never keeps a second list of statuses that fail over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// The answer describes the request itself (a malformed body, a field the
    /// upstream rejects): relay it as-is; nothing is held against the connection.
    Relay,
    /// The answer belongs to the connection, the model or the upstream: try the
    /// next candidate while nothing has reached the client.
    FailOver,
}

impl Action {
    /// The action a reason implies.
    pub fn for_reason(reason: ErrorReason) -> Action {
        match reason {
            ErrorReason::BadRequest => Action::Relay,
            _ => Action::FailOver,
        }
    }
}

/// The classifier's decision about one failed attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Relay the answer or fail over.
    pub action: Action,
    /// Why it failed.
    pub reason: ErrorReason,
    /// The status after restatement (`None` below HTTP).
    pub status: Option<u16>,
    /// The restatement applied, if any.
    pub restated: Option<Restatement>,
    /// The layer that acts.
    pub scope: RuleScope,
    /// Whether `scope` was declared by an operator rule (then honoured even where the
    /// status alone would not act, e.g. with model lockouts switched off).
    pub explicit_scope: bool,
    /// What a model lockout would cover: explicit rule scope, else by status.
    pub lock_scope: LockScope,
    /// The upstream's (or restatement's) retry hint.
    pub hint: Option<RetryHint>,
    /// A fixed cooldown declared by an operator rule.
    pub rule_cooldown_ms: Option<u32>,
    /// Whether the provider breaker (and window gate) count this failure.
    pub counts_for_breaker: bool,
    /// The deciding rule.
    pub rule: RuleRef,
}

/// What a classifier needs besides the outcome.
#[derive(Debug, Clone, Copy)]
pub struct ClassifyContext<'a> {
    /// Provider id.
    pub provider: &'a str,
    /// Restatement registry (normally [`restate::BUILTIN_RULES`]).
    pub restatements: &'a [RestateRule],
    /// Operator rules from settings.
    pub operator: &'a OperatorRules,
    /// Now.
    pub now: UnixMillis,
    /// The local zone's offset from UTC at `now` (for "daily quota → local midnight").
    pub utc_offset_ms: i64,
}

/// The layer a reason acts on when no rule says otherwise.
pub fn default_scope(reason: ErrorReason) -> RuleScope {
    match reason {
        ErrorReason::ServerError | ErrorReason::Timeout | ErrorReason::Unreachable => RuleScope::Provider,
        ErrorReason::NotFound | ErrorReason::ModelCapacity => RuleScope::Model,
        _ => RuleScope::Connection,
    }
}

/// What a lockout covers for a status (SPEC 4.5): 429/403/402 → quota family, 404 →
/// the model, anything else → the exact triple.
pub fn lock_scope_for_status(status: Option<u16>) -> LockScope {
    match status {
        Some(429 | 403 | 402) => LockScope::QuotaFamily,
        Some(404 | 410) => LockScope::Model,
        _ => LockScope::Exact,
    }
}

/// Lower-cases the scanned part of a body (ASCII only; other text is unchanged).
fn lower_body(body: &str) -> String {
    let mut end = body.len().min(hints::BODY_SCAN_LIMIT);
    while !body.is_char_boundary(end) {
        end -= 1;
    }
    body.get(..end).unwrap_or("").to_ascii_lowercase()
}

/// Classifies a failed attempt.
pub fn classify(outcome: &AttemptOutcome<'_>, cx: &ClassifyContext<'_>) -> Verdict {
    match *outcome {
        AttemptOutcome::Http { status, headers, body } => classify_http(status, headers, body, cx),
        AttemptOutcome::Transport(t) => {
            let reason = match t {
                TransportFailure::Connect => ErrorReason::Unreachable,
                TransportFailure::Timeout => ErrorReason::Timeout,
                TransportFailure::BrokenBeforeFirstByte | TransportFailure::BrokenMidStream => {
                    ErrorReason::ServerError
                }
                TransportFailure::TokenEndpoint => return simple(ErrorReason::Unreachable, None, false),
            };
            simple(reason, None, true)
        }
        AttemptOutcome::StreamStall => simple(ErrorReason::StreamStall, None, false),
        AttemptOutcome::Local => simple(ErrorReason::Local, None, false),
    }
}

fn simple(reason: ErrorReason, status: Option<u16>, counts: bool) -> Verdict {
    Verdict {
        action: Action::for_reason(reason),
        reason,
        status,
        restated: None,
        scope: default_scope(reason),
        explicit_scope: false,
        lock_scope: lock_scope_for_status(status),
        hint: None,
        rule_cooldown_ms: None,
        counts_for_breaker: counts,
        rule: RuleRef::Builtin,
    }
}

fn classify_http(
    upstream_status: u16,
    headers: &dyn crate::outcome::HeaderSource,
    body: &str,
    cx: &ClassifyContext<'_>,
) -> Verdict {
    let lower = lower_body(body);
    let restated = restate(cx.restatements, cx.provider, upstream_status, &lower);
    let status = restated.map_or(upstream_status, |r| r.status);
    let hint = hint_from_response(headers, body, cx.now).or_else(|| {
        restated.and_then(|r| {
            RetryHint::new(cx.now.plus_millis(i64::from(r.default_retry_after_ms)), HintSource::Rule, cx.now)
        })
    });
    if let Some((index, rule)) = cx.operator.find(cx.provider, status, &lower) {
        let lock_scope = match rule.scope {
            RuleScope::Model => LockScope::Model,
            _ => lock_scope_for_status(Some(status)),
        };
        let hint = hint.or_else(|| window_hint(rule.reason, status, &lower, cx));
        return Verdict {
            action: Action::for_reason(rule.reason),
            reason: rule.reason,
            status: Some(status),
            restated,
            scope: rule.scope,
            explicit_scope: true,
            lock_scope,
            hint,
            rule_cooldown_ms: rule.cooldown_ms,
            counts_for_breaker: rule.scope == RuleScope::Provider,
            rule: RuleRef::Operator(index),
        };
    }
    let reason = builtin_reason(status, &lower);
    let counts = BREAKER_STATUSES.contains(&status)
        && matches!(reason, ErrorReason::ServerError | ErrorReason::Timeout);
    let hint = hint.or_else(|| window_hint(reason, status, &lower, cx));
    Verdict { restated, hint, ..simple(reason, Some(status), counts) }
}

/// Without an upstream hint, an exhausted quota waits for the window its wording
/// names, and a retired model for a day (SPEC 4.2, reference facts §2.4).
fn window_hint(reason: ErrorReason, status: u16, lower: &str, cx: &ClassifyContext<'_>) -> Option<RetryHint> {
    let at = match reason {
        ErrorReason::QuotaExhausted => quota::QuotaWindow::of(lower).resets_at(cx.now, cx.utc_offset_ms),
        ErrorReason::NotFound if matches!(status, 404 | 410) && quota::is_retired(lower) => {
            cx.now.plus_millis(quota::RETIRED_LOCK_MS)
        }
        _ => return None,
    };
    RetryHint::new(at, HintSource::QuotaWindow, cx.now)
}

#[cfg(test)]
mod tests {
    use switchyard_types::settings::ProviderErrorRule;

    use super::*;
    use crate::outcome::NoHeaders;

    const NOW: UnixMillis = UnixMillis(1_000_000);

    fn verdict_with(
        provider: &str,
        status: u16,
        headers: &[(&str, &str)],
        body: &str,
        ops: &OperatorRules,
    ) -> Verdict {
        let cx = ClassifyContext {
            provider,
            restatements: restate::BUILTIN_RULES,
            operator: ops,
            now: NOW,
            utc_offset_ms: 0,
        };
        classify(&AttemptOutcome::Http { status, headers: &headers, body }, &cx)
    }

    fn verdict(status: u16, body: &str) -> Verdict {
        verdict_with("p", status, &[], body, &OperatorRules::default())
    }

    #[test]
    fn only_provider_level_statuses_count_for_the_breaker() {
        for status in [408, 500, 502, 503, 504] {
            assert!(verdict(status, "").counts_for_breaker, "{status}");
            assert_eq!(verdict(status, "").scope, RuleScope::Provider);
        }
        for status in [400, 401, 402, 403, 404, 409, 429, 501, 529] {
            assert!(!verdict(status, "").counts_for_breaker, "{status}");
        }
        assert!(!verdict(429, "too many concurrent requests").counts_for_breaker);
        assert!(!verdict(503, "{\"type\":\"overloaded_error\"}").counts_for_breaker);
    }

    #[test]
    fn transport_failures_count_but_stalls_and_local_do_not() {
        let ops = OperatorRules::default();
        let cx =
            ClassifyContext { provider: "p", restatements: &[], operator: &ops, now: NOW, utc_offset_ms: 0 };
        let v = classify(&AttemptOutcome::Transport(TransportFailure::Connect), &cx);
        assert_eq!((v.reason, v.counts_for_breaker), (ErrorReason::Unreachable, true));
        let v = classify(&AttemptOutcome::Transport(TransportFailure::Timeout), &cx);
        assert_eq!((v.reason, v.counts_for_breaker), (ErrorReason::Timeout, true));
        let v = classify(&AttemptOutcome::StreamStall, &cx);
        assert_eq!(
            (v.reason, v.counts_for_breaker, v.scope),
            (ErrorReason::StreamStall, false, RuleScope::Connection)
        );
        let v = classify(&AttemptOutcome::Local, &cx);
        assert_eq!((v.reason, v.counts_for_breaker), (ErrorReason::Local, false));
    }

    #[test]
    fn restatement_runs_first_and_carries_a_60s_hint() {
        let v = verdict(403, "{\"error\":{\"message\":\"用户额度不足\"}}");
        assert_eq!(v.status, Some(429));
        assert_eq!(v.restated.map(|r| (r.from_status, r.rule_id)), Some((403, "quota-misstatus")));
        assert_eq!(v.reason, ErrorReason::QuotaExhausted);
        assert_eq!(v.lock_scope, LockScope::QuotaFamily);
        assert_eq!(v.hint.map(|h| (h.at, h.source)), Some((UnixMillis(1_060_000), HintSource::Rule)));
        let v = verdict(403, "无权访问模型");
        assert_eq!((v.status, v.restated, v.reason), (Some(403), None, ErrorReason::Forbidden));
    }

    #[test]
    fn an_upstream_hint_beats_the_restatement_default() {
        let v = verdict_with("p", 403, &[("retry-after", "5")], "额度不足", &OperatorRules::default());
        assert_eq!(v.hint.map(|h| (h.at, h.source)), Some((UnixMillis(1_005_000), HintSource::Header)));
    }

    #[test]
    fn lock_scope_by_status() {
        assert_eq!(verdict(429, "").lock_scope, LockScope::QuotaFamily);
        assert_eq!(verdict(403, "").lock_scope, LockScope::QuotaFamily);
        assert_eq!(verdict(402, "").lock_scope, LockScope::QuotaFamily);
        assert_eq!(verdict(404, "").lock_scope, LockScope::Model);
        assert_eq!(verdict(502, "").lock_scope, LockScope::Exact);
        assert_eq!(verdict(503, "").lock_scope, LockScope::Exact);
    }

    #[test]
    fn operator_rules_win_and_their_scope_is_explicit() {
        let ops = OperatorRules::from_settings(&[ProviderErrorRule {
            provider: "glm".to_owned(),
            status: Some(429),
            text: "并发数过高".to_owned(),
            scope: RuleScope::Model,
            reason: Some(ErrorReason::RateLimit),
            cooldown_ms: Some(2_000),
        }]);
        let v = verdict_with("glm", 429, &[], "并发数过高", &ops);
        assert_eq!((v.reason, v.scope, v.explicit_scope), (ErrorReason::RateLimit, RuleScope::Model, true));
        assert_eq!(
            (v.lock_scope, v.rule_cooldown_ms, v.rule),
            (LockScope::Model, Some(2_000), RuleRef::Operator(0))
        );
        let v = verdict_with("other", 429, &[], "并发数过高", &ops);
        assert_eq!((v.reason, v.explicit_scope), (ErrorReason::ConcurrencyLimited, false));
    }

    proptest::proptest! {
        /// Any status, headers and body get a verdict; classification never panics and
        /// only the five provider-level statuses (or transport failures) count.
        #[test]
        fn classification_is_total(status in 0u16..1000, body in "\\PC{0,200}", retry in "\\PC{0,20}") {
            let headers: &[(&str, &str)] = &[("retry-after", retry.as_str()), ("x-ratelimit-reset", retry.as_str())];
            let ops = OperatorRules::default();
            let cx = ClassifyContext { provider: "p", restatements: restate::BUILTIN_RULES, operator: &ops, now: NOW, utc_offset_ms: 0 };
            let v = classify(&AttemptOutcome::Http { status, headers: &headers, body: &body }, &cx);
            if v.counts_for_breaker {
                proptest::prop_assert!(v.status.is_some_and(|s| rules::BREAKER_STATUSES.contains(&s)));
            }
        }
    }

    #[test]
    fn hints_are_attached() {
        let v = verdict_with("p", 429, &[("retry-after", "7")], "", &OperatorRules::default());
        assert_eq!(v.hint.map(|h| h.at), Some(UnixMillis(1_007_000)));
        let v = verdict(429, "please retry in 2s");
        assert_eq!(v.hint.map(|h| (h.at, h.source)), Some((UnixMillis(1_002_000), HintSource::Body)));
        let cx_ops = OperatorRules::default();
        let cx = ClassifyContext {
            provider: "p",
            restatements: &[],
            operator: &cx_ops,
            now: NOW,
            utc_offset_ms: 0,
        };
        let v = classify(&AttemptOutcome::Http { status: 429, headers: &NoHeaders, body: "" }, &cx);
        assert_eq!(v.hint, None);
    }
}
