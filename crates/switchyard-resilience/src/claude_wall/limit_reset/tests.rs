//! Named after facts §3.8 (`tests/unit/claude-limit-reset.test.ts`); the network calls
//! are the caller's, so these drive the pure steps and the memo.

use serde_json::json;

use super::*;

const NOW: UnixMillis = UnixMillis(1_800_000_000_000);
const DAY: i64 = 86_400_000;

fn iso(t: UnixMillis) -> String {
    // 1_800_000_000 s = 2027-01-15T08:00:00Z; offsets used here are whole days.
    let days = (t.0 - NOW.0) / DAY;
    format!("2027-01-{:02}T08:00:00Z", 15 + days)
}

fn offered(next: Option<UnixMillis>) -> JuniperTide {
    let doc = json!({"juniper_tide": {"eligible": true, "arm": "reset", "available": true,
        "next_available_at": next.map(iso)}});
    JuniperTide::from_usage(&doc).unwrap_or_else(|| panic!("block"))
}

#[test]
fn iso_helper_matches_the_parser() {
    assert_eq!(parse_rfc3339(&iso(NOW)), Some(NOW));
    assert_eq!(parse_rfc3339(&iso(NOW.plus_millis(3 * DAY))), Some(NOW.plus_millis(3 * DAY)));
}

#[test]
fn scenario_1_status_parser() {
    assert_eq!(JuniperTide::from_usage(&json!({})), None);
    assert_eq!(JuniperTide::from_usage(&json!({"juniper_tide": {"arm": "reset"}})), None);
    let full = json!({"juniper_tide": {"eligible": true, "ineligible_reason": "", "in_experiment": true,
        "arm": "reset", "available": true, "next_available_at": iso(NOW), "weekly_resets_at": iso(NOW),
        "resets_per_week": 2}});
    let t = JuniperTide::from_usage(&full).unwrap_or_else(|| panic!("block"));
    assert_eq!(
        t,
        JuniperTide {
            eligible: true,
            ineligible_reason: None,
            in_experiment: true,
            arm: Some(Arm::Reset),
            available: true,
            next_available_at: Some(NOW),
            weekly_resets_at: Some(NOW),
            resets_per_week: 2
        }
    );
    assert!(t.on_offer());
    let bogus = json!({"juniper_tide": {"eligible": true, "arm": "bogus"}});
    assert_eq!(JuniperTide::from_usage(&bogus).map(|t| (t.arm, t.resets_per_week)), Some((None, 1)));
    assert_eq!(JuniperTide::from_http(500, br#"{"juniper_tide":{"eligible":true}}"#), None);
    assert_eq!(JuniperTide::from_http(200, b"not json"), None);
}

#[test]
fn scenario_2_claim_parser() {
    let body = format!(r#"{{"result":"reset","next_available_at":"{}"}}"#, iso(NOW.plus_millis(7 * DAY)));
    let c = ClaimOutcome::from_http(200, body.as_bytes());
    assert_eq!(
        c,
        ClaimOutcome { result: ClaudeResetResult::Reset, next_available_at: Some(NOW.plus_millis(7 * DAY)) }
    );
    assert_eq!(ClaimOutcome::from_http(200, br#"{"result":"???"}"#).result, ClaudeResetResult::Unavailable);
    assert_eq!(ClaimOutcome::from_http(200, b"null").result, ClaudeResetResult::Unavailable);
    assert_eq!(ClaimOutcome::from_http(200, b"").result, ClaudeResetResult::Unavailable);
}

#[test]
fn scenario_3_claim_path_encodes_the_org() {
    assert_eq!(claim_path("org 1"), "/api/organizations/org%201/reset_rate_limits");
    assert_eq!(claim_path("5b1c-9e"), "/api/organizations/5b1c-9e/reset_rate_limits");
}

#[test]
fn scenario_4_available_then_memo_skip() {
    let mut r = ResetState::default();
    assert_eq!(r.admit(NOW), ResetAdmission::Go);
    let step = r.on_usage(Some(&offered(None)), Some("org-uuid-1"));
    assert_eq!(
        step,
        ResetStep::Claim { path: "/api/organizations/org-uuid-1/reset_rate_limits".into(), body: CLAIM_BODY }
    );
    assert_eq!(CLAIM_BODY, r#"{"program":"juniper_tide"}"#);
    let next = NOW.plus_millis(7 * DAY);
    r.record(ClaimOutcome { result: ClaudeResetResult::Reset, next_available_at: Some(next) }, NOW);
    assert_eq!(r.last_result, Some(ClaudeResetResult::Reset));
    assert_eq!(r.admit(NOW.plus_millis(61_000)), ResetAdmission::MemoSkip);
    assert_eq!(r.next_try_at, Some(next));
}

#[test]
fn scenario_5_not_offered_memoizes_next_available_at() {
    let mut r = ResetState::default();
    let next = NOW.plus_millis(3 * DAY);
    let t = JuniperTide { available: false, ..offered(Some(next)) };
    assert_eq!(r.admit(NOW), ResetAdmission::Go);
    let ResetStep::Done(outcome) = r.on_usage(Some(&t), Some("org")) else { panic!("no claim") };
    assert_eq!(outcome.result, ClaudeResetResult::NotOffered);
    r.record(outcome, NOW);
    assert_eq!(r.admit(next.plus_millis(-1)), ResetAdmission::MemoSkip);
    assert_eq!(r.admit(next), ResetAdmission::Go);
}

/// SPEC: `not_offered` without an announced date defaults to one week (facts: 15 min).
#[test]
fn not_offered_without_a_date_waits_a_week() {
    let mut r = ResetState::default();
    r.record(ClaimOutcome::of(ClaudeResetResult::NotOffered), NOW);
    assert_eq!(r.next_try_at, Some(NOW.plus_millis(7 * DAY)));
}

#[test]
fn scenario_6_control_arm_is_not_offered() {
    let t = JuniperTide { arm: Some(Arm::Control), ..offered(None) };
    let step = ResetState::default().on_usage(Some(&t), Some("org"));
    assert!(matches!(step, ResetStep::Done(ClaimOutcome { result: ClaudeResetResult::NotOffered, .. })));
}

#[test]
fn scenario_7_status_failure_defers_fifteen_minutes() {
    let mut r = ResetState::default();
    assert_eq!(r.admit(NOW), ResetAdmission::Go);
    let ResetStep::Done(outcome) = r.on_usage(None, Some("org")) else { panic!("no claim") };
    assert_eq!(outcome.result, ClaudeResetResult::NoStatus);
    r.record(outcome, NOW);
    assert_eq!(r.admit(NOW.plus_millis(900_000 - 1)), ResetAdmission::MemoSkip);
    assert_eq!(r.admit(NOW.plus_millis(900_000)), ResetAdmission::Go);
}

#[test]
fn scenario_8_already_used_holds_for_a_week() {
    let mut r = ResetState::default();
    r.record(ClaimOutcome::from_http(200, br#"{"result":"already_used"}"#), NOW);
    assert_eq!(r.last_result, Some(ClaudeResetResult::AlreadyUsed));
    assert_eq!(r.admit(NOW.plus_millis(6 * DAY)), ResetAdmission::MemoSkip);
    assert_eq!(r.admit(NOW.plus_millis(7 * DAY)), ResetAdmission::Go);
}

#[test]
fn scenario_9_claim_http_failures() {
    for (status, want) in [
        (401, ClaudeResetResult::AuthError),
        (403, ClaudeResetResult::AuthError),
        (429, ClaudeResetResult::RateLimited),
        (502, ClaudeResetResult::Error),
    ] {
        let c = ClaimOutcome::from_http(status, br#"{"result":"reset"}"#);
        assert_eq!(c.result, want);
        assert!(!c.granted());
        let mut r = ResetState::default();
        r.record(c, NOW);
        assert_eq!(r.next_try_at, Some(NOW.plus_millis(900_000)), "any failure defers 15 minutes");
    }
}

#[test]
fn scenario_10_one_attempt_in_flight() {
    let mut r = ResetState::default();
    assert_eq!(r.admit(NOW), ResetAdmission::Go);
    assert_eq!(r.admit(NOW.plus_millis(1_000)), ResetAdmission::InFlight);
    assert_eq!(r.admit(NOW.plus_millis(IN_FLIGHT_MS)), ResetAdmission::Go, "an abandoned attempt goes stale");
}

#[test]
fn scenario_11_recent_reset_for_siblings() {
    let mut r = ResetState::default();
    r.admit(NOW);
    r.record(ClaimOutcome::of(ClaudeResetResult::Reset), NOW);
    assert_eq!(r.admit(NOW.plus_millis(5_000)), ResetAdmission::RecentReset);
    assert_eq!(r.admit(NOW.plus_millis(60_000)), ResetAdmission::MemoSkip);
}

#[test]
fn scenario_12_not_limited_is_granted_and_org_is_discovered() {
    let c = ClaimOutcome::from_http(200, br#"{"result":"not_limited"}"#);
    assert!(c.granted());
    assert_eq!(discover_org_uuid(&json!({"organization_uuid": "org-9"})).as_deref(), Some("org-9"));
    assert_eq!(discover_org_uuid(&json!({"organization": {"uuid": "org-7"}})).as_deref(), Some("org-7"));
    assert_eq!(discover_org_uuid(&json!({"organization_uuid": ""})), None);
    let r = ResetState::default();
    assert_eq!(
        r.on_usage(Some(&offered(None)), None),
        ResetStep::DiscoverOrganization { path: BOOTSTRAP_PATH }
    );
    assert!(matches!(
        r.claim_step(None),
        ResetStep::Done(ClaimOutcome { result: ClaudeResetResult::NoOrganization, .. })
    ));
}
