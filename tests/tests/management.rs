//! SPEC §7 management API and the config file: CRUD with validation that stores
//! nothing on error, client keys usable at once and stored hashed, combos and
//! aliases routing, and an idempotent config import.

use reqwest::Method;
use serde_json::{Value, json};
use sqlx::Row;
use switchyard_gateway::GatewayConfig;
use switchyard_testkit::{FakeUpstream, Reply, wire};
use switchyard_tests::{TestGateway, client_key_toml, json as body_json};

fn full_config(a: &FakeUpstream, k: &FakeUpstream) -> String {
    format!(
        r#"[gateway]
listen = "127.0.0.1:7821"
allow_unauthenticated_loopback = false

{keys}
scopes = []
allowed_connections = []

[[connections]]
id = "claude-a"
provider = "anthropic"
api_format = "anthropic"
name = "Claude A"
auth = "oauth"
access_token = "oat-a"
refresh_token = "ort-a"
expires_at = 1893456000000
base_url = "{a}"
priority = 1
enabled = true
max_concurrent = 2
[connections.provider_specific]
lowPriorityMode = true
autoLimitReset = false
organizationUUID = "0000-org"

[[connections]]
id = "kimi"
provider = "kimi"
api_format = "anthropic"
api_key = "kimi-key"
base_url = "{k}"
models = ["kimi-k2"]

[[combos]]
name = "coding"
strategy = "priority"
targets = ["anthropic/claude-sonnet-4-6", {{ model = "kimi/kimi-k2", connection = "kimi" }}]

[[aliases]]
from = "fast"
to = "kimi-k2"
"#,
        keys = client_key_toml(),
        a = a.url(),
        k = k.url()
    )
}

/// Every stored row of the state tables, as text, for exact comparison.
async fn database_dump(gw: &TestGateway) -> Vec<String> {
    let pool = gw.gateway().management().store().pool().clone();
    let mut out = Vec::new();
    for table in ["connections", "api_keys", "combos", "aliases", "settings"] {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!("SELECT * FROM {table} ORDER BY 1")))
            .fetch_all(&pool)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        for row in rows {
            let cols: Vec<String> = (0..row.len())
                .map(|i| {
                    row.try_get::<Option<String>, _>(i)
                        .map(|v| v.unwrap_or_default())
                        .or_else(|_| row.try_get::<Option<i64>, _>(i).map(|v| format!("{v:?}")))
                        .unwrap_or_default()
                })
                .collect();
            out.push(format!("{table}: {}", cols.join(" | ")));
        }
    }
    out
}

#[tokio::test]
async fn importing_the_same_config_twice_gives_identical_state() {
    let a = FakeUpstream::start(Reply::json(200, json!({}))).await;
    let k = FakeUpstream::start(Reply::json(200, json!({}))).await;
    let mut first = TestGateway::start(&full_config(&a, &k)).await;
    assert!(first.gateway().imported_changes() >= 5);
    let dump = database_dump(&first).await;
    let api = (
        first.mgmt_json("/api/providers").await,
        first.mgmt_json("/api/keys").await,
        first.mgmt_json("/api/combos").await,
        first.mgmt_json("/api/aliases").await,
    );
    assert!(dump.iter().any(|r| r.contains("kimi-k2")));
    assert!(!dump.iter().any(|r| r.contains("sy-test-client-key")), "client key stored in plaintext");
    let data_dir = first.dir.path().join("data");
    let config_path = first.config_path.clone();
    first.shutdown().await;

    // Second start on the same data directory and config file.
    let second_dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let again = TestGateway::start_with("", |c: &mut GatewayConfig| {
        c.data_dir = data_dir.clone();
        c.config_file = Some(config_path.clone());
    })
    .await;
    drop(second_dir);
    assert_eq!(again.gateway().imported_changes(), 0);
    assert_eq!(database_dump(&again).await, dump);
    let api_again = (
        again.mgmt_json("/api/providers").await,
        again.mgmt_json("/api/keys").await,
        again.mgmt_json("/api/combos").await,
        again.mgmt_json("/api/aliases").await,
    );
    assert_eq!(api_again, api);
    let claude =
        api.0.as_array().and_then(|l| l.iter().find(|c| c["id"] == "claude-a")).cloned().unwrap_or_default();
    assert_eq!(claude["providerSpecific"]["lowPriorityMode"], true);
    assert_eq!(claude["providerSpecific"]["organizationUUID"], "0000-org");
    assert_eq!(claude["maxConcurrent"], 2);
    assert_eq!(claude["authKind"], "oauth");
    assert_eq!(claude["tokenExpiresAt"], 1_893_456_000_000_i64);
}

#[tokio::test]
async fn a_bad_config_is_rejected_whole_and_names_every_problem() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("bad.toml");
    let bad = r#"
[[connections]]
id = "good"
provider = "anthropic"
api_key = "k"

[[connections]]
id = "glm"
provider = "glm"
api_key = "k"

[[combos]]
name = "c"
targets = ["nowhere/model-x"]
"#;
    std::fs::write(&path, bad).unwrap_or_else(|e| panic!("{e}"));
    let mut config = GatewayConfig::new(dir.path().join("data"));
    config.listen = "127.0.0.1:0".parse().unwrap_or_else(|e| panic!("{e}"));
    config.config_file = Some(path.clone());
    let error = match switchyard_gateway::Gateway::start(config.clone()).await {
        Ok(_) => panic!("a bad config must not start"),
        Err(e) => format!("{e:#}"),
    };
    assert!(error.contains("connections[1] (glm) apiFormat"), "{error}");
    assert!(error.contains("connections[1] (glm) baseUrl"), "{error}");
    assert!(error.contains("combos[0] (c) targets.0.model"), "{error}");

    // Nothing was written: the valid first connection is absent too.
    config.config_file = None;
    let gateway = switchyard_gateway::Gateway::start(config).await.unwrap_or_else(|e| panic!("{e:#}"));
    assert!(gateway.management().list_connections().await.map(|l| l.is_empty()).unwrap_or(false));
    gateway.shutdown().await;

    std::fs::write(&path, "[[connections]]\nid = \"x\"\nprovider = \"anthropic\"\nbogus = 1\n")
        .unwrap_or_else(|e| panic!("{e}"));
    let mut config = GatewayConfig::new(dir.path().join("data2"));
    config.listen = "127.0.0.1:0".parse().unwrap_or_else(|e| panic!("{e}"));
    config.config_file = Some(path);
    let error = match switchyard_gateway::Gateway::start(config).await {
        Ok(_) => panic!("unknown keys must be rejected"),
        Err(e) => format!("{e:#}"),
    };
    assert!(error.contains("bogus"), "{error}");
}

#[tokio::test]
async fn provider_crud_validates_and_stores_nothing_on_error() {
    let up = FakeUpstream::start(Reply::json(200, json!({"data": []}))).await;
    let gw = TestGateway::start(&client_key_toml()).await;

    let bad = gw
        .mgmt(Method::POST, "/api/providers")
        .json(&json!({"id": "glm", "provider": "glm", "authKind": "api_key", "maxConcurrent": 0, "providerSpecific": {"lowPriorityMode": "yes"}}))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(bad.status(), 400);
    let error = body_json(bad).await["error"].clone();
    assert_eq!(error["code"], "validation_failed");
    let paths: Vec<&str> = error["issues"]
        .as_array()
        .map(|a| a.iter().filter_map(|i| i["path"].as_str()).collect())
        .unwrap_or_default();
    for p in ["/apiFormat", "/apiKey", "/baseUrl", "/maxConcurrent", "/providerSpecific/lowPriorityMode"] {
        assert!(paths.contains(&p), "missing {p} in {paths:?}");
    }
    assert_eq!(gw.mgmt_json("/api/providers").await, json!([]));

    let unknown_field = gw
        .mgmt(Method::POST, "/api/providers")
        .json(&json!({"provider": "anthropic", "authKind": "api_key", "apiKey": "k", "colour": "red"}))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(unknown_field.status(), 400);
    assert!(
        body_json(unknown_field).await["error"]["message"].as_str().unwrap_or_default().contains("colour")
    );

    let created = gw
        .mgmt(Method::POST, "/api/providers")
        .json(&json!({"id": "glm", "provider": "glm", "apiFormat": "openai", "authKind": "api_key", "apiKey": "glm-secret", "baseUrl": format!("{}/v1", up.url()), "models": ["glm-4.6"]}))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(created.status(), 201);
    let view = body_json(created).await;
    assert_eq!(view["effectiveBaseUrl"], format!("{}/v1", up.url()));
    assert!(!view.to_string().contains("glm-secret"));

    let dup = gw.mgmt(Method::POST, "/api/providers").json(&json!({"id": "glm", "provider": "glm", "apiFormat": "openai", "authKind": "none", "baseUrl": up.url()})).send().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(dup.status(), 409);

    let patched = gw
        .mgmt(Method::PATCH, "/api/providers/glm")
        .json(&json!({"priority": 5, "providerSpecific": {"note": "x"}, "maxConcurrent": null}))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(patched.status(), 200);
    let view = body_json(patched).await;
    assert_eq!(view["priority"], 5);
    assert_eq!(view["providerSpecific"], json!({"note": "x"}));

    let bad_patch = gw
        .mgmt(Method::PATCH, "/api/providers/glm")
        .json(&json!({"priority": 9, "baseUrl": "ftp://nope"}))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(bad_patch.status(), 400);
    assert_eq!(gw.mgmt_json("/api/providers/glm").await["priority"], 5, "a rejected patch changed state");

    let test = body_json(
        gw.mgmt(Method::POST, "/api/providers/glm/test").send().await.unwrap_or_else(|e| panic!("{e}")),
    )
    .await;
    assert_eq!(test["ok"], true);
    assert_eq!(
        up.last_request().map(|r| (r.path.clone(), r.header("authorization").map(str::to_owned))),
        Some(("/v1/models".into(), Some("Bearer glm-secret".into())))
    );

    let health = gw.mgmt_json("/api/monitoring/health").await;
    assert_eq!(health["status"], "ok");
    assert_eq!(health["providers"], json!([{"provider": "glm", "connections": 1, "enabledConnections": 1}]));

    assert_eq!(
        gw.mgmt(Method::DELETE, "/api/providers/glm").send().await.map(|r| r.status().as_u16()).unwrap_or(0),
        204
    );
    assert_eq!(
        gw.mgmt(Method::DELETE, "/api/providers/glm").send().await.map(|r| r.status().as_u16()).unwrap_or(0),
        404
    );
}

#[tokio::test]
async fn api_keys_work_at_once_are_shown_once_and_can_be_revoked() {
    let up = FakeUpstream::start(Reply::json(200, wire::chat_completion("gpt-5", "hi"))).await;
    let config = format!(
        "[[connections]]\nid = \"gpt\"\nprovider = \"openai\"\napi_key = \"k\"\nbase_url = \"{}/v1\"\n",
        up.url()
    );
    let gw = TestGateway::start(&config).await;
    let created = body_json(
        gw.mgmt(Method::POST, "/api/keys")
            .json(&json!({"name": "cursor"}))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}")),
    )
    .await;
    let secret = created["secret"].as_str().unwrap_or_default().to_owned();
    assert!(secret.starts_with("sy-") && secret.len() > 40);
    let listed = gw.mgmt_json("/api/keys").await;
    assert!(!listed.to_string().contains(&secret));

    let call = |key: String| {
        let req = gw
            .http
            .post(gw.url("/v1/chat/completions"))
            .bearer_auth(key)
            .json(&json!({"model": "gpt-5", "messages": []}));
        async move { req.send().await.map(|r| r.status().as_u16()).unwrap_or(0) }
    };
    assert_eq!(call(secret.clone()).await, 200);
    let id = created["key"]["id"].as_str().unwrap_or_default();
    assert_eq!(
        gw.mgmt(Method::DELETE, &format!("/api/keys/{id}"))
            .send()
            .await
            .map(|r| r.status().as_u16())
            .unwrap_or(0),
        204
    );
    assert_eq!(call(secret).await, 401);

    let bad = gw
        .mgmt(Method::POST, "/api/keys")
        .json(&json!({"name": "x", "key": "short", "scopes": ["admin"], "allowedConnections": ["ghost"]}))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(bad.status(), 400);
    let issues: Vec<Value> = body_json(bad).await["error"]["issues"].as_array().cloned().unwrap_or_default();
    assert_eq!(issues.len(), 3, "{issues:?}");
}

#[tokio::test]
async fn combos_and_aliases_route_in_order() {
    let a = FakeUpstream::start(Reply::json(503, json!({}))).await;
    let k = FakeUpstream::start(Reply::json(200, wire::anthropic_message("kimi-k2", "from kimi"))).await;
    let gw = TestGateway::start(&full_config(&a, &k)).await;

    let response = gw.post("/v1/messages", &json!({"model": "coding", "messages": []})).await;
    assert_eq!(response.status(), 200);
    assert_eq!(body_json(response).await["content"][0]["text"], "from kimi");
    assert_eq!(a.last_request().map(|r| r.json()["model"].clone()), Some(json!("claude-sonnet-4-6")));
    assert_eq!(k.last_request().map(|r| r.json()["model"].clone()), Some(json!("kimi-k2")));
    assert_eq!(
        k.last_request().and_then(|r| r.header("x-api-key").map(str::to_owned)),
        Some("kimi-key".into())
    );

    let response = gw.post("/v1/messages", &json!({"model": "fast", "messages": []})).await;
    assert_eq!(response.status(), 200);
    assert_eq!(a.calls(), 1, "the alias must not touch the combo's first target");

    let bad_combo = gw
        .mgmt(Method::POST, "/api/combos")
        .json(&json!({"name": "x", "strategy": "priority", "targets": [{"model": "nowhere/m"}]}))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(bad_combo.status(), 400);
    let bad_strategy = gw
        .mgmt(Method::POST, "/api/combos")
        .json(&json!({"name": "x", "strategy": "telepathy", "targets": [{"model": "kimi-k2"}]}))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(bad_strategy.status(), 400);
    assert_eq!(body_json(bad_strategy).await["error"]["issues"][0]["path"], "/strategy");

    let put = gw
        .mgmt(Method::POST, "/api/aliases")
        .json(&json!({"from": "smart", "to": "coding"}))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(put.status(), 200);
    assert_eq!(gw.post("/v1/messages", &json!({"model": "smart", "messages": []})).await.status(), 200);
    assert_eq!(
        gw.mgmt(Method::DELETE, "/api/combos/coding").send().await.map(|r| r.status().as_u16()).unwrap_or(0),
        204
    );
    let gone = gw.post("/v1/messages", &json!({"model": "coding", "messages": []})).await;
    assert_eq!(gone.status(), 404);
}
