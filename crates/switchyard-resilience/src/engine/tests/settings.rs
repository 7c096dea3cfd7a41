//! Each engine-side settings field, changed away from its default through
//! [`Engine::apply_settings`], changes what the engine does (issue 11: every control
//! has an effect). The `settings-test:` markers are read by
//! `tests/tests/settings_coverage.rs`.

use switchyard_types::resilience::{BreakerStateName, ProviderBreakerView, RuleScope};
use switchyard_types::settings::{BreakerProfileSettings, ProviderErrorRule, WindowGateSettings};

use super::*;

/// Both editable profiles, with the settings path segment that names each.
const CATEGORIES: [(AuthCategory, &str); 2] =
    [(AuthCategory::Oauth, "oauth"), (AuthCategory::ApiKey, "apikey")];

/// A rig whose only provider `p` has `n` connections `p-0 … p-(n-1)` of `category`.
fn provider_rig(category: AuthCategory, n: usize, s: &ResilienceSettings) -> Rig {
    let r = rig();
    r.engine.sync_connections((0..n).map(|i| conn_config(&format!("p-{i}"), "p", category)));
    r.engine.apply_settings(s);
    r
}

fn pt(i: usize) -> (String, &'static str) {
    (format!("p-{i}"), "m")
}

fn fail_p(r: &Rig, i: usize, status: u16, body: &str) -> Recorded {
    let (id, model) = pt(i);
    fail(r, t("p", &id, model), status, &[], body)
}

fn fail_p_with(r: &Rig, i: usize, outcome: &AttemptOutcome<'_>) -> Recorded {
    let (id, model) = pt(i);
    let attempt = r.engine.begin(t("p", &id, model)).unwrap_or_else(|e| panic!("p-{i} excluded: {e:?}"));
    r.engine.judge(attempt, outcome)
}

fn breaker(r: &Rig) -> ProviderBreakerView {
    r.engine.breakers().into_iter().find(|b| b.provider == "p").unwrap_or_else(|| panic!("no breaker for p"))
}

/// How connection `p-i` is filtered now: `None` when eligible.
fn excluded_p(r: &Rig, i: usize) -> Option<(ExclusionReason, Option<UnixMillis>)> {
    let (id, model) = pt(i);
    r.engine.filter(&[t("p", &id, model)]).excluded.first().map(|x| (x.reason, x.until))
}

fn profile(s: &mut ResilienceSettings, c: AuthCategory) -> &mut BreakerProfileSettings {
    match c {
        AuthCategory::ApiKey => &mut s.provider_breaker.apikey,
        _ => &mut s.provider_breaker.oauth,
    }
}

// settings-test: /providerBreaker/oauth/failureThreshold /providerBreaker/oauth/degradationThreshold /providerBreaker/oauth/resetTimeoutMs
// settings-test: /providerBreaker/apikey/failureThreshold /providerBreaker/apikey/degradationThreshold /providerBreaker/apikey/resetTimeoutMs
#[test]
fn breaker_thresholds_and_reset_timeout_follow_the_settings_for_both_profiles() {
    for (category, name) in CATEGORIES {
        let mut s = ResilienceSettings::default();
        *profile(&mut s, category) = BreakerProfileSettings {
            failure_threshold: 3,
            degradation_threshold: 2,
            reset_timeout_ms: 10_000,
            ..*profile(&mut s, category)
        };
        let r = provider_rig(category, 4, &s);
        fail_p(&r, 0, 503, "");
        assert_eq!(breaker(&r).state, BreakerStateName::Closed, "{name}: one failure");
        fail_p(&r, 1, 503, "");
        assert_eq!(breaker(&r).state, BreakerStateName::Degraded, "{name}: degrades at 2 (default 5/7)");
        assert_eq!(excluded_p(&r, 3), None, "{name}: degraded still routes");
        fail_p(&r, 2, 503, "");
        assert_eq!(breaker(&r).state, BreakerStateName::Open, "{name}: opens at 3 (default 8/12)");
        let opened = r.engine.now();
        assert_eq!(
            excluded_p(&r, 3),
            Some((ExclusionReason::CircuitOpen, Some(opened.plus_millis(10_000)))),
            "{name}: held for the reset timeout"
        );
        r.clock.advance_ms(9_999);
        assert!(excluded_p(&r, 3).is_some(), "{name}: still open at 9.999 s");
        r.clock.advance_ms(1);
        assert_eq!(excluded_p(&r, 3), None, "{name}: a probe goes through at 10 s");
        assert_eq!(breaker(&r).state, BreakerStateName::HalfOpen);
    }
}

// settings-test: /providerBreaker/oauth/cooldownByKind/serverError /providerBreaker/oauth/cooldownByKind/timeout /providerBreaker/oauth/cooldownByKind/unreachable /providerBreaker/oauth/cooldownByKind/rateLimit /providerBreaker/oauth/cooldownByKind/quotaExhausted
// settings-test: /providerBreaker/apikey/cooldownByKind/serverError /providerBreaker/apikey/cooldownByKind/timeout /providerBreaker/apikey/cooldownByKind/unreachable /providerBreaker/apikey/cooldownByKind/rateLimit /providerBreaker/apikey/cooldownByKind/quotaExhausted
#[test]
fn cooldown_by_kind_sets_the_open_hold_for_its_failure_kind_only() {
    let quota_rule = |reason| ProviderErrorRule {
        provider: "p".into(),
        status: Some(429),
        text: "whole provider".into(),
        scope: RuleScope::Provider,
        reason: Some(reason),
        cooldown_ms: None,
    };
    let http_429: &[(&str, &str)] = &[];
    let outcome_for = |kind: ErrorReason| match kind {
        ErrorReason::ServerError => http(503, &http_429, ""),
        ErrorReason::Timeout => AttemptOutcome::Transport(TransportFailure::Timeout),
        ErrorReason::Unreachable => AttemptOutcome::Transport(TransportFailure::Connect),
        _ => http(429, &http_429, "the whole provider is limited"),
    };
    let kinds = [
        ErrorReason::ServerError,
        ErrorReason::Timeout,
        ErrorReason::Unreachable,
        ErrorReason::RateLimit,
        ErrorReason::QuotaExhausted,
    ];
    for (category, name) in CATEGORIES {
        for kind in kinds {
            for set in [false, true] {
                let mut s = ResilienceSettings::default();
                let p = profile(&mut s, category);
                p.failure_threshold = 1;
                if set {
                    let by_kind = &mut p.cooldown_by_kind;
                    let slot = match kind {
                        ErrorReason::ServerError => &mut by_kind.server_error,
                        ErrorReason::Timeout => &mut by_kind.timeout,
                        ErrorReason::Unreachable => &mut by_kind.unreachable,
                        ErrorReason::RateLimit => &mut by_kind.rate_limit,
                        _ => &mut by_kind.quota_exhausted,
                    };
                    *slot = Some(7_000);
                    // Another kind's entry must not leak into this one.
                    if kind != ErrorReason::ServerError {
                        by_kind.server_error = Some(2_000);
                    } else {
                        by_kind.timeout = Some(2_000);
                    }
                }
                let reset = p.reset_timeout_ms;
                if matches!(kind, ErrorReason::RateLimit | ErrorReason::QuotaExhausted) {
                    s.provider_error_rules = vec![quota_rule(kind)];
                }
                let r = provider_rig(category, 2, &s);
                fail_p_with(&r, 0, &outcome_for(kind));
                let b = breaker(&r);
                assert_eq!(
                    (b.state, b.last_failure_kind),
                    (BreakerStateName::Open, Some(kind)),
                    "{name} {kind:?}"
                );
                let expected = if set { 7_000 } else { i64::from(reset) };
                assert_eq!(
                    b.open_until,
                    Some(r.engine.now().plus_millis(expected)),
                    "{name} {kind:?} with cooldownByKind {}",
                    if set { "set" } else { "unset" }
                );
            }
        }
    }
}

// settings-test: /providerCooldown/enabled /providerCooldown/oauth/failureThreshold /providerCooldown/oauth/failureWindowMs /providerCooldown/oauth/cooldownMs
// settings-test: /providerCooldown/apikey/failureThreshold /providerCooldown/apikey/failureWindowMs /providerCooldown/apikey/cooldownMs
#[test]
fn the_provider_window_gate_counts_within_its_window_and_cools_for_its_time() {
    for (category, name) in CATEGORIES {
        for enabled in [false, true] {
            let mut s = ResilienceSettings::default();
            profile(&mut s, category).failure_threshold = 1_000; // keep the breaker out of it
            s.provider_cooldown.enabled = enabled;
            let gate =
                WindowGateSettings { failure_threshold: 2, failure_window_ms: 10_000, cooldown_ms: 20_000 };
            match category {
                AuthCategory::ApiKey => s.provider_cooldown.apikey = gate,
                _ => s.provider_cooldown.oauth = gate,
            }
            let r = provider_rig(category, 4, &s);
            fail_p(&r, 0, 503, "");
            r.clock.advance_ms(10_001);
            fail_p(&r, 1, 503, "");
            assert_eq!(excluded_p(&r, 3), None, "{name}: the first failure left the 10 s window");
            r.clock.advance_ms(9_000);
            fail_p(&r, 2, 503, "");
            let now = r.engine.now();
            if enabled {
                assert_eq!(
                    excluded_p(&r, 3),
                    Some((ExclusionReason::ProviderCooldown, Some(now.plus_millis(20_000)))),
                    "{name}: two failures within 10 s cool the provider for 20 s"
                );
                r.clock.advance_ms(20_000);
                assert_eq!(excluded_p(&r, 3), None);
            } else {
                assert_eq!(excluded_p(&r, 3), None, "{name}: the gate is off by default");
            }
        }
    }
}

// settings-test: /providerCooldown/minRetryCooldownMs /providerCooldown/maxRetryCooldownMs
#[test]
fn the_window_gate_cools_a_failing_connection_from_min_doubling_to_max() {
    let mut s = ResilienceSettings::default();
    s.provider_breaker.apikey.failure_threshold = 1_000;
    s.provider_cooldown.enabled = true;
    s.provider_cooldown.apikey.failure_threshold = 1_000; // the provider entry never trips
    // Both above the breaker's 5 s de-duplication of one connection's failures.
    s.provider_cooldown.min_retry_cooldown_ms = 6_000;
    s.provider_cooldown.max_retry_cooldown_ms = 10_000;
    s.connection_cooldown.apikey.base_cooldown_ms = 0; // only the gate's entry cools
    let r = provider_rig(AuthCategory::ApiKey, 1, &s);
    let mut seen = Vec::new();
    for _ in 0..3 {
        fail_p(&r, 0, 503, "");
        let (reason, until) = excluded_p(&r, 0).unwrap_or_else(|| panic!("p-0 not cooling"));
        assert_eq!(reason, ExclusionReason::ConnectionCooldown);
        let ms = r.engine.now().millis_until(until.unwrap_or(T0));
        seen.push(ms);
        r.clock.advance_ms(ms);
    }
    assert_eq!(seen, vec![6_000, 10_000, 10_000], "min, then doubled and capped at max");
    succeed(&r, t("p", "p-0", "m"));
    fail_p(&r, 0, 503, "");
    let until = excluded_p(&r, 0).and_then(|x| x.1).unwrap_or(T0);
    assert_eq!(r.engine.now().millis_until(until), 6_000, "a success starts over at min");
}

// settings-test: /connectionCooldown/oauth/baseCooldownMs /connectionCooldown/oauth/maxBackoffSteps
// settings-test: /connectionCooldown/apikey/baseCooldownMs /connectionCooldown/apikey/maxBackoffSteps
#[test]
fn connection_cooldown_doubles_from_its_base_up_to_the_step_cap() {
    for (category, name) in CATEGORIES {
        let mut s = ResilienceSettings::default();
        let defaults = match category {
            AuthCategory::ApiKey => &mut s.connection_cooldown.apikey,
            _ => &mut s.connection_cooldown.oauth,
        };
        defaults.base_cooldown_ms = 1_000;
        defaults.max_backoff_steps = 2;
        let r = provider_rig(category, 1, &s);
        let mut seen = Vec::new();
        for _ in 0..4 {
            fail_p(&r, 0, 429, "");
            let until = excluded_p(&r, 0).and_then(|x| x.1).unwrap_or_else(|| panic!("{name}: not cooling"));
            let ms = r.engine.now().millis_until(until);
            seen.push(ms);
            r.clock.advance_ms(ms);
        }
        assert_eq!(seen, vec![1_000, 2_000, 4_000, 4_000], "{name}: base × 2^level, level capped at 2");
    }
}

/// Locks `glm-5` on `glm-key` with `status` once per expiry, returning each lock's
/// length.
fn lock_lengths(r: &Rig, status: u16, n: usize) -> Vec<u32> {
    let mut seen = Vec::new();
    for _ in 0..n {
        fail(r, t("glm", "glm-key", "glm-5"), status, &[], "");
        let Some(lock) = r.engine.lockouts().into_iter().find(|l| l.model == "glm-5") else {
            seen.push(0);
            continue;
        };
        seen.push(lock.remaining_ms);
        r.clock.advance_ms(i64::from(lock.remaining_ms));
    }
    seen
}

// settings-test: /modelLockout/enabled /modelLockout/errorCodes /modelLockout/errorCodes/*
#[test]
fn lockouts_happen_only_when_enabled_and_only_for_the_listed_statuses() {
    let r = rig();
    assert_eq!(lock_lengths(&r, 503, 1), vec![0], "off by default: a 503 cools the connection instead");
    assert_eq!(r.engine.cooldowns(Some("glm"))[0].status, ConnectionStatus::Unavailable);

    let r = rig();
    let mut s = ResilienceSettings::default();
    s.model_lockout.enabled = true;
    s.model_lockout.error_codes = vec![500];
    r.engine.apply_settings(&s);
    assert_eq!(lock_lengths(&r, 503, 1), vec![0], "503 is not listed");
    r.clock.advance_ms(600_000);
    assert_eq!(lock_lengths(&r, 500, 1), vec![120_000], "500 is listed");
    assert_eq!(
        r.engine.cooldowns(Some("glm"))[0].status,
        ConnectionStatus::Active,
        "the lock replaces the cooldown"
    );
}

// settings-test: /modelLockout/baseCooldownMs /modelLockout/maxCooldownMs /modelLockout/maxBackoffSteps /modelLockout/useExponentialBackoff
#[test]
fn lockout_lengths_follow_base_cap_steps_and_the_exponential_switch() {
    let run = |edit: &dyn Fn(&mut ResilienceSettings)| {
        let r = rig();
        let mut s = ResilienceSettings::default();
        s.model_lockout.enabled = true;
        s.model_lockout.base_cooldown_ms = 10_000;
        s.model_lockout.max_cooldown_ms = 35_000;
        edit(&mut s);
        r.engine.apply_settings(&s);
        lock_lengths(&r, 503, 4)
    };
    assert_eq!(run(&|_| {}), vec![10_000, 20_000, 35_000, 35_000], "doubling from base, capped at max");
    assert_eq!(
        run(&|s| s.model_lockout.max_backoff_steps = 1),
        vec![10_000, 20_000, 20_000, 20_000],
        "one doubling step at most"
    );
    assert_eq!(
        run(&|s| s.model_lockout.use_exponential_backoff = false),
        vec![10_000, 10_000, 10_000, 10_000],
        "a fixed base without exponential backoff"
    );
}

// settings-test: /providerErrorRules /providerErrorRules/*/provider /providerErrorRules/*/status /providerErrorRules/*/match /providerErrorRules/*/scope /providerErrorRules/*/reason /providerErrorRules/*/cooldownMs
#[test]
fn operator_error_rules_pick_reason_scope_and_cooldown_for_their_provider_status_and_text() {
    let rule = |provider: &str, status: u16, text: &str, scope: RuleScope| ProviderErrorRule {
        provider: provider.into(),
        status: Some(status),
        text: text.into(),
        scope,
        reason: Some(ErrorReason::QuotaExhausted),
        cooldown_ms: Some(42_000),
    };
    let body = r#"{"error":{"message":"Plan allowance used up for today"}}"#;
    let glm = t("glm", "glm-key", "glm-5");
    let state = |r: &Rig| {
        let c = &r.engine.cooldowns(Some("glm"))[0];
        (c.status, c.remaining_ms, c.last_error_kind)
    };

    // Without a rule a 400 is the client's own error: relayed, nothing changes.
    let r = rig();
    fail(&r, glm, 400, &[], body);
    assert_eq!(state(&r), (ConnectionStatus::Active, 0, None));

    // A connection-scoped rule: the connection cools for exactly its cooldownMs.
    let r = rig();
    let s = ResilienceSettings {
        provider_error_rules: vec![rule("glm", 400, "allowance used up", RuleScope::Connection)],
        ..ResilienceSettings::default()
    };
    r.engine.apply_settings(&s);
    fail(&r, glm, 400, &[], body);
    assert_eq!(state(&r), (ConnectionStatus::Unavailable, 42_000, Some(ErrorReason::QuotaExhausted)));

    // The rule's provider, status and text must all match.
    for other in [
        rule("anthropic", 400, "allowance used up", RuleScope::Connection),
        rule("glm", 403, "allowance used up", RuleScope::Connection),
        rule("glm", 400, "no such text", RuleScope::Connection),
    ] {
        let r = rig();
        let s =
            ResilienceSettings { provider_error_rules: vec![other.clone()], ..ResilienceSettings::default() };
        r.engine.apply_settings(&s);
        fail(&r, glm, 400, &[], body);
        assert_eq!(state(&r), (ConnectionStatus::Active, 0, None), "{other:?} must not match");
    }

    // A model-scoped rule locks the model for its cooldownMs and leaves the connection routable.
    let r = rig();
    let s = ResilienceSettings {
        provider_error_rules: vec![rule("glm", 400, "allowance used up", RuleScope::Model)],
        ..ResilienceSettings::default()
    };
    r.engine.apply_settings(&s);
    fail(&r, glm, 400, &[], body);
    let locks = r.engine.lockouts();
    assert_eq!(
        locks.iter().map(|l| (l.model.as_str(), l.reason, l.remaining_ms)).collect::<Vec<_>>(),
        vec![("glm-5", ErrorReason::QuotaExhausted, 42_000)]
    );
    assert_eq!(state(&r).0, ConnectionStatus::Active);

    // A provider-scoped rule counts for the breaker (threshold 1 here).
    let r = rig();
    let mut s = ResilienceSettings::default();
    s.provider_breaker.apikey.failure_threshold = 1;
    s.provider_error_rules = vec![rule("glm", 400, "allowance used up", RuleScope::Provider)];
    r.engine.apply_settings(&s);
    fail(&r, glm, 400, &[], body);
    let b = r.engine.breakers().into_iter().find(|b| b.provider == "glm");
    assert_eq!(
        b.map(|b| (b.state, b.last_failure_kind)),
        Some((BreakerStateName::Open, Some(ErrorReason::QuotaExhausted)))
    );
}
