//! One-click agent setup (issue 13): `POST /api/setup/claude-code` writes Claude
//! Code's settings with this gateway's URL and a client key made for it, that key
//! works, and `DELETE` puts the file back byte for byte and retires the key. A file
//! that cannot be parsed is refused and left alone. HOME is a temporary directory.

use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};
use switchyard_testkit::{FakeUpstream, Reply, wire};
use switchyard_tests::TestGateway;
use switchyard_types::settings::MapEnv;

fn config(up: &str) -> String {
    format!("[[connections]]\nid = \"a\"\nprovider = \"anthropic\"\napi_key = \"sk\"\nbase_url = \"{up}\"\n")
}

async fn start(home: &Path, up: &str) -> TestGateway {
    let home = home.display().to_string();
    TestGateway::start_with(&config(up), move |cfg| {
        cfg.env = Arc::new(MapEnv::from_pairs([("HOME", home.as_str())]));
    })
    .await
}

async fn call(gw: &TestGateway, method: reqwest::Method, path: &str) -> (u16, Value) {
    let response = gw.mgmt(method, path).send().await.unwrap_or_else(|e| panic!("{e}"));
    (response.status().as_u16(), response.json().await.unwrap_or_default())
}

#[tokio::test]
async fn claude_code_is_set_up_with_a_working_key_and_undone_byte_for_byte() {
    let up = FakeUpstream::start(Reply::json(200, wire::anthropic_message("claude-sonnet-4-6", "hi"))).await;
    let home = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let settings = home.path().join(".claude").join("settings.json");
    std::fs::create_dir_all(settings.parent().unwrap_or(home.path())).unwrap_or_else(|e| panic!("{e}"));
    let original = "{\n  \"model\": \"sonnet\",\n  \"permissions\": {\"allow\": [\"Bash(ls)\"]}\n}\n";
    std::fs::write(&settings, original).unwrap_or_else(|e| panic!("{e}"));
    let gw = start(home.path(), &up.url()).await;

    let (status, listed) = call(&gw, reqwest::Method::GET, "/api/setup").await;
    assert_eq!(status, 200);
    assert_eq!(
        listed[0],
        json!({"agent": "claude-code", "path": settings.display().to_string(), "configured": false})
    );

    let (status, done) = call(&gw, reqwest::Method::POST, "/api/setup/claude-code").await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["baseUrl"], gw.url(""));
    assert!(!done.to_string().contains("sy-"), "the key itself is only in the file: {done}");
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(&settings).unwrap_or_default()).unwrap_or_default();
    assert_eq!(written["model"], "sonnet", "the rest is kept");
    assert_eq!(written["env"]["ANTHROPIC_BASE_URL"], gw.url(""));
    let key = written["env"]["ANTHROPIC_AUTH_TOKEN"].as_str().unwrap_or_default().to_owned();
    // The key Claude Code will send works.
    let body = json!({"model": "claude-sonnet-4-6", "max_tokens": 5, "messages": []});
    let sent = gw.http.post(gw.url("/v1/messages")).bearer_auth(&key).json(&body).send().await;
    assert_eq!(sent.map(|r| r.status().as_u16()).ok(), Some(200));
    let keys = gw.mgmt_json("/api/keys").await;
    assert!(keys.as_array().is_some_and(|k| k.iter().any(|k| k["name"] == done["keyName"])), "{keys}");
    assert_eq!(call(&gw, reqwest::Method::GET, "/api/setup").await.1[0]["configured"], true);

    let (status, undone) = call(&gw, reqwest::Method::DELETE, "/api/setup/claude-code").await;
    assert_eq!((status, &undone["restored"]), (200, &json!(true)), "{undone}");
    assert_eq!(std::fs::read_to_string(&settings).unwrap_or_default(), original, "byte for byte");
    let sent = gw.http.post(gw.url("/v1/messages")).bearer_auth(&key).json(&body).send().await;
    assert_eq!(sent.map(|r| r.status().as_u16()).ok(), Some(401), "the key made for it is gone");
    let (status, _) = call(&gw, reqwest::Method::DELETE, "/api/setup/claude-code").await;
    assert_eq!(status, 404, "nothing left to undo");

    // Edited after setup: undo refuses to lose the edit, unless forced.
    assert_eq!(call(&gw, reqwest::Method::POST, "/api/setup/claude-code").await.0, 200);
    let edited = std::fs::read_to_string(&settings)
        .unwrap_or_default()
        .replace("\"model\"", "\"theme\": \"dark\",\n  \"model\"");
    std::fs::write(&settings, &edited).unwrap_or_else(|e| panic!("{e}"));
    let (status, refused) = call(&gw, reqwest::Method::DELETE, "/api/setup/claude-code").await;
    assert_eq!((status, &refused["error"]["code"]), (409, &json!("conflict")), "{refused}");
    assert_eq!(std::fs::read_to_string(&settings).unwrap_or_default(), edited);
    let (status, _) = call(&gw, reqwest::Method::DELETE, "/api/setup/claude-code?force=true").await;
    assert_eq!(status, 200);
    assert_eq!(std::fs::read_to_string(&settings).unwrap_or_default(), original);
}

#[tokio::test]
async fn codex_without_a_config_gets_one_and_loses_it_again_and_junk_is_left_alone() {
    let up = FakeUpstream::start(Reply::json(200, wire::responses_json("gpt-5.5", "hi"))).await;
    let home = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let gw = start(home.path(), &up.url()).await;
    let config = home.path().join(".codex").join("config.toml");
    let (status, done) = call(&gw, reqwest::Method::POST, "/api/setup/codex").await;
    assert_eq!(status, 200, "{done}");
    let parsed: toml::Table =
        toml::from_str(&std::fs::read_to_string(&config).unwrap_or_default()).unwrap_or_default();
    assert_eq!(parsed["model_provider"].as_str(), Some("switchyard"));
    assert_eq!(parsed["model_providers"]["switchyard"]["base_url"].as_str(), Some(gw.url("/v1").as_str()));
    let (status, undone) = call(&gw, reqwest::Method::DELETE, "/api/setup/codex").await;
    assert_eq!((status, &undone["restored"]), (200, &json!(false)));
    assert!(!config.exists());

    std::fs::write(&config, "model = = broken").unwrap_or_else(|e| panic!("{e}"));
    let keys_before = gw.mgmt_json("/api/keys").await;
    let (status, refused) = call(&gw, reqwest::Method::POST, "/api/setup/codex").await;
    assert_eq!((status, &refused["error"]["code"]), (409, &json!("conflict")), "{refused}");
    assert!(
        refused["error"]["message"].as_str().is_some_and(|m| m.contains("cannot be parsed")),
        "{refused}"
    );
    assert_eq!(std::fs::read_to_string(&config).unwrap_or_default(), "model = = broken");
    assert_eq!(gw.mgmt_json("/api/keys").await, keys_before, "no key made for a file it could not write");
    let (status, _) = call(&gw, reqwest::Method::POST, "/api/setup/vim").await;
    assert_eq!(status, 404);
}
