//! Adding a Claude subscription account from Claude Code's login on this machine
//! through the running gateway (issue 13: the UI's "Import Claude Code login"
//! button; the same code as `switchyard import-claude`): the connection routes at
//! once, tokens never come back, a re-import is idempotent, and a file that is not
//! a Claude Code login is refused naming it.

use serde_json::{Value, json};
use switchyard_testkit::{FakeUpstream, Reply, wire};
use switchyard_tests::{TestGateway, client_key_toml};

fn credentials(access: &str) -> Value {
    json!({"claudeAiOauth": {
        "accessToken": access,
        "refreshToken": "sk-ant-ort01-REFRESH-SECRET",
        "expiresAt": 1_900_000_000_000_i64,
        "scopes": ["user:inference"],
        "subscriptionType": "max"
    }})
}

async fn import(gw: &TestGateway, body: &Value) -> (u16, Value) {
    let response = gw
        .mgmt(reqwest::Method::POST, "/api/providers/import-claude-login")
        .json(body)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    (response.status().as_u16(), response.json().await.unwrap_or_default())
}

#[tokio::test]
async fn a_claude_code_login_becomes_a_working_connection_without_a_restart() {
    let up = FakeUpstream::start(Reply::json(200, wire::anthropic_message("claude-sonnet-4-6", "hi"))).await;
    let gw = TestGateway::start(&client_key_toml()).await;
    let file = gw.dir.path().join("credentials.json");
    let write = |v: &Value| std::fs::write(&file, v.to_string()).unwrap_or_else(|e| panic!("{e}"));
    write(&credentials("sk-ant-oat01-ACCESS-SECRET"));
    let path = file.display().to_string();

    let (status, body) = import(&gw, &json!({"path": path})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!((&body["change"], &body["subscription"]), (&json!("created"), &json!("max")));
    let conn = &body["connection"];
    assert_eq!(
        (&conn["id"], &conn["authKind"], &conn["provider"]),
        (&json!("claude-login"), &json!("oauth"), &json!("anthropic"))
    );
    assert_eq!((&conn["hasSecret"], &conn["hasRefreshToken"]), (&json!(true), &json!(true)));
    assert_eq!(conn["tokenExpiresAt"], 1_900_000_000_000_i64);
    assert!(!body.to_string().contains("SECRET"), "no token in the answer: {body}");

    // Routes at once: point it at the fake and send a request.
    let patched = gw
        .mgmt(reqwest::Method::PATCH, "/api/providers/claude-login")
        .json(&json!({"baseUrl": up.url()}))
        .send()
        .await;
    assert_eq!(patched.map(|r| r.status().as_u16()).ok(), Some(200));
    let response = gw.post("/v1/messages", &json!({"model": "claude-sonnet-4-6", "messages": []})).await;
    assert_eq!(response.status(), 200);
    let sent = up.last_request().and_then(|r| r.header("authorization").map(str::to_owned));
    assert_eq!(sent.as_deref(), Some("Bearer sk-ant-oat01-ACCESS-SECRET"));

    // The same login again: unchanged, and the base URL set since is kept.
    let (status, again) = import(&gw, &json!({"path": path})).await;
    assert_eq!((status, &again["change"]), (200, &json!("unchanged")), "{again}");
    assert_eq!(again["connection"]["baseUrl"], up.url());
    // A refreshed login: updated.
    write(&credentials("sk-ant-oat01-NEWER-SECRET"));
    let (_, newer) = import(&gw, &json!({"path": path})).await;
    assert_eq!(newer["change"], "updated");
}

#[tokio::test]
async fn what_is_not_a_claude_code_login_is_refused_naming_the_file() {
    let gw = TestGateway::start(&client_key_toml()).await;
    let missing = gw.dir.path().join("nope.json").display().to_string();
    let (status, body) = import(&gw, &json!({"path": missing})).await;
    assert_eq!((status, &body["error"]["code"]), (400, &json!("validation_failed")), "{body}");
    assert_eq!(body["error"]["issues"][0]["path"], "/path");
    assert!(
        body["error"]["message"].as_str().is_some_and(|m| m.contains("nope.json") && m.contains("claude")),
        "{body}"
    );
    let other = gw.dir.path().join("other.json");
    std::fs::write(&other, "{\"hello\": 1}").unwrap_or_else(|e| panic!("{e}"));
    let (status, body) = import(&gw, &json!({"path": other.display().to_string()})).await;
    assert_eq!(status, 400, "{body}");
    assert!(body["error"]["message"].as_str().is_some_and(|m| m.contains("claudeAiOauth")), "{body}");
    assert_eq!(gw.mgmt_json("/api/providers").await, json!([]), "nothing was written");
    let (status, _) = import(&gw, &json!({"path": "x", "token": "y"})).await;
    assert_eq!(status, 400, "unknown fields are refused");
}
