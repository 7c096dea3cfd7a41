//! The clamp path, for values that do not come from a user's hand (env defaults,
//! documents stored by an older version): every integer is pulled into its range,
//! bad list items are dropped, cross-field rules are repaired, and each change is
//! reported as a [`ClampNote`] for the caller to log. Never fails: the result always
//! validates (a property test checks it).

use serde::{Deserialize, Serialize};

use super::ResilienceSettings;
use super::defaults::LOCKOUT_ERROR_CODES;
use super::fields::for_each_integer;
use super::ranges::{MAX_ERROR_RULES, known};
use super::validate::{cross_field, in_range, provider_cap_problem, rule_problems};

/// One value the clamp path changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct ClampNote {
    /// JSON pointer of the value.
    pub path: String,
    /// The value as found.
    pub from: String,
    /// The value used instead (`dropped` for removed list items).
    pub to: String,
}

impl ClampNote {
    pub(crate) fn new(path: impl Into<String>, from: impl ToString, to: impl ToString) -> ClampNote {
        ClampNote { path: path.into(), from: from.to_string(), to: to.to_string() }
    }
}

impl ResilienceSettings {
    /// Pulls every value into range and repairs cross-field rules, reporting each
    /// change. Idempotent: clamping a clamped document changes nothing.
    pub fn clamp(mut self) -> (ResilienceSettings, Vec<ClampNote>) {
        let mut notes = Vec::new();
        for_each_integer(&mut self, &mut |path, value| {
            let spec = known(path);
            let clamped = (*value).clamp(spec.min, spec.max);
            if clamped != *value {
                notes.push(ClampNote::new(path, *value, clamped));
                *value = clamped;
            }
        });
        clamp_error_codes(&mut self.model_lockout.error_codes, &mut notes);
        clamp_rules(&mut self, &mut notes);
        clamp_provider_caps(&mut self, &mut notes);
        cross_field(&mut self, true, &mut |path, _, fixed| {
            notes.push(ClampNote::new(path, "violates a cross-field rule", fixed));
        });
        (self, notes)
    }
}

fn clamp_error_codes(codes: &mut Vec<u16>, notes: &mut Vec<ClampNote>) {
    let item = known("/modelLockout/errorCodes/*");
    let mut kept: Vec<u16> = Vec::with_capacity(codes.len());
    for (i, code) in codes.iter().enumerate() {
        if !in_range(&item, u32::from(*code)) || kept.contains(code) {
            notes.push(ClampNote::new(format!("/modelLockout/errorCodes/{i}"), code, "dropped"));
        } else {
            kept.push(*code);
        }
    }
    let max = usize::try_from(known("/modelLockout/errorCodes").max).unwrap_or(usize::MAX);
    if kept.len() > max {
        notes.push(ClampNote::new("/modelLockout/errorCodes", kept.len(), max));
        kept.truncate(max);
    }
    if kept.is_empty() {
        notes.push(ClampNote::new("/modelLockout/errorCodes", "[]", "the default list"));
        kept = LOCKOUT_ERROR_CODES.to_vec();
    }
    *codes = kept;
}

fn clamp_rules(s: &mut ResilienceSettings, notes: &mut Vec<ClampNote>) {
    let mut index = 0usize;
    s.provider_error_rules.retain(|rule| {
        let problems = rule_problems(rule);
        if let Some((field, _)) = problems.first() {
            notes.push(ClampNote::new(
                format!("/providerErrorRules/{index}"),
                format!("bad {field}"),
                "dropped",
            ));
        }
        index += 1;
        problems.is_empty()
    });
    let max = usize::try_from(MAX_ERROR_RULES).unwrap_or(usize::MAX);
    if s.provider_error_rules.len() > max {
        notes.push(ClampNote::new("/providerErrorRules", s.provider_error_rules.len(), max));
        s.provider_error_rules.truncate(max);
    }
}

/// Drops provider caps that are not valid (a stored document edited by hand).
fn clamp_provider_caps(s: &mut ResilienceSettings, notes: &mut Vec<ClampNote>) {
    let spec = known("/providerConcurrency/*/cap");
    let mut kept = std::collections::BTreeMap::new();
    for (provider, cap) in std::mem::take(&mut s.provider_concurrency) {
        let clamped = cap.clamp(spec.min, spec.max);
        match provider_cap_problem(&provider, clamped) {
            // A bad provider id cannot be repaired: the entry goes.
            Some((path, _)) => notes.push(ClampNote::new(path, cap, "dropped")),
            None => {
                if clamped != cap {
                    notes.push(ClampNote::new(format!("/providerConcurrency/{provider}"), cap, clamped));
                }
                kept.insert(provider, clamped);
            }
        }
    }
    let max = usize::try_from(known("/providerConcurrency").max).unwrap_or(usize::MAX);
    if kept.len() > max {
        notes.push(ClampNote::new("/providerConcurrency", kept.len(), max));
        kept = kept.into_iter().take(max).collect();
    }
    s.provider_concurrency = kept;
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::resilience::RuleScope;
    use crate::settings::ProviderErrorRule;

    #[test]
    fn stored_provider_caps_are_clamped_not_dropped() {
        let mut s = ResilienceSettings::default();
        s.provider_concurrency.insert("glm".into(), 0);
        s.provider_concurrency.insert("big".into(), 5_000_000);
        s.provider_concurrency.insert(String::new(), 3);
        let (clamped, notes) = s.clamp();
        assert_eq!(
            clamped.provider_concurrency,
            [("big".to_owned(), 100_000), ("glm".to_owned(), 1)].into_iter().collect()
        );
        assert_eq!(notes.len(), 3, "{notes:?}");
    }

    #[test]
    fn out_of_range_values_are_clamped_and_reported() {
        let mut s = ResilienceSettings::default();
        s.provider_breaker.oauth.reset_timeout_ms = 10;
        s.model_lockout.error_codes = vec![42];
        s.model_lockout.base_cooldown_ms = 300_000;
        s.model_lockout.max_cooldown_ms = 200_000;
        let (clamped, notes) = s.clamp();
        assert_eq!(clamped.provider_breaker.oauth.reset_timeout_ms, 1_000);
        assert_eq!(clamped.model_lockout.error_codes, LOCKOUT_ERROR_CODES.to_vec());
        assert_eq!(clamped.model_lockout.max_cooldown_ms, 300_000);
        let paths: Vec<&str> = notes.iter().map(|n| n.path.as_str()).collect();
        assert_eq!(
            paths,
            vec![
                "/providerBreaker/oauth/resetTimeoutMs",
                "/modelLockout/errorCodes/0",
                "/modelLockout/errorCodes",
                "/modelLockout/maxCooldownMs",
            ]
        );
        assert_eq!(clamped.validate(), Ok(()));
    }

    #[test]
    fn defaults_need_no_clamp() {
        let (s, notes) = ResilienceSettings::default().clamp();
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!(s, ResilienceSettings::default());
    }

    #[test]
    fn bad_rules_are_dropped() {
        let mut s = ResilienceSettings::default();
        let rule = |provider: &str| ProviderErrorRule {
            provider: provider.to_owned(),
            status: None,
            text: "quota".to_owned(),
            scope: RuleScope::Connection,
            reason: None,
            cooldown_ms: None,
        };
        s.provider_error_rules = vec![rule(""), rule("glm")];
        let (s, notes) = s.clamp();
        assert_eq!(s.provider_error_rules, vec![rule("glm")]);
        assert_eq!(notes.len(), 1);
        assert_eq!(notes[0].path, "/providerErrorRules/0");
    }

    fn any_settings() -> impl Strategy<Value = ResilienceSettings> {
        (proptest::collection::vec(any::<u32>(), 32), proptest::collection::vec(any::<u16>(), 0..40))
            .prop_map(|(values, codes)| {
                let mut s = ResilienceSettings::default();
                let mut it = values.into_iter().cycle();
                for_each_integer(&mut s, &mut |_, v| *v = it.next().unwrap_or(0));
                s.model_lockout.error_codes = codes;
                s
            })
    }

    proptest! {
        #[test]
        fn clamped_documents_validate_and_clamping_is_idempotent(s in any_settings()) {
            let (once, _) = s.clamp();
            prop_assert_eq!(once.validate(), Ok(()));
            let (twice, notes) = once.clone().clamp();
            prop_assert!(notes.is_empty(), "{:?}", notes);
            prop_assert_eq!(twice, once);
        }
    }
}
