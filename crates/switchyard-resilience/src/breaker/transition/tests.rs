use proptest::prelude::*;
use switchyard_types::UnixMillis;
use switchyard_types::resilience::{BreakerStateName, ErrorReason};

use super::super::{Admission, BreakerPolicy, BreakerRecord, BreakerState, take_probe};
use super::{BreakerObservation as Obs, transition};
use crate::outcome::AuthCategory;

const T0: UnixMillis = UnixMillis(1_000_000);

fn fail() -> Obs {
    Obs::Failure { kind: ErrorReason::ServerError, probe: None }
}

fn ok() -> Obs {
    Obs::Success { probe: None }
}

/// Applies `n` observations one millisecond apart.
fn feed(rec: BreakerRecord, obs: Obs, n: u32, start: UnixMillis, p: &BreakerPolicy) -> BreakerRecord {
    (0..n).fold(rec, |r, i| transition(&r, obs, start.plus_millis(i64::from(i)), p).0)
}

fn name(r: &BreakerRecord) -> BreakerStateName {
    r.state.name()
}

#[test]
fn oauth_degrades_at_5_and_opens_at_8() {
    let p = BreakerPolicy::for_category(AuthCategory::Oauth);
    let r = feed(BreakerRecord::default(), fail(), 4, T0, &p);
    assert_eq!(name(&r), BreakerStateName::Closed);
    let r = feed(r, fail(), 1, T0, &p);
    assert_eq!((name(&r), r.failures), (BreakerStateName::Degraded, 5));
    let r = feed(r, fail(), 2, T0, &p);
    assert_eq!(name(&r), BreakerStateName::Degraded);
    let (r, t) = transition(&r, fail(), T0, &p);
    assert_eq!(r.state, BreakerState::Open { until: T0.plus_millis(60_000), kind: ErrorReason::ServerError });
    assert_eq!(
        t.last().map(|t| (t.from, t.to, t.cause)),
        Some((BreakerStateName::Degraded, BreakerStateName::Open, "threshold"))
    );
}

#[test]
fn api_key_degrades_at_7_and_opens_at_12() {
    let p = BreakerPolicy::for_category(AuthCategory::ApiKey);
    let r = feed(BreakerRecord::default(), fail(), 6, T0, &p);
    assert_eq!(name(&r), BreakerStateName::Closed);
    let r = feed(r, fail(), 1, T0, &p);
    assert_eq!(name(&r), BreakerStateName::Degraded);
    let r = feed(r, fail(), 4, T0, &p);
    assert_eq!((name(&r), r.failures), (BreakerStateName::Degraded, 11));
    let r = feed(r, fail(), 1, T0, &p);
    assert_eq!(r.state, BreakerState::Open { until: T0.plus_millis(30_000), kind: ErrorReason::ServerError });
}

#[test]
fn local_opens_at_2() {
    let p = BreakerPolicy::for_category(AuthCategory::Local);
    let r = feed(
        BreakerRecord::default(),
        Obs::Failure { kind: ErrorReason::Unreachable, probe: None },
        2,
        T0,
        &p,
    );
    assert_eq!(r.state, BreakerState::Open { until: T0.plus_millis(15_001), kind: ErrorReason::Unreachable });
}

fn opened(p: &BreakerPolicy) -> BreakerRecord {
    feed(BreakerRecord::default(), fail(), p.failure_threshold, T0, p)
}

#[test]
fn half_open_after_the_reset_timeout_read_lazily() {
    let p = BreakerPolicy::for_category(AuthCategory::Oauth);
    let r = opened(&p);
    let until = T0.plus_millis(60_007);
    assert_eq!(r.admission(until.plus_millis(-1), &p), Admission::Refused { until });
    assert_eq!(r.retry_after_ms(until.plus_millis(-1_000), &p), 1_000);
    // No call happened in between; the read alone sees HalfOpen.
    let (seen, t) = r.refreshed(until, &p);
    assert_eq!(seen.state, BreakerState::HalfOpen { probe_taken: None });
    assert_eq!(t.map(|t| t.cause), Some("timeout-elapsed"));
    assert_eq!(r.admission(until, &p), Admission::ProbeAvailable);
    assert_eq!(r.state.name(), BreakerStateName::Open, "reads do not write");
}

#[test]
fn exactly_one_probe_and_its_success_closes() {
    let p = BreakerPolicy::for_category(AuthCategory::Oauth);
    let at = T0.plus_millis(70_000);
    let taken = take_probe(&opened(&p), at, &p).unwrap_or_else(|| panic!("probe expected"));
    assert_eq!(taken.refreshed.map(|t| t.to), Some(BreakerStateName::HalfOpen));
    assert!(take_probe(&taken.record, at, &p).is_none(), "only one probe");
    assert_eq!(taken.record.admission(at, &p), Admission::Refused { until: at.plus_millis(60_000) });
    let (r, t) = transition(&taken.record, Obs::Success { probe: Some(taken.probe) }, at, &p);
    assert_eq!((r.state, r.failures, r.open_cycles), (BreakerState::Closed, 0, 0));
    assert_eq!(t.last().map(|t| t.cause), Some("probe-success"));
}

#[test]
fn a_probe_failure_reopens_with_an_escalating_hold() {
    let p = BreakerPolicy::for_category(AuthCategory::Oauth); // escalates after 2 cycles, ×8 cap
    let mut r = opened(&p);
    let mut holds = Vec::new();
    for _ in 0..6 {
        let BreakerState::Open { until, .. } = r.state else { panic!("expected Open, got {:?}", r.state) };
        let now = until;
        let taken = take_probe(&r, now, &p).unwrap_or_else(|| panic!("probe expected"));
        let (next, t) = transition(
            &taken.record,
            Obs::Failure { kind: ErrorReason::Timeout, probe: Some(taken.probe) },
            now,
            &p,
        );
        assert_eq!(t.last().map(|t| t.cause), Some("probe-failed"));
        let BreakerState::Open { until, .. } = next.state else { panic!("expected Open") };
        holds.push(until.0 - now.0);
        r = next;
    }
    assert_eq!(holds, vec![60_000, 60_000, 120_000, 240_000, 480_000, 480_000]);
    assert_eq!(r.open_cycles, 6);
}

#[test]
fn results_of_attempts_without_the_probe_do_not_move_half_open_or_open() {
    let p = BreakerPolicy::for_category(AuthCategory::Oauth);
    let r = opened(&p);
    let (still_open, t) = transition(&r, ok(), T0.plus_millis(10), &p);
    assert_eq!((still_open.state, t.len()), (r.state, 0), "a late success never closes an Open breaker");
    let (still_open, _) = transition(&r, fail(), T0.plus_millis(10), &p);
    assert_eq!(still_open.state, r.state, "a late failure does not extend the hold");
    let at = T0.plus_millis(60_007);
    let taken = take_probe(&r, at, &p).unwrap_or_else(|| panic!("probe"));
    for obs in [ok(), fail(), Obs::Success { probe: Some(taken.probe + 1) }] {
        let (same, _) = transition(&taken.record, obs, at, &p);
        assert_eq!(same.state, taken.record.state, "{obs:?}");
    }
}

#[test]
fn a_stuck_probe_is_rearmed_and_its_late_result_ignored() {
    let p = BreakerPolicy::for_category(AuthCategory::Oauth);
    let at = T0.plus_millis(60_007);
    let taken = take_probe(&opened(&p), at, &p).unwrap_or_else(|| panic!("probe"));
    let later = at.plus_millis(60_000);
    let second = take_probe(&taken.record, later, &p).unwrap_or_else(|| panic!("re-armed probe"));
    assert_ne!(second.probe, taken.probe);
    let (r, _) = transition(&second.record, Obs::Success { probe: Some(taken.probe) }, later, &p);
    assert_eq!(r.state.name(), BreakerStateName::HalfOpen, "the old probe's result is fenced off");
}

#[test]
fn a_released_probe_can_be_taken_again() {
    let p = BreakerPolicy::for_category(AuthCategory::Oauth);
    let at = T0.plus_millis(60_007);
    let taken = take_probe(&opened(&p), at, &p).unwrap_or_else(|| panic!("probe"));
    let (r, _) = transition(&taken.record, Obs::ReleaseProbe { probe: taken.probe }, at, &p);
    assert_eq!(r.admission(at, &p), Admission::ProbeAvailable);
}

#[test]
fn degraded_heals_after_its_quiet_window() {
    let p = BreakerPolicy::for_category(AuthCategory::Oauth); // 60 s × 8
    let r = feed(BreakerRecord::default(), fail(), 5, T0, &p);
    let last = T0.plus_millis(4);
    assert_eq!(name(&r), BreakerStateName::Degraded);
    let (before, _) = r.refreshed(last.plus_millis(480_000 - 1), &p);
    assert_eq!(name(&before), BreakerStateName::Degraded);
    let (after, t) = r.refreshed(last.plus_millis(480_000), &p);
    assert_eq!((name(&after), after.failures), (BreakerStateName::Closed, 0));
    assert_eq!(t.map(|t| t.cause), Some("quiet-window"));
}

#[test]
fn degraded_quiet_window_follows_cooldown_by_kind() {
    let mut p = BreakerPolicy::for_category(AuthCategory::ApiKey); // ×4
    p.cooldown_by_kind.timeout = Some(5_000);
    let r =
        feed(BreakerRecord::default(), Obs::Failure { kind: ErrorReason::Timeout, probe: None }, 7, T0, &p);
    let last = T0.plus_millis(6);
    assert_eq!(name(&r.refreshed(last.plus_millis(19_999), &p).0), BreakerStateName::Degraded);
    assert_eq!(name(&r.refreshed(last.plus_millis(20_000), &p).0), BreakerStateName::Closed);
}

#[test]
fn degraded_heals_after_enough_successes_or_a_connection_test() {
    let p = BreakerPolicy::for_category(AuthCategory::Oauth);
    let r = feed(BreakerRecord::default(), fail(), 5, T0, &p);
    let r = feed(r, ok(), 2, T0, &p);
    assert_eq!((name(&r), r.failures), (BreakerStateName::Degraded, 3));
    let (r2, t) = transition(&r, ok(), T0, &p);
    assert_eq!((name(&r2), t.last().map(|t| t.cause)), (BreakerStateName::Closed, Some("recovery")));
    let (r3, t) = transition(&r, Obs::ConnectionTestOk, T0, &p);
    assert_eq!(
        (name(&r3), r3.failures, t.last().map(|t| t.cause)),
        (BreakerStateName::Closed, 0, Some("connection-test"))
    );
}

#[test]
fn manual_reset_closes_from_anywhere() {
    let p = BreakerPolicy::for_category(AuthCategory::Oauth);
    let (r, t) = transition(&opened(&p), Obs::ManualReset, T0, &p);
    assert_eq!((r.state, r.failures, r.last_failure_at), (BreakerState::Closed, 0, None));
    assert_eq!(t.last().map(|t| (t.from, t.cause)), Some((BreakerStateName::Open, "manual-reset")));
}

#[test]
fn old_closed_counts_fade_after_the_quiet_window() {
    let p = BreakerPolicy::for_category(AuthCategory::Oauth);
    let r = feed(BreakerRecord::default(), fail(), 4, T0, &p);
    let r = feed(r, fail(), 1, T0.plus_millis(600_000), &p);
    assert_eq!((name(&r), r.failures), (BreakerStateName::Closed, 1));
}

fn any_obs() -> impl Strategy<Value = Obs> {
    prop_oneof![
        4 => Just(fail()),
        1 => Just(Obs::Failure { kind: ErrorReason::Timeout, probe: None }),
        3 => Just(ok()),
        1 => Just(Obs::ConnectionTestOk),
        1 => Just(Obs::ManualReset),
        2 => Just(Obs::TakeProbe),
    ]
}

proptest! {
    /// Over random sequences (results carry the current probe id half the time):
    /// Open never becomes Closed without HalfOpen except by manual reset; holds stay
    /// within base × multiplier; lazy reads never move state backwards.
    #[test]
    fn breaker_invariants(steps in proptest::collection::vec((any_obs(), 0i64..200_000, any::<bool>()), 1..80)) {
        for category in [AuthCategory::Oauth, AuthCategory::ApiKey, AuthCategory::Local] {
            let p = BreakerPolicy::for_category(category);
            let mut r = BreakerRecord::default();
            let mut now = T0;
            for (obs, dt, with_probe) in &steps {
                now = now.plus_millis(*dt);
                let probe = with_probe.then_some(r.generation);
                let obs = match *obs {
                    Obs::Failure { kind, .. } => Obs::Failure { kind, probe },
                    Obs::Success { .. } => Obs::Success { probe },
                    other => other,
                };
                let before = r.state.name();
                let (next, ts) = transition(&r, obs, now, &p);
                for t in &ts {
                    prop_assert!(!(t.from == BreakerStateName::Open && t.to == BreakerStateName::Closed && t.cause != "manual-reset"), "{:?}", t);
                }
                if before == BreakerStateName::Open && next.state.name() == BreakerStateName::Closed {
                    prop_assert!(obs == Obs::ManualReset || ts.iter().any(|t| t.to == BreakerStateName::HalfOpen));
                }
                if let BreakerState::Open { until, kind } = next.state {
                    let cap = u64::from(p.base_hold_ms(Some(kind))) * u64::from(p.max_backoff_multiplier);
                    prop_assert!(u64::try_from(until.0 - now.0).unwrap_or(u64::MAX) <= cap);
                }
                // Lazy reads: refreshing at t1 then t2 equals refreshing at t2, and the
                // wait never grows as time passes.
                let t1 = now.plus_millis(*dt / 2);
                let t2 = now.plus_millis(*dt);
                let (a, _) = next.refreshed(t1, &p);
                prop_assert_eq!(a.refreshed(t2, &p).0.state, next.refreshed(t2, &p).0.state);
                prop_assert!(next.retry_after_ms(t2, &p) <= next.retry_after_ms(t1, &p));
                r = next;
            }
        }
    }
}
