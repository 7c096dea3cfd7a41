//! SSE keep-alives while the gateway itself waits (issue 9): a Claude account in the
//! slow lane answers `slot_busy`, the gateway waits the hinted time on its manual
//! clock, and a streaming client hears `: keep-alive` every 15 s of that wait — the
//! answer is committed early as an SSE stream — then the real stream, or one error
//! event when no attempt succeeds. Time is advanced, never slept.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use switchyard_gateway::clock::ManualClock;
use switchyard_testkit::{FakeUpstream, Reply, wire};
use switchyard_tests::{TestGateway, client_key_toml, sse_data};
use switchyard_types::UnixMillis;

const NOW: i64 = 1_900_000_000_000;
const KEEPALIVE: &str = ": keep-alive\n\n";

fn config(a: &FakeUpstream, b: &FakeUpstream) -> String {
    switchyard_tests::claude_account_and_key(&a.url(), &b.url(), "lowPriorityMode = true")
}

/// The wall 429 that moves account A into the slow lane, then a busy slot with a
/// five-minute retry hint (a wait of 210–390 s with jitter).
fn push_lane_then_busy(a: &FakeUpstream) {
    let reset_s = NOW / 1000 + 3_600;
    a.push(
        Reply::json(429, wire::anthropic_error("rate_limit_error", "usage limit reached"))
            .with_header("anthropic-ratelimit-unified-status", "rejected")
            .with_header("anthropic-ratelimit-unified-slow-offer", "treatment")
            .with_header("anthropic-ratelimit-unified-reset", &reset_s.to_string()),
    );
    a.push(
        Reply::json(429, wire::anthropic_error("rate_limit_error", "slot busy"))
            .with_header("anthropic-ratelimit-unified-slow-status", "slot_busy")
            .with_header("anthropic-ratelimit-unified-slow-retry-after", "300"),
    );
}

fn streaming(model: &str) -> Value {
    json!({"model": model, "max_tokens": 5, "stream": true, "messages": []})
}

/// A gateway on a manual clock whose deliberate waits run on that clock too.
async fn start(config: &str) -> (TestGateway, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(UnixMillis(NOW)));
    let c = clock.clone();
    let gw = TestGateway::start_with(config, move |cfg| cfg.clock = c).await;
    (gw, clock)
}

/// Waits (in real time, polling) until the gateway has armed the slot-busy wait: a
/// timer more than 100 s ahead (the keep-alive tick and the readiness budget are
/// nearer).
async fn until_the_lane_waits(clock: &ManualClock) {
    for _ in 0..500 {
        if clock.pending_in().iter().any(|d| *d > Duration::from_secs(100)) {
            return;
        }
        // Polling for the gateway's task to reach its wait, not a wait for time.
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the gateway never started the slot-busy wait: {:?}", clock.pending_in());
}

async fn next_chunk(response: &mut reqwest::Response) -> String {
    let chunk = tokio::time::timeout(Duration::from_secs(5), response.chunk())
        .await
        .unwrap_or_else(|_| panic!("no chunk within 5 s"))
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_default();
    String::from_utf8_lossy(&chunk).into_owned()
}

async fn rest(response: reqwest::Response) -> String {
    tokio::time::timeout(Duration::from_secs(5), response.text())
        .await
        .unwrap_or_else(|_| panic!("the stream did not end within 5 s"))
        .unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test]
async fn a_streaming_client_hears_keepalives_while_the_lane_waits_then_the_stream() {
    let a = FakeUpstream::start(Reply::sse(wire::anthropic_sse("claude-sonnet-4-6", "after the wait"))).await;
    push_lane_then_busy(&a);
    let mut b = FakeUpstream::start(Reply::json(500, json!({}))).await;
    b.expect_calls(0);
    let (gw, clock) = start(&config(&a, &b)).await;

    let pending = gw.post_in_background("/v1/messages", &streaming("claude-sonnet-4-6"));
    until_the_lane_waits(&clock).await;
    assert!(!pending.is_finished(), "nothing is sent before the first keep-alive tick");
    clock.advance_ms(15_000);
    let mut response = tokio::time::timeout(Duration::from_secs(5), pending)
        .await
        .unwrap_or_else(|_| panic!("no early answer after 15 s of waiting"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    assert_eq!(next_chunk(&mut response).await, KEEPALIVE);
    clock.advance_ms(15_000);
    assert_eq!(next_chunk(&mut response).await, KEEPALIVE, "one comment per 15 s");
    assert_eq!(a.calls(), 2, "still waiting: no resend yet");

    clock.advance_ms(400_000);
    let text = rest(response).await;
    let events = sse_data(&text);
    assert_eq!(events.first().map(|e| e["type"].clone()), Some(json!("message_start")), "{text}");
    assert_eq!(events.last().map(|e| e["type"].clone()), Some(json!("message_stop")), "{text}");
    assert!(text.contains("after the wait"), "{text}");
    assert_eq!(a.calls(), 3);
}

#[tokio::test]
async fn a_failure_after_the_early_commit_is_one_error_event() {
    let a = FakeUpstream::start(Reply::json(500, wire::anthropic_error("api_error", "a broke"))).await;
    push_lane_then_busy(&a);
    let b = FakeUpstream::start(Reply::json(500, wire::anthropic_error("api_error", "b broke"))).await;
    let (gw, clock) = start(&config(&a, &b)).await;

    let pending = gw.post_in_background("/v1/messages", &streaming("claude-sonnet-4-6"));
    until_the_lane_waits(&clock).await;
    clock.advance_ms(15_000);
    let mut response = tokio::time::timeout(Duration::from_secs(5), pending)
        .await
        .unwrap_or_else(|_| panic!("no early answer"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(response.status(), 200);
    assert_eq!(next_chunk(&mut response).await, KEEPALIVE);
    clock.advance_ms(400_000);
    let text = rest(response).await;
    let after = text.trim_start_matches(KEEPALIVE);
    assert!(after.starts_with("event: error\ndata: "), "{text}");
    assert_eq!(after.matches("event: error").count(), 1, "{text}");
    let events = sse_data(after);
    let message = events[0]["error"]["message"].as_str().unwrap_or_default().to_owned();
    assert!(message.contains("all 2 attempt(s)"), "{message}");
    assert_eq!((a.calls(), b.calls()), (3, 1));
}

#[tokio::test]
async fn a_plain_request_waits_without_an_early_answer() {
    let a =
        FakeUpstream::start(Reply::json(200, wire::anthropic_message("claude-sonnet-4-6", "plain"))).await;
    push_lane_then_busy(&a);
    let mut b = FakeUpstream::start(Reply::json(500, json!({}))).await;
    b.expect_calls(0);
    let (gw, clock) = start(&config(&a, &b)).await;

    let pending = gw.post_in_background(
        "/v1/messages",
        &json!({"model": "claude-sonnet-4-6", "max_tokens": 5, "messages": []}),
    );
    until_the_lane_waits(&clock).await;
    clock.advance_ms(15_000);
    // The tick passes with no answer: a plain request keeps its status for the end.
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
    assert!(!pending.is_finished());
    clock.advance_ms(400_000);
    let response = tokio::time::timeout(Duration::from_secs(5), pending)
        .await
        .unwrap_or_else(|_| panic!("no answer after the wait"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["x-switchyard-connection"], "claude-a");
    assert_eq!(switchyard_tests::json(response).await["content"][0]["text"], "plain");
}

#[tokio::test]
async fn waiting_on_a_silent_upstream_is_not_a_gateway_wait() {
    // A streamed request whose upstream is silent stays uncommitted through the
    // keep-alive ticks, so the readiness budget can still fail it over to B with B's
    // own headers.
    let a = FakeUpstream::start(Reply::Silent).await;
    let b = FakeUpstream::start(Reply::sse(wire::anthropic_sse("claude-sonnet-4-6", "from b"))).await;
    let config = format!(
        "{}\n[[connections]]\nid = \"key-a\"\nprovider = \"anthropic\"\napi_key = \"a\"\nbase_url = \"{}\"\n\
         priority = 1\n\n[[connections]]\nid = \"key-b\"\nprovider = \"anthropic\"\napi_key = \"b\"\n\
         base_url = \"{}\"\npriority = 2\n",
        client_key_toml(),
        a.url(),
        b.url()
    );
    let (gw, clock) = start(&config).await;
    let pending = gw.post_in_background("/v1/messages", &streaming("claude-sonnet-4-6"));
    assert!(a.wait_until(Duration::from_secs(5), |f| f.calls() == 1).await);
    for _ in 0..4 {
        clock.advance_ms(15_000);
        tokio::task::yield_now().await;
    }
    clock.advance_ms(1_000);
    let response = tokio::time::timeout(Duration::from_secs(5), pending)
        .await
        .unwrap_or_else(|_| panic!("no answer"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(response.headers()["x-switchyard-connection"], "key-b");
    let text = rest(response).await;
    assert!(!text.contains("keep-alive"), "{text}");
    assert!(text.contains("from b"), "{text}");
}
