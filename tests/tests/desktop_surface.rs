//! SPEC §1 and §6 on the headless server: what the tray and the settings UI rely
//! on, over real HTTP: routing pause (503 `routing_paused` in the client's format,
//! management untouched), the gateway status and request summary, the change feed
//! as Server-Sent Events, and the built UI served under `/ui/`.

use std::time::Duration;

use futures_util::StreamExt;
use reqwest::Method;
use serde_json::{Value, json};
use switchyard_testkit::{FakeUpstream, Reply, wire};
use switchyard_tests::{TestGateway, client_key_toml, json as body_json, text};

fn one_key(url: &str) -> String {
    format!(
        "{keys}\n[[connections]]\nid = \"key-a\"\nprovider = \"anthropic\"\napi_key = \"sk-a\"\nbase_url = \"{url}\"\n",
        keys = client_key_toml()
    )
}

fn request() -> Value {
    json!({"model": "claude-sonnet-4-6", "max_tokens": 5, "messages": []})
}

async fn set_paused(gw: &TestGateway, paused: bool) -> Value {
    let r = gw.mgmt(Method::POST, "/api/gateway/pause").json(&json!({"paused": paused})).send().await;
    let r = r.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.status(), 200);
    body_json(r).await
}

#[tokio::test]
async fn paused_routing_refuses_inference_in_the_client_format_and_resumes() {
    let up = FakeUpstream::start(Reply::json(200, wire::anthropic_message("m", "hi"))).await;
    let gw = TestGateway::start(&one_key(&up.url())).await;
    let status = gw.mgmt_json("/api/gateway").await;
    assert_eq!(status["paused"], false);
    assert_eq!(status["baseUrl"], gw.url(""));
    assert_eq!(status["clientKeyRequired"], true);

    assert_eq!(set_paused(&gw, true).await["paused"], true);
    let refused = gw.post("/v1/messages", &request()).await;
    assert_eq!(refused.status(), 503);
    let body = body_json(refused).await;
    assert_eq!(body["type"], "error", "Anthropic envelope: {body}");
    assert_eq!(body["error"]["code"], "routing_paused");
    let chat = gw.post("/v1/chat/completions", &json!({"model": "claude-sonnet-4-6", "messages": []})).await;
    assert_eq!(body_json(chat).await["error"]["code"], "routing_paused", "OpenAI envelope");
    assert_eq!(up.calls(), 0, "nothing reaches an upstream while paused");
    // Management keeps working while paused.
    assert_eq!(gw.mgmt_json("/api/providers").await.as_array().map(Vec::len), Some(1));

    assert_eq!(set_paused(&gw, false).await["paused"], false);
    assert_eq!(gw.post("/v1/messages", &request()).await.status(), 200);
    assert_eq!(up.calls(), 1);
}

#[tokio::test]
async fn the_summary_counts_attempts_and_lists_recent_failures() {
    let up = FakeUpstream::start(Reply::json(200, wire::anthropic_message("m", "hi"))).await;
    up.push(Reply::json(500, wire::anthropic_error("api_error", "boom")));
    let gw = TestGateway::start(&one_key(&up.url())).await;
    assert_eq!(gw.post("/v1/messages", &request()).await.status(), 502);
    // The 500 cooled the only connection (server_error); clear it rather than wait.
    gw.clear_cooldowns().await;
    assert_eq!(gw.post("/v1/messages", &request()).await.status(), 200);
    gw.wait_for_log_rows(2).await;
    let summary = gw.mgmt_json("/api/monitoring/summary").await;
    assert_eq!(summary["attemptsLastHour"], 2, "{summary}");
    assert_eq!(summary["failedAttemptsLastHour"], 1);
    assert_eq!(summary["attemptsLastDay"], 2);
    let errors = summary["recentErrors"].as_array().cloned().unwrap_or_default();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0]["status"], 500);
    assert_eq!(errors[0]["connectionId"], "key-a");
}

#[tokio::test]
async fn ranges_defaults_and_breakers_are_served_for_the_forms() {
    let up = FakeUpstream::start(Reply::json(200, wire::anthropic_message("m", "hi"))).await;
    let gw = TestGateway::start(&one_key(&up.url())).await;
    let ranges = gw.mgmt_json("/api/resilience/ranges").await;
    let base = ranges["fields"]
        .as_array()
        .and_then(|f| f.iter().find(|r| r["path"] == "/connectionCooldown/oauth/baseCooldownMs"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        (base["min"].clone(), base["max"].clone(), base["unit"].clone()),
        (json!(0), json!(600000), json!("ms"))
    );
    let patched =
        gw.mgmt(Method::PATCH, "/api/resilience").json(&json!({"sessionAffinityTtlMs": 5000})).send().await;
    assert_eq!(patched.unwrap_or_else(|e| panic!("{e}")).status(), 200);
    let defaults = gw.mgmt_json("/api/resilience/defaults").await;
    assert_eq!(defaults["sessionAffinityTtlMs"], 0, "defaults ignore the stored document");
    assert!(gw.mgmt_json("/api/resilience/breakers").await.is_array());
}

#[tokio::test]
async fn the_change_feed_streams_a_cooldown_as_a_named_event() {
    let up = FakeUpstream::start(
        Reply::json(429, wire::anthropic_error("rate_limit_error", "slow")).with_header("retry-after", "30"),
    )
    .await;
    let gw = TestGateway::start(&one_key(&up.url())).await;
    let response = gw.mgmt(Method::GET, "/api/events").send().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(response.status(), 200);
    let content_type =
        response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default();
    assert!(content_type.starts_with("text/event-stream"), "{content_type}");
    let mut stream = response.bytes_stream();
    assert_eq!(gw.post("/v1/messages", &request()).await.status(), 429);
    let mut seen = String::new();
    let found = tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(Ok(chunk)) = stream.next().await {
            seen.push_str(&String::from_utf8_lossy(&chunk));
            if seen.contains("event: cooldownsChanged") {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(found, Ok(true), "no cooldownsChanged event in: {seen}");
    assert!(seen.contains("data: {\"at\":"), "{seen}");
}

#[tokio::test]
async fn the_change_feed_needs_the_management_token() {
    let up = FakeUpstream::start(Reply::json(200, wire::anthropic_message("m", "hi"))).await;
    let gw = TestGateway::start(&one_key(&up.url())).await;
    let anonymous = reqwest::Client::new().get(gw.url("/api/events")).send().await;
    assert_eq!(anonymous.unwrap_or_else(|e| panic!("{e}")).status(), 401);
}

#[tokio::test]
async fn the_built_ui_is_served_under_ui_with_a_strict_csp() {
    let up = FakeUpstream::start(Reply::json(200, wire::anthropic_message("m", "hi"))).await;
    let dist = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(dist.path().join("index.html"), "<!doctype html><title>Switchyard</title>")
        .unwrap_or_else(|e| panic!("{e}"));
    std::fs::create_dir_all(dist.path().join("assets")).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(dist.path().join("assets/app.js"), "console.log(1)").unwrap_or_else(|e| panic!("{e}"));
    let dir = dist.path().to_path_buf();
    let gw = TestGateway::start_with(&one_key(&up.url()), move |c| c.ui_dir = Some(dir)).await;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let root = client.get(gw.url("/")).send().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(root.headers().get("location").and_then(|v| v.to_str().ok()), Some("/ui/"));
    let index = client.get(gw.url("/ui/")).send().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(index.status(), 200);
    let csp =
        index.headers().get("content-security-policy").and_then(|v| v.to_str().ok()).unwrap_or_default();
    assert!(csp.contains("default-src 'self'") && csp.contains("frame-ancestors 'none'"), "{csp}");
    assert!(text(index).await.contains("<title>Switchyard</title>"));
    let asset = client.get(gw.url("/ui/assets/app.js")).send().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(text(asset).await, "console.log(1)");
    // A deep link (the hash router never sends one, but a reload of a path might).
    let deep = client.get(gw.url("/ui/cooldowns")).send().await.unwrap_or_else(|e| panic!("{e}"));
    assert!(text(deep).await.contains("<title>Switchyard</title>"));
}

#[tokio::test]
async fn without_a_built_ui_the_ui_path_says_how_to_build_it() {
    let up = FakeUpstream::start(Reply::json(200, wire::anthropic_message("m", "hi"))).await;
    let gw = TestGateway::start(&one_key(&up.url())).await;
    let response = reqwest::get(gw.url("/ui/")).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(response.status(), 404);
    assert!(text(response).await.contains("npm run ui:build"));
}
