//! Status restatement (SPEC 4.8): some upstreams report a temporary quota exhaustion
//! with a non-retryable status. A registry of rules rewrites the status BEFORE
//! classification, so failover, the layers and the client all see a retryable 429.
//!
//! A rule fires when the provider matches, the status is one of `from_statuses`, a
//! text marker is present and no exclude marker is. Markers are matched against the
//! ASCII-lower-cased body (CJK text is unaffected by lower-casing).

/// One restatement rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RestateRule {
    /// Stable id, reported in the verdict.
    pub id: &'static str,
    /// Providers the rule applies to; empty means every provider.
    pub providers: &'static [&'static str],
    /// Statuses that are restated.
    pub from_statuses: &'static [u16],
    /// The status they become.
    pub to_status: u16,
    /// Any of these (lower-case) must appear in the body.
    pub text_markers: &'static [&'static str],
    /// None of these may appear.
    pub exclude_markers: &'static [&'static str],
    /// Retry hint when the upstream gave none (what the client is told).
    pub default_retry_after_ms: u32,
}

/// The built-in registry. `额度不足` ("insufficient quota", also inside `用户额度不足`)
/// on a 403/400 is a temporary quota exhaustion; `无权访问` ("no access", as in
/// `无权访问模型`) is a permanent refusal and is never restated. The rule is not tied
/// to one provider id because users name OpenAI-compatible gateways freely.
pub static BUILTIN_RULES: &[RestateRule] = &[RestateRule {
    id: "quota-misstatus",
    providers: &[],
    from_statuses: &[403, 400],
    to_status: 429,
    text_markers: &["额度不足"],
    exclude_markers: &["无权访问"],
    default_retry_after_ms: 60_000,
}];

/// A status that was restated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Restatement {
    /// The rule that fired.
    pub rule_id: &'static str,
    /// The upstream's own status.
    pub from_status: u16,
    /// The status used from here on.
    pub status: u16,
    /// The rule's retry hint when the upstream gave none.
    pub default_retry_after_ms: u32,
}

/// Applies the first matching rule of `rules`.
pub fn restate(rules: &[RestateRule], provider: &str, status: u16, lower_body: &str) -> Option<Restatement> {
    rules
        .iter()
        .find(|r| {
            (r.providers.is_empty() || r.providers.contains(&provider))
                && r.from_statuses.contains(&status)
                && r.text_markers.iter().any(|m| lower_body.contains(m))
                && !r.exclude_markers.iter().any(|m| lower_body.contains(m))
        })
        .map(|r| Restatement {
            rule_id: r.id,
            from_status: status,
            status: r.to_status,
            default_retry_after_ms: r.default_retry_after_ms,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quota_misstatus_becomes_429_with_a_60s_hint() {
        for (status, body) in [(403, "用户额度不足"), (400, "{\"error\":\"额度不足，请充值\"}")]
        {
            let r = restate(BUILTIN_RULES, "agentrouter", status, body);
            assert_eq!(
                r,
                Some(Restatement {
                    rule_id: "quota-misstatus",
                    from_status: status,
                    status: 429,
                    default_retry_after_ms: 60_000
                })
            );
        }
    }

    #[test]
    fn no_access_to_model_is_excluded() {
        assert_eq!(restate(BUILTIN_RULES, "agentrouter", 403, "无权访问模型 claude-x，额度不足"), None);
        assert_eq!(restate(BUILTIN_RULES, "agentrouter", 403, "无权访问模型"), None);
    }

    #[test]
    fn other_statuses_and_texts_are_left_alone() {
        assert_eq!(restate(BUILTIN_RULES, "glm", 500, "额度不足"), None);
        assert_eq!(restate(BUILTIN_RULES, "glm", 403, "forbidden"), None);
    }

    #[test]
    fn provider_lists_restrict_a_rule() {
        let rules = [RestateRule { providers: &["only"], ..BUILTIN_RULES[0] }];
        assert!(restate(&rules, "only", 403, "额度不足").is_some());
        assert!(restate(&rules, "other", 403, "额度不足").is_none());
    }
}
