//! The façade's order at the wall: named after facts §3.8 (`claude-low-priority-mode`
//! handler scenarios and the executor scenarios that are pure logic).

use super::*;
use crate::claude_wall::limit_reset::CLAIM_BODY;
use switchyard_types::resilience::{ClaudeResetResult, ClaudeSlowStatus};

const NOW: UnixMillis = UnixMillis(1_800_000_000_000);
const RESET_S: i64 = 1_800_000_000 + 3_600;

fn wall_obs(claim: &str) -> Observation {
    let reset = RESET_S.to_string();
    let pairs = [
        ("anthropic-ratelimit-unified-status", "rejected"),
        ("anthropic-ratelimit-unified-reset", reset.as_str()),
        ("anthropic-ratelimit-unified-representative-claim", claim),
        ("anthropic-ratelimit-unified-slow-offer", "treatment"),
    ];
    Observation {
        status: 429,
        signals: WallSignals::parse(&pairs.as_slice(), NOW),
        sent_slow: false,
        remaining_budget_ms: None,
    }
}

fn opts(lane: bool, reset: bool) -> WallOptions {
    WallOptions {
        low_priority_mode: lane,
        auto_limit_reset: reset,
        organization_uuid: Some("org-uuid-1".into()),
    }
}

fn observe(w: &ClaudeWall, conn: &str, o: &WallOptions, obs: &Observation) -> WallDecision {
    w.observe(conn, o, obs, &mut WaitWindow::default(), NOW, &mut || 0.5)
}

const ACCEPTED: WallDecision = WallDecision::RetrySameConnection { delay_ms: 0, via: RetryVia::LaneAccepted };

#[test]
fn scenario_8_wall_with_lane_on_retries_at_once_with_the_header() {
    let w = ClaudeWall::new();
    assert!(!w.sends_slow("c1", NOW), "nothing extra before the first wall");
    assert_eq!(observe(&w, "c1", &opts(true, false), &wall_obs("five_hour")), ACCEPTED);
    assert!(w.sends_slow("c1", NOW));
    let until = UnixMillis(RESET_S * 1_000 + 60_000);
    assert_eq!(w.view("c1", NOW).lane_active_until, Some(until));
    assert!(w.sends_slow("c1", until.plus_millis(-1)));
    assert!(!w.sends_slow("c1", until), "the first request after reset + 60 s goes without it");
    assert_eq!(w.view("c1", until).last_lane_end, Some(ClaudeLaneEnd::Reset));
}

#[test]
fn scenario_9_both_options_off_take_the_cooldown_path() {
    let w = ClaudeWall::new();
    let d = observe(&w, "c1", &WallOptions::default(), &wall_obs("five_hour"));
    assert_eq!(d, WallDecision::TakeCooldownPath { why: CooldownWhy::NotAccepted(Refusal::Disabled) });
    assert!(!w.sends_slow("c1", NOW));
}

#[test]
fn scenario_10_a_429_without_unified_headers_is_not_the_wall() {
    let w = ClaudeWall::new();
    let pairs: &[(&str, &str)] = &[("retry-after", "3")];
    let plain = Observation {
        status: 429,
        signals: WallSignals::parse(&pairs, NOW),
        sent_slow: false,
        remaining_budget_ms: None,
    };
    let d = observe(&w, "c1", &opts(true, true), &plain);
    assert_eq!(d, WallDecision::TakeCooldownPath { why: CooldownWhy::NotTheWall });
    let ok = Observation { status: 200, ..plain };
    assert_eq!(observe(&w, "c1", &opts(true, true), &ok), WallDecision::Relay { lane_ended: None });
}

#[test]
fn scenario_11_both_on_reset_first_and_granted_means_full_speed() {
    let w = ClaudeWall::new();
    let o = opts(true, true);
    let obs = wall_obs("five_hour");
    assert_eq!(
        observe(&w, "c1", &o, &obs),
        WallDecision::RunLimitReset { usage_path: "/api/oauth/usage?at_wall=1&skip_spend=1" }
    );
    let doc = serde_json::json!({"juniper_tide": {"eligible": true, "arm": "reset", "available": true}});
    let usage = JuniperTide::from_usage(&doc);
    let step = w.reset_on_usage("c1", &o, usage.as_ref());
    assert_eq!(
        step,
        ResetStep::Claim { path: "/api/organizations/org-uuid-1/reset_rate_limits".into(), body: CLAIM_BODY }
    );
    let outcome = ClaimOutcome::from_http(200, br#"{"result":"reset"}"#);
    let d = w.finish_limit_reset("c1", &o, outcome, &obs, &mut WaitWindow::default(), NOW);
    assert_eq!(d, WallDecision::RetrySameConnection { delay_ms: 0, via: RetryVia::LimitReset });
    assert!(!w.sends_slow("c1", NOW), "full speed: no slow header");
    assert_eq!(w.view("c1", NOW).last_reset_result, Some(ClaudeResetResult::Reset));
    // A sibling within the minute is told "reset" without a call.
    assert_eq!(
        observe(&w, "c1", &o, &obs),
        WallDecision::RetrySameConnection { delay_ms: 0, via: RetryVia::LimitReset }
    );
}

#[test]
fn scenario_12_failed_reset_falls_back_to_the_lane() {
    let w = ClaudeWall::new();
    let o = opts(true, true);
    let obs = wall_obs("five_hour");
    assert!(matches!(observe(&w, "c1", &o, &obs), WallDecision::RunLimitReset { .. }));
    assert_eq!(
        observe(&w, "c1", &o, &obs),
        WallDecision::AwaitLimitReset { poll_ms: AWAIT_RESET_POLL_MS },
        "one attempt in flight"
    );
    let outcome = ClaimOutcome::from_http(200, br#"{"result":"already_used"}"#);
    assert_eq!(w.finish_limit_reset("c1", &o, outcome, &obs, &mut WaitWindow::default(), NOW), ACCEPTED);
    assert!(w.sends_slow("c1", NOW));
    let view = w.view("c1", NOW);
    assert_eq!(view.last_reset_result, Some(ClaudeResetResult::AlreadyUsed));
    assert_eq!(view.next_reset_available_at, Some(NOW.plus_millis(604_800_000)));
}

#[test]
fn memoized_reset_is_skipped_straight_to_the_lane() {
    let w = ClaudeWall::new();
    let o = opts(true, true);
    let obs = wall_obs("five_hour");
    observe(&w, "c1", &o, &obs);
    w.finish_limit_reset(
        "c1",
        &opts(false, true),
        ClaimOutcome::of(ClaudeResetResult::NoStatus),
        &obs,
        &mut WaitWindow::default(),
        NOW,
    );
    assert_eq!(observe(&w, "c1", &o, &obs), ACCEPTED, "no second usage call within 15 minutes");
}

#[test]
fn reset_only_without_grant_takes_the_cooldown_path() {
    let w = ClaudeWall::new();
    let o = opts(false, true);
    let obs = wall_obs("five_hour");
    observe(&w, "c1", &o, &obs);
    let d = w.finish_limit_reset(
        "c1",
        &o,
        ClaimOutcome::of(ClaudeResetResult::Error),
        &obs,
        &mut WaitWindow::default(),
        NOW,
    );
    assert_eq!(d, WallDecision::TakeCooldownPath { why: CooldownWhy::NotAccepted(Refusal::Disabled) });
}

#[test]
fn scenario_13_seven_day_wall_never_tries_a_reset() {
    let w = ClaudeWall::new();
    let d = observe(&w, "c1", &opts(false, true), &wall_obs("seven_day"));
    assert_eq!(d, WallDecision::TakeCooldownPath { why: CooldownWhy::NotAccepted(Refusal::Disabled) });
    assert_eq!(w.view("c1", NOW).last_reset_result, None);
}

#[test]
fn lane_ends_take_the_cooldown_path_and_success_ends_relay() {
    let w = ClaudeWall::new();
    let o = opts(true, false);
    observe(&w, "c1", &o, &wall_obs("five_hour"));
    let pairs: &[(&str, &str)] = &[("anthropic-ratelimit-unified-slow-status", "weekly_limit")];
    let weekly = Observation {
        status: 429,
        signals: WallSignals::parse(&pairs, NOW),
        sent_slow: true,
        remaining_budget_ms: None,
    };
    let d = observe(&w, "c1", &o, &weekly);
    assert_eq!(d, WallDecision::TakeCooldownPath { why: CooldownWhy::LaneEnded(ClaudeLaneEnd::Weekly) });
    assert!(!w.sends_slow("c1", NOW));
    observe(&w, "c1", &o, &wall_obs("five_hour"));
    let ok = Observation { status: 200, ..weekly };
    assert_eq!(observe(&w, "c1", &o, &ok), WallDecision::Relay { lane_ended: Some(ClaudeLaneEnd::Weekly) });
}

#[test]
fn slot_busy_through_the_facade_waits_within_the_request_budget() {
    let w = ClaudeWall::new();
    let o = opts(true, false);
    observe(&w, "c1", &o, &wall_obs("five_hour"));
    let pairs: &[(&str, &str)] = &[("anthropic-ratelimit-unified-slow-status", "slot_busy")];
    let busy = Observation {
        status: 429,
        signals: WallSignals::parse(&pairs, NOW),
        sent_slow: true,
        remaining_budget_ms: Some(600_000),
    };
    assert_eq!(
        observe(&w, "c1", &o, &busy),
        WallDecision::RetrySameConnection { delay_ms: 20_000, via: RetryVia::SlotBusy }
    );
    assert_eq!(w.view("c1", NOW).last_slow_status, Some(ClaudeSlowStatus::SlotBusy));
}

#[test]
fn scenario_28_state_is_per_connection() {
    let w = ClaudeWall::new();
    observe(&w, "c1", &opts(true, false), &wall_obs("five_hour"));
    assert!(w.sends_slow("c1", NOW));
    assert!(!w.sends_slow("c2", NOW));
    assert_eq!(w.view("c2", NOW), ClaudeWallView::default());
    assert_eq!(w.views(NOW).len(), 1);
    assert!(w.end_lane("c1", NOW));
    assert_eq!(w.view("c1", NOW).last_lane_end, Some(ClaudeLaneEnd::Operator));
    w.retain(&|id| id != "c1");
    assert!(w.views(NOW).is_empty());
}

#[test]
fn view_serializes_camel_case() {
    let v = ClaudeWallView { lane_active_until: Some(NOW), ..ClaudeWallView::default() };
    let s = serde_json::to_value(v).unwrap_or_default();
    assert_eq!(s["laneActiveUntil"], serde_json::json!(NOW.0));
    assert!(s.get("nextResetAvailableAt").is_some());
}
