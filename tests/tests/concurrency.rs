//! Concurrent management writers lose nothing (issue 10): two PATCHes of different
//! fields racing, 100 rounds, both survive; 50 writers at once, all survive; a write
//! that names a stale version (`If-Match`) is refused with 412 and changes nothing.
//! Real gateway, real SQLite, real HTTP on loopback.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use switchyard_testkit::{FakeUpstream, Reply, wire};
use switchyard_tests::{TestGateway, client_key_toml, text};

async fn gateway() -> (TestGateway, FakeUpstream) {
    let up = FakeUpstream::start(Reply::json(200, wire::anthropic_message("m", "ok"))).await;
    let config = format!(
        "{}\n[[connections]]\nid = \"a\"\nprovider = \"anthropic\"\napi_key = \"k\"\nbase_url = \"{}\"\n",
        client_key_toml(),
        up.url()
    );
    (TestGateway::start(&config).await, up)
}

async fn send(
    gw: &TestGateway,
    method: Method,
    path: &str,
    if_match: Option<&str>,
    body: Value,
) -> (u16, Value) {
    let mut request = gw.mgmt(method, path).json(&body);
    if let Some(tag) = if_match {
        request = request.header("if-match", tag);
    }
    let response = request.send().await.unwrap_or_else(|e| panic!("{path}: {e}"));
    let status = response.status().as_u16();
    let body = text(response).await;
    (status, serde_json::from_str(&body).unwrap_or(Value::String(body)))
}

async fn etag(gw: &TestGateway, path: &str) -> String {
    let response = gw.mgmt(Method::GET, path).send().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(response.status(), StatusCode::OK);
    response.headers().get("etag").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned()
}

#[tokio::test]
async fn two_concurrent_settings_patches_on_different_fields_both_survive_100_rounds() {
    let (gw, _up) = gateway().await;
    for round in 0..100_u32 {
        let stall = 30_000 + round * 100;
        let readiness = 20_000 + round * 100;
        let a = send(
            &gw,
            Method::PATCH,
            "/api/resilience",
            None,
            json!({"streamRecovery": {"stallBudgetMs": stall}}),
        );
        let b = send(
            &gw,
            Method::PATCH,
            "/api/resilience",
            None,
            json!({"streamRecovery": {"readinessBudgetMs": readiness}}),
        );
        let ((sa, ba), (sb, bb)) = tokio::join!(a, b);
        assert_eq!((sa, sb), (200, 200), "round {round}: {ba} {bb}");
        let now = gw.mgmt_json("/api/resilience").await;
        assert_eq!(now["streamRecovery"]["stallBudgetMs"], stall, "round {round} lost a change: {now}");
        assert_eq!(
            now["streamRecovery"]["readinessBudgetMs"], readiness,
            "round {round} lost a change: {now}"
        );
    }
}

#[tokio::test]
async fn two_concurrent_connection_patches_on_different_fields_both_survive_100_rounds() {
    let (gw, _up) = gateway().await;
    for round in 0..100_i32 {
        let name = format!("account {round}");
        let a = send(&gw, Method::PATCH, "/api/providers/a", None, json!({"name": name}));
        let b = send(&gw, Method::PATCH, "/api/providers/a", None, json!({"priority": round}));
        let ((sa, ba), (sb, bb)) = tokio::join!(a, b);
        assert_eq!((sa, sb), (200, 200), "round {round}: {ba} {bb}");
        let now = gw.mgmt_json("/api/providers/a").await;
        assert_eq!(
            (now["name"].as_str(), now["priority"].as_i64()),
            (Some(name.as_str()), Some(i64::from(round)))
        );
    }
}

#[tokio::test]
async fn fifty_concurrent_writers_lose_nothing() {
    let (gw, _up) = gateway().await;
    let writers = (0..50).map(|i| {
        send(&gw, Method::PATCH, "/api/providers/a", None, json!({"providerSpecific": {format!("w{i}"): i}}))
    });
    let answers = futures_util::future::join_all(writers).await;
    assert!(answers.iter().all(|(s, _)| *s == 200), "{answers:?}");
    let now = gw.mgmt_json("/api/providers/a").await;
    let kept = (0..50).filter(|i| now["providerSpecific"][format!("w{i}")] == json!(i)).count();
    assert_eq!(kept, 50, "{now}");
    assert_eq!(now["version"], 51, "one version per acknowledged write: {now}");
}

#[tokio::test]
async fn a_stale_if_match_is_refused_with_412_and_changes_nothing() {
    let (gw, _up) = gateway().await;
    // Settings: the ETag is the body's version; a write made to it moves it on.
    let tag = etag(&gw, "/api/resilience").await;
    let (status, body) = send(
        &gw,
        Method::PATCH,
        "/api/resilience",
        Some(&tag),
        json!({"streamRecovery": {"stallBudgetMs": 45_000}}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(format!("\"{}\"", body["version"]), etag(&gw, "/api/resilience").await);
    assert_ne!(etag(&gw, "/api/resilience").await, tag);
    let (status, body) = send(
        &gw,
        Method::PATCH,
        "/api/resilience",
        Some(&tag),
        json!({"streamRecovery": {"stallBudgetMs": 50_000}}),
    )
    .await;
    assert_eq!(status, 412, "{body}");
    assert_eq!(body["error"]["code"], "precondition_failed", "{body}");
    assert_eq!(gw.mgmt_json("/api/resilience").await["streamRecovery"]["stallBudgetMs"], 45_000);
    // The model-lockout page edits the same document: its old tag is stale too.
    let (status, _) =
        send(&gw, Method::PATCH, "/api/resilience/model-lockout", Some(&tag), json!({"enabled": false}))
            .await;
    assert_eq!(status, 412);
    let fresh = etag(&gw, "/api/resilience/model-lockout").await;
    let (status, body) =
        send(&gw, Method::PATCH, "/api/resilience/model-lockout", Some(&fresh), json!({"enabled": false}))
            .await;
    assert_eq!(status, 200, "{body}");

    // A connection: a rename made to version 1 after another change is refused.
    let tag = etag(&gw, "/api/providers/a").await;
    assert_eq!(tag, "\"1\"");
    assert_eq!(send(&gw, Method::PATCH, "/api/providers/a", Some(&tag), json!({"priority": 3})).await.0, 200);
    let (status, body) =
        send(&gw, Method::PATCH, "/api/providers/a", Some(&tag), json!({"name": "stale"})).await;
    assert_eq!(status, 412, "{body}");
    assert_eq!(gw.mgmt_json("/api/providers/a").await["name"], "a");
    let (status, _) = send(&gw, Method::DELETE, "/api/providers/a", Some(&tag), json!({})).await;
    assert_eq!(status, 412, "a stale delete keeps the connection");
    assert_eq!(gw.mgmt_json("/api/providers/a").await["id"], "a");

    // A combo: created at version 1, replaced at 2; a write to 1 is refused.
    let combo = json!({"name": "c", "strategy": "priority", "targets": [{"model": "anthropic/claude-x"}]});
    let (status, body) = send(&gw, Method::POST, "/api/combos", Some("\"0\""), combo.clone()).await;
    assert_eq!((status, body["version"].clone()), (200, json!(1)), "{body}");
    let changed = json!({"name": "c", "strategy": "priority", "targets": [{"model": "anthropic/claude-y"}]});
    assert_eq!(send(&gw, Method::POST, "/api/combos", Some("\"1\""), changed.clone()).await.0, 200);
    let (status, _) = send(&gw, Method::POST, "/api/combos", Some("\"1\""), combo.clone()).await;
    assert_eq!(status, 412);
    let combos = gw.mgmt_json("/api/combos").await;
    assert_eq!(combos[0]["targets"][0]["model"], "anthropic/claude-y", "{combos}");
    assert_eq!(combos[0]["version"], 2);

    // A malformed If-Match is a 400 naming the header.
    let (status, body) =
        send(&gw, Method::PATCH, "/api/providers/a", Some("yesterday"), json!({"priority": 1})).await;
    assert_eq!(status, 400, "{body}");
    assert!(body.to_string().contains("If-Match"), "{body}");
}
