use proptest::prelude::*;
use switchyard_types::UnixMillis;
use switchyard_types::resilience::{ConnectionStatus, ErrorReason};

use super::super::{Availability, ConnectionHealth, CooldownPolicy, CooldownState, LastError, TerminalKind};
use super::{CooldownChange, CooldownEffect, CooldownFailure, CooldownObservation as Obs, transition};
use crate::classify::hints::{HintSource, MAX_HINT_MS, RetryHint, hint_from_headers};
use crate::outcome::AuthCategory;

const T0: UnixMillis = UnixMillis(1_772_366_400_000); // 2026-03-01T12:00:00Z

fn failure(effect: CooldownEffect, dispatched_at: UnixMillis, hint: Option<RetryHint>) -> Obs {
    Obs::Failure(CooldownFailure {
        effect,
        error: LastError::new(ErrorReason::RateLimit, Some(429), "slow down", dispatched_at),
        hint,
        dispatched_at,
    })
}

fn api() -> CooldownPolicy {
    CooldownPolicy::for_category(AuthCategory::ApiKey)
}

fn until(h: &ConnectionHealth) -> Option<i64> {
    match h.state {
        CooldownState::Cooling { until, .. } => Some(until.0),
        _ => None,
    }
}

/// Fails once at `now` (dispatched at `now`) and returns the cooldown length.
fn fail_at(h: &ConnectionHealth, now: UnixMillis, p: &CooldownPolicy) -> (ConnectionHealth, i64) {
    let (next, _) = transition(h, &failure(CooldownEffect::Backoff, now, None), now, p);
    let len = until(&next).map_or(0, |u| u - now.0);
    (next, len)
}

#[test]
fn cooldown_doubles_per_failure_up_to_the_cap() {
    let p = api(); // 3 s, 5 steps
    let mut h = ConnectionHealth::default();
    let mut now = T0;
    let mut lens = Vec::new();
    for _ in 0..8 {
        let (next, len) = fail_at(&h, now, &p);
        lens.push(len);
        now = now.plus_millis(len); // next failure right after the cooldown ends
        h = next;
    }
    assert_eq!(lens, vec![3_000, 6_000, 12_000, 24_000, 48_000, 96_000, 96_000, 96_000]);
    assert_eq!(h.backoff_level, 5);
}

#[test]
fn oauth_base_is_5_seconds() {
    let p = CooldownPolicy::for_category(AuthCategory::Oauth);
    let (_, len) = fail_at(&ConnectionHealth::default(), T0, &p);
    assert_eq!(len, 5_000);
    assert_eq!(p.computed_cap_ms(), 5_000 * 256);
}

#[test]
fn upstream_hints_win_over_the_computed_backoff() {
    let p = api();
    let cases: [(&[(&str, &str)], i64); 4] = [
        (&[("retry-after", "7")], 7_000),
        (&[("retry-after", "Sun, 01 Mar 2026 12:00:42 GMT")], 42_000),
        (&[("anthropic-ratelimit-requests-reset", "2026-03-01T12:01:00Z")], 60_000),
        (&[("x-ratelimit-reset-requests", "1s")], 1_000),
    ];
    for (headers, expected) in cases {
        let hint = hint_from_headers(&headers, T0);
        assert!(hint.is_some(), "{headers:?}");
        let (h, _) =
            transition(&ConnectionHealth::default(), &failure(CooldownEffect::Backoff, T0, hint), T0, &p);
        assert_eq!(until(&h).map(|u| u - T0.0), Some(expected), "{headers:?}");
    }
}

#[test]
fn concurrent_failures_raise_the_backoff_level_once() {
    let p = api();
    let dispatched = T0;
    let mut h = ConnectionHealth::default();
    let mut changes = Vec::new();
    for i in 0..4 {
        let (next, change) =
            transition(&h, &failure(CooldownEffect::Backoff, dispatched, None), T0.plus_millis(10 + i), &p);
        changes.push(change);
        h = next;
    }
    assert_eq!(h.backoff_level, 1);
    assert_eq!(until(&h), Some(T0.0 + 10 + 3_000), "the cooldown is not stacked or extended");
    assert_eq!(changes[1..], [Some(CooldownChange::Deduplicated); 3]);
    // A failure of an attempt dispatched after the cooldown started does count.
    let later = T0.plus_millis(3_010);
    let (h, _) = transition(&h, &failure(CooldownEffect::Backoff, later, None), later, &p);
    assert_eq!(h.backoff_level, 2);
}

#[test]
fn concurrency_limit_cools_one_second_and_keeps_the_level() {
    let p = api();
    let (h, _) = fail_at(&ConnectionHealth::default(), T0, &p);
    let now = T0.plus_millis(5_000);
    let (h, change) = transition(&h, &failure(CooldownEffect::Concurrency, now, None), now, &p);
    assert_eq!(change, Some(CooldownChange::Cooling { until: now.plus_millis(1_000), level: 1 }));
    assert_eq!(h.backoff_level, 1);
    let hint = RetryHint::new(now.plus_millis(4_000), HintSource::Header, now);
    let (h, _) =
        transition(&ConnectionHealth::default(), &failure(CooldownEffect::Concurrency, now, hint), now, &p);
    assert_eq!(until(&h), Some(now.0 + 4_000), "or the upstream hint");
    assert_eq!(h.backoff_level, 0);
}

#[test]
fn three_consecutive_refusals_ban_and_one_only_cools() {
    let p = CooldownPolicy::for_category(AuthCategory::Oauth);
    let mut h = ConnectionHealth::default();
    let mut now = T0;
    for expected in [ConnectionStatus::Unavailable, ConnectionStatus::Unavailable, ConnectionStatus::Banned] {
        let (next, _) = transition(&h, &failure(CooldownEffect::RequestRejected, now, None), now, &p);
        assert_eq!(next.status(now), expected);
        now = now.plus_millis(3_600_000);
        h = next;
    }
    // A success in between resets the streak.
    let (h, _) =
        transition(&ConnectionHealth::default(), &failure(CooldownEffect::RequestRejected, T0, None), T0, &p);
    let (h, _) = transition(
        &h,
        &failure(CooldownEffect::RequestRejected, T0.plus_millis(60_000), None),
        T0.plus_millis(60_000),
        &p,
    );
    let (h, _) =
        transition(&h, &Obs::Success { dispatched_at: T0.plus_millis(120_000) }, T0.plus_millis(120_000), &p);
    assert_eq!(h.rejected_streak, 0);
}

#[test]
fn expired_after_three_retries() {
    let p = CooldownPolicy::for_category(AuthCategory::Oauth);
    let mut h = ConnectionHealth::default();
    let mut now = T0;
    let mut statuses = Vec::new();
    for _ in 0..4 {
        let (next, _) = transition(&h, &failure(CooldownEffect::AuthFailure, now, None), now, &p);
        statuses.push(next.status(now));
        now = now.plus_millis(3_600_000);
        h = next;
    }
    use ConnectionStatus::{Expired, Unavailable};
    assert_eq!(statuses, vec![Unavailable, Unavailable, Unavailable, Expired]);
}

#[test]
fn a_terminal_state_is_never_overwritten() {
    let p = api();
    let banned = ConnectionHealth {
        state: CooldownState::Terminal { kind: TerminalKind::Banned, since: T0 },
        ..ConnectionHealth::default()
    };
    let later = T0.plus_millis(1);
    for obs in [
        failure(CooldownEffect::Backoff, later, None),
        failure(CooldownEffect::Concurrency, later, None),
        failure(CooldownEffect::Terminal(TerminalKind::CreditsExhausted), later, None),
        Obs::Success { dispatched_at: later },
        Obs::Clear,
    ] {
        let (h, change) = transition(&banned, &obs, later, &p);
        assert_eq!((h, change), (banned.clone(), None), "{obs:?}");
    }
    let (h, _) = transition(&banned, &Obs::Reset, later, &p);
    assert_eq!(h.status(later), ConnectionStatus::Active);
}

#[test]
fn a_success_clears_error_fields_and_level() {
    let p = api();
    let (h, _) = fail_at(&ConnectionHealth::default(), T0, &p);
    let (h, _) = fail_at(&h, T0.plus_millis(3_000), &p);
    let now = T0.plus_millis(20_000);
    let (h, change) = transition(&h, &Obs::Success { dispatched_at: now }, now, &p);
    assert_eq!(change, Some(CooldownChange::Cleared));
    assert_eq!((h.state, h.backoff_level, h.last_error.clone()), (CooldownState::Active, 0, None));
    let (_, change) = transition(&h, &Obs::Success { dispatched_at: now }, now, &p);
    assert_eq!(change, None, "nothing to clear, nothing to persist");
}

#[test]
fn a_stale_success_does_not_clear_a_running_cooldown() {
    let p = api();
    let (h, _) = fail_at(&ConnectionHealth::default(), T0, &p);
    let (h2, change) =
        transition(&h, &Obs::Success { dispatched_at: T0.plus_millis(-5) }, T0.plus_millis(10), &p);
    assert_eq!((h2, change), (h, None));
}

#[test]
fn stream_stalls_record_without_cooling_unless_enabled() {
    let mut p = api();
    let stall = |p: &CooldownPolicy| {
        let effect = CooldownEffect::for_stall(p.stall_cooldown);
        transition(&ConnectionHealth::default(), &failure(effect, T0, None), T0, p).0
    };
    let h = stall(&p);
    assert_eq!((h.status(T0), h.last_error.is_some()), (ConnectionStatus::Active, true));
    p.stall_cooldown = true;
    assert_eq!(stall(&p).status(T0), ConnectionStatus::Unavailable);
}

#[test]
fn disable_cooling_records_errors_but_keeps_terminal_states() {
    let p = CooldownPolicy { disable_cooling: true, ..api() };
    let (h, change) =
        transition(&ConnectionHealth::default(), &failure(CooldownEffect::Backoff, T0, None), T0, &p);
    assert_eq!((h.status(T0), change), (ConnectionStatus::Active, Some(CooldownChange::ErrorRecorded)));
    let (h, _) =
        transition(&h, &failure(CooldownEffect::Terminal(TerminalKind::CreditsExhausted), T0, None), T0, &p);
    assert_eq!(h.status(T0), ConnectionStatus::CreditsExhausted);
}

#[test]
fn a_cooldown_ends_lazily_and_keeps_the_level() {
    let p = api();
    let (h, _) = fail_at(&ConnectionHealth::default(), T0, &p);
    assert_eq!(h.availability(T0.plus_millis(2_999)), Availability::CoolingUntil(T0.plus_millis(3_000)));
    assert_eq!(h.availability(T0.plus_millis(3_000)), Availability::Available);
    assert_eq!(h.refreshed(T0.plus_millis(3_000)).backoff_level, 1);
}

#[test]
fn an_operator_clear_resets_everything_but_terminal_states() {
    let p = api();
    let (h, _) = fail_at(&ConnectionHealth::default(), T0, &p);
    let (h, change) = transition(&h, &Obs::Clear, T0, &p);
    assert_eq!(
        (h.status(T0), h.backoff_level, change),
        (ConnectionStatus::Active, 0, Some(CooldownChange::Cleared))
    );
}

fn any_effect() -> impl Strategy<Value = CooldownEffect> {
    prop_oneof![
        6 => Just(CooldownEffect::Backoff),
        2 => Just(CooldownEffect::Concurrency),
        1 => (0u32..600_000).prop_map(|ms| CooldownEffect::Fixed { ms }),
        2 => Just(CooldownEffect::RequestRejected),
        2 => Just(CooldownEffect::AuthFailure),
        1 => Just(CooldownEffect::Terminal(TerminalKind::CreditsExhausted)),
        1 => Just(CooldownEffect::RecordOnly),
    ]
}

fn any_obs() -> impl Strategy<Value = (Option<CooldownEffect>, i64, Option<i64>, i64)> {
    // (effect or success, time step, hint offset, dispatch lag)
    (
        proptest::option::weighted(0.8, any_effect()),
        0i64..120_000,
        proptest::option::of(-1_000i64..(40 * 86_400_000)),
        0i64..10_000,
    )
}

proptest! {
    /// Cooldowns never exceed their caps, terminal states are absorbing, the level is
    /// bounded, and lazy reads never move state backwards in time.
    #[test]
    fn cooldown_invariants(steps in proptest::collection::vec(any_obs(), 1..60), category in prop_oneof![Just(AuthCategory::Oauth), Just(AuthCategory::ApiKey), Just(AuthCategory::Local)]) {
        let p = CooldownPolicy::for_category(category);
        let mut h = ConnectionHealth::default();
        let mut now = T0;
        for (effect, dt, hint, lag) in steps {
            now = now.plus_millis(dt);
            let dispatched_at = now.plus_millis(-lag);
            let obs = match effect {
                Some(effect) => failure(effect, dispatched_at, hint.and_then(|o| RetryHint::new(now.plus_millis(o), HintSource::Header, now))),
                None => Obs::Success { dispatched_at },
            };
            let was_terminal = matches!(h.state, CooldownState::Terminal { .. });
            let (next, _) = transition(&h, &obs, now, &p);
            if was_terminal {
                prop_assert_eq!(&next, &h.refreshed(now));
            }
            prop_assert!(next.backoff_level <= p.max_backoff_steps);
            if let CooldownState::Cooling { until, .. } = next.state {
                let left = u64::try_from(until.0 - now.0).unwrap_or(u64::MAX);
                let cap = p.computed_cap_ms().max(u64::try_from(MAX_HINT_MS).unwrap_or(0)).max(600_000);
                prop_assert!(left <= cap, "{} > {}", left, cap);
            }
            let (t1, t2) = (now.plus_millis(dt / 3), now.plus_millis(dt));
            prop_assert_eq!(next.refreshed(t1).refreshed(t2), next.refreshed(t2));
            let left = |t: UnixMillis| match next.availability(t) { Availability::CoolingUntil(u) => u.0 - t.0, _ => 0 };
            prop_assert!(left(t2) <= left(t1));
            h = next;
        }
    }
}

/// Team mode's race: replica B's cooldown record (begun at T0) is adopted here
/// before this replica's own failure, dispatched in that same millisecond, is
/// judged. The two are one herd: the level stays 1, whichever arrives first.
#[test]
fn a_failure_dispatched_in_the_millisecond_a_cooldown_began_is_the_same_herd() {
    let p = api();
    let (peer, _) = fail_at(&ConnectionHealth::default(), T0, &p);
    assert_eq!(peer.backoff_level, 1);
    let (h, change) = transition(&peer, &failure(CooldownEffect::Backoff, T0, None), T0, &p);
    assert_eq!(change, Some(CooldownChange::Deduplicated));
    assert_eq!((h.backoff_level, until(&h)), (1, until(&peer)));
    // A millisecond later it is a new failure (the connection was not cooling
    // when it was sent, as far as anyone could know).
    let later = T0.plus_millis(1);
    let (h, _) = transition(&peer, &failure(CooldownEffect::Backoff, later, None), later, &p);
    assert_eq!(h.backoff_level, 2);
}
