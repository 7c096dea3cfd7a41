//! SPEC §2–3 failover: the next candidate is tried while nothing has reached the
//! client; once bytes are out, an upstream failure ends the stream with an error
//! event of the client's format and no retry; a departing client cancels the
//! upstream; every attempt is logged.

use std::sync::Arc;
use std::time::Duration;

use switchyard_gateway::clock::ManualClock;
use switchyard_types::UnixMillis;

use futures_util::StreamExt;
use serde_json::json;
use switchyard_testkit::{FakeUpstream, Reply, StreamEnd, wire};
use switchyard_tests::{TestGateway, client_key_toml, json as body_json, sse_data, text};

fn two_accounts(a: &FakeUpstream, b: &FakeUpstream) -> String {
    format!(
        r#"{keys}
[[connections]]
id = "claude-a"
provider = "anthropic"
auth = "oauth"
access_token = "oauth-token-a"
base_url = "{a}"
priority = 1

[[connections]]
id = "claude-b"
provider = "anthropic"
api_key = "sk-ant-b"
base_url = "{b}"
priority = 2
"#,
        keys = client_key_toml(),
        a = a.url(),
        b = b.url()
    )
}

fn request(stream: bool) -> serde_json::Value {
    json!({"model": "claude-sonnet-4-6", "max_tokens": 10, "stream": stream, "messages": [{"role": "user", "content": "hi"}]})
}

#[tokio::test]
async fn a_503_fails_over_to_the_next_connection_invisibly() {
    let mut a =
        FakeUpstream::start(Reply::json(503, wire::anthropic_error("overloaded_error", "busy"))).await;
    let mut b =
        FakeUpstream::start(Reply::json(200, wire::anthropic_message("claude-sonnet-4-6", "from b"))).await;
    a.expect_calls(1);
    b.expect_calls(1);
    let gw = TestGateway::start(&two_accounts(&a, &b)).await;

    let response = gw.post("/v1/messages", &request(false)).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["x-switchyard-connection"], "claude-b");
    assert_eq!(body_json(response).await, wire::anthropic_message("claude-sonnet-4-6", "from b"));

    // The OAuth account got its bearer token and the OAuth beta flag; the key
    // account its x-api-key.
    let to_a = a.last_request().unwrap_or_else(|| panic!("a not called"));
    assert_eq!(to_a.header("authorization"), Some("Bearer oauth-token-a"));
    assert_eq!(to_a.header("anthropic-beta"), Some("oauth-2025-04-20"));
    assert_eq!(
        b.last_request().and_then(|r| r.header("x-api-key").map(str::to_owned)),
        Some("sk-ant-b".into())
    );

    let rows = gw.wait_for_log_rows(2).await;
    let (newest, oldest) = (&rows[0], &rows[1]);
    assert_eq!(oldest["connectionId"], "claude-a");
    assert_eq!(oldest["status"], 503);
    assert_eq!(oldest["errorKind"], "http_503");
    assert_eq!(newest["connectionId"], "claude-b");
    assert_eq!(newest["status"], 200);
    assert_eq!(newest["errorKind"], serde_json::Value::Null);
    assert_eq!(newest["requestId"], oldest["requestId"]);
    assert_eq!(newest["route"], "/v1/messages");
}

#[tokio::test]
async fn rate_limits_connect_errors_and_early_resets_fail_over() {
    let a =
        FakeUpstream::start(Reply::json(429, wire::anthropic_error("rate_limit_error", "slow down"))).await;
    let b = FakeUpstream::start(Reply::sse(wire::anthropic_sse("claude-sonnet-4-6", "ok"))).await;
    let gw = TestGateway::start(&two_accounts(&a, &b)).await;
    assert_eq!(gw.post("/v1/messages", &request(true)).await.status(), 200);

    // A stream that breaks before its first byte is replaced as well.
    a.set_default(Reply::Hangup);
    let response = gw.post("/v1/messages", &request(true)).await;
    assert_eq!(response.status(), 200);
    assert_eq!(text(response).await, wire::anthropic_sse("claude-sonnet-4-6", "ok").concat());
    assert_eq!(b.calls(), 2);
}

#[tokio::test]
async fn a_dead_address_fails_over() {
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
    let dead_url = format!("http://{}", dead.local_addr().unwrap_or_else(|e| panic!("{e}")));
    drop(dead);
    let b = FakeUpstream::start(Reply::json(200, wire::anthropic_message("m", "b"))).await;
    let config = two_accounts(&b, &b).replacen(&b.url(), &dead_url, 1);
    let gw = TestGateway::start(&config).await;
    let response = gw.post("/v1/messages", &request(false)).await;
    assert_eq!(response.status(), 200);
    let rows = gw.wait_for_log_rows(2).await;
    assert_eq!(rows[1]["errorKind"], "connect");
}

#[tokio::test]
async fn a_slow_upstream_times_out_and_fails_over() {
    // The upstream never answers; the gateway's clock (manual here) runs out the
    // attempt deadline of a plain request and the next connection serves.
    let slow = FakeUpstream::start(Reply::Silent).await;
    let b = FakeUpstream::start(Reply::json(200, wire::anthropic_message("m", "b"))).await;
    let clock = Arc::new(ManualClock::new(UnixMillis(1_900_000_000_000)));
    let c = clock.clone();
    let gw = TestGateway::start_with(&two_accounts(&slow, &b), move |cfg| cfg.clock = c).await;
    let pending = gw.post_in_background("/v1/messages", &request(false));
    // Real-time poll for the request to reach the fake over loopback (not a cooldown wait).
    assert!(slow.wait_until(Duration::from_secs(5), |f| f.calls() == 1).await);
    clock.advance_ms(1_800_000);
    let response = pending.await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(response.status(), 200);
    assert_eq!(body_json(response).await["content"][0]["text"], "b");
}

#[tokio::test]
async fn when_every_attempt_fails_one_error_names_each_outcome() {
    let a = FakeUpstream::start(Reply::json(
        503,
        wire::anthropic_error("overloaded_error", "upstream A overloaded"),
    ))
    .await;
    let b = FakeUpstream::start(Reply::json(500, json!({}))).await;
    let gw = TestGateway::start(&two_accounts(&a, &b)).await;
    let response = gw.post("/v1/messages", &request(false)).await;
    assert_eq!(response.status(), 502);
    assert_eq!(response.headers()["x-switchyard-error"], "all_attempts_failed");
    let body = body_json(response).await;
    assert_eq!(body["type"], "error");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("claude-a (claude-sonnet-4-6): HTTP 503: upstream A overloaded"), "{message}");
    assert!(message.contains("claude-b (claude-sonnet-4-6): HTTP 500"), "{message}");

    // All rate limited: 429 with the smallest upstream hint. (Both connections are
    // cooling from their 5xx: clear that rather than wait.)
    gw.clear_cooldowns().await;
    a.set_default(Reply::json(429, json!({})).with_header("retry-after", "7"));
    b.set_default(Reply::json(429, json!({})).with_header("retry-after", "3"));
    let response = gw.post("/v1/messages", &request(false)).await;
    assert_eq!(response.status(), 429);
    assert_eq!(response.headers()["retry-after"], "3");
    assert_eq!(body_json(response).await["error"]["type"], "rate_limit_error");
}

#[tokio::test]
async fn no_failover_once_bytes_reached_the_client() {
    let frames = wire::anthropic_sse("claude-sonnet-4-6", "partial");
    let a = FakeUpstream::start(Reply::sse(frames[..2].to_vec()).ending(StreamEnd::Reset)).await;
    let mut b = FakeUpstream::start(Reply::sse(wire::anthropic_sse("claude-sonnet-4-6", "b"))).await;
    b.expect_calls(0);
    let gw = TestGateway::start(&two_accounts(&a, &b)).await;

    let response = gw.post("/v1/messages", &request(true)).await;
    assert_eq!(response.status(), 200);
    let relayed = text(response).await;
    assert!(relayed.starts_with(&frames[..2].concat()), "{relayed}");
    let events = sse_data(&relayed);
    let last = events.last().cloned().unwrap_or_default();
    assert_eq!(last["type"], "error");
    assert_eq!(last["error"]["type"], "api_error");
    assert!(relayed.ends_with("\n\n"));
    let rows = gw.wait_for_log_rows(1).await;
    assert_eq!(rows[0]["errorKind"], "stream_interrupted");
    // The break is still held against the upstream: recorded on the connection and
    // counted by the provider's breaker, like a break before the first byte.
    assert_eq!(gw.cooldown_of("claude-a").await["lastErrorKind"], "server_error");
    let breakers = gw.mgmt_json("/api/resilience/breakers").await;
    let anthropic =
        breakers.as_array().and_then(|b| b.iter().find(|b| b["provider"] == "anthropic")).cloned();
    assert!(anthropic.is_some_and(|b| b["failureCount"] != 0), "{breakers}");
}

#[tokio::test]
async fn a_partial_frame_is_dropped_before_the_error_event() {
    let frames = wire::chat_sse("glm-4.6", "partial");
    let half = &frames[1][..frames[1].len() / 2];
    let up =
        FakeUpstream::start(Reply::sse(vec![frames[0].clone(), half.to_owned()]).ending(StreamEnd::Reset))
            .await;
    let config = format!(
        "{}\n[[connections]]\nid = \"o\"\nprovider = \"openai-compatible\"\napi_key = \"k\"\nbase_url = \"{}/v1\"\nmodels = [\"glm-4.6\"]\n",
        client_key_toml(),
        up.url()
    );
    let gw = TestGateway::start(&config).await;
    let response =
        gw.post("/v1/chat/completions", &json!({"model": "glm-4.6", "stream": true, "messages": []})).await;
    let relayed = text(response).await;
    let events = sse_data(&relayed);
    assert_eq!(events.len(), 2, "{relayed}");
    assert_eq!(events[0]["object"], "chat.completion.chunk");
    assert_eq!(events[1]["error"]["code"], "upstream_stream_interrupted");
    assert!(!relayed.contains(half));
}

#[tokio::test]
async fn a_departing_client_cancels_the_upstream_stream() {
    let frames = wire::anthropic_sse("claude-sonnet-4-6", "never finished");
    let a = FakeUpstream::start(Reply::sse(frames[..2].to_vec()).ending(StreamEnd::Hang)).await;
    let b = FakeUpstream::start(Reply::json(500, json!({}))).await;
    let gw = TestGateway::start(&two_accounts(&a, &b)).await;

    let response = gw.post("/v1/messages", &request(true)).await;
    assert_eq!(response.status(), 200);
    let mut body = response.bytes_stream();
    let first = body.next().await;
    assert!(matches!(first, Some(Ok(_))));
    drop(body);

    let cancelled = a.wait_until(Duration::from_secs(5), |f| f.abandoned_streams() == 1).await;
    assert!(cancelled, "the upstream stream was not cancelled");
    let rows = gw.wait_for_log_rows(1).await;
    assert_eq!(rows[0]["errorKind"], "client_disconnected");
    assert_eq!(b.calls(), 0);
}
