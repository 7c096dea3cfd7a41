//! Validation of a whole document: every integer against the ranges table, list
//! items and operator rules, then the cross-field rules. Collects every issue (never
//! stops at the first) with its JSON-pointer path and the allowed range. Fail-closed:
//! a document with any issue must not be stored.

use super::fields::for_each_integer;
use super::ranges::{RangeSpec, known};
use super::{ProviderErrorRule, ResilienceSettings};
use crate::api::ValidationIssue;

impl ResilienceSettings {
    /// Checks the document; `Err` lists every problem.
    pub fn validate(&self) -> Result<(), Vec<ValidationIssue>> {
        let mut issues = Vec::new();
        let mut copy = self.clone();
        for_each_integer(&mut copy, &mut |path, value| {
            let spec = known(path);
            if !in_range(&spec, *value) {
                issues.push(out_of_range(path.to_owned(), &spec, *value));
            }
        });
        check_error_codes(&self.model_lockout.error_codes, &mut issues);
        check_rules(&self.provider_error_rules, &mut issues);
        check_provider_caps(&self.provider_concurrency, &mut issues);
        cross_field(&mut copy, false, &mut |path, message, _| {
            issues.push(ValidationIssue { path: path.to_owned(), message });
        });
        if issues.is_empty() { Ok(()) } else { Err(issues) }
    }
}

pub(crate) fn in_range(spec: &RangeSpec, value: u32) -> bool {
    (spec.min..=spec.max).contains(&value)
}

pub(crate) fn out_of_range(path: String, spec: &RangeSpec, got: u32) -> ValidationIssue {
    ValidationIssue { path, message: format!("must be {} (got {got})", spec.describe()) }
}

fn check_error_codes(codes: &[u16], issues: &mut Vec<ValidationIssue>) {
    let len_spec = known("/modelLockout/errorCodes");
    let len = u32::try_from(codes.len()).unwrap_or(u32::MAX);
    if !in_range(&len_spec, len) {
        issues.push(out_of_range("/modelLockout/errorCodes".to_owned(), &len_spec, len));
    }
    let item = known("/modelLockout/errorCodes/*");
    for (i, code) in codes.iter().enumerate() {
        if !in_range(&item, u32::from(*code)) {
            issues.push(out_of_range(format!("/modelLockout/errorCodes/{i}"), &item, u32::from(*code)));
        } else if codes[..i].contains(code) {
            issues.push(ValidationIssue {
                path: format!("/modelLockout/errorCodes/{i}"),
                message: format!("duplicate status {code}"),
            });
        }
    }
}

/// The problems of one operator rule, as (field name, message).
pub(crate) fn rule_problems(rule: &ProviderErrorRule) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    let mut text_len = |field: &'static str, value: &str| {
        let spec = known(match field {
            "provider" => "/providerErrorRules/*/provider",
            _ => "/providerErrorRules/*/match",
        });
        let chars = u32::try_from(value.trim().chars().count()).unwrap_or(u32::MAX);
        if !in_range(&spec, chars) {
            out.push((field, format!("must be {} (got {chars})", spec.describe())));
        }
    };
    text_len("provider", &rule.provider);
    text_len("match", &rule.text);
    if let Some(status) = rule.status {
        let spec = known("/providerErrorRules/*/status");
        if !in_range(&spec, u32::from(status)) {
            out.push(("status", format!("must be {} (got {status})", spec.describe())));
        }
    }
    if let Some(ms) = rule.cooldown_ms {
        let spec = known("/providerErrorRules/*/cooldownMs");
        if !in_range(&spec, ms) {
            out.push(("cooldownMs", format!("must be {} (got {ms})", spec.describe())));
        }
    }
    out
}

/// The problem of one provider cap entry, if any.
pub(crate) fn provider_cap_problem(provider: &str, cap: u32) -> Option<(String, String)> {
    // A JSON pointer escapes `~` and `/` inside a key.
    let path = format!("/providerConcurrency/{}", provider.replace('~', "~0").replace('/', "~1"));
    let key = known("/providerConcurrency/*");
    let chars = u32::try_from(provider.chars().count()).unwrap_or(u32::MAX);
    if !in_range(&key, chars) || provider.trim() != provider {
        return Some((path, format!("a provider id must be {}, without spaces around it", key.describe())));
    }
    let spec = known("/providerConcurrency/*/cap");
    (!in_range(&spec, cap)).then(|| (path, format!("must be {} (got {cap})", spec.describe())))
}

fn check_provider_caps(caps: &std::collections::BTreeMap<String, u32>, issues: &mut Vec<ValidationIssue>) {
    let spec = known("/providerConcurrency");
    let len = u32::try_from(caps.len()).unwrap_or(u32::MAX);
    if !in_range(&spec, len) {
        issues.push(out_of_range("/providerConcurrency".to_owned(), &spec, len));
    }
    for (provider, &cap) in caps {
        if let Some((path, message)) = provider_cap_problem(provider, cap) {
            issues.push(ValidationIssue { path, message });
        }
    }
}

fn check_rules(rules: &[ProviderErrorRule], issues: &mut Vec<ValidationIssue>) {
    let spec = known("/providerErrorRules");
    let len = u32::try_from(rules.len()).unwrap_or(u32::MAX);
    if !in_range(&spec, len) {
        issues.push(out_of_range("/providerErrorRules".to_owned(), &spec, len));
    }
    for (i, rule) in rules.iter().enumerate() {
        for (field, message) in rule_problems(rule) {
            issues.push(ValidationIssue { path: format!("/providerErrorRules/{i}/{field}"), message });
        }
    }
}

/// The cross-field rules. Each violation is reported as `(path, message, fix)`; with
/// `apply` the fix is written into `s` (the clamp path), otherwise `s` is untouched.
pub(crate) fn cross_field(
    s: &mut ResilienceSettings,
    apply: bool,
    report: &mut dyn FnMut(&'static str, String, u32),
) {
    let profiles = [
        (&mut s.provider_breaker.oauth, "/providerBreaker/oauth/degradationThreshold"),
        (&mut s.provider_breaker.apikey, "/providerBreaker/apikey/degradationThreshold"),
    ];
    for (p, path) in profiles {
        let allowed_max = p.failure_threshold.saturating_sub(1).max(1);
        if p.degradation_threshold > allowed_max {
            let msg = format!(
                "must be lower than failureThreshold ({}): at most {allowed_max} (got {})",
                p.failure_threshold, p.degradation_threshold
            );
            report(path, msg, allowed_max);
            if apply {
                p.degradation_threshold = allowed_max;
            }
        }
    }
    let ml = &mut s.model_lockout;
    if ml.max_cooldown_ms < ml.base_cooldown_ms {
        let msg =
            format!("must be at least baseCooldownMs ({}) (got {})", ml.base_cooldown_ms, ml.max_cooldown_ms);
        report("/modelLockout/maxCooldownMs", msg, ml.base_cooldown_ms);
        if apply {
            ml.max_cooldown_ms = ml.base_cooldown_ms;
        }
    }
    let pc = &mut s.provider_cooldown;
    if pc.max_retry_cooldown_ms < pc.min_retry_cooldown_ms {
        let msg = format!(
            "must be at least minRetryCooldownMs ({}) (got {})",
            pc.min_retry_cooldown_ms, pc.max_retry_cooldown_ms
        );
        report("/providerCooldown/maxRetryCooldownMs", msg, pc.min_retry_cooldown_ms);
        if apply {
            pc.max_retry_cooldown_ms = pc.min_retry_cooldown_ms;
        }
    }
    let cw = &mut s.combo_cooldown_wait;
    if cw.budget_ms < cw.max_wait_ms {
        let msg = format!("must be at least maxWaitMs ({}) (got {})", cw.max_wait_ms, cw.budget_ms);
        report("/comboCooldownWait/budgetMs", msg, cw.max_wait_ms);
        if apply {
            cw.budget_ms = cw.max_wait_ms;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resilience::RuleScope;

    fn paths(issues: &[ValidationIssue]) -> Vec<&str> {
        issues.iter().map(|i| i.path.as_str()).collect()
    }

    #[test]
    fn defaults_are_valid() {
        assert_eq!(ResilienceSettings::default().validate(), Ok(()));
    }

    #[test]
    fn every_issue_is_collected_with_path_and_range() {
        let mut s = ResilienceSettings::default();
        s.provider_breaker.oauth.failure_threshold = 0;
        s.request_queue.max_wait_ms = 0;
        s.model_lockout.error_codes = vec![429, 700, 429];
        s.model_lockout.base_cooldown_ms = 600_000;
        s.model_lockout.max_cooldown_ms = 60_000;
        let issues = s.validate().err().unwrap_or_default();
        assert_eq!(
            paths(&issues),
            vec![
                "/providerBreaker/oauth/failureThreshold",
                "/requestQueue/maxWaitMs",
                "/modelLockout/errorCodes/1",
                "/modelLockout/errorCodes/2",
                "/providerBreaker/oauth/degradationThreshold",
                "/modelLockout/maxCooldownMs",
            ]
        );
        assert!(issues[0].message.contains("from 1 to 1,000"), "{}", issues[0].message);
        assert!(issues[1].message.contains("from 1 to 86,400,000 ms"), "{}", issues[1].message);
        assert!(issues[5].message.contains("at least baseCooldownMs"), "{}", issues[5].message);
    }

    #[test]
    fn cross_field_rules_are_checked() {
        let mut s = ResilienceSettings::default();
        s.provider_breaker.apikey.degradation_threshold = 12;
        s.provider_cooldown.min_retry_cooldown_ms = 10_000;
        s.provider_cooldown.max_retry_cooldown_ms = 5_000;
        s.combo_cooldown_wait.max_wait_ms = 100_000;
        s.combo_cooldown_wait.budget_ms = 50_000;
        let issues = s.validate().err().unwrap_or_default();
        assert_eq!(
            paths(&issues),
            vec![
                "/providerBreaker/apikey/degradationThreshold",
                "/providerCooldown/maxRetryCooldownMs",
                "/comboCooldownWait/budgetMs",
            ]
        );
    }

    #[test]
    fn stream_budgets_are_checked_against_their_ranges() {
        let mut s = ResilienceSettings::default();
        s.stream_recovery.readiness_budget_ms = 999;
        s.stream_recovery.attempt_deadline_ms = 9_999;
        let issues = s.validate().err().unwrap_or_default();
        assert_eq!(
            paths(&issues),
            vec!["/streamRecovery/readinessBudgetMs", "/streamRecovery/attemptDeadlineMs"]
        );
        assert!(issues[0].message.contains("from 1,000 to 600,000 ms"), "{}", issues[0].message);
        assert!(issues[1].message.contains("from 10,000 to 86,400,000 ms"), "{}", issues[1].message);
        s.stream_recovery.readiness_budget_ms = 600_000;
        s.stream_recovery.attempt_deadline_ms = 86_400_000;
        assert_eq!(s.validate(), Ok(()));
    }

    #[test]
    fn provider_caps_are_checked_with_escaped_paths() {
        let mut s = ResilienceSettings::default();
        s.provider_concurrency.insert("ok".into(), 3);
        s.provider_concurrency.insert("a/b".into(), 0);
        s.provider_concurrency.insert(" glm".into(), 1);
        let issues = s.validate().err().unwrap_or_default();
        assert_eq!(paths(&issues), vec!["/providerConcurrency/ glm", "/providerConcurrency/a~1b"]);
    }

    #[test]
    fn degradation_may_equal_one_when_failure_is_one() {
        let mut s = ResilienceSettings::default();
        s.provider_breaker.oauth.failure_threshold = 1;
        s.provider_breaker.oauth.degradation_threshold = 1;
        assert_eq!(s.validate(), Ok(()));
    }

    #[test]
    fn operator_rules_are_checked_field_by_field() {
        let mut s = ResilienceSettings::default();
        s.provider_error_rules.push(ProviderErrorRule {
            provider: String::new(),
            status: Some(42),
            text: "x".repeat(201),
            scope: RuleScope::Model,
            reason: None,
            cooldown_ms: Some(super::super::ranges::DAY_MS + 1),
        });
        let issues = s.validate().err().unwrap_or_default();
        assert_eq!(
            paths(&issues),
            vec![
                "/providerErrorRules/0/provider",
                "/providerErrorRules/0/match",
                "/providerErrorRules/0/status",
                "/providerErrorRules/0/cooldownMs",
            ]
        );
    }

    #[test]
    fn table_rows_named_by_code_exist() {
        for path in ["/modelLockout/errorCodes/*", "/providerErrorRules/*/status"] {
            let spec = super::super::ranges::spec(path);
            assert!(spec.is_some_and(|s| s.kind == super::super::ranges::FieldKind::Integer), "{path}");
        }
    }
}
