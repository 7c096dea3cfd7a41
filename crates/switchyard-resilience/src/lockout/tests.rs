use proptest::prelude::*;
use switchyard_types::UnixMillis;
use switchyard_types::resilience::{ErrorReason, LockScope};
use switchyard_types::settings::ModelLockoutSettings;

use super::{LockFailure, LockoutChange, LockoutPolicy, LockoutTable};
use crate::classify::hints::{HintSource, RetryHint};
use crate::classify::lock_scope_for_status;

const T0: UnixMillis = UnixMillis(1_000_000_000);

fn policy() -> LockoutPolicy {
    let s = ModelLockoutSettings { enabled: true, ..ModelLockoutSettings::default() };
    LockoutPolicy::from_settings(&s, 60_000)
}

fn fail<'a>(scope: LockScope, model: &'a str, at: UnixMillis) -> LockFailure<'a> {
    LockFailure {
        scope,
        model,
        family: "family-a",
        reason: ErrorReason::RateLimit,
        hint: None,
        fixed_ms: None,
        fixed_is_upstream: false,
        dispatched_at: at,
    }
}

#[test]
fn defaults_follow_spec_and_are_off() {
    let off = LockoutPolicy::from_settings(&ModelLockoutSettings::default(), 60_000);
    assert!(!off.enabled);
    assert!(!off.locks_status(Some(429)));
    let on = policy();
    for status in [403, 404, 429, 502, 503, 504] {
        assert!(on.locks_status(Some(status)), "{status}");
    }
    assert!(!on.locks_status(Some(500)));
    assert_eq!((on.base_ms, on.max_ms, on.max_steps, on.exponential), (120_000, 1_800_000, 10, true));
}

#[test]
fn scope_by_status() {
    assert_eq!(lock_scope_for_status(Some(429)), LockScope::QuotaFamily);
    assert_eq!(lock_scope_for_status(Some(403)), LockScope::QuotaFamily);
    assert_eq!(lock_scope_for_status(Some(402)), LockScope::QuotaFamily);
    assert_eq!(lock_scope_for_status(Some(404)), LockScope::Model);
    assert_eq!(lock_scope_for_status(Some(502)), LockScope::Exact);
    assert_eq!(lock_scope_for_status(Some(500)), LockScope::Exact);
}

#[test]
fn a_family_lock_covers_every_model_of_the_family_and_exact_only_one() {
    let p = policy();
    let mut t = LockoutTable::default();
    t.record_failure(&fail(LockScope::QuotaFamily, "m1", T0), T0, &p);
    assert!(t.blocked_until("m1", "family-a", T0).is_some());
    assert!(t.blocked_until("m2", "family-a", T0).is_some(), "same family");
    assert!(t.blocked_until("m3", "family-b", T0).is_none());
    let mut t = LockoutTable::default();
    t.record_failure(&fail(LockScope::Exact, "m1", T0), T0, &p);
    assert!(t.blocked_until("m1", "family-a", T0).is_some());
    assert!(t.blocked_until("m2", "family-a", T0).is_none(), "exact covers one model");
}

#[test]
fn escalation_doubles_to_max_cooldown() {
    let p = policy();
    let mut t = LockoutTable::default();
    let mut now = T0;
    let mut lens = Vec::new();
    for _ in 0..6 {
        let LockoutChange::Locked { until, .. } =
            t.record_failure(&fail(LockScope::Exact, "m", now), now, &p)
        else {
            panic!("expected a lock")
        };
        lens.push(until.0 - now.0);
        now = until; // fail again as soon as it re-enables: inside the window
    }
    assert_eq!(lens, vec![120_000, 240_000, 480_000, 960_000, 1_800_000, 1_800_000]);
}

#[test]
fn without_exponential_backoff_every_lock_is_the_base() {
    let p = LockoutPolicy { exponential: false, ..policy() };
    let mut t = LockoutTable::default();
    let mut now = T0;
    for _ in 0..3 {
        let LockoutChange::Locked { until, .. } =
            t.record_failure(&fail(LockScope::Exact, "m", now), now, &p)
        else {
            panic!("expected a lock")
        };
        assert_eq!(until.0 - now.0, 120_000);
        now = until;
    }
}

#[test]
fn a_failure_outside_the_window_restarts_the_count() {
    let p = policy();
    let mut t = LockoutTable::default();
    t.record_failure(&fail(LockScope::Exact, "m", T0), T0, &p);
    let later = T0.plus_millis(120_000 + 60_000 + 1);
    let change = t.record_failure(&fail(LockScope::Exact, "m", later), later, &p);
    assert!(matches!(change, LockoutChange::Locked { failure_count: 1, .. }), "{change:?}");
}

#[test]
fn success_halves_the_count_and_deletes_at_zero_before_the_timer() {
    let p = policy();
    let mut t = LockoutTable::default();
    let mut now = T0;
    for i in 0..5 {
        if let LockoutChange::Locked { until, .. } =
            t.record_failure(&fail(LockScope::Exact, "m", now), now, &p)
            && i < 4
        {
            now = until;
        }
    }
    let counts = |t: &LockoutTable| t.entries.iter().map(|(_, e)| e.failure_count).collect::<Vec<_>>();
    assert_eq!(counts(&t), vec![5]);
    assert!(matches!(t.decay("m", "family-a")[..], [LockoutChange::Decayed { failure_count: 2, .. }]));
    assert!(matches!(t.decay("m", "family-a")[..], [LockoutChange::Decayed { failure_count: 1, .. }]));
    assert!(t.blocked_until("m", "family-a", now).is_some(), "still locked: its timer runs");
    assert!(matches!(t.decay("m", "family-a")[..], [LockoutChange::Cleared { .. }]));
    assert!(t.blocked_until("m", "family-a", now).is_none(), "deleted before its timer ended");
    assert!(t.decay("other", "family-b").is_empty());
}

#[test]
fn timer_expiry_re_enables() {
    let p = policy();
    let mut t = LockoutTable::default();
    t.record_failure(&fail(LockScope::Model, "m", T0), T0, &p);
    assert!(t.blocked_until("m", "x", T0.plus_millis(119_999)).is_some());
    assert!(t.blocked_until("m", "x", T0.plus_millis(120_000)).is_none());
}

#[test]
fn concurrent_failures_escalate_once() {
    let p = policy();
    let mut t = LockoutTable::default();
    let dispatched = T0.plus_millis(-10);
    for i in 0..3 {
        t.record_failure(&fail(LockScope::Exact, "m", dispatched), T0.plus_millis(i), &p);
    }
    assert_eq!(t.entries[0].1.failure_count, 1);
}

/// A failure dispatched in the millisecond a lock began (another replica's, its
/// table adopted first) is the same herd; a millisecond later it escalates.
#[test]
fn a_failure_dispatched_in_the_millisecond_a_lock_began_is_the_same_herd() {
    let p = policy();
    let mut t = LockoutTable::default();
    t.record_failure(&fail(LockScope::Exact, "m", T0), T0, &p);
    t.record_failure(&fail(LockScope::Exact, "m", T0), T0, &p);
    assert_eq!(t.entries[0].1.failure_count, 1);
    let later = T0.plus_millis(1);
    t.record_failure(&fail(LockScope::Exact, "m", later), later, &p);
    assert_eq!(t.entries[0].1.failure_count, 2);
}

#[test]
fn upstream_resets_win_when_longer_than_the_base() {
    let p = policy();
    let hint = RetryHint::new(T0.plus_millis(7_200_000), HintSource::Header, T0);
    let mut t = LockoutTable::default();
    let change = t.record_failure(&LockFailure { hint, ..fail(LockScope::QuotaFamily, "m", T0) }, T0, &p);
    assert!(matches!(change, LockoutChange::Locked { until, .. } if until == T0.plus_millis(7_200_000)));
    let body = RetryHint::new(T0.plus_millis(7_200_000), HintSource::Body, T0);
    let mut t = LockoutTable::default();
    let change =
        t.record_failure(&LockFailure { hint: body, ..fail(LockScope::QuotaFamily, "m", T0) }, T0, &p);
    assert!(
        matches!(change, LockoutChange::Locked { until, .. } if until == T0.plus_millis(1_800_000)),
        "body hints stay capped"
    );
    let short = RetryHint::new(T0.plus_millis(5_000), HintSource::Header, T0);
    let mut t = LockoutTable::default();
    let change =
        t.record_failure(&LockFailure { hint: short, ..fail(LockScope::QuotaFamily, "m", T0) }, T0, &p);
    assert!(matches!(change, LockoutChange::Locked { until, .. } if until == T0.plus_millis(120_000)));
}

#[test]
fn operator_clear_removes_by_name() {
    let p = policy();
    let mut t = LockoutTable::default();
    t.record_failure(&fail(LockScope::Exact, "m", T0), T0, &p);
    t.record_failure(&fail(LockScope::Exact, "n", T0), T0, &p);
    assert_eq!(t.clear("m", T0).len(), 1);
    assert_eq!(t.clear_all(T0).len(), 1);
    assert!(t.entries.is_empty());
}

proptest! {
    /// Locks never exceed their cap (without header hints), decay always reaches zero,
    /// and lazy reads never move state backwards.
    #[test]
    fn lockout_invariants(steps in proptest::collection::vec((any::<bool>(), 0i64..4_000_000, 0usize..3), 1..60)) {
        let p = policy();
        let mut t = LockoutTable::default();
        let mut now = T0;
        let models = ["a", "b", "c"];
        for (is_failure, dt, m) in steps {
            now = now.plus_millis(dt);
            let model = models[m];
            if is_failure {
                if let LockoutChange::Locked { until, .. } = t.record_failure(&fail(LockScope::Exact, model, now), now, &p) {
                    prop_assert!(until.0 - now.0 <= i64::from(p.max_ms));
                }
            } else {
                t.decay(model, "f");
            }
            let later = now.plus_millis(dt);
            let left = |at: UnixMillis| t.blocked_until(model, "f", at).map_or(0, |(_, e)| e.until.0 - at.0);
            prop_assert!(left(later) <= left(now));
        }
        for m in models {
            for _ in 0..40 {
                t.decay(m, "f");
            }
        }
        prop_assert!(t.entries.is_empty());
    }
}
