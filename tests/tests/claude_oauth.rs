//! Claude OAuth connections (issue 4, scenario 6): an expiring access token is
//! refreshed once for many concurrent requests, a 401 triggers one refresh and a
//! retry on the same connection, and refreshes that keep failing end in `expired`.

use std::sync::Arc;

use reqwest::Method;
use serde_json::{Value, json};
use switchyard_gateway::clock::ManualClock;
use switchyard_testkit::{FakeUpstream, Reply, wire};
use switchyard_tests::{TestGateway, client_key_toml, json as body_json};
use switchyard_types::UnixMillis;

const NOW: i64 = 1_900_000_000_000;

fn config(upstream: &FakeUpstream, token: &FakeUpstream, expires_at: i64) -> String {
    format!(
        r#"{keys}
[[connections]]
id = "claude-a"
provider = "anthropic"
auth = "oauth"
access_token = "oat-old"
refresh_token = "ort-old"
expires_at = {expires_at}
base_url = "{u}"
[connections.provider_specific]
oauthTokenUrl = "{t}/v1/oauth/token"
"#,
        keys = client_key_toml(),
        u = upstream.url(),
        t = token.url()
    )
}

fn fresh_token() -> Value {
    json!({"access_token": "oat-new", "refresh_token": "ort-new", "expires_in": 28800, "token_type": "Bearer"})
}

fn request() -> Value {
    json!({"model": "claude-sonnet-4-6", "max_tokens": 5, "messages": []})
}

async fn start(config: &str) -> (TestGateway, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(UnixMillis(NOW)));
    let c = clock.clone();
    (TestGateway::start_with(config, move |cfg| cfg.clock = c).await, clock)
}

#[tokio::test]
async fn an_expiring_token_is_refreshed_once_for_many_concurrent_requests() {
    let upstream = FakeUpstream::start(Reply::json(200, wire::anthropic_message("m", "ok"))).await;
    let mut token = FakeUpstream::start(Reply::json(200, fresh_token())).await;
    token.expect_calls(1);
    let (gw, _clock) = start(&config(&upstream, &token, NOW + 60_000)).await;

    let body = request();
    let requests = (0..10).map(|_| gw.post("/v1/messages", &body));
    let statuses: Vec<u16> =
        futures_util::future::join_all(requests).await.iter().map(|r| r.status().as_u16()).collect();
    assert_eq!(statuses, vec![200; 10]);

    let sent = token.last_request().unwrap_or_else(|| panic!("no refresh"));
    assert_eq!(sent.path, "/v1/oauth/token");
    assert_eq!(sent.json()["grant_type"], "refresh_token");
    assert_eq!(sent.json()["refresh_token"], "ort-old");
    assert!(sent.json()["client_id"].is_string());
    let bearers: Vec<Option<String>> =
        upstream.requests().iter().map(|r| r.header("authorization").map(str::to_owned)).collect();
    assert_eq!(bearers, vec![Some("Bearer oat-new".to_owned()); 10]);
    let view = gw.mgmt_json("/api/providers/claude-a").await;
    assert_eq!(view["tokenExpiresAt"], NOW + 28_800_000);
    assert!(!view.to_string().contains("oat-new") && !view.to_string().contains("ort-new"));
    // A refresh is the gateway's upkeep, not an edit: a form opened before it can
    // still save with the version it loaded.
    assert_eq!(view["version"], 1, "{view}");
}

#[tokio::test]
async fn a_401_refreshes_the_token_and_retries_the_same_connection() {
    let upstream = FakeUpstream::start(Reply::json(200, wire::anthropic_message("m", "ok"))).await;
    upstream.push(Reply::json(401, wire::anthropic_error("authentication_error", "token expired")));
    let mut token = FakeUpstream::start(Reply::json(200, fresh_token())).await;
    token.expect_calls(1);
    let (gw, _clock) = start(&config(&upstream, &token, NOW + 3_600_000)).await;
    let response = gw.post("/v1/messages", &request()).await;
    assert_eq!(response.status(), 200);
    assert_eq!(body_json(response).await["content"][0]["text"], "ok");
    let bearers: Vec<Option<String>> =
        upstream.requests().iter().map(|r| r.header("authorization").map(str::to_owned)).collect();
    assert_eq!(bearers, vec![Some("Bearer oat-old".to_owned()), Some("Bearer oat-new".to_owned())]);
}

#[tokio::test]
async fn refreshes_that_keep_failing_end_in_expired() {
    let mut upstream = FakeUpstream::start(Reply::json(200, wire::anthropic_message("m", "ok"))).await;
    upstream.expect_calls(0);
    let token = FakeUpstream::start(Reply::json(400, json!({"error": "invalid_grant"}))).await;
    let (gw, clock) = start(&config(&upstream, &token, NOW - 1_000)).await;
    let mut statuses = Vec::new();
    for _ in 0..6 {
        statuses.push(gw.post("/v1/messages", &request()).await.status().as_u16());
        // Let the connection's cooldown lapse so every request reaches it again.
        clock.advance_ms(3_600_000);
    }
    let list = gw.mgmt_json("/api/resilience/cooldowns").await;
    assert_eq!(list[0]["status"], "expired", "{list}");
    let refreshes = token.calls();
    assert_eq!(refreshes, 4, "the first try plus EXPIRED_RETRY_MAX = 3 retries: {statuses:?}");
    // Once expired, the connection is out of rotation: no more refresh attempts.
    assert_eq!(statuses[..4], [502, 502, 502, 502]);
    assert_eq!(statuses[4..], [404, 404]);
    // New credentials lift the terminal state.
    let patched = gw
        .mgmt(Method::PATCH, "/api/providers/claude-a")
        .json(&json!({"accessToken": "oat-manual", "expiresAt": NOW + 100_000_000}))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(patched.status(), 200);
    let list = gw.mgmt_json("/api/resilience/cooldowns").await;
    assert_eq!(list[0]["status"], "active", "{list}");
}
