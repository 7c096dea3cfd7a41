//! One test per transition row, named after the facts §3.8 scenario it covers
//! (`tests/unit/claude-low-priority-mode.test.ts`), plus the invariants as proptests.

use proptest::prelude::*;

use super::*;

const NOW: UnixMillis = UnixMillis(1_800_000_000_000);
const RESET_S: i64 = 1_800_000_000 + 3_600;
const RESET: UnixMillis = UnixMillis(RESET_S * 1_000);

fn sig(pairs: &[(&str, &str)]) -> WallSignals {
    WallSignals::parse(&pairs, NOW)
}

fn wall_with(extra: &[(&'static str, &'static str)]) -> WallSignals {
    let reset: &'static str = Box::leak(RESET_S.to_string().into_boxed_str());
    let mut h = vec![
        ("anthropic-ratelimit-unified-status", "rejected"),
        ("anthropic-ratelimit-unified-reset", reset),
        ("anthropic-ratelimit-unified-representative-claim", "five_hour"),
        ("anthropic-ratelimit-unified-slow-offer", "treatment"),
        ("anthropic-ratelimit-unified-slow-retry-after", "20"),
        ("anthropic-ratelimit-unified-slow-max-wait", "1200"),
    ];
    h.retain(|(k, _)| !extra.iter().any(|(e, _)| e == k));
    h.extend_from_slice(extra);
    sig(&h)
}

fn wall() -> WallSignals {
    wall_with(&[])
}

fn slow(status: &str) -> WallSignals {
    sig(&[("anthropic-ratelimit-unified-slow-status", status)])
}

fn obs(status: u16, signals: WallSignals) -> Observation {
    Observation { status, signals, sent_slow: true, remaining_budget_ms: None }
}

fn active() -> LaneState {
    let mut lane = LaneState::default();
    assert_eq!(lane.try_accept(&wall(), NOW), Ok(()));
    lane
}

fn half() -> impl FnMut() -> f64 {
    || 0.5
}

#[test]
fn scenario_4_fresh_connection_is_inactive() {
    let mut lane = LaneState::default();
    assert!(!lane.sends_slow(NOW));
    assert_eq!(lane.active_until(), None);
}

#[test]
fn scenario_5_activation_rules() {
    let mut lane = LaneState::default();
    let control = wall_with(&[("anthropic-ratelimit-unified-slow-offer", "control")]);
    assert_eq!(lane.try_accept(&control, NOW), Err(Refusal::Control));
    let no_offer = sig(&[
        ("anthropic-ratelimit-unified-status", "rejected"),
        ("anthropic-ratelimit-unified-reset", "1800003600"),
    ]);
    assert_eq!(lane.try_accept(&no_offer, NOW), Err(Refusal::NoOffer));
    let past = wall_with(&[("anthropic-ratelimit-unified-reset", "1799999995")]);
    assert_eq!(lane.try_accept(&past, NOW), Err(Refusal::NoFutureReset));
    assert_eq!(lane.try_accept(&wall(), NOW), Ok(()));
    assert!(lane.sends_slow(NOW));
    assert_eq!(lane.try_accept(&wall(), NOW), Err(Refusal::AlreadyActive));
    assert_eq!(lane.phase, LanePhase::Active { resets_at: RESET, accepted_at: NOW });
    assert_eq!((lane.retry_after_ms, lane.max_wait_ms), (20_000, 1_200_000));
}

#[test]
fn activation_falls_back_to_the_5h_reset() {
    let mut lane = LaneState::default();
    let s = sig(&[
        ("anthropic-ratelimit-unified-status", "rejected"),
        ("anthropic-ratelimit-unified-slow-offer", "treatment"),
        ("anthropic-ratelimit-unified-5h-reset", "1800003600"),
    ]);
    assert_eq!(lane.try_accept(&s, NOW), Ok(()));
    assert_eq!(lane.active_until(), Some(RESET.plus_millis(60_000)));
}

#[test]
fn scenario_7_lazy_expiry() {
    let mut lane = active();
    assert!(lane.sends_slow(RESET.plus_millis(59_999)));
    assert!(!lane.sends_slow(RESET.plus_millis(60_000)));
    assert_eq!(lane.last_end, Some(ClaudeLaneEnd::Reset));
}

#[test]
fn scenario_14_active_and_not_needed_keep_the_lane() {
    let mut lane = active();
    let mut w = WaitWindow::default();
    assert_eq!(lane.observe(&obs(200, slow("active")), &mut w, NOW, &mut half()), LaneDecision::Pass);
    assert_eq!(lane.observe(&obs(200, slow("not_needed")), &mut w, NOW, &mut half()), LaneDecision::Pass);
    assert!(lane.is_active());
    assert_eq!((lane.requests_served, lane.requests_served_standard), (1, 1));
    assert_eq!(lane.last_slow_status, Some(ClaudeSlowStatus::NotNeeded));
}

#[test]
fn scenario_15_slot_busy_waits_then_max_wait_and_cool_off() {
    let mut lane = active();
    let mut w = WaitWindow::default();
    let busy = obs(429, slow("slot_busy"));
    let d = lane.observe(&busy, &mut w, NOW, &mut half());
    assert_eq!(d, LaneDecision::Retry { delay_ms: 20_000, via: RetryVia::SlotBusy });
    let d = lane.observe(&busy, &mut w, NOW.plus_millis(20_000), &mut || 1.0);
    assert_eq!(d, LaneDecision::Retry { delay_ms: 26_000, via: RetryVia::SlotBusy });
    assert_eq!(w.attempts(), 2);
    let end = NOW.plus_millis(1_200_000);
    assert_eq!(lane.observe(&busy, &mut w, end, &mut half()), LaneDecision::Ended(ClaudeLaneEnd::MaxWait));
    assert!(!lane.is_active());
    assert_eq!(lane.cool_off_until, Some(end.plus_millis(600_000)));
    assert_eq!(lane.try_accept(&wall(), end.plus_millis(1_000)), Err(Refusal::CoolingOff));
    assert_eq!(lane.try_accept(&wall(), end.plus_millis(600_000)), Ok(()));
}

#[test]
fn waits_never_pass_the_max_wait_window() {
    let mut lane = active();
    let mut w = WaitWindow::default();
    let busy = obs(429, slow("slot_busy"));
    assert!(matches!(lane.observe(&busy, &mut w, NOW, &mut half()), LaneDecision::Retry { .. }));
    let late = NOW.plus_millis(1_190_000);
    let d = lane.observe(&busy, &mut w, late, &mut || 1.0);
    assert_eq!(d, LaneDecision::Retry { delay_ms: 10_000, via: RetryVia::SlotBusy });
}

#[test]
fn scenario_16_529_waits_as_capacity_busy() {
    let mut lane = active();
    let d = lane.observe(&obs(529, WallSignals::default()), &mut WaitWindow::default(), NOW, &mut half());
    assert_eq!(d, LaneDecision::Retry { delay_ms: 20_000, via: RetryVia::CapacityBusy });
}

#[test]
fn scenario_17_terminal_statuses_end_the_lane() {
    for (status, end) in [
        ("weekly_limit", ClaudeLaneEnd::Weekly),
        ("budget_exhausted", ClaudeLaneEnd::Budget),
        ("off", ClaudeLaneEnd::Off),
        ("ineligible", ClaudeLaneEnd::Ineligible),
    ] {
        let mut lane = active();
        let d = lane.observe(&obs(429, slow(status)), &mut WaitWindow::default(), NOW, &mut half());
        assert_eq!(d, LaneDecision::Ended(end), "{status}");
        assert!(!lane.is_active());
        assert_eq!(lane.cool_off_until, None, "only max_wait cools off");
    }
}

#[test]
fn scenario_18_ineligible_with_overage_is_extra_usage() {
    let mut lane = active();
    let s = sig(&[
        ("anthropic-ratelimit-unified-slow-status", "ineligible"),
        ("anthropic-ratelimit-unified-overage-in-use", "true"),
    ]);
    let d = lane.observe(&obs(429, s), &mut WaitWindow::default(), NOW, &mut half());
    assert_eq!(d, LaneDecision::Ended(ClaudeLaneEnd::ExtraUsage));
}

#[test]
fn scenario_19_ineligible_without_overage_is_ineligible() {
    for overage in [None, Some("false")] {
        let mut lane = active();
        let mut h = vec![("anthropic-ratelimit-unified-slow-status", "ineligible")];
        h.extend(overage.map(|v| ("anthropic-ratelimit-unified-overage-in-use", v)));
        let d = lane.observe(&obs(429, sig(&h)), &mut WaitWindow::default(), NOW, &mut half());
        assert_eq!(d, LaneDecision::Ended(ClaudeLaneEnd::Ineligible));
    }
}

/// SPEC bounds the wait by the request's *remaining* budget − 5 s, which shrinks as
/// time passes (facts held it constant between calls).
#[test]
fn scenario_20_the_request_budget_bounds_the_wait() {
    let mut lane = active();
    let mut w = WaitWindow::default();
    let mut busy = obs(429, slow("slot_busy"));
    busy.remaining_budget_ms = Some(13_000);
    assert_eq!(
        lane.observe(&busy, &mut w, NOW, &mut half()),
        LaneDecision::Retry { delay_ms: 8_000, via: RetryVia::SlotBusy }
    );
    busy.remaining_budget_ms = Some(5_000);
    let d = lane.observe(&busy, &mut w, NOW.plus_millis(8_000), &mut half());
    assert_eq!(d, LaneDecision::Ended(ClaudeLaneEnd::MaxWait));
    let mut fresh = active();
    busy.remaining_budget_ms = Some(0);
    assert_eq!(
        fresh.observe(&busy, &mut WaitWindow::default(), NOW, &mut half()),
        LaneDecision::Ended(ClaudeLaneEnd::MaxWait)
    );
}

#[test]
fn scenario_21_no_budget_means_the_server_max_wait() {
    let mut lane = active();
    let d = lane.observe(&obs(429, slow("slot_busy")), &mut WaitWindow::default(), NOW, &mut half());
    assert_eq!(d, LaneDecision::Retry { delay_ms: 20_000, via: RetryVia::SlotBusy });
}

#[test]
fn scenario_22_budget_exhausted_is_remembered() {
    let mut lane = active();
    let budget_reset = 1_800_000_000 + 2 * 86_400;
    let s = sig(&[
        ("anthropic-ratelimit-unified-slow-status", "budget_exhausted"),
        ("anthropic-ratelimit-unified-slow-budget-reset", &budget_reset.to_string()),
    ]);
    assert_eq!(
        lane.observe(&obs(429, s), &mut WaitWindow::default(), NOW, &mut half()),
        LaneDecision::Ended(ClaudeLaneEnd::Budget)
    );
    let until = UnixMillis(budget_reset * 1_000);
    assert_eq!(lane.budget_exhausted_until, Some(until));
    let later_wall = |at: UnixMillis| {
        WallSignals::parse(
            &[
                ("anthropic-ratelimit-unified-status", "rejected"),
                ("anthropic-ratelimit-unified-slow-offer", "treatment"),
                ("anthropic-ratelimit-unified-reset", &((at.0 / 1_000) + 3_600).to_string()),
            ]
            .as_slice(),
            at,
        )
    };
    assert_eq!(
        lane.try_accept(&later_wall(NOW.plus_millis(60_000)), NOW.plus_millis(60_000)),
        Err(Refusal::BudgetExhausted)
    );
    let after = until.plus_millis(1);
    assert_eq!(lane.try_accept(&later_wall(after), after), Ok(()));
}

#[test]
fn budget_memo_is_capped_at_eight_days() {
    let mut lane = active();
    let s = sig(&[
        ("anthropic-ratelimit-unified-slow-status", "budget_exhausted"),
        ("anthropic-ratelimit-unified-slow-budget-reset", &(1_800_000_000i64 + 30 * 86_400).to_string()),
    ]);
    lane.observe(&obs(429, s), &mut WaitWindow::default(), NOW, &mut half());
    assert_eq!(lane.budget_exhausted_until, Some(NOW.plus_millis(691_200_000)));
}

#[test]
fn scenario_23_wall_without_slow_status_ends_as_wall() {
    let mut lane = active();
    let s = sig(&[
        ("anthropic-ratelimit-unified-status", "rejected"),
        ("anthropic-ratelimit-unified-representative-claim", "seven_day"),
    ]);
    assert_eq!(
        lane.observe(&obs(429, s), &mut WaitWindow::default(), NOW, &mut half()),
        LaneDecision::Ended(ClaudeLaneEnd::Wall)
    );
}

#[test]
fn scenario_24_plain_429_passes_and_keeps_the_lane() {
    let mut lane = active();
    let s = sig(&[("retry-after", "3")]);
    assert_eq!(lane.observe(&obs(429, s), &mut WaitWindow::default(), NOW, &mut half()), LaneDecision::Pass);
    assert!(lane.is_active());
}

#[test]
fn scenario_25_window_rollover_ends_as_reset() {
    let mut lane = active();
    let s = sig(&[("anthropic-ratelimit-unified-5h-reset", &(RESET_S + 59).to_string())]);
    assert_eq!(lane.observe(&obs(200, s), &mut WaitWindow::default(), NOW, &mut half()), LaneDecision::Pass);
    let s = sig(&[("anthropic-ratelimit-unified-5h-reset", &(RESET_S + 60).to_string())]);
    assert_eq!(
        lane.observe(&obs(200, s), &mut WaitWindow::default(), NOW, &mut half()),
        LaneDecision::Ended(ClaudeLaneEnd::Reset)
    );
}

#[test]
fn scenario_26_success_with_overage_is_extra_usage() {
    let mut lane = active();
    let s = sig(&[
        ("anthropic-ratelimit-unified-slow-status", "ineligible"),
        ("anthropic-ratelimit-unified-overage-in-use", "true"),
    ]);
    assert_eq!(
        lane.observe(&obs(200, s), &mut WaitWindow::default(), NOW, &mut half()),
        LaneDecision::Ended(ClaudeLaneEnd::ExtraUsage)
    );
}

#[test]
fn scenario_27_raced_sibling_joins_the_lane() {
    let mut lane = active();
    let mut w = WaitWindow::default();
    let mut sibling = obs(429, wall());
    sibling.sent_slow = false;
    assert_eq!(
        lane.observe(&sibling, &mut w, NOW, &mut half()),
        LaneDecision::Retry { delay_ms: 0, via: RetryVia::JoinedLane }
    );
    assert!(lane.is_active());
    let mut ok = obs(200, slow("active"));
    ok.sent_slow = false;
    assert_eq!(lane.observe(&ok, &mut w, NOW, &mut half()), LaneDecision::Pass);
    assert_eq!(lane.requests_served, 0);
    assert_eq!(
        lane.observe(&obs(429, wall()), &mut w, NOW, &mut half()),
        LaneDecision::Ended(ClaudeLaneEnd::Wall)
    );
}

#[test]
fn hints_refresh_while_active() {
    let mut lane = active();
    let s = sig(&[
        ("anthropic-ratelimit-unified-slow-status", "slot_busy"),
        ("anthropic-ratelimit-unified-slow-retry-after", "30"),
    ]);
    let d = lane.observe(&obs(429, s), &mut WaitWindow::default(), NOW, &mut half());
    assert_eq!(d, LaneDecision::Retry { delay_ms: 30_000, via: RetryVia::SlotBusy });
}

#[test]
fn inactive_lane_passes_everything() {
    let mut lane = LaneState::default();
    assert_eq!(
        lane.observe(&obs(429, wall()), &mut WaitWindow::default(), NOW, &mut half()),
        LaneDecision::Pass
    );
    assert!(!lane.end(ClaudeLaneEnd::Operator, NOW));
}

fn any_obs() -> impl Strategy<Value = (u16, WallSignals, bool, Option<u64>, i64, f64)> {
    let statuses = prop_oneof![Just(200u16), Just(429), Just(529), Just(500)];
    let slow = prop_oneof![
        Just(""),
        Just("active"),
        Just("not_needed"),
        Just("slot_busy"),
        Just("weekly_limit"),
        Just("budget_exhausted"),
        Just("off"),
        Just("ineligible"),
        Just("zzz")
    ];
    (
        statuses,
        slow,
        any::<bool>(),
        0i64..4 * 3_600,
        proptest::option::of(0u64..900_000),
        any::<bool>(),
        0i64..900_000,
        0.0f64..=1.0,
    )
        .prop_map(|(st, s, offer, reset_in, budget, sent, dt, r)| {
            let reset = (NOW.0 / 1_000 + reset_in).to_string();
            let pairs = [
                (
                    "anthropic-ratelimit-unified-status",
                    if st == 429 && s.is_empty() { "rejected" } else { "allowed" },
                ),
                ("anthropic-ratelimit-unified-reset", reset.as_str()),
                ("anthropic-ratelimit-unified-slow-offer", if offer { "treatment" } else { "control" }),
                ("anthropic-ratelimit-unified-slow-status", s),
            ];
            (st, WallSignals::parse(&pairs.as_slice(), NOW), sent, budget, dt, r)
        })
}

proptest! {
    /// The lane is never active past the reset it accepted + 60 s; no wait exceeds
    /// the request's remaining budget − 5 s; a `max_wait` end blocks re-acceptance
    /// for exactly 10 minutes.
    #[test]
    fn lane_invariants(steps in proptest::collection::vec(any_obs(), 1..40)) {
        let mut lane = LaneState::default();
        let mut w = WaitWindow::default();
        let mut now = NOW;
        let mut accepted: Option<UnixMillis> = None;
        for (status, signals, sent, budget, dt, r) in steps {
            now = now.plus_millis(dt);
            if !lane.sends_slow(now) && signals.is_wall(status) && lane.try_accept(&signals, now).is_ok() {
                accepted = signals.lane_reset();
                continue;
            }
            let o = Observation { status, signals, sent_slow: sent, remaining_budget_ms: budget };
            let d = lane.observe(&o, &mut w, now, &mut || r);
            if let LaneDecision::Retry { delay_ms, .. } = d && let Some(b) = budget {
                prop_assert!(delay_ms <= b.saturating_sub(5_000));
            }
            if d == LaneDecision::Ended(ClaudeLaneEnd::MaxWait) {
                let wall_at = |t: UnixMillis| WallSignals::parse(&[
                    ("anthropic-ratelimit-unified-status", "rejected"),
                    ("anthropic-ratelimit-unified-slow-offer", "treatment"),
                    ("anthropic-ratelimit-unified-reset", &(t.0 / 1_000 + 3_600).to_string()),
                ].as_slice(), t);
                let mut probe = lane;
                let just_before = now.plus_millis(599_999);
                prop_assert_eq!(probe.try_accept(&wall_at(just_before), just_before), Err(Refusal::CoolingOff));
                let at = now.plus_millis(600_000);
                prop_assert!(probe.budget_exhausted_until.is_some() || probe.try_accept(&wall_at(at), at).is_ok());
            }
            if let (Some(until), Some(reset)) = (lane.active_until(), accepted) {
                prop_assert_eq!(until, reset.plus_millis(60_000));
            }
            if lane.is_active() {
                prop_assert!(now < accepted.map_or(now, |r| r.plus_millis(60_000)));
            }
        }
    }
}
