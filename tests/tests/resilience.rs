//! SPEC §4 end to end: the resilience engine on the request path, its management
//! API and its persistence, over real HTTP with a manual clock (no real waiting).

use std::sync::Arc;

use reqwest::Method;
use serde_json::{Value, json};
use switchyard_gateway::clock::ManualClock;
use switchyard_testkit::{FakeUpstream, Reply, wire};
use switchyard_tests::{TestGateway, client_key_toml, json as body_json};
use switchyard_types::UnixMillis;

fn two_keys(a: &FakeUpstream, b: &FakeUpstream) -> String {
    switchyard_tests::two_anthropic_keys(&a.url(), &b.url())
}

fn request() -> Value {
    json!({"model": "claude-sonnet-4-6", "max_tokens": 5, "messages": []})
}

fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new(UnixMillis(1_900_000_000_000)))
}

#[tokio::test]
async fn a_429_with_retry_after_takes_the_connection_out_for_exactly_that_long() {
    let a = FakeUpstream::start(
        Reply::json(429, wire::anthropic_error("rate_limit_error", "slow down"))
            .with_header("retry-after", "7"),
    )
    .await;
    let b = FakeUpstream::start(Reply::json(200, wire::anthropic_message("m", "from b"))).await;
    let clock = clock();
    let c = clock.clone();
    let gw = TestGateway::start_with(&two_keys(&a, &b), move |cfg| cfg.clock = c).await;

    assert_eq!(gw.post("/v1/messages", &request()).await.status(), 200);
    assert_eq!((a.calls(), b.calls()), (1, 1));
    // While cooling, key-a is skipped: the sibling serves without a wasted attempt.
    clock.advance_ms(6_000);
    assert_eq!(gw.post("/v1/messages", &request()).await.status(), 200);
    assert_eq!((a.calls(), b.calls()), (1, 2));
    let entry = gw.cooldown_of("key-a").await;
    assert_eq!(entry["status"], "unavailable", "{entry}");
    // After the announced 7 s it is tried again.
    clock.advance_ms(1_001);
    a.set_default(Reply::json(200, wire::anthropic_message("m", "from a")));
    let response = gw.post("/v1/messages", &request()).await;
    assert_eq!(body_json(response).await["content"][0]["text"], "from a");
    assert_eq!(a.calls(), 2);
}

#[tokio::test]
async fn every_target_cooling_down_is_a_503_with_retry_after_and_diagnostics() {
    let a = FakeUpstream::start(Reply::json(429, json!({})).with_header("retry-after", "30")).await;
    let b = FakeUpstream::start(Reply::json(429, json!({})).with_header("retry-after", "20")).await;
    let gw = TestGateway::start_with(&two_keys(&a, &b), |cfg| cfg.clock = clock()).await;
    assert_eq!(gw.post("/v1/messages", &request()).await.status(), 429);
    let response = gw.post("/v1/messages", &request()).await;
    assert_eq!(response.status(), 503);
    assert_eq!(response.headers()["retry-after"], "20");
    assert_eq!(response.headers()["x-switchyard-error"], "all_targets_cooling_down");
    let body = body_json(response).await;
    assert_eq!(body["type"], "error");
    assert!(body["error"]["message"].as_str().unwrap_or_default().contains("cooling down"));
    let excluded = body["diagnostics"]["excluded"].as_array().cloned().unwrap_or_default();
    assert_eq!(excluded.len(), 2, "{body}");
    assert!(excluded.iter().all(|e| e["reason"] == "connection_cooldown"), "{body}");
    assert_eq!((a.calls(), b.calls()), (1, 1), "no upstream call while everything cools");
}

#[tokio::test]
async fn eight_oauth_503s_open_the_breaker_and_the_combo_moves_on() {
    let claude = FakeUpstream::start(Reply::json(503, wire::anthropic_error("api_error", "down"))).await;
    let kimi = FakeUpstream::start(Reply::json(200, wire::anthropic_message("kimi-k2", "from kimi"))).await;
    let config = format!(
        r#"{keys}
[[connections]]
id = "claude-a"
provider = "anthropic"
auth = "oauth"
access_token = "oat"
base_url = "{c}"

[[connections]]
id = "kimi"
provider = "kimi"
api_format = "anthropic"
api_key = "k"
base_url = "{k}"
models = ["kimi-k2"]

[[combos]]
name = "coding"
targets = ["anthropic/claude-sonnet-4-6", "kimi/kimi-k2"]
"#,
        keys = client_key_toml(),
        c = claude.url(),
        k = kimi.url()
    );
    let clock = clock();
    let c = clock.clone();
    let gw = TestGateway::start_with(&config, move |cfg| cfg.clock = c).await;
    // A 503 also cools the connection, and the breaker counts one failure per
    // connection per 5 s: each round lets both lapse so every request reaches Claude.
    for _ in 0..8 {
        assert_eq!(gw.post("/v1/messages", &json!({"model": "coding", "messages": []})).await.status(), 200);
        clock.advance_ms(5_001);
        gw.clear_cooldowns().await;
    }
    assert_eq!(claude.calls(), 8);
    let health = gw.mgmt_json("/api/monitoring/health").await;
    let breaker = health["breakers"]
        .as_array()
        .and_then(|l| l.iter().find(|b| b["provider"] == "anthropic"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(breaker["state"], "OPEN", "{health}");
    assert_eq!(breaker["failureCount"], 8);
    // Open: the combo goes straight to kimi.
    assert_eq!(gw.post("/v1/messages", &json!({"model": "coding", "messages": []})).await.status(), 200);
    assert_eq!(claude.calls(), 8);
    assert_eq!(kimi.calls(), 9);
    // After the 60 s reset timeout one probe goes through; its success closes.
    clock.advance_ms(60_001);
    claude.set_default(Reply::json(200, wire::anthropic_message("m", "back")));
    assert_eq!(gw.post("/v1/messages", &json!({"model": "coding", "messages": []})).await.status(), 200);
    assert_eq!(claude.calls(), 9);
    let health = gw.mgmt_json("/api/monitoring/health").await;
    assert_eq!(health["breakers"][0]["state"], "CLOSED", "{health}");
}

#[tokio::test]
async fn breaker_state_survives_a_restart() {
    let down = FakeUpstream::start(Reply::json(503, json!({}))).await;
    let config = format!(
        "{}\n[[connections]]\nid = \"c\"\nprovider = \"anthropic\"\napi_key = \"k\"\nbase_url = \"{}\"\n",
        client_key_toml(),
        down.url()
    );
    let clock = clock();
    let c = clock.clone();
    let mut first = TestGateway::start_with(&config, move |cfg| cfg.clock = c).await;
    for _ in 0..12 {
        let _ = first.post("/v1/messages", &request()).await;
        clock.advance_ms(5_001);
        first.clear_cooldowns().await;
    }
    let before = first.mgmt_json("/api/monitoring/health").await["breakers"].clone();
    assert_eq!(before[0]["state"], "OPEN", "{before}");
    let data_dir = first.dir.path().join("data");
    first.shutdown().await;

    let c = clock.clone();
    let second = TestGateway::start_with(&config, move |cfg| {
        cfg.data_dir = data_dir.clone();
        cfg.clock = c;
    })
    .await;
    let after = second.mgmt_json("/api/monitoring/health").await["breakers"].clone();
    assert_eq!(after, before);
    let response = second.post("/v1/messages", &request()).await;
    assert_eq!(response.status(), 503);
    assert_eq!(body_json(response).await["diagnostics"]["excluded"][0]["reason"], "circuit_open");
    assert_eq!(down.calls(), 12);
}

#[tokio::test]
async fn cooldowns_can_be_listed_and_cleared_but_terminal_states_stay() {
    let a = FakeUpstream::start(Reply::json(429, json!({})).with_header("retry-after", "600")).await;
    let b = FakeUpstream::start(Reply::json(
        403,
        json!({"error": {"type": "forbidden", "message": "Request not allowed"}}),
    ))
    .await;
    let clock = clock();
    let c = clock.clone();
    let gw = TestGateway::start_with(&two_keys(&a, &b), move |cfg| cfg.clock = c).await;
    // Three consecutive "Request not allowed" refusals of key-b: the first two only
    // cool it, the third bans it. An hour passes between requests so every cooldown
    // has lapsed and each request reaches both keys.
    for _ in 0..3 {
        let _ = gw.post("/v1/messages", &request()).await;
        clock.advance_ms(3_600_000);
    }
    let _ = gw.post("/v1/messages", &request()).await;
    assert_eq!(b.calls(), 3, "a banned connection must not be called again");
    let list = gw.mgmt_json("/api/resilience/cooldowns?provider=anthropic").await;
    let status = |id: &str| {
        list.as_array()
            .and_then(|l| l.iter().find(|c| c["connection"] == id))
            .map(|c| c["status"].clone())
            .unwrap_or_default()
    };
    assert_eq!(status("key-a"), "unavailable", "{list}");
    assert_eq!(status("key-b"), "banned", "{list}");
    assert!(!list.to_string().contains("sk-"), "credentials in the cooldown list");

    let cleared = body_json(
        gw.mgmt(Method::POST, "/api/resilience/cooldowns")
            .json(&json!({"all": true, "provider": "anthropic"}))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}")),
    )
    .await;
    assert_eq!(cleared["cleared"], 1, "{cleared}");
    assert_eq!(cleared["skippedTerminal"], 1, "{cleared}");
    let list = gw.mgmt_json("/api/resilience/cooldowns").await;
    let after = |id: &str| {
        list.as_array()
            .and_then(|l| l.iter().find(|c| c["connection"] == id))
            .map(|c| c["status"].clone())
            .unwrap_or_default()
    };
    assert_eq!(after("key-a"), "active");
    assert_eq!(after("key-b"), "banned");

    let bad = gw
        .mgmt(Method::POST, "/api/resilience/cooldowns")
        .json(&json!({}))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(bad.status(), 400);
}

#[tokio::test]
async fn a_bad_settings_patch_is_rejected_whole() {
    let up = FakeUpstream::start(Reply::json(200, json!({}))).await;
    let gw = TestGateway::start(&two_keys(&up, &up)).await;
    let before = gw.mgmt_json("/api/resilience").await;
    assert_eq!(before["modelLockout"]["enabled"], false);
    assert_eq!(before["streamStallCooldown"]["enabled"], false);

    let bad = gw
        .mgmt(Method::PATCH, "/api/resilience")
        .json(&json!({"streamStallCooldown": {"enabled": true}, "modelLockout": {"baseCooldownMs": 600000, "maxCooldownMs": 1000}}))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(bad.status(), 400);
    let error = body_json(bad).await["error"].clone();
    assert_eq!(error["code"], "validation_failed");
    assert!(
        error["issues"].as_array().is_some_and(|i| i
            .iter()
            .any(|x| x["path"].as_str().unwrap_or_default().starts_with("/modelLockout"))),
        "{error}"
    );
    assert_eq!(gw.mgmt_json("/api/resilience").await, before, "a rejected patch changed something");

    let unknown = gw
        .mgmt(Method::PATCH, "/api/resilience")
        .json(&json!({"providerBreaker": {"oauth": {"bogus": 1}}}))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(unknown.status(), 400);
    assert_eq!(body_json(unknown).await["error"]["issues"][0]["path"], "/providerBreaker/oauth/bogus");

    let good = gw
        .mgmt(Method::PATCH, "/api/resilience")
        .json(&json!({"streamStallCooldown": {"enabled": true}}))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(good.status(), 200);
    assert_eq!(gw.mgmt_json("/api/resilience").await["streamStallCooldown"]["enabled"], true);

    let lockout = gw
        .mgmt(Method::PATCH, "/api/resilience/model-lockout")
        .json(&json!({"enabled": true, "baseCooldownMs": 60000}))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(lockout.status(), 200);
    let settings = gw.mgmt_json("/api/resilience/model-lockout").await;
    assert_eq!(
        (settings["enabled"].clone(), settings["baseCooldownMs"].clone()),
        (json!(true), json!(60000))
    );
}

// settings-test: /streamRecovery/stallBudgetMs
#[tokio::test]
async fn a_stalled_stream_ends_with_an_error_event_and_records_without_cooling() {
    let frames = wire::anthropic_sse("claude-x", "partial");
    let ping = "event: ping\ndata: {\"type\": \"ping\"}\n\n".to_owned();
    let heartbeats = (0..8).map(|_| (std::time::Duration::from_millis(250), ping.clone()));
    let script: Vec<(std::time::Duration, String)> =
        std::iter::once((std::time::Duration::ZERO, frames[0].clone())).chain(heartbeats).collect();
    let up = FakeUpstream::start(Reply::Sse {
        status: 200,
        headers: vec![],
        frames: script,
        end: switchyard_testkit::StreamEnd::Hang,
    })
    .await;
    let gw = TestGateway::start(&two_keys(&up, &up)).await;
    let patched = gw
        .mgmt(Method::PATCH, "/api/resilience")
        .json(&json!({"streamRecovery": {"stallBudgetMs": 1000}}))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(patched.status(), 200);

    let started = tokio::time::Instant::now();
    let response =
        gw.post("/v1/messages", &json!({"model": "claude-x", "stream": true, "messages": []})).await;
    assert_eq!(response.status(), 200);
    let text = switchyard_tests::text(response).await;
    let took = started.elapsed();
    // Heartbeats every 250 ms do not count as progress: the stream ends ~1 s after
    // the last real frame, with a complete error event.
    assert!(
        took >= std::time::Duration::from_millis(900) && took < std::time::Duration::from_secs(5),
        "{took:?}"
    );
    let events = switchyard_tests::sse_data(&text);
    assert_eq!(events.first().map(|e| e["type"].clone()), Some(json!("message_start")));
    assert_eq!(events.last().map(|e| e["type"].clone()), Some(json!("error")), "{text}");
    assert!(up.wait_until(std::time::Duration::from_secs(5), |f| f.abandoned_streams() == 1).await);

    let rows = gw.wait_for_log_rows(1).await;
    assert_eq!(rows[0]["errorKind"], "stream_stall");
    let list = gw.mgmt_json("/api/resilience/cooldowns").await;
    let a = list
        .as_array()
        .and_then(|l| l.iter().find(|c| c["connection"] == "key-a"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(a["lastErrorKind"], "stream_stall", "{list}");
    assert_eq!(a["status"], "active", "a stall must not cool the connection by default: {list}");
}

#[tokio::test]
async fn a_quota_400_is_restated_as_429_and_fails_over() {
    let quota = json!({"error": {"message": "用户额度不足，请稍后再试", "type": "invalid_request_error"}});
    let a = FakeUpstream::start(Reply::json(400, quota.clone())).await;
    let b = FakeUpstream::start(Reply::json(200, wire::anthropic_message("m", "from b"))).await;
    let gw = TestGateway::start_with(&two_keys(&a, &b), |cfg| cfg.clock = clock()).await;
    let response = gw.post("/v1/messages", &request()).await;
    assert_eq!(response.status(), 200);
    assert_eq!(body_json(response).await["content"][0]["text"], "from b");
    let list = gw.mgmt_json("/api/resilience/cooldowns").await;
    let a_state = list
        .as_array()
        .and_then(|l| l.iter().find(|c| c["connection"] == "key-a"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(a_state["status"], "unavailable", "{list}");

    // With every key answering the same, the client hears a 429 with the 60 s hint.
    b.set_default(Reply::json(400, quota));
    gw.mgmt(Method::POST, "/api/resilience/cooldowns")
        .json(&json!({"all": true}))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let response = gw.post("/v1/messages", &request()).await;
    assert_eq!(response.status(), 429);
    assert_eq!(response.headers()["retry-after"], "60");

    // "No access to model" is not a quota problem: relayed as the upstream said it.
    let refusal = json!({"error": {"message": "无权访问模型 额度不足"}});
    let c = FakeUpstream::start(Reply::json(400, refusal.clone())).await;
    let gw2 = TestGateway::start(&two_keys(&c, &c)).await;
    let response = gw2.post("/v1/messages", &request()).await;
    assert_eq!(response.status(), 400);
    assert_eq!(body_json(response).await, refusal);
    assert_eq!(c.calls(), 1);
}
