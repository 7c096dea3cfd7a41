//! The partial document of `PATCH /api/resilience`: every field optional, unknown
//! fields rejected. Absent means "keep"; for optional values (`cooldownByKind.*`)
//! `null` means "remove". `providerErrorRules`, when present, replaces the list.
//!
//! [`parse_patch`] turns a body into a patch or into issues with JSON-pointer paths;
//! [`ResilienceSettings::patched`] merges and validates, so a bad patch is rejected
//! whole and nothing is half-applied.

use serde::{Deserialize, Deserializer, Serialize};

use super::stored::{pointer, steps};
use super::{
    BreakerProfileSettings, ComboCooldownWaitSettings, ConnectionCooldownProfile, ConnectionCooldownSettings,
    CooldownByKind, ModelLockoutSettings, ProviderBreakerSettings, ProviderCooldownSettings,
    ProviderErrorRule, RequestQueueSettings, ResilienceSettings, StreamRecoverySettings,
    ThroughputWatchdogSettings, ToggleSettings, WindowGateSettings,
};
use crate::api::ValidationIssue;

/// Distinguishes an absent field (`None`) from `null` (`Some(None)`).
fn double_option<'de, T, D>(de: D) -> Result<Option<Option<T>>, D::Error>
where
    T: Deserialize<'de>,
    D: Deserializer<'de>,
{
    Option::<T>::deserialize(de).map(Some)
}

/// Copies every present field of a patch group onto its target.
macro_rules! merge_fields {
    ($target:expr, $patch:expr; $($field:ident),* $(,)?) => {
        $( if let Some(v) = $patch.$field { $target.$field = v; } )*
    };
}

/// A partial [`ResilienceSettings`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResilienceSettingsPatch {
    /// Breaker profiles.
    #[serde(default)]
    pub provider_breaker: Option<ProviderBreakerPatch>,
    /// Window gate.
    #[serde(default)]
    pub provider_cooldown: Option<ProviderCooldownPatch>,
    /// Connection cooldown.
    #[serde(default)]
    pub connection_cooldown: Option<ConnectionCooldownPatch>,
    /// Stream stall cooldown switch.
    #[serde(default)]
    pub stream_stall_cooldown: Option<ToggleSettingsPatch>,
    /// Model lockout.
    #[serde(default)]
    pub model_lockout: Option<ModelLockoutPatch>,
    /// Request queue.
    #[serde(default)]
    pub request_queue: Option<RequestQueuePatch>,
    /// Quota-share switch.
    #[serde(default)]
    pub quota_share_concurrency_limit: Option<ToggleSettingsPatch>,
    /// Combo cooldown wait.
    #[serde(default)]
    pub combo_cooldown_wait: Option<ComboCooldownWaitPatch>,
    /// Stream watchdogs.
    #[serde(default)]
    pub stream_recovery: Option<StreamRecoveryPatch>,
    /// Session affinity TTL.
    #[serde(default)]
    pub session_affinity_ttl_ms: Option<u32>,
    /// Replaces the operator rules.
    #[serde(default)]
    pub provider_error_rules: Option<Vec<ProviderErrorRule>>,
    /// Replaces the provider caps.
    #[serde(default)]
    pub provider_concurrency: Option<std::collections::BTreeMap<String, u32>>,
}

/// Partial [`ToggleSettings`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToggleSettingsPatch {
    /// The switch.
    #[serde(default)]
    pub enabled: Option<bool>,
}

/// Partial [`ProviderBreakerSettings`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProviderBreakerPatch {
    /// OAuth profile.
    #[serde(default)]
    pub oauth: Option<BreakerProfilePatch>,
    /// API-key profile.
    #[serde(default)]
    pub apikey: Option<BreakerProfilePatch>,
}

/// Partial [`BreakerProfileSettings`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BreakerProfilePatch {
    /// OPEN threshold.
    #[serde(default)]
    pub failure_threshold: Option<u32>,
    /// DEGRADED threshold.
    #[serde(default)]
    pub degradation_threshold: Option<u32>,
    /// Open hold.
    #[serde(default)]
    pub reset_timeout_ms: Option<u32>,
    /// Per-kind holds.
    #[serde(default)]
    pub cooldown_by_kind: Option<CooldownByKindPatch>,
}

/// Partial [`CooldownByKind`]; `null` removes a kind's hold.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CooldownByKindPatch {
    /// Server errors.
    #[serde(default, deserialize_with = "double_option")]
    #[specta(optional, type = Option<u32>)]
    pub server_error: Option<Option<u32>>,
    /// Timeouts.
    #[serde(default, deserialize_with = "double_option")]
    #[specta(optional, type = Option<u32>)]
    pub timeout: Option<Option<u32>>,
    /// Connect errors.
    #[serde(default, deserialize_with = "double_option")]
    #[specta(optional, type = Option<u32>)]
    pub unreachable: Option<Option<u32>>,
    /// Rule-counted rate limits.
    #[serde(default, deserialize_with = "double_option")]
    #[specta(optional, type = Option<u32>)]
    pub rate_limit: Option<Option<u32>>,
    /// Rule-counted quota exhaustion.
    #[serde(default, deserialize_with = "double_option")]
    #[specta(optional, type = Option<u32>)]
    pub quota_exhausted: Option<Option<u32>>,
}

/// Partial [`ProviderCooldownSettings`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProviderCooldownPatch {
    /// Master switch.
    #[serde(default)]
    pub enabled: Option<bool>,
    /// OAuth gate.
    #[serde(default)]
    pub oauth: Option<WindowGatePatch>,
    /// API-key gate.
    #[serde(default)]
    pub apikey: Option<WindowGatePatch>,
    /// Connection entry first cooldown.
    #[serde(default)]
    pub min_retry_cooldown_ms: Option<u32>,
    /// Connection entry cap.
    #[serde(default)]
    pub max_retry_cooldown_ms: Option<u32>,
}

/// Partial [`WindowGateSettings`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WindowGatePatch {
    /// Failures within the window.
    #[serde(default)]
    pub failure_threshold: Option<u32>,
    /// The window.
    #[serde(default)]
    pub failure_window_ms: Option<u32>,
    /// The provider cooldown.
    #[serde(default)]
    pub cooldown_ms: Option<u32>,
}

/// Partial [`ConnectionCooldownSettings`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConnectionCooldownPatch {
    /// OAuth profile.
    #[serde(default)]
    pub oauth: Option<ConnectionCooldownProfilePatch>,
    /// API-key profile.
    #[serde(default)]
    pub apikey: Option<ConnectionCooldownProfilePatch>,
}

/// Partial [`ConnectionCooldownProfile`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConnectionCooldownProfilePatch {
    /// Base cooldown.
    #[serde(default)]
    pub base_cooldown_ms: Option<u32>,
    /// Backoff steps.
    #[serde(default)]
    pub max_backoff_steps: Option<u32>,
}

/// Partial [`ModelLockoutSettings`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ModelLockoutPatch {
    /// Master switch.
    #[serde(default)]
    pub enabled: Option<bool>,
    /// Replaces the status list.
    #[serde(default)]
    pub error_codes: Option<Vec<u16>>,
    /// First lockout.
    #[serde(default)]
    pub base_cooldown_ms: Option<u32>,
    /// Lockout cap.
    #[serde(default)]
    pub max_cooldown_ms: Option<u32>,
    /// Escalation steps.
    #[serde(default)]
    pub max_backoff_steps: Option<u32>,
    /// Exponential escalation.
    #[serde(default)]
    pub use_exponential_backoff: Option<bool>,
}

/// Partial [`RequestQueueSettings`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RequestQueuePatch {
    /// Queue-wait budget.
    #[serde(default)]
    pub max_wait_ms: Option<u32>,
    /// Execution bound.
    #[serde(default)]
    pub execution_max_wait_ms: Option<u32>,
    /// Depth cap.
    #[serde(default)]
    pub max_queue_depth: Option<u32>,
    /// Auto-queue API-key connections.
    #[serde(default)]
    pub auto_enable_api_key_providers: Option<bool>,
    /// Gateway-wide cap.
    #[serde(default)]
    pub global_concurrent_requests: Option<u32>,
}

/// Partial [`ComboCooldownWaitSettings`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ComboCooldownWaitPatch {
    /// Switch.
    #[serde(default)]
    pub enabled: Option<bool>,
    /// Single wait.
    #[serde(default)]
    pub max_wait_ms: Option<u32>,
    /// Cycles.
    #[serde(default)]
    pub max_attempts: Option<u32>,
    /// Total wait.
    #[serde(default)]
    pub budget_ms: Option<u32>,
}

/// Partial [`StreamRecoverySettings`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StreamRecoveryPatch {
    /// Stall budget.
    #[serde(default)]
    pub stall_budget_ms: Option<u32>,
    /// Readiness budget (dispatch to first model event).
    #[serde(default)]
    pub readiness_budget_ms: Option<u32>,
    /// Hard per-attempt deadline.
    #[serde(default)]
    pub attempt_deadline_ms: Option<u32>,
    /// Throughput watchdog.
    #[serde(default)]
    pub throughput_watchdog: Option<ThroughputWatchdogPatch>,
}

/// Partial [`ThroughputWatchdogSettings`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ThroughputWatchdogPatch {
    /// Switch.
    #[serde(default)]
    pub enabled: Option<bool>,
    /// Warm-up.
    #[serde(default)]
    pub warmup_ms: Option<u32>,
    /// Window.
    #[serde(default)]
    pub window_ms: Option<u32>,
    /// Minimum rate.
    #[serde(default)]
    pub min_useful_bytes_per_second: Option<u32>,
    /// Minimum bytes.
    #[serde(default)]
    pub min_useful_bytes: Option<u32>,
}

/// Parses a patch body. Unknown fields and wrong types become one issue whose path
/// points at the offending field.
pub fn parse_patch(body: &[u8]) -> Result<ResilienceSettingsPatch, Vec<ValidationIssue>> {
    let de = &mut serde_json::Deserializer::from_slice(body);
    serde_path_to_error::deserialize::<_, ResilienceSettingsPatch>(de).map_err(|err| {
        let path = pointer(&steps(err.path()));
        vec![ValidationIssue { path, message: err.into_inner().to_string() }]
    })
}

impl ResilienceSettings {
    /// Merges `patch` onto this document and validates the result; `Err` lists every
    /// issue and nothing is applied.
    pub fn patched(
        &self,
        patch: &ResilienceSettingsPatch,
    ) -> Result<ResilienceSettings, Vec<ValidationIssue>> {
        let mut next = self.clone();
        next.merge(patch.clone());
        next.validate().map(|()| next)
    }

    /// Merges `patch` without validating (the clamp path validates by clamping).
    pub fn merge(&mut self, patch: ResilienceSettingsPatch) {
        if let Some(p) = patch.provider_breaker {
            merge_breaker(&mut self.provider_breaker, p);
        }
        if let Some(p) = patch.provider_cooldown {
            merge_gate(&mut self.provider_cooldown, p);
        }
        if let Some(p) = patch.connection_cooldown {
            merge_connection(&mut self.connection_cooldown, p);
        }
        if let Some(p) = patch.stream_stall_cooldown {
            merge_toggle(&mut self.stream_stall_cooldown, p);
        }
        if let Some(p) = patch.model_lockout {
            merge_lockout(&mut self.model_lockout, p);
        }
        if let Some(p) = patch.request_queue {
            merge_queue(&mut self.request_queue, p);
        }
        if let Some(p) = patch.quota_share_concurrency_limit {
            merge_toggle(&mut self.quota_share_concurrency_limit, p);
        }
        if let Some(p) = patch.combo_cooldown_wait {
            merge_combo(&mut self.combo_cooldown_wait, p);
        }
        if let Some(p) = patch.stream_recovery {
            merge_stream(&mut self.stream_recovery, p);
        }
        if let Some(v) = patch.session_affinity_ttl_ms {
            self.session_affinity_ttl_ms = v;
        }
        if let Some(v) = patch.provider_concurrency {
            self.provider_concurrency = v;
        }
        if let Some(v) = patch.provider_error_rules {
            self.provider_error_rules = v;
        }
    }
}

fn merge_toggle(t: &mut ToggleSettings, p: ToggleSettingsPatch) {
    merge_fields!(t, p; enabled);
}

fn merge_breaker(t: &mut ProviderBreakerSettings, p: ProviderBreakerPatch) {
    for (target, patch) in [(&mut t.oauth, p.oauth), (&mut t.apikey, p.apikey)] {
        if let Some(patch) = patch {
            merge_profile(target, patch);
        }
    }
}

fn merge_profile(t: &mut BreakerProfileSettings, p: BreakerProfilePatch) {
    merge_fields!(t, p; failure_threshold, degradation_threshold, reset_timeout_ms);
    if let Some(k) = p.cooldown_by_kind {
        merge_by_kind(&mut t.cooldown_by_kind, k);
    }
}

fn merge_by_kind(t: &mut CooldownByKind, p: CooldownByKindPatch) {
    merge_fields!(t, p; server_error, timeout, unreachable, rate_limit, quota_exhausted);
}

fn merge_gate(t: &mut ProviderCooldownSettings, p: ProviderCooldownPatch) {
    merge_fields!(t, p; enabled, min_retry_cooldown_ms, max_retry_cooldown_ms);
    for (target, patch) in [(&mut t.oauth, p.oauth), (&mut t.apikey, p.apikey)] {
        if let Some(patch) = patch {
            merge_window(target, patch);
        }
    }
}

fn merge_window(t: &mut WindowGateSettings, p: WindowGatePatch) {
    merge_fields!(t, p; failure_threshold, failure_window_ms, cooldown_ms);
}

fn merge_connection(t: &mut ConnectionCooldownSettings, p: ConnectionCooldownPatch) {
    for (target, patch) in [(&mut t.oauth, p.oauth), (&mut t.apikey, p.apikey)] {
        if let Some(patch) = patch {
            merge_connection_profile(target, patch);
        }
    }
}

fn merge_connection_profile(t: &mut ConnectionCooldownProfile, p: ConnectionCooldownProfilePatch) {
    merge_fields!(t, p; base_cooldown_ms, max_backoff_steps);
}

fn merge_lockout(t: &mut ModelLockoutSettings, p: ModelLockoutPatch) {
    merge_fields!(t, p; enabled, error_codes, base_cooldown_ms, max_cooldown_ms, max_backoff_steps,
        use_exponential_backoff);
}

fn merge_queue(t: &mut RequestQueueSettings, p: RequestQueuePatch) {
    merge_fields!(t, p; max_wait_ms, execution_max_wait_ms, max_queue_depth, auto_enable_api_key_providers,
        global_concurrent_requests);
}

fn merge_combo(t: &mut ComboCooldownWaitSettings, p: ComboCooldownWaitPatch) {
    merge_fields!(t, p; enabled, max_wait_ms, max_attempts, budget_ms);
}

fn merge_stream(t: &mut StreamRecoverySettings, p: StreamRecoveryPatch) {
    merge_fields!(t, p; stall_budget_ms, readiness_budget_ms, attempt_deadline_ms);
    if let Some(w) = p.throughput_watchdog {
        merge_watchdog(&mut t.throughput_watchdog, w);
    }
}

fn merge_watchdog(t: &mut ThroughputWatchdogSettings, p: ThroughputWatchdogPatch) {
    merge_fields!(t, p; enabled, warmup_ms, window_ms, min_useful_bytes_per_second, min_useful_bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> ResilienceSettingsPatch {
        parse_patch(json.as_bytes()).unwrap_or_else(|issues| panic!("{json}: {issues:?}"))
    }

    #[test]
    fn a_partial_patch_changes_only_what_it_names() {
        let patch =
            parse(r#"{"providerBreaker":{"oauth":{"failureThreshold":10}},"modelLockout":{"enabled":true}}"#);
        let base = ResilienceSettings::default();
        let next = base.patched(&patch).unwrap_or_else(|i| panic!("{i:?}"));
        assert_eq!(next.provider_breaker.oauth.failure_threshold, 10);
        assert_eq!(next.provider_breaker.oauth.degradation_threshold, 5);
        assert!(next.model_lockout.enabled);
        let mut expected = base;
        expected.provider_breaker.oauth.failure_threshold = 10;
        expected.model_lockout.enabled = true;
        assert_eq!(next, expected);
    }

    #[test]
    fn unknown_fields_are_rejected_with_their_path() {
        let issues = parse_patch(br#"{"providerBreaker":{"oauth":{"failureThreshhold":3}}}"#)
            .err()
            .unwrap_or_default();
        assert_eq!(issues.len(), 1);
        assert_eq!(issues[0].path, "/providerBreaker/oauth/failureThreshhold");
        assert!(issues[0].message.contains("unknown field"), "{}", issues[0].message);
    }

    #[test]
    fn wrong_types_are_rejected_with_their_path() {
        let issues = parse_patch(br#"{"modelLockout":{"errorCodes":[429,"x"]}}"#).err().unwrap_or_default();
        assert_eq!(issues[0].path, "/modelLockout/errorCodes/1");
        let issues = parse_patch(br#"{"requestQueue":{"maxWaitMs":-1}}"#).err().unwrap_or_default();
        assert_eq!(issues[0].path, "/requestQueue/maxWaitMs");
    }

    #[test]
    fn a_bad_patch_is_rejected_whole() {
        let patch = parse(r#"{"modelLockout":{"enabled":true,"maxCooldownMs":6000,"baseCooldownMs":60000}}"#);
        let issues = ResilienceSettings::default().patched(&patch).err().unwrap_or_default();
        assert_eq!(issues.len(), 1);
        assert_eq!(issues[0].path, "/modelLockout/maxCooldownMs");
    }

    #[test]
    fn null_removes_a_per_kind_hold() {
        let set = parse(r#"{"providerBreaker":{"apikey":{"cooldownByKind":{"timeout":5000}}}}"#);
        let s = ResilienceSettings::default().patched(&set).unwrap_or_else(|i| panic!("{i:?}"));
        assert_eq!(s.provider_breaker.apikey.cooldown_by_kind.timeout, Some(5000));
        let clear = parse(r#"{"providerBreaker":{"apikey":{"cooldownByKind":{"timeout":null}}}}"#);
        let s = s.patched(&clear).unwrap_or_else(|i| panic!("{i:?}"));
        assert_eq!(s.provider_breaker.apikey.cooldown_by_kind.timeout, None);
    }

    proptest::proptest! {
        /// Arbitrary bytes never panic the parser; whatever parses merges and either
        /// validates or reports issues (never both).
        #[test]
        fn parsing_and_patching_are_total(body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200)) {
            if let Ok(patch) = parse_patch(&body) {
                let _ = ResilienceSettings::default().patched(&patch);
            }
        }

        #[test]
        fn numeric_patches_validate_exactly_when_in_range(v in proptest::prelude::any::<u32>()) {
            let json = format!(r#"{{"providerBreaker":{{"oauth":{{"resetTimeoutMs":{v}}}}}}}"#);
            let patch = parse(&json);
            let ok = ResilienceSettings::default().patched(&patch).is_ok();
            proptest::prop_assert_eq!(ok, (1_000..=86_400_000).contains(&v));
        }
    }

    #[test]
    fn a_full_document_parses_as_a_patch() {
        let json = serde_json::to_vec(&ResilienceSettings::default()).unwrap_or_default();
        let patch = parse_patch(&json).unwrap_or_else(|i| panic!("{i:?}"));
        let mut s = ResilienceSettings::default();
        s.merge(patch);
        assert_eq!(s, ResilienceSettings::default());
    }
}
