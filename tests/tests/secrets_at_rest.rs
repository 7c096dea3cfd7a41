//! Secrets at rest (issue 10): a replaced or deleted upstream key is not findable in
//! any file of the data directory (the database, its write-ahead log) right after
//! the write that replaced it.

use reqwest::Method;
use serde_json::json;
use switchyard_testkit::{FakeUpstream, Reply, wire};
use switchyard_tests::{TestGateway, client_key_toml};

const OLD: &str = "sk-OLDSECRET-5f1c2d3e4a5b6c7d";
const NEW: &str = "sk-NEWSECRET-8e9f0a1b2c3d4e5f";

/// Whether any file in the data directory contains `needle`.
fn on_disk(gw: &TestGateway, needle: &str) -> Vec<String> {
    let dir = gw.dir.path().join("data");
    let mut found = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{e}")).flatten() {
        let bytes = std::fs::read(entry.path()).unwrap_or_default();
        if bytes.windows(needle.len()).any(|w| w == needle.as_bytes()) {
            found.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    found
}

#[tokio::test]
async fn a_replaced_or_deleted_key_is_not_on_disk_after_the_write() {
    let up = FakeUpstream::start(Reply::json(200, wire::anthropic_message("m", "ok"))).await;
    let gw = TestGateway::start(&client_key_toml()).await;
    let created = gw
        .mgmt(Method::POST, "/api/providers")
        .json(&json!({"id": "a", "provider": "anthropic", "authKind": "api_key", "apiKey": OLD, "baseUrl": up.url()}))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(created.status(), 201);
    assert!(!on_disk(&gw, OLD).is_empty(), "the stored key is on disk (the probe works)");

    let replaced = gw
        .mgmt(Method::PATCH, "/api/providers/a")
        .json(&json!({"apiKey": NEW}))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(replaced.status(), 200);
    assert_eq!(on_disk(&gw, OLD), Vec::<String>::new(), "the replaced key is still on disk");
    assert!(!on_disk(&gw, NEW).is_empty());

    let deleted = gw.mgmt(Method::DELETE, "/api/providers/a").send().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(deleted.status(), 204);
    assert_eq!(on_disk(&gw, NEW), Vec::<String>::new(), "the deleted connection's key is still on disk");
}

#[tokio::test]
async fn an_echoed_key_is_redacted_in_the_client_error_and_the_cooldown_list() {
    let own = "local-secret-0123456789";
    let echo = |status: u16, text: String| Reply::json(status, json!({"error": {"message": text}}));
    let a = FakeUpstream::start(echo(401, format!("invalid x-api-key: {own}"))).await;
    let b = FakeUpstream::start(echo(401, "invalid key sk-proj-EchoedByAProxy0123456789".to_owned())).await;
    let config = format!(
        "{}\n[[connections]]\nid = \"a\"\nprovider = \"openai\"\napi_key = \"{own}\"\nbase_url = \"{}\"\npriority = 1\n\n\
         [[connections]]\nid = \"b\"\nprovider = \"openai\"\napi_key = \"other-secret-987654321\"\nbase_url = \"{}\"\npriority = 2\n",
        client_key_toml(),
        a.url(),
        b.url()
    );
    let gw = TestGateway::start(&config).await;
    let request = json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]});
    let response = gw.post("/v1/chat/completions", &request).await;
    assert_eq!(response.status(), 502);
    let body = response.text().await.unwrap_or_default();
    assert!(body.contains("invalid x-api-key: [REDACTED]"), "{body}");
    assert!(!body.contains(own) && !body.contains("EchoedByAProxy"), "{body}");
    let cooldowns = gw.mgmt_json("/api/resilience/cooldowns").await.to_string();
    assert!(cooldowns.contains("[REDACTED]"), "{cooldowns}");
    assert!(!cooldowns.contains(own) && !cooldowns.contains("EchoedByAProxy"), "{cooldowns}");

    // A request error is relayed as the upstream said it, minus the key.
    gw.clear_cooldowns().await;
    a.set_default(echo(400, format!("unsupported parameter for key {own}")));
    let response = gw.post("/v1/chat/completions", &request).await;
    assert_eq!(response.status(), 400);
    let body = response.text().await.unwrap_or_default();
    assert_eq!(body, json!({"error": {"message": "unsupported parameter for key [REDACTED]"}}).to_string());
}
