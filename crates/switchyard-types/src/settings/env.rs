//! Env defaults and the precedence of the settings layers, in one function
//! ([`layer`]): built-in defaults < env vars < stored document, except
//! `RATE_LIMIT_AUTO_ENABLE`, which wins over the stored value (SPEC 4.6). Env vars
//! are read through [`EnvSource`] so tests use a [`MapEnv`] and never touch the
//! process environment.
//!
//! Nothing here comes from a user's hand, so nothing is rejected: unparsable env
//! values are ignored and out-of-range ones clamped, each reported as a
//! [`ClampNote`] (fail-open to the defaults).

use std::collections::HashMap;

use super::clamp::ClampNote;
use super::{ResilienceSettings, ResilienceSettingsPatch};

/// A source of environment variables.
pub trait EnvSource {
    /// The variable's value, if set.
    fn var(&self, name: &str) -> Option<String>;
}

/// The process environment.
#[derive(Debug, Default, Clone, Copy)]
pub struct ProcessEnv;

impl EnvSource for ProcessEnv {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }
}

/// A fixed map of variables (tests, or an embedding that has its own config).
#[derive(Debug, Default, Clone)]
pub struct MapEnv(pub HashMap<String, String>);

impl MapEnv {
    /// A map from `(name, value)` pairs.
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> MapEnv {
        MapEnv(pairs.into_iter().map(|(k, v)| (k.to_owned(), v.to_owned())).collect())
    }
}

impl EnvSource for MapEnv {
    fn var(&self, name: &str) -> Option<String> {
        self.0.get(name).cloned()
    }
}

/// The effective document and every value that was clamped or ignored on the way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layered {
    /// The document to run with.
    pub settings: ResilienceSettings,
    /// What was changed to get there (log each).
    pub notes: Vec<ClampNote>,
}

type IntSlot = fn(&mut ResilienceSettings) -> &mut u32;
type BoolSlot = fn(&mut ResilienceSettings) -> &mut bool;

const INT_VARS: &[(&str, &str, IntSlot)] = &[
    (
        "SWITCHYARD_PROVIDER_BREAKER_OAUTH_FAILURE_THRESHOLD",
        "/providerCooldown/oauth/failureThreshold",
        |s| &mut s.provider_cooldown.oauth.failure_threshold,
    ),
    ("SWITCHYARD_PROVIDER_BREAKER_OAUTH_FAILURE_WINDOW_MS", "/providerCooldown/oauth/failureWindowMs", |s| {
        &mut s.provider_cooldown.oauth.failure_window_ms
    }),
    ("SWITCHYARD_PROVIDER_BREAKER_OAUTH_COOLDOWN_MS", "/providerCooldown/oauth/cooldownMs", |s| {
        &mut s.provider_cooldown.oauth.cooldown_ms
    }),
    (
        "SWITCHYARD_PROVIDER_BREAKER_API_KEY_FAILURE_THRESHOLD",
        "/providerCooldown/apikey/failureThreshold",
        |s| &mut s.provider_cooldown.apikey.failure_threshold,
    ),
    (
        "SWITCHYARD_PROVIDER_BREAKER_API_KEY_FAILURE_WINDOW_MS",
        "/providerCooldown/apikey/failureWindowMs",
        |s| &mut s.provider_cooldown.apikey.failure_window_ms,
    ),
    ("SWITCHYARD_PROVIDER_BREAKER_API_KEY_COOLDOWN_MS", "/providerCooldown/apikey/cooldownMs", |s| {
        &mut s.provider_cooldown.apikey.cooldown_ms
    }),
    ("RATE_LIMIT_MAX_WAIT_MS", "/requestQueue/maxWaitMs", |s| &mut s.request_queue.max_wait_ms),
    ("RATE_LIMIT_EXECUTION_MAX_WAIT_MS", "/requestQueue/executionMaxWaitMs", |s| {
        &mut s.request_queue.execution_max_wait_ms
    }),
    ("RATE_LIMIT_MAX_QUEUE_DEPTH", "/requestQueue/maxQueueDepth", |s| &mut s.request_queue.max_queue_depth),
    ("STREAM_READINESS_TIMEOUT_MS", "/streamRecovery/readinessBudgetMs", |s| {
        &mut s.stream_recovery.readiness_budget_ms
    }),
];

const BOOL_VARS: &[(&str, &str, BoolSlot)] = &[
    ("PROVIDER_COOLDOWN_ENABLED", "/providerCooldown/enabled", |s| &mut s.provider_cooldown.enabled),
    ("STREAM_THROUGHPUT_WATCHDOG_ENABLED", "/streamRecovery/throughputWatchdog/enabled", |s| {
        &mut s.stream_recovery.throughput_watchdog.enabled
    }),
];

/// Env vars whose value wins over the stored document.
const WINNING_BOOL_VARS: &[(&str, &str, BoolSlot)] =
    &[("RATE_LIMIT_AUTO_ENABLE", "/requestQueue/autoEnableApiKeyProviders", |s| {
        &mut s.request_queue.auto_enable_api_key_providers
    })];

/// Every env var the settings read, for documentation and diagnostics.
pub fn env_var_names() -> Vec<&'static str> {
    let ints = INT_VARS.iter().map(|(n, _, _)| *n);
    let bools = BOOL_VARS.iter().chain(WINNING_BOOL_VARS).map(|(n, _, _)| *n);
    ints.chain(bools).collect()
}

/// Feature-flag spelling: `true/1/yes/on`, `false/0/no/off`, any case.
fn parse_bool(raw: &str) -> Option<bool> {
    match raw.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Some(true),
        "false" | "0" | "no" | "off" => Some(false),
        _ => None,
    }
}

fn apply_bools(
    s: &mut ResilienceSettings,
    env: &dyn EnvSource,
    vars: &[(&str, &str, BoolSlot)],
    notes: &mut Vec<ClampNote>,
) {
    for (name, path, slot) in vars {
        if let Some(raw) = env.var(name) {
            match parse_bool(&raw) {
                Some(v) => *slot(s) = v,
                None => notes.push(ClampNote::new(*path, format!("{name}={raw}"), "ignored")),
            }
        }
    }
}

/// The effective settings: defaults, then env defaults, then the stored document
/// (clamped, never rejected), then env values that win over storage; finally every
/// range and cross-field rule is enforced by clamping.
pub fn layer(env: &dyn EnvSource, stored: Option<ResilienceSettingsPatch>) -> Layered {
    let mut s = ResilienceSettings::default();
    let mut notes = Vec::new();
    for (name, path, slot) in INT_VARS {
        let Some(raw) = env.var(name) else { continue };
        match raw.trim().parse::<i64>() {
            Ok(v) => {
                let clamped = u32::try_from(v.max(0)).unwrap_or(u32::MAX);
                if i64::from(clamped) != v {
                    notes.push(ClampNote::new(*path, format!("{name}={raw}"), clamped));
                }
                *slot(&mut s) = clamped;
            }
            Err(_) => notes.push(ClampNote::new(*path, format!("{name}={raw}"), "ignored")),
        }
    }
    apply_bools(&mut s, env, BOOL_VARS, &mut notes);
    if let Some(stored) = stored {
        s.merge(stored);
    }
    apply_bools(&mut s, env, WINNING_BOOL_VARS, &mut notes);
    let (settings, clamp_notes) = s.clamp();
    notes.extend(clamp_notes);
    Layered { settings, notes }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::parse_patch;

    fn stored(json: &str) -> Option<ResilienceSettingsPatch> {
        Some(parse_patch(json.as_bytes()).unwrap_or_else(|i| panic!("{i:?}")))
    }

    #[test]
    fn no_env_and_nothing_stored_gives_the_defaults() {
        let l = layer(&MapEnv::default(), None);
        assert_eq!(l.settings, ResilienceSettings::default());
        assert!(l.notes.is_empty());
    }

    /// One row of the precedence table: env, stored, expected maxWaitMs, expected
    /// autoEnable.
    type Case = (&'static [(&'static str, &'static str)], Option<&'static str>, u32, bool);

    #[test]
    fn precedence_table() {
        let cases: [Case; 5] = [
            (&[], None, 30_000, true),
            (&[("RATE_LIMIT_MAX_WAIT_MS", "5000")], None, 5_000, true),
            (
                &[("RATE_LIMIT_MAX_WAIT_MS", "5000")],
                Some(r#"{"requestQueue":{"maxWaitMs":7000}}"#),
                7_000,
                true,
            ),
            (
                &[("RATE_LIMIT_AUTO_ENABLE", "off")],
                Some(r#"{"requestQueue":{"autoEnableApiKeyProviders":true}}"#),
                30_000,
                false,
            ),
            (&[("RATE_LIMIT_AUTO_ENABLE", "bogus")], Some(r#"{"requestQueue":{}}"#), 30_000, true),
        ];
        for (vars, doc, wait, auto) in cases {
            let l = layer(&MapEnv::from_pairs(vars.iter().copied()), doc.and_then(stored));
            assert_eq!(l.settings.request_queue.max_wait_ms, wait, "{vars:?} {doc:?}");
            assert_eq!(l.settings.request_queue.auto_enable_api_key_providers, auto, "{vars:?} {doc:?}");
        }
    }

    #[test]
    fn env_values_are_clamped_or_ignored_and_reported() {
        let env = MapEnv::from_pairs([
            ("RATE_LIMIT_MAX_WAIT_MS", "-5"),
            ("RATE_LIMIT_MAX_QUEUE_DEPTH", "9999999"),
            ("SWITCHYARD_PROVIDER_BREAKER_OAUTH_COOLDOWN_MS", "soon"),
            ("PROVIDER_COOLDOWN_ENABLED", "on"),
            ("STREAM_THROUGHPUT_WATCHDOG_ENABLED", "TRUE"),
        ]);
        let l = layer(&env, None);
        assert_eq!(l.settings.request_queue.max_wait_ms, 1);
        assert_eq!(l.settings.request_queue.max_queue_depth, 100_000);
        assert_eq!(l.settings.provider_cooldown.oauth.cooldown_ms, 300_000);
        assert!(l.settings.provider_cooldown.enabled);
        assert!(l.settings.stream_recovery.throughput_watchdog.enabled);
        let paths: Vec<&str> = l.notes.iter().map(|n| n.path.as_str()).collect();
        assert_eq!(
            paths,
            vec![
                "/providerCooldown/oauth/cooldownMs",
                "/requestQueue/maxWaitMs",
                "/requestQueue/maxWaitMs",
                "/requestQueue/maxQueueDepth",
            ]
        );
    }

    #[test]
    fn a_stored_document_out_of_range_is_clamped_not_rejected() {
        let l = layer(&MapEnv::default(), stored(r#"{"modelLockout":{"baseCooldownMs":1}}"#));
        assert_eq!(l.settings.model_lockout.base_cooldown_ms, 5_000);
        assert_eq!(l.notes.len(), 1);
    }

    #[test]
    fn the_readiness_budget_comes_from_env_clamped_and_loses_to_the_stored_value() {
        let env = MapEnv::from_pairs([("STREAM_READINESS_TIMEOUT_MS", "15000")]);
        assert_eq!(layer(&env, None).settings.stream_recovery.readiness_budget_ms, 15_000);
        let low = MapEnv::from_pairs([("STREAM_READINESS_TIMEOUT_MS", "10")]);
        let l = layer(&low, None);
        assert_eq!(l.settings.stream_recovery.readiness_budget_ms, 1_000);
        assert_eq!(l.notes.len(), 1);
        assert_eq!(l.notes[0].path, "/streamRecovery/readinessBudgetMs");
        let l = layer(&env, stored(r#"{"streamRecovery":{"readinessBudgetMs":90000}}"#));
        assert_eq!(l.settings.stream_recovery.readiness_budget_ms, 90_000);
    }

    #[test]
    fn window_gate_env_names_follow_spec() {
        let names = env_var_names();
        for n in [
            "PROVIDER_COOLDOWN_ENABLED",
            "SWITCHYARD_PROVIDER_BREAKER_API_KEY_FAILURE_WINDOW_MS",
            "RATE_LIMIT_EXECUTION_MAX_WAIT_MS",
            "RATE_LIMIT_AUTO_ENABLE",
            "STREAM_READINESS_TIMEOUT_MS",
        ] {
            assert!(names.contains(&n), "{n}");
        }
    }
}
