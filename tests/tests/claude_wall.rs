//! The Claude usage wall end to end (issue 4, scenarios 1, 2 and 5): a scripted fake
//! Anthropic upstream, a manual clock, and the exact headers the upstream received.

use std::sync::Arc;

use serde_json::{Value, json};
use switchyard_gateway::clock::{Clock, ManualClock};
use switchyard_gateway::sleeper::ManualSleeper;
use switchyard_testkit::{FakeUpstream, Reply, wire};
use switchyard_tests::{TestGateway, json as body_json};
use switchyard_types::UnixMillis;

const NOW: i64 = 1_900_000_000_000;
const RESET_S: i64 = NOW / 1000 + 3_600;

fn config(a: &FakeUpstream, b: &FakeUpstream, options: &str) -> String {
    switchyard_tests::claude_account_and_key(&a.url(), &b.url(), options)
}

fn wall_429() -> Reply {
    Reply::json(429, wire::anthropic_error("rate_limit_error", "usage limit reached"))
        .with_header("anthropic-ratelimit-unified-status", "rejected")
        .with_header("anthropic-ratelimit-unified-slow-offer", "treatment")
        .with_header("anthropic-ratelimit-unified-reset", &RESET_S.to_string())
}

fn ok() -> Reply {
    Reply::json(200, wire::anthropic_message("claude-sonnet-4-6", "ok"))
        .with_header("anthropic-ratelimit-unified-slow-status", "active")
}

fn request() -> Value {
    json!({"model": "claude-sonnet-4-6", "max_tokens": 5, "messages": []})
}

async fn start(config: &str) -> (TestGateway, Arc<ManualClock>) {
    let (gw, clock, _) = start_with_sleeper(config).await;
    (gw, clock)
}

/// A gateway whose deliberate waits advance the manual clock instead of sleeping.
async fn start_with_sleeper(config: &str) -> (TestGateway, Arc<ManualClock>, ManualSleeper) {
    let clock = Arc::new(ManualClock::new(UnixMillis(NOW)));
    let sleeper = ManualSleeper::new(clock.clone());
    let (c, s) = (clock.clone(), sleeper.clone());
    let gw = TestGateway::start_with(config, move |cfg| {
        cfg.clock = c;
        cfg.sleeper = Some(Arc::new(s));
    })
    .await;
    (gw, clock, sleeper)
}

fn slot_busy(retry_after_s: u32) -> Reply {
    Reply::json(429, wire::anthropic_error("rate_limit_error", "slot busy"))
        .with_header("anthropic-ratelimit-unified-slow-status", "slot_busy")
        .with_header("anthropic-ratelimit-unified-slow-retry-after", &retry_after_s.to_string())
}

fn slow_headers(up: &FakeUpstream) -> Vec<Option<String>> {
    up.requests()
        .iter()
        .filter(|r| r.path == "/v1/messages")
        .map(|r| r.header("anthropic-usage-limit").map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn the_wall_429_moves_the_connection_into_the_slow_lane_until_reset_plus_60s() {
    let a = FakeUpstream::start(ok()).await;
    a.push(wall_429());
    let mut b = FakeUpstream::start(Reply::json(200, wire::anthropic_message("m", "b"))).await;
    b.expect_calls(0);
    let (gw, clock) = start(&config(&a, &b, "lowPriorityMode = true")).await;

    let response = gw.post("/v1/messages", &request()).await;
    assert_eq!(response.status(), 200);
    assert_eq!(body_json(response).await["content"][0]["text"], "ok");
    // Nothing extra before the first wall 429; the retry on the same account is slow.
    assert_eq!(slow_headers(&a), vec![None, Some("slow".to_owned())]);
    let state = gw.cooldown_of("claude-a").await;
    assert_eq!(state["status"], "active", "the caught wall 429 must not cool the connection: {state}");
    // The lane is visible in the providers and health APIs.
    let provider = gw.mgmt_json("/api/providers/claude-a").await;
    assert_eq!(provider["claudeWall"]["laneActiveUntil"], RESET_S * 1000 + 60_000, "{provider}");
    assert_eq!(gw.mgmt_json("/api/providers/claude-b").await["claudeWall"], Value::Null);
    let health = gw.mgmt_json("/api/monitoring/health").await;
    assert_eq!(health["claudeAccounts"][0]["connection"], "claude-a", "{health}");

    clock.advance_ms(30 * 60 * 1000);
    assert_eq!(gw.post("/v1/messages", &request()).await.status(), 200);
    assert_eq!(slow_headers(&a).last().cloned().flatten().as_deref(), Some("slow"));

    // Past the announced reset + 60 s the lane is over.
    clock.advance_ms(31 * 60 * 1000 + 1_000);
    assert_eq!(gw.post("/v1/messages", &request()).await.status(), 200);
    assert_eq!(slow_headers(&a).last().cloned().flatten(), None);
}

#[tokio::test]
async fn a_429_without_unified_headers_takes_the_ordinary_cooldown_path() {
    let a =
        FakeUpstream::start(Reply::json(429, wire::anthropic_error("rate_limit_error", "slow down"))).await;
    let b = FakeUpstream::start(Reply::json(200, wire::anthropic_message("m", "b"))).await;
    let (gw, _clock) = start(&config(&a, &b, "lowPriorityMode = true")).await;
    let response = gw.post("/v1/messages", &request()).await;
    assert_eq!(response.status(), 200);
    assert_eq!(body_json(response).await["content"][0]["text"], "b");
    assert_eq!(slow_headers(&a), vec![None]);
    let state = gw.cooldown_of("claude-a").await;
    assert_eq!(state["status"], "unavailable", "{state}");
}

#[tokio::test]
async fn with_auto_limit_reset_the_reset_runs_first_and_the_retry_is_full_speed() {
    let a = FakeUpstream::start(ok()).await;
    a.push(wall_429());
    a.push(Reply::json(
        200,
        json!({"juniper_tide": {"eligible": true, "arm": "reset", "available": true, "resets_per_week": 1}}),
    ));
    a.push(Reply::json(200, json!({"result": "reset"})));
    let mut b = FakeUpstream::start(Reply::json(200, wire::anthropic_message("m", "b"))).await;
    b.expect_calls(0);
    let options = "lowPriorityMode = true\nautoLimitReset = true\norganizationUUID = \"org-1\"";
    let (gw, _clock) = start(&config(&a, &b, options)).await;

    let response = gw.post("/v1/messages", &request()).await;
    assert_eq!(response.status(), 200);
    let seen: Vec<(String, String)> =
        a.requests().iter().map(|r| (r.method.clone(), r.path.clone())).collect();
    assert_eq!(
        seen,
        vec![
            ("POST".to_owned(), "/v1/messages".to_owned()),
            ("GET".to_owned(), "/api/oauth/usage".to_owned()),
            ("POST".to_owned(), "/api/organizations/org-1/reset_rate_limits".to_owned()),
            ("POST".to_owned(), "/v1/messages".to_owned()),
        ]
    );
    let requests = a.requests();
    assert_eq!(requests[1].query.as_deref(), Some("at_wall=1&skip_spend=1"));
    assert_eq!(requests[1].header("authorization"), Some("Bearer oat-a"));
    assert_eq!(requests[1].header("anthropic-beta"), Some("oauth-2025-04-20"));
    assert_eq!(requests[2].json(), json!({"program": "juniper_tide"}));
    // Reset granted: the retry goes at full speed, without the slow header.
    assert_eq!(slow_headers(&a), vec![None, None]);
}

#[tokio::test]
async fn a_weekly_limit_ends_the_lane_and_takes_the_cooldown_path() {
    let a = FakeUpstream::start(ok()).await;
    a.push(wall_429());
    let b = FakeUpstream::start(Reply::json(200, wire::anthropic_message("m", "from b"))).await;
    let (gw, clock) = start(&config(&a, &b, "lowPriorityMode = true")).await;
    assert_eq!(gw.post("/v1/messages", &request()).await.status(), 200);
    assert_eq!(slow_headers(&a), vec![None, Some("slow".to_owned())]);

    // In the lane, the server says the weekly limit is reached: the lane ends and the
    // 429 takes the ordinary path (cooldown, failover to the next account).
    clock.advance_ms(60_000);
    a.set_default(
        Reply::json(429, wire::anthropic_error("rate_limit_error", "weekly limit"))
            .with_header("anthropic-ratelimit-unified-status", "rejected")
            .with_header("anthropic-ratelimit-unified-slow-status", "weekly_limit"),
    );
    let response = gw.post("/v1/messages", &request()).await;
    assert_eq!(response.status(), 200);
    assert_eq!(body_json(response).await["content"][0]["text"], "from b");
    let provider = gw.mgmt_json("/api/providers/claude-a").await;
    assert_eq!(provider["claudeWall"]["lastLaneEnd"], "weekly", "{provider}");
    assert_eq!(provider["claudeWall"]["lastSlowStatus"], "weekly_limit", "{provider}");
    assert_eq!(provider["claudeWall"]["laneActiveUntil"], Value::Null, "{provider}");
    let state = gw.cooldown_of("claude-a").await;
    assert_eq!(state["status"], "unavailable", "{state}");
}

#[tokio::test]
async fn a_reset_not_on_offer_is_memoized_until_its_announced_date() {
    let a = FakeUpstream::start(ok()).await;
    let b = FakeUpstream::start(Reply::json(200, wire::anthropic_message("m", "from b"))).await;
    let next = "2030-01-01T00:00:00Z";
    a.push(wall_429());
    a.push(Reply::json(200, json!({"juniper_tide": {"eligible": true, "arm": "reset", "available": false, "next_available_at": next}})));
    let options = "autoLimitReset = true\norganizationUUID = \"org-1\"";
    let (gw, clock) = start(&config(&a, &b, options)).await;

    // Not on offer and no lane: the wall 429 takes the ordinary path.
    let response = gw.post("/v1/messages", &request()).await;
    assert_eq!(body_json(response).await["content"][0]["text"], "from b");
    let provider = gw.mgmt_json("/api/providers/claude-a").await;
    assert!(provider["claudeWall"]["nextResetAvailableAt"].is_number(), "{provider}");
    let usage_calls =
        |up: &FakeUpstream| up.requests().iter().filter(|r| r.path == "/api/oauth/usage").count();
    assert_eq!(usage_calls(&a), 1);

    // Before the memoized date no usage call and no POST happen on the next wall.
    clock.advance_ms(3_600_000);
    gw.clear_cooldowns().await;
    a.push(wall_429());
    let _ = gw.post("/v1/messages", &request()).await;
    assert_eq!(usage_calls(&a), 1, "the memo must prevent a second usage call");
    assert!(a.requests().iter().all(|r| !r.path.ends_with("reset_rate_limits")));
}

#[tokio::test]
async fn slot_busy_waits_the_hinted_time_once_then_succeeds() {
    let a = FakeUpstream::start(ok()).await;
    a.push(wall_429());
    a.push(slot_busy(30));
    let mut b = FakeUpstream::start(Reply::json(200, wire::anthropic_message("m", "b"))).await;
    b.expect_calls(0);
    let (gw, _clock, sleeper) = start_with_sleeper(&config(&a, &b, "lowPriorityMode = true")).await;
    let response = gw.post("/v1/messages", &request()).await;
    assert_eq!(response.status(), 200);
    assert_eq!(slow_headers(&a), vec![None, Some("slow".to_owned()), Some("slow".to_owned())]);
    let waits = sleeper.waits();
    assert_eq!(waits.len(), 1, "{waits:?}");
    let ms = waits[0].as_millis();
    assert!((21_000..=39_000).contains(&ms), "30 s ± 30 % jitter, got {ms} ms");
}

#[tokio::test]
async fn waits_are_bounded_by_slow_max_wait_then_the_lane_ends_and_is_blocked_for_10_minutes() {
    let a = FakeUpstream::start(ok()).await;
    a.push(wall_429().with_header("anthropic-ratelimit-unified-slow-max-wait", "60"));
    // The first busy answer is waited out up to the max wait (60 s, not the hinted
    // 600 s); a second one finds no wait left: the lane ends `max_wait`.
    a.push(slot_busy(600));
    a.push(slot_busy(600));
    let b = FakeUpstream::start(Reply::json(200, wire::anthropic_message("m", "from b"))).await;
    let (gw, clock, sleeper) = start_with_sleeper(&config(&a, &b, "lowPriorityMode = true")).await;
    let response = gw.post("/v1/messages", &request()).await;
    let text = body_json(response).await["content"][0]["text"].clone();
    let provider = gw.mgmt_json("/api/providers/claude-a").await;
    assert_eq!(text, "from b", "waits {:?}, {provider}", sleeper.waits());
    assert_eq!(sleeper.waits(), vec![std::time::Duration::from_secs(60)]);
    let provider = gw.mgmt_json("/api/providers/claude-a").await;
    assert_eq!(provider["claudeWall"]["lastLaneEnd"], "max_wait", "{provider}");
    let cool_off = provider["claudeWall"]["coolOffUntil"].as_i64().unwrap_or_default();
    assert_eq!(cool_off - clock.now_wall().0, 600_000, "{provider}");

    // Within the cool-off a new wall 429 is not accepted: ordinary path, no slow retry.
    clock.advance_ms(5 * 60 * 1000);
    gw.clear_cooldowns().await;
    a.push(wall_429());
    let before = slow_headers(&a).len();
    let response = gw.post("/v1/messages", &request()).await;
    assert_eq!(body_json(response).await["content"][0]["text"], "from b");
    assert_eq!(slow_headers(&a)[before..], [None]);
}

#[tokio::test]
async fn ineligible_and_overage_in_use_end_the_lane_too() {
    for (status_header, overage, end) in
        [("ineligible", false, "ineligible"), ("ineligible", true, "extra_usage")]
    {
        let a = FakeUpstream::start(ok()).await;
        a.push(wall_429());
        let b = FakeUpstream::start(Reply::json(200, wire::anthropic_message("m", "from b"))).await;
        let (gw, clock) = start(&config(&a, &b, "lowPriorityMode = true")).await;
        assert_eq!(gw.post("/v1/messages", &request()).await.status(), 200);
        clock.advance_ms(60_000);
        let mut refusal = Reply::json(429, wire::anthropic_error("rate_limit_error", "no"))
            .with_header("anthropic-ratelimit-unified-status", "rejected")
            .with_header("anthropic-ratelimit-unified-slow-status", status_header);
        if overage {
            refusal = refusal.with_header("anthropic-ratelimit-unified-overage-in-use", "true");
        }
        a.set_default(refusal);
        let response = gw.post("/v1/messages", &request()).await;
        assert_eq!(body_json(response).await["content"][0]["text"], "from b");
        let provider = gw.mgmt_json("/api/providers/claude-a").await;
        assert_eq!(provider["claudeWall"]["lastLaneEnd"], end, "{provider}");
    }
}

#[tokio::test]
async fn already_used_memoizes_and_a_failing_usage_call_defers_15_minutes() {
    let a = FakeUpstream::start(ok()).await;
    let b = FakeUpstream::start(Reply::json(200, wire::anthropic_message("m", "from b"))).await;
    let options = "autoLimitReset = true\norganizationUUID = \"org-1\"";
    let (gw, clock) = start(&config(&a, &b, options)).await;
    let count =
        |up: &FakeUpstream, suffix: &str| up.requests().iter().filter(|r| r.path.ends_with(suffix)).count();
    let clear = || async {
        gw.clear_cooldowns().await;
    };

    // already_used: one usage call and one POST, then nothing until the memo lapses.
    a.push(wall_429());
    a.push(Reply::json(200, json!({"juniper_tide": {"eligible": true, "arm": "reset", "available": true}})));
    a.push(Reply::json(200, json!({"result": "already_used"})));
    let _ = gw.post("/v1/messages", &request()).await;
    assert_eq!((count(&a, "/api/oauth/usage"), count(&a, "reset_rate_limits")), (1, 1));
    clock.advance_ms(24 * 3_600_000);
    clear().await;
    a.push(wall_429());
    let _ = gw.post("/v1/messages", &request()).await;
    assert_eq!(
        (count(&a, "/api/oauth/usage"), count(&a, "reset_rate_limits")),
        (1, 1),
        "no second POST before next_available_at"
    );

    // A fresh account whose usage call fails: the next try waits 15 minutes.
    let c = FakeUpstream::start(ok()).await;
    let (gw2, clock2) = start(&config(&c, &b, options)).await;
    c.push(wall_429());
    c.push(Reply::json(500, json!({"error": "boom"})));
    let _ = gw2.post("/v1/messages", &request()).await;
    assert_eq!(count(&c, "/api/oauth/usage"), 1);
    clock2.advance_ms(14 * 60 * 1000);
    gw2.clear_cooldowns().await;
    c.push(wall_429());
    let _ = gw2.post("/v1/messages", &request()).await;
    assert_eq!(count(&c, "/api/oauth/usage"), 1, "within 15 minutes no new usage call");
    clock2.advance_ms(2 * 60 * 1000);
    gw2.clear_cooldowns().await;
    c.push(wall_429());
    c.push(Reply::json(500, json!({"error": "boom"})));
    let _ = gw2.post("/v1/messages", &request()).await;
    assert_eq!(count(&c, "/api/oauth/usage"), 2, "after 15 minutes the usage call is tried again");
}
