//! The engine's compiled policies: one snapshot of everything the layers need,
//! built from a validated [`ResilienceSettings`] and swapped atomically (a request
//! reads one consistent snapshot).

use switchyard_types::ResilienceSettings;

use crate::breaker::BreakerPolicy;
use crate::breaker::window::WindowPolicy;
use crate::classify::restate::{BUILTIN_RULES, RestateRule};
use crate::classify::rules::OperatorRules;
use crate::cooldown::CooldownPolicy;
use crate::lockout::LockoutPolicy;
use crate::outcome::AuthCategory;

/// One quota-family rule: models of `provider` starting with `prefix` share the
/// quota named `family`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FamilyRule {
    /// Provider id.
    pub provider: String,
    /// Model id prefix.
    pub prefix: String,
    /// Family name.
    pub family: String,
}

/// Provider-defined quota families; a model without a rule is its own family.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QuotaFamilies(pub Vec<FamilyRule>);

impl QuotaFamilies {
    /// The family of `model` at `provider`.
    pub fn family_of<'a>(&'a self, provider: &str, model: &'a str) -> &'a str {
        self.0
            .iter()
            .find(|r| r.provider == provider && model.starts_with(r.prefix.as_str()))
            .map_or(model, |r| r.family.as_str())
    }

    /// The built-in families (reference facts §4.3): models that share one quota on
    /// one account. Codex subscriptions share one quota across every `gpt-5*` model;
    /// a GLM coding plan across its `glm-*` models; a Claude subscription's usage
    /// window across its `claude-*` models. API-key accounts of Anthropic and OpenAI
    /// have per-model limits and no family. A connection may replace these with its
    /// own list (`provider_specific.quotaFamilies`).
    pub fn builtin() -> QuotaFamilies {
        let rule = |provider: &str, prefix: &str, family: &str| FamilyRule {
            provider: provider.to_owned(),
            prefix: prefix.to_owned(),
            family: family.to_owned(),
        };
        QuotaFamilies(vec![
            rule("codex", "gpt-5", "codex"),
            rule("glm", "glm-", "glm-plan"),
            rule("zai", "glm-", "glm-plan"),
        ])
    }
}

/// Everything the engine decides with.
#[derive(Debug, Clone)]
pub struct Policies {
    breaker: [BreakerPolicy; 3],
    window: [WindowPolicy; 3],
    cooldown: [CooldownPolicy; 3],
    lockout: [LockoutPolicy; 3],
    /// Operator error rules.
    pub operator: OperatorRules,
    /// Status restatement registry.
    pub restatements: &'static [RestateRule],
    /// Quota families.
    pub families: QuotaFamilies,
}

fn slot(category: AuthCategory) -> usize {
    match category {
        AuthCategory::Oauth => 0,
        AuthCategory::ApiKey => 1,
        AuthCategory::Local => 2,
    }
}

const CATEGORIES: [AuthCategory; 3] = [AuthCategory::Oauth, AuthCategory::ApiKey, AuthCategory::Local];

impl Policies {
    /// Compiles a settings document (expected to be validated or clamped already).
    pub fn from_settings(s: &ResilienceSettings, families: QuotaFamilies) -> Policies {
        let breaker = CATEGORIES.map(|c| match c {
            AuthCategory::Oauth => BreakerPolicy::from_settings(c, &s.provider_breaker.oauth),
            AuthCategory::ApiKey => BreakerPolicy::from_settings(c, &s.provider_breaker.apikey),
            AuthCategory::Local => BreakerPolicy::for_category(c),
        });
        Policies {
            breaker,
            window: CATEGORIES.map(|c| WindowPolicy::from_settings(c, &s.provider_cooldown)),
            cooldown: CATEGORIES.map(|c| {
                CooldownPolicy::from_settings(c, &s.connection_cooldown, s.stream_stall_cooldown.enabled)
            }),
            lockout: CATEGORIES
                .map(|c| LockoutPolicy::from_settings(&s.model_lockout, breaker[slot(c)].reset_timeout_ms)),
            operator: OperatorRules::from_settings(&s.provider_error_rules),
            restatements: BUILTIN_RULES,
            families,
        }
    }

    /// The breaker profile of a category.
    pub fn breaker(&self, c: AuthCategory) -> &BreakerPolicy {
        &self.breaker[slot(c)]
    }

    /// The window gate of a category.
    pub fn window(&self, c: AuthCategory) -> &WindowPolicy {
        &self.window[slot(c)]
    }

    /// The cooldown policy of a category.
    pub fn cooldown(&self, c: AuthCategory) -> &CooldownPolicy {
        &self.cooldown[slot(c)]
    }

    /// The lockout policy of a category.
    pub fn lockout(&self, c: AuthCategory) -> &LockoutPolicy {
        &self.lockout[slot(c)]
    }
}

impl Default for Policies {
    fn default() -> Self {
        Policies::from_settings(&ResilienceSettings::default(), QuotaFamilies::builtin())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_default_to_the_model() {
        let f = QuotaFamilies(vec![FamilyRule {
            provider: "codex".to_owned(),
            prefix: "gpt-5".to_owned(),
            family: "codex".to_owned(),
        }]);
        assert_eq!(f.family_of("codex", "gpt-5.5"), "codex");
        assert_eq!(f.family_of("openai", "gpt-5.5"), "gpt-5.5");
        assert_eq!(f.family_of("codex", "o3"), "o3");
    }

    #[test]
    fn settings_reach_the_policies() {
        let mut s = ResilienceSettings::default();
        s.provider_breaker.oauth.failure_threshold = 3;
        s.connection_cooldown.apikey.base_cooldown_ms = 1_000;
        s.stream_stall_cooldown.enabled = true;
        let p = Policies::from_settings(&s, QuotaFamilies::default());
        assert_eq!(p.breaker(AuthCategory::Oauth).failure_threshold, 3);
        assert_eq!(p.cooldown(AuthCategory::ApiKey).base_ms, 1_000);
        assert!(p.cooldown(AuthCategory::Local).stall_cooldown);
        assert_eq!(p.lockout(AuthCategory::Oauth).escalation_window_ms, 60_000);
        assert_eq!(p.breaker(AuthCategory::Local).failure_threshold, 2);
    }
}
