//! Walks every scalar integer of a document together with its ranges-table path, so
//! validation and clamping visit exactly the fields the table lists (a test checks
//! the two stay in step). List items (`errorCodes`, `providerErrorRules`) are walked
//! by the callers, which know their indices.

use super::{BreakerProfileSettings, CooldownByKind, ResilienceSettings, WindowGateSettings};

/// Calls `f(path, value)` for every fixed-path integer; absent optional values are
/// skipped.
pub(crate) fn for_each_integer(s: &mut ResilienceSettings, f: &mut dyn FnMut(&'static str, &mut u32)) {
    breaker(&mut s.provider_breaker.oauth, BREAKER_OAUTH, f);
    breaker(&mut s.provider_breaker.apikey, BREAKER_APIKEY, f);
    gate(&mut s.provider_cooldown.oauth, GATE_OAUTH, f);
    gate(&mut s.provider_cooldown.apikey, GATE_APIKEY, f);
    let pc = &mut s.provider_cooldown;
    f("/providerCooldown/minRetryCooldownMs", &mut pc.min_retry_cooldown_ms);
    f("/providerCooldown/maxRetryCooldownMs", &mut pc.max_retry_cooldown_ms);
    let cc = &mut s.connection_cooldown;
    f("/connectionCooldown/oauth/baseCooldownMs", &mut cc.oauth.base_cooldown_ms);
    f("/connectionCooldown/oauth/maxBackoffSteps", &mut cc.oauth.max_backoff_steps);
    f("/connectionCooldown/apikey/baseCooldownMs", &mut cc.apikey.base_cooldown_ms);
    f("/connectionCooldown/apikey/maxBackoffSteps", &mut cc.apikey.max_backoff_steps);
    let ml = &mut s.model_lockout;
    f("/modelLockout/baseCooldownMs", &mut ml.base_cooldown_ms);
    f("/modelLockout/maxCooldownMs", &mut ml.max_cooldown_ms);
    f("/modelLockout/maxBackoffSteps", &mut ml.max_backoff_steps);
    let rq = &mut s.request_queue;
    f("/requestQueue/maxWaitMs", &mut rq.max_wait_ms);
    f("/requestQueue/executionMaxWaitMs", &mut rq.execution_max_wait_ms);
    f("/requestQueue/maxQueueDepth", &mut rq.max_queue_depth);
    f("/requestQueue/globalConcurrentRequests", &mut rq.global_concurrent_requests);
    let cw = &mut s.combo_cooldown_wait;
    f("/comboCooldownWait/maxWaitMs", &mut cw.max_wait_ms);
    f("/comboCooldownWait/maxAttempts", &mut cw.max_attempts);
    f("/comboCooldownWait/budgetMs", &mut cw.budget_ms);
    let sr = &mut s.stream_recovery;
    f("/streamRecovery/stallBudgetMs", &mut sr.stall_budget_ms);
    f("/streamRecovery/readinessBudgetMs", &mut sr.readiness_budget_ms);
    f("/streamRecovery/attemptDeadlineMs", &mut sr.attempt_deadline_ms);
    let tw = &mut sr.throughput_watchdog;
    f("/streamRecovery/throughputWatchdog/warmupMs", &mut tw.warmup_ms);
    f("/streamRecovery/throughputWatchdog/windowMs", &mut tw.window_ms);
    f("/streamRecovery/throughputWatchdog/minUsefulBytesPerSecond", &mut tw.min_useful_bytes_per_second);
    f("/streamRecovery/throughputWatchdog/minUsefulBytes", &mut tw.min_useful_bytes);
    f("/sessionAffinityTtlMs", &mut s.session_affinity_ttl_ms);
}

struct BreakerPaths {
    failure: &'static str,
    degradation: &'static str,
    reset: &'static str,
    by_kind: [&'static str; 5],
}

const BREAKER_OAUTH: &BreakerPaths = &BreakerPaths {
    failure: "/providerBreaker/oauth/failureThreshold",
    degradation: "/providerBreaker/oauth/degradationThreshold",
    reset: "/providerBreaker/oauth/resetTimeoutMs",
    by_kind: [
        "/providerBreaker/oauth/cooldownByKind/serverError",
        "/providerBreaker/oauth/cooldownByKind/timeout",
        "/providerBreaker/oauth/cooldownByKind/unreachable",
        "/providerBreaker/oauth/cooldownByKind/rateLimit",
        "/providerBreaker/oauth/cooldownByKind/quotaExhausted",
    ],
};

const BREAKER_APIKEY: &BreakerPaths = &BreakerPaths {
    failure: "/providerBreaker/apikey/failureThreshold",
    degradation: "/providerBreaker/apikey/degradationThreshold",
    reset: "/providerBreaker/apikey/resetTimeoutMs",
    by_kind: [
        "/providerBreaker/apikey/cooldownByKind/serverError",
        "/providerBreaker/apikey/cooldownByKind/timeout",
        "/providerBreaker/apikey/cooldownByKind/unreachable",
        "/providerBreaker/apikey/cooldownByKind/rateLimit",
        "/providerBreaker/apikey/cooldownByKind/quotaExhausted",
    ],
};

fn breaker(p: &mut BreakerProfileSettings, paths: &BreakerPaths, f: &mut dyn FnMut(&'static str, &mut u32)) {
    f(paths.failure, &mut p.failure_threshold);
    f(paths.degradation, &mut p.degradation_threshold);
    f(paths.reset, &mut p.reset_timeout_ms);
    let CooldownByKind { server_error, timeout, unreachable, rate_limit, quota_exhausted } =
        &mut p.cooldown_by_kind;
    let slots = [server_error, timeout, unreachable, rate_limit, quota_exhausted];
    for (path, slot) in paths.by_kind.iter().zip(slots) {
        if let Some(v) = slot.as_mut() {
            f(path, v);
        }
    }
}

const GATE_OAUTH: [&str; 3] = [
    "/providerCooldown/oauth/failureThreshold",
    "/providerCooldown/oauth/failureWindowMs",
    "/providerCooldown/oauth/cooldownMs",
];
const GATE_APIKEY: [&str; 3] = [
    "/providerCooldown/apikey/failureThreshold",
    "/providerCooldown/apikey/failureWindowMs",
    "/providerCooldown/apikey/cooldownMs",
];

fn gate(g: &mut WindowGateSettings, paths: [&'static str; 3], f: &mut dyn FnMut(&'static str, &mut u32)) {
    f(paths[0], &mut g.failure_threshold);
    f(paths[1], &mut g.failure_window_ms);
    f(paths[2], &mut g.cooldown_ms);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::ranges::{FieldKind, RANGES};

    #[test]
    fn visitor_and_table_name_the_same_fixed_integers() {
        let mut s = ResilienceSettings::default();
        for p in [&mut s.provider_breaker.oauth, &mut s.provider_breaker.apikey] {
            p.cooldown_by_kind = CooldownByKind {
                server_error: Some(1),
                timeout: Some(1),
                unreachable: Some(1),
                rate_limit: Some(1),
                quota_exhausted: Some(1),
            };
        }
        let mut visited = Vec::new();
        for_each_integer(&mut s, &mut |path, _| visited.push(path));
        let table: Vec<&str> = RANGES
            .iter()
            .filter(|r| r.kind == FieldKind::Integer && !r.path.contains('*'))
            .map(|r| r.path)
            .collect();
        visited.sort_unstable();
        let mut expected = table.clone();
        expected.sort_unstable();
        assert_eq!(visited, expected);
    }
}
