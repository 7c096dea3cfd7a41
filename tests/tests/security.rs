//! SPEC §2 API keys, DESIGN §7 secrets: client keys required and answered in the
//! client's format, the Host guard, the management token, bad input, and no secret
//! in any log line or API response.

use std::io::Write;
use std::sync::{Arc, Mutex};

use serde_json::json;
use switchyard_testkit::{FakeUpstream, Reply, wire};
use switchyard_tests::{CLIENT_KEY, MANAGEMENT_TOKEN, TestGateway, client_key_toml, json as body_json, text};

fn config(up: &FakeUpstream, extra: &str) -> String {
    format!(
        r#"{extra}
{keys}
[[connections]]
id = "claude-a"
provider = "anthropic"
auth = "oauth"
access_token = "sk-ant-oat01-SECRET-ACCESS"
refresh_token = "sk-ant-ort01-SECRET-REFRESH"
base_url = "{u}"

[[connections]]
id = "gpt"
provider = "openai"
api_key = "sk-proj-SECRET-OPENAI"
base_url = "{u}/v1"
"#,
        keys = client_key_toml(),
        u = up.url()
    )
}

fn body() -> serde_json::Value {
    json!({"model": "claude-sonnet-4-6", "max_tokens": 5, "messages": []})
}

#[tokio::test]
async fn missing_or_unknown_client_keys_get_401_in_the_clients_format() {
    let mut up = FakeUpstream::start(Reply::json(200, wire::anthropic_message("m", "x"))).await;
    up.expect_calls(0);
    let gw = TestGateway::start(&config(&up, "")).await;

    let none =
        gw.http.post(gw.url("/v1/messages")).json(&body()).send().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(none.status(), 401);
    assert_eq!(none.headers()["x-switchyard-error"], "authentication_error");
    let b = body_json(none).await;
    assert_eq!(b["type"], "error");
    assert_eq!(b["error"]["type"], "authentication_error");
    assert!(b["error"]["message"].as_str().unwrap_or_default().contains("missing API key"));

    let wrong = gw
        .http
        .post(gw.url("/v1/chat/completions"))
        .bearer_auth("sy-not-a-real-key-000000")
        .json(&json!({"model": "gpt-5", "messages": []}))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(wrong.status(), 401);
    let b = body_json(wrong).await;
    assert_eq!(b["error"]["type"], "authentication_error");
    assert_eq!(b["error"]["code"], "authentication_error");
    assert!(b.get("type").is_none());

    let models = gw.http.get(gw.url("/v1/models")).send().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(models.status(), 401);
}

#[tokio::test]
async fn unauthenticated_loopback_can_be_allowed_explicitly() {
    let up = FakeUpstream::start(Reply::json(200, wire::anthropic_message("m", "x"))).await;
    let gw = TestGateway::start(&config(&up, "[gateway]\nallow_unauthenticated_loopback = true\n")).await;
    let response =
        gw.http.post(gw.url("/v1/messages")).json(&body()).send().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(response.status(), 200);
    // A wrong key is still wrong.
    let wrong = gw
        .http
        .post(gw.url("/v1/messages"))
        .header("x-api-key", "sy-wrong-key-0000000000")
        .json(&body())
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(wrong.status(), 401);
}

#[tokio::test]
async fn a_foreign_host_header_is_rejected() {
    let mut up = FakeUpstream::start(Reply::json(200, wire::anthropic_message("m", "x"))).await;
    up.expect_calls(1);
    let gw = TestGateway::start(&config(&up, "")).await;
    for path in ["/v1/messages", "/api/providers"] {
        let response = gw
            .http
            .post(gw.url(path))
            .header("host", "attacker.example:7821")
            .bearer_auth(CLIENT_KEY)
            .json(&body())
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(response.status(), 403, "{path}");
        assert_eq!(response.headers()["x-switchyard-error"], "forbidden_host");
    }
    let ok = gw
        .http
        .post(gw.url("/v1/messages"))
        .header("host", "localhost:7821")
        .bearer_auth(CLIENT_KEY)
        .json(&body())
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ok.status(), 200);
    // No permissive CORS.
    assert!(ok.headers().get("access-control-allow-origin").is_none());
}

#[tokio::test]
async fn bad_bodies_get_400_or_413_naming_the_problem() {
    let mut up = FakeUpstream::start(Reply::json(200, wire::anthropic_message("m", "x"))).await;
    up.expect_calls(0);
    let gw = TestGateway::start_with(&config(&up, ""), |c| c.proxy.max_body_bytes = 4096).await;
    let send = |path: &'static str, raw: String| {
        let request = gw
            .http
            .post(gw.url(path))
            .bearer_auth(CLIENT_KEY)
            .header("content-type", "application/json")
            .body(raw);
        async move { request.send().await.unwrap_or_else(|e| panic!("{e}")) }
    };

    let malformed = send("/v1/messages", "{\"model\": \"claude-x\", ".into()).await;
    assert_eq!(malformed.status(), 400);
    assert_eq!(malformed.headers()["x-switchyard-error"], "invalid_json");
    let b = body_json(malformed).await;
    assert_eq!(b["error"]["type"], "invalid_request_error");
    assert!(b["error"]["message"].as_str().unwrap_or_default().contains("not valid JSON"));

    let no_model = send("/v1/chat/completions", "{\"messages\": []}".into()).await;
    assert_eq!(no_model.status(), 400);
    assert!(text(no_model).await.contains("no 'model' field"));

    let unknown =
        send("/v1/chat/completions", json!({"model": "mystery-model", "messages": []}).to_string()).await;
    assert_eq!(unknown.status(), 404);
    let b = body_json(unknown).await;
    assert_eq!(b["error"]["code"], "model_not_found");
    let message = b["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("mystery-model") && message.contains("anthropic, openai"), "{message}");

    // A body that cannot be translated for the target is the client's 400, in its
    // own envelope, before anything is sent upstream.
    let untranslatable =
        send("/v1/messages", json!({"model": "openai/gpt-5", "messages": "hello"}).to_string()).await;
    assert_eq!(untranslatable.status(), 400);
    let b = body_json(untranslatable).await;
    assert_eq!(b["type"], "error");
    let message = b["error"]["message"].as_str().unwrap_or_default().to_owned();
    assert!(message.contains("'messages' must be an array"), "{message}");

    let huge =
        send("/v1/messages", format!("{{\"model\":\"claude-x\",\"pad\":\"{}\"}}", "x".repeat(5000))).await;
    assert_eq!(huge.status(), 413);
    assert_eq!(body_json(huge).await["error"]["code"], "body_too_large");
}

#[tokio::test]
async fn the_management_api_requires_the_token() {
    let up = FakeUpstream::start(Reply::json(200, json!({}))).await;
    let gw = TestGateway::start(&config(&up, "")).await;
    let none = gw.http.get(gw.url("/api/providers")).send().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(none.status(), 401);
    assert_eq!(body_json(none).await["error"]["code"], "management_unauthorized");
    // The client key is not a management token.
    let client = gw
        .http
        .get(gw.url("/api/providers"))
        .bearer_auth(CLIENT_KEY)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(client.status(), 401);
    let ok = gw
        .http
        .get(gw.url("/api/providers"))
        .bearer_auth(MANAGEMENT_TOKEN)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ok.status(), 200);
}

#[tokio::test]
async fn management_responses_never_contain_secrets() {
    let up = FakeUpstream::start(Reply::json(200, json!({}))).await;
    let gw = TestGateway::start(&config(&up, "")).await;
    let mut everything = String::new();
    for path in
        ["/api/providers", "/api/providers/claude-a", "/api/keys", "/api/monitoring/health", "/api/logs"]
    {
        everything.push_str(&gw.mgmt_json(path).await.to_string());
    }
    for secret in ["SECRET", CLIENT_KEY, MANAGEMENT_TOKEN] {
        assert!(!everything.contains(secret), "{secret} leaked: {everything}");
    }
    let provider = gw.mgmt_json("/api/providers/claude-a").await;
    assert_eq!(provider["hasSecret"], true);
    assert_eq!(provider["hasRefreshToken"], true);
}

/// A `tracing` writer that keeps everything written.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test(flavor = "current_thread")]
async fn logs_never_contain_keys_tokens_or_lease_headers() {
    let captured = Captured::default();
    let sink = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || sink.clone())
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let up = FakeUpstream::start(Reply::json(503, json!({"error": {"message": "down"}}))).await;
    let agent = "sy-lease-agent-SECRET-0001";
    let leasing = format!(
        "[[api_keys]]\nname = \"agent\"\nkey = \"{agent}\"\nscopes = [\"lease:exclusive\"]\n\
         allowed_connections = [\"claude-a\", \"gpt\"]\n"
    );
    let gw = TestGateway::start(&config(&up, &leasing)).await;
    // A lease, so the requests below pass the fence and reach the (failing) upstream.
    let owner = "vlo_LEASEOWNERSECRETxxxxxxxxxxxxxxxxxxxxxxxxxxx";
    let acquired = gw
        .http
        .post(gw.url("/api/v1/session-leases"))
        .bearer_auth(agent)
        .header("x-switchyard-lease-owner", owner)
        .json(&json!({"action": "acquire", "model": "anthropic/claude-x"}))
        .send()
        .await
        .map(|r| r.status().as_u16());
    assert_eq!(acquired.ok(), Some(200));
    for (path, lease_owner) in [
        ("/v1/messages", owner),
        ("/v1/chat/completions", "vlo_LEASEOWNERSECRET-malformed"),
        ("/v1/messages", "vlo_LEASEOWNERSECRETyyyyyyyyyyyyyyyyyyyyyyyyyyy"),
    ] {
        let model = if path == "/v1/messages" { "claude-x" } else { "gpt-5" };
        let _ = gw
            .http
            .post(gw.url(path))
            .bearer_auth(agent)
            .header("x-switchyard-lease-owner", lease_owner)
            .header("x-switchyard-lease-generation", "1")
            .json(&json!({"model": model, "messages": []}))
            .send()
            .await;
    }
    let _ = gw.http.get(gw.url("/api/providers")).bearer_auth(MANAGEMENT_TOKEN).send().await;
    let _ = gw.http.get(gw.url("/api/providers")).bearer_auth("sym-WRONG-TOKEN-SECRET").send().await;
    drop(gw);

    let logs = String::from_utf8_lossy(&captured.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
        .into_owned();
    assert!(logs.contains("attempt.failed"), "the capture saw no gateway events:\n{logs}");
    for secret in ["SECRET", CLIENT_KEY, MANAGEMENT_TOKEN, "LEASEOWNER", agent] {
        assert!(!logs.contains(secret), "{secret} appeared in the logs:\n{logs}");
    }
}
