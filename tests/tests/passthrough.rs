//! SPEC §2 wire format and §3 request path: JSON and SSE passthrough on all four
//! client endpoints, model rewriting without touching anything else, query strings,
//! headers built from scratch, and the model list.

use serde_json::{Value, json};
use switchyard_testkit::{FakeUpstream, Reply, wire};
use switchyard_tests::{CLIENT_KEY, TestGateway, client_key_toml, json as body_json, sse_data, text};

fn config(anthropic: &FakeUpstream, openai: &FakeUpstream) -> String {
    format!(
        r#"{keys}
[[connections]]
id = "claude-a"
provider = "anthropic"
api_key = "sk-ant-upstream-secret"
base_url = "{a}"

[[connections]]
id = "glm"
provider = "glm"
api_format = "openai"
api_key = "glm-upstream-secret"
base_url = "{o}/v1"
models = ["glm-4.6"]
"#,
        keys = client_key_toml(),
        a = anthropic.url(),
        o = openai.url()
    )
}

/// A Claude Code-like body: a system role inside messages, adaptive thinking,
/// context management, unknown fields.
fn claude_code_body(model: &str, stream: bool) -> Value {
    json!({
        "model": model,
        "max_tokens": 128000,
        "stream": stream,
        "system": [{"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {"role": "system", "content": "inner system message"},
            {"role": "user", "content": [{"type": "text", "text": "say hi"}]}
        ],
        "thinking": {"type": "adaptive"},
        "context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]},
        "output_config": {"effort": "high"},
        "metadata": {"user_id": "{\"device\":\"x\"}"},
        "some_future_field": [1, {"nested": true}]
    })
}

fn without_model(mut v: Value) -> Value {
    if let Some(o) = v.as_object_mut() {
        o.remove("model");
    }
    v
}

#[tokio::test]
async fn anthropic_messages_json_passes_through_with_only_the_model_rewritten() {
    let anthropic =
        FakeUpstream::start(Reply::json(200, wire::anthropic_message("claude-sonnet-4-6", "hi"))).await;
    let openai = FakeUpstream::start(Reply::json(500, json!({}))).await;
    let gw = TestGateway::start(&config(&anthropic, &openai)).await;

    let sent = claude_code_body("anthropic/claude-sonnet-4-6", false);
    let response = gw
        .http
        .post(gw.url("/v1/messages?beta=true"))
        .header("x-api-key", CLIENT_KEY)
        .header("anthropic-version", "2099-12-31")
        .header("anthropic-beta", "interleaved-thinking-2025-05-14,context-management-2025-06-27")
        .header("x-claude-code-session-id", "11111111-2222")
        .header("user-agent", "claude-cli/2.1.332")
        .json(&sent)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(response.status(), 200);
    assert!(response.headers().contains_key("x-switchyard-request-id"));
    assert_eq!(body_json(response).await, wire::anthropic_message("claude-sonnet-4-6", "hi"));

    let got = anthropic.last_request().unwrap_or_else(|| panic!("no upstream request"));
    assert_eq!(got.path, "/v1/messages");
    assert_eq!(got.query.as_deref(), Some("beta=true"));
    assert_eq!(got.json()["model"], "claude-sonnet-4-6");
    assert_eq!(without_model(got.json()), without_model(sent));
    assert_eq!(got.header("x-api-key"), Some("sk-ant-upstream-secret"));
    assert_eq!(got.header("anthropic-version"), Some("2099-12-31"));
    assert_eq!(
        got.header("anthropic-beta"),
        Some("interleaved-thinking-2025-05-14,context-management-2025-06-27")
    );
    assert_eq!(got.header("user-agent"), Some("claude-cli/2.1.332"));
    assert_eq!(got.header("authorization"), None);
    assert_eq!(got.header("x-claude-code-session-id"), None);
}

#[tokio::test]
async fn anthropic_messages_sse_is_relayed_frame_for_frame() {
    let frames = wire::anthropic_sse("claude-sonnet-4-6", "hello there");
    let anthropic = FakeUpstream::start(Reply::sse(frames.clone())).await;
    let openai = FakeUpstream::start(Reply::json(500, json!({}))).await;
    let gw = TestGateway::start(&config(&anthropic, &openai)).await;

    let response = gw.post("/v1/messages", &claude_code_body("claude-sonnet-4-6", true)).await;
    assert_eq!(response.status(), 200);
    assert!(response.headers()["content-type"].to_str().unwrap_or_default().starts_with("text/event-stream"));
    assert_eq!(text(response).await, frames.concat());
    // A bare claude-* id routes by prefix and is sent unchanged.
    assert_eq!(anthropic.last_request().map(|r| r.json()["model"].clone()), Some(json!("claude-sonnet-4-6")));
}

#[tokio::test]
async fn count_tokens_passes_through() {
    let anthropic = FakeUpstream::start(Reply::json(200, wire::count_tokens(42))).await;
    let openai = FakeUpstream::start(Reply::json(500, json!({}))).await;
    let gw = TestGateway::start(&config(&anthropic, &openai)).await;
    let response =
        gw.post("/v1/messages/count_tokens", &json!({"model": "claude-sonnet-4-6", "messages": []})).await;
    assert_eq!(response.status(), 200);
    assert_eq!(body_json(response).await, json!({"input_tokens": 42}));
    assert_eq!(anthropic.last_request().map(|r| r.path), Some("/v1/messages/count_tokens".into()));
}

#[tokio::test]
async fn chat_completions_json_and_sse() {
    let anthropic = FakeUpstream::start(Reply::json(500, json!({}))).await;
    let openai = FakeUpstream::start(Reply::json(200, wire::chat_completion("glm-4.6", "hi"))).await;
    let gw = TestGateway::start(&config(&anthropic, &openai)).await;

    let body =
        json!({"model": "glm-4.6", "messages": [{"role": "developer", "content": "x"}], "custom": {"a": 1}});
    let response = gw.post("/v1/chat/completions", &body).await;
    assert_eq!(response.status(), 200);
    // A plain body is relayed byte for byte, so its declared length is kept.
    let expected_len = wire::chat_completion("glm-4.6", "hi").to_string().len() as u64;
    assert_eq!(response.content_length(), Some(expected_len));
    assert_eq!(body_json(response).await, wire::chat_completion("glm-4.6", "hi"));
    let got = openai.last_request().unwrap_or_else(|| panic!("no request"));
    assert_eq!(got.path, "/v1/chat/completions");
    assert_eq!(got.json(), body);
    assert_eq!(got.header("authorization"), Some("Bearer glm-upstream-secret"));
    assert_eq!(got.header("anthropic-version"), None);

    let frames = wire::chat_sse("glm-4.6", "streamed");
    openai.push(Reply::sse(frames.clone()));
    let response = gw
        .post("/v1/chat/completions", &json!({"model": "glm/glm-4.6", "stream": true, "messages": []}))
        .await;
    assert_eq!(response.status(), 200);
    assert_eq!(text(response).await, frames.concat());
    assert_eq!(openai.last_request().map(|r| r.json()["model"].clone()), Some(json!("glm-4.6")));
}

#[tokio::test]
async fn responses_json_and_sse_keep_codex_fields() {
    let anthropic = FakeUpstream::start(Reply::json(500, json!({}))).await;
    let openai = FakeUpstream::start(Reply::json(200, wire::responses_json("glm-4.6", "hi"))).await;
    let gw = TestGateway::start(&config(&anthropic, &openai)).await;

    let body = json!({
        "model": "glm-4.6",
        "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}],
        "store": false,
        "include": ["reasoning.encrypted_content"],
        "prompt_cache_key": "abc",
        "client_metadata": {"x": "y"},
        "reasoning": {"effort": "medium"}
    });
    let response = gw.post("/v1/responses", &body).await;
    assert_eq!(response.status(), 200);
    assert_eq!(body_json(response).await, wire::responses_json("glm-4.6", "hi"));
    let got = openai.last_request().unwrap_or_else(|| panic!("no request"));
    assert_eq!(got.path, "/v1/responses");
    assert_eq!(got.json(), body);

    let frames = wire::responses_sse("glm-4.6", "streamed");
    openai.push(Reply::sse(frames.clone()));
    let mut streaming = body.clone();
    streaming["stream"] = json!(true);
    let response = gw
        .http
        .post(gw.url("/v1/responses"))
        .bearer_auth(CLIENT_KEY)
        .header("session-id", "codex-session")
        .header("originator", "codex_exec")
        .json(&streaming)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(response.status(), 200);
    let relayed = text(response).await;
    assert_eq!(relayed, frames.concat());
    assert_eq!(sse_data(&relayed).last().map(|e| e["type"].clone()), Some(json!("response.completed")));
    let got = openai.last_request().unwrap_or_else(|| panic!("no request"));
    assert_eq!(got.header("session-id"), None);
    assert_eq!(got.header("originator"), None);
}

#[tokio::test]
async fn upstream_request_errors_are_relayed_as_is() {
    let anthropic = FakeUpstream::start(Reply::json(
        400,
        wire::anthropic_error("invalid_request_error", "max_tokens too large"),
    ))
    .await;
    let openai = FakeUpstream::start(Reply::json(500, json!({}))).await;
    let gw = TestGateway::start(&config(&anthropic, &openai)).await;
    let response = gw.post("/v1/messages", &claude_code_body("claude-x", false)).await;
    assert_eq!(response.status(), 400);
    assert_eq!(
        body_json(response).await,
        wire::anthropic_error("invalid_request_error", "max_tokens too large")
    );
    assert_eq!(anthropic.calls(), 1);
}

#[tokio::test]
async fn models_are_listed_in_the_clients_format() {
    let anthropic = FakeUpstream::start(Reply::json(500, json!({}))).await;
    let openai = FakeUpstream::start(Reply::json(500, json!({}))).await;
    let gw = TestGateway::start(&config(&anthropic, &openai)).await;

    let openai_list = body_json(
        gw.http
            .get(gw.url("/v1/models"))
            .bearer_auth(CLIENT_KEY)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}")),
    )
    .await;
    assert_eq!(openai_list["object"], "list");
    let ids: Vec<&str> = openai_list["data"]
        .as_array()
        .map(|a| a.iter().filter_map(|m| m["id"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(ids, ["glm-4.6", "glm/glm-4.6"]);

    let anthropic_list = body_json(
        gw.http
            .get(gw.url("/v1/models?limit=1000"))
            .header("x-api-key", CLIENT_KEY)
            .header("anthropic-version", "2023-06-01")
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}")),
    )
    .await;
    assert_eq!(anthropic_list["has_more"], false);
    assert_eq!(anthropic_list["data"][0]["type"], "model");
}

#[tokio::test]
async fn hello_probe_and_websocket_upgrade_answer_fast() {
    let anthropic = FakeUpstream::start(Reply::json(500, json!({}))).await;
    let openai = FakeUpstream::start(Reply::json(500, json!({}))).await;
    let gw = TestGateway::start(&config(&anthropic, &openai)).await;
    let hello = gw.http.head(gw.url("/api/hello")).send().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(hello.status(), 200);
    let ws = gw
        .http
        .get(gw.url("/v1/responses"))
        .header("connection", "Upgrade")
        .header("upgrade", "websocket")
        .header("sec-websocket-version", "13")
        .header("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==")
        .bearer_auth(CLIENT_KEY)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ws.status(), 426);
    assert_eq!(ws.headers()["x-switchyard-error"], "websocket_unsupported");
    assert_eq!(anthropic.calls() + openai.calls(), 0);
}
