//! Honest status (issue 13): every connection has one derived status, and the
//! connection list and the health API say the same thing: an open provider breaker,
//! a cooldown with its end, a failed Test (until something succeeds on it), a
//! disabled switch, paused routing. Plus the account's usage windows, read from
//! the upstream's own headers, and the provider presets. Time runs on a manual clock.

use std::sync::Arc;

use serde_json::{Value, json};
use switchyard_gateway::clock::ManualClock;
use switchyard_testkit::{FakeUpstream, Reply, wire};
use switchyard_tests::{TestGateway, client_key_toml, refused_port};
use switchyard_types::UnixMillis;
use switchyard_types::settings::MapEnv;

const NOW: UnixMillis = UnixMillis(1_900_000_000_000);

fn request() -> Value {
    json!({"model": "glm/glm-4.6", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]})
}

fn config(glm: &str, extra: &str) -> String {
    format!(
        "{keys}\n[[connections]]\nid = \"glm-a\"\nprovider = \"glm\"\napi_format = \"anthropic\"\napi_key = \"k\"\n\
         base_url = \"{glm}\"\nmodels = [\"glm-4.6\"]\n{extra}\n",
        keys = client_key_toml()
    )
}

async fn start(glm: &str, extra: &str) -> (TestGateway, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(NOW));
    let c = clock.clone();
    let gw = TestGateway::start_with(&config(glm, extra), move |cfg| cfg.clock = c).await;
    (gw, clock)
}

/// The connection's status in `/api/providers`, and the same in the health API.
async fn status(gw: &TestGateway, id: &str) -> Value {
    let listed = gw.mgmt_json("/api/providers").await;
    let from_list = listed
        .as_array()
        .and_then(|l| l.iter().find(|c| c["id"] == id))
        .map(|c| c["status"].clone())
        .unwrap_or_default();
    let health = gw.mgmt_json("/api/monitoring/health").await;
    let from_health = health["connections"]
        .as_array()
        .and_then(|l| l.iter().find(|c| c["id"] == id))
        .map(|c| c["status"].clone())
        .unwrap_or_default();
    assert_eq!(from_list, from_health, "one status, shown the same everywhere");
    let one = gw.mgmt_json(&format!("/api/providers/{id}")).await;
    assert_eq!(one["status"], from_list);
    from_list
}

#[tokio::test]
async fn an_open_provider_breaker_shows_on_the_connection_and_in_the_health_counts() {
    let up = FakeUpstream::start(Reply::json(503, wire::anthropic_error("api_error", "down"))).await;
    let (gw, clock) = start(&up.url(), "").await;
    assert_eq!(status(&gw, "glm-a").await["state"], "routable");
    gw.patch_settings(
        &json!({"providerBreaker": {"apikey": {"failureThreshold": 2, "degradationThreshold": 1}}}),
    )
    .await;
    for _ in 0..2 {
        assert_eq!(gw.post("/v1/messages", &request()).await.status(), 502);
        clock.advance_ms(5_001);
        gw.clear_cooldowns().await;
    }
    let s = status(&gw, "glm-a").await;
    assert_eq!(
        (&s["state"], &s["routable"], &s["label"]),
        (&json!("breaker-open"), &json!(false), &json!("Breaker open"))
    );
    assert!(s["until"].as_i64().is_some_and(|u| u > NOW.0), "{s}");
    assert!(s["detail"].as_str().is_some_and(|d| d.contains("'glm'") && d.contains("5xx")), "{s}");
    let health = gw.mgmt_json("/api/monitoring/health").await;
    assert_eq!(health["connectionsOutOfRotation"], 1, "the breaker counts as out of rotation: {health}");
}

#[tokio::test]
async fn a_cooldown_shows_its_end_and_its_reason_in_words() {
    let up = FakeUpstream::start(Reply::json(200, wire::anthropic_message("glm-4.6", "ok"))).await;
    up.push(
        Reply::json(
            429,
            json!({"type": "error", "error": {"type": "rate_limit_error", "message": "{\"raw\":1}"}}),
        )
        .with_header("retry-after", "30"),
    );
    let (gw, clock) = start(&up.url(), "").await;
    assert_eq!(gw.post("/v1/messages", &request()).await.status(), 429);
    let s = status(&gw, "glm-a").await;
    assert_eq!((&s["state"], &s["routable"]), (&json!("cooling"), &json!(false)), "{s}");
    assert_eq!(s["until"], NOW.0 + 30_000);
    let detail = s["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("rate limited by the upstream (HTTP 429)") && !detail.contains("raw"),
        "{detail}"
    );
    clock.advance_ms(30_000);
    assert_eq!(status(&gw, "glm-a").await["state"], "routable", "a lapsed cooldown no longer counts");
}

#[tokio::test]
async fn a_failed_test_shows_on_the_row_until_a_request_succeeds_there() {
    let (_port, dead) = refused_port().await;
    let (gw, _clock) = start(&dead, "").await;
    let tested = gw.mgmt(reqwest::Method::POST, "/api/providers/glm-a/test").send().await;
    let tested: Value = match tested {
        Ok(r) => r.json().await.unwrap_or_default(),
        Err(e) => panic!("{e}"),
    };
    assert_eq!(tested["ok"], false);
    let s = status(&gw, "glm-a").await;
    assert_eq!((&s["state"], &s["label"]), (&json!("test-failed"), &json!("Test failed")), "{s}");
    assert!(s["detail"].as_str().is_some_and(|d| d.contains("could not connect")), "{s}");
    let conn = gw.mgmt_json("/api/providers/glm-a").await;
    assert_eq!(conn["lastTest"]["ok"], false);
    // Fixed: pointed at a live upstream (an edit), the old result no longer applies.
    let up = FakeUpstream::start(Reply::json(200, wire::anthropic_message("glm-4.6", "ok"))).await;
    let patched = gw
        .mgmt(reqwest::Method::PATCH, "/api/providers/glm-a")
        .json(&json!({"baseUrl": up.url()}))
        .send()
        .await;
    assert_eq!(patched.map(|r| r.status().as_u16()).ok(), Some(200));
    assert_eq!(status(&gw, "glm-a").await["state"], "routable");
    // Failed again, then a request succeeds through it: the failure is superseded.
    up.push(Reply::json(401, wire::anthropic_error("authentication_error", "bad key")));
    let tested = gw.mgmt(reqwest::Method::POST, "/api/providers/glm-a/test").send().await;
    assert_eq!(tested.map(|r| r.status().as_u16()).ok(), Some(200));
    let s = status(&gw, "glm-a").await;
    assert_eq!(s["state"], "test-failed", "{s}");
    assert!(s["detail"].as_str().is_some_and(|d| d.contains("HTTP 401")), "{s}");
    assert_eq!(gw.post("/v1/messages", &request()).await.status(), 200);
    assert_eq!(status(&gw, "glm-a").await["state"], "routable");
}

#[tokio::test]
async fn disabled_and_paused_are_statuses_too() {
    let up = FakeUpstream::start(Reply::json(200, wire::anthropic_message("glm-4.6", "ok"))).await;
    let (gw, _clock) = start(&up.url(), "enabled = false").await;
    let s = status(&gw, "glm-a").await;
    assert_eq!((&s["state"], &s["routable"]), (&json!("disabled"), &json!(false)));
    let patched =
        gw.mgmt(reqwest::Method::PATCH, "/api/providers/glm-a").json(&json!({"enabled": true})).send().await;
    assert_eq!(patched.map(|r| r.status().as_u16()).ok(), Some(200));
    let paused =
        gw.mgmt(reqwest::Method::POST, "/api/gateway/pause").json(&json!({"paused": true})).send().await;
    assert_eq!(paused.map(|r| r.status().as_u16()).ok(), Some(200));
    assert_eq!(status(&gw, "glm-a").await["state"], "paused");
}

#[tokio::test]
async fn claude_usage_windows_are_read_from_every_answer_and_shown_on_the_connection() {
    let reply = Reply::json(200, wire::anthropic_message("claude-sonnet-4-6", "ok"))
        .with_header("anthropic-ratelimit-unified-status", "allowed_warning")
        .with_header("anthropic-ratelimit-unified-5h-status", "allowed_warning")
        .with_header("anthropic-ratelimit-unified-5h-utilization", "0.87")
        .with_header("anthropic-ratelimit-unified-5h-reset", "1900003600")
        .with_header("anthropic-ratelimit-unified-7d-status", "allowed")
        .with_header("anthropic-ratelimit-unified-7d-utilization", "0.31")
        .with_header("anthropic-ratelimit-unified-7d-reset", "1900400000")
        .with_header("anthropic-ratelimit-unified-representative-claim", "five_hour");
    let up = FakeUpstream::start(reply).await;
    let config = format!(
        "{keys}\n[[connections]]\nid = \"claude-a\"\nprovider = \"anthropic\"\nauth = \"oauth\"\n\
         access_token = \"oat\"\nbase_url = \"{u}\"\n",
        keys = client_key_toml(),
        u = up.url()
    );
    let clock = Arc::new(ManualClock::new(NOW));
    let c = clock.clone();
    let gw = TestGateway::start_with(&config, move |cfg| cfg.clock = c).await;
    assert_eq!(gw.mgmt_json("/api/providers/claude-a").await["usage"], Value::Null, "nothing read yet");
    let response = gw.post("/v1/messages", &json!({"model": "claude-sonnet-4-6", "messages": []})).await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["anthropic-ratelimit-unified-5h-utilization"],
        "0.87",
        "relayed to the agent too"
    );
    let usage = gw.mgmt_json("/api/providers/claude-a").await["usage"].clone();
    assert_eq!(usage["source"], "claude-unified");
    assert_eq!(usage["status"], "allowed_warning");
    assert_eq!(usage["bindingWindow"], "5h");
    assert_eq!(usage["observedAt"], NOW.0);
    assert_eq!(
        usage["windows"],
        json!([
            {"window": "5h", "windowMinutes": 300, "usedPermille": 870, "resetsAt": 1_900_003_600_000_i64, "status": "allowed_warning"},
            {"window": "7d", "windowMinutes": 10080, "usedPermille": 310, "resetsAt": 1_900_400_000_000_i64, "status": "allowed"}
        ])
    );
}

#[tokio::test]
async fn presets_fill_a_working_connection_and_their_base_url_can_be_pointed_elsewhere() {
    let up = FakeUpstream::start(Reply::json(200, wire::chat_completion("glm-4.6", "from glm"))).await;
    let mirror = up.url();
    let gw = TestGateway::start_with(&client_key_toml(), move |cfg| {
        let value = format!("{mirror}/");
        cfg.env = Arc::new(MapEnv::from_pairs([("SWITCHYARD_PRESET_GLM_BASE_URL", value.as_str())]));
    })
    .await;
    let presets = gw.mgmt_json("/api/presets").await;
    let glm =
        presets.as_array().and_then(|l| l.iter().find(|p| p["id"] == "glm")).cloned().unwrap_or_default();
    assert_eq!(glm["baseUrl"], up.url(), "the override, without its trailing slash: {glm}");
    assert_eq!(
        (&glm["provider"], &glm["apiFormat"], &glm["authKind"]),
        (&json!("glm"), &json!("openai-chat"), &json!("api_key"))
    );
    let others = presets.as_array().map(|l| {
        l.iter().filter(|p| p["id"] != "glm").all(|p| {
            p["baseUrl"]
                .as_str()
                .is_some_and(|u| !u.contains("127.0.0.1:") || u.contains("11434") || u.contains("1234"))
        })
    });
    assert_eq!(others, Some(true), "the other presets keep their own base URLs");
    // What the form sends from the preset plus the key, and nothing else.
    let created = gw
        .mgmt(reqwest::Method::POST, "/api/providers")
        .json(&json!({
            "provider": glm["provider"], "apiFormat": glm["apiFormat"], "authKind": glm["authKind"],
            "baseUrl": glm["baseUrl"], "models": glm["models"], "apiKey": "glm-secret-key",
        }))
        .send()
        .await;
    assert_eq!(created.map(|r| r.status().as_u16()).ok(), Some(201));
    let response = gw.post("/v1/chat/completions", &json!({"model": "glm-4.6", "messages": []})).await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        up.last_request().and_then(|r| r.header("authorization").map(str::to_owned)).as_deref(),
        Some("Bearer glm-secret-key")
    );
}
