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
