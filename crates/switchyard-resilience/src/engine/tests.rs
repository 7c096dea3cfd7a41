//! The façade end to end, on a [`ManualClock`] (no sleeps).

use std::sync::{Arc, Mutex};

use switchyard_types::resilience::{
    BreakerStateName, ConnectionStatus, CooldownsClearRequest, CooldownsClearResult, ErrorReason,
    ExclusionReason, LockScope, LockoutClearRequest,
};
use switchyard_types::{ResilienceSettings, UnixMillis};

use super::*;
use crate::candidates::Decision;
use crate::clock::ManualClock;
use crate::outcome::Target;
use crate::outcome::{AttemptOutcome, TransportFailure};

mod settings;

const T0: UnixMillis = UnixMillis(1_772_366_400_000);

struct Rig {
    clock: Arc<ManualClock>,
    engine: Engine,
    events: Arc<Mutex<Vec<EngineEvent>>>,
}

fn rig() -> Rig {
    let clock = Arc::new(ManualClock::new(T0));
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink_events = Arc::clone(&events);
    let sink: EventSink =
        Box::new(move |batch| sink_events.lock().unwrap_or_else(|p| p.into_inner()).extend_from_slice(batch));
    let engine = Engine::with_sink(clock.clone(), Some(sink));
    let conn = |id: &str, provider: &str, category| ConnectionConfig {
        id: id.to_owned(),
        provider: provider.to_owned(),
        category,
        disable_cooling: false,
        quota_families: None,
    };
    engine.sync_connections([
        conn("claude-1", "anthropic", AuthCategory::Oauth),
        conn("claude-2", "anthropic", AuthCategory::Oauth),
        conn("glm-key", "glm", AuthCategory::ApiKey),
    ]);
    Rig { clock, engine, events }
}

fn t<'a>(provider: &'a str, connection: &'a str, model: &'a str) -> Target<'a> {
    Target { provider, connection, model }
}

fn combo() -> [Target<'static>; 3] {
    [
        t("anthropic", "claude-1", "claude-sonnet"),
        t("anthropic", "claude-2", "claude-sonnet"),
        t("glm", "glm-key", "glm-5"),
    ]
}

fn http<'a>(status: u16, headers: &'a &'a [(&'a str, &'a str)], body: &'a str) -> AttemptOutcome<'a> {
    AttemptOutcome::Http { status, headers, body }
}

fn fail(r: &Rig, target: Target<'_>, status: u16, headers: &[(&str, &str)], body: &str) -> Recorded {
    let attempt = r.engine.begin(target).unwrap_or_else(|e| panic!("{target:?} excluded: {e:?}"));
    r.engine.judge(attempt, &http(status, &headers, body))
}

/// `n` connections of `provider` (besides the rig's own) each failing once with
/// `status`: a provider-wide outage, as the breaker should see it (one count per
/// connection; a single dead connection is a cooldown, not an outage).
fn outage(r: &Rig, provider: &str, category: AuthCategory, n: usize, status: u16) {
    let mut configs = vec![
        conn_config("claude-1", "anthropic", AuthCategory::Oauth),
        conn_config("claude-2", "anthropic", AuthCategory::Oauth),
        conn_config("glm-key", "glm", AuthCategory::ApiKey),
    ];
    let ids: Vec<String> = (0..n).map(|i| format!("{provider}-outage-{i}")).collect();
    configs.extend(ids.iter().map(|id| conn_config(id, provider, category)));
    r.engine.sync_connections(configs);
    for id in &ids {
        fail(r, t(provider, id, "m"), status, &[], "");
    }
}

fn conn_config(id: &str, provider: &str, category: AuthCategory) -> ConnectionConfig {
    ConnectionConfig {
        id: id.to_owned(),
        provider: provider.to_owned(),
        category,
        disable_cooling: false,
        quota_families: None,
    }
}

fn succeed(r: &Rig, target: Target<'_>) -> Vec<EngineEvent> {
    let attempt = r.engine.begin(target).unwrap_or_else(|e| panic!("{target:?} excluded: {e:?}"));
    r.engine.record_success(attempt)
}

#[test]
fn a_429_with_retry_after_7_skips_the_connection_for_7_seconds_while_its_sibling_serves() {
    let r = rig();
    fail(&r, combo()[0], 429, &[("retry-after", "7")], "rate limited");
    let s = r.engine.filter(&combo());
    assert_eq!(s.eligible, vec![1, 2]);
    assert_eq!(s.excluded[0].reason, ExclusionReason::ConnectionCooldown);
    assert_eq!(s.excluded[0].until, Some(T0.plus_millis(7_000)));
    succeed(&r, combo()[1]);
    r.clock.advance_ms(6_999);
    assert_eq!(r.engine.filter(&combo()).eligible, vec![1, 2]);
    r.clock.advance_ms(1);
    assert_eq!(r.engine.filter(&combo()).eligible, vec![0, 1, 2]);
}

#[test]
fn a_range_is_judged_with_whole_slice_indices_and_a_breaker_the_request_opened_does_not_exclude() {
    let r = rig();
    let started = r.engine.now();
    let s = r.engine.filter_range(&combo(), 1..3, None);
    assert_eq!((s.eligible, s.excluded.len()), (vec![1, 2], 0), "indices into the whole slice");
    assert!(r.engine.filter_range(&combo(), 3..9, None).eligible.is_empty(), "past the end: nothing");
    // The request's own failures open the anthropic breaker after it started.
    r.clock.advance_ms(10);
    outage(&r, "anthropic", AuthCategory::Oauth, 8, 503);
    let late = r.engine.filter_range(&combo(), 1..3, Some(started));
    assert_eq!(late.eligible, vec![1, 2], "judged late, as if judged at the start: {late:?}");
    // Another request, started after the breaker opened, is turned away from it.
    r.clock.advance_ms(1);
    let later = r.engine.filter_range(&combo(), 1..3, Some(r.engine.now()));
    assert_eq!(later.eligible, vec![2]);
    assert_eq!(
        later.excluded.iter().map(|e| (e.index, e.reason)).collect::<Vec<_>>(),
        [(1, ExclusionReason::CircuitOpen)]
    );
    assert_eq!(r.engine.filter(&combo()).eligible, vec![2], "filter judges the breaker as it is");
}

#[test]
fn eight_503s_open_an_oauth_breaker_and_traffic_moves_to_the_other_provider() {
    let r = rig();
    outage(&r, "anthropic", AuthCategory::Oauth, 8, 503);
    let s = r.engine.filter(&combo());
    assert_eq!(s.eligible, vec![2]);
    assert!(s.excluded.iter().all(|e| e.reason == ExclusionReason::CircuitOpen));
    let view = r.engine.breakers();
    assert_eq!(
        (view[0].provider.as_str(), view[0].state, view[0].failure_count),
        ("anthropic", BreakerStateName::Open, 8)
    );
    assert_eq!(view[0].retry_after_ms, 60_000);
    let names: Vec<&str> =
        r.events.lock().unwrap_or_else(|p| p.into_inner()).iter().map(EngineEvent::name).collect();
    assert!(names.contains(&"breaker.degraded") && names.contains(&"breaker.opened"), "{names:?}");
    // Each failing connection also cools (server_error), so once the breaker lets
    // traffic through again the dead ones stay out of rotation.
    let cooling = r.engine.cooldowns(Some("anthropic"));
    assert_eq!(cooling.iter().filter(|c| c.status == ConnectionStatus::Unavailable).count(), 8);

    // After the reset timeout exactly one probe goes through; its success closes.
    r.clock.advance_ms(60_000);
    assert_eq!(r.engine.filter(&combo()).eligible, vec![0, 1, 2], "half-open admits a probe");
    let probe = r.engine.begin(combo()[0]).unwrap_or_else(|e| panic!("probe refused: {e:?}"));
    assert!(probe.is_probe());
    let second = r.engine.begin(combo()[1]);
    assert!(matches!(second, Err(Exclusion { reason: ExclusionReason::CircuitOpen, .. })));
    r.engine.record_success(probe);
    assert_eq!(r.engine.breakers()[0].state, BreakerStateName::Closed);
}

#[test]
fn a_dropped_probe_frees_the_slot() {
    let r = rig();
    outage(&r, "anthropic", AuthCategory::Oauth, 8, 500);
    r.clock.advance_ms(60_000);
    let probe = r.engine.begin(combo()[0]).unwrap_or_else(|e| panic!("{e:?}"));
    drop(probe);
    assert!(r.engine.begin(combo()[1]).is_ok_and(|a| a.is_probe()));
}

#[test]
fn a_probe_failing_for_an_account_reason_releases_the_probe() {
    let r = rig();
    outage(&r, "anthropic", AuthCategory::Oauth, 8, 502);
    r.clock.advance_ms(60_000);
    let rec = fail(&r, combo()[0], 429, &[], "");
    assert_eq!(rec.verdict.reason, ErrorReason::RateLimit);
    assert_eq!(r.engine.breakers()[0].state, BreakerStateName::HalfOpen);
    assert!(r.engine.begin(combo()[1]).is_ok_and(|a| a.is_probe()));
}

#[test]
fn concurrency_429_cools_one_second_keeps_the_level_and_spares_the_breaker() {
    let r = rig();
    fail(&r, combo()[2], 429, &[], "");
    r.clock.advance_ms(3_000);
    let rec = fail(&r, combo()[2], 429, &[], "{\"error\":{\"message\":\"并发数过高\"}}");
    assert_eq!(rec.verdict.reason, ErrorReason::ConcurrencyLimited);
    let view = &r.engine.cooldowns(Some("glm"))[0];
    assert_eq!((view.remaining_ms, view.backoff_level), (1_000, 1));
    let glm = r.engine.breakers().into_iter().find(|b| b.provider == "glm");
    assert_eq!(glm.map(|b| (b.state, b.failure_count)), Some((BreakerStateName::Closed, 0)));
}

#[test]
fn concurrent_failures_of_one_connection_raise_the_level_once() {
    let r = rig();
    let attempts: Vec<Attempt> =
        (0..4).map(|_| r.engine.begin(combo()[2]).unwrap_or_else(|e| panic!("{e:?}"))).collect();
    r.clock.advance_ms(50);
    let headers: &[(&str, &str)] = &[];
    for a in attempts {
        r.engine.judge(a, &http(429, &headers, ""));
    }
    let view = &r.engine.cooldowns(Some("glm"))[0];
    assert_eq!((view.backoff_level, view.remaining_ms), (1, 3_000));
}

#[test]
fn the_cooldown_list_and_clear_never_clear_terminal_states() {
    let r = rig();
    for _ in 0..3 {
        fail(
            &r,
            combo()[0],
            403,
            &[],
            "{\"error\":{\"type\":\"forbidden\",\"message\":\"Request not allowed\"}}",
        );
        r.clock.advance_ms(3_600_000);
    }
    fail(&r, combo()[1], 429, &[], "");
    let list = r.engine.cooldowns(None);
    let status = |id: &str| list.iter().find(|c| c.connection == id).map(|c| c.status);
    assert_eq!(status("claude-1"), Some(ConnectionStatus::Banned));
    assert_eq!(status("claude-2"), Some(ConnectionStatus::Unavailable));
    assert_eq!(status("glm-key"), Some(ConnectionStatus::Active));
    let result = r.engine.clear_cooldowns(&CooldownsClearRequest {
        connection_ids: vec![],
        all: true,
        provider: Some("anthropic".to_owned()),
    });
    assert_eq!(
        result,
        CooldownsClearResult { cleared: 1, unchanged: 0, skipped_terminal: 1, lockouts_cleared: 0 }
    );
    let list = r.engine.cooldowns(None);
    assert_eq!(
        list.iter().find(|c| c.connection == "claude-1").map(|c| c.status),
        Some(ConnectionStatus::Banned)
    );
    let again = r.engine.clear_cooldowns(&CooldownsClearRequest {
        connection_ids: vec!["claude-2".into(), "nope".into()],
        all: false,
        provider: None,
    });
    assert_eq!(
        again,
        CooldownsClearResult { cleared: 0, unchanged: 2, skipped_terminal: 0, lockouts_cleared: 0 }
    );
    // Terminal → 404-style decision when nothing else is left; a credentials change revives it.
    let only_banned = [combo()[0]];
    assert_eq!(r.engine.filter(&only_banned).decision(r.engine.now()), Decision::NoExecutableTargets);
    r.engine.reset_connection("claude-1");
    assert_eq!(r.engine.filter(&only_banned).eligible, vec![0]);
}

#[test]
fn all_targets_cooling_down_reports_the_earliest_retry() {
    let r = rig();
    fail(&r, combo()[0], 429, &[("retry-after", "30")], "");
    fail(&r, combo()[1], 429, &[("retry-after", "12")], "");
    fail(&r, combo()[2], 429, &[("retry-after", "45")], "");
    let s = r.engine.filter(&combo());
    let now = r.engine.now();
    assert_eq!(
        s.decision(now),
        Decision::AllCoolingDown { retry_at: now.plus_millis(12_000), retry_after_secs: 12 }
    );
    let views = s.excluded_views(&combo(), now);
    assert_eq!(views.iter().map(|v| v.seconds_left).collect::<Vec<_>>(), vec![Some(30), Some(12), Some(45)]);
}

#[test]
fn model_lockouts_lock_the_family_list_decay_and_clear() {
    let r = rig();
    let mut s = ResilienceSettings::default();
    s.model_lockout.enabled = true;
    r.engine.apply_settings(&s);
    r.engine.set_quota_families(QuotaFamilies(vec![FamilyRule {
        provider: "glm".into(),
        prefix: "glm-".into(),
        family: "glm-plan".into(),
    }]));
    fail(&r, t("glm", "glm-key", "glm-5"), 429, &[], "");
    let other_model = [t("glm", "glm-key", "glm-4.6")];
    let s1 = r.engine.filter(&other_model);
    assert_eq!(
        s1.excluded.first().map(|e| e.reason),
        Some(ExclusionReason::ModelLockout),
        "the family is locked"
    );
    let locks = r.engine.lockouts();
    assert_eq!(
        (locks[0].model.as_str(), locks[0].scope, locks[0].remaining_ms),
        ("glm-plan", LockScope::QuotaFamily, 120_000)
    );
    assert_eq!(
        r.engine.cooldowns(Some("glm"))[0].status,
        ConnectionStatus::Active,
        "the lockout replaces the connection cooldown"
    );
    let removed = r.engine.clear_lockout(&LockoutClearRequest {
        provider: "glm".into(),
        connection: None,
        model: "glm-plan".into(),
    });
    assert_eq!(removed, 1);
    assert!(r.engine.filter(&other_model).excluded.is_empty());
    // Success decay: a lock with count 1 is deleted by one success (here an attempt
    // that was in flight when the model failed), before its timer ends.
    let in_flight = r.engine.begin(t("glm", "glm-key", "glm-5")).unwrap_or_else(|e| panic!("{e:?}"));
    fail(&r, t("glm", "glm-key", "glm-5"), 404, &[], "");
    assert_eq!(r.engine.lockouts().len(), 1);
    assert!(r.engine.begin(t("glm", "glm-key", "glm-4.6")).is_ok(), "a 404 locks the model, not its family");
    r.engine.record_success(in_flight);
    assert!(r.engine.lockouts().is_empty());
}

// settings-test: /streamStallCooldown/enabled
#[test]
fn stream_stalls_record_without_cooling_unless_enabled() {
    let r = rig();
    let a = r.engine.begin(combo()[2]).unwrap_or_else(|e| panic!("{e:?}"));
    r.engine.judge(a, &AttemptOutcome::StreamStall);
    let view = &r.engine.cooldowns(Some("glm"))[0];
    assert_eq!(
        (view.status, view.last_error_kind),
        (ConnectionStatus::Active, Some(ErrorReason::StreamStall))
    );
    let mut s = ResilienceSettings::default();
    s.stream_stall_cooldown.enabled = true;
    r.engine.apply_settings(&s);
    let a = r.engine.begin(combo()[2]).unwrap_or_else(|e| panic!("{e:?}"));
    r.engine.judge(a, &AttemptOutcome::StreamStall);
    assert_eq!(r.engine.cooldowns(Some("glm"))[0].status, ConnectionStatus::Unavailable);
}

#[test]
fn breaker_state_survives_a_snapshot_and_restore() {
    let r = rig();
    outage(&r, "glm", AuthCategory::ApiKey, 12, 504);
    fail(&r, combo()[0], 401, &[], "invalid token");
    let snap = r.engine.snapshot();
    let json = serde_json::to_string(&snap).unwrap_or_else(|e| panic!("{e}"));
    let back: EngineSnapshot = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}"));
    let fresh = Engine::new(r.clock.clone());
    fresh.sync_connections([ConnectionConfig {
        id: "glm-key".into(),
        provider: "glm".into(),
        category: AuthCategory::ApiKey,
        disable_cooling: false,
        quota_families: None,
    }]);
    fresh.restore(&back).unwrap_or_else(|e| panic!("{e}"));
    let glm = fresh.breakers().into_iter().find(|b| b.provider == "glm");
    assert_eq!(glm.map(|b| b.state), Some(BreakerStateName::Open));
    assert_eq!(fresh.filter(&combo()).excluded.len(), 2, "glm open, claude-1 cooling");
    let bad = EngineSnapshot { version: 99, ..back };
    assert!(fresh.restore(&bad).is_err());
}

#[test]
fn reset_breakers_closes_them() {
    let r = rig();
    outage(&r, "glm", AuthCategory::ApiKey, 12, 504);
    assert_eq!(r.engine.reset_breakers(Some("glm")).reset_count, 1);
    assert_eq!(r.engine.filter(&combo()).eligible, vec![0, 1, 2]);
    assert_eq!(r.engine.reset_breakers(None).reset_count, 2);
}

#[test]
fn unknown_targets_are_eligible_and_recorded_lazily() {
    let r = rig();
    let unknown = [t("openai", "key-x", "gpt-5")];
    assert_eq!(r.engine.filter(&unknown).eligible, vec![0]);
    fail(&r, unknown[0], 429, &[("retry-after", "2")], "");
    assert_eq!(r.engine.filter(&unknown).excluded.len(), 1);
}

#[test]
fn sync_forgets_connections_and_providers_no_longer_listed() {
    let r = rig();
    fail(&r, combo()[2], 429, &[], "");
    r.engine.sync_connections([ConnectionConfig {
        id: "claude-1".into(),
        provider: "anthropic".into(),
        category: AuthCategory::Oauth,
        disable_cooling: false,
        quota_families: None,
    }]);
    assert_eq!(r.engine.cooldowns(None).len(), 1);
    assert_eq!(
        r.engine.breakers().iter().map(|b| b.provider.as_str()).collect::<Vec<_>>(),
        vec!["anthropic"]
    );
}

#[test]
fn disable_cooling_keeps_a_connection_routable() {
    let r = rig();
    r.engine.sync_connections([ConnectionConfig {
        id: "claude-1".into(),
        provider: "anthropic".into(),
        category: AuthCategory::Oauth,
        disable_cooling: true,
        quota_families: None,
    }]);
    fail(&r, combo()[0], 429, &[("retry-after", "60")], "");
    assert_eq!(r.engine.filter(&combo()[..1]).eligible, vec![0]);
    assert_eq!(r.engine.cooldowns(None)[0].last_error_kind, Some(ErrorReason::RateLimit));
}

#[test]
fn a_dead_connection_cools_and_counts_once_for_the_breaker_while_its_sibling_serves() {
    let r = rig();
    let dead = t("glm", "glm-key", "glm-5");
    let rec = fail(&r, dead, 503, &[], "upstream unavailable");
    assert_eq!(rec.verdict.action, crate::classify::Action::FailOver);
    let view = &r.engine.cooldowns(Some("glm"))[0];
    assert_eq!(
        (view.status, view.remaining_ms, view.backoff_level),
        (ConnectionStatus::Unavailable, 3_000, 1)
    );
    // Retried as soon as its cooldown ends, it fails again: the backoff doubles, and
    // within the de-duplication window the breaker does not hear it twice.
    r.clock.advance_ms(3_000);
    fail(&r, dead, 503, &[], "");
    assert_eq!(r.engine.cooldowns(Some("glm"))[0].remaining_ms, 6_000);
    let glm = r.engine.breakers().into_iter().find(|b| b.provider == "glm");
    assert_eq!(glm.map(|b| b.failure_count), Some(1));
    r.clock.advance_ms(6_000);
    let rec = r.engine.judge(
        r.engine.begin(dead).unwrap_or_else(|e| panic!("{e:?}")),
        &AttemptOutcome::Transport(TransportFailure::Connect),
    );
    assert_eq!(rec.verdict.reason, ErrorReason::Unreachable);
    let glm = r.engine.breakers().into_iter().find(|b| b.provider == "glm");
    assert_eq!(glm.map(|b| b.failure_count), Some(2), "outside the window it counts again");
    assert_eq!(r.engine.cooldowns(Some("glm"))[0].backoff_level, 3);
}

#[test]
fn a_request_error_is_relayed_and_changes_nothing() {
    let r = rig();
    let rec = fail(&r, combo()[2], 400, &[], "{\"error\":{\"message\":\"messages: field required\"}}");
    assert_eq!(rec.verdict.action, crate::classify::Action::Relay);
    assert!(rec.events.is_empty());
    assert_eq!(r.engine.filter(&combo()).eligible, vec![0, 1, 2]);
    let rec = fail(&r, combo()[2], 422, &[], "unprocessable");
    assert_eq!(rec.verdict.action, crate::classify::Action::Relay);
}

#[test]
fn a_404_fails_over_and_with_lockouts_on_locks_only_that_model() {
    let r = rig();
    let rec = fail(&r, combo()[2], 404, &[], "model not found");
    assert_eq!(
        (rec.verdict.action, rec.verdict.reason),
        (crate::classify::Action::FailOver, ErrorReason::NotFound)
    );
    assert_eq!(r.engine.filter(&combo()).eligible, vec![0, 1, 2], "lockouts off: only recorded");
    let mut s = ResilienceSettings::default();
    s.model_lockout.enabled = true;
    r.engine.apply_settings(&s);
    fail(&r, combo()[2], 404, &[], "model not found");
    assert_eq!(r.engine.filter(&combo()).eligible, vec![0, 1]);
    assert_eq!(r.engine.filter(&[t("glm", "glm-key", "glm-4.6")]).eligible, vec![0]);
}

#[test]
fn quota_texts_without_a_reset_wait_for_their_window() {
    let r = rig();
    let rec = fail(&r, combo()[2], 429, &[], "{\"error\":{\"message\":\"usage limit reached\"}}");
    assert_eq!(rec.verdict.reason, ErrorReason::QuotaExhausted);
    assert_eq!(r.engine.cooldowns(Some("glm"))[0].remaining_ms, 3_600_000);
    let rec = fail(&r, combo()[0], 429, &[], "{\"error\":{\"type\":\"insufficient_quota\"}}");
    assert_eq!(rec.verdict.reason, ErrorReason::QuotaExhausted);
    let claude = r.engine.cooldowns(Some("anthropic"));
    assert_eq!(claude.iter().find(|c| c.connection == "claude-1").map(|c| c.remaining_ms), Some(3_600_000));
    fail(&r, combo()[1], 429, &[], "weekly limit reached");
    let claude = r.engine.cooldowns(Some("anthropic"));
    assert_eq!(claude.iter().find(|c| c.connection == "claude-2").map(|c| c.remaining_ms), Some(86_400_000));
}

#[test]
fn a_quota_429_locks_the_connections_family() {
    let r = rig();
    let mut s = ResilienceSettings::default();
    s.model_lockout.enabled = true;
    r.engine.apply_settings(&s);
    let mut glm = conn_config("glm-key", "glm", AuthCategory::ApiKey);
    glm.quota_families = Some(vec![("glm-".to_owned(), "plan".to_owned())]);
    r.engine.sync_connections([conn_config("claude-1", "anthropic", AuthCategory::Oauth), glm]);
    fail(&r, t("glm", "glm-key", "glm-5"), 429, &[], "quota exceeded");
    let family = [t("glm", "glm-key", "glm-5"), t("glm", "glm-key", "glm-4.6"), t("glm", "glm-key", "other")];
    assert_eq!(r.engine.filter(&family).eligible, vec![2]);
}

#[test]
fn a_breaker_opened_by_this_request_does_not_turn_away_its_next_candidate() {
    let r = rig();
    let started = r.engine.now();
    outage(&r, "anthropic", AuthCategory::Oauth, 8, 503);
    assert!(r.engine.begin(combo()[1]).is_err(), "later requests see the open breaker");
    let a = r.engine.begin_since(combo()[1], Some(started)).unwrap_or_else(|e| panic!("{e:?}"));
    assert!(!a.is_probe());
    r.engine.record_success(a);
    r.clock.advance_ms(1);
    assert!(r.engine.begin_since(combo()[1], Some(r.engine.now())).is_err());
}
