//! The engine owns the verdict (issue 9, SPEC §4.2/4.5/4.7/4.8) end to end: real
//! gateway, real SQLite, fake upstreams on loopback, and a manual clock that the
//! tests advance instead of sleeping. Server-side failures cool the connection, a
//! 404 fails over and locks, quota wording sets the wait, operator rules apply to a
//! 400, streams are judged by their events, and a token endpoint that cannot be
//! reached is not an auth failure.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::{Value, json};
use switchyard_gateway::clock::ManualClock;
use switchyard_testkit::{FakeUpstream, Reply, wire};
use switchyard_tests::{TestGateway, client_key_toml, text};
use switchyard_types::UnixMillis;

const NOW: i64 = 1_900_000_000_000;

fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new(UnixMillis(NOW)))
}

fn two_keys(a: &str, b: &str) -> String {
    switchyard_tests::two_anthropic_keys(a, b)
}

fn request(model: &str, stream: bool) -> Value {
    json!({"model": model, "max_tokens": 5, "stream": stream, "messages": [{"role": "user", "content": "hi"}]})
}

async fn start(config: &str) -> (TestGateway, Arc<ManualClock>) {
    let clock = clock();
    let c = clock.clone();
    (TestGateway::start_with(config, move |cfg| cfg.clock = c).await, clock)
}

/// A port nothing listens on.
async fn refused_url() -> String {
    switchyard_tests::refused_port().await.1
}

/// Sends `n` requests and asserts each was served by key-b without touching key-a.
async fn served_by_b_only(gw: &TestGateway, a_calls: impl Fn() -> usize, n: usize) {
    let before = a_calls();
    for _ in 0..n {
        let response = gw.post("/v1/messages", &request("claude-sonnet-4-6", false)).await;
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["x-switchyard-connection"], "key-b");
    }
    assert_eq!(a_calls(), before, "key-a was tried while cooling");
}

fn ok_b() -> Reply {
    Reply::json(200, wire::anthropic_message("claude-sonnet-4-6", "from b"))
}

#[tokio::test]
async fn a_503_cools_the_connection_and_the_next_requests_go_to_b() {
    let a = FakeUpstream::start(Reply::json(503, wire::anthropic_error("api_error", "down"))).await;
    let b = FakeUpstream::start(ok_b()).await;
    let (gw, clock) = start(&two_keys(&a.url(), &b.url())).await;
    let response = gw.post("/v1/messages", &request("claude-sonnet-4-6", false)).await;
    assert_eq!(response.status(), 200, "the 503 failed over invisibly");
    served_by_b_only(&gw, || a.calls(), 5).await;
    let entry = gw.cooldown_of("key-a").await;
    assert_eq!(entry["status"], "unavailable", "{entry}");
    assert_eq!(entry["lastErrorKind"], "server_error", "{entry}");
    assert_eq!(
        (entry["remainingMs"].as_u64(), entry["backoffLevel"].as_u64()),
        (Some(3_000), Some(1)),
        "{entry}"
    );
    // Back in rotation once the cooldown ends; still dead, so the backoff doubles.
    clock.advance_ms(3_000);
    assert_eq!(gw.post("/v1/messages", &request("claude-sonnet-4-6", false)).await.status(), 200);
    assert_eq!(a.calls(), 2);
    let entry = gw.cooldown_of("key-a").await;
    assert_eq!(
        (entry["remainingMs"].as_u64(), entry["backoffLevel"].as_u64()),
        (Some(6_000), Some(2)),
        "{entry}"
    );
}

#[tokio::test]
async fn a_refused_port_cools_the_connection() {
    let b = FakeUpstream::start(ok_b()).await;
    let (gw, _clock) = start(&two_keys(&refused_url().await, &b.url())).await;
    assert_eq!(gw.post("/v1/messages", &request("claude-sonnet-4-6", false)).await.status(), 200);
    let entry = gw.cooldown_of("key-a").await;
    assert_eq!(
        (entry["status"].as_str(), entry["lastErrorKind"].as_str()),
        (Some("unavailable"), Some("unreachable")),
        "{entry}"
    );
    assert_eq!(entry["remainingMs"].as_u64(), Some(3_000), "{entry}");
    served_by_b_only(&gw, || 0, 3).await;
    assert_eq!(b.calls(), 4);
}

#[tokio::test]
async fn silence_before_the_first_byte_fails_over_within_the_readiness_budget_and_cools() {
    let a = FakeUpstream::start(Reply::Silent).await;
    let b = FakeUpstream::start(Reply::sse(wire::anthropic_sse("claude-sonnet-4-6", "from b"))).await;
    let (gw, clock) = start(&two_keys(&a.url(), &b.url())).await;
    let pending = gw.post_in_background("/v1/messages", &request("claude-sonnet-4-6", true));
    // Real-time poll for the request to cross loopback to the fake (not a timer wait).
    assert!(a.wait_until(Duration::from_secs(5), |f| f.calls() == 1).await);
    clock.advance_ms(59_999);
    assert_eq!(b.calls(), 0, "the readiness budget (60 s) has not run out");
    clock.advance_ms(1);
    let response = pending.await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["x-switchyard-connection"], "key-b");
    let body = text(response).await;
    assert!(body.contains("from b") && !body.contains("error"), "{body}");
    let entry = gw.cooldown_of("key-a").await;
    assert_eq!(
        (entry["status"].as_str(), entry["lastErrorKind"].as_str()),
        (Some("unavailable"), Some("timeout")),
        "{entry}"
    );
}

// settings-test: /streamRecovery/readinessBudgetMs
#[tokio::test]
async fn the_readiness_budget_setting_sets_when_a_silent_stream_fails_over() {
    let a = FakeUpstream::start(Reply::Silent).await;
    let b = FakeUpstream::start(Reply::sse(wire::anthropic_sse("claude-sonnet-4-6", "from b"))).await;
    let (gw, clock) = start(&two_keys(&a.url(), &b.url())).await;
    gw.patch_settings(&json!({"streamRecovery": {"readinessBudgetMs": 5000}})).await;
    let pending = gw.post_in_background("/v1/messages", &request("claude-sonnet-4-6", true));
    assert!(a.wait_until(Duration::from_secs(5), |f| f.calls() == 1).await);
    clock.advance_ms(4_999);
    assert!(!b.wait_until(Duration::from_millis(100), |f| f.calls() > 0).await, "failed over before 5 s");
    clock.advance_ms(1);
    let response = pending.await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(response.headers()["x-switchyard-connection"], "key-b");
    assert!(text(response).await.contains("from b"));
}

// settings-test: /streamRecovery/attemptDeadlineMs
#[tokio::test]
async fn the_attempt_deadline_setting_bounds_a_plain_answer_that_never_comes() {
    let a = FakeUpstream::start(Reply::Silent).await;
    let b = FakeUpstream::start(ok_b()).await;
    let (gw, clock) = start(&two_keys(&a.url(), &b.url())).await;
    gw.patch_settings(&json!({"streamRecovery": {"attemptDeadlineMs": 20000}})).await;
    let pending = gw.post_in_background("/v1/messages", &request("claude-sonnet-4-6", false));
    assert!(a.wait_until(Duration::from_secs(5), |f| f.calls() == 1).await);
    clock.advance_ms(19_999);
    assert!(!b.wait_until(Duration::from_millis(100), |f| f.calls() > 0).await, "gave up before 20 s");
    clock.advance_ms(1);
    let response = pending.await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["x-switchyard-connection"], "key-b");
    assert_eq!(gw.cooldown_of("key-a").await["lastErrorKind"], "timeout");
}

#[tokio::test]
async fn a_404_fails_over_locks_that_model_on_that_connection_and_spares_the_others() {
    let a =
        FakeUpstream::start(Reply::json(200, wire::anthropic_message("claude-haiku-4-5", "from a"))).await;
    a.push(Reply::json(404, wire::anthropic_error("not_found_error", "model: claude-opus-4-1")));
    let b = FakeUpstream::start(ok_b()).await;
    let (gw, _clock) = start(&two_keys(&a.url(), &b.url())).await;
    gw.patch_settings(&json!({"modelLockout": {"enabled": true}})).await;
    let response = gw.post("/v1/messages", &request("claude-opus-4-1", false)).await;
    assert_eq!(response.status(), 200, "the same request is served by the next target");
    assert_eq!(response.headers()["x-switchyard-connection"], "key-b");
    let lockouts = gw.mgmt_json("/api/resilience/model-cooldowns").await;
    let listed = lockouts.to_string();
    assert!(listed.contains("claude-opus-4-1") && listed.contains("key-a"), "{lockouts}");
    // X stays off key-a; Y is still served by key-a.
    let response = gw.post("/v1/messages", &request("claude-opus-4-1", false)).await;
    assert_eq!(response.headers()["x-switchyard-connection"], "key-b");
    assert_eq!(a.calls(), 1);
    let response = gw.post("/v1/messages", &request("claude-haiku-4-5", false)).await;
    assert_eq!(response.headers()["x-switchyard-connection"], "key-a");
    assert_eq!(a.calls(), 2);
}

#[tokio::test]
async fn a_404_everywhere_reaches_the_client_as_model_not_found() {
    let a = FakeUpstream::start(Reply::json(404, wire::anthropic_error("not_found_error", "no such model")))
        .await;
    let b = FakeUpstream::start(Reply::json(404, wire::anthropic_error("not_found_error", "no such model")))
        .await;
    let (gw, _clock) = start(&two_keys(&a.url(), &b.url())).await;
    let response = gw.post("/v1/messages", &request("claude-nope-1", false)).await;
    assert_eq!(response.status(), 404);
    assert_eq!(response.headers()["x-switchyard-error"], "model_not_found");
    assert_eq!((a.calls(), b.calls()), (1, 1));
}

fn glm_config(a: &str, b: &str) -> String {
    format!(
        r#"{keys}
[[connections]]
id = "glm-a"
provider = "glm"
api_format = "anthropic"
api_key = "g-a"
base_url = "{a}"
priority = 1
models = ["glm-5", "glm-4.6"]
provider_specific = {{ quotaFamilies = {{ "glm-" = "coding-plan" }} }}

[[connections]]
id = "glm-b"
provider = "glm"
api_format = "anthropic"
api_key = "g-b"
base_url = "{b}"
priority = 2
models = ["glm-5", "glm-4.6"]
"#,
        keys = client_key_toml(),
    )
}

#[tokio::test]
async fn a_quota_429_on_one_model_locks_its_family_on_that_connection() {
    let a = FakeUpstream::start(Reply::json(200, wire::anthropic_message("glm-4.6", "from a"))).await;
    a.push(
        Reply::json(429, json!({"error": {"message": "quota exceeded for your coding plan"}}))
            .with_header("retry-after", "600"),
    );
    let b = FakeUpstream::start(Reply::json(200, wire::anthropic_message("glm", "from b"))).await;
    let (gw, _clock) = start(&glm_config(&a.url(), &b.url())).await;
    gw.patch_settings(&json!({"modelLockout": {"enabled": true}})).await;
    let response = gw.post("/v1/messages", &request("glm/glm-5", false)).await;
    assert_eq!(response.headers()["x-switchyard-connection"], "glm-b");
    // The sibling model shares the plan's quota: it does not go to glm-a either.
    let response = gw.post("/v1/messages", &request("glm/glm-4.6", false)).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["x-switchyard-connection"], "glm-b");
    assert_eq!(a.calls(), 1);
}

#[tokio::test]
async fn an_operator_rule_on_a_400_with_a_text_marker_cools_and_fails_over() {
    let a =
        FakeUpstream::start(Reply::json(400, json!({"error": {"message": "Your Plan Limit was hit"}}))).await;
    let b = FakeUpstream::start(ok_b()).await;
    let (gw, _clock) = start(&two_keys(&a.url(), &b.url())).await;
    // Without a rule the 400 describes the request and is relayed as-is.
    let response = gw.post("/v1/messages", &request("claude-sonnet-4-6", false)).await;
    assert_eq!(response.status(), 400);
    assert_eq!(b.calls(), 0);
    gw.patch_settings(
        &json!({"providerErrorRules": [{"provider": "anthropic", "status": 400, "match": "plan limit", "scope": "connection", "cooldownMs": 90000}]}),
    )
    .await;
    let response = gw.post("/v1/messages", &request("claude-sonnet-4-6", false)).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["x-switchyard-connection"], "key-b");
    let entry = gw.cooldown_of("key-a").await;
    assert_eq!(
        (entry["status"].as_str(), entry["remainingMs"].as_u64()),
        (Some("unavailable"), Some(90_000)),
        "{entry}"
    );
}

#[tokio::test]
async fn a_quota_body_without_hints_cools_for_the_reference_duration() {
    let a = FakeUpstream::start(Reply::json(
        429,
        json!({"error": {"type": "rate_limit_error", "message": "usage limit reached"}}),
    ))
    .await;
    let b = FakeUpstream::start(ok_b()).await;
    let (gw, _clock) = start(&two_keys(&a.url(), &b.url())).await;
    assert_eq!(gw.post("/v1/messages", &request("claude-sonnet-4-6", false)).await.status(), 200);
    let entry = gw.cooldown_of("key-a").await;
    assert_eq!(
        (entry["lastErrorKind"].as_str(), entry["remainingMs"].as_u64()),
        (Some("quota_exhausted"), Some(3_600_000)),
        "{entry}"
    );
}

#[tokio::test]
async fn a_retry_after_date_reaches_the_client_in_seconds() {
    let at = std::time::UNIX_EPOCH + Duration::from_millis(u64::try_from(NOW).unwrap_or(0) + 120_000);
    let date = httpdate::fmt_http_date(at);
    let a = FakeUpstream::start(
        Reply::json(429, wire::anthropic_error("rate_limit_error", "slow down"))
            .with_header("retry-after", &date),
    )
    .await;
    let config = two_keys(&a.url(), &a.url()).replace("id = \"key-b\"", "id = \"key-b\"\nenabled = false");
    let (gw, _clock) = start(&config).await;
    let response = gw.post("/v1/messages", &request("claude-sonnet-4-6", false)).await;
    assert_eq!(response.status(), 429);
    assert_eq!(response.headers()["retry-after"], "120");
}

/// Reads the next chunk of a streamed response as text.
async fn next_chunk(
    stream: &mut (impl futures_util::Stream<Item = reqwest::Result<bytes::Bytes>> + Unpin),
) -> Option<String> {
    match tokio::time::timeout(Duration::from_secs(5), stream.next()).await {
        Ok(Some(Ok(b))) => Some(String::from_utf8_lossy(&b).into_owned()),
        Ok(_) => None,
        Err(_) => panic!("no chunk within 5 s of real time"),
    }
}

const START: &str =
    "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"content\":[]}}\n\n";
const PING: &str = "event: ping\ndata: {\"type\": \"ping\"}\n\n";
const THINKING: &str = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"\"}}\n\n";

#[tokio::test]
async fn spaced_ping_frames_are_not_progress_and_the_stream_stalls_within_its_budget() {
    let (reply, feed) = Reply::live();
    let a = FakeUpstream::start(reply).await;
    let (gw, clock) = start(&two_keys(&a.url(), &a.url())).await;
    // The gateway commits (sends headers) at the first model event.
    assert!(feed.send(START));
    let response = gw.post("/v1/messages", &request("claude-sonnet-4-6", true)).await;
    assert_eq!(response.status(), 200);
    let mut body = response.bytes_stream();
    assert!(next_chunk(&mut body).await.is_some_and(|c| c.contains("message_start")));
    for _ in 0..5 {
        clock.advance_ms(20_000);
        assert!(feed.send(PING));
        assert!(next_chunk(&mut body).await.is_some_and(|c| c.contains("ping")));
    }
    // 100 s of pings only: the stall budget (120 s) counts from message_start.
    clock.advance_ms(20_000);
    let end = next_chunk(&mut body).await.unwrap_or_default();
    assert!(end.contains("stall budget"), "{end}");
    let entry = gw.cooldown_of("key-a").await;
    assert_eq!(entry["lastErrorKind"], "stream_stall", "{entry}");
}

#[tokio::test]
async fn thinking_deltas_keep_a_stream_alive() {
    let (reply, feed) = Reply::live();
    let a = FakeUpstream::start(reply).await;
    let (gw, clock) = start(&two_keys(&a.url(), &a.url())).await;
    assert!(feed.send(START));
    let response = gw.post("/v1/messages", &request("claude-sonnet-4-6", true)).await;
    let mut body = response.bytes_stream();
    assert!(next_chunk(&mut body).await.is_some());
    for _ in 0..4 {
        clock.advance_ms(100_000);
        assert!(feed.send(THINKING));
        let chunk = next_chunk(&mut body).await.unwrap_or_default();
        assert!(chunk.contains("thinking_delta"), "{chunk}");
    }
    assert!(feed.send("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"));
    drop(feed);
    let mut rest = String::new();
    while let Some(c) = next_chunk(&mut body).await {
        rest.push_str(&c);
    }
    assert!(rest.contains("message_stop") && !rest.contains("error"), "{rest}");
}

#[tokio::test]
async fn a_token_endpoint_that_cannot_be_reached_is_not_an_auth_failure() {
    let b = FakeUpstream::start(ok_b()).await;
    let token_url = refused_url().await;
    let config = format!(
        r#"{keys}
[[connections]]
id = "claude-a"
provider = "anthropic"
auth = "oauth"
access_token = "old"
refresh_token = "refresh"
expires_at = {expired}
base_url = "{b}"
priority = 1
provider_specific = {{ oauthTokenUrl = "{token_url}/v1/oauth/token" }}

[[connections]]
id = "key-b"
provider = "anthropic"
api_key = "sk-b"
base_url = "{b}"
priority = 2
"#,
        keys = client_key_toml(),
        expired = NOW - 1_000,
        b = b.url(),
    );
    let (gw, clock) = start(&config).await;
    for _ in 0..5 {
        let response = gw.post("/v1/messages", &request("claude-sonnet-4-6", false)).await;
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["x-switchyard-connection"], "key-b");
        clock.advance_ms(3_600_000);
    }
    let entry = gw.cooldown_of("claude-a").await;
    assert_ne!(entry["status"], "expired", "{entry}");
    assert_eq!(entry["lastErrorKind"], "unreachable", "{entry}");
    assert!(
        b.requests().iter().all(|r| r.header("authorization") != Some("Bearer old")),
        "an expired token was sent"
    );
}
