//! An error the upstream reports inside a 200 stream (Anthropic `event: error`,
//! Responses `error`/`response.failed`, a Chat chunk with `error`) is relayed to the
//! client in its format and judged as that attempt's outcome, like the status the
//! provider would have answered with: a rate limit cools the connection, an invalid
//! request costs nothing. Same-format and translated streams alike.

use serde_json::json;
use switchyard_testkit::{FakeUpstream, Reply, wire};
use switchyard_tests::{TestGateway, two_anthropic_keys};

/// A Messages stream that starts, says a word, then reports `kind` and ends.
fn stream_then_error(kind: &str, message: &str) -> Reply {
    let mut frames = wire::anthropic_sse("m", "partial");
    // Keep message_start, the block start, ping and the delta; then the error.
    frames.truncate(4);
    frames.push(format!(
        "event: error\ndata: {}\n\n",
        json!({"type": "error", "error": {"type": kind, "message": message}})
    ));
    Reply::sse(frames)
}

async fn served_by(gw: &TestGateway, path: &str, body: &serde_json::Value) -> (String, String) {
    let response = gw.post(path, body).await;
    assert_eq!(response.status(), 200);
    let conn = response
        .headers()
        .get("x-switchyard-connection")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    (conn, response.text().await.unwrap_or_default())
}

#[tokio::test]
async fn a_rate_limit_reported_mid_stream_cools_the_connection_and_a_request_error_does_not() {
    let a = FakeUpstream::start(Reply::sse(wire::anthropic_sse("m", "from a"))).await;
    let b = FakeUpstream::start(Reply::sse(wire::anthropic_sse("m", "from b"))).await;
    let gw = TestGateway::start(&two_anthropic_keys(&a.url(), &b.url())).await;
    let messages = json!({"model": "anthropic/claude-x", "max_tokens": 8, "stream": true,
                          "messages": [{"role": "user", "content": "hi"}]});

    // A request error inside the stream: relayed, nothing cools.
    a.push(stream_then_error("invalid_request_error", "bad tool schema"));
    let (conn, text) = served_by(&gw, "/v1/messages", &messages).await;
    assert_eq!(conn, "key-a");
    assert!(text.contains("bad tool schema"), "{text}");
    assert_eq!(
        served_by(&gw, "/v1/messages", &messages).await.0,
        "key-a",
        "a request error must not cool key-a"
    );

    // A rate limit inside the stream, seen by a Chat client through translation: the
    // client gets its own error event, and key-a cools, so the next request is b's.
    a.push(stream_then_error(
        "rate_limit_error",
        "Number of request tokens has exceeded your per-minute rate limit",
    ));
    let chat = json!({"model": "anthropic/claude-x", "stream": true, "messages": [{"role": "user", "content": "hi"}]});
    let (conn, text) = served_by(&gw, "/v1/chat/completions", &chat).await;
    assert_eq!(conn, "key-a");
    assert!(text.contains("\"error\"") && text.contains("per-minute rate limit"), "{text}");
    let cooling = gw.cooldown_of("key-a").await;
    assert!(!cooling.is_null(), "key-a should be cooling after the in-stream rate limit");
    assert_eq!(served_by(&gw, "/v1/messages", &messages).await.0, "key-b");

    // The request log names the in-stream error.
    let rows = gw.wait_for_log_rows(4).await;
    assert!(rows.iter().any(|r| r["errorKind"] == "stream_error:rate_limit_error"), "{rows:?}");
}
