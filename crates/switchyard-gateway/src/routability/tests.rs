use switchyard_types::resilience::{LockScope, ModelLockoutView};

use super::*;

const NOW: UnixMillis = UnixMillis(1_900_000_000_000);

fn conn(enabled: bool) -> ConnectionFacts<'static> {
    ConnectionFacts { id: "c1", provider: "glm", enabled }
}

fn breaker(state: BreakerStateName) -> ProviderBreakerView {
    ProviderBreakerView {
        provider: "glm".into(),
        state,
        failure_count: 5,
        degradation_threshold: 3,
        failure_threshold: 5,
        last_failure_at: Some(NOW),
        last_failure_kind: Some(ErrorReason::ServerError),
        open_cycles: 0,
        retry_after_ms: 0,
        open_until: (state == BreakerStateName::Open).then(|| NOW.plus_millis(30_000)),
        gate_cooling_until: None,
    }
}

fn cooldown(status: ConnectionStatus, until: Option<UnixMillis>, locks: &[&str]) -> ConnectionCooldownView {
    ConnectionCooldownView {
        connection: "c1".into(),
        provider: "glm".into(),
        status,
        rate_limited_until: until,
        remaining_ms: 0,
        backoff_level: 1,
        last_error_kind: Some(ErrorReason::RateLimit),
        last_error: Some("{\"error\":\"raw upstream json\"}".into()),
        error_code: Some(429),
        last_error_at: Some(NOW),
        lockouts: locks
            .iter()
            .map(|m| ModelLockoutView {
                provider: "glm".into(),
                connection: "c1".into(),
                model: (*m).into(),
                scope: LockScope::Model,
                reason: ErrorReason::ModelCapacity,
                expires_at: NOW.plus_millis(60_000),
                remaining_ms: 60_000,
                failure_count: 1,
            })
            .collect(),
    }
}

fn inputs() -> Inputs {
    Inputs::empty(NOW)
}

fn state_of(i: &Inputs, enabled: bool) -> (RoutabilityState, bool) {
    let v = derive(conn(enabled), i);
    (v.state, v.routable)
}

#[test]
fn an_untouched_connection_is_routable() {
    let v = derive(conn(true), &inputs());
    assert_eq!((v.state, v.routable, v.label.as_str()), (RoutabilityState::Routable, true, "Active"));
}

#[test]
fn an_open_provider_breaker_takes_the_connection_out_with_its_end() {
    let mut i = inputs();
    i.breakers.insert("glm".into(), breaker(BreakerStateName::Open));
    let v = derive(conn(true), &i);
    assert_eq!((v.state, v.routable), (RoutabilityState::BreakerOpen, false));
    assert_eq!(v.until, Some(NOW.plus_millis(30_000)));
    assert!(v.detail.contains("the upstream failed (5xx)"), "{}", v.detail);
    i.breakers.insert("glm".into(), breaker(BreakerStateName::HalfOpen));
    assert_eq!(state_of(&i, true), (RoutabilityState::BreakerHalfOpen, true));
    i.breakers.insert("glm".into(), breaker(BreakerStateName::Degraded));
    assert_eq!(state_of(&i, true), (RoutabilityState::Routable, true));
}

#[test]
fn the_most_severe_source_decides() {
    let mut i = inputs();
    i.breakers.insert("glm".into(), breaker(BreakerStateName::Open));
    i.cooldowns.insert("c1".into(), cooldown(ConnectionStatus::Banned, None, &["m"]));
    assert_eq!(state_of(&i, false), (RoutabilityState::Disabled, false));
    i.paused = true;
    assert_eq!(state_of(&i, true), (RoutabilityState::Paused, false));
    i.paused = false;
    assert_eq!(state_of(&i, true), (RoutabilityState::Terminal, false));
    i.cooldowns
        .insert("c1".into(), cooldown(ConnectionStatus::Unavailable, Some(NOW.plus_millis(5_000)), &["m"]));
    assert_eq!(state_of(&i, true), (RoutabilityState::BreakerOpen, false));
    i.breakers.clear();
    let v = derive(conn(true), &i);
    assert_eq!((v.state, v.until), (RoutabilityState::Cooling, Some(NOW.plus_millis(5_000))));
    assert!(
        v.detail.contains("rate limited by the upstream (HTTP 429)"),
        "words, not raw JSON: {}",
        v.detail
    );
    assert!(!v.detail.contains("raw upstream json"));
    // A lapsed cooldown no longer counts; the lockouts do.
    i.cooldowns.insert("c1".into(), cooldown(ConnectionStatus::Active, Some(NOW), &["m"]));
    let v = derive(conn(true), &i);
    assert_eq!(
        (v.state, v.routable, v.locked_models.clone()),
        (RoutabilityState::ModelsLocked, true, vec!["m".into()])
    );
}

#[test]
fn a_failed_test_shows_until_superseded() {
    let tests = ConnectionTests::default();
    tests.record("c1", LastTestView { at: NOW, ok: false, message: "connection refused".into() });
    let mut i = inputs();
    i.tests = tests.failing();
    let v = derive(conn(true), &i);
    assert_eq!((v.state, v.routable), (RoutabilityState::TestFailed, true));
    assert!(v.detail.contains("connection refused"));
    tests.note_success("c2");
    assert_eq!(tests.failing().len(), 1, "another connection's success changes nothing");
    tests.note_success("c1");
    assert!(tests.failing().is_empty());
    assert_eq!(tests.latest("c1"), None);
    tests.record("c1", LastTestView { at: NOW, ok: true, message: "ok".into() });
    assert!(tests.failing().is_empty());
    assert!(tests.latest("c1").is_some_and(|t| t.ok));
}

#[test]
fn a_claude_account_in_the_low_priority_lane_routes_slowly() {
    let mut i = inputs();
    i.walls.insert(
        "c1".into(),
        ClaudeWallView { lane_active_until: Some(NOW.plus_millis(60_000)), ..ClaudeWallView::default() },
    );
    assert_eq!(state_of(&i, true), (RoutabilityState::UsageWall, true));
}
